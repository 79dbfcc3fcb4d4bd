#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The guest side of bench/run: viw, siw and TCP measured side by side in
# one boot, on one veth pair between namespaces a and b.  The RDMA links
# on va/vb are swapped between viw and siw, so all three use the same
# netdevs; the order of viw and siw alternates from one repetition to the
# next.  Each measurement is one line of $VIW_OUT/results.tsv:
#
#	SET TRANSPORT TEST SIZE REP VALUE UNIT
#
# SET is "table" (the table's tests), "sweep" (the plot's sizes),
# "syscalls" (system calls per WR on the client), "scale" and "scalecpu"
# (aggregate bandwidth of four QPs in one process, TEST "qps", or of four
# processes, "procs", and the CPU time per GiB they took).  bench/report turns the
# file into the table and the plot.  A measurement that fails is logged
# and skipped; the script then fails at the end, after the others ran.
#
# Environment (from bench/run): BENCH_REPS (repetitions of the table's
# tests), BENCH_SWEEP_REPS (of the plot's sizes), BENCH_SHORT=1 (the CI
# form: fewer iterations, and the plot only from the table's own runs),
# BENCH_RPS=1 (receive packet steering: each namespace receives on the
# CPU its programs run on, a's on CPU 0 and b's on CPU 1).
. "$(dirname "$0")/../tests/vm/lib.sh"

REPS=${BENCH_REPS:-5}
RPS=${BENCH_RPS:-0}
SHORT=${BENCH_SHORT:-0}
RES=$VIW_OUT/results.tsv
PINGPONG=$VIW_BUILD/bench/tcp_pingpong
IPERF_PORT=5201
PP_PORT=18600
failures=0

[ -x "$PINGPONG" ] || die "$PINGPONG not built"
command -v iperf3 >/dev/null || die "iperf3 not installed (scripts/install-deps)"
command -v strace >/dev/null || die "strace not installed (scripts/install-deps)"

if [ "$SHORT" = 1 ]; then
	# The plot's viw, siw and ping-pong points are the table's own
	# (ib_write_bw at 4 and 64 KiB, ib_write_lat and the ping-pong at 64 B).
	SWEEP_SIZES="" TCP_SWEEP_SIZES="4096 65536" TABLE_IN_SWEEP=1
	SWEEP_REPS=1
	IPERF_SECS=2
	BW_BYTES=$((8 << 20)) LAT_ITERS=300 PP_ITERS=2000
	SYSCALL_ITERS="200 1000"
	SCALE_WINDOW=1
else
	SWEEP_SIZES="64 256 1024 4096 16384 65536 262144 1048576"
	TCP_SWEEP_SIZES=$SWEEP_SIZES TABLE_IN_SWEEP=0
	SWEEP_REPS=${BENCH_SWEEP_REPS:-1}
	IPERF_SECS=5
	BW_BYTES=$((64 << 20)) LAT_ITERS=2000 PP_ITERS=10000
	SYSCALL_ITERS="1000 5000"
	SCALE_WINDOW=3
fi
# A scaling point's flows are stopped once its window has closed
# (stop_flows), so SCALE_SECS only bounds them.  It must outlast the
# start: four perftest pairs start one after another, each calibrating
# its clock while the others already spin (under receive steering the
# last header came 8 s after the first; in CI, flows of 10 s ended
# inside the window), and a slow boot stretches that.
SCALE_SECS=60
SCALE_SIZE=65536
SCALE_WAYS=4

# record SET TRANSPORT TEST SIZE REP VALUE UNIT
record() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"
	[ "$1" = table ] && [ "$TABLE_IN_SWEEP" = 1 ] || return 0
	case $3 in
	ib_write_bw | ib_write_lat | pingpong) shift; record sweep "$@" ;;
	esac
}

# failed WHAT: note a measurement that could not be made.
failed() {
	echo "BENCH FAILED: $*" >&2
	failures=$((failures + 1))
}

