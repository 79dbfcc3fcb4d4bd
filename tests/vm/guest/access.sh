#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# Remote access enforcement (tests/functional/viw_rdma_access.c): RDMA
# WRITE and READ with a wrong, a stale and an unauthorised rkey and out of
# bounds, and RFC 7306 atomics: their values, two QPs adding to one word
# at once, and a wrong rkey, an MR without REMOTE_ATOMIC and an unaligned
# target.  The requester sees REM_ACCESS_ERR, the target memory is
# unchanged, both QPs end in ERROR and both sides see the disconnect.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_rdma_access
make_two_hosts viw

# access_run SERVER_ADDR PORT
access_run() {
	local rc=0 srv
	in_b "$bin" -s "$1" -p "$2" >"$VIW_OUT/access-server-$2.log" 2>&1 &
	srv=$!
	in_a "$bin" -c "$1" -p "$2" >"$VIW_OUT/access-client-$2.log" 2>&1 || rc=1
	wait "$srv" || rc=1
	grep -E "FAIL|passed" "$VIW_OUT/access-client-$2.log" \
		"$VIW_OUT/access-server-$2.log" || true
	[ "$rc" = 0 ] || die "viw_rdma_access $1 failed"
	log "remote access checks over $1 ok"
}

access_run "$IP_B" 7479
access_run "$IP6_B" 7480
