#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# Device life cycle through "rdma link": 100 add/delete cycles, the error
# cases (unknown netdev, duplicate name, second device on the same netdev),
# the netdev vanishing under a device, rmmod with a device present, and a
# final rmmod.  The harness fails the test on any kernel warning.
#
# VMTEST_RDMA_TYPE=siw runs the same steps against Linux's siw (reference).
. "$(dirname "$0")/../lib.sh"

type=${VMTEST_RDMA_TYPE:-viw}
mod=$type
cycles=${VMTEST_CYCLES:-100}
load_driver "$type"
make_netns_pair
A=${type}_a B=${type}_b

log "$cycles add/delete cycles of $A on $IF_A"
for ((i = 1; i <= cycles; i++)); do
	in_a rdma link add "$A" type "$type" netdev "$IF_A" ||
		die "cycle $i: rdma link add failed"
	ib_dev_exists "$A" || wait_for 5 ib_dev_exists "$A" || die "cycle $i: $A did not appear"
	in_a rdma link delete "$A" || die "cycle $i: rdma link delete failed"
	ib_dev_gone "$A" || wait_for 5 ib_dev_gone "$A" || die "cycle $i: $A still present after delete"
done
log "cycles done"

log "error cases"
expect_fail in_a rdma link add "${type}_x" type "$type" netdev no_such_dev
ib_dev_gone "${type}_x" || die "${type}_x exists after a failed add"
add_link "$NS_A" "$A" "$type" "$IF_A"
# The same name again, on the other netdev (in the other namespace).
expect_fail in_b rdma link add "$A" type "$type" netdev "$IF_B"
# A second device on the same netdev: siw and rxe refuse it too, and two
# devices on one netdev would make the address -> device mapping ambiguous.
expect_fail in_a rdma link add "${type}_y" type "$type" netdev "$IF_A"
ib_dev_gone "${type}_y" || die "${type}_y was created on $IF_A next to $A"
[ "$(rdma link show | grep -c "^link $A/")" = 1 ] || die "$A not listed exactly once"

log "netdev removal under live devices"
add_link "$NS_B" "$B" "$type" "$IF_B"
run rdma link show
# Deleting one end of a veth pair deletes both ends.
run in_a ip link delete "$IF_A"
wait_for 10 ib_dev_gone "$A" || die "$A still present after its netdev was deleted"
wait_for 10 ib_dev_gone "$B" || die "$B still present after its netdev was deleted"
if rdma link show | grep -qE "^link ($A|$B)/"; then
	die "rdma link still lists a device of a deleted netdev"
fi

log "rmmod with a device present"
ip netns delete "$NS_A"
ip netns delete "$NS_B"
make_netns_pair
add_link "$NS_A" "$A" "$type" "$IF_A"
run rmmod "$mod" || die "rmmod $mod with $A present failed"
ib_dev_gone "$A" || die "$A survived rmmod $mod"

log "reload and final rmmod"
load_driver "$type"
add_link "$NS_A" "$A" "$type" "$IF_A"
run in_a rdma link delete "$A"
wait_for 5 ib_dev_gone "$A" || die "$A still present after delete"
run rmmod "$mod" || die "final rmmod $mod failed"
module_loaded "$mod" && die "$mod still loaded after rmmod"
log "link-cycle ok"