# bw_iters SIZE: iterations that move about BW_BYTES, between 20 and 5000.
bw_iters() {
	local n=$((BW_BYTES / $1))
	[ "$n" -lt 20 ] && n=20
	[ "$n" -gt 5000 ] && n=5000
	echo "$n"
}

# lat_iters SIZE: LAT_ITERS, fewer for large messages.
lat_iters() {
	local n=$LAT_ITERS
	[ "$1" -gt 65536 ] && n=$((n / 10))
	[ "$n" -lt 20 ] && n=20
	echo "$n"
}

# bench_hosts: namespaces a and b joined by va <-> vb, viw and siw loaded,
# no RDMA links yet.  siw's links on va and vb need distinct ifindexes.
bench_hosts() {
	load_viw
	load_siw
	make_netns_pair --distinct-ifindex
	DEV_A='' DEV_B=''
	[ "$RPS" = 1 ] || return 0
	# A veth receives in the softirq of the sender, on the sender's CPU.
	# Steered, each namespace receives on its own CPU, as a host does on
	# its NIC's: the clients (ns a) run on CPU 0, the servers on CPU 1.
	in_a sh -c "echo 1 >/sys/class/net/$IF_A/queues/rx-0/rps_cpus" ||
		die "cannot steer $IF_A's receive"
	in_b sh -c "echo 2 >/sys/class/net/$IF_B/queues/rx-0/rps_cpus" ||
		die "cannot steer $IF_B's receive"
}

# use_rnic TYPE: the RDMA links on va and vb become TYPE_a and TYPE_b.
use_rnic() {
	[ "$DEV_A" = "$1_a" ] && return 0
	[ -z "$DEV_A" ] || delete_link_pair
	add_link_pair "$1"
}

# perftest_point SET TYPE TEST SIZE ITERS REP: one perftest run on the
# current links; records BW average (MiB/s, perftest's MB are 2^20 bytes)
# or t_typical, the median latency (us).
perftest_point() {
	local set=$1 type=$2 test=$3 size=$4 iters=$5 rep=$6 line col=4 unit=MiB/s
	case $test in *_lat) col=5 unit=us ;; esac
	if ! line=$(PERF_TAG=-$set-$type-r$rep perf_pair "$test" "$size" "$iters" |
		grep -E "^ *$size +$iters " | tail -n1) || [ -z "$line" ]; then
		failed "$type $test $size (rep $rep)"
		return 0
	fi
	record "$set" "$type" "$test" "$size" "$rep" "$(echo "$line" | awk -v c=$col '{ print $c }')" "$unit"
}

# tcp_pair NAME PORT SERVER... -- CLIENT...: a TCP server in b (CPU 1)
# and its client in a (CPU 0), as perf_once places perftest; the client's
# output goes to $VIW_OUT/NAME.client.  Non-zero if either side fails.
tcp_pair() {
	local name=$1 port=$2 spid rc=0 server=()
	shift 2
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	wait_unlisten "$NS_B" "$port"
	in_b timeout 120 taskset -c 1 "${server[@]}" </dev/null >"$VIW_OUT/$name.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" "$port"
	in_a timeout 120 taskset -c 0 "$@" </dev/null >"$VIW_OUT/$name.client" 2>&1 || rc=$?
	[ "$rc" = 0 ] || stop_server "$spid"
	wait "$spid" || rc=$((rc ? rc : $?))
	return "$rc"
}

