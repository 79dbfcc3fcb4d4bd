#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 420
#
# Large-MTU links (issue 8, item 1).  The transmit path once described at
# most 14 page pieces of an FPDU's payload and sent the FPDU's full length
# anyway, from whatever followed on its stack.  At MTU 65535 viw's MULPDU
# is about 32 KiB (Linux TCP bounds the MSS by half the window the peer
# offered at connect time, at most 64 KiB): a single buffer then spans at
# most 9 pieces, but a WR gathered from several unaligned SGEs spans more.
#
#  1. viw_conn_extras (tests/functional/viw_conn_extras.c), whose "bulk"
#     scenario sends 64 KiB SENDs, WRITEs and READ responses from aligned
#     and unaligned buffers, one FPDU of them from six SGEs in 19 page
#     pieces, and checks every byte received; with MPA CRC off and on.
#  2. The client device's tx_max_fpdu_pieces counter shows that an FPDU
#     of more than 14 pieces was really sent (tx_max_fpdu_payload, the
#     largest FPDU payload, is shown for the record).
#  3. rping -V (verifies every transfer) and perftest at that MTU.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
in_a ip link set "$IF_A" mtu 65535
in_b ip link set "$IF_B" mtu 65535
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
dbg=/sys/kernel/debug/viw
bin=$VIW_BUILD/tests/functional/viw_conn_extras

# extras_run PORT CRC: viw_conn_extras, server in b, client in a.
extras_run() {
	local port=$1 srv rc=0 log=$VIW_OUT/extras-$1
	echo "$2" >"$dbg/mpa_crc"
	in_b "$bin" -s "$IP_B" -p "$port" >"$log-server.log" 2>&1 &
	srv=$!
	in_a "$bin" -c "$IP_B" -p "$port" >"$log-client.log" 2>&1 || rc=1
	wait "$srv" || rc=1
	grep -h -E "bulk|^FAIL|passed" "$log-client.log" "$log-server.log" |
		sed 's/^/    /'
	[ "$rc" = 0 ] || die "viw_conn_extras at MTU 65535, mpa_crc $2: $(grep -h \
		'^FAIL' "$log-client.log" "$log-server.log" | head -1)"
	log "viw_conn_extras at MTU 65535, mpa_crc $2: ok"
}

extras_run 7530 N
extras_run 7531 Y
echo N >"$dbg/mpa_crc"

# High-water marks of every FPDU sent: the client sent the gathered ones.
for dev in "$DEV_A" "$DEV_B"; do
	sed "s/^/    $dev: /" "$dbg/$dev/counters"
done
pieces=$(awk '$1 == "tx_max_fpdu_pieces" { print $2 }' "$dbg/$DEV_A/counters")
[ -n "$pieces" ] || die "$DEV_A: no tx_max_fpdu_pieces counter"
[ "$pieces" -gt 14 ] ||
	die "$DEV_A: no FPDU of more than 14 page pieces was sent (most: $pieces)"
log "$DEV_A sent an FPDU of $pieces page pieces"

rping_pair "$IP_B" 65000 10
rping_pair "$IP_B" 4096 10
for t in ib_write_bw ib_read_bw ib_send_bw; do
	perf_pair "$t" 65536 50
done
perf_pair ib_write_bw 1048576 10
log "large-MTU runs completed"
