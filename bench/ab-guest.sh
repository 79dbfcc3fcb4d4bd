#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Guest side of bench/ab: AB_REPS repetitions; in each, viw.ko AB_KO_A and
# AB_KO_B in turn (A first in odd repetitions, B first in even ones), each
# loaded afresh on the same veth pair, run every test of AB_TESTS
# (TEST:SIZE ...) with perftest -R.  Writes ab.tsv: repetition, module (a
# or b), test, size, MiB/s or, for a latency test, the typical latency in
# us (empty if the run failed), and the TCP segments the sender
# (namespace a) retransmitted during the run.
. "$(dirname "$0")/../tests/vm/lib.sh"

res=$VIW_OUT/ab.tsv
: >"$res"

# retransmitted: TcpRetransSegs of namespace a, absolute.
retransmitted() {
	in_a nstat -az TcpRetransSegs | awk '$1 == "TcpRetransSegs" { print $2 }'
}

# iters TEST SIZE: for a bandwidth test, iterations that move about
# 128 MiB, between 500 and 5000; for a latency test, 5000.
iters() {
	local n
	case $1 in *_lat) echo 5000; return ;; esac
	n=$((134217728 / $2))
	[ "$n" -lt 500 ] && n=500
	[ "$n" -gt 5000 ] && n=5000
	echo "$n"
}

# measure REP MODULE: load module MODULE (a or b), run every test, unload.
measure() {
	local rep=$1 mod=$2 ko t test size before after line col
	[ "$mod" = a ] && ko=$AB_KO_A || ko=$AB_KO_B
	VIW_KO=$ko make_two_hosts viw
	for t in $AB_TESTS; do
		test=${t%%:*} size=${t##*:}
		before=$(retransmitted)
		line=$(PERF_TAG=-$mod-r$rep perf_pair "$test" "$size" "$(iters "$test" "$size")" | tail -n1) ||
			line=
		after=$(retransmitted)
		# bandwidth: BW average (MiB/s); latency: t_typical (us)
		case $test in *_lat) col=5 ;; *) col=4 ;; esac
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$mod" "$test" "$size" \
			"$(echo "$line" | awk -v c=$col '{ print $c }')" $((after - before)) | tee -a "$res"
	done
	cleanup_hosts
	wait_for 10 rmmod viw || die "rmmod viw failed"
}

for rep in $(seq 1 "$AB_REPS"); do
	if [ $((rep % 2)) = 1 ]; then
		measure "$rep" a
		measure "$rep" b
	else
		measure "$rep" b
		measure "$rep" a
	fi
done
log "$(wc -l <"$res") measurements in $res"
