#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 420
#
# Issue 12, lane 3: faults under load.  Each round builds the two hosts,
# starts the mixed load of tests/vm/traffic.sh (viw_verify on
# VERIFY_QPS QPs, rping -V, ib_write_bw -R and ib_read_bw -R, all at
# once), waits until it flows, injects one fault, then asserts:
#   - no hang: viw_verify ends by itself within a bound (its own bounded
#     waits turn a missing completion or CM event into a FAIL), the other
#     side gets all its CM events (viw_verify's server closes every
#     connection it accepted), what is left dies on SIGKILL within 10 s,
#     and rmmod/rdma link delete/ip netns delete return;
#   - the right outcome: where the fault leaves the connections up
#     (netem, a receiver stopped then continued, rmmod refused) every round
#     is verified and rping is still running; where it ends them, each QP
#     reports an error completion or a CM event (exit 3, LOST), never wrong
#     data and never a hang;
#   - verified data is never wrong (viw_verify's DATAERR, rping's
#     "data mismatch"), whatever the fault;
#   - no leak: both devices' objects at zero and no connection endpoint
#     left after each round, and viw unloads at the end.
# The faults, one a round: SIGKILL of the clients (a), SIGKILL of the
# servers (b), link down and up, deletion of namespace b, rdma link
# delete, rmmod viw while in use (refused; clean once the load is gone),
# netem loss, netem delay
# with reordering, and receivers that stop (SIGSTOP of b's programs, plus a
# raw peer that stops reading with a full TCP window on a connection of
# viw_verify's server), then SIGCONT, then the same with SIGKILL.
#
# FAULT_ROUNDS (default 1) passes over the list, FAULT_SECS (default 20)
# seconds of traffic a round; about 3-4 minutes under TCG.  FAULT_LIST
# (default: all, in the order above) names the faults to inject, e.g.
#   tests/vm/run --env FAULT_LIST=rmmod tests/vm/guest/faults.sh  Longer runs
# (the wrapper scripts/soak writes gives them the time they need):
#   scripts/soak --faults 5
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../traffic.sh"

passes=${FAULT_ROUNDS:-1}
secs=${FAULT_SECS:-20}
BOUND=45	# a side's own end after a fault: its bounded waits are 30 s
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
netem=0
modprobe -q sch_netem && command -v tc >/dev/null && netem=1
faults=0 rounds=0

# expect_verified: viw_verify verified every round and ended by itself;
# rping is still running (it stops only on an error).
expect_verified() {
	local rc=0
	load_exit vc $((secs + BOUND)) || rc=$?
	[ "$rc" = 0 ] || die "$fault: viw_verify exit $rc: $(grep -E '^(FAIL|LOST|SUMMARY)' "${LOG[vc]}" | head -5)"
	alive rc || die "$fault: rping ended: $(tail -3 "${LOG[rc]}")"
	log "$fault: viw_verify: $(grep '^SUMMARY' "${LOG[vc]}")"
}

# expect_lost: viw_verify saw each QP end with an error completion or a
# CM event (exit 3, no FAIL) within the bound.
expect_lost() {
	local rc=0 n
	load_exit vc "$BOUND" || rc=$?
	[ "$rc" = 3 ] || die "$fault: viw_verify exit $rc (3: connections lost, reported): $(grep -E '^(FAIL|LOST|SUMMARY)' "${LOG[vc]}" | head -5)"
	n=$(grep -c '^LOST' "${LOG[vc]}" || true)
	[ "$n" = "$VERIFY_QPS" ] || die "$fault: $n of $VERIFY_QPS QPs reported their loss"
	log "$fault: viw_verify: $(grep -E '^LOST' "${LOG[vc]}" | sort | uniq -c | head -2 | tr -s ' ' | tr '\n' ';') $(grep '^SUMMARY' "${LOG[vc]}")"
}

