# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
#
# Helpers for the kernel-ULP tests (issue 14): NVMe over Fabrics and NFS
# over RDMA between two hosts of the test VM, on siw or viw.  Sourced after
# lib.sh by tests/vm/guest/nvmeof*.sh, nfsrdma.sh and bench/nvmeof-guest.sh.
#
#   VIW_ULP_DEV   the RDMA device type under test: viw (default) or siw
#
# NVMe/RDMA needs both of its ends in the initial network namespace:
# nvmet-rdma and nvme-rdma create their rdma_cm IDs in init_net
# (rdma_create_id(&init_net, ...) in drivers/nvme/{target,host}/rdma.c of
# 6.1), and the RDMA CM resolves a connect request's local address in the
# listener's namespace (iw_conn_req_handler -> rdma_translate_ip), so a
# target in another namespace refuses every host, and a host in another
# namespace resolves its route in init_net anyway.  Two addresses of one
# namespace would normally reach each other through lo, which no link
# fault can cut; looped_hosts makes the traffic cross the veth instead
# (policy routing, below), so that the bytes really go over va <-> vb and
# "the target's link goes down" means what it says.

ULP_DEV=${VIW_ULP_DEV:-viw}
ULP_NQN=nqn.2026-12.io.viw:ulp
ULP_CFG=/sys/kernel/config
ULP_NULLB=ulpnull0
ULP_PORT_RDMA=4420
ULP_PORT_TCP=4421
ULP_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
ULP_HOSTID=${ULP_HOSTNQN##*:}
export ULP_DEV ULP_PORT_RDMA ULP_PORT_TCP

# The routing tables of looped_hosts: LOCAL delivers what arrives on the
# veth, PEER sends what is for the other end out through the veth.
ULP_TABLE_LOCAL=100
ULP_TABLE_PEER=101

# kernel_capable DEV: DEV can serve kernel ULPs.  nvme-rdma and rpcrdma
# need fast registration (IB_DEVICE_MEM_MGT_EXTENSIONS); viw sets it only
# once it has kernel verbs and fast registration (issue 14), and then
# ibv_devinfo -v lists it.
kernel_capable() {
	ibv_devinfo -v -d "$1" 2>/dev/null | grep -q MEM_MGT_EXTENSIONS
}

# need_kernel_capable DEV: fail the test early, with the reason, if DEV
# cannot serve kernel ULPs.
need_kernel_capable() {
	kernel_capable "$1" ||
		die "$1 cannot serve kernel ULPs (no MEM_MGT_EXTENSIONS: kernel verbs missing)"
}

# mac_of IF: the link-layer address of IF (in the current namespace).
mac_of() { cat "/sys/class/net/$1/address"; }

# loop_routes: the routes and neighbours of looped_hosts.  The kernel
# deletes them when va or vb goes down; run again after a link comes back.
loop_routes() {
	ip route replace local "$IP_A" dev "$IF_A" table $ULP_TABLE_LOCAL
	ip route replace local "$IP_B" dev "$IF_B" table $ULP_TABLE_LOCAL
	ip route replace "$IP_B/32" dev "$IF_A" src "$IP_A" table $ULP_TABLE_PEER
	ip route replace "$IP_A/32" dev "$IF_B" src "$IP_B" table $ULP_TABLE_PEER
	ip neigh replace "$IP_B" lladdr "$(mac_of "$IF_B")" dev "$IF_A" nud permanent
	ip neigh replace "$IP_A" lladdr "$(mac_of "$IF_A")" dev "$IF_B" nud permanent
}

# looped_hosts TYPE: the two hosts of an NVMe-oF test, both in the initial
# namespace (see the top of this file): veth va (IP_A, the host) <-> vb
# (IP_B, the target), RDMA links TYPE_a on va and TYPE_b on vb, and
# routing that sends a -> b and b -> a over the veth:
#  - the local table's rule moves from priority 0 to 1000, behind ours, so
#    that the local routes the kernel keeps for IP_A and IP_B (which bind()
#    and the RDMA CM need) no longer short-cut the traffic through lo;
#  - a packet for IP_A or IP_B goes out through the other end's veth
#    (table PEER), and one that arrives on va or vb is delivered (table
#    LOCAL);
#  - permanent neighbours, so that no ARP has to be answered.
# TYPE "none": no RDMA links (NVMe/TCP).  Sets DEV_A and DEV_B.
# looped_hosts_down undoes it all; call it from an EXIT trap.
looped_hosts() {
	local type=$1 i
	[ "$type" = none ] || load_driver "$type"
	load_rdma_core
	ip link add "$IF_A" type veth peer name "$IF_B"
	for i in "$IF_A" "$IF_B"; do
		echo 1 >"/proc/sys/net/ipv6/conf/$i/disable_ipv6"
		echo 0 >"/proc/sys/net/ipv4/conf/$i/rp_filter"
	done
	ip addr add "$IP_A/32" dev "$IF_A"
	ip addr add "$IP_B/32" dev "$IF_B"
	ip link set "$IF_A" up
	ip link set "$IF_B" up
	ip rule add pref 1000 lookup local
	ip rule del pref 0 lookup local
	ip rule add pref 100 iif "$IF_A" lookup $ULP_TABLE_LOCAL
	ip rule add pref 100 iif "$IF_B" lookup $ULP_TABLE_LOCAL
	ip rule add pref 200 to "$IP_A" lookup $ULP_TABLE_PEER
	ip rule add pref 200 to "$IP_B" lookup $ULP_TABLE_PEER
	loop_routes
	wait_for 10 "$BUSYBOX" ping -c1 -W1 "$IP_B" || die "no IPv4 connectivity a -> b over the veth"
	DEV_A='' DEV_B=''
	[ "$type" = none ] || use_links "$type"
	log "looped hosts: ${DEV_A:-no RDMA} on $IF_A ($IP_A), ${DEV_B:-no RDMA} on $IF_B ($IP_B), initial namespace"
}

# use_links TYPE: the RDMA links on va and vb become TYPE_a and TYPE_b
# (replacing the current ones, if any).
use_links() {
	[ -n "${DEV_A:-}" ] && [ "$DEV_A" = "$1_a" ] && return 0
	drop_links
	load_driver "$1"
	run rdma link add "$1_a" type "$1" netdev "$IF_A" || die "rdma link add $1_a failed"
	run rdma link add "$1_b" type "$1" netdev "$IF_B" || die "rdma link add $1_b failed"
	wait_for 10 ib_dev_exists "$1_a" || die "$1_a did not appear"
	wait_for 10 ib_dev_exists "$1_b" || die "$1_b did not appear"
	DEV_A=$1_a DEV_B=$1_b
	export DEV_A DEV_B
}

# drop_links: delete the current RDMA links, if any.
drop_links() {
	local d
	for d in ${DEV_A:-} ${DEV_B:-}; do
		rdma link delete "$d" 2>/dev/null || true
		wait_for 10 ib_dev_gone "$d" || die "$d did not go away"
	done
	DEV_A='' DEV_B=''
}

# looped_hosts_down: undo looped_hosts (idempotent, never fails).
looped_hosts_down() {
	local p
	drop_links 2>/dev/null || true
	ip link delete "$IF_A" 2>/dev/null || true
	for p in 100 100 200 200; do ip rule del pref "$p" 2>/dev/null || true; done
	if ! ip rule show pref 0 | grep -q lookup; then
		ip rule add pref 0 lookup local 2>/dev/null || true
	fi
	ip rule del pref 1000 lookup local 2>/dev/null || true
	ip route flush table $ULP_TABLE_LOCAL 2>/dev/null || true
	ip route flush table $ULP_TABLE_PEER 2>/dev/null || true
}

# tx_bytes IF: bytes sent on IF so far.
tx_bytes() { cat "/sys/class/net/$1/statistics/tx_bytes"; }

# ---- modules -------------------------------------------------------------

# mark_modules: remember the loaded modules; unload_new_modules removes
# every module loaded after this.
mark_modules() { awk '{ print $1 }' /proc/modules | sort >"$VIW_OUT/modules.before"; }

new_modules() {
	awk '{ print $1 }' /proc/modules | sort | comm -13 "$VIW_OUT/modules.before" -
}

# unload_new_modules: rmmod every module loaded since mark_modules, users
# before what they use, for up to 20 s (nfsd and the NVMe modules drop
# their last references asynchronously); fails naming what stayed.
unload_new_modules() {
	local m left tries=0
	while left=$(new_modules) && [ -n "$left" ]; do
		for m in $left; do
			[ "$(cat "/sys/module/$m/refcnt" 2>/dev/null || echo 1)" = 0 ] || continue
			[ -z "$(ls "/sys/module/$m/holders" 2>/dev/null)" ] || continue
			rmmod "$m" 2>/dev/null && echo "+ rmmod $m"
		done
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || die "modules still loaded: $(echo "$left" | tr '\n' ' ')"
		sleep 0.2
	done
}

# ---- RDMA objects ----------------------------------------------------------

# pool_cqs DEV: CQs of the RDMA core's shared CQ pool on DEV (owner
# "[ib_core]").  nvme-rdma takes its I/O queues' CQs from that pool
# (ib_cq_pool_get), and the core keeps them, idle, until the device is
# unregistered (ib_cq_pool_cleanup): they are not a ULP's leftovers.
pool_cqs() {
	rdma resource show cq dev "$1" 2>/dev/null | grep -c 'comm \[ib_core\]' || true
}

# rdma_objects_zero DEV: the RDMA core's resource tracking (which counts
# kernel objects too) shows no PD, QP, cm_id, MR, context or SRQ on DEV,
# and no CQ but the core's pool; for viw its own debugfs counts agree
# (lib.sh objects_zero, with the pool's CQs).
rdma_objects_zero() {
	local line pool
	line=$(rdma resource show "$1" 2>/dev/null) || return 1
	pool=$(pool_cqs "$1")
	echo "$line" | awk -v pool="$pool" '
		{ for (i = 3; i < NF; i += 2) if ($(i + 1) != ($i == "cq" ? pool : 0)) bad = 1 }
		END { exit bad }' || return 1
	case $1 in viw_*) ;; *) return 0 ;; esac
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	awk -v pool="$pool" '$2 != ($1 == "cq" ? pool : 0) { bad = 1 } END { exit bad }' \
		"/sys/kernel/debug/viw/$1/objects"
}

