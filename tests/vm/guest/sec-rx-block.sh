#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# Issue 8 item 7: a TERMINATE owed to a peer that stops reading must not
# hang the QP.  The raw peer (tests/tools/viw_peer, namespace a) shrinks
# its receive buffer, stops reading, asks for READs whose responses it
# never takes, then sends a WRITE to an invalid STag, which makes viw send
# a TERMINATE into the full socket.  viw_target's teardown (destroy_qp,
# process exit) and "ip link set DEV down" on viw's side (b) must each end
# within 10 s.  The old code sent the TERMINATE with a blocking sendmsg
# while it held state_lock, which destroy_qp and the link-down path need.
. "$(dirname "$0")/../lib.sh"

need_peer_tools
BOUND=10

make_two_hosts viw

# start_stall NAME PORT NREAD LEN "TARGET OPTIONS": start viw_target in b
# and a peer that fills the stream with NREAD unread READ responses of LEN
# bytes, then sends a WRITE to an invalid STag.  Sets TPID and PPID_PEER.
start_stall() {
	local name=$1 port=$2 n=$3 len=$4 topts=$5 info steps i
	info=$VIW_OUT/$name.info
	rm -f "$info"
	# shellcheck disable=SC2086 # topts is a list of options
	in_b "$TARGET" -s "$IP_B" "$port" --mr-size 65536 --ird 32 \
		--info "$info" $topts >"$VIW_OUT/$name.target" 2>&1 &
	TPID=$!
	wait_listen "$NS_B" "$port"
	steps=(rcvbuf:4096 "mpa-req:ird=32,ord=32" expect-rep:reject=0 noread)
	for ((i = 0; i < n; i++)); do
		steps+=("read-req:len=$len,src_stag=@STAG,src_to=@ADDR")
	done
	steps+=(sleep:1 "write:stag=@STAG+1,to=@ADDR,len=64" hold)
	in_a "$PEER" -t 120 -i "$info" -c "$IP_B:$port" "${steps[@]}" \
		>"$VIW_OUT/$name.peer" 2>&1 &
	PPID_PEER=$!
}

# stall ...: start_stall, and wait until the TERMINATE is due.
stall() {
	local mark

	mark=$(dmesg | wc -l)
	start_stall "$@"
	wait_for 20 grep -q '^SENT WRITE' "$VIW_OUT/$1.peer" ||
		die "$1: the peer did not get to its WRITE"
	sleep 3
	# viw tried to send it, and says whether it got out
	dmesg | tail -n +"$((mark + 1))" |
		grep -Eq "TERMINATE layer 1 type 1 code 0 (sent|not sent)\$" ||
		die "$1: the TERMINATE was dropped without a word"
}

# stop PID: the background in_a subshell PID and viw_peer, its child.
stop() {
	pkill -P "$1" 2>/dev/null || true
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

finish() {
	stop "$PPID_PEER"
	wait "$PPID_PEER" 2>/dev/null || true
	sed "s/^/$1.peer: /" "$VIW_OUT/$1.peer"
	sed "s/^/$1.target: /" "$VIW_OUT/$1.target"
}

# 1. The old code hung for good when the transmit engine was idle and the
# socket could take no more: READ responses of 1428 bytes make FPDUs of
# exactly one MSS (1448 bytes), so each fills one skb, and after the N-th
# the send buffer may be just full with the engine idle.  N depends on the
# send buffer's size; try a range, ten connections at a time.
for base in 10 20 30 40 50; do
	pids=()
	for ((n = base; n < base + 10; n++)); do
		start_stall "fill$n" $((7600 + n)) "$n" 1428 "--run 6"
		pids+=("$TPID:$PPID_PEER:$n")
	done
	for p in "${pids[@]}"; do
		IFS=: read -r tpid ppid n <<<"$p"
		if ! ended_within $((6 + BOUND)) "$tpid"; then
			PPID_PEER=$ppid finish "fill$n"
			die "fill$n: viw_target did not exit within $BOUND s of its teardown"
		fi
		wait "$tpid" || die "fill$n: viw_target failed"
		stop "$ppid"
	done
done
log "exact-fill: teardown within $BOUND s for 10..59 responses"
# (the log lines of those TERMINATEs are rate limited: let that pass)
sleep 5

# 2. The target tears down (destroy_qp, dereg, exit) at the end of its run.
stall teardown 7501 16 65536 "--run 10"
ended_within $((10 + BOUND)) "$TPID" || {
	finish teardown
	die "viw_target did not exit within $BOUND s of its teardown (destroy_qp hangs)"
}
wait "$TPID" || die "viw_target failed"
finish teardown
grep -q '^EXIT 0$' "$VIW_OUT/teardown.target" || die "teardown: no EXIT 0"
log "teardown: destroy_qp and exit within $BOUND s"

# 3. The link goes down under the stalled connection, then the target ends.
stall linkdown 7502 16 65536 "--run 60 --until-disconnect"
in_b ip link set "$IF_B" down &
LPID=$!
ended_within "$BOUND" "$LPID" || {
	finish linkdown
	die "ip link set $IF_B down did not finish within $BOUND s"
}
wait "$LPID" || die "ip link set down failed"
ended_within $((BOUND + 2)) "$TPID" || {
	finish linkdown
	die "viw_target did not end within $BOUND s after the link went down"
}
wait "$TPID" || die "viw_target failed"
finish linkdown
log "link down and teardown within $BOUND s"
