#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 120
#
# Two viw devices on a veth pair are visible to libibverbs and look like an
# iWARP RNIC: ibv_devices lists both; ibv_devinfo -v reports transport
# iWARP, an active port, link layer Ethernet and a GID derived from the MAC
# (read from sysfs when ibv_devinfo does not print it, see check_devinfo).
#
# VMTEST_RDMA_TYPE=siw runs the same checks against Linux's siw (reference).
. "$(dirname "$0")/../lib.sh"

type=${VMTEST_RDMA_TYPE:-viw}
if [ "$type" != viw ]; then
	unset RDMAV_DRIVERS # a reference run must not depend on libviw
elif [ -z "${RDMAV_DRIVERS:-}" ]; then
	die "provider $VIW_PROVIDER-rdmav34.so not built: ibv_* cannot see viw devices"
fi
make_two_hosts "$type"

# hex32 GID: the 32 hex digits of a GID printed by ibv_devinfo, either as
# eight 4-digit groups or in inet_ntop's compressed form ("fe80::1").
hex32() {
	local g=${1,,} h="" x
	local -a hd=() tl=() grp=()
	if [[ $g == *::* ]]; then
		[ -n "${g%%::*}" ] && IFS=: read -ra hd <<<"${g%%::*}"
		[ -n "${g#*::}" ] && IFS=: read -ra tl <<<"${g#*::}"
		grp=("${hd[@]}")
		for ((x = ${#hd[@]} + ${#tl[@]}; x < 8; x++)); do grp+=(0); done
		grp+=("${tl[@]}")
	else
		IFS=: read -ra grp <<<"$g"
	fi
	[ ${#grp[@]} -eq 8 ] || return 1
	for x in "${grp[@]}"; do h=$h$(printf '%04x' "0x$x"); done
	echo "$h"
}

# Self-check of hex32 on both printed forms.
[ "$(hex32 fe80::5054:ff:fe12:3456)" = fe80000000000000505400fffe123456 ] || die "hex32 broken"
[ "$(hex32 5254:0012:3456:0000:0000:0000:0000:0000)" = 52540012345600000000000000000000 ] || die "hex32 broken"
[ "$(hex32 5254:12:3456::)" = 52540012345600000000000000000000 ] || die "hex32 broken"

out=$(run ibv_devices)
echo "$out"
for dev in "$DEV_A" "$DEV_B"; do
	grep -qw "$dev" <<<"$out" || die "ibv_devices does not list $dev"
done

check_devinfo() {
	local dev=$1 ns=$2 netdev=$3 info mac m gid want_raw eui
	info=$(run ibv_devinfo -v -d "$dev")
	echo "$info"
	grep -qE '^[[:space:]]*transport:[[:space:]]+iWARP' <<<"$info" || die "$dev: transport is not iWARP"
	grep -qE '^[[:space:]]*state:[[:space:]]+PORT_ACTIVE' <<<"$info" || die "$dev: port not PORT_ACTIVE"
	grep -qE '^[[:space:]]*link_layer:[[:space:]]+Ethernet' <<<"$info" || die "$dev: link_layer not Ethernet"

	mac=$(ip netns exec "$ns" cat "/sys/class/net/$netdev/address")
	m=${mac//:/}
	# Accepted GIDs: the MAC in bytes 0-5 and zeros (what siw, cxgb4, irdma
	# and erdma report), or any prefix followed by the MAC's modified EUI-64
	# interface identifier (as in fe80::/64).
	eui=$(printf '%02x' $((0x${m:0:2} ^ 2)))${m:2:4}fffe${m:6:6}
	want_raw=${m}00000000000000000000
	gid=$(sed -nE 's/^[[:space:]]*GID\[[[:space:]]*0\]:[[:space:]]+([0-9a-fA-F:]+).*/\1/p' <<<"$info" | head -n1)
	src="ibv_devinfo"
	if [ -z "$gid" ]; then
		# ibv_devinfo skips a GID whose bytes 8-15 are zero, which is the
		# case for the MAC-first form: read the GID table from sysfs.
		src="sysfs (ibv_devinfo hides GIDs with zero bytes 8-15)"
		gid=$(cat "/sys/class/infiniband/$dev/ports/1/gids/0" 2>/dev/null) ||
			die "$dev: no GID[0] in ibv_devinfo -v nor in sysfs"
	fi
	gid=$(hex32 "$gid") || die "$dev: cannot parse GID[0] '$gid'"
	case $gid in
	"$want_raw" | ????????????????"$eui") log "$dev: GID[0] $gid matches MAC $mac (from $src)" ;;
	*) die "$dev: GID[0] $gid is not derived from MAC $mac (want $want_raw or <prefix>$eui)" ;;
	esac
}
check_devinfo "$DEV_A" "$NS_A" "$IF_A"
check_devinfo "$DEV_B" "$NS_B" "$IF_B"
log "devices ok"
