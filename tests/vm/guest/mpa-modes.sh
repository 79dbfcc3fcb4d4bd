#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# MPA modes between two viw hosts, set through debugfs: revision 1 and 2,
# CRC on, and RFC 6581 peer-to-peer mode with each RTR message (zero-length
# SEND, WRITE and READ).  rping -V must work in each; the port counters
# (rdma statistic) must show the connections.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module viw +p" > /sys/kernel/debug/dynamic_debug/control
knobs=/sys/kernel/debug/viw

# mode NAME REV CRC P2P RTR: set viw's preferences, run rping -V: 10 pings,
# each verified.
mode() {
	local name=$1 spid rc=0 src=0
	echo "$2" > "$knobs/mpa_revision"
	echo "$3" > "$knobs/mpa_crc"
	echo "$4" > "$knobs/mpa_p2p"
	echo "$5" > "$knobs/mpa_rtr"
	in_b timeout 60 rping -s -a "$IP_B" -C 10 -S 4096 -V </dev/null \
		>"$VIW_OUT/$name.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 7174	# rping's port
	in_a timeout 60 rping -c -a "$IP_B" -C 10 -S 4096 -V -v </dev/null \
		>"$VIW_OUT/$name.client" 2>&1 || rc=$?
	wait "$spid" || src=$?
	rc=$(rping_pair_status "$rc" "$VIW_OUT/$name.client" "$src" "$VIW_OUT/$name.server")
	[ "$rc" = 0 ] || { cut -c1-200 "$VIW_OUT/$name".* >&2; die "$name failed ($rc)"; }
	[ "$(rping_pings "$VIW_OUT/$name.client")" = 10 ] ||
		die "$name: $(rping_pings "$VIW_OUT/$name.client") of 10 pings completed"
	log "$name ok"
}

mode v1 1 0 0 0
mode v1-crc 1 1 0 0
mode v2-crc 2 1 0 0
mode p2p-send0 2 0 1 1
mode p2p-write0 2 0 1 2
mode p2p-read0 2 0 1 4
mode p2p-any-crc 2 1 1 7
mode v2 2 0 0 7

run rdma statistic show link "$DEV_A/1"
conns=$(port_counter "$DEV_A" connections_established)
[ "$conns" -ge 8 ] || die "counters show $conns connections on $DEV_A, expected 8"
