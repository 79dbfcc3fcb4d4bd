#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 420
# vmtest-cmdline: slub_debug=U,kmalloc-*,TCP*
#
# Issue 12, lane 4: a soak.  For SOAK_SECS (default 120: the suite's
# version; scripts/soak runs 1800) six streams run at once between two
# viw hosts, each a loop until the time is up:
#   verify  viw_verify -d SOAK_SECS on VERIFY_QPS QPs: one long-lived set
#           of connections, WRITE and READ-back verified all along
#   churn   viw_verify -q 2 -n 5: connect, 5 verified rounds, disconnect
#   cma     ucmatose -c 4 -C 20 (rdmacm-utils): connect, SEND both ways,
#           disconnect
#   perf    ib_write_bw, ib_read_bw, ib_send_bw -R in turn
#   rping   rping -V -C 20: connect, verified pings, disconnect
#   pingpong ibv_srq_pingpong -q 16 -n 100 and ibv_rc_pingpong -n 200 in
#           turn, over connections made by modify_qp: a tool whose peer
#           finished first still ends cleanly (docs/semantics.md, "A peer
#           that stops answering")
# Every run of every stream must succeed (perftest's own clock and
# listener failures are retried as lib.sh's pair_retrying says).
# Before and after, compared:
#   - each device's object counts (debugfs viw/DEV/objects) at the start
#     and after the streams ended: equal (all zero), and no connection
#     endpoint left (debugfs viw/ceps);
#   - the slab caches' active objects with no host set up (kmalloc-*
#     and kmalloc-cg-*, where all of viw's allocations go, and the TCP
#     socket caches its kernel sockets come from), after a warm-up pass of every stream (so
#     that caches grown once, by first use, count in the baseline) and,
#     after the soak, once the namespaces are gone: within SLAB_TOL each
#     (see slab_check for the tolerance).
#     The guest boots with slub_debug=U on those caches (the line above):
#     a debug cache keeps no per-CPU slabs, so its active objects are
#     exact, and it records where each live object was allocated, which
#     names the call sites when a cache grew.  Without it SLUB counts
#     every object of a per-CPU slab as in use, and a reading is off by
#     up to a slab (512 objects of kmalloc-8) per CPU.
# The harness checks the kernel log (check-dmesg) and that viw unloads.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../traffic.sh"

soak=${SOAK_SECS:-120}
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
STATE=$VIW_OUT/soak
mkdir -p "$STATE"

# ---- the streams ------------------------------------------------------------

# until_end NAME CMD...: CMD again and again until $end (uptime seconds);
# counts the runs in $STATE/NAME.runs, stops at the first failure.
until_end() {
	local name=$1 n=0
	shift
	while awk -v e="$end" -v u="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { exit !(u < e) }'; do
		"$@" || { echo "$n" >"$STATE/$name.runs"; die "$name: run $((n + 1)) failed"; }
		n=$((n + 1))
		echo "$n" >"$STATE/$name.runs"
	done
}

churn_once() {
	in_a timeout 60 "$VERIFY" -c "$IP_B" -p "$VERIFY_PORT" -q 2 -n 5 \
		--size 32768 >"$STATE/churn.log" 2>&1 ||
		{ tail -5 "$STATE/churn.log" >&2; return 1; }
}

cma_once() {
	local spid rc=0
	wait_unlisten "$NS_B" 7471
	in_b timeout 60 ucmatose -c 4 -C 20 -S 4096 </dev/null >"$STATE/cma.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 7471
	in_a timeout 60 ucmatose -s "$IP_B" -c 4 -C 20 -S 4096 </dev/null \
		>"$STATE/cma.client" 2>&1 || rc=$?
	[ "$rc" = 0 ] || stop_server "$spid"
	wait "$spid" || rc=$((rc ? rc : $?))
	[ "$rc" = 0 ] || tail -5 "$STATE/cma.server" "$STATE/cma.client" >&2
	return "$rc"
}

# perf_once_soak: the next of ib_write_bw, ib_read_bw, ib_send_bw -R.
# perftest calibrates its cycle counter against the clock after the
# transfer and, under TCG with this much load, often gives up ("Can't
# produce a report", lib.sh's perftest_clock_failed); its rdma_cm
# listener race (lib.sh, librdmacm_crashes) refuses a client now and
# then.  Both are perftest's: the run counts, with a NOTE.  Any other
# failure fails the soak.
perf_tests=(ib_write_bw ib_read_bw ib_send_bw)
perf_once_soak() {
	local t=${perf_tests[$((perf_n++ % 3))]} log
	log=$VIW_OUT/$t-soak-65536
	PERF_PORT=18520 PERF_TAG=-soak perf_once "$t" 65536 200 >/dev/null && return 0
	if perftest_clock_failed "$log.server" "$log.client"; then
		echo "NOTE: $t: no report, perftest could not calibrate its clock"
	elif grep -Eq "RDMA_CM_EVENT_REJECTED; error: -111|ERRNO: Connection refused" "$log.client"; then
		echo "NOTE: $t: refused by perftest's own listener race"
	else
		tail -n 5 "$log.server" "$log.client" >&2
		return 1
	fi
}

