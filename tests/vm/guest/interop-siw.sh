#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 600
#
# Wire compatibility with Linux's siw (built from Debian's linux-source by
# scripts/build-siw): viw_a in namespace a, siw_b in namespace b.  siw
# serves a viw client and viw serves a siw client, with rping -V and the
# perftest bandwidth tests, with MPA CRC off and on, and MPA v1 and v2
# where siw allows the choice (siw always initiates with v2, and answers
# with the initiator's revision).  Run with: tests/vm/run THIS_SCRIPT.
. "$(dirname "$0")/../lib.sh"

load_viw
load_siw
# siw binds a wildcard listener to its netdev's ifindex even when the
# listener lives in another namespace; give vb an ifindex that va does not
# have in namespace a, or a wildcard listen in a collides with it there.
ip netns add "$NS_B"
ip -n "$NS_B" link add viwpad0 type dummy
ip netns add "$NS_A"
ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
in_a ip addr add "$IP_A/24" dev "$IF_A"
in_b ip addr add "$IP_B/24" dev "$IF_B"
in_a ip link set "$IF_A" up
in_b ip link set "$IF_B" up
wait_for 10 in_a "$BUSYBOX" ping -c1 -W1 "$IP_B" || die "no IPv4 connectivity a -> b"
add_link "$NS_A" viw_a viw "$IF_A"
add_link "$NS_B" siw_b siw "$IF_B"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module viw +p" > /sys/kernel/debug/dynamic_debug/control
knobs=/sys/kernel/debug/viw
# Which side ended a connection that failed: shown with its outputs.
viw_trace_on viw_cm_event viw_cm_close viw_qp_state viw_term_sent \
	viw_term_rcvd viw_flush

# mpa REV CRC: viw's MPA preferences for the next connections.
mpa() {
	echo "$1" > "$knobs/mpa_revision"
	echo "$2" > "$knobs/mpa_crc"
}

# pair_once SERVER_NS CLIENT_NS ADDR NAME CMD...: run CMD as server in one
# namespace and CMD plus ADDR as client in the other; returns non-zero if
# either fails.
pair_once() {
	local sns=$1 cns=$2 addr=$3 name=$4 spid rc=0
	shift 4
	# each side on its own CPU, as in perftest.sh
	ip netns exec "$sns" timeout 120 taskset -c 1 "$@" </dev/null \
		>"$VIW_OUT/$name.server" 2>&1 &
	spid=$!
	wait_listen "$sns" 18515	# perftest's port
	run_watched 18515 "$VIW_OUT/$name.unread" \
		ip netns exec "$cns" timeout 120 taskset -c 0 "$@" "$addr" </dev/null \
		>"$VIW_OUT/$name.client" 2>&1 || rc=$?
	[ "$rc" = 0 ] || stop_server "$spid"
	wait "$spid" || rc=$((rc ? rc : $?))
	return "$rc"
}

# pair ...: pair_once, which must succeed (retried as lib.sh's
# pair_retrying says).
pair() {
	pair_retrying "$VIW_OUT/$4" pair_once "$@" || die "$4 failed"
	log "$4 ok"
}

# rping_once SERVER_NS CLIENT_NS SERVER_ADDR NAME: one rping -V pair of 10
# pings; non-zero if either side fails (lib.sh's rping_channel_race aside)
# or a ping did not complete.
rping_once() {
	local sns=$1 cns=$2 addr=$3 name=$4 spid rc=0 src=0
	ip netns exec "$sns" timeout 60 rping -s -a "$addr" -C 10 -S 4096 -V \
		</dev/null >"$VIW_OUT/$name.server" 2>&1 &
	spid=$!
	wait_listen "$sns" 7174		# rping's port
	run_watched 7174 "$VIW_OUT/$name.unread" \
		ip netns exec "$cns" timeout 60 rping -c -a "$addr" -C 10 -S 4096 -V -v \
		</dev/null >"$VIW_OUT/$name.client" 2>&1 || rc=$?
	[ "$rc" = 0 ] || stop_server "$spid"
	wait "$spid" || src=$?
	rc=$(rping_pair_status "$rc" "$VIW_OUT/$name.client" "$src" "$VIW_OUT/$name.server")
	[ "$rc" != 0 ] || [ "$(rping_pings "$VIW_OUT/$name.client")" = 10 ] || rc=1
	return "$rc"
}

