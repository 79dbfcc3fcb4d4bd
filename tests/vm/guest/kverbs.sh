#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
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

run rmmod viw_ktest
log "objects of viw_u: $(objects_of viw_u)"
wait_for 10 objects_zero viw_u || bad "objects left on viw_u: $(objects_of viw_u)"
run rdma link delete viw_u
ip link delete ua
unload_viw
checks_done
log "kernel verbs: poll contexts, handlers that post, fast-register MR safety"