rping_once() { rping_pair "$IP_B" 16000 20 >/dev/null; }

# pingpong_once: the next of ibv_srq_pingpong (16 connections) and
# ibv_rc_pingpong (one), the server on either host in turn.  In a
# subshell: pingpong_pair dies on a failure, which until_end reports.
pingpong_once() {
	local n=$((pp_n++))

	if ((n % 2)); then
		(pingpong_pair ibv_rc_pingpong a b 1 -n 200 >/dev/null)
	else
		(pingpong_pair ibv_srq_pingpong b a 1 -q 16 -n 100 >/dev/null)
	fi
}

# streams SECS: all six for SECS seconds; fails if one failed.
streams() {
	local pids=() p rc=0 vrc=0 vpid
	end=$(awk -v u="$(cut -d' ' -f1 /proc/uptime)" -v s="$1" 'BEGIN { print u + s }')
	perf_n=0
	pp_n=0
	in_b "$VERIFY" -s "$IP_B" -p "$VERIFY_PORT" -t $(($1 + 200)) \
		>"$STATE/verify.server" 2>&1 &
	vpid=$!
	wait_listen "$NS_B" "$VERIFY_PORT"
	in_a "$VERIFY" -c "$IP_B" -p "$VERIFY_PORT" -q "$VERIFY_QPS" -d "$1" \
		-t $(($1 + 90)) >"$STATE/verify.client" 2>&1 &
	p=$!
	until_end churn churn_once & pids+=($!)
	until_end cma cma_once & pids+=($!)
	until_end perf perf_once_soak & pids+=($!)
	until_end rping rping_once & pids+=($!)
	until_end pingpong pingpong_once & pids+=($!)
	for p2 in "${pids[@]}"; do wait "$p2" || rc=1; done
	wait "$p" || vrc=$?
	grep '^SUMMARY' "$STATE/verify.client" || true
	[ "$vrc" = 0 ] || { grep -E '^(FAIL|LOST|DATAERR)' "$STATE/verify.client" | head >&2; rc=1; }
	pkill -TERM -P "$vpid" 2>/dev/null || true
	kill -TERM "$vpid" 2>/dev/null || true
	wait "$vpid" || true
	return "$rc"
}

# ---- what is compared -------------------------------------------------------

# slab_once FILE: "cache active_objs" for kmalloc-* and the TCP socket
# caches, after the page cache, dentries and inodes are dropped (with the
# names and 9p state they hold) and each cache is shrunk (empty slabs
# freed).
slab_once() {
	local c
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for c in /sys/kernel/slab/kmalloc-* /sys/kernel/slab/TCP*; do
		[ -w "$c/shrink" ] && echo 1 >"$c/shrink" 2>/dev/null || true
	done
	awk 'NR > 2 && ($1 ~ /^kmalloc-(cg-|rcl-)?[0-9]+k?$/ || $1 ~ /^(TCP|TCPv6)$/) { print $1, $2 }' \
		/proc/slabinfo | sort >"$1"
}

# slab_sample FILE: the smallest count of each cache over three samples
# 2 s apart.  What the rest of the system allocates for a moment (the
# shell's processes, 9p requests, timers, RCU callbacks not run yet)
# inflates a sample; a leak stays in all of them.
slab_sample() {
	local i
	for i in 1 2 3; do
		slab_once "$1.$i"
		sleep 2
	done
	join "$1.1" "$1.2" | join - "$1.3" |
		awk '{ m = $2; if ($3 < m) m = $3; if ($4 < m) m = $4; print $1, m }' >"$1"
	callers_save "$1.calls"
}

# callers_save DIR: where the live objects of each kmalloc cache were
# allocated, one "function count" line per call site (slub_debug=U's
# alloc_traces in debugfs).
callers_save() {
	local c
	mkdir -p "$1"
	for c in /sys/kernel/debug/slab/kmalloc-*; do
		awk '$1 ~ /^[0-9]+$/ { sub(/\+.*/, "", $2); n[$2] += $1 } END { for (f in n) print f, n[f] }' \
			"$c/alloc_traces" 2>/dev/null | sort >"$1/${c##*/}"
	done
}

# callers_grown BEFORE AFTER CACHE: the allocation sites whose live
# objects in CACHE grew, largest first.
callers_grown() {
	[ -s "$1/$3" ] || [ -s "$2/$3" ] || return 0
	join -a 2 -e 0 -o 0,1.2,2.2 "$1/$3" "$2/$3" |
		awk '$3 > $2 { printf "    %s %+d\n", $1, $3 - $2 }' | sort -k2 -nr | head -n 10
}

