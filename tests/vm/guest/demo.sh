#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# What scripts/demo shows: two viw "hosts" (network namespaces a and b on a
# veth pair), each with its own viw device, seen through the standard
# rdma-core tools.
. "$(dirname "$0")/../lib.sh"

[ -n "${RDMAV_DRIVERS:-}" ] || die "provider $VIW_PROVIDER-rdmav34.so not built"
make_two_hosts viw

run rdma link show
run ibv_devices
run ibv_devinfo -d "$DEV_A"
run ibv_devinfo -d "$DEV_B"

# ---- DEMO: TRAFFIC (not yet) -------------------------------------------
# When viw carries traffic, add here, for example:
#   in_b rping -s -a "$IP_B" -C 10 -v &  ;  in_a rping -c -a "$IP_B" -C 10 -v
#   in_b ib_write_bw -R -d "$DEV_B" &    ;  in_a ib_write_bw -R -d "$DEV_A" "$IP_B"
# ------------------------------------------------------------------------
log "demo done"
