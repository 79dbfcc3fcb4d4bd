#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# viw as installed by the distribution packages, with nothing from the build
# tree: tests/packaging/debian.sh installs ibverbs-provider-viw and viw-dkms
# on the host (DKMS builds viw.ko into /lib/modules) and then runs this
# script.  The module comes from "modprobe viw", the provider from
# /etc/libibverbs.d/viw.driver (RDMAV_DRIVERS unset); two hosts then run
# ibv_devices, ibv_devinfo and rping -V.  man finds and renders the
# packages' manual pages, viw(4) and libviw(7).
. "$(dirname "$0")/../lib.sh"

# lib.sh points libibverbs at the build tree's provider: not here.
unset RDMAV_DRIVERS IBV_DRIVERS

kver=$(uname -r)
for p in ibverbs-provider-viw viw-dkms; do
	dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' ||
		die "package $p is not installed (run tests/packaging/debian.sh)"
done
provider=$(dpkg -L ibverbs-provider-viw | grep '/libibverbs/libviw-rdmav34\.so$') ||
	die "ibverbs-provider-viw has no libibverbs/libviw-rdmav34.so"
grep -qx 'driver viw' /etc/libibverbs.d/viw.driver ||
	die "/etc/libibverbs.d/viw.driver does not say 'driver viw'"
log "provider $provider"

# The manual pages, where man looks for them, as a user would read them.
for page in "4 viw viw-dkms" "7 libviw ibverbs-provider-viw"; do
	read -r sec name pkg <<<"$page"
	path=$(man -w "$sec" "$name") || die "man -w $sec $name finds no page"
	dpkg -L "$pkg" | grep -qxF "$path" || die "man -w $sec $name gives $path, not a file of $pkg"
	MANWIDTH=80 man -P cat "$sec" "$name" >"$VIW_OUT/man-$name.txt" 2>"$VIW_OUT/man-$name.err" ||
		die "man $sec $name failed: $(head -n1 "$VIW_OUT/man-$name.err")"
	grep -q "^NAME" "$VIW_OUT/man-$name.txt" && grep -qw "$name" "$VIW_OUT/man-$name.txt" ||
		die "man $sec $name: no NAME section naming $name"
	log "man $sec $name: $path"
done

# The module modprobe resolves must be the one DKMS installed for this kernel.
module_loaded viw && die "viw is already loaded"
ko=$(modinfo -n viw) || die "modprobe does not know viw for $kver (depmod?)"
case $ko in
/lib/modules/"$kver"/updates/*) log "module $ko" ;;
*) die "modinfo -n viw gives $ko, not a DKMS module under /lib/modules/$kver/updates" ;;
esac

run modprobe viw
module_loaded viw || die "viw not in /sys/module after modprobe viw"
for m in ib_core ib_uverbs; do
	module_loaded "$m" || die "modprobe viw did not load its dependency $m"
done

make_netns_pair
add_link "$NS_A" viw_a viw "$IF_A"
add_link "$NS_B" viw_b viw "$IF_B"

# ibv_devices lists only devices a provider claimed, so both names in its
# output mean the installed libviw matched them.
run ibv_devices >"$VIW_OUT/ibv_devices.out" 2>"$VIW_OUT/ibv_devices.err"
cat "$VIW_OUT/ibv_devices.out" "$VIW_OUT/ibv_devices.err"
for dev in viw_a viw_b; do
	grep -qw "$dev" "$VIW_OUT/ibv_devices.out" || die "ibv_devices does not list $dev"
done
if grep -q . "$VIW_OUT/ibv_devices.err"; then
	die "libibverbs complained: $(head -n1 "$VIW_OUT/ibv_devices.err")"
fi

# Open the device and show which provider file the dynamic loader used.
LD_DEBUG=files ibv_devinfo -d viw_a >"$VIW_OUT/ibv_devinfo.out" 2>"$VIW_OUT/ld_debug.err" ||
	{ cat "$VIW_OUT/ibv_devinfo.out"; die "ibv_devinfo -d viw_a failed"; }
cat "$VIW_OUT/ibv_devinfo.out"
grep -q 'transport:[[:space:]]*iWARP' "$VIW_OUT/ibv_devinfo.out" ||
	die "ibv_devinfo -d viw_a: transport is not iWARP"
loaded=$(sed -nE 's/.*file=([^ ]*libviw-rdmav34\.so) .*/\1/p' "$VIW_OUT/ld_debug.err" | sort -u)
[ "$loaded" = "$provider" ] || die "libviw loaded from '${loaded:-nowhere}', not $provider"
log "ibv_devinfo used $loaded"

# rping with data verification, server in b, client in a.
count=10
in_b rping -s -a "$IP_B" -C "$count" -S 4096 -V </dev/null >"$VIW_OUT/rping-s.log" 2>&1 &
spid=$!
wait_listen "$NS_B" 7174	# rping's port
rc=0 src=0
in_a timeout 60 rping -c -a "$IP_B" -C "$count" -S 4096 -V -v \
	</dev/null >"$VIW_OUT/rping-c.log" 2>&1 || rc=$?
wait "$spid" || src=$?
rc=$(rping_pair_status "$rc" "$VIW_OUT/rping-c.log" "$src" "$VIW_OUT/rping-s.log")
if [ "$rc" != 0 ]; then
	cut -c1-200 "$VIW_OUT/rping-s.log" "$VIW_OUT/rping-c.log" >&2
	die "rping -V 4096 failed ($rc)"
fi
n=$(rping_pings "$VIW_OUT/rping-c.log")
[ "$n" = "$count" ] || die "rping -V 4096: $n of $count pings completed"
log "rping -V $IP_B size 4096 x$count ok, with the packaged module and provider"
