#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# Self test of the raw-peer tools (tests/tools/viw_peer, the raw TCP side,
# in namespace a; tests/functional/viw_target, the viw side, in b), using
# only behaviour that works on the current code:
#   - an MPA v2 exchange, without and with CRC;
#   - a SEND that completes at the target with its length and bytes;
#   - a WRITE to the target's advertised STag that changes exactly the
#     bytes written;
#   - READ requests answered with READ responses carrying the MR's bytes;
#   - a TERMINATE from the peer that the target sees as an async event and
#     an errored QP, and the stream closes;
#   - viw_peer -l answering viw_target -c (SEND, WRITE, READ from viw; the
#     peer answers the READ; rdma_disconnect gives the peer a FIN);
#   - rejects with private data, both ways; RFC 6581 RTR, both ways (viw's
#     mpa_p2p on); the same over IPv6.
. "$(dirname "$0")/../lib.sh"

need_peer_tools

make_two_hosts viw

# show NAME FILE...: the logs, prefixed, so a failure shows both sides.
show() {
	local f

	for f in "$@"; do
		sed "s/^/${f##*/}: /" "$f"
	done
}

# pair NAME WHAT LISTENER PORT: viw_target in b with the arguments in
# targ, viw_peer in a with those in parg; LISTENER (target or peer) starts
# first and listens on PORT.  Their lines go to $tlog and $plog
# (NAME.target, NAME.peer); both must succeed.
pair() {
	local name=$1 what=$2 listener=$3 port=$4 pid rc=0

	tlog=$VIW_OUT/$name.target
	plog=$VIW_OUT/$name.peer
	if [ "$listener" = target ]; then
		in_b "$TARGET" "${targ[@]}" >"$tlog" 2>&1 &
		pid=$!
		wait_listen "$NS_B" "$port"
		in_a "$PEER" "${parg[@]}" >"$plog" 2>&1 || rc=$?
	else
		in_a "$PEER" "${parg[@]}" >"$plog" 2>&1 &
		pid=$!
		wait_listen "$NS_A" "$port"
		in_b "$TARGET" "${targ[@]}" >"$tlog" 2>&1 || rc=$?
	fi
	wait "$pid" || rc=$((rc ? rc : 100 + $?))
	show "$plog" "$tlog"
	[ "$rc" = 0 ] || die "$what: peer or target failed ($rc)"
}

# peer_client NAME CRC PORT: viw_target listens in b; viw_peer connects
# from a with an MPA v2 request (CRC as given) and drives the data path.
peer_client() {
	local name=$1 crc=$2 port=$3 info tlog plog targ parg

	info=$VIW_OUT/$name.info
	rm -f "$info"
	targ=(-s "$IP_B" "$port" --mr-size 8192 --recv 4 --info "$info"
	      --run 60 --until-disconnect)
	parg=(-t 60 -P -i "$info" -c "$IP_B:$port"
	      "mpa-req:crc=$crc" "expect-rep:reject=0,crc=$crc,rev=2"
	      send:len=3000
	      write:stag=@STAG,to=@ADDR+100,len=200
	      read-req:len=64,src_stag=@STAG,src_to=@ADDR+4000,sink_stag=0x77,sink_to=4000,repeat=2
	      read-fpdus:count=2,secs=20
	      term:layer=0,type=2,code=6
	      expect-close:secs=20)
	pair "$name" "$name" target "$port"

	has "$plog" "^REPLY rev 2 crc $crc reject 0 "
	# both READs answered with the target's bytes (-P: MR pattern at TO)
	[ "$(grep -c '^FPDU READ_RESP stag 0x77 to 0xfa0 len 64 last 1 pattern ok$' "$plog")" = 2 ] ||
		die "$name: not two READ responses with the MR's bytes"
	has "$plog" '^SENT READ_REQ msn 2 '
	hasnt "$plog" 'badcrc|^FPDU BAD'
	has "$plog" '^CLOSED (fin|rst)$'
	has "$tlog" '^CM EVENT ESTABLISHED status 0$'
	has "$tlog" '^WC opcode RECV status SUCCESS len 3000$'
	has "$tlog" '^RECV DATA len 3000 fill 0xa5$'
	# exactly the 200 bytes written, nothing else
	has "$tlog" '^MR CHANGED 100\.\.300$'
	[ "$(grep -c '^MR CHANGED' "$tlog")" = 1 ] || die "$name: other MR bytes changed"
	# the peer's TERMINATE: an async event, the QP in error
	has "$tlog" '^ASYNC (QP_FATAL|QP_REQ_ERR|QP_ACCESS_ERR)$'
	has "$tlog" '^QPSTATE ERR$'
	has "$tlog" '^EXIT 0$'
	log "$name: MPA v2 crc $crc, SEND, WRITE, READ, TERMINATE ok"
}