# iperf3_point SET SIZE REP: iperf3, one stream a -> b; SIZE is the write
# size (-l), "default" for iperf3's own (128 KiB).  Records MiB/s.
iperf3_point() {
	local set=$1 size=$2 rep=$3 name="iperf3-$1-$2-r$3" len=() v
	[ "$size" = default ] || len=(-l "$size")
	if ! tcp_pair "$name" "$IPERF_PORT" iperf3 -s -1 -p "$IPERF_PORT" -- \
		iperf3 -c "$IP_B" -p "$IPERF_PORT" -t "$IPERF_SECS" -J "${len[@]}"; then
		failed "iperf3 $size (rep $rep)"
		return 0
	fi
	v=$(python3 -c 'import json, sys
print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8 / 2**20))' \
		<"$VIW_OUT/$name.client") || { failed "iperf3 $size: no result"; return 0; }
	record "$set" tcp iperf3 "$size" "$rep" "$v" MiB/s
}

# pingpong_point SET SIZE REP: tcp_pingpong; records the one-way latency,
# half the median round trip (us).
pingpong_point() {
	local set=$1 size=$2 rep=$3 name="pingpong-$1-$2-r$3" n=$PP_ITERS v
	# large messages take milliseconds each
	[ "$size" -ge 16384 ] && n=$((n / 10))
	[ "$size" -ge 262144 ] && n=$((n / 10))
	local opts=(-p "$PP_PORT" -l "$size" -n "$n" -w $((n / 10)))
	if ! tcp_pair "$name" "$PP_PORT" "$PINGPONG" -s "${opts[@]}" -- \
		"$PINGPONG" -c "$IP_B" "${opts[@]}"; then
		failed "tcp_pingpong $size (rep $rep)"
		return 0
	fi
	v=$(awk '$1 == "tcp_pingpong" { print $7 }' "$VIW_OUT/$name.client")
	[ -n "$v" ] || { failed "tcp_pingpong $size: no result"; return 0; }
	record "$set" tcp pingpong "$size" "$rep" "$v" us
}

# rnic_order: the RNIC whose links are up first, then the other; so viw
# and siw alternate in which goes first, and the links change once per
# repetition.
rnic_order() { if [ "$DEV_A" = siw_a ]; then echo siw viw; else echo viw siw; fi; }

table_rep() {
	local rep=$1 type t s
	iperf3_point table default "$rep"
	pingpong_point table 64 "$rep"
	for type in $(rnic_order); do
		use_rnic "$type"
		for t in ib_write_bw ib_send_bw ib_read_bw; do
			for s in 65536 4096; do
				perftest_point table "$type" "$t" "$s" "$(bw_iters "$s")" "$rep"
			done
		done
		for t in ib_send_lat ib_write_lat ib_read_lat; do
			perftest_point table "$type" "$t" 64 "$LAT_ITERS" "$rep"
		done
	done
	log "table repetition $rep of $REPS done"
}

sweep_rep() {
	local rep=$1 type s
	for s in $TCP_SWEEP_SIZES; do
		iperf3_point sweep "$s" "$rep"
	done
	for s in $SWEEP_SIZES; do
		pingpong_point sweep "$s" "$rep"
	done
	[ -n "$SWEEP_SIZES" ] || return 0
	for type in $(rnic_order); do
		use_rnic "$type"
		for s in $SWEEP_SIZES; do
			perftest_point sweep "$type" ib_write_bw "$s" "$(bw_iters "$s")" "$rep"
			perftest_point sweep "$type" ib_write_lat "$s" "$(lat_iters "$s")" "$rep"
		done
	done
	log "sweep repetition $rep of $SWEEP_REPS done"
}

# cpu_ticks: the busy time of all CPUs so far (user, nice, system, irq,
# softirq), in USER_HZ ticks.
cpu_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }

# wire_bytes: what va has sent, headers of every layer included.
wire_bytes() { in_a cat "/sys/class/net/$IF_A/statistics/tx_bytes"; }

# all_started LOG...: every perftest client LOG has printed its header,
# which it does just before the measured loop.
all_started() {
	local log
	for log in "$@"; do grep -q '#bytes' "$log" 2>/dev/null || return 1; done
}

# all_running LOG...: no perftest client LOG has printed anything after
# its header, which it does only once its loop ended.
all_running() {
	local log
	for log in "$@"; do
		[ "$(grep -v '^ *$' "$log" | tail -n1 | grep -c '#bytes')" = 1 ] || return 1
	done
}

