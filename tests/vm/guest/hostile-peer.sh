#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# Issue 12, lane 2: a hostile peer (tests/tools/viw_peer, the raw MPA/DDP/
# RDMAP peer shared with the security-defects tests) against viw.
#   1. as client, instead of a valid MPA request: garbage, a truncated
#      header, truncated private data, PD_Length over the limit, a bad
#      key, bad revisions, markers.  Each connection must end without a
#      reply that accepts, and count as a failed connection.
#   2. after a valid exchange, seeded random malformed FPDUs, one
#      connection each: tagged WRITEs to random STags and to random
#      offsets out of bounds, untagged messages to random queue numbers
#      and with MSN jumps, huge READ Requests, bad DDP versions, bad CRCs,
#      ULPDU lengths too long for the buffer or shorter than the header,
#      garbage TERMINATEs.
#      viw must send the TERMINATE (layer/type/code) RFC 5040/5041/5044
#      prescribe for each -- or none back for the peer's TERMINATE -- and
#      count it, and its QP must be in ERROR.
#   3. HOSTILE_HALF_OPEN (default 300) connections that send nothing,
#      while rping -V runs; viw closes every one after its MPA timeout.
#   4. as server, answering viw's connect: a reject, a reply with a bad
#      key, a PD_Length over the limit, garbage, silence, a reset.  The
#      consumer must get the event for each, and the counters move.
# Then rping -V works, and objects and CEPs are back at zero.
#
# HOSTILE_PEER_CASES (default 2) random cases of each of the 11 kinds in
# step 2, from HOSTILE_PEER_SEED (default 1); about 165 s under TCG.  A
# longer run by hand (each case about 2 s; the vmtest-timeout below bounds
# the run, so raise it for more than some 15 cases of each):
#   tests/vm/run --env HOSTILE_PEER_CASES=10 --env HOSTILE_PEER_SEED=7 \
#	--env HOSTILE_HALF_OPEN=1000 tests/vm/guest/hostile-peer.sh
. "$(dirname "$0")/../lib.sh"

need_peer_tools
make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
cases=${HOSTILE_PEER_CASES:-2}
half_open=${HOSTILE_HALF_OPEN:-300}
RANDOM=${HOSTILE_PEER_SEED:-1}
FAILED=()
NCASES=0
PORT=7810	# one port per case (try)

# try NAME CMD...: one case in a subshell; a failure is counted and the
# next case runs, so that one run shows every case that fails.
try() {
	local name=$1
	shift
	NCASES=$((NCASES + 1))
	PORT=$((PORT + 1))
	("$@") || FAILED+=("$name")
}

# counter_is DEV NAME BEFORE DELTA WHAT: the port counter moved by DELTA.
counter_is() {
	local now
	now=$(port_counter "$1" "$2")
	[ "$now" = $(($3 + $4)) ] ||
		die "$5: $2 of $1 went from $3 to $now, not by $4"
}

clean() {
	local d
	for d in "$DEV_A" "$DEV_B"; do
		wait_for 15 objects_zero "$d" || die "$1: objects of $d: $(objects_of "$d")"
	done
	wait_for 15 ceps_zero || die "$1: CEPs live: $(tr '\n' '|' </sys/kernel/debug/viw/ceps)"
}

# rnd N: R = a random number in [0, N), from bash's seeded RANDOM (not
# in a command substitution: its subshell would not advance the seed).
rnd() {
	R=$(((RANDOM << 15 | RANDOM) % $1))
}

# ---- 1. the MPA request -------------------------------------------------
# A listener that must survive all of it: rping -s, which then serves the
# valid rping at the end of this step.
RPING_PORT=7801
ip netns exec "$NS_B" rping -s -a "$IP_B" -p "$RPING_PORT" -C 2 -V \
	</dev/null >"$VIW_OUT/rping-survivor-s.log" 2>&1 &
