#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Guest side of bench/postsplit: PS_REPS repetitions; in each, siw, viw
# (the build's) and, with PS_KO_BASE, viw of an earlier commit, in an
# order that turns round from one repetition to the next.  Each runs
# 64-B ib_write_lat and ib_send_lat (perftest -R, PS_ITERS iterations)
# with events on that cut each post's write() in parts
# (bench/postsplit.py).  The same events for every driver: its post_send
# and its data_ready callback, TCP's send and receive, the veth transmit.
# Writes split.tsv: repetition, module, test, perftest's typical latency,
# posts measured, then the mean of the middle half of the posts for
# write()'s total and for each part.
. "$(dirname "$0")/../tests/vm/lib.sh"

T=/sys/kernel/tracing
res=$VIW_OUT/split.tsv
: >"$res"

# The probes every driver shares, switched on once.  The function_graph
# tracer, which patches every kernel function, once stalled a TCG guest;
# these few probes, a driver's four switched on and off around its runs,
# have not.
trace_setup() {
	mountpoint -q $T || mount -t tracefs none $T
	echo 65536 >$T/buffer_size_kb
	echo >$T/kprobe_events
	cat >>$T/kprobe_events <<-EOP || die "cannot add the TCP kprobes"
	p:SE tcp_sendmsg
	r:SR tcp_sendmsg
	p:RE tcp_v4_rcv
	r:RR tcp_v4_rcv
	EOP
	for e in kprobes/SE kprobes/SR kprobes/RE kprobes/RR \
		 syscalls/sys_enter_write syscalls/sys_exit_write \
		 net/net_dev_start_xmit; do
		echo 'comm ~ "ib_*"' >$T/events/$e/filter || die "filter $e"
		echo 1 >$T/events/$e/enable || die "enable $e"
	done
}

# driver_probes TYPE: PS/PR on TYPE's post_send, DE/DR on its data_ready.
driver_probes() {
	local post=$1:$1_post_send rx
	[ "$1" = viw ] && rx=viw:viw_rx_data_ready || rx=siw:siw_qp_llp_data_ready
	printf 'p:PS %s\nr:PR %s\np:DE %s\nr:DR %s\n' "$post" "$post" "$rx" "$rx" \
		>>$T/kprobe_events || die "cannot add $1's kprobes"
	for e in PS PR DE DR; do
		echo 'comm ~ "ib_*"' >$T/events/kprobes/$e/filter
		echo 1 >$T/events/kprobes/$e/enable || die "enable $e"
	done
}

driver_probes_off() {
	local e
	for e in PS PR DE DR; do
		echo 0 >$T/events/kprobes/$e/enable
		echo "-:$e" >>$T/kprobe_events
	done
}

# measure REP MODULE: MODULE is siw, viw or base (viw of PS_KO_BASE).
measure() {
	local rep=$1 mod=$2 type t line parts
	bench_link_pair "$mod" "${PS_KO_BASE:-}"
	type=${DEV_A%_a}
	driver_probes "$type"
	for t in ib_write_lat ib_send_lat; do
		echo >$T/trace
		line=$(PERF_TAG=-$mod-r$rep perf_pair "$t" 64 "$PS_ITERS" | tail -n1)
		cp $T/trace "$VIW_OUT/trace"
		parts=$(python3 "$(dirname "$0")/postsplit.py" parts "$VIW_OUT/trace")
		[ "$rep" = 1 ] && mv "$VIW_OUT/trace" "$VIW_OUT/$mod-$t.trace"
		printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$mod" "$t" \
			"$(echo "$line" | awk '{ print $5 }')" "$parts" |
			tr ' ' '\t' | tee -a "$res"
	done
	rm -f "$VIW_OUT/trace"
	driver_probes_off
	delete_link_pair
}

load_siw
load_viw
make_netns_pair --distinct-ifindex
trace_setup
mods="siw viw${PS_KO_BASE:+ base}"
for rep in $(seq 1 "$PS_REPS"); do
	order=$mods
	[ $((rep % 2)) = 0 ] && order=$(echo "$mods" | tr ' ' '\n' | tac | tr '\n' ' ')
	for mod in $order; do
		measure "$rep" "$mod"
	done
done
log "$(wc -l <"$res") measurements in $res"
