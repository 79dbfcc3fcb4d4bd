#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 400
#
# What a user sees of viw through the rdma tool and tracefs (issue 13):
#   - "rdma statistic show link DEV/1" lists every port counter, and they
#     move by what a known transfer moved (rping -V, COUNT x SIZE bytes
#     each way): payload bytes at least that, one side's transmitted FPDUs
#     and bytes exactly the other side's received ones, doorbells as
#     traced, connections established then no longer active;
#   - failures count: a refused connect and an MPA reject (viw_target
#     --reject), a bad CRC and a TERMINATE from the raw peer, TCP
#     retransmissions under netem loss (sockets closed by then);
#   - "rdma resource show qp|cq|mr -dd" shows viw's fields during a live
#     connection: rings, engines, the TCP 4-tuple, MPA revision, CRC, RTR;
#   - the tracepoints (events/viw/) fire with the right fields over one
#     connection's life;
#   - every "rdma link add" error prints its own reason;
#   - the trace-cmd recipe of docs/observability.md works.
. "$(dirname "$0")/../lib.sh"

need_peer_tools
make_two_hosts viw
tracefs=/sys/kernel/tracing
mountpoint -q "$tracefs" || mount -t tracefs none "$tracefs"
echo 4096 >"$tracefs/buffer_size_kb"
echo 1 >"$tracefs/events/viw/enable" || die "no viw tracepoints in $tracefs"
# "doorbells" counts doorbell system calls: with the doorbell poller off
# (docs/host-interface.md) every post makes one.
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo 0 >/sys/kernel/debug/viw/poll_idle_us

COUNTERS="tx_fpdus tx_payload_bytes rx_fpdus rx_payload_bytes doorbells
terminates_sent terminates_received flushed_wqes connections_established
connections_failed connections_active mpa_rejects_sent mpa_rejects_received
crc_errors tcp_retransmits poll_backoffs acks_sent acks_received
tx_chained_runs tx_handoffs tx_spills"

# snap TAG: every counter of both devices, as variables TAG_DEV_NAME.
snap() {
	local d n v
	for d in "$DEV_A" "$DEV_B"; do
		for n in $COUNTERS; do
			v=$(port_counter "$d" "$n") || die "rdma statistic: $d has no counter $n"
			printf -v "$1_${d}_$n" %s "$v"
		done
	done
}

# delta DEV NAME: NAME of DEV between snap before and snap after.
delta() {
	local b=before_$1_$2 a=after_$1_$2
	echo $((${!a} - ${!b}))
}

# at_least DEV NAME MIN: the counter moved by MIN or more.
at_least() {
	local got
	got=$(delta "$1" "$2")
	[ "$got" -ge "$3" ] || bad "$1 $2 moved by $got, expected at least $3"
}

# same DEV1 NAME1 DEV2 NAME2: both counters moved by the same amount.
same() {
	local x y
	x=$(delta "$1" "$2")
	y=$(delta "$3" "$4")
	[ "$x" = "$y" ] || bad "$1 $2 moved by $x but $3 $4 by $y"
}

trace_reset() { : >"$tracefs/trace"; }
trace_save() { grep -v '^#' "$tracefs/trace" >"$VIW_OUT/$1.trace" || true; echo "$VIW_OUT/$1.trace"; }
# traced FILE ERE [N]: N (default: at least one) trace lines match.
traced() {
	local n
	n=$(grep -Ec -- "$2" "$1" || true)
	if [ -n "${3:-}" ]; then
		[ "$n" = "$3" ] || bad "${1##*/}: $n events match '$2', expected $3"
	else
		[ "$n" -ge 1 ] || bad "${1##*/}: no event matches '$2'"
	fi
}

# ---- every counter is listed ---------------------------------------------
run rdma statistic show link "$DEV_A/1"
for n in $COUNTERS; do
	port_counter "$DEV_A" "$n" >/dev/null || bad "rdma statistic does not list $n"
