#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Compile viw.ko in a private copy of the kernel tree and fail on any
# diagnostic.  Used by kernel.sparse (6.1 with sparse) and kernel.build_6_12.
#
#   kbuild-check.sh [--sparse] [--kdir DIR | --kdir-cmd CMD] NAME SRCDIR BUILDDIR
#
#   --sparse      run sparse on every file (make C=2)
#   --kdir DIR    kernel build directory (default: /lib/modules/<newest>/build)
#   --kdir-cmd C  command that prints the kernel build directory (run first)
#   NAME          work directory name: BUILDDIR/check/NAME
#
# The copy is rebuilt from scratch every time: an up-to-date object would not
# be compiled again and its warnings would go unseen.  Any line that gcc,
# sparse or modpost reports as a warning or an error fails the check.
set -euo pipefail

sparse=
kdir=
kdir_cmd=
while [ $# -gt 0 ]; do
	case $1 in
	--sparse) sparse="C=2"; shift ;;
	--kdir) kdir=$2; shift 2 ;;
	--kdir-cmd) kdir_cmd=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "kbuild-check: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 3 ] || { sed -n '4,15p' "$0" >&2; exit 2; }
name=$1 src=$(cd "$2" && pwd) build=$(mkdir -p "$3" && cd "$3" && pwd)

if [ -n "$kdir_cmd" ]; then
	kdir=$(eval "$kdir_cmd")
elif [ -z "$kdir" ]; then
	kdir=$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n1)
fi
[ -f "$kdir/Makefile" ] || { echo "kbuild-check: no kernel build dir at '$kdir'" >&2; exit 1; }
if ! ls "$src"/kernel/*.c >/dev/null 2>&1; then
	echo "kbuild-check: no kernel/*.c in $src" >&2
	exit 1
fi

work=$build/check/$name
rm -rf "$work"
mkdir -p "$work"
sh "$src/scripts/link-kernel-tree.sh" "$src" "$work"

out=$work/make.log
echo "+ make -C $kdir M=$work/kernel $sparse modules"
rc=0
make -C "$kdir" M="$work/kernel" $sparse -j"$(nproc)" modules >"$out" 2>&1 || rc=$?
cat "$out"

# gcc/sparse: "file:line:col: warning: ..."; modpost: "WARNING: modpost: ...".
diags=$(grep -E '(^|[[:space:]:])(warning|error|WARNING|ERROR):' "$out" || true)
if [ "$rc" -ne 0 ]; then
	echo "FAIL: make exited with $rc"
	exit 1
fi
if [ -n "$diags" ]; then
	echo "FAIL: $(echo "$diags" | wc -l) diagnostic line(s):"
	echo "$diags"
	exit 1
fi
[ -f "$work/kernel/viw.ko" ] || { echo "FAIL: no viw.ko produced"; exit 1; }
echo "PASS: viw.ko built cleanly against $kdir${sparse:+ (sparse C=2)}"
