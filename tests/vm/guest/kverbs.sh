#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# viw's kernel verbs under a kernel consumer of our own
# (tests/kmod/viw_ktest.ko; issue 14):
#   1. kernel QPs connected over rdma_cm on viw_u (kernel QPs of the one
#      device, as in kverbs-smoke.sh): a SEND through a CQ of every poll
#      context (direct, softirq, workqueue, unbound workqueue), then
#      ib_drain_qp; a comp_handler that posts the next receive into its
#      QP and re-arms from inside the handler (it deadlocked while viw
#      called handlers under its queue locks); a fast-register MR that
#      takes a WRITE, is invalidated by a SEND with Invalidate (the
#      receiver sees IB_WC_WITH_INVALIDATE) and, registered again, by
#      LOCAL_INV, after which a WRITE fails with the page untouched.
#   2. the raw peer (tests/tools/viw_peer) writes into a fast-register MR
#      of viw_ktest: it sends one WRITE segment's header and the first
#      512 of its 1024 bytes; once they are placed viw_ktest invalidates
#      the MR with LOCAL_INV, and only after that completes does the
#      peer send the other 512.  They must not be placed (the consumer
#      may have freed the page by then): viw answers with the TERMINATE
#      of an invalid STag (DDP, tagged buffer, code 0) and the page still
#      holds 512 written bytes.  Before fast-register MRs were
#      invalidated under the lock that placement holds, the segment
#      found its MR at the header and placed the rest.
#   3. the transmit side: the peer stops reading, viw_ktest posts 512 KiB
#      of SENDs (viw's transmit engine then waits in the socket), the
#      peer asks to READ the fast-register page and invalidates its STag
#      with a SEND with Invalidate, viw_ktest overwrites the page with
#      0xdd, and the peer reads again: no READ Response may carry 0xdd.
#      Before the engine sent a copy taken under the MR's lock, the READ
#      Response was read out of the page after the invalidation.
#   1b. rdma_connect in the writer's own process context, as cifs's SMB
#      Direct calls it inside mount(2): with CAP_SYS_ADMIN the kernel QP
#      connects and carries a SEND; with it dropped, iw_cm's lookup of the
#      kernel QP is refused (-EINVAL) and nothing reaches the listener.
#      viw refused both while only kernel threads could name a kernel QP.
#
# Topology: rdma_cm's kernel ids live in the initial network namespace
# (viw_ktest creates them there), so everything runs there: viw_u on ua
# (10.91.0.1); the peer connects to that address over loopback.
. "$(dirname "$0")/../lib.sh"

KMOD=$VIW_BUILD/tests/kmod/viw_ktest.ko
CTL=/sys/kernel/debug/viw_ktest/ctl
IP_U=10.91.0.1
PEER_PORT=7980

[ -f "$KMOD" ] || die "$KMOD not built"
need_peer_tools
make_init_host "$IP_U"
run modprobe rdma_cm
run insmod "$KMOD"

# ---- 1. kernel QPs ------------------------------------------------------
out=$VIW_OUT/run.out
echo "run $IP_U" >"$CTL" || die "viw_ktest run failed to start"
cat "$CTL" >"$out"
sed 's/^/    /' "$out"
for c in poll-direct poll-softirq poll-workqueue poll-unbound-workqueue \
	handler-posts fastreg-reg fastreg-write fastreg-send-inv \
	fastreg-local-inv fastreg-write-after-inv; do
	grep -q "^PASS $c\$" "$out" || bad "$c did not pass"
done
for c in poll-direct poll-softirq poll-workqueue poll-unbound-workqueue \
	handler-posts; do
	grep -q "^DRAINED $c\$" "$out" || bad "$c: ib_drain_qp did not return"
done
hasnt "$out" '^FAIL '
has "$out" '^DONE 0 failed$'
# the refused WRITE's TERMINATE: DDP, tagged buffer, invalid STag
dmesg | grep -q 'peer TERMINATE layer 1 type 1 code 0$' ||
	bad "the WRITE after LOCAL_INV got no TERMINATE of an invalid STag"
log "kernel QPs: every poll context, a handler that posts, fast registration"

# ---- 1b. rdma_connect from a process, as cifs's SMB Direct does -----------
out=$VIW_OUT/process.out
echo "process $IP_U" >"$CTL" || die "viw_ktest process failed to start"
cat "$CTL" >"$out"
sed 's/^/    /' "$out"
has "$out" '^PASS process-connect$'
has "$out" '^DRAINED process-connect$'
has "$out" '^PASS process-unprivileged-refused$'
has "$out" '^DONE 0 failed$'
log "kernel QPs: connected from a process with CAP_SYS_ADMIN, refused without"

# ---- 2. a WRITE segment that straddles LOCAL_INV --------------------------
info=$VIW_OUT/peer.info
plog=$VIW_OUT/peer.log
state=$VIW_OUT/state
rm -f "$info"
echo "listen $IP_U $PEER_PORT" >"$CTL" || die "viw_ktest listen failed"
cat "$CTL" | sed 's/^/    /'
# the rest of the segment: 512 bytes of 0xa5, the CRC word (not checked:
# the peer's MPA request asks for none)
rest=$(printf 'a5%.0s' $(seq 512))00000000
"$PEER" -t 60 -i "$info" -c "$IP_U:$PEER_PORT" mpa-req expect-rep:reject=0 \
	write:stag=@STAG,to=@ADDR,len=1024,fill=0xa5,partial=528 \
	await:GO "raw:$rest" expect-term:layer=1,type=1,code=0,secs=15 \
	>"$plog" 2>&1 &
