#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 400
#
# Connection-manager robustness against a raw MPA peer (issue 8, items 5,
# 8, 8a, 9, 15, 17).  viw's side is tests/functional/viw_cm_robust in
# namespace a; the raw peer (tests/tools/viw_peer) runs in namespace b, or
# is the server that viw_a connects to.  After each scenario the device's
# objects and the live CEPs (debugfs viw/ceps) must be back to zero.
# Runs last: it ends by unloading viw with a half-open passive connection
# and waiting past the old MPA timeout (item 5).
. "$(dirname "$0")/../lib.sh"

ROBUST=$VIW_BUILD/tests/functional/viw_cm_robust
CEPS=/sys/kernel/debug/viw/ceps
[ -x "$ROBUST" ] || die "$ROBUST not built"
[ -x "$PEER" ] || die "$PEER not built"

# Live CEPs, less each device's modify_qp listener (viw_direct.c).
ceps() {
	[ -e "$CEPS" ] || { echo "?"; return; }
	awk 'NR == 1 { n = $1 } / direct-listener / { n-- } END { print n }' "$CEPS"
}
ceps_zero() { [ "$(ceps)" = 0 ]; }

# Nothing left of a scenario: objects of both devices and CEPs at zero.
check_clean() {
	local d
	for d in "$DEV_A" "$DEV_B"; do
		wait_for 10 objects_zero "$d" ||
			bad "$1: objects of $d: $(tr '\n' ' ' </sys/kernel/debug/viw/"$d"/objects || true)"
	done
	if [ -e "$CEPS" ]; then
		wait_for 10 ceps_zero || bad "$1: CEPs still live: $(tr '\n' '|' <"$CEPS")"
	else
		bad "$1: no $CEPS"
	fi
}

# expect_line FILE REGEX WHAT: FILE has a line matching REGEX.
expect_line() {
	grep -Eq "$2" "$1" || bad "$3 (no '$2' in $1: $(tr '\n' '|' <"$1"))"
}

# server NAME PORT ARGS...: start viw_cm_robust in ns a, wait for it.
server() {
	local name=$1 port=$2
	shift 2
	in_a "$ROBUST" -s "$IP_A" -p "$port" "$@" >"$name.srv" 2>&1 &
	SRV=$!
	wait_listen "$NS_A" "$port"
}

# peer NAME ARGS...: viw_peer in ns b, its lines in NAME.peer.  A failed
# expectation (exit 3) ends with "EXIT 3"; the greps below judge the lines.
peer() {
	local name=$1 rc=0
	shift
	in_b "$PEER" "$@" >"$name.peer" 2>&1 || rc=$?
	echo "EXIT $rc" >>"$name.peer"
}

# no_line FILE REGEX WHAT: no line of FILE matches REGEX.
no_line() {
	if grep -Eq "$2" "$1"; then
		bad "$3 ($(grep -E "$2" "$1" | head -n1))"
	fi
}

# server_done NAME: the server exited 0 (all its checks passed).
server_done() {
	local rc=0
	wait "$SRV" || rc=$?
	sed "s/^/    srv: /" "$1.srv"
	[ "$rc" -eq 0 ] || bad "$1: viw_cm_robust exited $rc"
}

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
make_two_hosts viw

# fin_case NAME PORT MODE PEER_STEPS...: viw_cm_robust -m MODE takes a
# request that a FIN follows, as the peer's steps send them; viw must
# accept it and then close the stream.
fin_case() {
	local name=$1 port=$2 mode=$3
	shift 3
	server "$name" "$port" -m "$mode" -t 40
	peer "$name" -t 40 -c "$IP_A:$port" "$@"
	log "TCP on port $port in ns a: $(in_a ss -Htan "sport = :$port" | tr '\n' '|')"
	server_done "$name"
	sed "s/^/    peer: /" "$name.peer"
	expect_line "$name.peer" "^REPLY .* reject 0 " "$name: peer not accepted"
	expect_line "$name.peer" "^CLOSED fin$" "$name: viw did not close the stream"
	check_clean "$name"
}

# Item 8a: request + SEND + FIN in one go, before viw accepted the socket.
log "fin-early: the FIN that came with the MPA request"
# the request and a 16-byte SEND in one segment, the FIN right after
fin_case fin-early 7602 fin-early cork mpa-req:ird=1,ord=1 \
	send:len=16 uncork fin expect-rep:secs=15 expect-close:secs=15

