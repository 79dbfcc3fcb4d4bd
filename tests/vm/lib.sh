# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
#
# Helpers for guest test scripts (tests/vm/guest/*.sh); runs inside the VM.
#
#   . "$(dirname "$0")/../lib.sh"
#
# Sourcing it turns on "set -eEuo pipefail" with a trap that names the
# failing command and line, so a test stops at its first failing step.
# (". lib.sh --lenient" skips that, for cleanup code.)
#
# Environment (set by tests/vm/guest-runner from the host's tests/vm/run):
#   VIW_SRC    source tree          VIW_BUILD  build tree
#   VIW_TEST   test name            VIW_OUT    writable per-test directory
# The host root is mounted read-only: write only to $VIW_OUT, /tmp or /run.
#
# Main helpers:
#   load_rdma_core, load_viw, load_driver TYPE (viw, rxe, siw)
#   make_two_hosts [TYPE]  netns a/b, veth va/vb, 10.77.0.{1,2}/24,
#                          fd77::{1,2}/64, RDMA links TYPE_a and TYPE_b
#   in_a CMD..., in_b CMD...   run in namespace a / b
#   wait_for SECS CMD...       poll CMD until it succeeds or SECS pass
#   expect_fail CMD...         CMD must fail
#   expect_rmmod_in_use, viw_refs   rmmod refused while viw is in use
#   rping_pair, perf_pair, pingpong_pair   traffic between the two hosts
#   cleanup_hosts, unload_viw, vm_cleanup

if [ "${1:-}" != --lenient ]; then
	set -eEuo pipefail
	trap '_vm_err $? "$BASH_COMMAND" $LINENO' ERR
fi

