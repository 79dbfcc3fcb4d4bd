#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 240
#
# Connection and flush semantics (tests/functional/viw_semantics.c), one
# scenario per run of the binary: server in namespace b, client in a.
# This script does what the processes cannot do themselves (SIGKILL, a
# peer that drops everything with netem, link down, namespace deletion)
# when the binary prints its marker line, and after every scenario checks
# that the kernel log is clean, that the CLOSE viw delivered to iw_cm and
# the way the connection ended are the expected ones (tracepoints
# viw:viw_cm_event and viw:viw_cm_close), and that
# /sys/kernel/debug/viw/DEV/objects is all zero once both processes
# exited.  ns-delete runs last: it removes both devices.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_semantics
[ -x "$bin" ] || die "$bin not built"
make_two_hosts viw
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
tracefs=/sys/kernel/tracing
mountpoint -q "$tracefs" || mount -t tracefs none "$tracefs"
for ev in viw_cm_event viw_cm_close; do
	echo 1 >"$tracefs/events/viw/$ev/enable" || die "cannot enable tracepoint viw:$ev"
done

netem=1
if ! command -v tc >/dev/null; then
	log "tc (iproute2) not found: close-timer and destroy-closing run without netem"
	netem=0
elif ! modprobe sch_netem; then
	log "sch_netem does not load: close-timer and destroy-closing run without netem"
	netem=0
fi
modprobe -q inet_diag 2>/dev/null || true
modprobe -q tcp_diag 2>/dev/null || true

port=7490
srv= cli= slog= clog=

marker_seen() { grep -qx "$2" "$1"; }

# wait_marker LOG WORD SECS
wait_marker() {
	wait_for "$3" marker_seen "$1" "$2" || {
		bad "$sc: no '$2' line from ${1##*/} within $3 s"
		return 1
	}
}

# Actions, run while both processes are up (sc, port, srv, cli, *log set).
act_kill() {
	wait_marker "$clog" READY 20 || return 0
	log "SIGKILL the client mid-transfer"
	kill -9 "$cli" || true
}

act_netem() {
	wait_marker "$clog" READY 20 || return 0
	if [ "$netem" = 1 ]; then
		log "netem loss 100% on $IF_B (the server drops all it sends)"
		in_b tc qdisc add dev "$IF_B" root netem loss 100%
	fi
	kill -USR1 "$cli" || true
	wait "$cli" || crc=$?
	cli=
	if [ "$netem" = 1 ]; then
		in_b tc qdisc del dev "$IF_B" root || bad "$sc: tc qdisc del failed"
	fi
}

act_reset_client() {
	local out
	wait_marker "$slog" REQUEST 20 || return 0
	# The client's TCP connection is reset while it waits for the MPA
	# reply.  (Killing the client process there would make iw_cm destroy
	# an id in CONN_SENT, which is a BUG() in Linux's iwcm.c.)
	out=$(in_a ss -K -t dst "$IP_B" dport = ":$port" 2>&1) || true
	echo "$out" | sed 's/^/    ss -K: /'
	echo "$out" | grep -q ESTAB || bad "$sc: ss -K did not find the client's connection"
	wait "$cli" || crc=$?
	cli=
	kill -USR1 "$srv" || true
}

act_link_down() {
	wait_marker "$clog" READY 20 || return 0
	log "ip link set $IF_A down"
	in_a ip link set "$IF_A" down
	wait "$cli" || crc=$?
	cli=
	in_a ip link set "$IF_A" up
	wait_for 10 in_a "$BUSYBOX" ping -c1 -W1 "$IP_B" || bad "$sc: no connectivity after link up"
	kill -USR1 "$srv" || true
}

act_ns_delete() {
	local pids
	wait_marker "$clog" READY 20 || return 0
	pids=$(ip netns pids "$NS_B")
	log "ip netns delete $NS_B; SIGKILL its processes ($pids)"
	ip netns delete "$NS_B"
	kill -9 $pids || true
}

