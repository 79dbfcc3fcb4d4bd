#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# perftest over rdma_cm (-R) between two viw hosts: every bandwidth and
# latency test runs to completion at 64 B, 4 KiB and 64 KiB, and the
# atomic ones at their 8 bytes.  Figures are
# printed for the record; timing belongs to bench/, not to this test.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module viw +p" > /sys/kernel/debug/dynamic_debug/control

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
# RFC 7306 atomics (docs/semantics.md §9): 8-byte FetchAdd and CmpSwap
perf_pair ib_atomic_bw 8 1000 -A FETCH_AND_ADD
perf_pair ib_atomic_lat 8 500 -A CMP_AND_SWAP
log "perftest: all runs completed"