# ERR trap: name the failing command and where it ran, innermost first.
_vm_err() {
	local rc=$1 cmd=$2 where i
	where="${BASH_SOURCE[1]##*/}:$3"
	for ((i = 1; i < ${#BASH_LINENO[@]} - 1; i++)); do
		where="$where <- ${BASH_SOURCE[i + 1]##*/}:${BASH_LINENO[i]}"
	done
	echo "FAIL: '$cmd' exited $rc at $where" >&2
}

: "${VIW_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${VIW_BUILD:=$VIW_SRC/build}"
: "${VIW_OUT:=/tmp}"
export VIW_SRC VIW_BUILD VIW_OUT

# The viw provider, loaded by libibverbs as $RDMAV_DRIVERS-rdmav34.so.  Only
# exported when built, so that rxe/siw-only tests do not get a load warning.
VIW_PROVIDER=$VIW_BUILD/lib/libviw
if [ -e "$VIW_PROVIDER-rdmav34.so" ]; then
	export RDMAV_DRIVERS=$VIW_PROVIDER
fi

# Addresses of the two hosts.
NS_A=a NS_B=b
IF_A=va IF_B=vb
IP_A=10.77.0.1 IP_B=10.77.0.2
IP6_A=fd77::1 IP6_B=fd77::2
export NS_A NS_B IF_A IF_B IP_A IP_B IP6_A IP6_B

# A static busybox the VM's /init leaves here (ping, dmesg -c, ...).
BUSYBOX=/run/vmtest/busybox
[ -x "$BUSYBOX" ] || BUSYBOX=busybox

_t0=$(cut -d' ' -f1 /proc/uptime)

# log MSG...: time-stamped progress line.
log() {
	local now
	now=$(cut -d' ' -f1 /proc/uptime)
	awk -v a="$_t0" -v b="$now" -v m="$*" 'BEGIN { printf "[%6.1fs] %s\n", b - a, m }'
}

# die MSG...: fail the test with MSG (tests/vm/run shows the first FAIL: line).
die() {
	echo "FAIL: $*" >&2
	exit 1
}

# skip MSG...: the test cannot run here (something it needs is missing):
# tests/vm/run reports it as SKIP, never as PASS, and ctest as not run.
# Call it only before the test has checked anything: nothing stops a
# later call from hiding a failed check behind SKIP.
skip() {
	echo "SKIP: $*"
	exit 77
}

# bad MSG...: a check failed; report it and go on.  For scripts that run
# many independent checks: checks_done then fails the test if any did.
failures=0
bad() {
	local name=${0##*/}
	echo "FAIL: ${name%.sh}: $*" >&2
	failures=$((failures + 1))
}

# checks_done: fail the test if a check reported with bad failed.
checks_done() {
	local name=${0##*/}
	[ "$failures" = 0 ] || die "$failures ${name%.sh} check(s) failed (see above)"
}

# run CMD...: echo then run, so the log shows what produced the output.
run() {
	echo "+ $*"
	"$@"
}

# expect_fail CMD...: CMD must exit non-zero and print something on
# stdout/stderr (an error message).  Its output is shown.
expect_fail() {
	local out rc=0
	echo "+ (expect failure) $*"
	out=$("$@" 2>&1) || rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /'
	[ "$rc" -ne 0 ] || die "expected failure but succeeded: $*"
	[ -n "$out" ] || die "failed without an error message: $*"
}

# wait_for SECS CMD...: poll CMD every 0.1 s until it succeeds; 1 on timeout.
wait_for() {
	local secs=$1 deadline now
	shift
	deadline=$(awk -v u="$(cut -d' ' -f1 /proc/uptime)" -v s="$secs" 'BEGIN { print u + s }')
	while ! "$@" >/dev/null 2>&1; do
		now=$(cut -d' ' -f1 /proc/uptime)
		if awk -v n="$now" -v d="$deadline" 'BEGIN { exit !(n > d) }'; then
			echo "wait_for: gave up after ${secs}s: $*" >&2
			return 1
		fi
		sleep 0.1
	done
}

# ended_within SECS PID: process PID is gone within SECS seconds.  A
# background job's PID stays usable until "wait PID" collects its status.
ended_within() {
	wait_for "$1" sh -c "! kill -0 $2 2>/dev/null"
}

# listening NS PORT: a TCP socket listens on PORT in namespace NS (viw's
# and siw's listeners are kernel sockets, which ss lists too).
listening() { ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# wait_listen NS PORT: wait until a server in NS listens on PORT, so that
# a client started next is not refused because the server is still
# starting (under TCG that can take longer than a fixed sleep).
wait_listen() {
	wait_for 30 listening "$1" "$2" || die "nothing listens on port $2 in namespace $1"
}

# perftest_clock_failed LOG...: perftest gave up because its cycle-counter
# calibration failed (a QEMU/TCG artefact, not an RDMA failure).
perftest_clock_failed() {
	grep -q "Can't produce a report" "$@" 2>/dev/null
}

# objects_zero DEV: every object count in viw's debugfs for DEV is 0
# (debugfs must be mounted).
objects_zero() {
	! awk '$2 != 0 { bad = 1 } END { exit !bad }' \
		"/sys/kernel/debug/viw/$1/objects"
}

# objects_of DEV: the object counts on one line, for a message.
objects_of() { tr '\n' ' ' <"/sys/kernel/debug/viw/$1/objects"; }

# ceps_zero: no live viw connection endpoint (debugfs viw/ceps, whose first
# line counts them) but each device's modify_qp listener (viw_direct.c).
ceps_zero() {
	awk 'NR == 1 { n = $1 } / direct-listener / { n-- } END { exit n != 0 }' \
		/sys/kernel/debug/viw/ceps
}

# viw_trace_on EVENT...: record these tracepoints of viw (docs/
# observability.md), mounting tracefs if need be; a test's failure path
# shows them with viw_trace_show.  Without tracefs it does nothing.
viw_trace_on() {
	local t=/sys/kernel/tracing e
	mountpoint -q "$t" || mount -t tracefs nodev "$t" 2>/dev/null || return 0
	for e; do
		echo 1 >"$t/events/viw/$e/enable" 2>/dev/null || true
	done
}

# viw_trace_clear: empty the trace, so that it shows only what follows.
viw_trace_clear() { : >/sys/kernel/tracing/trace 2>/dev/null || true; }

# viw_trace_show FILE: keep the trace in FILE and print its last 40 events.
viw_trace_show() {
	grep -v '^#' /sys/kernel/tracing/trace >"$1" 2>/dev/null || true
	tail -n 40 "$1" | cut -c1-200 | sed 's/^/    trace: /'
}

# rping_channel_race STATUS LOG: STATUS, the exit status of an rping whose
# output is in LOG, or 0 if it is only rping's own race at exit.  rping of
# rdma-core 44 (Debian 12) destroys its CM event channel while its CM
# thread may be about to read it again; that read fails ("rdma_get_cm_event:
# Bad file descriptor") and the thread exits the process with 255 in place
# of the run's own status (fixed upstream in 2025, rdma-core pull request
# 1622, "rping: Fix spurious failure return codes").  The caller must
# still check what the run did: that every ping completed.
rping_channel_race() {
	if [ "$1" = 255 ] &&
	   grep -q "^rdma_get_cm_event: Bad file descriptor$" "$2"; then
		echo "NOTE: ${2##*/}: rping's own race at exit (its CM thread read the channel it had destroyed)" >&2
		echo 0
	else
		echo "$1"
	fi
}

# rping_pair_status CSTATUS CLOG SSTATUS SLOG: the status of an rping pair,
# the client's (output in CLOG) or else the server's, each as
# rping_channel_race makes it.
rping_pair_status() {
	local rc
	rc=$(rping_channel_race "$1" "$2")
	[ "$rc" != 0 ] || rc=$(rping_channel_race "$3" "$4")
	echo "$rc"
}

# rping_pings LOG: how many pings an rping client with -v completed (-V
# verified each).
rping_pings() { grep -c "ping data" "$1" || true; }

# rping_pair ADDR SIZE COUNT: rping -V (every transfer verified), server in
# b, client in a; both must succeed (rping_channel_race aside).  The
# server must end within 30 s of its client: it ends on the DISCONNECT of
# the client's close.
rping_pair() {
	local addr=$1 size=$2 count=$3 spid rc=0 src=0 n

	in_b timeout 150 rping -s -a "$addr" -C "$count" -S "$size" -V </dev/null \
		>"$VIW_OUT/rping-s.log" 2>&1 &
	spid=$!
	wait_listen "$NS_B" 7174	# rping's port
	in_a timeout 60 rping -c -a "$addr" -C "$count" -S "$size" -V -v \
		</dev/null >"$VIW_OUT/rping-c.log" 2>&1 || rc=$?
	if ! ended_within 30 "$spid"; then
		echo "rping server still runs 30 s after its client (exit $rc):" >&2
		ps -o pid,stat,wchan:32,args -p "$(pgrep -d, rping)" >&2 || true
		[ "$rc" != 0 ] || rc=1
		stop_server "$spid"
	fi
	wait "$spid" || src=$?
	rc=$(rping_pair_status "$rc" "$VIW_OUT/rping-c.log" "$src" "$VIW_OUT/rping-s.log")
	if [ "$rc" != 0 ]; then
		cut -c1-200 "$VIW_OUT/rping-s.log" "$VIW_OUT/rping-c.log" >&2
		die "rping $addr size $size failed ($rc)"
	fi
	n=$(rping_pings "$VIW_OUT/rping-c.log")
	[ "$n" = "$count" ] ||
		die "rping $addr size $size: $n of $count pings completed"
	log "rping $addr size $size x$count ok"
}

# wait_unlisten NS PORT: wait until nothing listens on PORT in NS any
# more.  The listener of a server that just exited may outlive it for a
# moment; a client would then pass wait_listen on it and be refused.
wait_unlisten() {
	wait_for 30 sh -c "! ip netns exec '$1' ss -Hltn 'sport = :$2' | grep -q ." ||
		die "port $2 in namespace $1 still listens"
}

# stop_server PID: the client failed, and a server still waiting for it
# would wait out its timeout: give it 5 s to finish, then stop it.  PID is
# the background subshell of "in_b CMD &"; the server is its child
# (timeout, which passes the signal on), and would outlive the subshell.
stop_server() {
	ended_within 5 "$1" && return 0
	pkill -P "$1" 2>/dev/null || true
	kill "$1" 2>/dev/null || true
}

# unread_on_port NS PORT: the established TCP connections on PORT in NS
# (either end) that hold bytes not yet read, as "NS Recv-Q local peer".
# An RNIC's socket is read in its data_ready upcall, so its Recv-Q stays
# near 0 while the RNIC works.
unread_on_port() {
	ip netns exec "$1" ss -tnH state established "( sport = :$2 or dport = :$2 )" |
		awk -v ns="$1" '$1 > 0 { print ns, $1, $3, $4 }'
}

# unread_state PORT: what both hosts show of the connections on PORT, for
# a stall's report: each socket's details (ss -tnie: bytes received and
# acknowledged, retransmissions, the last send and receive), twice, 2 s
# apart, so that a stream that only crawls tells itself from one that
# stopped; then the RNICs' QPs and viw's connection endpoints.
unread_state() {
	local look ns
	for look in first "2 s later"; do
		[ "$look" = first ] || sleep 2
		for ns in "$NS_A" "$NS_B"; do
			echo "== $ns, $look: ss -tnie, port $1"
			# without its warning that it finds no cgroup2 mount
			ip netns exec "$ns" ss -tnie "( sport = :$1 or dport = :$1 )" 2>/dev/null
		done
	done
	echo "== rdma resource show qp"
	rdma resource show qp
	echo "== viw's connection endpoints"
	cat /sys/kernel/debug/viw/ceps
}

# watch_unread PORT PID OUT: while PID runs, look every 2 s at the RDMA
# connections on PORT in both namespaces.  When the same bytes stay unread
# on the same connections for three looks in a row, their RNIC has
# stopped reading its socket and nothing will wake it: the connections go
# to OUT (unread_on_port's lines), what unread_state shows to OUT.state,
# and PID is ended rather than left to wait out its time-out.  PID is the
# subshell of "CMD &", as for stop_server.  The first look waits 6 s, so
# that the many short runs share no CPU with it (each look starts two ip
# and two ss), and the clock calibration of perftest is disturbed as
# little as may be.
watch_unread() {
	local port=$1 pid=$2 out=$3 ns now last='' same=0
	sleep 4
	while sleep 2 && kill -0 "$pid" 2>/dev/null; do
		now=$(for ns in "$NS_A" "$NS_B"; do unread_on_port "$ns" "$port"; done) ||
			now=''
		if [ -n "$now" ] && [ "$now" = "$last" ]; then
			same=$((same + 1))
		else
			same=0
		fi
		last=$now
		if [ "$same" = 2 ]; then
			echo "$now" >"$out"
			unread_state "$port" >"$out.state" 2>&1 || true
			pkill -P "$pid" 2>/dev/null || true
			kill "$pid" 2>/dev/null || true
			return 0
		fi
	done
}

# run_watched PORT OUT CMD...: run CMD, the client of an RDMA connection
# on PORT, with watch_unread beside it; returns CMD's status.  OUT exists
# afterwards only if a connection stopped being read.
run_watched() {
	local port=$1 out=$2 cpid wpid rc=0
	shift 2
	rm -f "$out" "$out.state"
	"$@" &
	cpid=$!
	watch_unread "$port" "$cpid" "$out" &
	wpid=$!
	wait "$cpid" || rc=$?
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	return "$rc"
}

# RNIC_IN_NS[NS]: the type of the RDMA link add_link last put in NS.
declare -gA RNIC_IN_NS=()

# siw_accept_race OUT: every connection in watch_unread's OUT that stopped
# being read is siw's.  siw's passive side (siw_accept in siw_cm.c, Linux
# 6.1) sends its MPA reply first and only then points the
# socket's data_ready upcall at the QP.  Data that arrives in between
# wakes the CM's upcall, which ignores it in RDMA mode, and siw reads
# nothing until more data comes.  An active side that sends first after
# the reply (rping's client, perftest -R's key exchange) then waits for
# ever.  A host that stalls the siw CPU for a moment, as a loaded TCG host
# does, opens that window.  A stalled viw socket is never excused.
siw_accept_race() {
	local ns rest
	[ -s "$1" ] || return 1
	while read -r ns rest; do
		[ "${RNIC_IN_NS[$ns]:-}" = siw ] || return 1
	done <"$1"
}

# unread_report OUT NAME: say which connections stopped being read, and
# what their hosts showed then (OUT.state).
unread_report() {
	[ -s "$1" ] || return 0
	echo "$2: these connections stopped being read (namespace, unread bytes, local, peer):" >&2
	sed 's/^/    /' "$1" >&2
	[ -s "$1.state" ] || return 0
	echo "$2: what the hosts showed then:" >&2
	sed 's/^/    /' "$1.state" >&2
}

# perftest_credit_mr_leak TEST LOG: perftest before 23.07 (Debian 12 has
# 4.5-0.17) registers ib_send_bw's iWARP credit MR on every iWARP run but
# deregisters it only with rdma_cm, so without -R both sides end with
# "Failed to deallocate PD - Device or resource busy" and exit 1 after the
# test itself finished (upstream perftest ff1a84a, "Fix issue with PD
# deallocation").  True if that is the only thing that went wrong.
perftest_credit_mr_leak() {
	local side
	[ "$1" = ib_send_bw ] || return 1
	for side in server client; do
		grep -q "Failed to deallocate PD - Device or resource busy" "$2.$side" ||
			return 1
		[ "$(grep -Eci 'fail|error|couldn' "$2.$side")" = 2 ] || return 1
	done
	grep -Eq "^ *[0-9]+ +[0-9]+ " "$2.client" || return 1
	echo "NOTE: $1: perftest's own credit-MR leak at exit (fixed in perftest 23.07)"
}

# perf_once TEST SIZE ITERS [OPTION...]: perftest TEST between $DEV_B
# (server, in b) and $DEV_A (client, in a), over rdma_cm unless PERF_CONN
# says otherwise (e.g. PERF_CONN="-x 1": modify_qp with GID index 1);
# PERF_TAG names the logs apart, PERF_PORT sets the port (perftest's
# 18515 by default).  ITERS "-" gives no -n, for a run that says its own
# length (-D).  Returns non-zero if either side fails.
perf_once() {
	local test=$1 size=$2 iters=$3 spid rc=0 log n_opt=() watch=()
	local conn=${PERF_CONN--R} port=${PERF_PORT:-18515}
	shift 3
	[ "$iters" = - ] && iters='[0-9]+' || n_opt=(-n "$iters")
	log=$VIW_OUT/$test${PERF_TAG:-}-$size

	wait_unlisten "$NS_B" "$port"
	# Each side on its own CPU: TCG's per-CPU cycle counters are not in
	# step, and perftest calibrates against one.
	# shellcheck disable=SC2086 # $conn is a list of options
	in_b timeout 120 stdbuf -oL taskset -c 1 "$test" $conn -p "$port" -d "$DEV_B" \
		-s "$size" "${n_opt[@]}" "$@" </dev/null >"$log.server" 2>&1 &
	spid=$!
	wait_listen "$NS_B" "$port"
	# Only with -R is the port's connection the RDMA one; without it,
	# perftest's own TCP socket there may hold its peer's last message
	# unread for a while.
	rm -f "$log.unread" "$log.unread.state"
	if [ "$conn" = -R ]; then watch=(run_watched "$port" "$log.unread"); fi
	# shellcheck disable=SC2086
	"${watch[@]}" in_a timeout 120 stdbuf -oL taskset -c 0 "$test" $conn -p "$port" -d "$DEV_A" \
		-s "$size" "${n_opt[@]}" "$@" "$IP_B" </dev/null >"$log.client" 2>&1 || rc=$?
	[ "$rc" = 0 ] || stop_server "$spid"
	wait "$spid" || rc=$((rc ? rc : $?))
	[ "$rc" = 0 ] || perftest_credit_mr_leak "$test" "$log" || return "$rc"
	# the result line: size, iterations, then the figures
	grep -E "^ *$size +$iters " "$log.client"
}

# librdmacm_crashes: how many user-space crashes inside librdmacm the
# kernel logged.  perftest -R has a race of its own: its server accepts the
# control connection on the port, destroys that listener, and only then
# listens again for the data connection (perftest_communication.c,
# rdma_server_connect, then rdma_cm_server_connection).  A client that
# connects in between is refused (RDMA_CM_EVENT_REJECTED, -111, or on siw
# also "Connection refused" from rdma_connect), and perftest then crashes
# in librdmacm while it cleans up.  Under host load the window is wide
# enough to hit.
# The kernel reports the crash as "traps: ... general protection fault ...
# in librdmacm" or as "...: segfault at ADDR ... in librdmacm", by its kind.
librdmacm_crashes() { dmesg | grep -Ec '(traps: |: segfault at ).* in librdmacm' || true; }

# keep_failed_run LOG N: before a retry, keep the failed run's LOG.server,
# LOG.client, LOG.unread and LOG.unread.state as LOG.server.N and so on.
keep_failed_run() {
	local i
	for i in server client unread unread.state; do
		[ ! -e "$1.$i" ] || mv "$1.$i" "$1.$i.$2"
	done
}

# pair_retrying LOG CMD...: run CMD, a server/client pair (perftest's or
# rping's) that writes LOG.server and LOG.client, until it succeeds.
# Three failures that are not the RNIC's are retried, up to 5 runs in all,
# each matched by what it leaves behind:
# - perftest calibrates its cycle counter against the clock before it
#   reports; under QEMU/TCG the samples sometimes correlate too poorly
#   and perftest gives up ("Can't produce a report") after a successful
#   run (perftest_clock_failed);
# - perftest's listener race (librdmacm_crashes): the refusal and the
#   crash that follows it;
# - siw's accept race (siw_accept_race): the connection siw stopped
#   reading, which CMD found with run_watched.
# Each failed run's logs are kept as LOG.server.N, LOG.client.N and
# LOG.unread.N.
# With PERF_CLOCK_OK set, a run that failed only at the clock counts as
# done: perftest calibrates after its WRs ran, and a caller that wants
# only their side effects (a count of system calls) has them.
pair_retrying() {
	local log=$1 try crashes
	shift
	for try in 1 2 3 4 5; do
		[ "$try" = 1 ] || keep_failed_run "$log" "$((try - 1))"
		crashes=$(librdmacm_crashes)
		"$@" && return 0
		if perftest_clock_failed "$log.server" "$log.client"; then
			echo "NOTE: ${log##*/}: perftest could not calibrate its clock (run $try)"
			[ -z "${PERF_CLOCK_OK:-}" ] || return 0
		elif [ "$(librdmacm_crashes)" != "$crashes" ] &&
		     grep -Eq "RDMA_CM_EVENT_REJECTED; error: -111|ERRNO: Connection refused" "$log.client"; then
			echo "NOTE: ${log##*/}: perftest's own listener race: refused, then crashed in librdmacm (run $try)"
		elif siw_accept_race "$log.unread"; then
			echo "NOTE: ${log##*/}: siw's accept race: siw left the first message unread (run $try)"
		else
			break
		fi
	done
	unread_report "$log.unread" "${log##*/}"
	tail -n 20 "$log.server" "$log.client" | cut -c1-200 >&2
	return 1
}

# perf_pair TEST SIZE ITERS [OPTION...]: perf_once, which must succeed
# (retried as pair_retrying says).
perf_pair() {
	pair_retrying "$VIW_OUT/$1${PERF_TAG:-}-$2" perf_once "$@" ||
		die "$1${PERF_CONN:+ $PERF_CONN} size $2 failed"
}

# pingpong_pair TOOL SERVER_NS CLIENT_NS GID [OPTION...]: one run of an
# ibv_*_pingpong TOOL (a connection made by modify_qp) between $DEV_A and
# $DEV_B, the server in SERVER_NS (a or b); both sides must pass within
# 60 s.  Prints the client's "bytes in" and "iters in" lines.
pingpong_pair() {
	local tool=$1 sns=$2 cns=$3 gidx=$4 sdev cdev saddr spid rc=0 tag
	shift 4
	tag="$tool-$sns$cns-g$gidx$(echo "$@" | tr -d ' ')"
	if [ "$sns" = a ]; then sdev=$DEV_A cdev=$DEV_B saddr=$IP_A
	else sdev=$DEV_B cdev=$DEV_A saddr=$IP_B; fi
	ip netns exec "$sns" timeout 60 "$tool" -d "$sdev" -g "$gidx" "$@" \
		</dev/null >"$VIW_OUT/$tag.server" 2>&1 &
	spid=$!
	wait_listen "$sns" 18515
	ip netns exec "$cns" timeout 60 "$tool" -d "$cdev" -g "$gidx" "$@" "$saddr" \
		</dev/null >"$VIW_OUT/$tag.client" 2>&1 || rc=$?
	wait "$spid" || rc=$((rc ? rc : $?))
	if [ "$rc" != 0 ]; then
		# The tools' errors go to stderr at once, their other lines to
		# stdout at exit: an error sits above the address lines.
		local side
		for side in server client; do
			echo "---- $tool's $side, its address lines left out:" >&2
			grep -v "address:" "$VIW_OUT/$tag.$side" >&2 || true
		done
		die "$tool $* (server $sns, GID $gidx) failed: $rc"
	fi
	grep -hE "(bytes|iters) in" "$VIW_OUT/$tag.client"
}

# port_counter DEV NAME: a port counter of DEV, as "rdma statistic" shows
# it ("link DEV/1 name value name value ..."); fails if DEV has none NAME.
port_counter() {
	rdma statistic show link "$1/1" |
		awk -v n="$2" '{ for (i = 3; i < NF; i += 2) if ($i == n) { print $(i + 1); f = 1 } }
			END { exit !f }'
}

in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }

ib_dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
ib_dev_gone() { [ ! -e "/sys/class/infiniband/$1" ]; }
module_loaded() { [ -d "/sys/module/$1" ]; }

# load_rdma_core: the RDMA core modules (from the shared root) and veth.
load_rdma_core() {
	local m
	for m in ib_core libcrc32c iw_cm ib_uverbs rdma_cm rdma_ucm veth; do
		module_loaded "$m" || modprobe "$m" || die "modprobe $m failed"
	done
}

# nvmet_rdma_port PORT_DIR SUBSYS_DIR IP: an nvmet RDMA port on IP:4420
# (configfs mounted) exporting the subsystem; dies if it cannot listen.
nvmet_rdma_port() {
	local port=$1 sub=$2 ip=$3
	mkdir "$port"
	echo rdma >"$port/addr_trtype"
	echo ipv4 >"$port/addr_adrfam"
	echo "$ip" >"$port/addr_traddr"
	echo 4420 >"$port/addr_trsvcid"
	ln -s "$sub" "$port/subsystems/${sub##*/}" || die "nvmet-rdma cannot listen on $ip"
}

# load_viw: load the freshly built $VIW_BUILD/kernel/viw.ko (reloading it if
# an older copy is loaded).  VIW_KO names another module file instead: a
# build of older code, to show that a new test fails on it
# (tests/vm/run --env VIW_KO=/path/to/old/viw.ko SCRIPT).
load_viw() {
	local ko=${VIW_KO:-$VIW_BUILD/kernel/viw.ko}
	[ -f "$ko" ] || die "$ko not built"
	load_rdma_core
	module_loaded viw && unload_viw
	run insmod "$ko" || die "insmod viw.ko failed"
	module_loaded viw || die "viw not in /sys/module after insmod"
}

# unload_viw: rmmod viw, retrying for a few seconds while references drain.
unload_viw() {
	module_loaded viw || return 0
	wait_for 10 rmmod viw || die "rmmod viw failed: $(rmmod viw 2>&1)"
	echo "+ rmmod viw: done"
}

# viw_refs: viw's module reference count.  viw holds one for each user
# context and each kernel PD (viw_verbs.c); nothing else does but, for a
# moment, an open debugfs file.
viw_refs() {
	if module_loaded viw; then
		cat /sys/module/viw/refcnt
	else
		echo "(viw not loaded)"
	fi
}

# viw_refs_are N: viw's module reference count is N.
viw_refs_are() { [ "$(viw_refs)" = "$1" ]; }

# expect_rmmod_in_use: viw is in use, so rmmod must refuse it ("in use",
# a non-zero exit, within a bound) and leave it loaded.
expect_rmmod_in_use() {
	local out rc=0
	echo "+ (expect 'in use') rmmod viw"
	out=$(timeout 60 rmmod viw 2>&1) || rc=$?
	echo "    $out (exit $rc, references: $(viw_refs))"
	[ "$rc" != 124 ] || die "rmmod viw hung while viw was in use"
	[ "$rc" != 0 ] || die "rmmod viw succeeded while viw was in use"
	case $out in
	*"in use"*) ;;
	*) die "rmmod viw failed, but not with 'in use': $out" ;;
	esac
	module_loaded viw || die "viw is gone though rmmod failed"
}

# load_siw: Linux's siw built from Debian's linux-source by scripts/build-siw
# (Debian's kernels do not ship it).
load_siw() {
	local ko=$VIW_BUILD/siw/siw.ko
	[ -f "$ko" ] || die "$ko not built (run scripts/build-siw $VIW_BUILD)"
	load_rdma_core
	module_loaded siw || run insmod "$ko" || die "insmod siw.ko failed"
}

# load_driver TYPE: make "rdma link add ... type TYPE" possible.
load_driver() {
	case $1 in
	viw) module_loaded viw || load_viw ;;
	siw) load_siw ;;
	rxe) load_rdma_core; modprobe rdma_rxe ;;
	*) die "unknown RDMA link type $1" ;;
	esac
}

