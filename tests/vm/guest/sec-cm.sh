#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 400
#
# Connection-manager robustness against a raw MPA peer (issue 8, items 5,
# 8, 8a, 9, 15, 17).  viw's side is tests/functional/viw_cm_robust in
# namespace a; the raw peer (sec-cm-peer.py) runs in namespace b, or is
# the server that viw_a connects to.  After each scenario the device's
# objects and the live CEPs (debugfs viw/ceps) must be back to zero.
# Runs last: it ends by unloading viw with a half-open passive connection
# and waiting past the old MPA timeout (item 5).
. "$(dirname "$0")/../lib.sh"

ROBUST=$VIW_BUILD/tests/functional/viw_cm_robust
PEER="/usr/bin/python3 $VIW_SRC/tests/vm/guest/sec-cm-peer.py"
CEPS=/sys/kernel/debug/viw/ceps
FAILS=0

bad() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
}

objects_zero() {
	awk '$2 != 0 { exit 1 }' "/sys/kernel/debug/viw/$1/objects"
}

ceps() { head -n1 "$CEPS" 2>/dev/null || echo "?"; }
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

# server_done NAME: the server exited 0 (all its checks passed).
server_done() {
	local rc=0
	wait "$SRV" || rc=$?
	sed "s/^/    srv: /" "$1.srv"
	[ "$rc" -eq 0 ] || bad "$1: viw_cm_robust exited $rc"
}

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
make_two_hosts viw

# Item 8a: request + SEND + FIN in one go, before viw accepted the socket.
log "fin-early: the FIN that came with the MPA request"
server fin-early 7602 -m fin-early -t 40
in_b $PEER fin-early "$IP_A" 7602 --hold 15 >fin-early.peer
log "TCP on port 7602 in ns a: $(in_a ss -Htan 'sport = :7602' | tr '\n' '|')"
server_done fin-early
sed "s/^/    peer: /" fin-early.peer
expect_line fin-early.peer "RESULT reply accept" "fin-early: peer not accepted"
expect_line fin-early.peer "RESULT end eof" "fin-early: viw did not close the stream"
check_clean fin-early

# Item 8a: the FIN comes while the request waits for accept.
log "fin-wait: a FIN while the request waits for accept"
server fin-wait 7609 -m fin-wait -t 40
in_b $PEER fin-early "$IP_A" 7609 --fin-delay 1 --hold 15 >fin-wait.peer
server_done fin-wait
sed "s/^/    peer: /" fin-wait.peer
expect_line fin-wait.peer "RESULT reply accept" "fin-wait: peer not accepted"
expect_line fin-wait.peer "RESULT end eof" "fin-wait: viw did not close the stream"
check_clean fin-wait

# Item 15: accept with a QP in ERROR: the peer must never see "accepted".
log "accept-err: accept with a QP that cannot be connected"
server accept-err 7603 -m accept-err -t 20
in_b $PEER request "$IP_A" 7603 --hold 5 >accept-err.peer
server_done accept-err
sed "s/^/    peer: /" accept-err.peer
grep -q "RESULT reply accept" accept-err.peer &&
	bad "accept-err: the peer got an accepting MPA reply"
check_clean accept-err

# Item 17, passive: private data over 255 bytes is refused (not cut), and
# IRD/ORD 256 reach the consumer clamped to the device's 32, not as 0.
log "pdata: oversize private data and IRD/ORD from a raw client"
server pdata 7604 -m pdata -t 14
in_b $PEER request "$IP_A" 7604 --pd 300 --hold 5 >pd300.peer
in_b $PEER request "$IP_A" 7604 --pd 20 --ird 256 --ord 256 --hold 5 >ird256.peer
in_b $PEER request "$IP_A" 7604 --pd 255 --ird 8 --ord 4 --hold 5 >pd255.peer
server_done pdata
cat pd300.peer ird256.peer pd255.peer | sed "s/^/    peer: /"
expect_line pdata.srv "^REQUESTS 2$" "pdata: 300 bytes of private data must not reach the consumer"
expect_line pd300.peer "RESULT reply (eof|reset)" "pdata: the 300-byte request was not refused"
expect_line ird256.peer "RESULT reply reject" "pdata: IRD/ORD 256 request not delivered"
expect_line pd255.peer "RESULT reply reject" "pdata: 255-byte request not delivered"
check_clean pdata

# Item 17, active: what a REJECTED event carries.
for mode in reject-ok:40 reject-big:300 reject-short:96; do
	log "reject: viw connects, a raw server answers ${mode%:*}"
	in_b $PEER server 7605 --mode "${mode%:*}" --len 40 >"${mode%:*}.peer" 2>&1 &
	PSRV=$!
	wait_listen "$NS_B" 7605
	in_a "$ROBUST" -m reject -c "$IP_B" -p 7605 -l "${mode#*:}" -t 20 \
		>"${mode%:*}.cli" 2>&1 || bad "${mode%:*}: viw_cm_robust client failed"
	sed "s/^/    cli: /" "${mode%:*}.cli"
	wait "$PSRV" || true
	check_clean "${mode%:*}"
done

# Item 9: a burst of requests beyond the listen backlog.
log "burst: 40 requests at once to a listener with backlog 1"
server burst 7606 -m backlog -b 1 -t 12
in_b $PEER burst "$IP_A" 7606 -n 40 --hold 30 >burst.peer &
PEERPID=$!
server_done burst
wait "$PEERPID" || bad "burst: peer failed"
sed "s/^/    peer: /" burst.peer
expect_line burst.peer "RESULT still-open 0$" "burst: connections left open after the listener was destroyed"
check_clean burst

# Item 8: graceful close while TX is blocked on a peer that stopped reading.
log "read-stall: rdma_disconnect while READ responses fill the window"
server read-stall 7607 -m disconnect -t 40
in_b $PEER read-stall "$IP_A" 7607 --hold 30 >read-stall.peer &
PEERPID=$!
server_done read-stall
sed "s/^/    peer: /" read-stall.peer
kill "$PEERPID" 2>/dev/null || true
wait "$PEERPID" 2>/dev/null || true
check_clean read-stall

# Item 5: a half-open passive connection (no MPA request ever), then the
# listener, the links and the module go.  The old code oopsed in the
# unloaded module when the child's MPA timer fired, ~10 s later.
log "half-open: rping -s, a TCP connection that sends nothing, rmmod"
# Not through in_a: $! must be rping itself, for kill.
ip netns exec "$NS_A" rping -s -a "$IP_A" -p 7608 -C 1 >/dev/null 2>&1 &
RPING=$!
wait_listen "$NS_A" 7608
in_b $PEER request "$IP_A" 7608 --pd -1 --hold 25 >half-open.peer 2>&1 &
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
expect_line half-open.peer "RESULT reply (eof|reset)" "half-open: viw did not close the connection"
log "alive 20 s after rmmod"

[ "$FAILS" -eq 0 ] || die "$FAILS check(s) failed"
log "sec-cm: all scenarios passed"
