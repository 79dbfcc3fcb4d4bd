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
# What passes today (82 measured: the atomics, memory
# windows, rereg, device memory, immediate data and the remote-error tests
# included; issue 9 aims at 80; see docs/semantics.md §8 for why most of
# the rest is skipped on any RC-only iWARP device).
min_ok=${PYVERBS_MIN_OK:-82}
[ -f "$suite/run_tests.py" ] ||
	skip "rdma-core's tests/ not found in $suite (tests/vm/pyverbs-prepare)"
python3 -c 'import pyverbs' 2>/dev/null ||
	skip "python3-pyverbs is not installed (scripts/install-deps)"

# A PCI NIC, so that the device has a parent and the suite finds its
# netdev (and IP address) under /sys/class/infiniband/DEV/device/net/.
VMTEST_LINK=pci make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# The rdma_cm tests synchronise their two processes through
# multiprocessing, which needs /dev/shm.
mkdir -p /dev/shm
mountpoint -q /dev/shm || mount -t tmpfs tmpfs /dev/shm
# Some tests put their buffers on 2 MiB huge pages (64 MiB of the VM's 2 GiB).
echo 32 >/proc/sys/vm/nr_hugepages
out=$VIW_OUT/pyverbs.log
rc=0
# Python writes its caches next to the sources, which are read-only here.
in_a env PYTHONDONTWRITEBYTECODE=1 timeout 1300 python3 "$suite/run_tests.py" \
	--dev "$DEV_A" -v </dev/null >"$out" 2>&1 || rc=$?
tail -n 5 "$out"

ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$out")
[ -n "$ran" ] || { tail -n 40 "$out"; die "the suite did not finish (rc $rc)"; }
# The counts come from unittest's closing line ("OK (skipped=N)" or
# "FAILED (failures=F, errors=E, skipped=N)"): the per-test lines are
# interleaved with what the tests' child processes print.
summary=$(grep -E '^(OK|FAILED)( \(.*\))?$' "$out" | tail -n1)
num() { local v; v=$(echo "$summary" | sed -n "s/.*[(, ]$1=\([0-9]*\).*/\1/p"); echo "${v:-0}"; }
fail=$(num failures)
err=$(num errors)
skip=$(num skipped)
ok=$((ran - fail - err - skip - $(num 'expected failures') - $(num 'unexpected successes')))
echo "pyverbs: ran $ran: $ok ok, $fail failed, $err errors, $skip skipped"
echo "skip reasons (count, reason):"
sed -n "s/.* \.\.\. skipped [\"']\(.*\)[\"']\$/\1/p" "$out" | sort | uniq -c | sort -rn

# Errors of the suite's own making on every iWARP device, each checked
# by what its child process reported ("Player active got: MESSAGE"):
# - test_rdmacm_async_udp_traffic asks rdma_cm for a UD QP (RDMA_PS_UDP),
#   which an iWARP device refuses (EOPNOTSUPP); the child's error is not
#   turned into a skip.
# - test_rdmacm_async_traffic_external_qp expects CONNECT_RESPONSE, an
#   InfiniBand CM event; on iWARP, rdma_cm reports an accepted connection
#   as ESTABLISHED (cma_iw_handler).
# - test_rdmacm_async_traffic sets RDMA_OPTION_ID_ACK_TIMEOUT and asserts
#   that query_qp reports it; rdma_cm passes the timeout to the QP only
#   on the InfiniBand CM path (rdma_init_qp_attr), never to an iWARP QP.
#   Its assert carries no message.
# empty_active_report TEST: the active child reported an empty message,
# on TEST's own line or on one of the lines its children printed before
# unittest's verdict (the passive child may print first).
empty_active_report() {
	awk -v t="$1" '
		index($0, t " (") == 1 { f = 1 }
		f && /Player active got: $/ { found = 1 }
		f && /^(ok|ERROR|FAIL)$/ { exit }
		END { exit !found }' "$out"
}
known_error() {
	local what
	what=$(grep -m1 -E "^$1 \(.*Player active got: " "$out" | sed 's/.*Player active got: //')
	case $1 in
	test_rdmacm_async_udp_traffic) [ "$what" = "Failed to Create QP. Errno: 95, Operation not supported" ] ;;
	test_rdmacm_async_traffic_external_qp) [ "$what" = "Expected this event: 5, got this event: RDMA_CM_EVENT_ESTABLISHED" ] ;;
	test_rdmacm_async_traffic) [ -z "$what" ] && empty_active_report "$1" ;;
	*) return 1 ;;
	esac
}
known=0
for t in $(sed -n 's/^\(ERROR\|FAIL\): \(test_[a-z0-9_]*\) .*/\2/p' "$out"); do
	if known_error "$t"; then
		echo "known iWARP error of the suite: $t"
		known=$((known + 1))
	fi