# Item 8a: request, SEND and FIN in one TCP segment (the FIN rides on the
# corked data).  viw may find the socket empty on a first read and the FIN
# already there on the next: it must still read the request first.
log "fin-1seg: request, SEND and FIN in one segment"
fin_case fin-1seg 7610 fin-early cork mpa-req:ird=1,ord=1 \
	send:len=16 fin expect-rep:secs=15 expect-close:secs=15

# Item 8a: the FIN comes while the request waits for accept.
log "fin-wait: a FIN while the request waits for accept"
fin_case fin-wait 7609 fin-wait cork mpa-req:ird=1,ord=1 \
	send:len=16 uncork sleep:1 fin expect-rep:secs=15 expect-close:secs=15

# Item 15: accept with a QP in ERROR: the peer must never see "accepted".
log "accept-err: accept with a QP that cannot be connected"
server accept-err 7603 -m accept-err -t 20
# private data: its own length, IRD and ORD (be16 each), for viw_cm_robust
peer accept-err -t 20 -c "$IP_A:7603" \
	mpa-req:pd=6,pdhead=000600010001,ird=1,ord=1 expect-rep:secs=5 \
	expect-close:secs=5
server_done accept-err
sed "s/^/    peer: /" accept-err.peer
expect_line accept-err.peer "^SENT MPA REQ " "accept-err: the peer sent no request"
no_line accept-err.peer "^REPLY .* reject 0 " \
	"accept-err: the peer got an accepting MPA reply"
check_clean accept-err

# Item 17, passive: private data over 255 bytes is refused (not cut), and
# IRD/ORD 256 reach the consumer clamped to the device's 32, not as 0.
log "pdata: oversize private data and IRD/ORD from a raw client"
server pdata 7604 -m pdata -t 14
# each request's private data starts with its length, IRD and ORD (be16)
peer pd300 -t 20 -c "$IP_A:7604" \
	mpa-req:pd=300,pdhead=012c00010001,ird=1,ord=1 expect-close:secs=5
peer ird256 -t 20 -c "$IP_A:7604" \
	mpa-req:pd=20,pdhead=001401000100,ird=256,ord=256 expect-rep:secs=5
peer pd255 -t 20 -c "$IP_A:7604" \
	mpa-req:pd=255,pdhead=00ff00080004,ird=8,ord=4 expect-rep:secs=5
server_done pdata
cat pd300.peer ird256.peer pd255.peer | sed "s/^/    peer: /"
expect_line pdata.srv "^REQUESTS 2$" "pdata: 300 bytes of private data must not reach the consumer"
# refused: the stream ends, and no byte of a reply came before (DATA)
expect_line pd300.peer "^CLOSED (fin|rst)$" "pdata: the 300-byte request was not refused"
no_line pd300.peer "^DATA " "pdata: the 300-byte request got a reply"
expect_line ird256.peer "^REPLY .* reject 1 " "pdata: IRD/ORD 256 request not delivered"
expect_line pd255.peer "^REPLY .* reject 1 " "pdata: 255-byte request not delivered"
check_clean pdata

# Item 17, active: what a REJECTED event carries.  The raw server rejects
# with private data of 0x5a: 40 bytes (reject-ok), 300 (reject-big), or a
# PD_Length of 100 of which only 10 bytes come (the RFC 6581 words and 6
# of the 96 bytes of private data), then FIN (reject-short).
for mode in reject-ok:40 reject-big:300 reject-short:96; do
	case ${mode%:*} in
	reject-ok) rep=pd=40 ;;
	reject-big) rep=pd=300 ;;
	reject-short) rep=pd=6,pdlen=100 ;;
	esac
	log "reject: viw connects, a raw server answers ${mode%:*}"
	{ in_b "$PEER" -t 30 -l 7605 expect-req:secs=20 \
		"mpa-rep:reject=1,ird=0,ord=0,pdfill=0x5a,$rep" fin \
		expect-close:secs=10 || echo "EXIT $?"; } >"${mode%:*}.peer" 2>&1 &
	PSRV=$!
	wait_listen "$NS_B" 7605
	in_a "$ROBUST" -m reject -c "$IP_B" -p 7605 -l "${mode#*:}" -t 20 \
		>"${mode%:*}.cli" 2>&1 || bad "${mode%:*}: viw_cm_robust client failed"
	sed "s/^/    cli: /" "${mode%:*}.cli"
	wait "$PSRV" || true
	sed "s/^/    peer: /" "${mode%:*}.peer"
	check_clean "${mode%:*}"
