#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 120
#
# Self test of the VM harness with Linux's own rdma_rxe (needs no viw code):
# two namespaces joined by a veth pair, one rxe device on each end, both
# visible to libibverbs, ports active.
. "$(dirname "$0")/../lib.sh"

# Independent of viw's code: libibverbs finds rxe's provider on its own.
unset RDMAV_DRIVERS

make_two_hosts rxe
run rdma link show
out=$(run ibv_devices)
echo "$out"
for d in "$DEV_A" "$DEV_B"; do
	grep -qw "$d" <<<"$out" || die "ibv_devices does not list $d"
done
out=$(run ibv_devinfo -d "$DEV_A")
echo "$out"
grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" || die "$DEV_A port not active"

# No traffic test: in Linux 6.1, rxe's UDP tunnel socket lives in the
# initial network namespace only, so rxe cannot connect across namespaces.
log "harness ok"

# libviw loaded next to devices of other drivers must leave them alone
# (regression: libibverbs walks every provider's match table).
out=$(run env RDMAV_DRIVERS="$VIW_PROVIDER" ibv_devices)
echo "$out"
for d in "$DEV_A" "$DEV_B"; do
	grep -qw "$d" <<<"$out" || die "with libviw loaded, ibv_devices lost $d"
done
log "libviw leaves rxe devices alone"

# The stall watcher that guards every perftest -R and interop pair
# (run_watched): a connection on its port whose bytes stay unread ends the
# watched command well before its time-out, and the report names the
# connection and keeps what both hosts showed.  Here a plain TCP server
# in b accepts and never reads, and the watched client in a sends 64 KiB
# and waits.
watch_port=18600
watch_out=$VIW_OUT/watch-selftest.unread
in_b timeout 60 python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
conn, _ = s.accept()
time.sleep(60)' "$IP_B" "$watch_port" &
watch_server=$!
wait_listen "$NS_B" "$watch_port"
watch_start=$SECONDS
watch_rc=0
run_watched "$watch_port" "$watch_out" in_a timeout 60 python3 -c '
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
c.sendall(b"x" * 65536)
time.sleep(60)' "$IP_B" "$watch_port" || watch_rc=$?
watch_took=$((SECONDS - watch_start))
kill "$watch_server" 2>/dev/null || true
wait "$watch_server" 2>/dev/null || true
unread_report "$watch_out" watch-selftest 2>&1
[ "$watch_rc" != 0 ] || die "the watcher let a client with an unread connection run to its end"
[ "$watch_took" -lt 30 ] || die "the watcher ended the client only after $watch_took s"
grep -Eq "^$NS_B [1-9][0-9]* $IP_B(%[^:]*)?:$watch_port " "$watch_out" ||
	die "the watcher did not name b's unread connection: $(cat "$watch_out" 2>/dev/null)"
for look in first "2 s later"; do
	grep -A4 "^== $NS_B, $look: ss -tnie, port $watch_port" "$watch_out.state" |
		grep -q "bytes_received:" ||
		die "the stall's state lacks b's socket details ($look)"
done
log "the stall watcher ended a client whose connection stayed unread, after $watch_took s"
