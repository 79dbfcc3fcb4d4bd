#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Unpack Debian bookworm-backports' 6.12 kernel headers into a private
# directory (never installed: installing them would pull in the 6.12 image)
# and print the kernel build directory to use with "make -C".
#
#   tests/kernel/headers-6.12.sh [CACHE_DIR]
#
# CACHE_DIR defaults to $VIW_CACHE_DIR or /var/cache/viw.  The download
# happens once; later calls print the cached directory without network access.
#
# Layout: the three packages (linux-headers-V-amd64, linux-headers-V-common,
# linux-kbuild-V) are unpacked with dpkg-deb -x into CACHE_DIR/k6.12/root, so
# their relative symbolic links (scripts -> ../../lib/linux-kbuild-...)
# resolve inside that root.  The one absolute reference, the
# "include /usr/src/linux-headers-V-common/Makefile" line of the -amd64
# Makefile, is rewritten to point into the root.  Nothing under /usr/src is
# touched.
set -euo pipefail

cache=${1:-${VIW_CACHE_DIR:-/var/cache/viw}}
top=$cache/k6.12
log() { echo "headers-6.12: $*" >&2; }

if [ -f "$top/KDIR" ] && [ -f "$(cat "$top/KDIR")/Makefile" ]; then
	cat "$top/KDIR"
	exit 0
fi

here=$(cd "$(dirname "$0")" && pwd)
"$here/../../scripts/apt-backports"

# The newest 6.12 flavour: what the meta-package points at, else sort -V.
hdr=$(apt-cache depends linux-headers-6.12-amd64 2>/dev/null |
	sed -nE 's/^[[:space:]]*Depends: (linux-headers-6\.12\.[^ ]*-amd64)$/\1/p' | head -n1)
if [ -z "$hdr" ]; then
	hdr=$(apt-cache search --names-only '^linux-headers-6\.12\.[0-9.]+\+[^ ]*-amd64$' |
		awk '{print $1}' | grep -v -e -cloud- -e -rt- | sort -V | tail -n1)
fi
[ -n "$hdr" ] || { log "no linux-headers-6.12*-amd64 in the apt sources"; exit 1; }
deps=$(apt-cache depends "$hdr" | sed -nE 's/^[[:space:]]*\|?Depends: (linux-(headers-[^ ]*-common|kbuild-[^ ]*))$/\1/p')
common=$(echo "$deps" | grep '^linux-headers-' | head -n1)
kbuild=$(echo "$deps" | grep '^linux-kbuild-' | head -n1)
[ -n "$common" ] && [ -n "$kbuild" ] || { log "cannot resolve -common/-kbuild of $hdr"; exit 1; }
log "using $hdr $common $kbuild"

rm -rf "$top.tmp"
mkdir -p "$top.tmp/debs" "$top.tmp/root"
(cd "$top.tmp/debs" && apt-get download -q -o APT::Sandbox::User=root "$hdr" "$common" "$kbuild" >&2)
for deb in "$top.tmp"/debs/*.deb; do
	dpkg-deb -x "$deb" "$top.tmp/root"
done

rel=${hdr#linux-headers-}
kdir_rel=usr/src/linux-headers-$rel
[ -f "$top.tmp/root/$kdir_rel/Makefile" ] || { log "$kdir_rel/Makefile missing"; exit 1; }

# Point the absolute include at the private copy.  Rewritten again below,
# after the final rename, so that the path is the final one.
fix_makefile() {
	sed -i -E "s#^include (/[^ ]*)?/usr/src/#include $1/usr/src/#" "$1/$kdir_rel/Makefile"
}
rm -rf "$top"
mv "$top.tmp" "$top"
fix_makefile "$top/root"
grep -q "^include $top/root/usr/src/" "$top/root/$kdir_rel/Makefile" ||
	{ log "unexpected Makefile layout:"; cat "$top/root/$kdir_rel/Makefile" >&2; exit 1; }
rm -rf "$top/debs"
echo "$top/root/$kdir_rel" >"$top/KDIR"
cat "$top/KDIR"