done

# ---- a known transfer -----------------------------------------------------
COUNT=10
SIZE=4096
snap before
trace_reset
rping_pair "$IP_B" "$SIZE" "$COUNT"
# The CLOSE of both sides may follow the processes' exit.
closed() { [ "$(port_counter "$1" connections_active)" = 0 ]; }
wait_for 10 closed "$DEV_A" || bad "$DEV_A: a connection still active after rping"
wait_for 10 closed "$DEV_B" || bad "$DEV_B: a connection still active after rping"
snap after
t=$(trace_save rping)
run rdma statistic show link "$DEV_A/1"
run rdma statistic show link "$DEV_B/1"
# rping: the server READs SIZE bytes from the client and WRITEs SIZE bytes
# back, once per ping.
for d in "$DEV_A" "$DEV_B"; do
	at_least "$d" tx_payload_bytes $((COUNT * SIZE))
	at_least "$d" rx_payload_bytes $((COUNT * SIZE))
	at_least "$d" tx_fpdus $((2 * COUNT))
	# each side posts at least two WRs a ping, each to an idle transmit
	# engine, and these ring (receives need no doorbell: the rings'
	# no_doorbell word); half of that, in case an engine still ran
	at_least "$d" doorbells "$COUNT"
	at_least "$d" connections_established 1
	at_least "$d" flushed_wqes 1
	# every doorbell rung is traced, and only those
	traced "$t" "viw_doorbell: dev=$d " "$(delta "$d" doorbells)"
done
# The server's READ, delivered to the client's QP in the softirq on top
# of the server's doorbell, kicks the client's engine, and the doorbell
# runs it (docs/host-interface.md, "Doorbells"); half, as the client may
# hold its socket at that moment and answer from the backlog.
at_least "$DEV_A" tx_chained_runs $((COUNT / 2))
same "$DEV_A" tx_fpdus "$DEV_B" rx_fpdus
same "$DEV_B" tx_fpdus "$DEV_A" rx_fpdus
same "$DEV_A" tx_payload_bytes "$DEV_B" rx_payload_bytes
same "$DEV_B" tx_payload_bytes "$DEV_A" rx_payload_bytes

# One connection's life in the trace: a connects, b accepts, a closes
# gracefully (rping's client disconnects), both QPs end in ERR.  A new QP
# is in INIT already (docs/semantics.md, section 8), and rdma_cm's move to
# INIT is traced as INIT -> INIT.
traced "$t" "viw_qp_state: dev=$DEV_A qpn=[0-9]+ INIT -> INIT" 1
traced "$t" "viw_cm_event: dev=$DEV_B .* event=CONNECT_REQUEST status=0" 1
traced "$t" "viw_qp_state: dev=$DEV_B qpn=[0-9]+ RTR -> RTS" 1
traced "$t" "viw_qp_state: dev=$DEV_A qpn=[0-9]+ INIT -> RTS" 1
traced "$t" "viw_cm_event: dev=$DEV_A .* qpn=[1-9][0-9]* event=CONNECT_REPLY status=0" 1
traced "$t" "viw_cm_event: dev=$DEV_B .* qpn=[1-9][0-9]* event=ESTABLISHED status=0" 1
traced "$t" "viw_cm_event: dev=$DEV_B .* event=DISCONNECT status=0" 1
traced "$t" "viw_cm_close: dev=$DEV_B .* status=0 reset=0" 1
for d in "$DEV_A" "$DEV_B"; do
	traced "$t" "viw_cm_event: dev=$d .* event=CLOSE status=0" 1
	traced "$t" "viw_qp_state: dev=$d qpn=[0-9]+ [A-Z]+ -> ERR" 1
	traced "$t" "viw_flush: dev=$d qpn=[0-9]+ queue=sq flushed=[0-9]+"
	traced "$t" "viw_flush: dev=$d qpn=[0-9]+ queue=rq flushed=[1-9]"
