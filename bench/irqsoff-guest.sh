#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Guest side of bench/irqsoff: IR_REPS runs of viw_qmem deep-flush
# (tests/functional/viw_qmem.c: one doorbell for 8192 receives of 6 SGEs,
# then 16384 WRs flushed by modify_qp(ERR)), each traced.
#
# Debian's kernel has no irqsoff tracer (CONFIG_IRQSOFF_TRACER is not
# set), so the function tracer records every _raw_spin_lock_irqsave and
# _raw_spin_unlock_irqrestore of the test process, and the outermost span
# between the two is the time IRQs stayed off, named by the function that
# took the lock.  Writes irqsoff.tsv: repetition, rank, span in us, that
# function; the five longest spans of each run.
. "$(dirname "$0")/../tests/vm/lib.sh"

bin=$VIW_BUILD/tests/functional/viw_qmem
T=/sys/kernel/tracing
res=$VIW_OUT/irqsoff.tsv
: >"$res"
reps=${IR_REPS:-3}

# spans TRACE: the outermost irqsave..irqrestore spans of viw_qmem in
# TRACE, per CPU, as "US CALLER", longest first.
spans() {
	awk '
	$1 !~ /^viw_qmem-/ { next }
	{
		ts = ""
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^\[[0-9]+\]$/) cpu = $i
			if ($i ~ /^[0-9]+\.[0-9]+:$/) {
				ts = substr($i, 1, length($i) - 1)
				fn = $(i + 1); caller = $(i + 2)
				break
			}
		}
		if (ts == "") next
		if (fn == "_raw_spin_lock_irqsave") {
			if (depth[cpu]++ == 0) { start[cpu] = ts; who[cpu] = caller }
		} else if (fn == "_raw_spin_unlock_irqrestore" && depth[cpu] > 0) {
			if (--depth[cpu] == 0)
				printf "%.0f %s\n", (ts - start[cpu]) * 1e6, who[cpu]
		}
	}' "$1" | sort -rn
}

make_two_hosts viw
mountpoint -q $T || mount -t tracefs nodev $T
echo 0 >$T/tracing_on
echo nop >$T/current_tracer
echo 32768 >$T/buffer_size_kb
echo '_raw_spin_lock_irqsave _raw_spin_unlock_irqrestore' >$T/set_ftrace_filter
echo function >$T/current_tracer

for rep in $(seq 1 "$reps"); do
	echo >$T/trace
	rc=0
	# trace only the test process, from its start
	bash -c 'echo $$ >"$0/set_ftrace_pid" && echo 1 >"$0/tracing_on" &&
		exec "$@"' $T "$bin" -d "$DEV_A" deep-flush \
		>"$VIW_OUT/deep.$rep.log" 2>&1 || rc=$?
	echo 0 >$T/tracing_on
	sed 's/^/    /' "$VIW_OUT/deep.$rep.log"
	[ "$rc" = 0 ] || die "run $rep: viw_qmem deep-flush failed"
	over=$(awk '/overrun/ { n += $NF } END { print n + 0 }' $T/per_cpu/cpu*/stats)
	[ "$over" = 0 ] || log "run $rep: the trace buffer overran ($over events lost)"
	spans $T/trace | sed -n 1,5p | awk -v r="$rep" '{ printf "%s\t%d\t%s\t%s\n", r, NR, $1, $2 }' >>"$res"
	log "run $rep: $(awk -v r="$rep" '$1 == r && $2 == 1 { print $3 " us <-" $4 }' "$res") the longest"
done

echo nop >$T/current_tracer
echo >$T/set_ftrace_filter
echo >$T/set_ftrace_pid
echo 1408 >$T/buffer_size_kb
