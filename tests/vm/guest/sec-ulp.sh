#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# Kernel ULPs against a viw device (issue 8, item 21).  viw has no kernel
# QPs/CQs yet, so every in-tree ULP must refuse it cleanly: no divide
# error (the RDMA core's rdma_rw_mr_factor divides by the device's
# max_fast_reg_page_list_len), the connection attempt refused, and every
# module unloads afterwards.  The VM harness fails the test on any oops or
# warning in the kernel log.
#
# Topology: two veth pairs, each with viw on one end and siw on the other.
#  - nvmet-rdma creates its listener, and nvme-rdma its host connections,
#    in the initial network namespace (rdma_create_id(&init_net) in
#    drivers/nvme/{target,host}/rdma.c).  So viw_u is there, on ua
#    (10.88.0.1), with an nvmet-rdma port on 10.88.0.1:4420.  The remote
#    host is namespace c (siw_c on ub, 10.88.0.2): a connect request with
#    NVMe/RDMA's CM private data, from viw_ulp_probe, since the kernel
#    host cannot run there.  The kernel host (nvme-rdma) runs in the
#    initial namespace, where the route to 10.88.0.1 is local and so
#    resolves to viw_u itself: it must refuse the device.
#  - siw creates its connection's socket in the namespace of the caller,
#    which for the kernel NFS client is a kworker in the initial
#    namespace: so the NFS/RDMA client is there, on siw_i over nb
#    (10.89.0.2), and nfsd runs in namespace s, on viw_s over na
#    (10.89.0.1), with an RDMA listener ("rdma 20049" in its portlist,
#    NFSv4 only so that it needs neither lockd nor rpcbind).  The mount
#    from the initial namespace over siw_i, and a bare connect request to
#    port 20049, must both be refused.
. "$(dirname "$0")/../lib.sh"

probe=$VIW_BUILD/tests/functional/viw_ulp_probe
[ -x "$probe" ] || die "$probe not built"
NS_C=c NS_S=s
IP_U=10.88.0.1 IP_C=10.88.0.2 IP_S=10.89.0.1 IP_I=10.89.0.2
NQN=nqn.2026-12.viw:sec-ulp
CFG=/sys/kernel/config/nvmet
NFSD_FS=/run/sec-ulp-nfsd

in_c() { ip netns exec "$NS_C" "$@"; }
in_s() { ip netns exec "$NS_S" "$@"; }

# link_add NS NAME TYPE NETDEV; NS "-" is the initial namespace.
link_add() {
	local ns=$1 name=$2 type=$3 netdev=$4
	if [ "$ns" = - ]; then
		run rdma link add "$name" type "$type" netdev "$netdev"
	else
		run ip netns exec "$ns" rdma link add "$name" type "$type" netdev "$netdev"
	fi || die "rdma link add $name failed"
	wait_for 10 ib_dev_exists "$name" || die "device $name did not appear"
}

# addr NS IF IP: address and link up (NS "-": the initial namespace).
addr() {
	local x=()
	[ "$1" = - ] || x=(ip netns exec "$1")
	"${x[@]}" ip addr add "$3/24" dev "$2"
	"${x[@]}" ip link set lo up
	"${x[@]}" ip link set "$2" up
}

setup_hosts() {
	load_viw
	load_siw
	ip netns add "$NS_C"
	ip netns add "$NS_S"
	# All four ends are created here and then moved, so their ifindexes
	# differ.  nfsd listens on the wildcard address of every RDMA device,
	# and siw binds each such listener to its netdev's ifindex in nfsd's
	# namespace, as viw does: equal ifindexes would collide (EADDRINUSE),
	# and a failing listen crashes nfsd's error path in Linux 6.1 (NULL
	# pointer in rdma_destroy_id from __svc_rdma_free), which is not what
	# this test is about.
	ip link add ua type veth peer name ub
	ip link add na type veth peer name nb
	ip link set ub netns "$NS_C"
	ip link set na netns "$NS_S"
	addr - ua "$IP_U"
	addr "$NS_C" ub "$IP_C"
	addr "$NS_S" na "$IP_S"
	addr - nb "$IP_I"
	wait_for 10 in_c "$BUSYBOX" ping -c1 -W1 "$IP_U" || die "no connectivity c -> init"
	wait_for 10 "$BUSYBOX" ping -c1 -W1 "$IP_S" || die "no connectivity init -> s"
	link_add - viw_u viw ua
	link_add "$NS_C" siw_c siw ub
	link_add "$NS_S" viw_s viw na
	link_add - siw_i siw nb
}

# probe NAME NS ADDR PORT [HEX]: a connect request from NS ("-": the
# initial one) to ADDR:PORT must be refused.
probe() {
	local out=$VIW_OUT/probe-$1.log rc=0 x=()
	[ "$2" = - ] || x=(ip netns exec "$2")
	log "connect request to $3:$4 ($1)"
	"${x[@]}" timeout 40 "$probe" -c "$3" -p "$4" -t 30 ${5:+-d "$5"} \
		</dev/null >"$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out"
	[ "$rc" = 0 ] || bad "$1: the connect request was not refused cleanly (exit $rc)"
}

