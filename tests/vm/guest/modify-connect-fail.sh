#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 400
#
# Connections made by modify_qp that cannot be made fail cleanly
# (docs/semantics.md, "Connections made by modify_qp"): a peer that never
# answers (either role), a peer QP that does not exist, both sides
# connecting at once, a peer without a listener, a peer that does not
# speak viw's private data (viw_peer as a plain MPA peer, both ways).
# Each time the QP goes to ERROR, IBV_EVENT_QP_FATAL arrives, and every WR
# completes with FLUSH_ERR (tests/functional/viw_modify_connect.c).
# Destroying the QP or exiting while it connects leaves nothing behind,
# and rdma_connect with another process's QP number is refused.
. "$(dirname "$0")/../lib.sh"

make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "file viw_direct.c +p" > /sys/kernel/debug/dynamic_debug/control
bin=$VIW_BUILD/tests/functional/viw_modify_connect
peer=$VIW_BUILD/tests/tools/viw_peer

# mc NS TAG ARGS...: run viw_modify_connect, which must pass.
mc() {
	local ns=$1 tag=$2 dev
	shift 2
	if [ "$ns" = a ]; then dev=$DEV_A; else dev=$DEV_B; fi
	if ! ip netns exec "$ns" timeout 90 "$bin" -d "$dev" "$@" \
		</dev/null >"$VIW_OUT/$tag.$ns" 2>&1; then
		cat "$VIW_OUT/$tag.$ns" >&2
		die "$tag ($ns): viw_modify_connect failed"
	fi
	grep -E "^(PASS|INFO)" "$VIW_OUT/$tag.$ns" | sed "s/^/  $tag $ns: /"
}

no_objects() {
	local d
	for d in "$@"; do
		wait_for 15 sh -c "! grep -Eqv ' 0\$' /sys/kernel/debug/viw/$d/objects" ||
			{ cat "/sys/kernel/debug/viw/$d/objects"; die "$d: objects left ($1)"; }
	done
}

# The program itself, on a connection that works.
rm -f /tmp/mc-qa /tmp/mc-qb
mc b ok --dgid "$IP_A" --qpn-file /tmp/mc-qb --dqpn-file /tmp/mc-qa --expect ok &
pid=$!
mc a ok --dgid "$IP_B" --qpn-file /tmp/mc-qa --dqpn-file /tmp/mc-qb --expect ok
wait "$pid"

# b_stream_closed: b holds no open modify_qp stream (port 20886).
b_stream_closed() {
	! in_b ss -Htn state established state close-wait \
		'( sport = :20886 or dport = :20886 )' | grep -q .
}

# The peer destroys its QP after the exchange, as the tools do: its FIN
# leaves b's QP in RTS with a receive posted, until b sends (the program
# checks it).  The file tells b when a's stream is closed on b's side.
rm -f /tmp/mc-qa /tmp/mc-qb /tmp/mc-gone
mc b peer-gone --dgid "$IP_A" --qpn-file /tmp/mc-qb --dqpn-file /tmp/mc-qa \
	--expect peer-gone --wait-file /tmp/mc-gone &
pid=$!
mc a ok --dgid "$IP_B" --qpn-file /tmp/mc-qa --dqpn-file /tmp/mc-qb --expect ok
wait_for 20 b_stream_closed || die "b's modify_qp stream did not close"
touch /tmp/mc-gone
wait "$pid"
log "the peer's FIN leaves the QP in RTS until it sends"

# The peer QP does not exist: b rejects the request.
mc a noqp --dgid "$IP_B" --dqpn 4000 --expect fail

# Nobody answers: a connects to an address without a host (no ARP reply);
# b waits as acceptor for a QP of a that never connects.  timeout 18 with
# retry 0 bounds the attempt to its minimum, 4 s.
mc a silent-active --dgid 10.77.0.3 --dqpn 1 --timeout 18 --retry 0 --expect timeout
mc b silent-passive --dgid "$IP_A" --dqpn 999 --timeout 18 --retry 0 --expect timeout
no_objects "$DEV_A" "$DEV_B"