# settle: the namespaces are gone (their netns cleanup is deferred: wait
# until net_namespace, if the cache is not merged into another, is back at
# its count before the first hosts) and RCU callbacks have freed what
# they hold.
net_ns_count() {
	# shrunk first: a per-CPU slab counts as all in use
	echo 1 >/sys/kernel/slab/net_namespace/shrink 2>/dev/null || true
	awk '$1 == "net_namespace" { print $2 }' /proc/slabinfo
}
ns_settled() { [ "$(net_ns_count)" -le "$ns_base" ]; }
settle() {
	if [ -n "$ns_base" ]; then
		wait_for 20 ns_settled ||
			log "net_namespace objects still $(net_ns_count) (at first $ns_base)"
	fi
	sleep 5
}

# slab_check BEFORE AFTER CONNS: no cache grew by more than SLAB_TOL
# (default 100) active objects.  Why 100: the counts are exact (see the
# top), and what moves them with no connection at all is the rest of the
# system (the shell's processes, 9p, the workqueues): two idle baselines
# 5 s apart differed by at most 41 objects in one cache ("noise" below
# prints it for each run), and the caches after a 2-minute soak by at
# most 11 from the baseline.  A leak is made per connection, or per MR,
# QP or message: the 2-minute soak makes about 200 connections (CONNS,
# printed), so one object leaked in every second connection exceeds the
# tolerance, and the 30-minute one (about 3000 connections) sees a leak
# of one object in about 30 connections.
slab_check() {
	local tol=${SLAB_TOL:-100}
	log "a leak of one object per connection shows from $tol connections; this run made $3"
	join "$1" "$2" | awk -v tol="$tol" -v conns="$3" '
		{ d = $3 - $2; if (d || $2) printf "  %-15s before %7d after %7d delta %+d\n", $1, $2, $3, d
		  if (d > tol) { bad++; worst = worst " " $1 " " d } }
		END { if (bad) { printf "slab growth over %d objects (%d connections):%s\n", tol, conns, worst; exit 1 } }'
}

# noise A B: the largest difference of two samples, cache by cache.
noise() {
	join "$1" "$2" | awk '{ d = $3 - $2; if (d < 0) d = -d; if (d > m) m = d } END { print m + 0 }'
}

objects_both() { echo "$DEV_A: $(objects_of "$DEV_A")"; echo "$DEV_B: $(objects_of "$DEV_B")"; }

conns_made() {
	local v c m r p
	v=$(grep -c '^ACCEPTED' "$STATE/verify.server" 2>/dev/null || true)
	c=$(cat "$STATE/cma.runs" 2>/dev/null || echo 0)
	m=$(cat "$STATE/perf.runs" 2>/dev/null || echo 0)
	r=$(cat "$STATE/rping.runs" 2>/dev/null || echo 0)
	p=$(cat "$STATE/pingpong.runs" 2>/dev/null || echo 0)
	# viw_verify's (churn included), ucmatose's 4 a run, perftest's 2
	# (control and data), rping's 1, the pingpongs' 16 and 1 in turn
	echo $((v + 4 * c + 2 * m + r + 16 * ((p + 1) / 2) + p / 2))
}

# ---- the run ----------------------------------------------------------------

# Warm-up: every stream for a short while, then no hosts: the baseline.
[ -r /sys/kernel/debug/slab/kmalloc-8/alloc_traces ] ||
	die "the kmalloc caches are not debug caches: boot with slub_debug=U,kmalloc-* (see the top)"
ns_base=$(net_ns_count)
make_two_hosts viw
streams 15 || die "warm-up failed"
cleanup_hosts || die "cleanup after the warm-up failed"
settle
slab_sample "$STATE/slab.base1"
sleep 5
slab_sample "$STATE/slab.base"
log "slab noise between two idle samples: $(noise "$STATE/slab.base1" "$STATE/slab.base") objects"
rm -f "$STATE"/*.runs

make_two_hosts viw
obj_before=$(objects_both)
log "objects before: $(echo "$obj_before" | tr '\n' ' ')"
log "soak: $soak s"
t0=$(cut -d' ' -f1 /proc/uptime)
streams "$soak" || die "a stream failed"
t1=$(cut -d' ' -f1 /proc/uptime)
devices_idle "$DEV_A" "$DEV_B"
obj_after=$(objects_both)
log "objects after:  $(echo "$obj_after" | tr '\n' ' ')"
[ "$obj_before" = "$obj_after" ] || die "object counts differ"
conns=$(conns_made)
for s in churn cma perf rping pingpong; do
	log "$s: $(cat "$STATE/$s.runs" 2>/dev/null || echo 0) runs"
done
cleanup_hosts || die "cleanup after the soak failed"
settle
slab_sample "$STATE/slab.after"
if ! slab_check "$STATE/slab.base" "$STATE/slab.after" "$conns"; then
	for c in $(join "$STATE/slab.base" "$STATE/slab.after" |
		awk -v tol="${SLAB_TOL:-100}" '$3 - $2 > tol { print $1 }'); do
		log "  $c: $(callers_grown "$STATE/slab.base.calls" "$STATE/slab.after.calls" "$c" | tr '\n' ' ')"
	done
	die "slab caches grew"
fi
log "SOAK $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }') s, $conns connections, objects and slabs back to baseline"
