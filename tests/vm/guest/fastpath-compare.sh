#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 2400
#
# viw against siw in one boot, for the fast-path work of issue 10 (a
# measurement, not a test: it asserts nothing about timing).  Two veth
# pairs between namespaces a and b: va/vb (10.77.0.x) carry viw_a/viw_b,
# vc/vd (10.78.0.x) siw_a/siw_b.  Each repetition runs every perftest
# case on each RNIC in turn; the table gives the medians and the ratio
# against siw of the same phase.  MPA CRC is off on both (viw's mpa_crc
# default, siw's mpa_crc_required default).  System calls per WR come from
# strace -c -f on the client at two iteration counts, so that set-up
# cancels out.
#
# FP_PHASES="NAME:VIW_KO ..." measures several builds of viw.ko one after
# the other in the same boot (default: this build's, as "viw").
# FP_RNICS (default "viw siw"): viw runs with the doorbell poller off
# (poll_idle_us 0, where the knob exists), viwpoll with it on
# (FP_POLL_US, default 200000).  FP_REPS repetitions (default 5).
#
#   tests/vm/run --name cmp -v --env FP_PHASES="old:/tmp/old.ko new:$PWD/build/kernel/viw.ko" \
#	tests/vm/guest/fastpath-compare.sh
. "$(dirname "$0")/../lib.sh"

reps=${FP_REPS:-5}
rnics=${FP_RNICS:-viw siw}
phases=${FP_PHASES:-viw:$VIW_BUILD/kernel/viw.ko}
knob=/sys/kernel/debug/viw/poll_idle_us
res=$VIW_OUT/results
: >"$res"
PERF_PORT=19000

# setup KO: viw (from KO) on va/vb, siw on vc/vd.
setup() {
	VIW_KO=$1 make_two_hosts viw
	load_siw
	# siw binds a wildcard listener to its netdev's ifindex in the
	# listener's namespace (as interop-siw.sh explains): perftest's
	# server in b listens on siw_a too, so vc must not share vd's ifindex.
	in_a ip link add fppad0 type dummy
	in_a ip link add vc type veth peer name vd netns "$NS_B"
	in_a ip addr add 10.78.0.1/24 dev vc
	in_b ip addr add 10.78.0.2/24 dev vd
	in_a ip link set vc up
	in_b ip link set vd up
	wait_for 10 in_a "$BUSYBOX" ping -c1 -W1 10.78.0.2 || die "no connectivity on vc"
	add_link "$NS_A" siw_a siw vc
	add_link "$NS_B" siw_b siw vd
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	log "viw mpa_crc=$(cat /sys/kernel/debug/viw/mpa_crc)" \
		"siw mpa_crc_required=$(cat /sys/module/siw/parameters/mpa_crc_required 2>/dev/null || echo '?')"
}

# swap KO: the same hosts, with viw reloaded from KO.
swap() {
	local d
	for d in viw_a viw_b; do
		rdma link delete "$d"
		wait_for 10 ib_dev_gone "$d" || die "$d still present"
	done
	unload_viw
	VIW_KO=$1 load_viw
	add_link "$NS_A" viw_a viw "$IF_A"
	add_link "$NS_B" viw_b viw "$IF_B"
}

# use RNIC: the device pair and address the perftest helpers use.
use() {
	case $1 in
	siw) DEV_A=siw_a DEV_B=siw_b IP_B=10.78.0.2 ;;
	*) DEV_A=viw_a DEV_B=viw_b IP_B=10.77.0.2 ;;
	esac
	if [ -e "$knob" ]; then
		case $1 in
		viwpoll) echo "${FP_POLL_US:-200000}" >"$knob" ;;
		viw) echo 0 >"$knob" ;;
		esac
	fi
}

# perf_try ...: perf_once on the next port, a try of pair_retrying.
perf_try() {
	PERF_PORT=$((PERF_PORT + 1))
	perf_once "$@"
}

