#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Mirror kernel/ and kernel-headers/ into a build tree with symbolic links,
# so that Kbuild can build out of the source tree:
#   link-kernel-tree.sh SRCDIR BUILDDIR
set -eu
src=$1
dst=$2
mkdir -p "$dst/kernel"
find "$dst/kernel" -maxdepth 1 -type l -exec rm -f {} +
for f in "$src"/kernel/*.c "$src"/kernel/*.h "$src"/kernel/Kbuild; do
	[ -e "$f" ] && ln -sf "$f" "$dst/kernel/"
done
ln -sfn "$src/kernel-headers" "$dst/kernel-headers"
