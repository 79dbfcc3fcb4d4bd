#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 150
#
# dereg_mr must not wait for what a remote peer controls (issue 8, item
# 6).  viw_target (tests/functional) listens in b with one MR and calls
# ibv_dereg_mr on it 2 s after ESTABLISHED; viw_peer (tests/tools), a raw
# peer in a, holds a reference to that MR in viw's data path meanwhile:
#   write  the header of a 2000-byte RDMA WRITE to the MR and only 100
#          bytes of its payload: the receive path is mid-segment;
#   read   a 1 MiB READ Request of the MR with a 4 KiB receive buffer
#          that it never reads: the READ Response blocks on a zero window.
# The peer holds for 9 s, then resets the connection.  ibv_dereg_mr must
# return within 5 s, i.e. while the peer still holds; afterwards every
# object is released (debugfs objects all zero) and viw.ko unloads (the
# harness's cleanup).  On the old code dereg_mr waits in D state for the
# peer; the hung-task detector, set to 10 s here, reports it.
. "$(dirname "$0")/../lib.sh"

need_peer_tools

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo 10 >/proc/sys/kernel/hung_task_timeout_secs

dereg_done() { grep -q '^DEREG rc' "$1"; }

# dereg_case NAME PORT MR_SIZE PEER_STEP...: the peer's steps after the
# MPA exchange; it then holds 9 s and resets.
dereg_case() {
	local name=$1 port=$2 size=$3 info tlog plog tpid ppid secs
	shift 3
	info=$VIW_OUT/$name.info
	tlog=$VIW_OUT/$name.target
	plog=$VIW_OUT/$name.peer
	rm -f "$info"
	in_b "$TARGET" -s "$IP_B" "$port" --mr-size "$size" --recv 4 \
		--info "$info" --dereg-after 2 --run 25 --until-disconnect \
		>"$tlog" 2>&1 &
	tpid=$!
	wait_listen "$NS_B" "$port"
	in_a "$PEER" -t 40 -i "$info" -c "$IP_B:$port" \
		mpa-req expect-rep:reject=0 "$@" sleep:9 rst >"$plog" 2>&1 &
	ppid=$!
	if ! wait_for 20 dereg_done "$tlog"; then
		sed "s/^/    target: /" "$tlog"
		sleep 12	# let the hung-task detector speak
		die "$name: ibv_dereg_mr did not return within 20 s"
	fi
	wait "$ppid" || true
	wait "$tpid" || true
	sed "s/^/    peer: /" "$plog"
	sed "s/^/    target: /" "$tlog"
	secs=$(sed -n 's/^DEREG rc 0 secs \([0-9.]*\)$/\1/p' "$tlog")
	[ -n "$secs" ] || die "$name: ibv_dereg_mr failed: $(grep '^DEREG rc' "$tlog")"
	awk -v s="$secs" 'BEGIN { exit !(s < 5) }' ||
		die "$name: ibv_dereg_mr took $secs s while the peer held the MR"
	wait_for 10 objects_zero "$DEV_B" ||
		die "$name: objects left: $(objects_of "$DEV_B")"
	log "$name: ibv_dereg_mr returned in $secs s while the peer held the MR; all released"
}

dereg_case write 7540 8192 write:stag=@STAG,to=@ADDR,len=2000,partial=116
dereg_case read 7541 1048576 rcvbuf:4096 \
	read-req:len=1048576,src_stag=@STAG,src_to=@ADDR noread
