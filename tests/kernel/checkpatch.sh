#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# kernel.checkpatch: run the kernel's checkpatch.pl over viw's kernel code
# and uapi header; any ERROR or WARNING fails.
#
#   tests/kernel/checkpatch.sh SRCDIR BUILDDIR
#
# checkpatch.pl, spelling.txt and const_structs.checkpatch are extracted once
# from Debian's linux-source tarball into BUILDDIR/tools/checkpatch (they are
# not part of this repository).  Mode: plain --no-tree (no --strict, so no
# CHECK-level messages); every message it prints counts.  No --ignore is
# used; add one only with a comment saying why.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SRCDIR BUILDDIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
build=$(mkdir -p "$2" && cd "$2" && pwd)

tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
[ -n "$tarball" ] || { echo "FAIL: no /usr/src/linux-source-*.tar.xz (apt-get install linux-source-6.1)"; exit 1; }
tools=$build/tools/checkpatch
stamp="$tarball $(stat -c %Y "$tarball")"
if [ "$(cat "$tools/.stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "extracting checkpatch from $tarball"
	top=$(basename "$tarball" .tar.xz)
	rm -rf "$tools"
	mkdir -p "$tools"
	tar -xJf "$tarball" -C "$tools" --strip-components=2 \
		"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch"
	echo "$stamp" >"$tools/.stamp"
fi

shopt -s nullglob
files=("$src"/kernel/*.c "$src"/kernel/*.h "$src"/kernel-headers/rdma/viw-abi.h \
	"$src"/tests/kmod/*.c)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no files to check"; exit 1; }
[ -n "$(ls "$src"/kernel/*.c 2>/dev/null)" ] || echo "note: no kernel/*.c yet"

# Relative names keep the messages short and stable.
cd "$src"
rel=("${files[@]#"$src"/}")
out=$(perl "$tools/checkpatch.pl" --no-tree --file --show-types --color=never \
	--summary-file "${rel[@]}" 2>&1) || true
echo "$out"
bad=$(grep -cE '^(ERROR|WARNING|CHECK):' <<<"$out" || true)
# Also trust the per-file totals ("total: E errors, W warnings[, C checks],").
totals=$(sed -nE 's/.*total: ([0-9]+) errors, ([0-9]+) warnings(, ([0-9]+) checks)?,.*/\1 \2 \4/p' <<<"$out" |
	awk '{ n += $1 + $2 + $3 } END { print n + 0 }')
if [ "$bad" != 0 ] || [ "$totals" != 0 ]; then
	echo "FAIL: checkpatch reported $((bad > totals ? bad : totals)) problem(s) in ${#rel[@]} file(s)"
	exit 1
fi
echo "PASS: checkpatch clean on ${#rel[@]} file(s): ${rel[*]}"