# check_objects_zero DEV...: wait up to 10 s for rdma_objects_zero.
check_objects_zero() {
	local d
	for d in "$@"; do
		wait_for 10 rdma_objects_zero "$d" ||
			die "objects left on $d: $(rdma resource show "$d" 2>&1); $(rdma resource show cq dev "$d" 2>&1)"
		log "objects on $d: $(rdma resource show "$d" | cut -d' ' -f3-) ($(pool_cqs "$d") CQs of the core's pool)"
	done
}

# ---- NVMe over Fabrics: target ---------------------------------------------

nvmet_sub() { echo "$ULP_CFG/nvmet/subsystems/$ULP_NQN"; }

# nvmet_setup: a memory-backed null_blk (configfs, 256 MiB) as namespace 1
# of subsystem ULP_NQN, open to any host; no port yet.
nvmet_setup() {
	local nb=$ULP_CFG/nullb/$ULP_NULLB sub
	mountpoint -q "$ULP_CFG" || mount -t configfs none "$ULP_CFG"
	modprobe null_blk nr_devices=0 || die "modprobe null_blk failed"
	modprobe nvmet || die "modprobe nvmet failed"
	mkdir "$nb"
	echo 1 >"$nb/memory_backed"
	echo 256 >"$nb/size"
	echo 4096 >"$nb/blocksize"
	echo 1 >"$nb/power"
	wait_for 10 test -b "/dev/$ULP_NULLB" || die "/dev/$ULP_NULLB did not appear"
	sub=$(nvmet_sub)
	mkdir "$sub"
	echo 1 >"$sub/attr_allow_any_host"
	mkdir "$sub/namespaces/1"
	echo "/dev/$ULP_NULLB" >"$sub/namespaces/1/device_path"
	echo 1 >"$sub/namespaces/1/enable"
}

