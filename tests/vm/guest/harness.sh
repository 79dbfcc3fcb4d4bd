#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 120
#
# Self test of the VM harness with Linux's own rdma_rxe (needs no viw code):
# two namespaces joined by a veth pair, one rxe device on each end, both
# visible to libibverbs, ports active.
. "$(dirname "$0")/../lib.sh"

# Independent of viw's code: libibverbs finds rxe's provider on its own.
unset RDMAV_DRIVERS

make_two_hosts rxe
run rdma link show
out=$(run ibv_devices)
echo "$out"
for d in "$DEV_A" "$DEV_B"; do
	grep -qw "$d" <<<"$out" || die "ibv_devices does not list $d"
done
out=$(run ibv_devinfo -d "$DEV_A")
echo "$out"
grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" || die "$DEV_A port not active"

# No traffic test: in Linux 6.1, rxe's UDP tunnel socket lives in the
# initial network namespace only, so rxe cannot connect across namespaces.
log "harness ok"

# libviw loaded next to devices of other drivers must leave them alone
# (regression: libibverbs walks every provider's match table).
out=$(run env RDMAV_DRIVERS="$VIW_PROVIDER" ibv_devices)
echo "$out"
for d in "$DEV_A" "$DEV_B"; do
	grep -qw "$d" <<<"$out" || die "with libviw loaded, ibv_devices lost $d"
done
log "libviw leaves rxe devices alone"