# make_netns_pair [--distinct-ifindex]: namespaces a and b joined by veth
# va <-> vb, with IPv4 and IPv6 addresses, links up.  No RDMA devices.
# --distinct-ifindex gives vb an ifindex that va does not have: siw binds a
# wildcard listener to its netdev's ifindex in the listener's namespace, so
# a siw device on va would otherwise collide there with one on vb.
make_netns_pair() {
	load_rdma_core
	ip netns add "$NS_A"
	ip netns add "$NS_B"
	[ "${1:-}" != --distinct-ifindex ] || ip -n "$NS_B" link add viwpad0 type dummy
	if [ "${VMTEST_LINK:-veth}" = pci ]; then
		move_pci_nics
	else
		ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B"
	fi
	in_a ip link set lo up
	in_b ip link set lo up
	in_a ip addr add "$IP_A/24" dev "$IF_A"
	in_b ip addr add "$IP_B/24" dev "$IF_B"
	in_a ip -6 addr add "$IP6_A/64" dev "$IF_A" nodad
	in_b ip -6 addr add "$IP6_B/64" dev "$IF_B" nodad
	in_a ip link set "$IF_A" up
	in_b ip link set "$IF_B" up
	wait_for 10 in_a "$BUSYBOX" ping -c1 -W1 "$IP_B" || die "no IPv4 connectivity a -> b"
}