done
# conn ties the CM events of one connection: a's CLOSE is its CONNECT_REPLY's.
conn=$(grep -E "viw_cm_event: dev=$DEV_A .*event=CONNECT_REPLY" "$t" | sed -E 's/.* conn=([0-9a-f]+) .*/\1/' | head -1)
traced "$t" "viw_cm_event: dev=$DEV_A conn=${conn:-none} qpn=0 event=CLOSE status=0" 1
traced "$t" "viw_cm_close: dev=$DEV_A conn=${conn:-none} qpn=[1-9][0-9]* status=0 reset=0" 1
# The CLOSE comes after the state change to RTS, on each side.
for d in "$DEV_A" "$DEV_B"; do
	order=$(grep -E "dev=$d .*(-> RTS|event=CLOSE)" "$t" | sed -E 's/.*(RTS|CLOSE).*/\1/' | tr '\n' ' ')
	[ "$order" = "RTS CLOSE " ] || bad "$d: RTS and CLOSE traced as '$order'"
done
log "known transfer: counters and tracepoints agree"

# ---- a live connection in rdma resource -dd -----------------------------
PORT=7600
info=$VIW_OUT/live.info
in_b "$TARGET" -s "$IP_B" "$PORT" --mr-size 8192 --recv 2 --info "$info" \
	--run 12 >"$VIW_OUT/live.server" 2>&1 &
spid=$!
wait_listen "$NS_B" "$PORT"
in_a "$TARGET" -c "$IP_B" "$PORT" --mr-size 8192 --recv 2 --run 10 \
	>"$VIW_OUT/live.client" 2>&1 &
cpid=$!
wait_for 20 test -s "$info" || die "live connection not established: $(tail -3 "$VIW_OUT/live.server")"
res=$VIW_OUT/res.qp
rdma resource show qp -dd >"$res"
rdma resource show cq -dd >"$VIW_OUT/res.cq"
rdma resource show mr -dd >"$VIW_OUT/res.mr"
cat "$res" "$VIW_OUT/res.cq" "$VIW_OUT/res.mr"
for d in "$DEV_A" "$DEV_B"; do
	[ "$(port_counter "$d" connections_active)" = 1 ] ||
		bad "$d: connections_active is not 1 during the live connection"
done
line=$(grep -E "^link $DEV_B/1 .*state RTS" "$res" || true)
[ -n "$line" ] || bad "no RTS QP of $DEV_B in rdma resource show qp -dd"
for f in "drv_sq_size [1-9]" "drv_sq_fetch [0-9]" "drv_sq_done [0-9]" \
	"drv_rq_size [1-9]" "drv_rq_prod 2 " "drv_tx (idle|busy)" \
	"drv_rx header" "drv_mpa_rev 2" "drv_crc off" "drv_rtr none" \
	"drv_tcp_local $IP_B:$PORT " "drv_tcp_remote $IP_A:[0-9]+"; do
	[[ "$line" =~ $f ]] || bad "qp of $DEV_B: no '$f' in: $line"
done
line=$(grep -E "^link $DEV_A/1 .*state RTS" "$res" || true)
[[ "$line" =~ "drv_tcp_remote $IP_B:$PORT " ]] || bad "qp of $DEV_A: no remote $IP_B:$PORT in: $line"
grep -Eq "^dev $DEV_B .*drv_ring_size [1-9][0-9]* drv_ring_prod [0-9]+ drv_ring_cons [0-9]+" "$VIW_OUT/res.cq" ||
	bad "no CQ ring fields of $DEV_B in rdma resource show cq -dd"
grep -Eq "^dev $DEV_B .*mrlen 8192 .*drv_type user drv_pages [23] " "$VIW_OUT/res.mr" ||
	bad "no 8 KiB user MR of $DEV_B with its pages in rdma resource show mr -dd"
