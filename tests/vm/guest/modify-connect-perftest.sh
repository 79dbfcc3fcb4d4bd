#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# perftest without rdma_cm (no -R) between two viw hosts: perftest swaps
# QPN and GID over its own socket and connects its QPs through modify_qp
# (docs/semantics.md, "Connections made by modify_qp").  Every bandwidth
# and latency test runs to completion at 64 B and 64 KiB over the IPv4 GID
# (-x 1), and a few over the IPv6 GID (-x 2).  Figures are printed for the
# record only.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# perf_x GID TEST SIZE ITERS: lib.sh's perf_pair with GID index GID
# instead of rdma_cm.
perf_x() {
	PERF_CONN="-x $1" PERF_TAG="-x$1" perf_pair "${@:2}"
}

for t in ib_send_bw ib_write_bw ib_read_bw; do
	perf_x 1 "$t" 64 1000
	perf_x 1 "$t" 65536 200
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
	perf_x 1 "$t" 64 500
	perf_x 1 "$t" 65536 50
done
perf_x 2 ib_write_bw 65536 100
perf_x 2 ib_read_lat 64 200
log "perftest without rdma_cm: ib_{send,write,read}_{bw,lat} at 64 B and 64 KiB"

for d in "$DEV_A" "$DEV_B"; do
	wait_for 10 objects_zero "$d" || die "$d: objects left: $(objects_of "$d")"
done