# nic_by_mac MAC: the name of the netdev with that address.
nic_by_mac() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "$1" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

# move_pci_nics: instead of a veth pair, the VM's two virtio NICs (wired
# to each other by tests/vm/run), one into each namespace.  IF_A and IF_B
# become their names.
move_pci_nics() {
	modprobe virtio_net
	wait_for 10 nic_by_mac 52:54:00:77:00:02 >/dev/null || die "no virtio NICs"
	IF_A=$(nic_by_mac 52:54:00:77:00:01)
	IF_B=$(nic_by_mac 52:54:00:77:00:02)
	export IF_A IF_B
	ip link set "$IF_A" netns "$NS_A"
	ip link set "$IF_B" netns "$NS_B"
}

# add_link NS NAME TYPE NETDEV: rdma link add inside namespace NS and wait
# for the device to appear.
add_link() {
	local ns=$1 name=$2 type=$3 netdev=$4
	run ip netns exec "$ns" rdma link add "$name" type "$type" netdev "$netdev" ||
		die "rdma link add $name type $type netdev $netdev failed"
	wait_for 10 ib_dev_exists "$name" || die "device $name did not appear"
	RNIC_IN_NS[$ns]=$type
}

# add_link_pair TYPE: devices TYPE_a on IF_A in NS_A and TYPE_b on IF_B
# in NS_B.  Sets DEV_A and DEV_B.
add_link_pair() {
	DEV_A=$1_a
	DEV_B=$1_b
	export DEV_A DEV_B
	add_link "$NS_A" "$DEV_A" "$1" "$IF_A"
	add_link "$NS_B" "$DEV_B" "$1" "$IF_B"
}