# nfsd's fs of namespace s, mounted in our mount namespace with nsenter:
# unmounting it stops that namespace's nfsd, so it must outlive the
# "ip netns exec" commands that write to it (which must run in s, where
# the listeners' sockets are made).
start_nfsd() {
	run modprobe nfsd
	run modprobe rpcrdma
	mkdir -p "$NFSD_FS"
	run nsenter --net="/run/netns/$NS_S" mount -t nfsd nfsd "$NFSD_FS"
	# NFSv4 only: v2 and v3 would need lockd, which needs rpcbind.
	in_s sh -c "echo -2 >$NFSD_FS/versions" 2>/dev/null || true
	in_s sh -c "echo -3 >$NFSD_FS/versions"
	in_s sh -c "echo 'rdma 20049' >$NFSD_FS/portlist"
	in_s sh -c "echo 2 >$NFSD_FS/threads"
	log "nfsd in s: portlist $(tr '\n' ' ' <"$NFSD_FS/portlist")"
	grep -q "rdma 20049" "$NFSD_FS/portlist" || die "nfsd has no RDMA listener"
	in_s ss -Hltn "sport = :20049" | sed 's/^/    listen: /'
}

stop_nfsd() {
	in_s sh -c "echo 0 >$NFSD_FS/threads" || bad "nfsd threads did not stop"
	umount "$NFSD_FS" || bad "umount of nfsd's fs failed"
}

nfs_mount() {
	local mnt=/tmp/sec-ulp-mnt rc=0
	mkdir -p "$mnt"
	run modprobe nfsv4
	log "NFS/RDMA mount of $IP_S (kernel rpcrdma client on siw_i)"
	# mount -i: no mount.nfs helper (nfs-common is not needed); the kernel
	# parses the options itself.
	timeout -k 5 60 mount -i -t nfs4 \
		-o "vers=4.2,proto=rdma,port=20049,addr=$IP_S,soft,timeo=30,retrans=1" \
		"$IP_S:/" "$mnt" </dev/null >"$VIW_OUT/mount.log" 2>&1 || rc=$?
	sed 's/^/    /' "$VIW_OUT/mount.log"
	if [ "$rc" = 0 ]; then
		umount "$mnt" || true
		bad "the NFS/RDMA mount of a server on viw succeeded"
	fi
	log "mount exited $rc"
}

start_nvmet() {
	local sub=$CFG/subsystems/$NQN port=$CFG/ports/1
	run modprobe nvmet-rdma
	mountpoint -q /sys/kernel/config || run mount -t configfs none /sys/kernel/config
	mkdir "$sub"
	echo 1 >"$sub/attr_allow_any_host"
	mkdir "$port"
	echo rdma >"$port/addr_trtype"
	echo ipv4 >"$port/addr_adrfam"
	echo "$IP_U" >"$port/addr_traddr"
	echo 4420 >"$port/addr_trsvcid"
	ln -s "$sub" "$port/subsystems/$NQN" || die "nvmet-rdma cannot listen on $IP_U"
	log "nvmet-rdma listens on $IP_U:4420"
}

stop_nvmet() {
	rm -f "$CFG/ports/1/subsystems/$NQN"
	rmdir "$CFG/ports/1" "$CFG/subsystems/$NQN" || bad "nvmet configfs teardown failed"
}

# The kernel host in the initial namespace: resolves to viw_u, must refuse.
nvme_host() {
	local rc=0 out
	run modprobe nvme-rdma
	log "nvme-rdma host connect to $IP_U:4420 (lands on viw_u)"
	out=$(timeout -k 5 60 sh -c "echo 'transport=rdma,traddr=$IP_U,trsvcid=4420,nqn=$NQN' >/dev/nvme-fabrics" 2>&1) || rc=$?
	echo "    $out (exit $rc)"
	[ "$rc" != 0 ] || bad "nvme-rdma connected over viw"
	ls /sys/class/nvme 2>/dev/null | grep -q . && bad "an NVMe controller appeared: $(ls /sys/class/nvme)"
	true
}

unload() {
	local m
	for m in nvme-rdma nvme-fabrics nvmet-rdma nvmet nfsv4 nfs rpcrdma nfsd; do
		module_loaded "${m//-/_}" || continue
		wait_for 10 modprobe -r "$m" || bad "modprobe -r $m failed: $(modprobe -r "$m" 2>&1)"
	done
}

# Nothing may be left on the viw devices once the ULPs let go.
leftovers() {
	local d
	rdma res show 2>&1 | sed 's/^/    /' || true
	for d in viw_u viw_s; do
		log "objects of $d: $(tr '\n' ' ' </sys/kernel/debug/viw/$d/objects)"
		awk '$2 != 0 { bad = 1 } END { exit bad }' /sys/kernel/debug/viw/$d/objects ||
			bad "objects left on $d after the ULPs were done"
	done
}

trace_on() {
	local t=/sys/kernel/tracing
	mountpoint -q "$t" || mount -t tracefs nodev "$t" 2>/dev/null || return 0
	echo 1 >"$t/events/rpcrdma/enable" 2>/dev/null || true
}

trace_dump() {
	local t=/sys/kernel/tracing
	[ -r "$t/trace" ] || return 0
	# sed reads to the end: head would end the pipe early (SIGPIPE, and
	# pipefail makes that a failure)
	grep -v '^#' "$t/trace" | cut -c1-220 | sed -n '1,60s/^/    trace: /p'
	echo 0 >"$t/events/rpcrdma/enable" 2>/dev/null || true
}

setup_hosts
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
start_nfsd
trace_on
probe nfsd - "$IP_S" 20049
nfs_mount
trace_dump
start_nvmet
# struct nvme_rdma_cm_req: recfmt 0, qid 0 (admin), hrqsize 32, hsqsize 31
probe nvmet "$NS_C" "$IP_U" 4420 "0000000020001f000000$(printf '0%.0s' $(seq 44))"
nvme_host
leftovers
stop_nvmet
stop_nfsd
unload
leftovers
in_c rdma link delete siw_c
rdma link delete siw_i
rdma link delete viw_u
in_s rdma link delete viw_s
ip netns delete "$NS_C"
ip netns delete "$NS_S"
unload_viw

checks_done
log "every ULP refused viw cleanly"
