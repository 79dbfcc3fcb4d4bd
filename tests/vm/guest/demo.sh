#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# What scripts/demo shows (and vm.demo tests): two viw "hosts" (network
# namespaces a and b on a veth pair), each with its own viw device, seen
# through the standard rdma-core tools, then traffic between them:
# rping -V (rdma_cm, every transfer verified), a perftest bandwidth and
# latency pair (-R: rdma_cm), ibv_rc_pingpong (a connection made by
# modify_qp), and what "rdma statistic" and "rdma resource" say afterwards.
# Each step prints a "== [N/6]" line; a failed step does not stop the
# others, and the summary table at the end gives each step's result and
# figure.  The script fails if any step failed.  Figures are shown, never
# judged: a test asserts behaviour, not timing.
. "$(dirname "$0")/../lib.sh"

[ -n "${RDMAV_DRIVERS:-}" ] || die "provider $VIW_PROVIDER-rdmav34.so not built"

table=$VIW_OUT/demo-summary
: >"$table"
steps=6
step_no=0
failed=0

# figure TEXT: the current step's figure for the summary table.
figure() { printf '%s\n' "$*" >"$VIW_OUT/figure"; }

# step NAME FUNCTION: run FUNCTION in a subshell with lib.sh's error trap,
# and add NAME, its result and figure to the table.  A background job,
# waited for, keeps "set -e" in force inside it (it would be off in a
# subshell tested with "||").
step() {
	local name=$1 rc=0 result=ok
	step_no=$((step_no + 1))
	log "== [$step_no/$steps] $name"
	: >"$VIW_OUT/figure"
	"$2" &
	wait $! || rc=$?
	if [ "$rc" != 0 ]; then
		result=FAILED
		failed=$((failed + 1))
		log "FAILED: $name (exit $rc)"
	fi
	printf '%s\t%s\t%s\n' "$name" "$result" "$(cat "$VIW_OUT/figure")" >>"$table"
}

devices() {
	run rdma link show
	run ibv_devices
	run ibv_devinfo -d "$DEV_A"
	figure "$DEV_A on $IF_A ($IP_A), $DEV_B on $IF_B ($IP_B)"
}

rping_verified() {
	local size=4096 count=20
	rping_pair "$IP_B" "$size" "$count"
	figure "$count x $size B, each verified"
}

# perftest_figure TEST SIZE ITERS COLUMN UNIT: run perf_pair; the figure is
# COLUMN of its result line.
perftest_figure() {
	local out
	out=$(perf_pair "$1" "$2" "$3")
	printf '%s\n' "$out"
	figure "$(tail -n1 <<<"$out" | awk -v c="$4" '{ print $c }') $5 at $2 B"
}

write_bw() {
	perftest_figure ib_write_bw 65536 200 4 "MB/s average"
}

send_lat() {
	perftest_figure ib_send_lat 64 500 5 "us typical"
}

rc_pingpong() {
	local out
	out=$(pingpong_pair ibv_rc_pingpong b a 1 -s 4096 -n 500)
	printf '%s\n' "$out"
	figure "$(awk '/ bytes in / { mb = $(NF - 1) } / iters in / { us = $(NF - 1) }
		END { printf "%s Mbit/s, %s us/iter", mb, us }' <<<"$out") at 4096 B"
}

log "== two hosts: namespaces $NS_A and $NS_B on a veth pair, a viw device in each"
make_two_hosts viw
step "devices: rdma link, ibv_devices, ibv_devinfo" devices
step "rping -V (rdma_cm)" rping_verified
step "ib_write_bw -R (bandwidth)" write_bw
step "ib_send_lat -R (latency)" send_lat
step "ibv_rc_pingpong (modify_qp)" rc_pingpong

# What the RDMA tools say after the traffic.  A device that exports port
# counters (hw_counters in sysfs) must list them; before viw had any
# (issue 13), there is nothing to show, which is not a failure.
after_traffic() {
	local d counts=""
	for d in "$DEV_A" "$DEV_B"; do
		if [ -d "/sys/class/infiniband/$d/ports/1/hw_counters" ]; then
			run rdma statistic show link "$d/1" | tee "$VIW_OUT/stat-$d"
			counts="$counts${counts:+; }$d $(awk '{ for (i = 1; i < NF; i++)
				if ($i == "tx_fpdus" || $i == "rx_fpdus") {
					printf "%s%s %s", sep, $i, $(i + 1); sep = ", "
				} }' "$VIW_OUT/stat-$d")"
		else
			echo "+ rdma statistic show link $d/1: $d exports no port counters"
		fi
	done
	run rdma resource show
	run rdma resource show qp
	figure "${counts:-no port counters in this build}"
}
step "rdma statistic, rdma resource" after_traffic

echo
echo "== summary"
{ printf 'test\tresult\tfigure\n'; cat "$table"; } |
	awk -F'\t' '{ printf "  %-46s %-7s %s\n", $1, $2, $3 }'
[ "$failed" = 0 ] || die "$failed of $steps demo steps failed"
log "demo done: all $steps steps passed"