RPING_SRV=$!
wait_listen "$NS_B" "$RPING_PORT"

KEY_REQ=$(printf 'MPA ID Req Frame' | od -An -tx1 | tr -d ' \n')
# bad_req NAME STEPS...: the peer's steps end the connection without a
# reply that accepts; connections_failed of viw_b counts it.
bad_req() {
	local name=$1 out=$VIW_OUT/req-$1.peer before
	shift
	before=$(port_counter "$DEV_B" connections_failed)
	in_a "$PEER" -t 30 -c "$IP_B:$RPING_PORT" "$@" expect-close:secs=20 \
		>"$out" 2>&1 || die "req-$name: $(grep -m1 FAIL "$out")"
	hasnt "$out" '^REPLY '
	counter_is "$DEV_B" connections_failed "$before" 1 "req-$name"
	log "req-$name: closed without a reply, counted"
}
rnd 200
try req-garbage bad_req garbage "garbage:$((20 + R))"
try req-short-header bad_req short-header "raw:${KEY_REQ:0:20}" fin
try req-short-pdata bad_req short-pdata mpa-req:pd=6,pdlen=100 fin
try req-pdlen-513 bad_req pdlen-513 mpa-req:pdlen=513
try req-pdlen-max bad_req pdlen-max mpa-req:pdlen=0xffff
try req-bad-key bad_req bad-key mpa-req:badkey=1
try req-rev-0 bad_req rev-0 "raw:${KEY_REQ}00000000"
try req-rev-3 bad_req rev-3 "raw:${KEY_REQ}40030000"
try req-rev-255 bad_req rev-255 "raw:${KEY_REQ}00ff0000"

# Markers (RFC 5044 section 7.1.2): viw does not speak them, so the
# consumer's accept fails and the peer sees the stream end, never an
# accepting reply (docs/semantics.md section 6).
markers() {
	local out=$VIW_OUT/req-markers.peer tlog=$VIW_OUT/req-markers.target
	in_b "$TARGET" -s "$IP_B" 7802 --run 15 --until-disconnect \
		>"$tlog" 2>&1 &
	local tpid=$!
	wait_listen "$NS_B" 7802
	in_a "$PEER" -t 30 -c "$IP_B:7802" mpa-req:markers=1 \
		expect-close:secs=20 >"$out" 2>&1 ||
		die "req-markers: $(grep -m1 FAIL "$out")"
	wait "$tpid" || true
	hasnt "$out" '^REPLY .* reject 0 '
	has "$tlog" '^FAIL rdma_accept'
	log "req-markers: refused"
}
try req-markers markers

rc=0 src=0
ip netns exec "$NS_A" timeout 60 rping -c -a "$IP_B" -p "$RPING_PORT" -C 2 \
	-V -v </dev/null >"$VIW_OUT/rping-survivor-c.log" 2>&1 || rc=$?
wait "$RPING_SRV" || src=$?
[ "$(rping_channel_race "$rc" "$VIW_OUT/rping-survivor-c.log")" = 0 ] &&
	[ "$(rping_pings "$VIW_OUT/rping-survivor-c.log")" = 2 ] ||
	FAILED+=("rping after bad requests")
[ "$(rping_channel_race "$src" "$VIW_OUT/rping-survivor-s.log")" = 0 ] ||
	FAILED+=("rping server after bad requests")
clean requests