# Destroyed, or the process gone, while connecting: nothing is left.
mc a destroy --dgid 10.77.0.3 --dqpn 1 --destroy-after 300
mc b destroy --dgid "$IP_A" --dqpn 999 --destroy-after 300
mc a exit --dgid 10.77.0.3 --dqpn 1 --exit-after 300 || true
no_objects "$DEV_A" "$DEV_B"
log "failure: no such QP, no answer (both roles), destroy and exit while connecting"

# Both sides connect at once: b uses a second address, 10.5.0.2, which
# sorts before a's 10.77.0.1, so both think they are the initiator; each
# side's request names a QP that is not accepting, and both are refused.
in_b ip addr add 10.5.0.2/24 dev "$IF_B"
in_a ip route add 10.5.0.0/24 dev "$IF_A"
idx=
wait_for 10 sh -c "grep -l 0a05:0002 /sys/class/infiniband/$DEV_B/ports/1/gids/* >/dev/null" ||
	die "10.5.0.2 did not become a GID of $DEV_B"
idx=$(basename "$(grep -l 0a05:0002 /sys/class/infiniband/"$DEV_B"/ports/1/gids/*)")
rm -f /tmp/mc-qa /tmp/mc-qb
mc b both -g "$idx" --dgid "$IP_A" --qpn-file /tmp/mc-qb --dqpn-file /tmp/mc-qa \
	--timeout 18 --retry 0 --expect fail &
pid=$!
mc a both --dgid "$IP_B" --qpn-file /tmp/mc-qa --dqpn-file /tmp/mc-qb \
	--timeout 18 --retry 0 --expect fail
wait "$pid"
no_objects "$DEV_A" "$DEV_B"
log "failure: both sides connecting at once"

# A process connects only its own QPs: rdma_connect naming another
# process's QP number (qp_num without a QP of its own) is refused.
target=$VIW_BUILD/tests/functional/viw_target
rm -f /tmp/mc-hold
in_b "$target" -s "$IP_B" 7400 --run 20 >"$VIW_OUT/target" 2>&1 &
tpid=$!
mc a hold --hold 8 --qpn-file /tmp/mc-hold &
hpid=$!
wait_for 10 test -s /tmp/mc-hold || die "the QP owner did not publish its QP"
wait_listen "$NS_B" 7400
mc a foreign --cm-connect "$IP_B:7400" --dqpn "$(cat /tmp/mc-hold)"
wait "$hpid"
kill "$tpid" 2>/dev/null || true
wait "$tpid" 2>/dev/null || true
log "rdma_connect with another process's qp_num: refused"

# A viw_peer that speaks MPA but not viw's private data, as initiator:
# b refuses it with an MPA reject.
in_a "$peer" -t 20 -c "$IP_B:20886" mpa-req:pd=16 expect-rep:reject=1 \
	>"$VIW_OUT/peer-client" 2>&1 || { cat "$VIW_OUT/peer-client"; die "b did not reject a non-viw request"; }

# Without viw_b, b has no listener: the attempt is refused at once.
rdma link delete "$DEV_B"
wait_for 10 sh -c "! ip netns exec $NS_B ss -Hltn 'sport = :20886' | grep -q ." ||
	die "the listener of $DEV_B outlived the device"
mc a refused --dgid "$IP_B" --dqpn 1 --expect fail

# A plain MPA acceptor on the port: its reply lacks the marker.
in_b "$peer" -t 30 -l 20886 expect-req mpa-rep:pd=16 expect-close:secs=20 \
	>"$VIW_OUT/peer-server" 2>&1 &
pid=$!
wait_listen "$NS_B" 20886
mc a non-viw --dgid "$IP_B" --dqpn 1 --expect fail
wait "$pid" || { cat "$VIW_OUT/peer-server"; die "viw_peer as acceptor failed"; }
no_objects "$DEV_A"
log "failure: non-viw peers both ways, no listener"