# expect_server_closed: viw_verify's server got an end event for every
# connection it accepted.
expect_server_closed() {
	wait_for "$BOUND" sh -c "[ \$(grep -c '^CLOSED' '${LOG[vs]}') -ge \$(grep -c '^ACCEPTED' '${LOG[vs]}') ]" ||
		die "$fault: viw_verify server: $(closed) of $(accepted) connections closed by an event"
	log "$fault: server closed $(closed) of $(accepted) connections"
}

# survivor_exits NAME: a surviving rping ends by itself (it got its event).
survivor_exits() {
	local rc=0
	load_exit "$1" "$BOUND" || rc=$?
	[ "$rc" != 124 ] || die "$fault: $1 still running $BOUND s after the fault"
}

# running: the names of the load's programs that still run.
running() {
	local name list=
	for name in "${!LPID[@]}"; do
		[ -n "${LPID[$name]}" ] && alive "$name" && list="$list $name"
	done
	[ -n "$list" ] || list=" none"
	echo "${list# }"
}

kill_side() {
	local name
	for name in "$@"; do
		kill -9 "${LPID[$name]}"
		wait "${LPID[$name]}" 2>/dev/null || true
		LPID[$name]=
	done
}

fault_kill_clients() {
	kill_side vc rc wc dc
	expect_server_closed
	survivor_exits rs
}

fault_kill_servers() {
	kill_side vs rs ws ds
	expect_lost
	survivor_exits rc
}

fault_link_down() {
	run in_a ip link set "$IF_A" down
	sleep 2
	run in_a ip link set "$IF_A" up
	expect_lost
	survivor_exits rc
	# b is not told: viw_a's resets were sent while the link was down,
	# and an idle responder has nothing to send that would draw another
}

fault_netns_delete() {
	local pids
	pids=$(ip netns pids "$NS_B")
	run ip netns delete "$NS_B"
	# shellcheck disable=SC2086 # a list of PIDs
	kill -9 $pids 2>/dev/null || true
	expect_lost
	survivor_exits rc
	wait_for 20 ib_dev_gone "$DEV_B" || die "$DEV_B still there after its namespace went"
}

# Then the other device too: once both are deleted every context of the
# load is disassociated, its module reference with it, and viw unloads,
# even while programs of the load still hold their (dead) device files
# (viw_verify's server ends on its listener's DEVICE_REMOVAL; which others
# still run depends on timing: the log names them).  The round then kills
# them.  tests/vm/guest/objects.sh asserts this with a process kept alive.
fault_link_delete() {
	run timeout 60 rdma link delete "$DEV_A" || die "rdma link delete $DEV_A failed or hung"
	expect_lost
	grep -q 'DEVICE_REMOVAL' "${LOG[vc]}" || die "viw_verify saw no DEVICE_REMOVAL"
	survivor_exits rc
	expect_server_closed
	run timeout 60 rdma link delete "$DEV_B" || die "rdma link delete $DEV_B failed or hung"
	wait_for 10 viw_refs_are 0 || die "both devices deleted, viw still holds $(viw_refs) references"
	log "$fault: viw has no reference left; still running: $(running)"
	run timeout 60 rmmod viw || die "rmmod viw failed once both devices were deleted"
	! module_loaded viw || die "viw still loaded after rmmod"
}

# rmmod while in use is refused: each user context holds a module
# reference (viw_verbs.c; viw has disassociate_ucontext, so ib_uverbs holds
# none, and "rdma link delete" above still takes a device from its users).
# So: rmmod fails with "in use" within a bound, viw and both devices stay,
# and the traffic goes on, verified to its end.  Once the load is gone the
# references are too, and viw unloads with both devices present and idle;
# the next round loads it again.
fault_rmmod() {
	expect_rmmod_in_use
	ib_dev_exists "$DEV_A" && ib_dev_exists "$DEV_B" || die "a device went with the refused rmmod"
	expect_verified
	load_reap
	devices_idle "$DEV_A" "$DEV_B"
	wait_for 10 viw_refs_are 0 || die "the load is gone, viw still holds $(viw_refs) references"
	run timeout 60 rmmod viw || die "rmmod viw failed once the load was gone"
	! module_loaded viw || die "viw still loaded after rmmod"
	ib_dev_gone "$DEV_A" && ib_dev_gone "$DEV_B" || die "a device survived rmmod"
}