# measure LOG TEST SIZE ITERS: a perftest result line.  perftest's
# listener race also shows as a plain "Connection refused" and a crash in
# librdmacm, which pair_retrying does not retry: this is a
# measurement, so any failure gets two more tries (their logs kept).
measure() {
	local log=$1 try
	shift
	for try in 1 2 3; do
		pair_retrying "$log" perf_try "$@" && return 0
		mv "$log.client" "$log.client.fail$try"
		mv "$log.server" "$log.server.fail$try"
		PERF_PORT=$((PERF_PORT + 5))
	done
	return 1
}

# one TEST SIZE ITERS COLUMN: a run on each RNIC, the figure in COLUMN of
# the result line appended to $res as "TEST-SIZE PHASE-RNIC VALUE".
one() {
	local test=$1 size=$2 iters=$3 col=$4 dev line
	for dev in $rnics; do
		[ "$dev" = viwpoll ] && [ ! -e "$knob" ] && continue	# no poller
		use "$dev"
		PERF_TAG=-$phase-$dev
		# ports of its own: a listener left behind by a run that
		# failed cannot refuse the next one
		PERF_PORT=$((PERF_PORT + 10))
		line=$(measure "$VIW_OUT/$test$PERF_TAG-$size" "$test" "$size" "$iters") || {
			in_b ss -Hltn >&2
			cat /sys/kernel/debug/viw/ceps >&2
			die "$test $phase-$dev $size failed"
		}
		echo "$test-$size $phase-$dev $(echo "$line" | tail -n 1 | awk -v c="$col" '{ print $c }')" >>"$res"
	done
}

# syscalls ITERS: system calls of the client of ib_write_bw 4 KiB.
syscalls() {
	local n=$1 spid out=$VIW_OUT/strace-$phase-$dev-$1 port
	port=$((20000 + RANDOM % 10000))	# runs in a subshell: a fresh port
	in_b timeout 120 taskset -c 1 ib_write_bw -R -p "$port" -d "$DEV_B" -s 4096 \
		-n "$n" </dev/null >"$out.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" "$port"
	in_a timeout 300 strace -c -f -o "$out.strace" taskset -c 0 ib_write_bw -R \
		-p "$port" -d "$DEV_A" -s 4096 -n "$n" "$IP_B" </dev/null >"$out.client" 2>&1 ||
		{ stop_server "$spid"; wait "$spid" || true; return 1; }
	wait "$spid" || true
	# % time, seconds, usecs/call, calls, [errors,] "total"
	awk '$NF == "total" { print $4 }' "$out.strace"
}

first=${phases%%[[:space:]]*}
setup "${first#*:}"
for p in $phases; do
	phase=${p%%:*}
	[ "$p" = "$first" ] || swap "${p#*:}"
	for r in $(seq "$reps"); do
		log "$phase: repetition $r"
		one ib_send_lat 64 2000 5	# t_typical, us
		one ib_write_lat 64 2000 5
		one ib_write_bw 65536 1000 4	# BW average, MB/s
		one ib_write_bw 4096 5000 4
	done
	for dev in $rnics; do
		[ "$dev" = viwpoll ] && [ ! -e "$knob" ] && continue
		use "$dev"
		lo=$(syscalls 1000) && hi=$(syscalls 6000) &&
			echo "syscalls/WR $phase-$dev $(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.3f", (b - a) / 5000 }')" >>"$res" ||
			log "strace run on $phase-$dev failed"
	done
done

log "results (median of $reps, MB/s or us; ratio against the same phase's siw):"
awk '
$1 == "syscalls/WR" { sc[$2] = $3; next }
{ v[$1, $2] = v[$1, $2] " " $3; keys[$1] = 1; labels[$2] = 1 }
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	for (k in keys)
		for (l in labels) {
			if (!((k, l) in v))
				continue
			s = l; sub(/-[^-]*$/, "-siw", s)
			m = median(v[k, l]); ms = median(v[k, s])
			printf "%-18s %-14s median %8.2f  /siw %5.2f  runs:%s\n", k, l, m, ms ? m / ms : 0, v[k, l]
		}
	for (d in sc)
		printf "syscalls per WR (ib_write_bw 4 KiB client) %-14s %s\n", d, sc[d]
}' "$res" | sort | tee "$VIW_OUT/table"