# all_alive PID...
all_alive() {
	local pid
	for pid in "$@"; do kill -0 "$pid" 2>/dev/null || return 1; done
}

# scale_window TYPE MODE REP CHECK ARG...: once the flows run, a window of
# SCALE_WINDOW seconds: what va sent in it is the aggregate bandwidth, and
# the CPUs' busy time in it per GiB sent is the CPU cost.  Set-up and
# tear-down stay outside.  The window counts only if CHECK ARG... (every
# flow still runs) holds at its end; else it returns 1, with nothing
# recorded.
scale_window() {
	local type=$1 mode=$2 rep=$3 t0 t1 b0 b1
	shift 3
	sleep 1
	t0=$(cpu_ticks) b0=$(wire_bytes)
	sleep "$SCALE_WINDOW"
	t1=$(cpu_ticks) b1=$(wire_bytes)
	"$@" || return 1
	record scale "$type" "$mode" "$SCALE_SIZE" "$rep" "$(awk -v b=$((b1 - b0)) \
		-v w="$SCALE_WINDOW" 'BEGIN { printf "%.1f\n", b / w / 2^20 }')" MiB/s
	record scalecpu "$type" "$mode" "$SCALE_SIZE" "$rep" "$(awk -v t=$((t1 - t0)) \
		-v b=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f\n", b ? t / hz / (b / 2^30) : 0 }')" s/GiB
}

# stop_flows PROGRAM: end a scaling point's flows, all of them PROGRAM,
# once its window has closed: what they would move after it measures
# nothing.  Each side dies by SIGTERM, so its connections are torn down
# as when a process is killed (vm.faults does the same under load).
stop_flows() { pkill -x "$1" 2>/dev/null || true; }

# scale_flows TYPE MODE REP: ib_write_bw at SCALE_SIZE over SCALE_WAYS
# connections for SCALE_SECS, measured by scale_window.  MODE "qps" is
# one perftest pair with -q; "procs" is as many pairs at once, each on its
# own port.  perftest's own report is not used: under this load it often
# cannot calibrate its clock, and the pairs' figures would not add up to
# one window anyway.  Returns, with nothing recorded, 1 if the flows did
# not all start, 2 if one ended within the window.
scale_flows() {
	local type=$1 mode=$2 rep=$3 i n=$SCALE_WAYS opts=() pids=() logs=() tag rc=0
	[ "$mode" = qps ] && n=1 opts=(-q "$SCALE_WAYS")
	for ((i = 0; i < n; i++)); do
		tag=-scale-$mode-$type-r$rep-$i
		rm -f "$VIW_OUT/ib_write_bw$tag-$SCALE_SIZE".{client,server}
		# perf_once fails when the report is missing; see above
		{ PERF_TAG=$tag PERF_PORT=$((18515 + 10 * i)) perf_once ib_write_bw \
			"$SCALE_SIZE" - -D "$SCALE_SECS" "${opts[@]}" >/dev/null 2>&1 || true; } &
		pids+=($!)
		logs+=("$VIW_OUT/ib_write_bw$tag-$SCALE_SIZE.client")
	done
	if ! wait_for 60 all_started "${logs[@]}"; then
		rc=1
	elif ! scale_window "$type" "$mode" "$rep" all_running "${logs[@]}"; then
		rc=2
	fi
	stop_flows ib_write_bw
	for i in "${pids[@]}"; do wait "$i"; done
	return "$rc"
}

# not_started LOG...: the first line of each perftest client LOG that did
# not reach its header, to say why.
not_started() {
	local log
	for log in "$@"; do
		grep -q '#bytes' "$log" 2>/dev/null ||
			echo "${log##*/}: $(grep -m1 -v '^-*$' "$log" 2>/dev/null || echo 'no output')"
	done
}

