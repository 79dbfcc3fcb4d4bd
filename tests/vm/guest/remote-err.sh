#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# Remote errors on the requester's own WR (docs/semantics.md section 13):
# on a modify_qp connection between two viw QPs, SENDs and WRITEs complete
# on the responder's acknowledgement.
# - tests/functional/viw_remote_err.c: everything acknowledged completes
#   in order with its data placed; a WRITE to a bad rkey fails with
#   REM_ACCESS_ERR while the WRITE before it succeeds and the one after is
#   flushed; a WRITE without remote write access REM_ACCESS_ERR; a SEND
#   into a bad receive REM_OP_ERR, the receive LOC_PROT_ERR; QPs reset
#   after an error, or while connecting, connect again, and an acceptor
#   whose peer dropped its stream unused waits for the next one, also
#   when it took the dropped attempt's request before the live one's
#   (docs/semantics.md section 8, "Reset and connect again");
#   a post of more than the socket holds returns when the peer reads
#   nothing, and its WRITEs complete once the peer reads; a peer that
#   leaves with a SEND unacknowledged, or before one is posted, leaves
#   the QP in RTS until its retries would end (section 8, "A peer that
#   stops answering"), and then the SEND is flushed;
# - the acknowledgement counters count them, and an rdma_cm connection
#   (whose private data is the consumer's) sends none;
# - ibv_rc_pingpong still ends cleanly on both sides: each side's last
#   WQE completes on an acknowledgement that goes out before the FIN.
# - with each binding of a connection held 50 ms (debugfs bind_delay_ms,
#   viw_remote_err -D): doorbells that race the binding find no stream or
#   the whole new one, so a SEND that waited for the connection goes
#   through with the new stream's first MSN; and a peer that sent a byte
#   while the acceptor bound the stream, and then reset it, fails the
#   acceptor's QP at once: it did not give the attempt up.
# - with net.ipv4.tcp_notsent_lowat at 1, then 16384, in b's namespace
#   (viw_remote_err -F; --env LOWAT="N ..." for others), TCP takes part of
#   a doorbell's write and refuses the rest while the send buffer has
#   room: the post still returns when the peer reads nothing, the peer
#   then reads every WRITE whole and in order, and a FIN still fails b
#   (full_socket, full_fin).
# - with net.ipv4.tcp_notsent_lowat at 16384 in b's namespace and debugfs
#   tx_short_delay_ms at 300 (viw_remote_err -C): b leaves RTS while its
#   doorbell's run, whose write TCP cut short, waits, because of a
#   peer's bad WRITE (then b's TERMINATE follows) or its consumer's
#   ERROR (then a FIN): b's stream still goes on to the end of the FPDU
#   that was cut, and only then carries the TERMINATE or the FIN
#   (cut_term, cut_err).
# - the same with debugfs tx_spill_fail set too (viw_remote_err -T): the
#   rest of the FPDU that TCP cut cannot be kept, so b's stream is reset,
#   with no TERMINATE, FIN or other byte after what TCP took (torn_term,
#   torn_err).
# - the same cut and failed copy, but with the peer reading nothing, so
#   that the doorbell's run waits for room in the system call, where its
#   poster (a process of its own, holding b's QP) is killed
#   (viw_remote_err -K): b's stream is reset, with nothing after what
#   TCP took (killed_post), and the dead poster leaves no object behind.
# - with debugfs rx_send_done_delay_ms at 300 (viw_remote_err -L): b's
#   consumer destroys b's QP the moment its receive completes, while b's
#   receive engine still spins after that completion; a's SEND still
#   completes with success, as b's destroy acknowledged it (last_recv).
# - with debugfs tx_cut_next armed before each post (viw_remote_err -S):
#   a lone WRITE, then a lone SEND, whose doorbell's write comes back cut
#   inside the FPDU, with nothing posted after it, still lands whole and
#   completes (lone_cut): the run leaves what it spilled to the work item.
# - with debugfs tx_run_hold_ms at 300 (viw_remote_err -H): b's
#   doorbell's run keeps b's engine after its write, past its
#   acknowledgement, while a's SEND is placed and b's consumer moves b to
#   ERROR at its completion; a's SEND still completes with success
#   (busy_recv).
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_remote_err
make_two_hosts viw

