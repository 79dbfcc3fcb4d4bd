# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The mixed load of issue 12's lanes 3 and 4 (guest/faults.sh,
# guest/soak.sh), sourced after lib.sh and make_two_hosts: servers in b,
# clients in a, all at once between $DEV_A and $DEV_B:
#   vs/vc  tests/functional/viw_verify: WRITE then READ-back of stamped
#          patterns on VERIFY_QPS QPs, every byte compared (port 7472)
#   rs/rc  rping -V (every transfer verified; port 7174)
#   ws/wc  ib_write_bw -R -D (port 18515)
#   ds/dc  ib_read_bw -R -D (port 18516)
# Each program is started through "ip netns exec" without a subshell, so
# LPID[name] is the program itself (for SIGSTOP, SIGKILL, wait) and
# LOG[name] its output.

VERIFY=$VIW_BUILD/tests/functional/viw_verify
VERIFY_PORT=7472
VERIFY_QPS=${VERIFY_QPS:-4}
declare -A LPID LOG

# load_one NAME NS CMD...: start CMD in NS in the background.
load_one() {
	local name=$1 ns=$2
	shift 2
	LOG[$name]=$LOAD_TAG.$name
	ip netns exec "$ns" "$@" </dev/null >"${LOG[$name]}" 2>&1 &
	LPID[$name]=$!
}

# load_start TAG SECS: the four servers, then the four clients; traffic
# for SECS seconds (viw_verify, perftest; rping until stopped).
load_start() {
	local secs=$2
	LOAD_TAG=$VIW_OUT/$1
	LPID=() LOG=()
	[ -x "$VERIFY" ] || die "$VERIFY not built"
	load_one vs "$NS_B" "$VERIFY" -s "$IP_B" -p "$VERIFY_PORT" -t $((secs + 120))
	load_one rs "$NS_B" rping -s -a "$IP_B" -S 16000 -V
	load_one ws "$NS_B" ib_write_bw -R -p 18515 -d "$DEV_B" -s 65536 -D "$secs"
	load_one ds "$NS_B" ib_read_bw -R -p 18516 -d "$DEV_B" -s 65536 -D "$secs"
	wait_listen "$NS_B" "$VERIFY_PORT"
	wait_listen "$NS_B" 7174
	wait_listen "$NS_B" 18515
	wait_listen "$NS_B" 18516
	load_one vc "$NS_A" "$VERIFY" -c "$IP_B" -p "$VERIFY_PORT" -q "$VERIFY_QPS" \
		-d "$secs" -t $((secs + 90))
	load_one rc "$NS_A" rping -c -a "$IP_B" -S 16000 -V
	load_one wc "$NS_A" ib_write_bw -R -p 18515 -d "$DEV_A" -s 65536 -D "$secs" "$IP_B"
	load_one dc "$NS_A" ib_read_bw -R -p 18516 -d "$DEV_A" -s 65536 -D "$secs" "$IP_B"
}

alive() { kill -0 "${LPID[$1]}" 2>/dev/null; }
accepted() { grep -c '^ACCEPTED' "${LOG[vs]}" || true; }
closed() { grep -c '^CLOSED' "${LOG[vs]}" || true; }
verified_rounds() { awk '/^SUMMARY/ { print $5 }' "${LOG[vc]}"; }

# load_flowing: every viw_verify QP connected and traffic verified.
load_flowing() {
	wait_for 40 sh -c "[ \$(grep -c '^ACCEPTED' '${LOG[vs]}') -ge $VERIFY_QPS ]" ||
		die "viw_verify: $(accepted) of $VERIFY_QPS connections: $(tail -3 "${LOG[vc]}")"
	wait_for 30 grep -q '^PROGRESS' "${LOG[vc]}" || {
		load_data_ok
		die "viw_verify: no progress: $(tail -3 "${LOG[vc]}")"
	}
	alive rc || die "rping client ended early: $(tail -3 "${LOG[rc]}")"
}

# load_exit NAME SECS: NAME ends by itself within SECS; its exit code.
load_exit() {
	local rc=0
	ended_within "$2" "${LPID[$1]}" || return 124
	wait "${LPID[$1]}" || rc=$?
	LPID[$1]=
	return "$rc"
}

# load_reap: SIGKILL (and SIGCONT) what still runs; each must be gone
# within 10 s, else it is stuck in the kernel (its stack is shown).
load_reap() {
	local name pid
	for name in "${!LPID[@]}"; do
		pid=${LPID[$name]}
		[ -n "$pid" ] || continue
		kill -9 "$pid" 2>/dev/null || true
		kill -CONT "$pid" 2>/dev/null || true
	done
	for name in "${!LPID[@]}"; do
		pid=${LPID[$name]}
		[ -n "$pid" ] || continue
		ended_within 10 "$pid" ||
			die "$name ($pid) did not die after SIGKILL: $(cat "/proc/$pid/stack" 2>&1)"
		wait "$pid" 2>/dev/null || true
		LPID[$name]=
	done
}

# load_data_ok: no program saw wrong data (viw_verify, rping -V).
load_data_ok() {
	! grep -h '^DATAERR' "${LOG[vc]}" | head -5 | grep . >&2 ||
		die "viw_verify read back wrong data"
	! grep -il 'data mismatch' "${LOG[rc]}" "${LOG[rs]}" >&2 ||
		die "rping -V saw wrong data"
}

# devices_idle DEV...: the devices' objects at zero and no connection
# endpoint left but the modify_qp listeners, within 20 s.
devices_idle() {
	local dev
	for dev in "$@"; do
		wait_for 20 objects_zero "$dev" ||
			die "$dev: objects left: $(objects_of "$dev")"
	done
	module_loaded viw || return 0
	wait_for 20 ceps_zero || die "connection endpoints left: $(head -5 /sys/kernel/debug/viw/ceps)"
}
