#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# Long work with IRQs off (issue 8, item 19).  viw_qmem deep-flush
# (tests/functional/viw_qmem.c) rings one doorbell for 8192 receives of 6
# SGEs each and then flushes 16384 WRs with modify_qp(ERR); it checks that
# all of them are flushed, in posting order, before modify_qp returns.
#
# How long IRQs stay off meanwhile is a measurement, not a pass/fail
# criterion: bench/irqsoff takes it with the function tracer.  That tracer
# is kept out of the test suite because switching it off once stalled a
# TCG guest for good (an RCU stall in the teardown's open of a tracefs
# file, after the test had passed).
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_qmem
make_two_hosts viw
rc=0
"$bin" -d "$DEV_A" deep-flush >"$VIW_OUT/deep.log" 2>&1 || rc=$?
sed 's/^/    /' "$VIW_OUT/deep.log"
[ "$rc" = 0 ] || die "viw_qmem deep-flush: $(grep -m1 '^FAIL' "$VIW_OUT/deep.log")"
log "deep doorbell and flush: all WRs flushed in order"
