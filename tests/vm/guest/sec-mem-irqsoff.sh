#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# Long work with IRQs off (issue 8, item 19).  viw_qmem deep-flush
# (tests/functional/viw_qmem.c) rings one doorbell for 8192 receives of 6
# SGEs each and then flushes 16384 WRs with modify_qp(ERR); it checks that
# all of them are flushed, in posting order, before modify_qp returns.
#
# Debian's kernel has no irqsoff tracer (CONFIG_IRQSOFF_TRACER is not
# set), so the IRQs-off time is measured with the function tracer instead:
# it records every _raw_spin_lock_irqsave and _raw_spin_unlock_irqrestore
# of the test process, and the longest outermost span between the two is
# printed with the function that took the lock.  This is a measurement for
# the record, not an assertion: timing under TCG is no pass/fail criterion.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_qmem
make_two_hosts viw
t=/sys/kernel/tracing
mountpoint -q "$t" || mount -t tracefs nodev "$t"

echo 0 >"$t/tracing_on"
echo nop >"$t/current_tracer"
echo 32768 >"$t/buffer_size_kb"
echo '_raw_spin_lock_irqsave _raw_spin_unlock_irqrestore' >"$t/set_ftrace_filter"
echo function >"$t/current_tracer"
echo >"$t/trace"
rc=0
# trace only the test process, from its start
bash -c 'echo $$ >"$0/set_ftrace_pid" && echo 1 >"$0/tracing_on" &&
	exec "$@"' "$t" \
	"$bin" -d "$DEV_A" deep-flush >"$VIW_OUT/deep.log" 2>&1 || rc=$?
echo 0 >"$t/tracing_on"
sed 's/^/    /' "$VIW_OUT/deep.log"
[ "$rc" = 0 ] || die "viw_qmem deep-flush: $(grep -m1 '^FAIL' "$VIW_OUT/deep.log")"

grep -h overrun "$t"/per_cpu/cpu*/stats | sed 's/^/    trace /'
# Outermost irqsave..irqrestore spans per CPU, longest first.
awk '
$1 !~ /^viw_qmem-/ { next }
{
	ts = ""; fn = ""; caller = ""
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^\[[0-9]+\]$/) cpu = $i
		if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1); fn = $(i + 1); caller = $(i + 2); break }
	}
	if (ts == "") next
	if (fn == "_raw_spin_lock_irqsave") {
		if (depth[cpu]++ == 0) { start[cpu] = ts; who[cpu] = caller }
	} else if (fn == "_raw_spin_unlock_irqrestore" && depth[cpu] > 0) {
		if (--depth[cpu] == 0)
			printf "%.0f us %s\n", (ts - start[cpu]) * 1e6, who[cpu]
	}
}' "$t/trace" | sort -rn | sed -n 's/^/    irqs-off span: /; 1,5p'
echo nop >"$t/current_tracer"
echo >"$t/set_ftrace_filter"
echo >"$t/set_ftrace_pid"
echo 1408 >"$t/buffer_size_kb"
log "deep doorbell and flush: all WRs flushed in order"