# bench_link_pair MODULE BASE_KO: the benches' drivers by name: siw, viw
# (the build's) or base (viw of BASE_KO).  Loads it and makes its
# add_link_pair.
bench_link_pair() {
	case $1 in
	siw) load_siw; add_link_pair siw ;;
	viw) load_viw; add_link_pair viw ;;
	base) VIW_KO=$2 load_viw; add_link_pair viw ;;
	*) die "no driver $1" ;;
	esac
}

# delete_link_pair: delete DEV_A and DEV_B, and wait until both are gone.
delete_link_pair() {
	run rdma link delete "$DEV_A" || die "rdma link delete $DEV_A failed"
	run rdma link delete "$DEV_B" || die "rdma link delete $DEV_B failed"
	wait_for 10 ib_dev_gone "$DEV_A" || die "$DEV_A stayed"
	wait_for 10 ib_dev_gone "$DEV_B" || die "$DEV_B stayed"
}

# make_two_hosts [TYPE]: make_netns_pair plus devices TYPE_a on va and
# TYPE_b on vb (TYPE: viw (default), siw or rxe).  Sets DEV_A and DEV_B.
make_two_hosts() {
	local type=${1:-viw}
	load_driver "$type"
	make_netns_pair
	add_link_pair "$type"
	log "two hosts: $DEV_A on $IF_A ($IP_A) in ns $NS_A, $DEV_B on $IF_B ($IP_B) in ns $NS_B"
}

