#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# rping with data verification between two viw hosts, at 64 B, 4 KiB and
# 64000 B (rping's largest), over IPv4 and IPv6.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw

# rping_pair ADDR SIZE COUNT: server in b, client in a; both must succeed.
rping_pair() {
	local addr=$1 size=$2 count=$3 spid rc=0 n

	in_b rping -s -a "$addr" -C "$count" -S "$size" -V </dev/null \
		>"$VIW_OUT/rping-s.log" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 7174	# rping's port
	in_a timeout 60 rping -c -a "$addr" -C "$count" -S "$size" -V -v \
		</dev/null >"$VIW_OUT/rping-c.log" 2>&1 || rc=$?
	wait "$spid" || rc=$((rc ? rc : $?))
	if [ "$rc" != 0 ]; then
		cut -c1-200 "$VIW_OUT/rping-s.log" "$VIW_OUT/rping-c.log" >&2
		die "rping $addr size $size failed ($rc)"
	fi
	# -V verifies every transfer; -v prints one line per ping
	n=$(grep -c "ping data" "$VIW_OUT/rping-c.log" || true)
	[ "$n" = "$count" ] ||
		die "rping $addr size $size: $n of $count pings completed"
	log "rping $addr size $size x$count ok"
}

rping_pair "$IP_B" 64 20
rping_pair "$IP_B" 4096 20
rping_pair "$IP_B" 64000 10
rping_pair "$IP6_B" 4096 10