wait "$cpid" || bad "live client failed: $(tail -3 "$VIW_OUT/live.client")"
wait "$spid" || bad "live server failed: $(tail -3 "$VIW_OUT/live.server")"
log "rdma resource -dd shows viw's fields"

# ---- failures ----------------------------------------------------------
snap before
trace_reset
# Nobody listens on this port: the TCP connect is refused.
in_a timeout 30 rping -c -a "$IP_B" -p 7699 -C 1 </dev/null >"$VIW_OUT/refused.log" 2>&1 &&
	bad "rping to a closed port succeeded"
# viw_target rejects the request: b sends an MPA reject, a receives it.
PORT=$((PORT + 1))
in_b "$TARGET" -s "$IP_B" "$PORT" --reject --until-disconnect --run 15 \
	>"$VIW_OUT/reject.server" 2>&1 &
spid=$!
wait_listen "$NS_B" "$PORT"
in_a "$TARGET" -c "$IP_B" "$PORT" --until-disconnect --run 15 \
	>"$VIW_OUT/reject.client" 2>&1 || true
wait "$spid" || bad "rejecting server failed: $(tail -3 "$VIW_OUT/reject.server")"
grep -q "REJECTED" "$VIW_OUT/reject.client" || bad "client not rejected: $(tail -3 "$VIW_OUT/reject.client")"

# raw_peer NAME TARGET_OPTIONS PEER_STEPS...: the raw MPA peer (in a)
# against viw_target in b.
raw_peer() {
	local name=$1 topts=$2 pinfo=$VIW_OUT/$1.info tpid
	shift 2
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086 # topts is a list of options
	in_b "$TARGET" -s "$IP_B" "$PORT" --mr-size 8192 --info "$pinfo" \
		--run 20 --until-disconnect $topts >"$VIW_OUT/$name.target" 2>&1 &
	tpid=$!
	wait_listen "$NS_B" "$PORT"
	in_a "$PEER" -t 20 -i "$pinfo" -c "$IP_B:$PORT" "$@" >"$VIW_OUT/$name.peer" 2>&1 ||
		bad "$name: peer failed: $(grep -m2 -E '^(FAIL|TERM)' "$VIW_OUT/$name.peer" | tr '\n' ' ')"
	wait "$tpid" || bad "$name: viw_target failed: $(tail -3 "$VIW_OUT/$name.target")"
}
raw_peer bad-crc "--recv 1" mpa-req:crc=1 expect-rep:reject=0,crc=1 \
	send:len=16,crc=bad expect-term:layer=2,type=0,code=2,secs=10 \
	expect-close:secs=15
raw_peer peer-term "--recv 1" mpa-req expect-rep:reject=0 \
	term:layer=0,type=2,code=6 expect-close:secs=15
wait_for 10 closed "$DEV_B" || bad "$DEV_B: a connection still active after the failures"
snap after
t=$(trace_save failures)
run rdma statistic show link "$DEV_A/1"
run rdma statistic show link "$DEV_B/1"
at_least "$DEV_A" connections_failed 2
at_least "$DEV_A" mpa_rejects_received 1
at_least "$DEV_B" mpa_rejects_sent 1
at_least "$DEV_B" crc_errors 1
at_least "$DEV_B" terminates_sent 1
at_least "$DEV_B" terminates_received 1
traced "$t" "viw_cm_event: dev=$DEV_A .* event=CONNECT_REPLY status=-111" 2
traced "$t" "viw_term_sent: dev=$DEV_B qpn=[0-9]+ layer=2 type=0 code=0x02" 1
traced "$t" "viw_term_rcvd: dev=$DEV_B qpn=[0-9]+ layer=0 type=2 code=0x06" 1
traced "$t" "viw_qp_state: dev=$DEV_B qpn=[0-9]+ RTS -> SQE"
log "failures: counted and traced"

