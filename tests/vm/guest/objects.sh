#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# Verbs object life cycles on a viw device, checked by the functional test
# binary $VIW_BUILD/tests/functional/viw_objects (exit 0 = all checks passed).
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_objects
[ -x "$bin" ] || die "$bin not built"
[ -n "${RDMAV_DRIVERS:-}" ] || die "provider $VIW_PROVIDER-rdmav34.so not built"
make_two_hosts viw
run in_a "$bin" "$DEV_A"
log "objects ok"
