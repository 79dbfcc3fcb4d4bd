#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# NFS over RDMA (issue 14): nfsd with an RDMA listener ("rdma 20049" in its
# portlist) exporting a tmpfs, an NFSv4.2 mount with -o rdma,port=20049 on
# the other host, a file of random data written, the client's caches
# dropped, the file read back and compared (sha256), unmount, every module
# unloaded, no RDMA object left.  VIW_ULP_DEV chooses the device type
# (tests/vm/ulp.sh).
#
# Topology: the server in namespace b (vb), the client in the initial
# namespace (va).  nfsd is per network namespace: its RDMA listener is
# created in the namespace of the process that writes the portlist
# (svc_rdma_create uses the serv's net), and connect requests are resolved
# there, so the server can live in b.  The client cannot: the kernel NFS
# client connects from a kworker of the initial namespace, and siw makes
# its connection's TCP socket in the namespace of the caller
# (siw_connect's sock_create), so a client in b would have its RPC
# transport in b but its socket in init_net.  va and vb are made in the
# initial namespace and vb then moved, so their ifindexes differ: nfsd's
# listener is a wildcard, one per RDMA device, and siw binds each to its
# netdev's ifindex in nfsd's namespace, where two equal ones would
# collide.
#
# No rpcbind and no lockd: NFSv4 only.  rpc.mountd answers nfsd's export
# upcalls; it and exportfs keep their state in /var/lib/nfs, which is
# read-only in the VM, so a tmpfs goes over it for the test.
. "$(dirname "$0")/../lib.sh"
. "$VIW_SRC/tests/vm/ulp.sh"

EXPORT=/run/nfsrdma-export
MNT=/run/nfsrdma-mnt
NFSD_FS=/proc/fs/nfsd
SIZE_MB=32

for t in exportfs rpc.mountd; do
	command -v "$t" >/dev/null || die "$t not installed (nfs-kernel-server, scripts/install-deps)"
done

cleanup() {
	umount -f "$MNT" 2>/dev/null || true
	[ -z "${MOUNTD_PID:-}" ] || kill "$MOUNTD_PID" 2>/dev/null || true
	mountpoint -q "$NFSD_FS" && {
		in_b sh -c "echo 0 >$NFSD_FS/threads" 2>/dev/null || true
		umount "$NFSD_FS" || true
	}
	mountpoint -q /var/lib/nfs && umount /var/lib/nfs
	mountpoint -q "$EXPORT" && umount "$EXPORT"
	for d in ${DEV_A:-} ${DEV_B:-}; do rdma link delete "$d" 2>/dev/null || true; done
	ip link delete "$IF_A" 2>/dev/null || true
	ip netns delete "$NS_B" 2>/dev/null || true
}
trap cleanup EXIT

hosts() {
	load_driver "$ULP_DEV"
	ip netns add "$NS_B"
	ip link add "$IF_A" type veth peer name "$IF_B"
	ip link set "$IF_B" netns "$NS_B"
	ip addr add "$IP_A/24" dev "$IF_A"
	ip link set "$IF_A" up
	in_b ip link set lo up
	in_b ip addr add "$IP_B/24" dev "$IF_B"
	in_b ip link set "$IF_B" up
	wait_for 10 "$BUSYBOX" ping -c1 -W1 "$IP_B" || die "no IPv4 connectivity to $IP_B"
	DEV_A=${ULP_DEV}_a DEV_B=${ULP_DEV}_b
	add_link_init "$DEV_A" "$IF_A"
	add_link "$NS_B" "$DEV_B" "$ULP_DEV" "$IF_B"
	log "client $DEV_A on $IF_A ($IP_A, initial namespace), server $DEV_B on $IF_B ($IP_B, namespace $NS_B)"
}

add_link_init() {
	run rdma link add "$1" type "$ULP_DEV" netdev "$2" || die "rdma link add $1 failed"
	wait_for 10 ib_dev_exists "$1" || die "device $1 did not appear"
}