# make_init_host IP: viw_u on ua (IP/24), one end of a veth pair in the
# initial namespace, for kernel consumers, whose rdma_cm ids live there
# (kverbs-smoke.sh, kverbs.sh).  Loads viw and mounts debugfs.
make_init_host() {
	load_viw
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	ip link add ua type veth peer name ub
	ip addr add "$1/24" dev ua
	ip link set lo up
	ip link set ua up
	ip link set ub up
	run rdma link add viw_u type viw netdev ua || die "rdma link add failed"
	wait_for 10 ib_dev_exists viw_u || die "viw_u did not appear"
}

# cleanup_hosts: kill what runs in the namespaces, delete the RDMA links of
# the namespaces' netdevs and the namespaces (and with them the veth pair).
cleanup_hosts() {
	local ns pids dev rc=0
	for ns in "$NS_A" "$NS_B"; do
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		[ -n "$pids" ] && { kill -9 $pids 2>/dev/null || true; }
	done
	# The VM has no RDMA hardware: every device is a test's.  (Deleting the
	# namespaces below would remove them too, with their netdevs.)
	for dev in $(rdma link show 2>/dev/null | awk '$1 == "link" { sub("/.*", "", $2); print $2 }'); do
		rdma link delete "$dev" 2>/dev/null || true
	done
	for ns in "$NS_A" "$NS_B"; do
		[ -e "/run/netns/$ns" ] && { ip netns delete "$ns" || rc=1; }
	done
	for dev in /sys/class/infiniband/*; do
		[ -e "$dev" ] || continue
		wait_for 10 ib_dev_gone "${dev##*/}" || { echo "cleanup: ${dev##*/} still present" >&2; rc=1; }
	done
	return $rc
}

