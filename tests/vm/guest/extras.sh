#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 90
#
# Connection extras (tests/functional/viw_conn_extras.c) over IPv4: private
# data in connect, accept and reject; zero-length SEND and RDMA WRITE; a
# SEND, a receive and a WRITE with the device's max_sge SGEs (one more
# fails with EINVAL); inline SENDs from unregistered memory; solicited
# completion events.  Server in namespace b, client in namespace a.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_conn_extras
port=7520
make_two_hosts viw

rc=0
in_b "$bin" -s "$IP_B" -p "$port" >"$VIW_OUT/extras-server.log" 2>&1 &
srv=$!
in_a "$bin" -c "$IP_B" -p "$port" >"$VIW_OUT/extras-client.log" 2>&1 || rc=1
wait "$srv" || rc=1
sed 's/^/client: /' "$VIW_OUT/extras-client.log"
sed 's/^/server: /' "$VIW_OUT/extras-server.log"
[ "$rc" = 0 ] || die "viw_conn_extras failed: $(grep -h '^FAIL' \
	"$VIW_OUT/extras-client.log" "$VIW_OUT/extras-server.log" | head -1)"
log "connection extras over $IP_B ok"
