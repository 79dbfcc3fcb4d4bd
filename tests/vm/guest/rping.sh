#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# rping with data verification between two viw hosts, at 64 B, 4 KiB and
# 64000 B (rping's largest), over IPv4 and IPv6.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw

rping_pair "$IP_B" 64 20
rping_pair "$IP_B" 4096 20
rping_pair "$IP_B" 64000 10
rping_pair "$IP6_B" 4096 10