sent0=$(port_counter "$DEV_B" acks_sent)
rcvd0=$(port_counter "$DEV_A" acks_received)
in_a "$bin" -a "$DEV_A" -b "$DEV_B" </dev/null >"$VIW_OUT/pair.log" 2>&1 ||
	{ cat "$VIW_OUT/pair.log"; die "viw_remote_err failed"; }
grep -E "^(PASS|INFO)" "$VIW_OUT/pair.log" | sed 's/^/  pair: /'
sent=$(( $(port_counter "$DEV_B" acks_sent) - sent0 ))
rcvd=$(( $(port_counter "$DEV_A" acks_received) - rcvd0 ))
[ "$sent" -gt 0 ] && [ "$rcvd" -gt 0 ] ||
	die "acknowledgements: $sent sent by $DEV_B, $rcvd received by $DEV_A"
log "remote errors on the requester's WR ok ($sent acknowledgements sent, $rcvd received)"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
dbg=/sys/kernel/debug/viw

# viw_remote_err OPT, its output in NAME.log: it must pass.  A post held
# in the kernel ignores the test's own SIGALRM.
remote_err_run() {
	local opt=$1 name=$2 rv=0

	timeout -k 5 60 ip netns exec "$NS_A" "$bin" -a "$DEV_A" -b "$DEV_B" "$opt" \
		</dev/null >"$VIW_OUT/$name.log" 2>&1 || rv=$?
	[ "$rv" = 0 ] && return
	cat "$VIW_OUT/$name.log"
	die "viw_remote_err $opt failed ($rv)"
}

# viw_remote_err OPT, its output in NAME.log, with debugfs KNOB at VALUE.
knob_run() {
	local knob=$1 value=$2 opt=$3 name=$4 rv=0

	echo "$value" >"$dbg/$knob" || die "cannot set $knob"
	( remote_err_run "$opt" "$name" ) || rv=$?
	echo 0 >"$dbg/$knob"
	[ "$rv" = 0 ] || exit "$rv"
	grep -E "^(PASS|INFO)" "$VIW_OUT/$name.log" | sed "s/^/  $name: /"
}
# -D: each binding of a connection held 50 ms (debugfs bind_delay_ms).
knob_run bind_delay_ms 50 -D delayed
log "doorbells and a peer's byte racing a connection's binding ok"

lowat_knob=net.ipv4.tcp_notsent_lowat
lowat0=$(in_b sysctl -n "$lowat_knob")
for lowat in ${LOWAT:-1 16384}; do
	in_b sysctl -qw "$lowat_knob=$lowat"
	spills0=$(port_counter "$DEV_B" tx_spills)
	rv=0
	# a post held in the kernel ignores the test's own SIGALRM
	timeout -k 5 60 ip netns exec "$NS_A" "$bin" -a "$DEV_A" -b "$DEV_B" -F \
		</dev/null >"$VIW_OUT/lowat-$lowat.log" 2>&1 || rv=$?
	in_b sysctl -qw "$lowat_knob=$lowat0"
	[ "$rv" = 0 ] || { cat "$VIW_OUT/lowat-$lowat.log"
		die "viw_remote_err -F with $lowat_knob=$lowat failed ($rv)"; }
	grep -E "^(PASS|INFO)" "$VIW_OUT/lowat-$lowat.log" | sed "s/^/  lowat $lowat: /"
	spills=$(( $(port_counter "$DEV_B" tx_spills) - spills0 ))
	log "lowat $lowat: $spills short writes of a doorbell's run (tx_spills)"
	# at 1 byte every write that fills the window is short
	[ "$lowat" != 1 ] || [ "$spills" -gt 0 ] ||
		die "$lowat_knob=1 made no doorbell's write short: the path went untested"
