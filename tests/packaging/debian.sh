#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# packaging.debian: the Debian packages, end to end, as root on Debian 12:
#
#   1. dpkg-buildpackage -b -us -uc in a copy of the working tree
#      (BUILD/packaging/debian), plus dpkg-source -b for the source package;
#   2. lintian on both: no errors, no warnings (overrides say why);
#   3. apt-get install of ibverbs-provider-viw and viw-dkms: DKMS builds
#      viw.ko for every kernel with headers; it must be installed for the
#      kernel the VM boots;
#   4. tests/vm/guest/packages.sh in the VM: modprobe viw, the provider from
#      /etc/libibverbs.d (no RDMAV_DRIVERS), ibv_devices, rping -V;
#   5. dpkg -P of both packages, always (also on failure), and a check that
#      nothing of them is left: the other tests use the build tree's
#      viw.ko and libviw only.
#
#   tests/packaging/debian.sh [--kver KVER] SRC BUILD VERSION
#
# KVER: the kernel to check and boot (default: the newest one with both
# /boot/vmlinuz-KVER and headers in /lib/modules/KVER/build).
set -uo pipefail
. "$(dirname "$0")/common.sh"

kver=
if [ "${1:-}" = --kver ]; then
	kver=$2
	shift 2
fi
[ $# -eq 3 ] || { echo "usage: $0 [--kver KVER] SRC BUILD VERSION" >&2; exit 2; }
src=$1 build=$2 version=$3
work=$build/packaging/debian
packages=(ibverbs-provider-viw viw-dkms)

[ "$(id -u)" = 0 ] || fail "needs root: it installs and purges packages"
need dpkg-buildpackage dpkg-source dpkg-parsechangelog lintian dkms apt-get flock mandoc

deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "${deb_version%-*}" = "$version" ] ||
	fail "debian/changelog is at $deb_version, the project (CMakeLists.txt) at $version"

if [ -z "$kver" ]; then
	kver=$(for k in /boot/vmlinuz-*; do
		k=${k#/boot/vmlinuz-}
		[ -f "/lib/modules/$k/build/Makefile" ] && echo "$k"
	done | sort -V | tail -n1)
fi
if [ -z "$kver" ] || [ ! -f "/lib/modules/$kver/build/Makefile" ]; then
	fail "no kernel with an image in /boot and headers in /lib/modules/*/build (install linux-headers-amd64)"
fi

# Installing and purging change /lib/modules, which the VM shares: do it
# while no VM runs (tests/vm/run's lock).
lockdir=/run/lock
[ -d "$lockdir" ] && [ -w "$lockdir" ] || lockdir=${TMPDIR:-/tmp}
with_vm_lock() { flock -w 3600 "$lockdir/viw-vm.lock" "$@"; }

# Both packages, in any state dpkg still knows, removed with their files.
purge() {
	local p st present=()
	for p in "${packages[@]}"; do
		st=$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null) || continue
		case $st in *not-installed) ;; *) present+=("$p") ;; esac
	done
	[ ${#present[@]} -eq 0 ] && return 0
	step "dpkg -P ${present[*]}"
	with_vm_lock dpkg -P "${present[@]}" >"$work/purge.log" 2>&1 ||
		{ cat "$work/purge.log"; return 1; }
}

# Nothing of the packages may remain.
check_purged() {
	local left
	left=$(ls -d /lib/modules/*/updates/dkms/viw.ko* /usr/src/viw-* /var/lib/dkms/viw \
		/etc/libibverbs.d/viw.driver /usr/lib/*/libibverbs/libviw-rdmav34.so 2>/dev/null)
	[ -z "$left" ] || { echo "left after purge: $left" >&2; return 1; }
}

mkdir -p "$work" || fail "cannot create $work"
if ! purge; then
	fail "cannot purge the packages an earlier run left installed"
fi
# From here on the packages may get installed: always purge them at the end.
finish() {
	local rc=$?
	trap - EXIT
	if ! purge || ! check_purged; then
		echo "FAIL: purging ${packages[*]} left the machine changed" >&2
		rc=1
	fi
	[ "$rc" = 0 ] && step "PASS: built, linted, installed, tested in the VM, purged"
	exit "$rc"
}
trap finish EXIT
trap 'exit 143' TERM INT HUP

rm -rf "${work:?}"/*
tree=$work/viw-$version

step "copy of the working tree in $tree"
copy_tree "$src" "$tree"

step "source package (dpkg-source -b, orig tarball from the tree)"
tar -C "$work" --exclude="viw-$version/debian" -czf "$work/viw_$version.orig.tar.gz" "viw-$version" ||
	fail "cannot make the orig tarball"
(cd "$work" && dpkg-source -b "viw-$version") >"$work/dpkg-source.log" 2>&1 ||
	{ cat "$work/dpkg-source.log"; fail "dpkg-source -b failed"; }

step "dpkg-buildpackage -b -us -uc"
(cd "$tree" && dpkg-buildpackage -b -us -uc) >"$work/dpkg-buildpackage.log" 2>&1 ||
	{ tail -n 40 "$work/dpkg-buildpackage.log"; fail "dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log)"; }
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
provider_deb=$work/ibverbs-provider-viw_${deb_version}_$arch.deb
dkms_deb=$work/viw-dkms_${deb_version}_all.deb
changes=$work/viw_${deb_version}_$arch.changes
for f in "$provider_deb" "$dkms_deb" "$changes" "$work/viw_$deb_version.dsc"; do
	[ -f "$f" ] || fail "dpkg-buildpackage/dpkg-source did not write $f"
	echo "  ${f#"$work"/}"
done

# What the packages must hold and declare.
contents() { dpkg-deb -c "$1" | awk '{ print $6 }'; }
has() { contents "$1" | grep -qxF "$2" || fail "${1##*/} lacks $2"; }
has "$provider_deb" "./usr/lib/$multiarch/libibverbs/libviw-rdmav34.so"
has "$provider_deb" ./etc/libibverbs.d/viw.driver
has "$provider_deb" ./usr/share/man/man7/libviw.7.gz
has "$dkms_deb" ./usr/share/man/man4/viw.4.gz
# The pages as packaged (compressed by dh_compress) are still lint clean.
for p in "$provider_deb:usr/share/man/man7/libviw.7.gz" "$dkms_deb:usr/share/man/man4/viw.4.gz"; do
	out=$(dpkg-deb --fsys-tarfile "${p%%:*}" | tar -xOf - "./${p#*:}" | gzip -dc |
		mandoc -T lint -W all 2>&1) || fail "cannot lint ${p#*:} from ${p%%:*}"
	[ -z "$out" ] || { printf '%s\n' "$out"; fail "mandoc -T lint: ${p#*:} as packaged is not clean"; }