# vm_cleanup: run by the guest runner after every test.  Fails when viw.ko
# cannot be unloaded: every test must leave the module removable.
vm_cleanup() {
	local rc=0
	cleanup_hosts || rc=1
	if module_loaded viw; then
		if wait_for 10 rmmod viw; then
			echo "cleanup: rmmod viw ok"
		else
			echo "cleanup: rmmod viw failed: $(rmmod viw 2>&1)" >&2
			rc=1
		fi
	fi
	module_loaded siw && { rmmod siw || rc=1; }
	return $rc
}

# ---- raw-peer tests (tests/vm/README.md, "Raw-peer tests") ----------------

# The shared raw MPA peer and the viw-side program it talks to.
PEER=$VIW_BUILD/tests/tools/viw_peer
TARGET=$VIW_BUILD/tests/functional/viw_target

# need_peer_tools: fail the test unless both are built.
need_peer_tools() {
	[ -x "$PEER" ] || die "$PEER not built"
	[ -x "$TARGET" ] || die "$TARGET not built"
}

# has FILE ERE: some line of FILE matches; hasnt FILE ERE: none does.
has() {
	grep -Eq -- "$2" "$1" || die "${1##*/}: no line matching '$2'"
}
hasnt() {
	! grep -Eq -- "$2" "$1" ||
		die "${1##*/}: unexpected line: $(grep -E -- "$2" "$1" | head -1)"
}
