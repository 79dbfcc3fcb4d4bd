#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# Device memory (tests/functional/viw_dm.c): ibv_alloc_dm and its limits
# (max_dm_size, the device's total, alignment), the copy round trip and
# the refused offsets and lengths, ibv_reg_dm_mr's range checks, and a
# remote WRITE into, a READ from and a SEND out of a DM MR between two
# QPs of one process over the IPv4 GID (index 1).  Afterwards, and after
# a process that exits holding a DM, its MR and its mapping, every object
# count and the device's DM bytes are back to 0.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_dm
make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

out=$VIW_OUT/dm.log
rc=0
in_a "$bin" -d "$DEV_A" -g 1 </dev/null >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" = 0 ] || die "viw_dm failed (rc $rc)"
grep -q '^[1-9][0-9]* passed, 0 failed$' "$out" || die "viw_dm: no result line"
wait_for 10 objects_zero "$DEV_A" || die "objects left: $(objects_of "$DEV_A")"

rc=0
in_a "$bin" -d "$DEV_A" --exit-dirty </dev/null >"$VIW_OUT/dm-dirty.log" 2>&1 || rc=$?
cat "$VIW_OUT/dm-dirty.log"
[ "$rc" = 0 ] || die "viw_dm --exit-dirty failed (rc $rc)"
wait_for 10 objects_zero "$DEV_A" ||
	die "objects left after exit: $(objects_of "$DEV_A")"
log "device memory ok"