done
log "a doorbell's short write leaves the wait to the work item ok"

# -C and -T: b leaves RTS while its doorbell's run, its write cut short
# by TCP, waits in debugfs tx_short_delay_ms (viw_remote_err.c's
# CUT_DELAY_MS); with -T the rest of the cut FPDU cannot be kept either
# (debugfs tx_spill_fail fails the copy's allocation).
cut_run() {
	local opt=$1 name=$2 spill_fail=$3 rv=0

	in_b sysctl -qw "$lowat_knob=16384"
	echo "$spill_fail" >"$dbg/tx_spill_fail" || die "cannot set tx_spill_fail"
	( knob_run tx_short_delay_ms 300 "$opt" "$name" ) || rv=$?
	echo N >"$dbg/tx_spill_fail"
	in_b sysctl -qw "$lowat_knob=$lowat0"
	[ "$rv" = 0 ] || exit "$rv"
}
cut_run -C cut N
log "a stream whose doorbell's write TCP cut ends between two FPDUs ok"
cut_run -T torn Y
log "a stream whose cut FPDU cannot be finished is reset ok"
# -K: the same, the peer reading nothing until the poster, held in its
# doorbell's wait for room, is killed (SIGKILL).
in_b sysctl -qw "$lowat_knob=16384"
rv=0
( knob_run tx_spill_fail Y -K killed ) || rv=$?
in_b sysctl -qw "$lowat_knob=$lowat0"
[ "$rv" = 0 ] || exit "$rv"
log "a poster killed while its cut FPDU cannot be finished: the stream is reset ok"

# -L: b's receive engine spins 300 ms after completing a SEND's receive
# (viw_remote_err.c's LAST_DELAY_MS), and b's consumer destroys b's QP in
# that window.
knob_run rx_send_done_delay_ms 300 -L last
log "a QP destroyed at its last receive's completion acknowledges it ok"
# -H: b's doorbell's run keeps b's engine 300 ms after its write, and b's
# consumer moves b to ERROR in that window, at a receive's completion.
knob_run tx_run_hold_ms 300 -H held
log "a QP moved to ERROR while a run holds its engine acknowledges its last receive ok"
# -S: a lone post whose doorbell's write comes back cut (debugfs
# tx_cut_next, which viw_remote_err arms itself before each post, through
# a debugfs mount that `ip netns exec`, which mounts a /sys of its own,
# leaves in sight), with nothing posted after it: the run leaves the rest
# to the work item.
netns_dbg=/run/viw-debugfs
mkdir -p "$netns_dbg"
mountpoint -q "$netns_dbg" || mount -t debugfs none "$netns_dbg"
spills0=$(port_counter "$DEV_A" tx_spills)
remote_err_run "-S$netns_dbg/viw/tx_cut_next" lone
grep -E "^(PASS|INFO)" "$VIW_OUT/lone.log" | sed "s/^/  lone: /"
spills=$(( $(port_counter "$DEV_A" tx_spills) - spills0 ))
[ "$spills" -ge 2 ] || die "tx_cut_next made $spills spills on $DEV_A, not 2"
log "a lone post's cut write still reaches the peer whole ok ($spills spills)"

for n in 1 2 3; do
	pingpong_pair ibv_rc_pingpong a b 1 -n 200 >/dev/null
done
log "ibv_rc_pingpong x3 ends cleanly on both sides"

before="$(port_counter "$DEV_A" acks_sent) $(port_counter "$DEV_B" acks_sent)"
rping_pair "$IP_B" 64 20
after="$(port_counter "$DEV_A" acks_sent) $(port_counter "$DEV_B" acks_sent)"
[ "$before" = "$after" ] ||
	die "rdma_cm connection sent acknowledgements: $before -> $after"
log "an rdma_cm connection sends no acknowledgements"

wait_for 10 objects_zero "$DEV_A" || die "objects left on $DEV_A: $(objects_of "$DEV_A")"
wait_for 10 objects_zero "$DEV_B" || die "objects left on $DEV_B: $(objects_of "$DEV_B")"
