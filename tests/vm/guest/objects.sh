#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 180
#
# Verbs object life cycles on a viw device, checked by the functional test
# binary $VIW_BUILD/tests/functional/viw_objects (exit 0 = all checks passed).
# Then the module reference a user context holds (issues 12 and 14):
#   - while ibv_rc_pingpong's server waits for its client, with one context
#     open on DEV_A, viw has exactly one reference and rmmod is refused
#     ("in use"); the client then connects and the pingpong completes;
#   - a process that holds nothing but an open context (pyverbs) keeps
#     viw loaded the same way; "rdma link delete" still takes the device
#     from it (disassociation), the reference goes with the context, and
#     rmmod then succeeds while the process still runs; the process closes
#     its dead context and exits cleanly.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_objects
[ -x "$bin" ] || die "$bin not built"
[ -n "${RDMAV_DRIVERS:-}" ] || die "provider $VIW_PROVIDER-rdmav34.so not built"
make_two_hosts viw
run in_a "$bin" "$DEV_A"
log "objects ok"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# obj_count DEV NAME: one of DEV's object counts (debugfs viw/DEV/objects).
obj_count() { awk -v n="$2" '$1 == n { print $2 }' "/sys/kernel/debug/viw/$1/objects"; }

viw_refs_are 0 || die "viw holds $(viw_refs) references with no user left"

log "rmmod while ibv_rc_pingpong's server waits for its client"
ip netns exec "$NS_A" timeout 60 ibv_rc_pingpong -d "$DEV_A" -g 1 -n 100 \
	</dev/null >"$VIW_OUT/pp.server" 2>&1 &
pp=$!
wait_listen "$NS_A" 18515
expect_rmmod_in_use
viw_refs_are 1 || die "one context open, $(viw_refs) module references"
ib_dev_exists "$DEV_A" || die "$DEV_A went with the refused rmmod"
run in_b timeout 60 ibv_rc_pingpong -d "$DEV_B" -g 1 -n 100 "$IP_A" </dev/null ||
	die "ibv_rc_pingpong's client failed after the refused rmmod"
wait "$pp" || die "ibv_rc_pingpong's server failed: $(tail -3 "$VIW_OUT/pp.server")"
wait_for 10 viw_refs_are 0 || die "pingpong done, $(viw_refs) module references left"
objects_zero "$DEV_A" && objects_zero "$DEV_B" ||
	die "objects left: $DEV_A: $(objects_of "$DEV_A"); $DEV_B: $(objects_of "$DEV_B")"

# Opens DEV (argv[1]), says OPEN, waits up to 120 s for SIGTERM, closes the
# context, says CLOSED.
hold_context='
import signal, sys
from pyverbs.device import Context
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
ctx = Context(name=sys.argv[1])
print("OPEN", flush=True)
if signal.sigtimedwait({signal.SIGTERM}, 120) is None:
    sys.exit("no SIGTERM within 120 s")
ctx.close()
print("CLOSED", flush=True)
'
log "a process that holds only a context: rmmod, rdma link delete, rmmod"
ip netns exec "$NS_A" python3 -c "$hold_context" "$DEV_A" </dev/null >"$VIW_OUT/holder" 2>&1 &
holder=$!
wait_for 60 grep -q '^OPEN' "$VIW_OUT/holder" || die "the context holder: $(tail -3 "$VIW_OUT/holder")"
[ "$(obj_count "$DEV_A" ucontext)" = 1 ] && [ "$(obj_count "$DEV_A" pd)" = 0 ] ||
	die "the holder should have one context and nothing else: $(objects_of "$DEV_A")"
expect_rmmod_in_use
viw_refs_are 1 || die "one context open, $(viw_refs) module references"
run timeout 30 rdma link delete "$DEV_A" || die "rdma link delete $DEV_A failed or hung while in use"
ib_dev_gone "$DEV_A" || die "$DEV_A still there after rdma link delete"
wait_for 10 viw_refs_are 0 || die "$DEV_A deleted, $(viw_refs) module references left"
kill -0 "$holder" 2>/dev/null || die "the holder died with its device: $(tail -3 "$VIW_OUT/holder")"
run timeout 30 rmmod viw || die "rmmod viw failed after rdma link delete"
! module_loaded viw || die "viw still loaded after rmmod"
ib_dev_gone "$DEV_B" || die "$DEV_B survived rmmod"
kill -TERM "$holder"
rc=0
ended_within 20 "$holder" || die "the holder hangs closing its dead context"
wait "$holder" || rc=$?
[ "$rc" = 0 ] && grep -q '^CLOSED' "$VIW_OUT/holder" ||
	die "the holder failed to close its dead context (exit $rc): $(tail -3 "$VIW_OUT/holder")"
log "module references ok: refused while in use, released by rdma link delete"
