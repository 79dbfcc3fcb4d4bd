#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 120
#
# Queue memory is charged to the memory cgroup and capped per context
# (issue 8, item 11), with tests/functional/viw_qmem.c:
#  1. In a cgroup v2 group with memory.max 48M, CQs of 2 MiB rings are
#     created until one fails: it fails with ENOMEM, and memory.current
#     grows with the rings (they are charged to the cgroup).
#  2. In a group without a limit, creation stops with ENOMEM at the
#     per-context cap of 256 MiB (VIW_MAX_UCTX_QMEM): at most 128 rings.
# Every object is gone afterwards (debugfs objects all zero).
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_qmem
make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# qmem CGROUP ARGS...: viw_qmem on DEV_A inside cgroup CGROUP
qmem() {
	local cg=$1 out=$VIW_OUT/qmem-$2.log rc=0
	shift
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
		"$bin" -d "$DEV_A" "$@" >"$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out"
	[ "$rc" = 0 ] || die "viw_qmem $*: $(grep -m1 '^FAIL' "$out")"
}

cgroot=/sys/fs/cgroup
mountpoint -q "$cgroot" || mount -t cgroup2 none "$cgroot"
echo +memory >"$cgroot/cgroup.subtree_control"
mkdir -p "$cgroot/viw-small" "$cgroot/viw-cap"
echo 48M >"$cgroot/viw-small/memory.max"

qmem "$cgroot/viw-small" fill -m "$cgroot/viw-small/memory.current"
log "memory.max 48M: ENOMEM, queue memory charged"

qmem "$cgroot/viw-cap" fill -m "$cgroot/viw-cap/memory.current" -n 200
n=$(sed -n 's/^INFO fill: \([0-9]*\) CQs.*/\1/p' "$VIW_OUT/qmem-fill.log")
[ -n "$n" ] && [ "$n" -le 128 ] ||
	die "per-context cap: ${n:-?} rings of 2 MiB created, more than 256 MiB"
log "per-context cap: ENOMEM after $n rings of 2 MiB"

wait_for 10 objects_zero "$DEV_A" || die "objects left: $(objects_of "$DEV_A")"
rmdir "$cgroot/viw-small" "$cgroot/viw-cap"