done
if [ $((fail + err)) != "$known" ]; then
	grep -A 25 -E "^(FAIL|ERROR): " "$out" | head -n 150
	die "pyverbs: $fail failures, $err errors ($known of them known iWARP differences)"
fi
# result_of TEST: what unittest -v said of TEST (ok, FAIL, ERROR, skipped
# ...): the first result word at or after TEST's line, which a docstring
# or a child process's output may push to a later line.
result_of() {
	awk -v t="$1" '
		index($0, t " (") == 1 { found = 1 }
		found { sub(/.* \.\.\. /, "") }
		found && /^(ok|FAIL|ERROR|skipped)/ { print; exit }' "$out"
}
# The RC traffic tests this device can run must run, not skip, and pass.
# Those that expect a remote access violation to fail the requester's own
# WR pass since SENDs and WRITEs complete on the responder's
# acknowledgement (docs/semantics.md §13).
# Device memory (docs/semantics.md §11): all but test_import_dm.
# The extended verbs (docs/host-interface.md, "Extended verbs"): ibv_wr_*
# on ibv_create_qp_ex QPs, ibv_start_poll on ibv_create_cq_ex CQs, parent
# domains.
for t in test_cq_events_rc test_ro_rc_traffic test_rdmacm_sync_traffic \
	 test_rdmacm_async_read test_rdmacm_async_write test_rdmacm_async_reject_traffic \
	 test_create_rc_qp_no_attr test_create_rc_qp_with_attr \
	 test_create_rc_qp_ex_no_attr \
	 test_qp_ex_rc_send test_qp_ex_rc_rdma_write \
	 test_qp_ex_rc_rdma_write_zero_length test_qp_ex_rc_rdma_read \
	 test_qp_ex_rc_rdma_read_zero_size \
	 test_rc_traffic_cq_ex test_create_cq_ex test_create_cq_ex_bad_flow \
	 test_without_allocators_rc_traffic test_default_allocators_rc_traffic \
	 test_mem_align_rc_traffic test_mem_align_srq_excq_rc_traffic \
	 test_atomic_cmp_and_swap test_atomic_fetch_and_add \
	 test_atomic_invalid_qp_access test_atomic_invalid_mr_access \
	 test_atomic_non_aligned_addr test_atomic_invalid_lkey \
	 test_atomic_invalid_rkey \
	 test_qp_ex_rc_atomic_cmp_swp test_qp_ex_rc_atomic_fetch_add \
	 test_qp_ex_rc_send_imm test_qp_ex_rc_rdma_write_imm \
	 test_mw_type1 test_mw_type2 test_reg_mw_wrong_type test_mr_rereg_access \
	 test_invalidate_mw_type1 test_mw_type2_invalidate_local \
	 test_mw_type2_invalidate_remote test_mw_type2_invalidate_dealloc \
	 test_mr_rereg_access_bad_flow test_mr_rereg_addr test_mr_rereg_pd \
	 test_qp_ex_rc_bind_mw \
	 test_create_dm test_destroy_dm test_create_dm_bad_flow \
	 test_destroy_dm_bad_flow test_dm_write test_dm_write_bad_flow \
	 test_dm_read test_multi_process_alloc_dm test_create_dm_mr \
	 test_dm_bad_access test_dm_bad_registration test_dm_traffic \
	 test_dm_remote_traffic \
	 ${PYVERBS_MUST_PASS:-}; do
	[ "$(result_of "$t")" = ok ] || die "pyverbs: $t did not pass: $(result_of "$t")"
done
[ "$ok" -ge "$min_ok" ] || die "pyverbs: only $ok tests ok, want $min_ok"
wait_for 15 sh -c "! grep -Eqv ' 0\$' /sys/kernel/debug/viw/$DEV_A/objects" ||
	{ cat "/sys/kernel/debug/viw/$DEV_A/objects"; die "objects left"; }
log "pyverbs: $ok ok, $skip skipped, $((fail + err)) failures and errors, all known iWARP differences"