done

# Item 9: a burst of requests beyond the listen backlog.
log "burst: 40 requests at once to a listener with backlog 1"
server burst 7606 -m backlog -b 1 -t 12
# 40 connections, each sends its request and waits up to 30 s for the end
# ("|| echo": a failed expectation is judged below, not by the ERR trap)
{ in_b "$PEER" -t 45 -n 40 -c "$IP_A:7606" \
	mpa-req:pd=6,pdhead=000600010001,ird=1,ord=1 expect-close:secs=30 ||
	echo "EXIT $?"; } >burst.peer 2>&1 &
PEERPID=$!
server_done burst
wait "$PEERPID" || true
sed "s/^/    peer: /" burst.peer
# "FAIL still open" is the finding; any other failure is the peer's
others=$(grep -E "FAIL|TIMEOUT" burst.peer | grep -cv "FAIL still open after" || true)
[ "$others" -eq 0 ] || bad "burst: peer failed"
open=$((40 - $(grep -Ec '^\[[0-9]+\] CLOSED (fin|rst)$' burst.peer || true)))
log "burst: still open $open"
[ "$open" -eq 0 ] ||
	bad "burst: connections left open after the listener was destroyed (still open $open)"
check_clean burst

# Item 8: graceful close while TX is blocked on a peer that stopped reading.
log "read-stall: rdma_disconnect while READ responses fill the window"
server read-stall 7607 -m disconnect -t 40
# A 4 KiB receive buffer; 16 READ Requests for the MR that viw_cm_robust
# put in its reply (rkey be32, address be64, length be32); never reads.
# Not through in_b: $! must be viw_peer itself, for kill.
ip netns exec "$NS_B" "$PEER" -t 45 -c "$IP_A:7607" rcvbuf:4096 \
	mpa-req:ird=0,ord=16 expect-rep:reject=0 cork \
	read-req:sink_stag=0x1234,src_stag=@PD32.0,src_to=@PD64.4,len=@PD32.12,repeat=16 \
	uncork noread sleep:30 >read-stall.peer 2>&1 &
PEERPID=$!
server_done read-stall
kill "$PEERPID" 2>/dev/null || true
wait "$PEERPID" 2>/dev/null || true
sed "s/^/    peer: /" read-stall.peer
expect_line read-stall.peer "^SENT READ_REQ msn 16 sink_stag 0x1234 sink_to 0x0 len 1048576 " \
	"read-stall: the peer did not send its 16 READ Requests"
check_clean read-stall

# Item 5: a half-open passive connection (no MPA request ever), then the
# listener, the links and the module go.  The old code oopsed in the
# unloaded module when the child's MPA timer fired, ~10 s later.
log "half-open: rping -s, a TCP connection that sends nothing, rmmod"
# Not through in_a: $! must be rping itself, for kill.
ip netns exec "$NS_A" rping -s -a "$IP_A" -p 7608 -C 1 >/dev/null 2>&1 &
RPING=$!
wait_listen "$NS_A" 7608
# connects and sends nothing; waits up to 25 s for viw to close
{ in_b "$PEER" -t 40 -c "$IP_A:7608" expect-close:secs=25 || echo "EXIT $?"; } \
	>half-open.peer 2>&1 &
PEERPID=$!
wait_for 10 sh -c "[ \$(head -n1 $CEPS 2>/dev/null || echo 2) -ge 2 ]" || true
sleep 1
log "CEPs with the half-open connection: $(tr '\n' '|' <"$CEPS" || true)"
kill "$RPING"
wait "$RPING" 2>/dev/null || true
[ -e "$CEPS" ] && { wait_for 10 ceps_zero || bad "half-open: CEPs live after the listener went: $(tr '\n' '|' <"$CEPS")"; }
run rdma link delete "$DEV_A"
run rdma link delete "$DEV_B"
run rmmod viw
log "viw unloaded; waiting past the MPA timeout"
sleep 20
wait "$PEERPID" 2>/dev/null || true
sed "s/^/    peer: /" half-open.peer
expect_line half-open.peer "^CLOSED (fin|rst)$" "half-open: viw did not close the connection"
no_line half-open.peer "^DATA " "half-open: viw sent bytes on a connection without a request"
log "alive 20 s after rmmod"

checks_done
log "sec-cm: all scenarios passed"