# nvmet_port_add ID TRTYPE TRSVCID: port ID (rdma or tcp) on IP_B, with
# the subsystem; the transport module is loaded first.
nvmet_port_add() {
	local port=$ULP_CFG/nvmet/ports/$1
	modprobe "nvmet-$2" || die "modprobe nvmet-$2 failed"
	mkdir "$port"
	echo "$2" >"$port/addr_trtype"
	echo ipv4 >"$port/addr_adrfam"
	echo "$IP_B" >"$port/addr_traddr"
	echo "$3" >"$port/addr_trsvcid"
	ln -s "$(nvmet_sub)" "$port/subsystems/$ULP_NQN" ||
		die "nvmet-$2 cannot listen on $IP_B:$3"
	log "nvmet-$2 listens on $IP_B:$3"
}

nvmet_port_del() {
	local port=$ULP_CFG/nvmet/ports/$1
	[ -d "$port" ] || return 0
	rm -f "$port/subsystems/$ULP_NQN"
	rmdir "$port"
}

# nvmet_teardown: every port, the subsystem and the null_blk.
nvmet_teardown() {
	local p sub nb=$ULP_CFG/nullb/$ULP_NULLB
	for p in "$ULP_CFG"/nvmet/ports/*; do
		[ -d "$p" ] && nvmet_port_del "${p##*/}"
	done
	sub=$(nvmet_sub)
	if [ -d "$sub" ]; then
		echo 0 >"$sub/namespaces/1/enable" 2>/dev/null || true
		rmdir "$sub/namespaces/1" 2>/dev/null || true
		rmdir "$sub" || die "cannot remove the subsystem"
	fi
	if [ -d "$nb" ]; then
		echo 0 >"$nb/power"
		rmdir "$nb"
	fi
}

