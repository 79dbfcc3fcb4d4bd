#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# NVMe over Fabrics over RDMA (issue 14): an nvmet + nvmet-rdma target on
# a memory-backed null_blk, the kernel host (nvme-rdma) on the other end
# of a veth: nvme discover, nvme connect -t rdma, fio writes with crc32c
# verification at 4 KiB and 128 KiB (iodepth 16), nvme disconnect, every
# module unloaded, no I/O error in the kernel log, no RDMA object left.
#
# The device type is VIW_ULP_DEV (viw by default, siw for the reference);
# tests/vm/CMakeLists.txt runs it with siw.  Both ends are in the initial
# namespace, which NVMe/RDMA requires; tests/vm/ulp.sh says why, and how
# the traffic is kept on the veth.
. "$(dirname "$0")/../lib.sh"
. "$VIW_SRC/tests/vm/ulp.sh"

need_nvme_tools
trap looped_hosts_down EXIT
looped_hosts "$ULP_DEV"
need_kernel_capable "$DEV_B"
mark_modules
mark=$(dmesg | wc -l)

nvmet_setup
nvmet_port_add 1 rdma $ULP_PORT_RDMA
modprobe nvme-rdma || die "modprobe nvme-rdma failed"
nvme_discover rdma $ULP_PORT_RDMA
dev=$(nvme_connect rdma $ULP_PORT_RDMA --ctrl-loss-tmo=10)
[ "$(nvme_state)" = live ] || die "controller $(nvme_ctrl) is $(nvme_state), not live"
grep -qx rdma "/sys/class/nvme/$(nvme_ctrl)/transport" || die "the controller's transport is not rdma"

tx0=$(tx_bytes "$IF_A")
fio_verify "$dev" 4k 16M --runtime=60
fio_verify "$dev" 128k 64M --runtime=60
sent=$(($(tx_bytes "$IF_A") - tx0))
# 80 MiB of writes went from the host to the target: over the veth, not lo
[ "$sent" -gt $((80 << 20)) ] || die "only $sent bytes left $IF_A for 80 MiB of writes"
log "$IF_A sent $sent bytes"

nvme_disconnect
nvmet_teardown
check_objects_zero "$DEV_A" "$DEV_B"
unload_new_modules
errs=$(io_errors_since "$mark")
[ -z "$errs" ] || die "I/O errors in the kernel log: $errs"
drop_links
log "NVMe/RDMA over $ULP_DEV: discover, connect, verified I/O, clean teardown"