done
[ "$(dpkg-deb -f "$provider_deb" Multi-Arch)" = same ] || fail "ibverbs-provider-viw is not Multi-Arch: same"
for f in dkms.conf Kbuild kernel/Kbuild kernel/viw_main.c kernel-headers/rdma/viw-abi.h; do
	has "$dkms_deb" "./usr/src/viw-$version/$f"
done
dpkg-deb --fsys-tarfile "$dkms_deb" | tar -xOf - "./usr/src/viw-$version/dkms.conf" |
	grep -q '^BUILD_EXCLUSIVE_CONFIG=".*CONFIG_INFINIBAND_USER_ACCESS' ||
	fail "viw-dkms's dkms.conf sets no BUILD_EXCLUSIVE_CONFIG"

step "lintian (errors and warnings fail)"
lintian --fail-on error,warning "$work/viw_$deb_version.dsc" "$changes" 2>&1 |
	grep -v '^running with root privileges' | tee "$work/lintian.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "lintian reports errors or warnings"

step "apt-get install ./ibverbs-provider-viw_*.deb ./viw-dkms_*.deb (DKMS builds viw.ko)"
if ! with_vm_lock env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	-o Dpkg::Use-Pty=0 "$provider_deb" "$dkms_deb" </dev/null >"$work/install.log" 2>&1; then
	tail -n 40 "$work/install.log"
	fail "installing the packages failed (log: $work/install.log)"
fi
awk '/^Setting up viw-dkms/ { p = 1 } /^(Setting up|Processing)/ && !/viw-dkms/ { p = 0 } p' \
	"$work/install.log" | grep -v '^[[:space:]]*$' | sed 's/^/  /'

step "dkms status"
dkms status -m viw | sed 's/^/  /'
dkms status -m viw -v "$version" -k "$kver" | grep -q ': installed' ||
	fail "DKMS did not install viw $version for $kver"
ko=$(modinfo -k "$kver" -n viw 2>/dev/null)
[ "$ko" = "/lib/modules/$kver/updates/dkms/viw.ko" ] ||
	fail "modprobe would load '${ko:-nothing}' for $kver, not DKMS's /lib/modules/$kver/updates/dkms/viw.ko"

step "VM: tests/vm/guest/packages.sh on $kver"
"$src/tests/vm/run" --build "$build" --name packaging.debian --kver "$kver" \
	"$src/tests/vm/guest/packages.sh" || fail "the VM test with the installed packages failed"
# finish (EXIT) purges and checks