# ---- 2. malformed FPDUs after a valid exchange --------------------------
# fpdu NAME L/T/C "TARGET OPTIONS" PEER_STEPS...: viw_target in b, the
# peer in a does a valid exchange and the steps; viw must answer with
# TERMINATE L/T/C (or, for L/T/C "-", with none: the peer's TERMINATE),
# count it, and leave its QP in ERROR.
fpdu() {
	local name=$1 ltc=$2 topts=$3 l=- t=- c=- tpid info tlog plog mark
	local sent recv crc expect=()
	shift 3
	info=$VIW_OUT/$name.info tlog=$VIW_OUT/$name.target
	plog=$VIW_OUT/$name.peer
	sent=$(port_counter "$DEV_B" terminates_sent)
	recv=$(port_counter "$DEV_B" terminates_received)
	crc=$(port_counter "$DEV_B" crc_errors)
	mark=$(dmesg | wc -l)
	if [ "$ltc" != - ]; then
		IFS=/ read -r l t c <<<"$ltc"
		expect=("expect-term:layer=$l,type=$t,code=$c,secs=15")
	fi
	# shellcheck disable=SC2086 # topts is a list of options
	in_b "$TARGET" -s "$IP_B" "$PORT" --mr-size 8192 --info "$info" \
		--run 30 --until-disconnect $topts >"$tlog" 2>&1 &
	tpid=$!
	wait_listen "$NS_B" "$PORT"
	in_a "$PEER" -t 40 -i "$info" -c "$IP_B:$PORT" "$@" "${expect[@]}" \
		expect-close:secs=15 >"$plog" 2>&1 ||
		die "$name: peer: $(grep -E '^(FAIL|TERMINATE)' "$plog" | head -2 | tr '\n' ' ')"
	wait "$tpid" || die "$name: viw_target failed: $(tail -3 "$tlog")"
	has "$tlog" '^QPSTATE ERR$'
	dmesg | tail -n +"$((mark + 1))" >"$VIW_OUT/$name.dmesg"
	if [ "$ltc" = - ]; then
		hasnt "$VIW_OUT/$name.dmesg" 'TERMINATE layer .* sent$'
		has "$tlog" '^ASYNC QP_FATAL$'
		counter_is "$DEV_B" terminates_received "$recv" 1 "$name"
		counter_is "$DEV_B" terminates_sent "$sent" 0 "$name"
	else
		has "$VIW_OUT/$name.dmesg" "TERMINATE layer $l type $t code $c sent\$"
		counter_is "$DEV_B" terminates_sent "$sent" 1 "$name"
	fi
	[ "$l/$t/$c" != 2/0/2 ] || counter_is "$DEV_B" crc_errors "$crc" 1 "$name"
	log "$name: ${ltc/-/peer TERMINATE taken, none sent}"
}

