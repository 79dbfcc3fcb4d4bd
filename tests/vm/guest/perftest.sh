#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# perftest over rdma_cm (-R) between two viw hosts: every bandwidth and
# latency test runs to completion at 64 B, 4 KiB and 64 KiB.  Figures are
# printed for the record; timing belongs to bench/, not to this test.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module viw +p" > /sys/kernel/debug/dynamic_debug/control

# perf_once TEST SIZE ITERS [OPTION...]: server in b, client in a;
# returns non-zero if either fails.
perf_once() {
	local test=$1 size=$2 iters=$3 spid rc=0 log=$VIW_OUT/$1-$2
	shift 3

	# Each side on its own CPU: TCG's per-CPU cycle counters are not in
	# step, and perftest calibrates against one.
	in_b timeout 120 taskset -c 1 "$test" -R -d "$DEV_B" -s "$size" -n "$iters" "$@" \
		</dev/null >"$log.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 18515	# perftest's port
	in_a timeout 120 taskset -c 0 "$test" -R -d "$DEV_A" -s "$size" -n "$iters" "$@" \
		"$IP_B" </dev/null >"$log.client" 2>&1 || rc=$?
	wait "$spid" || rc=$((rc ? rc : $?))
	[ "$rc" = 0 ] || return "$rc"
	# the result line: size, iterations, then the figures
	grep -E "^ *$size +$iters " "$log.client"
}

# perf_pair TEST SIZE ITERS [OPTION...]: perf_once, which must succeed.
# perftest calibrates its cycle counter against the clock before it
# reports; under QEMU/TCG the samples sometimes correlate too poorly and
# perftest gives up ("Can't produce a report") after a successful run.
# Only that failure, matched by its message, is retried (up to 5 runs).
perf_pair() {
	local log=$VIW_OUT/$1-$2 i try
	for try in 1 2 3 4 5; do
		perf_once "$@" && return 0
		perftest_clock_failed "$log.server" "$log.client" || break
		echo "NOTE: $1 size $2: perftest could not calibrate its clock (run $try)"
		for i in server client; do mv "$log.$i" "$log.$i.$try"; done
	done
	tail -n 20 "$log.server" "$log.client" >&2
	die "$1 size $2 failed"
}

for t in ib_read_bw ib_send_bw ib_write_bw; do
	perf_pair "$t" 64 1000
	perf_pair "$t" 4096 500
	perf_pair "$t" 65536 100
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
	perf_pair "$t" 64 500
	perf_pair "$t" 4096 200
	perf_pair "$t" 65536 50
done
# messages of 1 MiB, segmented into many FPDUs
for t in ib_send_bw ib_write_bw ib_read_bw; do
	perf_pair "$t" 1048576 20
done
# inline data in the send queue element
perf_pair ib_send_lat 64 200 -I 64
log "perftest: all runs completed"
