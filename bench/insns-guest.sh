#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Guest side of bench/insns, in a VM with QEMU's tbcount plugin: for siw,
# viw (the build's) and, with IN_KO_BASE, viw of an earlier commit, run
# each of IN_TESTS (TEST:SIZE, perftest -R; 64-B ib_write_lat and
# ib_send_lat by default) at IN_ITERS iterations and at a sixth of that,
# and have the plugin write the blocks each run ran (bench/tbcount.c).
# The two runs' difference is IN_ITERS * 5/6 iterations' worth, with
# perftest's set-up and tear-down cancelled out.  Each driver's
# /proc/kallsyms is kept with its counts, as its module lies elsewhere
# each time it is loaded.  Writes, under the log directory:
# MODULE-TEST-SIZE-N.tbs and MODULE.kallsyms.
. "$(dirname "$0")/../tests/vm/lib.sh"

logdir=$(dirname "$VIW_OUT")

# counts NAME: the blocks run since the last request, into LOGDIR/NAME.tbs.
counts() {
	local _
	echo "$1" >"$logdir/tbcount.req"
	mv "$logdir/tbcount.req" "$logdir/tbcount.ctl"
	for _ in $(seq 300); do
		[ -e "$logdir/$1.done" ] && return 0
		sleep 0.1
	done
	die "the tbcount plugin did not answer $1 (is it loaded?)"
}

# counted_run MODULE TEST SIZE N: one run whose counts hold it alone.  A
# run that perf_pair had to retry (perftest's listener race, siw's accept
# race) is counted again from the start; one whose perftest only failed
# to calibrate its clock ran its WRs (PERF_CLOCK_OK).
counted_run() {
	local mod=$1 t=$2 size=$3 n=$4 log try
	log=$VIW_OUT/$t-$mod-$n-$size
	for try in 1 2 3; do
		rm -f "$log".*
		counts "before-$mod-$t-$size-$n-$try"
		PERF_CLOCK_OK=1 PERF_TAG=-$mod-$n perf_pair "$t" "$size" "$n" | tail -n1
		counts "$mod-$t-$size-$n"
		[ ! -e "$log.client.1" ] && return 0
		echo "NOTE: $t $size $mod $n was retried; counting it again"
	done
	die "$t $size $mod $n: no run without a retry"
}

# measure MODULE: MODULE is siw, viw or base (viw of IN_KO_BASE).
measure() {
	local mod=$1 test n
	bench_link_pair "$mod" "${IN_KO_BASE:-}"
	cat /proc/kallsyms >"$logdir/$mod.kallsyms"
	for test in ${IN_TESTS:-ib_write_lat:64 ib_send_lat:64}; do
		for n in $((IN_ITERS / 6)) "$IN_ITERS"; do
			counted_run "$mod" "${test%:*}" "${test#*:}" "$n"
		done
	done
	delete_link_pair
}

load_siw
load_viw
make_netns_pair --distinct-ifindex
for mod in siw viw${IN_KO_BASE:+ base}; do
	measure "$mod"
done
rm -f "$logdir"/before-*.tbs "$logdir"/*.done
log "counts in $logdir"