peer=$!

# The MR, once the connection is up: STAG and ADDR for the peer.
mr_ready() {
	cat "$CTL" >"$state"
	grep -q '^STAG ' "$state"
}
wait_for 20 mr_ready || die "no MR for the peer: $(tr '\n' ' ' <"$state")"
grep '^STAG ' "$state" | awk '{ print "STAG", $2; print "ADDR", $4 }' >"$info.tmp"
mv "$info.tmp" "$info"
placed() {
	cat "$CTL" >"$state"
	grep -q "^PLACED $1\$" "$state"
}
wait_for 20 placed 512 || die "the first half was not placed: $(tr '\n' ' ' <"$state")"
echo inv >"$CTL"
cat "$CTL" >"$state"
grep -q '^INV 0$' "$state" || die "LOCAL_INV failed: $(tr '\n' ' ' <"$state")"
log "LOCAL_INV completed with 512 bytes of the segment placed"
echo "GO 1" >>"$info"
rc=0
wait "$peer" || rc=$?
sed 's/^/    peer: /' "$plog"
[ "$rc" = 0 ] || bad "the peer did not get the TERMINATE of an invalid STag (exit $rc)"
cat "$CTL" >"$state"
sed 's/^/    /' "$state"
grep -q '^PLACED 512$' "$state" ||
	bad "bytes were placed after LOCAL_INV: $(grep PLACED "$state")"
echo stop >"$CTL"
log "the rest of the segment was refused after LOCAL_INV"

# The transmit side: a READ Response is never read out of a page after the
# MR's invalidation returned (docs/semantics.md section 14).  The peer
# stops reading, so that SENDs of the kernel QP hold viw's transmit engine
# in the socket; then it asks to READ the fast-register page and, before
# the answer can go out, invalidates that STag with a SEND with
# Invalidate.  The module then overwrites the page with 0xdd, as a
# consumer reusing it would.  When the peer reads again, no READ Response
# may carry those bytes.
plog2=$VIW_OUT/peer-read.log
rm -f "$info"
# Send buffers of at most 16 KiB for the sockets made from here on (viw's
# of this connection), so that the SENDs cannot all fit in the socket.
wmem=$(sysctl -n net.ipv4.tcp_wmem)
sysctl -qw net.ipv4.tcp_wmem="4096 16384 16384"
echo "listen $IP_U $PEER_PORT" >"$CTL" || die "viw_ktest listen failed"
"$PEER" -t 60 -D 0xdd -i "$info" -c "$IP_U:$PEER_PORT" rcvbuf:4096 mpa-req \
	expect-rep:reject=0 noread await:FILLED \
	read-req:sink_stag=0x1234,sink_to=0,len=4096,src_stag=@STAG,src_to=@ADDR \
	send:len=0,inv=@STAG await:GO read-fpdus:secs=10 >"$plog2" 2>&1 &
peer=$!
wait_for 20 mr_ready || die "no MR for the peer: $(tr '\n' ' ' <"$state")"
grep '^STAG ' "$state" | awk '{ print "STAG", $2; print "ADDR", $4 }' >"$info.tmp"
mv "$info.tmp" "$info"
echo recv >"$CTL" || die "viw_ktest recv failed"
echo "fill 8" >"$CTL" || die "viw_ktest fill failed"
grep -q '^FILL 0$' "$CTL" || die "the SENDs were not posted: $(tr '\n' ' ' <"$CTL")"
sleep 2
echo "FILLED 1" >>"$info"
recv_inv() {
	cat "$CTL" >"$state"
	grep -q '^RECV_INV 1$' "$state"
}
wait_for 20 recv_inv || die "no SEND with Invalidate arrived: $(tr '\n' ' ' <"$state")"
echo poison >"$CTL" || die "viw_ktest poison failed"
log "the STag was invalidated with a READ of it queued behind 512 KiB of SENDs"
echo "GO 1" >>"$info"
wait "$peer" || true
sysctl -qw net.ipv4.tcp_wmem="$wmem"
grep -c '^FPDU SEND' "$plog2" | sed 's/^/    peer: SEND FPDUs read: /'
grep -E '^FPDU (READ_RESP|TERMINATE)|^CLOSE|^EOF' "$plog2" | sed 's/^/    peer: /'
grep -q '^FPDU SEND' "$plog2" || bad "the peer read none of the SENDs"
hasnt "$plog2" '^FPDU READ_RESP.* poison '
echo stop >"$CTL"
log "no READ Response carried the page after its invalidation"

run rmmod viw_ktest
log "objects of viw_u: $(objects_of viw_u)"
wait_for 10 objects_zero viw_u || bad "objects left on viw_u: $(objects_of viw_u)"
run rdma link delete viw_u
ip link delete ua
unload_viw
checks_done
log "kernel verbs: poll contexts, handlers that post, fast-register MR safety"