MPA=(mpa-req expect-rep:reject=0)
MPA_CRC=("mpa-req:crc=1" "expect-rep:reject=0,crc=1")
Z4=00000000
TAGGED_TAIL=00001234$Z4$Z4
UNTAGGED_TAIL=$Z4${Z4}00000001$Z4
for ((i = 0; i < cases; i++)); do
	# a random STag (viw_b has a handful of valid ones out of 2^32)
	rnd 65536
	stag=$((R << 16))
	rnd 65536
	stag=$((stag | R))
	rnd 4096
	len=$((1 + R))
	rnd 4096
	try "write-stag-$i" fpdu "write-stag-$i" 1/1/0 "" "${MPA[@]}" \
		"write:stag=$stag,to=@ADDR+$R,len=$len"
	# past either end of the 8 KiB MR
	rnd 4096
	if [ $((i % 2)) = 0 ]; then
		to=@ADDR+$((8192 - len + 1 + R))
	else
		to=@ADDR-$((1 + R))
	fi
	try "write-bounds-$i" fpdu "write-bounds-$i" 1/1/1 "" "${MPA[@]}" \
		"write:stag=@STAG,to=$to,len=$len"
	rnd 1000000
	try "send-qn-$i" fpdu "send-qn-$i" 1/2/1 "--recv 1" "${MPA[@]}" \
		"send:len=16,qn=$((3 + R))"
	rnd 1000000
	try "send-msn-$i" fpdu "send-msn-$i" 1/2/3 "--recv 1" "${MPA[@]}" \
		"send:len=16,msn=$((2 + R))"
	rnd 2000000000
	try "read-huge-$i" fpdu "read-huge-$i" 0/1/1 "" "${MPA[@]}" \
		"read-req:len=$((8193 + R)),src_stag=@STAG,src_to=@ADDR"
	# DDP version 0, 2 or 3 (RFC 5041: 1)
	rnd 3
	dv=$(((2 + R) % 4))
	try "ddp-version-tagged-$i" fpdu "ddp-version-tagged-$i" 1/1/4 "" \
		"${MPA[@]}" "fpdu-raw:hdr=c$dv""40$TAGGED_TAIL,len=16"
	try "ddp-version-untagged-$i" fpdu "ddp-version-untagged-$i" 1/2/6 \
		"--recv 1" "${MPA[@]}" "fpdu-raw:hdr=4$dv""43$UNTAGGED_TAIL,len=16"
	rnd 1000
	try "crc-$i" fpdu "crc-$i" 2/0/2 "--recv 1" "${MPA_CRC[@]}" \
		"send:len=$((1 + R)),crc=bad"
	# a SEND whose ULPDU length (65535) overflows the 4 KiB receive
	# buffer: "message too long", before its garbage body is read
	try "ulpdu-long-$i" fpdu "ulpdu-long-$i" 1/2/5 "--recv 1" "${MPA[@]}" \
		"raw:ffff4143$UNTAGGED_TAIL" garbage:65520
	# a ULPDU length shorter than the SEND's own 18-byte header
	rnd 18
	try "ulpdu-short-$i" fpdu "ulpdu-short-$i" 2/0/3 "--recv 1" "${MPA[@]}" \
		"raw:$(printf '%04x' "$R")4143$UNTAGGED_TAIL" garbage:32
	rnd 16
	tl=$R
	rnd 16
	tt=$R
	rnd 256
	try "term-garbage-$i" fpdu "term-garbage-$i" - "" "${MPA[@]}" \
		"term:layer=$tl,type=$tt,code=$R"
done
clean fpdus

# ---- 3. half-open connections -------------------------------------------
log "half-open: $half_open connections that send nothing, rping -V meanwhile"
HALF_PORT=7803
# rping listens with a backlog of 3, and viw's socket takes that backlog.
# A connection that finds the accept queue full is never seen by viw: its
# final ACK is dropped, SYN-ACK retries may run out, and the peer thinks
# it open forever.  Such a connection is the TCP stack's, not viw's, so
# the stack resets it at once here; the check below then counts what viw
# accepted and must close.
# SYN cookies are off for the same reason: a burst of SYNs fills the SYN
# queue (also 3), the stack answers with cookies, and the final ACK of a
# cookie that finds the accept queue full is dropped with no reset,
# whatever tcp_abort_on_overflow says (syncookies.c, tcp_get_cookie_sock()
# and tcp_v4_do_rcv()).  Without cookies such a SYN is dropped, and the
# peer sends it again.
ip netns exec "$NS_B" sysctl -qw net.ipv4.tcp_abort_on_overflow=1
ip netns exec "$NS_B" sysctl -qw net.ipv4.tcp_syncookies=0
ip netns exec "$NS_B" nstat -n
ip netns exec "$NS_B" rping -s -a "$IP_B" -p "$HALF_PORT" -C 1 \
	</dev/null >/dev/null 2>&1 &
HALF_SRV=$!
wait_listen "$NS_B" "$HALF_PORT"
{ in_a "$PEER" -t 120 -n "$half_open" -c "$IP_B:$HALF_PORT" \
	expect-close:secs=100 || echo "EXIT $?"; } >"$VIW_OUT/half-open.peer" 2>&1 &
HALF_PEER=$!
wait_for 60 sh -c "[ \$(head -n1 /sys/kernel/debug/viw/ceps) -ge $((half_open / 2)) ]" ||
	FAILED+=("half-open: the connections did not come up")