# netem QDISC...: on both ends for the rest of the round.
fault_netem() {
	if [ "$netem" = 0 ]; then
		log "no sch_netem/tc: $fault injected as a pause only"
		expect_verified
		return
	fi
	run in_a tc qdisc add dev "$IF_A" root netem "$@"
	run in_b tc qdisc add dev "$IF_B" root netem "$@"
	expect_verified
	in_a tc qdisc del dev "$IF_A" root
	in_b tc qdisc del dev "$IF_B" root
}
fault_netem_loss() { fault_netem loss 3%; }
fault_netem_reorder() { fault_netem delay 20ms 10ms reorder 25% 50%; }

# A raw peer (viw_peer) takes a connection of viw_verify's server, shrinks
# its receive buffer, stops reading and asks for READs of the server's MR
# (its address and STag in the accept's private data): viw's transmit side
# of that connection blocks on a full TCP window.  Meanwhile every program
# in b is stopped (SIGSTOP).
stop_readers() {
	local steps=(rcvbuf:4096 "mpa-req:ird=16,ord=16" expect-rep:reject=0 noread)
	local i
	[ -x "$PEER" ] || die "$PEER not built"
	for ((i = 0; i < 16; i++)); do
		steps+=("read-req:len=60000,src_stag=@PD32.16,src_to=@PD64.8")
	done
	load_one peer "$NS_A" "$PEER" -t 60 -c "$IP_B:$VERIFY_PORT" "${steps[@]}" hold
	wait_for 20 grep -q '^REPLY' "${LOG[peer]}" ||
		die "$fault: the raw peer got no MPA reply: $(tail -3 "${LOG[peer]}")"
	kill -STOP "${LPID[vs]}" "${LPID[rs]}" "${LPID[ws]}" "${LPID[ds]}"
	sleep 5
	# the verify traffic on the other connections goes on meanwhile
	# (WRITE and READ need no process on the responder side)
}

fault_stop_continue() {
	stop_readers
	kill -CONT "${LPID[vs]}" "${LPID[rs]}" "${LPID[ws]}" "${LPID[ds]}"
	kill_side peer
	expect_verified
}

fault_stop_kill() {
	stop_readers
	kill_side peer vs rs ws ds
	expect_lost
	survivor_exits rc
}

# round FAULT: fresh hosts, the load, FAULT, the checks, the cleanup.
round() {
	local devs
	fault=$1
	rounds=$((rounds + 1))
	make_two_hosts viw >/dev/null
	log "round $rounds: $fault"
	# A fault that ends the connections must come while the traffic still
	# runs: such rounds have traffic for longer and end with the fault.
	case $fault in
	netem-*|stop-continue|rmmod) load_start "r$rounds-$fault" "$secs" ;;
	*) load_start "r$rounds-$fault" $((3 * secs)) ;;
	esac
	load_flowing
	faults=$((faults + 1))
	"fault_${fault//-/_}"
	load_reap
	load_data_ok
	devs=
	ib_dev_exists "$DEV_A" && devs="$DEV_A"
	ib_dev_exists "$DEV_B" && devs="$devs $DEV_B"
	# shellcheck disable=SC2086 # a list of devices
	devices_idle $devs
	cleanup_hosts || die "cleanup after $fault failed"
}

for ((pass = 0; pass < passes; pass++)); do
	for f in ${FAULT_LIST:-kill-clients kill-servers link-down netns-delete \
		 link-delete rmmod netem-loss netem-reorder stop-continue stop-kill}; do
		round "$f"
	done
done
unload_viw
log "FAULTS rounds $rounds faults $faults, $secs s of traffic a round, no hang, no leak, no wrong data"
