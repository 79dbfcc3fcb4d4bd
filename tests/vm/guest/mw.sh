#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# Memory windows and ibv_rereg_mr between two viw hosts
# (tests/functional/viw_mw.c): WRITE and READ through type 1 and type 2
# windows, access outside a window, beyond its rights and after local,
# remote and type 1 invalidation, bind errors, dereg/rereg of an MR with
# bound windows, rereg of access, translation and PD.  Each side asserts
# its completions and memory; afterwards no object is left.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_mw
make_two_hosts viw

rc=0
in_b "$bin" -s "$IP_B" >"$VIW_OUT/mw-server.log" 2>&1 &
srv=$!
in_a "$bin" -c "$IP_B" >"$VIW_OUT/mw-client.log" 2>&1 || rc=1
wait "$srv" || rc=1
grep -E "FAIL|passed" "$VIW_OUT/mw-client.log" "$VIW_OUT/mw-server.log" || true
[ "$rc" = 0 ] || die "viw_mw failed"
wait_for 10 objects_zero viw_a || die "objects left on viw_a: $(objects_of viw_a)"
wait_for 10 objects_zero viw_b || die "objects left on viw_b: $(objects_of viw_b)"
log "memory windows and rereg ok"