# sem SCENARIO [ACTION] [local]: one run; "local" = client only.
sem() {
	sc=$1
	local action=${2:-} mode=${3:-} mark src=0 lines
	crc=0
	port=$((port + 1))
	slog=$VIW_OUT/sem-$sc-server.log
	clog=$VIW_OUT/sem-$sc-client.log
	srv= cli=
	mark=$(dmesg | wc -l)
	: >"$tracefs/trace"
	log "scenario $sc"
	if [ "$mode" != local ]; then
		# Not through in_b: $! must be the binary itself (for kill).
		ip netns exec "$NS_B" "$bin" --scenario "$sc" -s "$IP_B" -p "$port" -t 45 >"$slog" 2>&1 &
		srv=$!
		wait_marker "$slog" LISTENING 10 || true
	fi
	ip netns exec "$NS_A" "$bin" --scenario "$sc" -c "$IP_B" -p "$port" -t 40 >"$clog" 2>&1 &
	cli=$!
	[ -n "$action" ] && "$action"
	if [ -n "$cli" ]; then
		wait "$cli" || crc=$?
	fi
	if [ -n "$srv" ]; then
		wait "$srv" || src=$?
	fi
	for f in "$clog" ${srv:+"$slog"}; do
		sed "s/^/    ${f##*sem-$sc-}: /; s/\.log: /: /" "$f"
	done
	case $sc in
	kill) [ "$crc" = 137 ] || bad "$sc: client exit $crc, expected SIGKILL" ;;
	*) [ "$crc" = 0 ] || bad "$sc: client failed (exit $crc): $(grep -m1 '^FAIL' "$clog" || tail -1 "$clog")" ;;
	esac
	case $sc in
	ns-delete) ;;
	*) [ "$src" = 0 ] || bad "$sc: server failed (exit $src): $(grep -m1 '^FAIL' "$slog" || tail -1 "$slog")" ;;
	esac
	lines=$(dmesg | tail -n +"$((mark + 1))")
	TRACE=$VIW_OUT/sem-$sc.trace
	grep -E "viw_cm_close:|event=CLOSE" "$tracefs/trace" >"$TRACE" || true
	sed 's/^ */    trace: /' "$TRACE"
	printf '%s\n' "$lines" | "$VIW_SRC/tests/vm/check-dmesg" && true ||
		bad "$sc: kernel log not clean"
	if [ "$sc" != ns-delete ]; then
		for d in "$DEV_A" "$DEV_B"; do
			wait_for 5 objects_zero "$d" ||
				bad "$sc: objects of $d not zero: $(tr '\n' ' ' </sys/kernel/debug/viw/"$d"/objects)"
		done
	fi
}

# expect_close DEV STATUS RESET: in this scenario, DEV delivered one CLOSE,
# with STATUS, for a connection that ended with a reset (1) or a FIN (0).
expect_close() {
	local ev cl
	ev=$(grep -E "viw_cm_event: dev=$1 .*event=CLOSE" "$TRACE" | sed 's/.*event=CLOSE //' | tr '\n' ';')
	cl=$(grep -E "viw_cm_close: dev=$1 " "$TRACE" | sed 's/.* status=/status=/' | tr '\n' ';')
	[ "$ev" = "status=$2;" ] || bad "$sc: $1 CLOSE was '${ev:-none}', expected 'status=$2' once"
	[ "$cl" = "status=$2 reset=$3;" ] ||
		bad "$sc: $1 closed with '${cl:-nothing}', expected 'status=$2 reset=$3' once"
}

sem flush "" local
sem flush-many "" local
sem disconnect
expect_close "$DEV_A" 0 0
expect_close "$DEV_B" 0 0
sem both
sem kill act_kill
expect_close "$DEV_B" -104 1
sem close-timer act_netem
[ "$netem" = 1 ] && expect_close "$DEV_A" -110 1
sem destroy-closing act_netem
sem accept-fail act_reset_client
[ ! -s "$TRACE" ] ||
	bad "$sc: a CLOSE was traced for a connection that never was established"
sem link-down act_link_down
expect_close "$DEV_A" -104 1
sem error-disconnect
expect_close "$DEV_A" -104 1
expect_close "$DEV_B" -104 1
sem reset
expect_close "$DEV_A" -104 1
expect_close "$DEV_B" -104 1
sem bad-tail
sem bad-inv-tail
sem ns-delete act_ns_delete
wait_for 15 ib_dev_gone "$DEV_A" || bad "ns-delete: $DEV_A still present"
wait_for 15 ib_dev_gone "$DEV_B" || bad "ns-delete: $DEV_B still present"

checks_done
log "all semantics scenarios passed"