# peer_server PORT: viw_peer listens in a and answers viw_target's MPA
# request; viw sends a SEND, a WRITE and a READ request, the peer answers
# the READ, and viw's rdma_disconnect reaches the peer as a FIN.
peer_server() {
	local port=$1 tlog plog targ parg

	parg=(-t 60 -l "$port" expect-req:rev=2 mpa-rep
	      read-fpdus:count=3,secs=20 read-resp:fill=0x5c
	      expect-close:secs=20)
	targ=(-c "$IP_A" "$port" --send 100 --write 200 --read 300
	      --rstag 0x4321 --rto 0x8000 --disconnect-after 3 --run 30
	      --until-disconnect)
	pair server peer-server peer "$port"

	has "$plog" '^REQUEST rev 2 crc [01] markers 0 '
	has "$plog" '^FPDU SEND qn 0 msn 1 mo 0 len 100 last 1 '
	has "$plog" '^FPDU WRITE stag 0x4321 to 0x8000 len 200 last 1$'
	has "$plog" '^FPDU READ_REQ msn 1 .* len 300 src_stag 0x4321 src_to 0x8000$'
	has "$plog" '^CLOSED fin$'
	has "$tlog" '^CM EVENT ESTABLISHED status 0$'
	has "$tlog" '^WC opcode SEND status SUCCESS '
	has "$tlog" '^WC opcode RDMA_WRITE status SUCCESS '
	has "$tlog" '^WC opcode RDMA_READ status SUCCESS '
	has "$tlog" '^READ DATA len 300 fill 0x5c$'
	has "$tlog" '^DISCONNECT rc 0$'
	has "$tlog" '^CM EVENT DISCONNECTED status 0$'
	has "$tlog" '^EXIT 0$'
	log "viw_peer -l answering viw_target -c ok"
}

# reject_both PORT: viw rejects the peer's request and the peer rejects
# viw's, each with private data that reaches the other side.
reject_both() {
	local port=$1 tlog plog targ parg

	targ=(-s "$IP_B" "$port" --reject --pdata 10 --run 20
	      --until-disconnect)
	parg=(-t 30 -c "$IP_B:$port" mpa-req:pd=20 expect-rep:reject=1
	      expect-close:secs=20)
	pair reject "reject by viw" target "$port"
	has "$tlog" '^CM PDATA len 20 6162636465666768696a6b6c6d6e6f7071727374$'
	has "$tlog" '^REJECT rc 0$'
	has "$plog" '^REPLY rev 2 crc 0 reject 1 pd 10 '
	has "$plog" '^PDATA 10 54545454545454545454$'

	parg=(-t 30 -l "$((port + 1))" expect-req:pd=5 mpa-rep:reject=1,pd=30
	      expect-close:secs=20)
	targ=(-c "$IP_A" "$((port + 1))" --pdata 5 --run 20 --until-disconnect)
	pair rejected "reject by the peer" peer "$((port + 1))"
	has "$plog" '^PDATA 5 5454545454$'
	has "$tlog" '^CM EVENT REJECTED status '
	has "$tlog" '^CM PDATA len 30 6162636465666768696a6b6c6d6e6f707172737475767778797a61626364$'
	log "rejects with private data, both ways, ok"
}

# p2p_both PORT: with viw's mpa_p2p on, the peer's RTR opens the passive
# side, and viw as initiator sends its RTR before anything else.
p2p_both() {
	local port=$1 tlog plog targ parg knob=/sys/kernel/debug/viw/mpa_p2p

	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	echo 1 >"$knob"
	targ=(-s "$IP_B" "$port" --recv 2 --run 20 --until-disconnect)
	parg=(-t 30 -c "$IP_B:$port" mpa-req:rtr=read+write expect-rep:p2p=1
	      rtr send:len=10 expect-open:secs=2 fin expect-close:secs=20)
	pair p2p "p2p, viw passive" target "$port"
	has "$plog" '^REPLY rev 2 crc 0 reject 0 pd 0 ird [0-9]+ ord [0-9]+ p2p 1 rtr (read|write)$'
	has "$tlog" '^CM EVENT ESTABLISHED status 0$'
	has "$tlog" '^WC opcode RECV status SUCCESS len 10$'

	parg=(-t 30 -l "$((port + 1))" expect-req:p2p=1 mpa-rep
	      read-fpdus:count=2,secs=20 expect-close:secs=20)
	targ=(-c "$IP_A" "$((port + 1))" --send 10 --disconnect-after 2
	      --run 20 --until-disconnect)
	pair p2p-active "p2p, viw active" peer "$((port + 1))"
	echo 0 >"$knob"
	# the RTR (zero-length WRITE: the peer picked write), then the SEND
	grep -A2 '^SENT MPA REP' "$plog" | sed -n 2p | grep -q '^FPDU WRITE stag 0x0 to 0x0 len 0 last 1$' ||
		die "p2p, viw active: the first FPDU is not the RTR"
	has "$plog" '^FPDU SEND qn 0 msn 1 mo 0 len 10 last 1 '
	has "$tlog" '^WC opcode SEND status SUCCESS '
	log "RFC 6581 RTR, both ways, ok"
}

# ipv6 PORT: the client case over IPv6 (viw_peer -6, [addr]:port).
ipv6() {
	local port=$1 tlog plog targ parg

	targ=(-s "$IP6_B" "$port" --recv 2 --run 20 --until-disconnect)
	parg=(-6 -t 30 -c "[$IP6_B]:$port" mpa-req:crc=1 expect-rep:crc=1
	      send:len=1500 expect-open:secs=2 fin expect-close:secs=20)
	pair ipv6 IPv6 target "$port"
	has "$plog" "^CONNECTED local $IP6_A port "
	has "$tlog" '^WC opcode RECV status SUCCESS len 1500$'
	log "IPv6 ok"
}

"$PEER" --help | grep -q '^usage: viw_peer' || die "viw_peer --help"
expect_fail "$PEER" -c "$IP_B:1" no-such-step

peer_client nocrc 0 7300
peer_client crc 1 7301
peer_server 7302
reject_both 7303
p2p_both 7305
ipv6 7307
