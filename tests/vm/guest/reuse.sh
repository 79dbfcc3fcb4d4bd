#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# A send WR completes only once the transport no longer needs its pages
# (issue 10): tests/functional/viw_reuse.c sends 128 WRITEs and SENDs of
# 64 KiB, every fourth signaled, from 8 buffers, and scribbles on each
# buffer the moment a completion frees it; the receiver compares every
# byte.  a's veth drops 1% of what it sends and delays the rest by 2 ms, so
# TCP sends segments again long after the WR that carried them completed,
# and the run must see it do so (TcpRetransSegs in a).  Between two viw
# hosts with MPA CRC on, nothing may differ and every WR must succeed.
#
# VIW_REUSE_DRIVER=siw runs the same between two siw hosts (not in the
# suite).  siw hands an unsignaled WR of a page or more to TCP as pages to
# splice (MSG_SPLICE_PAGES) and counts it done once a later signaled WR is
# in the socket; Debian's 6.1 TCP ignores that flag and copies, and siw
# passes here (docs/semantics.md, section 15).
. "$(dirname "$0")/../lib.sh"

driver=${VIW_REUSE_DRIVER:-viw}
bin=$VIW_BUILD/tests/functional/viw_reuse
modprobe -q sch_netem || die "sch_netem does not load"
command -v tc >/dev/null || die "tc (iproute2) not found"
make_two_hosts "$driver"
# siw holds its registrations to RLIMIT_MEMLOCK even for root; the server's
# MR is 8 MiB
ulimit -l unlimited
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ "$driver" = viw ]; then
	echo 1 >/sys/kernel/debug/viw/mpa_crc
fi
# One segment a packet (no GSO), so that netem's 1% falls on some 60 of
# the 6000 segments, not on a couple of 64 KiB bursts.
in_a ip link set dev "$IF_A" gso_max_size 1500 || die "gso_max_size on $IF_A failed"
in_a tc qdisc add dev "$IF_A" root netem loss 1% delay 2ms ||
	die "netem on $IF_A failed"

retrans() {
	in_a nstat -az TcpRetransSegs | awk '$1 == "TcpRetransSegs" { print $2 }'
}

before=$(retrans)
rc=0
in_b timeout 100 "$bin" -s "$IP_B" </dev/null >"$VIW_OUT/server.log" 2>&1 &
srv=$!
wait_listen "$NS_B" 7540
in_a timeout 70 "$bin" -c "$IP_B" </dev/null >"$VIW_OUT/client.log" 2>&1 || rc=1
wait "$srv" || rc=1
after=$(retrans)
in_a tc qdisc del dev "$IF_A" root
grep -hE "^(PASS|FAIL|INFO)|passed" "$VIW_OUT/client.log" "$VIW_OUT/server.log" |
	sed "s/^/  $driver: /"
log "$driver: a retransmitted $((after - before)) segments"
[ "$rc" = 0 ] || die "$driver: viw_reuse failed"
[ $((after - before)) -gt 0 ] || die "$driver: no segment was sent again: the run tested no loss"
has "$VIW_OUT/server.log" "^PASS data: 128 messages"
if [ "$driver" = viw ]; then
	echo 0 >/sys/kernel/debug/viw/mpa_crc
	wait_for 10 objects_zero "$DEV_A" || die "objects left on $DEV_A: $(objects_of "$DEV_A")"
	wait_for 10 objects_zero "$DEV_B" || die "objects left on $DEV_B: $(objects_of "$DEV_B")"
fi
log "$driver: buffers reused at their completions, under loss: every byte arrived as posted"
