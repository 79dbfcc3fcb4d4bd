#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# Kernel verbs smoke test (issue 14): the kernel's own NVMe over Fabrics
# target and host run over viw's kernel QPs, CQs and fast registration.
# nvmet + nvmet-rdma export a memory-backed null_blk; the kernel host
# (nvme-rdma, through /dev/nvme-fabrics: nvme-cli is not needed) connects
# with a poll queue too (its CQ is IB_POLL_DIRECT; the others are
# nvme-rdma's IB_POLL_SOFTIRQ and nvmet-rdma's IB_POLL_WORKQUEUE), and
# data written with O_DIRECT reads back the same, the controller is
# deleted, every module unloads, and viw's object counts are back to 0.
#
# Topology: nvmet-rdma listens, and nvme-rdma resolves its routes, in the
# initial network namespace only (rdma_create_id(&init_net) in
# drivers/nvme/{target,host}/rdma.c), so both run there.  The target's
# address is on ua, viw_u's netdev; the host's route to a local address
# resolves to viw_u as well: host and target queues are kernel QPs of the
# one device, connected through iw_cm and viw's CM over loopback TCP.
# The polished NVMe-oF and NFS/RDMA tests between two hosts are elsewhere;
# this one shows that the kernel verbs carry a real ULP.
. "$(dirname "$0")/../lib.sh"

IP_U=10.90.0.1
NQN=nqn.2026-12.viw:kverbs-smoke
CFG=/sys/kernel/config/nvmet

setup() {
	make_init_host "$IP_U"
}

start_target() {
	local sub=$CFG/subsystems/$NQN port=$CFG/ports/1
	run modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || die "null_blk did not load"
	run modprobe nvmet-rdma || die "nvmet-rdma did not load"
	mountpoint -q /sys/kernel/config || run mount -t configfs none /sys/kernel/config
	mkdir "$sub" || die "nvmet subsystem"
	echo 1 >"$sub/attr_allow_any_host"
	mkdir "$sub/namespaces/1"
	echo /dev/nullb0 >"$sub/namespaces/1/device_path"
	echo 1 >"$sub/namespaces/1/enable" || die "namespace enable failed"
	nvmet_rdma_port "$port" "$sub" "$IP_U"
	log "nvmet-rdma listens on $IP_U:4420 (null_blk namespace)"
}

# The block device of the fabrics namespace, once it is live (the only
# NVMe controller in the guest; with native multipath its path device
# nvmeXcYnZ is hidden and nvmeXnZ is the disk).
nvme_disk() {
	ls /sys/block | grep -m1 -E '^nvme[0-9]+n[0-9]+$'
}

connect_host() {
	local out rc=0
	run modprobe nvme-rdma || die "nvme-rdma did not load"
	log "nvme-rdma connect to $IP_U:4420"
	out=$(timeout -k 5 90 sh -c "echo 'transport=rdma,traddr=$IP_U,trsvcid=4420,nqn=$NQN,nr_io_queues=2,nr_poll_queues=1' >/dev/nvme-fabrics" 2>&1) || rc=$?
	echo "    ${out:-(no output)} (exit $rc)"
	[ "$rc" = 0 ] || die "nvme-rdma could not connect over viw"
	wait_for 30 nvme_disk || die "no namespace appeared"
	DISK=/dev/$(nvme_disk)
	wait_for 10 test -b "$DISK" || die "$DISK is not a block device"
	log "connected: $DISK ($(cat /sys/block/${DISK#/dev/}/size) sectors)"
	dmesg | grep -E 'default/read/poll queues' | sed 's/^/    /'
	dmesg | grep -qE 'mapped [0-9]+/[0-9]+/[1-9][0-9]* default/read/poll' ||
		bad "no poll queue (IB_POLL_DIRECT CQ) was created"
	rdma res show qp 2>&1 | sed 's/^/    /' | head -20
}

# Write random data with O_DIRECT in 4 KiB and 128 KiB requests, read it
# back with O_DIRECT, compare.
io_check() {
	local bs=$1 count=$2 src=/tmp/kverbs-src dst=/tmp/kverbs-dst
	head -c $((bs * count)) /dev/urandom >"$src"
	dd if="$src" of="$DISK" bs="$bs" count="$count" oflag=direct conv=fsync status=none ||
		die "write of $count x $bs bytes failed"
	dd if="$DISK" of="$dst" bs="$bs" count="$count" iflag=direct status=none ||
		die "read of $count x $bs bytes failed"
	cmp -s "$src" "$dst" || die "data read back differs ($count x $bs bytes)"
	log "O_DIRECT $count x $bs bytes: written and read back identical"
	rm -f "$src" "$dst"
}

disconnect_host() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] || continue
		echo 1 >"$c/delete_controller" || bad "delete_controller of $c failed"
	done
	wait_for 30 sh -c '! ls /sys/class/nvme/ 2>/dev/null | grep -q .' ||
		bad "controllers left: $(ls /sys/class/nvme)"
	log "controller deleted"
}

stop_target() {
	local sub=$CFG/subsystems/$NQN
	rm -f "$CFG/ports/1/subsystems/$NQN"
	echo 0 >"$sub/namespaces/1/enable"
	rmdir "$sub/namespaces/1" "$CFG/ports/1" "$sub" || bad "nvmet configfs teardown failed"
}

unload_ulps() {
	local m
	for m in nvme-rdma nvme-fabrics nvmet-rdma nvmet null_blk; do
		module_loaded "${m//-/_}" || continue
		wait_for 20 modprobe -r "$m" || bad "modprobe -r $m failed: $(modprobe -r "$m" 2>&1)"
	done
}

setup
start_target
connect_host
io_check 4096 1024
io_check 131072 64
disconnect_host
stop_target
unload_ulps
# Everything but CQs: the RDMA core's CQ pool (ib_cq_pool_get, which
# nvmet-rdma uses) keeps its CQs until the device is unregistered.
no_objects_but_cqs() {
	awk '$1 != "cq" && $2 != 0 { bad = 1 } END { exit bad }' \
		/sys/kernel/debug/viw/viw_u/objects
}
log "objects of viw_u: $(objects_of viw_u)"
wait_for 10 no_objects_but_cqs || bad "objects left on viw_u: $(objects_of viw_u)"
run rdma link delete viw_u
ip link delete ua
unload_viw
checks_done
log "NVMe over Fabrics ran over viw's kernel verbs"