# rping_pair SERVER_NS CLIENT_NS SERVER_ADDR NAME: rping_once, which must
# succeed (retried as lib.sh's pair_retrying says: of its failures, only
# siw's accept race can befall rping).
rping_pair() {
	local name=$4
	viw_trace_clear
	if pair_retrying "$VIW_OUT/$name" rping_once "$@"; then
		log "$name ok"
		return 0
	fi
	viw_trace_show "$VIW_OUT/$name.trace" >&2
	die "$name failed"
}

# siw serves, viw connects (viw chooses revision and CRC).
mpa 2 0; rping_pair "$NS_B" "$NS_A" "$IP_B" rping-siw-serves-v2
mpa 2 1; rping_pair "$NS_B" "$NS_A" "$IP_B" rping-siw-serves-v2-crc
# MPA v1 exchanges no IRD/ORD, and siw then allows itself no RDMA READ:
# an rping server (which READs) cannot run on siw with a v1 peer.  The
# tests that need no READ from siw cover v1.
mpa 1 0
pair "$NS_B" "$NS_A" "$IP_B" write-siw-serves-v1 ib_write_bw -R -s 65536 -n 100
pair "$NS_B" "$NS_A" "$IP_B" send-siw-serves-v1 ib_send_bw -R -s 4096 -n 200
mpa 1 1
pair "$NS_B" "$NS_A" "$IP_B" write-siw-serves-v1-crc ib_write_bw -R -s 65536 -n 100
# viw serves, siw connects (MPA v2; viw asks for CRC in its reply or not).
mpa 2 0; rping_pair "$NS_A" "$NS_B" "$IP_A" rping-viw-serves
mpa 2 1; rping_pair "$NS_A" "$NS_B" "$IP_A" rping-viw-serves-crc

for t in ib_send_bw ib_write_bw ib_read_bw; do
	mpa 2 0
	pair "$NS_B" "$NS_A" "$IP_B" "$t-siw-serves" "$t" -R -s 65536 -n 100
	pair "$NS_A" "$NS_B" "$IP_A" "$t-viw-serves" "$t" -R -s 65536 -n 100
	mpa 2 1
	pair "$NS_B" "$NS_A" "$IP_B" "$t-siw-serves-crc" "$t" -R -s 65536 -n 100
done
mpa 2 0

# RFC 7306 atomics: siw has none (atomic_cap 0; docs/semantics.md §9).  A
# FetchAdd from viw gets siw's TERMINATE for an unknown opcode, the WR
# fails and the connection ends; nothing hangs.
atomic_to_siw() {
	local spid rc=0 d=$VIW_OUT/atomic-siw.dmesg mark
	mark=$(dmesg | wc -l)
	ip netns exec "$NS_B" timeout 30 ib_atomic_bw -R -d siw_b -n 10 \
		</dev/null >"$VIW_OUT/atomic-siw.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 18515
	ip netns exec "$NS_A" timeout 30 ib_atomic_bw -R -d viw_a -n 10 "$IP_B" \
		</dev/null >"$VIW_OUT/atomic-siw.client" 2>&1 || rc=$?
	wait "$spid" || true
	dmesg | tail -n +"$((mark + 1))" >"$d"
	[ "$rc" != 0 ] || die "atomic-siw: ib_atomic_bw to siw succeeded"
	[ "$rc" != 124 ] || die "atomic-siw: ib_atomic_bw to siw hung"
	has "$d" 'siw: received unknown packet type 10'
	has "$d" 'viw_a: QP [0-9]+: peer TERMINATE '
	log "atomic-siw: siw refuses viw's FetchAdd with a TERMINATE"
}
atomic_to_siw
log "interop with siw ok"