# nfsd's fs of namespace b at its usual place in our mount namespace
# (mounted with nsenter, so the superblock is b's); exportfs and
# rpc.mountd, run in b with "ip netns exec", find it there.
start_server() {
	mkdir -p "$EXPORT" "$MNT"
	mount -t tmpfs -o size=$((SIZE_MB * 2))m nfsrdma "$EXPORT"
	mount -t tmpfs nfsstate /var/lib/nfs
	mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/rpc_pipefs
	: >/var/lib/nfs/etab
	run modprobe nfsd
	run modprobe rpcrdma
	run nsenter --net="/run/netns/$NS_B" mount -t nfsd nfsd "$NFSD_FS"
	# ip execs rpc.mountd, so $! is mountd itself (not a subshell of
	# in_b): killing it must end it, or its mount namespace, a copy of
	# ours, would keep nfsd's fs mounted and the module pinned
	ip netns exec "$NS_B" rpc.mountd -F -N 2 -N 3 --no-udp </dev/null \
		>"$VIW_OUT/mountd.log" 2>&1 &
	MOUNTD_PID=$!
	run in_b exportfs -i -o rw,fsid=0,no_subtree_check,no_root_squash,insecure \
		"$IP_A:$EXPORT"
	# NFSv4 only (v2 and v3 would need rpcbind and lockd); a 10 s grace
	# period instead of 90 s, so that the client's first OPEN waits less
	in_b sh -c "echo -2 >$NFSD_FS/versions" 2>/dev/null || true
	in_b sh -c "echo -3 >$NFSD_FS/versions"
	in_b sh -c "echo 10 >$NFSD_FS/nfsv4leasetime"
	in_b sh -c "echo 10 >$NFSD_FS/nfsv4gracetime"
	in_b sh -c "echo 'rdma 20049' >$NFSD_FS/portlist"
	in_b sh -c "echo 4 >$NFSD_FS/threads"
	log "nfsd in $NS_B: portlist $(tr '\n' ' ' <"$NFSD_FS/portlist")"
	grep -qx "rdma 20049" "$NFSD_FS/portlist" || die "nfsd has no RDMA listener"
	kill -0 "$MOUNTD_PID" || { cat "$VIW_OUT/mountd.log" >&2; die "rpc.mountd exited"; }
}

stop_server() {
	in_b sh -c "echo 0 >$NFSD_FS/threads"
	in_b exportfs -ua
	kill "$MOUNTD_PID"
	wait "$MOUNTD_PID" || true
	MOUNTD_PID=
	umount "$NFSD_FS"
	umount /var/lib/nfs
	umount "$EXPORT"
}

# The client's mount: mount -i, so that the kernel parses the options
# itself (no mount.nfs helper, no statd); soft with a bounded timeout, so
# that a broken transport fails the test instead of hanging it.
nfs_mount() {
	run modprobe nfsv4
	timeout -k 5 90 mount -i -t nfs4 \
		-o "rdma,port=20049,vers=4.2,addr=$IP_B,clientaddr=$IP_A,soft,timeo=100,retrans=2" \
		"$IP_B:/" "$MNT" </dev/null >"$VIW_OUT/mount.log" 2>&1 ||
		{ cat "$VIW_OUT/mount.log" >&2; die "the NFS/RDMA mount of $IP_B failed"; }
	grep " $MNT " /proc/mounts | sed 's/^/    /'
	grep " $MNT " /proc/mounts | grep -q "proto=rdma" || die "the mount is not over RDMA"
}

hosts
need_kernel_capable "$DEV_A"
mark_modules
start_server
nfs_mount

head -c $((SIZE_MB << 20)) /dev/urandom >/tmp/nfsrdma-src
want=$(sha256sum </tmp/nfsrdma-src)
tx0=$(tx_bytes "$IF_A")
timeout -k 5 120 cp /tmp/nfsrdma-src "$MNT/data" || die "writing the file over NFS/RDMA failed"
timeout -k 5 60 sync -f "$MNT/data" || die "sync over NFS/RDMA failed"
sent=$(($(tx_bytes "$IF_A") - tx0))
log "wrote $SIZE_MB MiB over NFS/RDMA ($IF_A sent $sent bytes)"
[ "$sent" -gt $((SIZE_MB << 20)) ] || die "only $sent bytes left $IF_A for $SIZE_MB MiB"
[ "$(sha256sum <"$EXPORT/data")" = "$want" ] || die "the server's copy differs from what was written"
echo 3 >/proc/sys/vm/drop_caches
got=$(timeout -k 5 120 sha256sum <"$MNT/data") || die "reading the file back over NFS/RDMA failed"
[ "$got" = "$want" ] || die "the file read back over NFS/RDMA differs: $got, want $want"
log "read back after dropping caches: sha256 matches"

timeout -k 5 60 umount "$MNT" || die "umount failed"
stop_server
check_objects_zero "$DEV_A" "$DEV_B"
unload_new_modules
log "NFS/RDMA over $ULP_DEV: mount, verified write and read back, clean teardown"
