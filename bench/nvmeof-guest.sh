#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The guest side of bench/nvmeof: NVMe over Fabrics on siw, on viw and on
# TCP (nvmet-tcp, nvme-tcp) in one boot, on one veth pair (the looped
# hosts of tests/vm/ulp.sh, both ends in the initial namespace, which
# NVMe/RDMA requires).  One target (nvmet on a memory-backed null_blk)
# serves all three; the RDMA links on va/vb are swapped between siw and
# viw, and the order of the transports rotates from one repetition to the
# next.  Each figure is one line of $VIW_OUT/nvmeof.tsv:
#
#	TRANSPORT TEST REP VALUE UNIT
#
# TEST is randread-4k-qd32 (IOPS) or read-128k-qd16 (MiB/s).  A transport
# the device cannot serve is one line "TRANSPORT unsupported - REASON -":
# viw until it has kernel verbs.  A measurement that fails is logged and
# skipped; the script then fails at the end, after the others ran.
#
# Environment (from bench/nvmeof): BENCH_REPS, BENCH_SECS (fio's runtime
# per figure).
. "$(dirname "$0")/../tests/vm/lib.sh"
. "$VIW_SRC/tests/vm/ulp.sh"

REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECS:-5}
RES=$VIW_OUT/nvmeof.tsv
failures=0

failed() {
	echo "BENCH FAILED: $*" >&2
	failures=$((failures + 1))
}

# record TRANSPORT TEST REP VALUE UNIT
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }

# fio_point TRANSPORT REP DEV TEST RW BS DEPTH: one time-based fio job;
# records IOPS (randread) or MiB/s (read).
fio_point() {
	local t=$1 rep=$2 dev=$3 test=$4 rw=$5 bs=$6 depth=$7 out v
	out=$VIW_OUT/fio-$t-$test-r$rep.json
	if ! timeout -k 5 $((SECS + 60)) fio --name="$test" --filename="$dev" \
		--direct=1 --ioengine=libaio --rw="$rw" --bs="$bs" \
		--iodepth="$depth" --time_based --runtime="$SECS" --size=256M \
		--output-format=json --output="$out" </dev/null; then
		failed "$t $test (rep $rep)"
		return 0
	fi
	if [ "$rw" = randread ]; then
		v=$(fio_json "$out" read_iops) || { failed "$t $test: no figure"; return 0; }
		record "$t" "$test" "$rep" "$v" IOPS
	else
		v=$(fio_json "$out" read_bw) || { failed "$t $test: no figure"; return 0; }
		record "$t" "$test" "$rep" "$(awk -v b="$v" 'BEGIN { printf "%.1f", b / 1048576 }')" MiB/s
	fi
}

# unsupported TRANSPORT: the RDMA device cannot serve kernel ULPs; say so
# once, as a line of its own.
unsupported() {
	grep -q "^$1	unsupported" "$RES" || record "$1" unsupported - "kernel verbs missing" -
	log "$1: not supported yet (kernel verbs missing)"
}

# measure TRANSPORT REP: connect over TRANSPORT (tcp, siw, viw), both
# figures, disconnect.
measure() {
	local t=$1 rep=$2 port=1 trtype=rdma svc=$ULP_PORT_RDMA dev
	if [ "$t" = tcp ]; then
		port=2 trtype=tcp svc=$ULP_PORT_TCP
	else
		use_links "$t"
		kernel_capable "$DEV_B" || { unsupported "$t"; return 0; }
	fi
	nvmet_port_add "$port" "$trtype" "$svc"
	dev=$(nvme_connect "$trtype" "$svc")
	fio_point "$t" "$rep" "$dev" randread-4k-qd32 randread 4k 32
	fio_point "$t" "$rep" "$dev" read-128k-qd16 read 128k 16
	nvme_disconnect
	nvmet_port_del "$port"
	log "$t rep $rep: $(awk -v t="$t" -v r="$rep" '$1 == t && $3 == r { printf "%s %s %s; ", $2, $4, $5 }' "$RES")"
}

need_nvme_tools
trap looped_hosts_down EXIT
load_viw
load_siw
looped_hosts none
nvmet_setup
modprobe nvme-rdma || die "modprobe nvme-rdma failed"
modprobe nvme-tcp || die "modprobe nvme-tcp failed"
: >"$RES"
{
	echo "kernel $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	echo "reps $REPS, fio ${SECS} s a figure, memory-backed null_blk, libaio, direct"
} >"$VIW_OUT/machine.txt"
cat "$VIW_OUT/machine.txt"

order=(tcp siw viw)
for ((rep = 1; rep <= REPS; rep++)); do
	for t in "${order[@]}"; do
		measure "$t" "$rep"
	done
	order=("${order[@]:1}" "${order[0]}")
done
drop_links
nvmet_teardown
log "$(grep -vc unsupported "$RES") figures in $RES, $failures failed"
[ "$failures" = 0 ] || die "$failures measurements failed (BENCH FAILED lines above)"
