#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 1500
#
# rdma-core's own pyverbs test suite (tests/ of rdma-core v44.0, run by
# Debian's python3-pyverbs) against a viw device.  Its traffic tests
# connect RC QPs through modify_qp (docs/semantics.md, "Connections made
# by modify_qp"), both QPs in one process on one device.  The suite is not
# part of this repository: tests/vm/pyverbs-prepare extracts it into
# BUILD/pyverbs/ before the VM boots; without it this test says SKIP.
#
# Pass: no failure and no error, the RC traffic tests named below ok, and
# at least $PYVERBS_MIN_OK tests ok.  The counts and every skip reason
# (grouped) are printed.
. "$(dirname "$0")/../lib.sh"

suite=$VIW_BUILD/pyverbs/tests
# What passes today (issue 9 aims at 80; see docs/semantics.md §8 for why
# most of the rest is skipped on any RC-only iWARP device).
min_ok=${PYVERBS_MIN_OK:-41}
if [ ! -f "$suite/run_tests.py" ]; then
	echo "SKIP: rdma-core's tests/ not found in $suite (tests/vm/pyverbs-prepare)"
	exit 0
fi
python3 -c 'import pyverbs' 2>/dev/null ||
	{ echo "SKIP: python3-pyverbs is not installed (scripts/install-deps)"; exit 0; }

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
out=$VIW_OUT/pyverbs.log
rc=0
# Python writes its caches next to the sources, which are read-only here.
in_a env PYTHONDONTWRITEBYTECODE=1 timeout 1300 python3 "$suite/run_tests.py" \
	--dev "$DEV_A" -v </dev/null >"$out" 2>&1 || rc=$?
tail -n 5 "$out"

ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$out")
[ -n "$ran" ] || { tail -n 40 "$out"; die "the suite did not finish (rc $rc)"; }
# unittest -v ends each test's line (after its docstring) with the result.
count() { grep -cE "\.\.\. $1" "$out" || true; }
# One test's result: the first " ... RESULT" line from its name line on
# (a docstring puts it on the next line), so a neighbour's result never
# counts for it.
result_of() {
	awk -v t="$1" '$1 == t && $2 ~ /^\(/ { on = 1 }
		on && / \.\.\. / { sub(/.* \.\.\. /, ""); print; exit }' "$out"
}
ok=$(count 'ok$')
skip=$(count "skipped ")
fail=$(count 'FAIL$')
err=$(count 'ERROR$')
echo "pyverbs: ran $ran: $ok ok, $fail failed, $err errors, $skip skipped"
echo "skip reasons (count, reason):"
sed -n "s/.* \.\.\. skipped [\"']\(.*\)[\"']\$/\1/p" "$out" | sort | uniq -c | sort -rn
if [ "$fail" != 0 ] || [ "$err" != 0 ]; then
	grep -B1 -E "\.\.\. (FAIL|ERROR)$" "$out"
	grep -A 25 -E "^(FAIL|ERROR): " "$out" | head -n 150
	die "pyverbs: $fail failures, $err errors"
fi
# The RC traffic tests this device can run must run, not skip, and pass.
# (test_rdmacm_sync_traffic was listed here, but it skips: the suite wants
# /sys/class/infiniband/DEV/device/net/, which a device on a veth lacks.
# The old check, grep -A3, took a neighbour's "ok" for its result.)
# The extended verbs (docs/host-interface.md, "Extended verbs"): ibv_wr_*
# on ibv_create_qp_ex QPs, ibv_start_poll on ibv_create_cq_ex CQs, parent
# domains.
for t in test_cq_events_rc test_ro_rc_traffic \
	 test_create_rc_qp_no_attr test_create_rc_qp_with_attr \
	 test_create_rc_qp_ex_no_attr \
	 test_qp_ex_rc_send test_qp_ex_rc_rdma_write \
	 test_qp_ex_rc_rdma_write_zero_length test_qp_ex_rc_rdma_read \
	 test_qp_ex_rc_rdma_read_zero_size \
	 test_rc_traffic_cq_ex test_create_cq_ex test_create_cq_ex_bad_flow \
	 test_without_allocators_rc_traffic test_default_allocators_rc_traffic \
	 test_mem_align_rc_traffic test_mem_align_srq_excq_rc_traffic \
	 ${PYVERBS_MUST_PASS:-}; do
	[ "$(result_of "$t")" = ok ] || die "pyverbs: $t did not pass"
done
[ "$ok" -ge "$min_ok" ] || die "pyverbs: only $ok tests ok, want $min_ok"
wait_for 15 sh -c "! grep -Eqv ' 0\$' /sys/kernel/debug/viw/$DEV_A/objects" ||
	{ cat "/sys/kernel/debug/viw/$DEV_A/objects"; die "objects left"; }
log "pyverbs: $ok ok, 0 failures, $skip skipped"