# ---- TCP retransmissions ---------------------------------------------------
if modprobe -q sch_netem && command -v tc >/dev/null; then
	snap before
	run in_b tc qdisc add dev "$IF_B" root netem loss 10%
	rping_pair "$IP_B" 65000 10
	in_b tc qdisc del dev "$IF_B" root
	wait_for 10 closed "$DEV_B" || bad "$DEV_B: a connection still active after rping"
	snap after
	at_least "$DEV_B" tcp_retransmits 1
	log "tcp_retransmits of $DEV_B: +$(delta "$DEV_B" tcp_retransmits) (sockets closed)"
else
	log "sch_netem or tc missing: tcp_retransmits not exercised"
fi

# ---- rdma link errors ---------------------------------------------------
# link_error NAME MESSAGE CMD...: CMD fails and prints MESSAGE.
link_error() {
	local name=$1 msg=$2 out
	shift 2
	out=$("$@" 2>&1) && bad "link error $name: '$*' succeeded"
	echo "    $name: $out"
	[[ "$out" == *"$msg"* ]] || bad "link error $name: '$out', expected '$msg'"
}
modprobe -q tun || true
in_a ip tuntap add dev viwtun0 mode tun || die "cannot create a tun device"
link_error "no such netdev" "No such device" in_a rdma link add viwz type viw netdev nosuch
link_error "netdev has one" "Device or resource busy" in_a rdma link add viwz type viw netdev "$IF_A"
link_error "netdev type" "Operation not supported" in_a rdma link add viwz type viw netdev viwtun0
link_error "name taken" "File exists" in_a rdma link add "$DEV_B" type viw netdev lo
link_error "delete unknown" "Wrong device name" rdma link delete viwz
ib_dev_gone viwz || bad "a failed rdma link add left device viwz"
d=$(dmesg)
for m in "va already has a viw device" "viwtun0: netdev type [0-9]+ not supported" \
	"an RDMA device named $DEV_B exists already"; do
	[[ "$d" =~ $m ]] || bad "kernel log does not say '$m'"
done
in_a ip link delete viwtun0

# ---- the trace-cmd recipe of docs/observability.md -------------------------
command -v trace-cmd >/dev/null || die "trace-cmd not installed (scripts/install-deps)"
in_b timeout 120 rping -s -a "$IP_B" -C 1 -V </dev/null >"$VIW_OUT/tc-s.log" 2>&1 &
spid=$!
wait_listen "$NS_B" 7174
timeout -k 10 120 trace-cmd record -q -e viw -f 'qpn != 0' -o "$VIW_OUT/viw.dat" \
	timeout 60 ip netns exec "$NS_A" rping -c -a "$IP_B" -C 1 -V </dev/null >"$VIW_OUT/tc-record.log" 2>&1 ||
	bad "trace-cmd record failed: $(tail -3 "$VIW_OUT/tc-record.log")"
ended_within 30 "$spid" || bad "rping server still runs 30 s after its client"
stop_server "$spid"
src=0
wait "$spid" || src=$?
[ "$(rping_channel_race "$src" "$VIW_OUT/tc-s.log")" = 0 ] ||
	bad "rping server under trace-cmd failed"
timeout 60 trace-cmd report -i "$VIW_OUT/viw.dat" >"$VIW_OUT/tc-report" 2>&1 || bad "trace-cmd report failed"
traced "$VIW_OUT/tc-report" "viw_cm_event: +dev=$DEV_A .* qpn=[1-9][0-9]* event=CONNECT_REPLY status=0" 1
traced "$VIW_OUT/tc-report" "viw_qp_state: +dev=$DEV_A qpn=[0-9]+ INIT -> RTS" 1
traced "$VIW_OUT/tc-report" "viw_doorbell: +dev=$DEV_A "
# the filter: no event without a QP
traced "$VIW_OUT/tc-report" "qpn=0 " 0
log "trace-cmd record/report: $(grep -c viw_ "$VIW_OUT/tc-report") events"

checks_done
log "all observability checks passed"