# ---- NVMe over Fabrics: host -------------------------------------------------

# need_nvme_tools: nvme-cli and fio (scripts/install-deps).
need_nvme_tools() {
	command -v nvme >/dev/null || die "nvme-cli not installed (scripts/install-deps)"
	command -v fio >/dev/null || die "fio not installed (scripts/install-deps)"
}

# nvme_ctrl: the name of the host's controller of ULP_NQN (nvme0, ...).
nvme_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$ULP_NQN" ] && { echo "${c##*/}"; return 0; }
	done
	return 1
}

# nvme_state: the controller's state (live, resetting, connecting, ...),
# "gone" without one.
nvme_state() {
	local c
	c=$(nvme_ctrl) || { echo gone; return 0; }
	cat "/sys/class/nvme/$c/state" 2>/dev/null || echo gone
}

state_is() { [ "$(nvme_state)" = "$1" ]; }
state_not() { [ "$(nvme_state)" != "$1" ]; }

# nvme_blockdev: the namespace's block device (nvme0n1; with native
# multipath the subsystem's node, not the path's hidden nvme0c0n1).  The
# VM has no NVMe hardware: every NVMe block device is the test's.
nvme_blockdev() {
	local b
	for b in /sys/block/nvme*; do
		case ${b##*/} in nvme*c*n* | 'nvme*') continue ;; esac
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}

no_nvme_blockdev() { ! nvme_blockdev >/dev/null; }

# nvme_discover TRTYPE TRSVCID: the target's discovery log must list
# ULP_NQN on IP_B.
nvme_discover() {
	local out=$VIW_OUT/discover-$1.log
	timeout -k 5 60 nvme discover -t "$1" -a "$IP_B" -s "$2" \
		--hostnqn="$ULP_HOSTNQN" --hostid="$ULP_HOSTID" >"$out" 2>&1 ||
		{ cat "$out" >&2; die "nvme discover -t $1 $IP_B:$2 failed"; }
	grep -Eq "subnqn: +$ULP_NQN\$" "$out" ||
		{ cat "$out" >&2; die "the discovery log does not list $ULP_NQN"; }
	grep -Eq "traddr: +$IP_B\$" "$out" || die "the discovery log does not list $IP_B"
	log "nvme discover -t $1: $ULP_NQN at $IP_B:$2"
}

# nvme_connect TRTYPE TRSVCID [OPTION...]: connect the host; waits for the
# namespace's block device and prints its path.
nvme_connect() {
	local t=$1 s=$2 out=$VIW_OUT/connect-$1.log dev
	shift 2
	timeout -k 5 90 nvme connect -t "$t" -a "$IP_B" -s "$s" -n "$ULP_NQN" \
		--hostnqn="$ULP_HOSTNQN" --hostid="$ULP_HOSTID" "$@" >"$out" 2>&1 ||
		{ cat "$out" >&2; die "nvme connect -t $t $IP_B:$s failed"; }
	wait_for 30 nvme_blockdev || die "no block device after nvme connect -t $t"
	dev=$(nvme_blockdev)
	wait_for 10 test -b "$dev" || die "$dev is not a block device"
	log "nvme connect -t $t $*: $(nvme_ctrl) ($(nvme_state)), $dev" >&2
	echo "$dev"
}

# nvme_disconnect: disconnect the host's controllers of ULP_NQN (none is
# fine: a fault may have removed them) and wait until they are gone.
nvme_disconnect() {
	local out
	out=$(timeout -k 5 60 nvme disconnect -n "$ULP_NQN" 2>&1) ||
		die "nvme disconnect failed: $out"
	log "nvme disconnect: $out"
	wait_for 30 no_nvme_blockdev ||
		die "NVMe block devices left after disconnect: $(nvme_blockdev)"
}

# ---- fio ---------------------------------------------------------------------

# fio_json FILE FIELD: a figure from fio's JSON output, summed over jobs:
# read_iops, read_bw (bytes/s), read_bytes, write_bytes, errors.
fio_json() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index("{"):])
jobs = doc["jobs"]
field = sys.argv[2]
if field == "errors":
    v = sum(j["error"] for j in jobs)
