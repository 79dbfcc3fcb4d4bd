#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# Connections made by modify_qp (docs/semantics.md, "Connections made by
# modify_qp") between two viw hosts: the IP GIDs, then ibv_rc_pingpong and
# ibv_srq_pingpong, which swap QPN and GID over a socket of their own and
# move their QPs to RTR and RTS, over the IPv4 and the IPv6 GID, with
# either host as the pingpong server.  UC and UD QPs are refused at once.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "file viw_direct.c +p" > /sys/kernel/debug/dynamic_debug/control

# --- the GID table (kernel/viw_gid.c) ---
gid() { cat "/sys/class/infiniband/$1/ports/1/gids/$2"; }
wait_for 10 sh -c "[ \"\$(cat /sys/class/infiniband/$DEV_A/ports/1/gids/1)\" = 0000:0000:0000:0000:0000:ffff:0a4d:0001 ]" ||
	die "GID 1 of $DEV_A is $(gid "$DEV_A" 1), not ::ffff:10.77.0.1"
[ "$(gid "$DEV_B" 1)" = 0000:0000:0000:0000:0000:ffff:0a4d:0002 ] ||
	die "GID 1 of $DEV_B is $(gid "$DEV_B" 1)"
[ "$(gid "$DEV_A" 2)" = fd77:0000:0000:0000:0000:0000:0000:0001 ] ||
	die "GID 2 of $DEV_A is $(gid "$DEV_A" 2), not fd77::1"
mac=$(cat "/sys/class/net/$IF_A/address" 2>/dev/null || in_a cat "/sys/class/net/$IF_A/address")
g0=$(gid "$DEV_A" 0)
[ "${g0:0:14}" = "$(echo "$mac" | tr -d : | sed 's/\(....\)/\1:/g; s/:$//')" ] ||
	die "GID 0 of $DEV_A ($g0) does not hold the MAC $mac"
in_a ibv_devinfo -v -d "$DEV_A" >"$VIW_OUT/devinfo" 2>&1
grep -q "GID\[  1\]:.*0000:0000:0000:0000:0000:ffff:0a4d:0001" "$VIW_OUT/devinfo" ||
	{ cat "$VIW_OUT/devinfo"; die "ibv_devinfo -v does not list ::ffff:10.77.0.1"; }
grep -q "GID\[  2\]:.*fd77:0000:0000:0000:0000:0000:0000:0001" "$VIW_OUT/devinfo" ||
	die "ibv_devinfo -v does not list fd77::1"
# Addresses come and go: the table and ib_core's cache follow.
in_a ip addr add 10.77.1.1/24 dev "$IF_A"
wait_for 10 sh -c "grep -q 0a4d:0101 /sys/class/infiniband/$DEV_A/ports/1/gids/*" ||
	die "a new IPv4 address did not show as a GID"
in_a ip addr del 10.77.1.1/24 dev "$IF_A"
wait_for 10 sh -c "! grep -q 0a4d:0101 /sys/class/infiniband/$DEV_A/ports/1/gids/*" ||
	die "a removed IPv4 address stayed a GID"
# Each device listens for modify_qp connections in its namespace.
listening "$NS_A" 20886 || die "no modify_qp listener in $NS_A"
listening "$NS_B" 20886 || die "no modify_qp listener in $NS_B"
log "GIDs: MAC at 0, IPv4 at 1, IPv6 at 2, following address changes"

for g in 1 2; do
	for dir in "b a" "a b"; do
		# shellcheck disable=SC2086
		set -- $dir
		pingpong_pair ibv_rc_pingpong "$1" "$2" "$g"
		pingpong_pair ibv_rc_pingpong "$1" "$2" "$g" -s 4096
		pingpong_pair ibv_rc_pingpong "$1" "$2" "$g" -s 65536 -n 1000
		pingpong_pair ibv_rc_pingpong "$1" "$2" "$g" -e
	done
done
log "ibv_rc_pingpong: default, -s 4096, -s 65536 -n 1000, -e; IPv4 and IPv6; both directions"

pingpong_pair ibv_srq_pingpong b a 1 -q 16
pingpong_pair ibv_srq_pingpong a b 2 -q 16
log "ibv_srq_pingpong -q 16: IPv4 and IPv6"

# UC and UD QPs are refused at create_qp: the tools fail at once.
for t in ibv_uc_pingpong ibv_ud_pingpong; do
	rc=0
	in_a timeout 10 "$t" -d "$DEV_A" -g 1 </dev/null >"$VIW_OUT/$t" 2>&1 || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || die "$t did not fail at once (rc $rc)"
	grep -qi "create QP" "$VIW_OUT/$t" || { cat "$VIW_OUT/$t"; die "$t: no clear message"; }
done
log "ibv_uc_pingpong and ibv_ud_pingpong fail at create_qp"

# Nothing is left behind.
for d in "$DEV_A" "$DEV_B"; do
	wait_for 10 sh -c "! grep -Eqv ' 0$' /sys/kernel/debug/viw/$d/objects" ||
		{ cat "/sys/kernel/debug/viw/$d/objects"; die "$d: objects left"; }
done
log "modify-connect: all runs passed, no objects left"
