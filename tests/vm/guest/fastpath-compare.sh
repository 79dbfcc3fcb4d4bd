#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 1500
#
# viw against siw in one boot, for the fast-path work of issue 10 (a
# measurement, not a test: it asserts nothing about timing).  Two veth
# pairs between namespaces a and b: va/vb (10.77.0.x) carry viw_a/viw_b,
# vc/vd (10.78.0.x) siw_a/siw_b.  Each repetition runs every perftest
# case on viw and then on siw; the table gives the medians and viw/siw.
# MPA CRC is off on both (viw's mpa_crc default, siw's mpa_crc_required
# default).  System calls per WR come from strace -c -f on the client at
# two iteration counts, so that set-up cancels out.
#
#   tests/vm/run --name cmp -v --env FP_REPS=5 tests/vm/guest/fastpath-compare.sh
. "$(dirname "$0")/../lib.sh"

reps=${FP_REPS:-5}
make_two_hosts viw
load_siw
# siw binds a wildcard listener to its netdev's ifindex in the listener's
# namespace (as interop-siw.sh explains): perftest's server in b listens on
# siw_a too, so vc must not share vd's ifindex.
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

# RNICs to compare (FP_RNICS): viw, viwpoll (viw with its doorbell poller
# on, poll_idle_us=FP_POLL_US) and siw.  Plain viw runs with polling off.
rnics=${FP_RNICS:-viw siw}
knob=/sys/kernel/debug/viw/poll_idle_us

# use RNIC: the device pair and address the perftest helpers use.
use() {
	case $1 in
	siw) DEV_A=siw_a DEV_B=siw_b IP_B=10.78.0.2 ;;
	*) DEV_A=viw_a DEV_B=viw_b IP_B=10.77.0.2 ;;
	esac
	if [ -e "$knob" ]; then
		case $1 in
		viwpoll) echo "${FP_POLL_US:-1000}" >"$knob" ;;
		viw) echo 0 >"$knob" ;;
		esac
	fi
}

res=$VIW_OUT/results
# perf_try ...: perf_once on the next port, a try of perftest_retrying.
perf_try() {
	PERF_PORT=$((PERF_PORT + 1))
	perf_once "$@"
}
PERF_PORT=19000
: >"$res"
# one TEST SIZE ITERS COLUMN: a run on each RNIC, the figure in COLUMN of
# the result line appended to $res as "TEST-SIZE RNIC VALUE".
one() {
	local test=$1 size=$2 iters=$3 col=$4 dev line
	for dev in $rnics; do
		use "$dev"
		PERF_TAG=-$dev
		# a port of its own: a listener left behind by a run that
		# failed cannot refuse the next one
		PERF_PORT=$((PERF_PORT + 10))
		line=$(perftest_retrying "$VIW_OUT/$test-$dev-$size" \
			perf_try "$test" "$size" "$iters") || {
			in_b ss -Hltn >&2
			cat /sys/kernel/debug/viw/ceps >&2
			die "$test $dev $size failed"
		}
		echo "$test-$size $dev $(echo "$line" | awk -v c="$col" '{ print $c }')" >>"$res"
	done
}

for r in $(seq "$reps"); do
	log "repetition $r"
	one ib_send_lat 64 2000 5	# t_typical, us
	one ib_write_lat 64 2000 5
	one ib_write_bw 65536 1000 4	# BW average, MB/s
	one ib_write_bw 4096 5000 4
done

# syscalls ITERS: system calls of the client of ib_write_bw 4 KiB.
syscalls() {
	local n=$1 spid out=$VIW_OUT/strace-$dev-$1 port
	port=$((20000 + RANDOM % 10000))	# runs in a subshell: a fresh port
	in_b timeout 120 taskset -c 1 ib_write_bw -R -p "$port" -d "$DEV_B" -s 4096 \
		-n "$n" </dev/null >"$out.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" "$port"
	in_a timeout 300 strace -c -f -o "$out.strace" taskset -c 0 ib_write_bw -R \
		-p "$port" -d "$DEV_A" -s 4096 -n "$n" "$IP_B" </dev/null >"$out.client" 2>&1 ||
		{ stop_server "$spid"; wait "$spid" || true; return 1; }
	wait "$spid" || true
	awk '$NF == "total" { print $3 }' "$out.strace"
}
for dev in $rnics; do
	use "$dev"
	lo=$(syscalls 2000) && hi=$(syscalls 12000) &&
		echo "syscalls/WR $dev $(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.3f", (b - a) / 10000 }')" >>"$res" ||
		log "strace run on $dev failed"
done

log "results (median of $reps, MB/s or us; ratios against siw):"
awk -v rnics="$rnics" '
$1 == "syscalls/WR" { sc[$2] = $3; next }
{ v[$1, $2] = v[$1, $2] " " $3; keys[$1] = 1 }
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	nr = split(rnics, r, " ")
	for (k in keys) {
		ms = median(v[k, "siw"])
		for (i = 1; i <= nr; i++) {
			m = median(v[k, r[i]])
			printf "%-20s %-8s median %8.2f  /siw %5.2f  runs:%s\n", k, r[i], m, ms ? m / ms : 0, v[k, r[i]]
		}
	}
	for (d in sc)
		printf "syscalls per WR (ib_write_bw 4 KiB client) %-8s %s\n", d, sc[d]
}' "$res" | sort | tee "$VIW_OUT/table"
