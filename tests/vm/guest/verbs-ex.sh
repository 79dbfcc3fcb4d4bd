#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 120
#
# The extended verbs over a connection (tests/functional/viw_verbs_ex.py,
# pyverbs): an ibv_wr_* batch of SEND from an SGE list, inline SEND from a
# buffer list, RDMA WRITE and SEND with Invalidate; aborted and failed
# batches that deliver nothing; wr_rdma_read; EOPNOTSUPP for what viw
# cannot do.  Two QPs of one device connected through modify_qp over its
# IPv4 GID (index 1), on parent domains, completing into extended CQs.
. "$(dirname "$0")/../lib.sh"

python3 -c 'import pyverbs' 2>/dev/null ||
	skip "python3-pyverbs is not installed (scripts/install-deps)"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
out=$VIW_OUT/verbs-ex.log
rc=0
in_a env PYTHONDONTWRITEBYTECODE=1 timeout 90 python3 \
	"$VIW_SRC/tests/functional/viw_verbs_ex.py" "$DEV_A" 1 \
	</dev/null >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" = 0 ] || die "viw_verbs_ex failed (rc $rc)"
grep -q '^[1-9][0-9]* passed, 0 failed$' "$out" || die "viw_verbs_ex: no result line"
wait_for 15 objects_zero "$DEV_A" ||
	{ cat "/sys/kernel/debug/viw/$DEV_A/objects"; die "objects left"; }
log "extended verbs ok"
