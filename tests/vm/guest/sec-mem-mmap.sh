#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 90
#
# mmap() of a ring racing the destruction of its object (issue 8, item 4),
# with tests/functional/viw_qmem.c: for 15 s one thread creates a CQ of
# 65536 CQEs (a 2 MiB ring) and destroys it after up to 2 ms while another
# maps its ring again and again.  Every mapping must be refused or show a
# fresh ring, a destroyed CQ's key must never map, and the kernel must log
# nothing (the harness checks).  Every object is gone afterwards.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_qmem
make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

rc=0
"$bin" -d "$DEV_A" mmap-race -t 15 >"$VIW_OUT/mmap-race.log" 2>&1 || rc=$?
sed 's/^/    /' "$VIW_OUT/mmap-race.log"
[ "$rc" = 0 ] || die "viw_qmem mmap-race: $(grep -m1 '^FAIL' "$VIW_OUT/mmap-race.log")"
wait_for 10 objects_zero "$DEV_A" || die "objects left: $(objects_of "$DEV_A")"
log "mmap raced CQ destruction: no failure"