elif field.endswith("_iops"):
    v = sum(j[field[:-5]]["iops"] for j in jobs)
elif field.endswith("_bw"):
    v = sum(j[field[:-3]]["bw_bytes"] for j in jobs)
else:
    v = sum(j[field[:-6]]["io_bytes"] for j in jobs)
print("%.1f" % v if isinstance(v, float) else v)
EOF
}

# fio_verify DEV BS SIZE [OPTION...]: random writes of SIZE at BS, queue
# depth 16, then every block read back and checked (crc32c); must pass.
fio_verify() {
	local dev=$1 bs=$2 size=$3 out=$VIW_OUT/fio-verify-$2.json rc=0 w r
	shift 3
	timeout -k 5 120 fio --name="verify-$bs" --filename="$dev" --direct=1 \
		--ioengine=libaio --rw=randwrite --bs="$bs" --iodepth=16 \
		--size="$size" --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--output-format=json --output="$out" "$@" </dev/null || rc=$?
	[ "$rc" = 0 ] || { tail -n 30 "$out" >&2; die "fio verify bs=$bs on $dev failed ($rc)"; }
	w=$(fio_json "$out" write_bytes)
	r=$(fio_json "$out" read_bytes)
	[ "$(fio_json "$out" errors)" = 0 ] || die "fio bs=$bs reported errors"
	if [ "$w" -le 0 ] || [ "$r" -lt "$w" ]; then
		die "fio bs=$bs: wrote $w bytes, read back $r: not every block was verified"
	fi
	log "fio bs=$bs iodepth 16: $w bytes written, read back and verified (crc32c)"
}

# kernel_log_since MARK: the kernel log after line MARK of dmesg.
kernel_log_since() { dmesg | tail -n +"$(($1 + 1))"; }

# io_errors_since MARK: block-layer and NVMe error lines logged after MARK.
io_errors_since() {
	kernel_log_since "$1" | grep -Ei 'I/O error|blk_update_request|critical medium|nvme.*(error|failed|timeout)' || true
}