# scale_point TYPE MODE REP: scale_flows, run a second time if the flows
# did not all start or one ended within the window.  A connection can fail
# before any data moves, and the window then has nothing to measure: on
# siw, rdma_connect sometimes fails with "Address already in use" (the
# port rdma_cm chose is still held by a TCP socket; viw takes another,
# docs/semantics.md section 7a).  And each pair's SCALE_SECS start when
# it is set up: in one slow boot a viw pair's flow ended within the
# window, seconds apart as the pairs start.
# The first attempt's logs stay as LOG.client.1, and a NOTE says why it
# was run again.
scale_point() {
	local type=$1 mode=$2 rep=$3 log logs try why rc
	for try in 1 2; do
		scale_flows "$type" "$mode" "$rep" && return 0
		rc=$?
		logs=("$VIW_OUT/ib_write_bw-scale-$mode-$type-r$rep-"*"-$SCALE_SIZE.client")
		if [ "$rc" = 2 ]; then
			why="a flow ended within the window"
			echo "NOTE: $type $mode scaling (rep $rep, attempt $try): $why"
		else
			why="the flows did not all start"
			echo "NOTE: $type $mode scaling (rep $rep, attempt $try): $why;" \
				"$(not_started "${logs[@]}" | tr '\n' ';')"
		fi
		for log in "${logs[@]}"; do
			mv "$log" "$log.$try"
			mv "${log%.client}.server" "${log%.client}.server.$try" 2>/dev/null || true
		done
	done
	failed "$type $mode scaling: $why (rep $rep, 2 attempts)"
}

# tcp_scale_point MODE REP: SCALE_WAYS TCP streams, measured as
# scale_point measures perftest: "qps" is one iperf3 with -P, "procs" as
# many iperf3 pairs, each on its own port.
tcp_scale_point() {
	local mode=$1 rep=$2 i n=1 ways=1 pids=() port
	[ "$mode" = qps ] && ways=$SCALE_WAYS || n=$SCALE_WAYS
	for ((i = 0; i < n; i++)); do
		port=$((IPERF_PORT + 1 + i))
		{ tcp_pair "iperf3-scale-$mode-r$rep-$i" "$port" iperf3 -s -1 -p "$port" -- \
			iperf3 -c "$IP_B" -p "$port" -t "$SCALE_SECS" -P "$ways" || true; } &
		pids+=($!)
	done
	sleep 1
	scale_window tcp "$mode" "$rep" all_alive "${pids[@]}" ||
		failed "tcp $mode scaling: a flow ended within the window (rep $rep)"
	stop_flows iperf3
	for i in "${pids[@]}"; do wait "$i"; done
}

scale_rep() {
	local rep=$1 type mode
	for mode in qps procs; do
		tcp_scale_point "$mode" "$rep"
	done
	for type in $(rnic_order); do
		use_rnic "$type"
		for mode in qps procs; do
			scale_point "$type" "$mode" "$rep"
		done
	done
	log "scaling repetition $rep of $REPS done"
}

# strace_calls FILE: the system calls in strace -c's table, one
# "NAME CALLS" line each.  gettimeofday and clock_gettime are left out:
# they are perftest's clock calibration (system calls here because TCG's
# clock source has no vDSO), a few thousand whatever the WR count, and
# not a cost of the WRs.
strace_calls() {
	awk '$4 ~ /^[0-9]+$/ && $NF !~ /^(total|gettimeofday|clock_gettime)$/ { print $NF, $4 }' "$1"
}

