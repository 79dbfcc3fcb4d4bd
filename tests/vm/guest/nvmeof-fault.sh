#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# NVMe/RDMA when the target's link goes down during I/O (issue 14, faults):
#  1. a short outage: the host notices it (keep-alive), its controller
#     leaves "live", reconnects once the link is back, and fio's writes,
#     held while it reconnects, complete and verify (crc32c);
#  2. an outage longer than ctrl_loss_tmo: the host gives the controller
#     up, and fio's I/O fails with errors instead of hanging.
# Every wait is bounded, so a hang fails the test instead of the VM.
# Then disconnect, teardown, modules unloaded, no RDMA object left.
# VIW_ULP_DEV and the topology as in nvmeof.sh (tests/vm/ulp.sh).
. "$(dirname "$0")/../lib.sh"
. "$VIW_SRC/tests/vm/ulp.sh"

# Keep-alive 2 s.  Round 1 reconnects every second for up to 30 s; round 2
# tries twice, 2 s apart (max_reconnects = ctrl_loss_tmo / reconnect_delay),
# then gives the controller up.
ROUND1_OPTS=(--keep-alive-tmo=2 --reconnect-delay=1 --ctrl-loss-tmo=30)
ROUND2_OPTS=(--keep-alive-tmo=2 --reconnect-delay=2 --ctrl-loss-tmo=4)

# A reconnect attempt to an unreachable target lasts as long as TCP's SYN
# retries: siw connects with a blocking kernel_connect on the CM's work
# queue, and nvme-rdma waits for the CM's answer without a timeout
# (nvme_rdma_wait_for_cm).  With Linux's default of 6 retries that is
# 127 s an attempt; with 1 it is 3 s, so that round 2 ends in seconds.
syn_retries=$(cat /proc/sys/net/ipv4/tcp_syn_retries)
fault_cleanup() {
	looped_hosts_down
	echo "$syn_retries" >/proc/sys/net/ipv4/tcp_syn_retries
}

need_nvme_tools
trap fault_cleanup EXIT
echo 1 >/proc/sys/net/ipv4/tcp_syn_retries
looped_hosts "$ULP_DEV"
need_kernel_capable "$DEV_B"
mark_modules

nvmet_setup
nvmet_port_add 1 rdma $ULP_PORT_RDMA
modprobe nvme-rdma || die "modprobe nvme-rdma failed"

# fio_start DEV NAME SIZE: a verified random-write job in the background
# (FIO_PID), bounded by timeout; its JSON goes to NAME.json.
fio_start() {
	timeout -k 5 "$FIO_LIMIT" fio --name="$2" --filename="$1" --direct=1 \
		--ioengine=libaio --rw=randwrite --bs=4k --iodepth=16 --size="$3" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --runtime=120 \
		--output-format=json --output="$VIW_OUT/$2.json" </dev/null \
		>"$VIW_OUT/$2.log" 2>&1 &
	FIO_PID=$!
}

# fio_moving: the job has started moving data over the veth.
fio_moving() { [ "$(tx_bytes "$IF_A")" -gt $((TX0 + (2 << 20))) ]; }

# fio_wait: wait for the job (bounded by its timeout); FIO_RC is its exit
# code (124/137: it had to be killed, a hang).
fio_wait() {
	FIO_RC=0
	wait "$FIO_PID" || FIO_RC=$?
}

# loaded_then_down NAME SIZE LIMIT OPTION...: connect with OPTIONs, start
# fio (NAME, SIZE, at most LIMIT s), and once it moves data take the
# target's link down.
loaded_then_down() {
	local name=$1 size=$2 dev
	FIO_LIMIT=$3
	shift 3
	dev=$(nvme_connect rdma $ULP_PORT_RDMA "$@")
	TX0=$(tx_bytes "$IF_A")
	fio_start "$dev" "$name" "$size"
	wait_for 30 fio_moving || die "fio moved no data"
	target_link_down
}

target_link_down() { run ip link set "$IF_B" down; }
target_link_up() {
	run ip link set "$IF_B" up
	loop_routes
}

log "round 1: the target's link down for a short while"
loaded_then_down short-outage 64M 150 "${ROUND1_OPTS[@]}"
t0=$(cut -d' ' -f1 /proc/uptime)
wait_for 30 state_not live ||
	die "the host did not notice the lost link in 30 s (state $(nvme_state))"
log "controller $(nvme_state) after the link went down"
sleep 2
target_link_up
wait_for 60 state_is live ||
	die "the host did not reconnect within 60 s of the link coming back (state $(nvme_state))"
t1=$(cut -d' ' -f1 /proc/uptime)
log "controller live again, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after the link went down"
fio_wait
rc=$FIO_RC
[ "$rc" = 0 ] || { tail -n 20 "$VIW_OUT/short-outage.log" >&2; die "fio across the outage failed ($rc)"; }
[ "$(fio_json "$VIW_OUT/short-outage.json" errors)" = 0 ] || die "fio reported errors across the outage"
log "round 1: fio completed and verified across the outage"
nvme_disconnect

log "round 2: the target's link down for longer than ctrl_loss_tmo"
mark=$(dmesg | wc -l)
loaded_then_down long-outage 256M 90 "${ROUND2_OPTS[@]}"
wait_for 60 state_is gone ||
	die "the host kept its controller 60 s after losing the link (state $(nvme_state))"
log "the host removed its controller"
fio_wait
rc=$FIO_RC
case $rc in
0) die "fio succeeded although the target was unreachable" ;;
124 | 137) die "fio hung on the lost controller (killed, $rc)" ;;
esac
log "round 2: fio failed its I/O cleanly (exit $rc): $(grep -m1 -Eo 'err=[^)]*|Input/output error|No such device' "$VIW_OUT/long-outage.log" || true)"
io_errors_since "$mark" | head -3 | sed 's/^/    kernel: /'
target_link_up
nvme_disconnect

nvmet_teardown
check_objects_zero "$DEV_A" "$DEV_B"
unload_new_modules
drop_links
log "NVMe/RDMA over $ULP_DEV: link faults reconnect or fail cleanly, nothing hangs"