log "CEPs: $(head -n1 /sys/kernel/debug/viw/ceps)"
rping_pair "$IP_B" 4096 3
wait "$HALF_PEER" || true
closed=$(grep -Ec '^\[[0-9]+\] CLOSED (fin|rst)$' "$VIW_OUT/half-open.peer" || true)
data=$(grep -Ec '^\[[0-9]+\] DATA ' "$VIW_OUT/half-open.peer" || true)
log "half-open: $closed of $half_open closed by viw, $data got bytes"
if [ "$closed" != "$half_open" ]; then
	FAILED+=("half-open: $closed of $half_open closed")
	# what TCP did with the connections it did not hand to viw
	log "half-open: ns b: $(ip netns exec "$NS_B" nstat -a |
		grep -E 'Syncookies|ListenOverflows|ListenDrops|ReqQFull' | tr -s ' ' | tr '\n' ';' || true)"
	grep -v -E '^\[[0-9]+\] (CONNECTED|CLOSED|DONE)' "$VIW_OUT/half-open.peer" |
		sed 's/^\[[0-9]*\] //' | sort | uniq -c | head -n 5 || true
fi
[ "$data" = 0 ] || FAILED+=("half-open: $data got bytes")
kill "$HALF_SRV" 2>/dev/null || true
wait "$HALF_SRV" 2>/dev/null || true
clean half-open

# ---- 4. viw connects, the peer answers badly ----------------------------
# answer NAME "EVENT STATUS" STEPS...: viw_target connects from b to the
# peer listening in a, which runs the steps after reading the request;
# the consumer gets EVENT with STATUS, and the attempt is counted.
answer() {
	local name=$1 want=$2 port=$PORT ppid before rej
	local plog=$VIW_OUT/ans-$1.peer tlog=$VIW_OUT/ans-$1.target
	shift 2
	before=$(port_counter "$DEV_B" connections_failed)
	rej=$(port_counter "$DEV_B" mpa_rejects_received)
	{ in_a "$PEER" -t 40 -l "$port" expect-req:secs=20 "$@" ||
		echo "EXIT $?"; } >"$plog" 2>&1 &
	ppid=$!
	wait_listen "$NS_A" "$port"
	in_b "$TARGET" -c "$IP_A" "$port" --run 25 --until-disconnect \
		>"$tlog" 2>&1 || die "ans-$name: viw_target: $(tail -3 "$tlog")"
	kill "$ppid" 2>/dev/null || true
	wait "$ppid" 2>/dev/null || true
	has "$tlog" "^CM EVENT $want\$"
	hasnt "$tlog" '^CM EVENT ESTABLISHED'
	counter_is "$DEV_B" connections_failed "$before" 1 "ans-$name"
	counter_is "$DEV_B" mpa_rejects_received "$rej" \
		"$([ "$name" = reject ] && echo 1 || echo 0)" "ans-$name"
	log "ans-$name: $want"
}
try ans-reject answer reject "REJECTED status -111" mpa-rep:reject=1 \
	sleep:3
try ans-bad-key answer bad-key "REJECTED status -104" mpa-rep:garbage=1 \
	sleep:3
try ans-pdlen answer pdlen "REJECTED status -104" mpa-rep:pdlen=0xffff \
	sleep:3
rnd 500
try ans-garbage answer garbage "REJECTED status -104" \
	"garbage:$((20 + R))" sleep:3
try ans-reset answer reset "REJECTED status -104" rst
# viw's MPA timeout is 10 s
try ans-silence answer silence "UNREACHABLE status -110" sleep:20
clean answers

# ---- afterwards ---------------------------------------------------------
rping_pair "$IP_B" 65000 5
clean end
[ ${#FAILED[@]} = 0 ] || die "${#FAILED[@]} of $NCASES case(s) failed: ${FAILED[*]}"
log "hostile peer: $NCASES cases, $half_open half-open connections, each ended cleanly"
