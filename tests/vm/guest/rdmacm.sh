#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# librdmacm's example programs between two viw hosts: rdma_server and
# rdma_client, and ucmatose with 64 connections at once, each sending
# messages both ways.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw

# pair NAME SERVER_CMD -- CLIENT_CMD: server in b, client in a.
pair() {
	local name=$1 spid rc=0 i
	shift
	local -a srv=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	in_b timeout 120 "${srv[@]}" </dev/null >"$VIW_OUT/$name.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 7471	# rdma_server's and ucmatose's port
	in_a timeout 120 "$@" </dev/null >"$VIW_OUT/$name.client" 2>&1 || rc=$?
	wait "$spid" || rc=$((rc ? rc : $?))
	for i in server client; do
		echo "--- $name $i"; tail -n 5 "$VIW_OUT/$name.$i"
	done
	[ "$rc" = 0 ] || die "$name failed ($rc)"
	log "$name ok"
}

pair rdma_server_client rdma_server -- rdma_client -s "$IP_B"
pair ucmatose_64 ucmatose -c 64 -C 10 -S 4096 -- \
	ucmatose -s "$IP_B" -c 64 -C 10 -S 4096
pair ucmatose_ipv6 ucmatose -b "$IP6_B" -c 4 -C 10 -- \
	ucmatose -s "$IP6_B" -c 4 -C 10