# per_wr FILE1 N1 FILE2 N2: "TOTAL (NAME X, ...)", the system calls per
# WR in all and of each kind that changed by 0.05 or more.  The counts go
# through files: the guest has no /dev/fd for process substitution.
per_wr() {
	strace_calls "$1" >"$1.calls"
	strace_calls "$3" >"$3.calls"
	awk -v n1="$2" -v n2="$4" '
		FNR == NR { c1[$1] = $2; names[$1]; next }
		{ c2[$1] = $2; names[$1] }
		END {
			for (k in names) {
				d = (c2[k] - c1[k]) / (n2 - n1)
				total += d
				if (d >= 0.05 || d <= -0.05) {
					detail = detail sprintf("%s%s %.2f", sep, k, d)
					sep = ", "
				}
			}
			printf "%.3f (%s)\n", total, detail == "" ? "none" : detail
		}' "$1.calls" "$3.calls"
}

# syscalls_per_wr TYPE TEST SIZE: the client's system calls under strace
# -c -f at two iteration counts; the difference divided by the difference
# in WRs leaves out set-up and tear-down.  A wrapper named TEST, first on
# PATH, straces the client (the run whose last argument is the server's
# address) and runs the server plainly, so that perf_pair runs both.
syscalls_per_wr() {
	local type=$1 test=$2 size=$3 n files=() iters=() real wrap=/tmp/bench-strace r
	real=$(command -v "$test")
	mkdir -p "$wrap"
	cat >"$wrap/$test" <<EOF
#!/bin/bash
[ "\${!#}" = "$IP_B" ] && exec strace -c -f -o "\$BENCH_STRACE_OUT" "$real" "\$@"
exec "$real" "\$@"
EOF
	chmod +x "$wrap/$test"
	use_rnic "$type"
	for n in $SYSCALL_ITERS; do
		rm -f "$VIW_OUT/strace-$type-$test-$n"
		# Under strace the clock calibration often fails;
		# the counts are whole before it (PERF_CLOCK_OK, lib.sh).
		if ! PATH=$wrap:$PATH BENCH_STRACE_OUT=$VIW_OUT/strace-$type-$test-$n \
			PERF_TAG=-strace-$type PERF_CLOCK_OK=1 perf_pair "$test" "$size" "$n" >/dev/null; then
			failed "strace $type $test $size -n $n"
			return 0
		fi
		files+=("$VIW_OUT/strace-$type-$test-$n")
		iters+=("$n")
	done
	r=$(per_wr "${files[0]}" "${iters[0]}" "${files[1]}" "${iters[1]}")
	record syscalls "$type" "$test" "$size" 1 "${r%% *}" calls/WR
	echo "$type $test $size: $r" >>"$VIW_OUT/syscalls.txt"
	log "system calls per WR, $type $test $size: $r"
}

bench_hosts
: >"$RES"
: >"$VIW_OUT/syscalls.txt"
{
	echo "kernel $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	echo "reps $REPS, sweep reps $SWEEP_REPS, short $SHORT"
	# bench/run --no-erms: which string copies the kernel chose
	if grep -qw erms /proc/cpuinfo; then
		echo "guest CPU with ERMS: the kernel copies and clears in byte steps (rep movsb)"
	else
		echo "guest CPU without ERMS: the kernel copies and clears in 8-byte steps"
	fi
	if [ "$RPS" = 1 ]; then
		echo "receive steered: $IF_A to CPU 0, $IF_B to CPU 1 (rps_cpus)"
	else
		echo "receive in the sender's softirq (veth, no steering)"
	fi
} >"$VIW_OUT/machine.txt"
cat "$VIW_OUT/machine.txt"

for ((rep = 1; rep <= REPS; rep++)); do
	table_rep "$rep"
done
for ((rep = 1; rep <= REPS; rep++)); do
	scale_rep "$rep"
done
for ((rep = 1; rep <= SWEEP_REPS; rep++)); do
	sweep_rep "$rep"
done
for type in $(rnic_order); do
	syscalls_per_wr "$type" ib_write_bw 4096
	[ "$SHORT" = 1 ] || syscalls_per_wr "$type" ib_send_lat 64
done

log "$(wc -l <"$RES") measurements in $RES, $failures failed"
[ "$failures" = 0 ] || die "$failures measurements failed (BENCH FAILED lines above)"
