#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 400
#
# TERMINATE handling of viw's receive engine, against the raw peer
# (tests/tools/viw_peer in namespace a; tests/functional/viw_target, the
# viw side, in b):
#   - issue 8 item 10: after the peer's first TERMINATE nothing more is
#     parsed: more TERMINATEs raise no more async events, and a WRITE to a
#     valid STag behind them is not placed;
#   - item 16: a TERMINATE that arrives between the segments of a SEND
#     does not land in the receive buffer that SEND is filling, and viw
#     reports exactly the cause the peer sent;
#   - item 16a: every TERMINATE viw sends carries the layer, type and code
#     of RFC 5040/5041 for the error it found (one connection per error).
. "$(dirname "$0")/../lib.sh"

need_peer_tools

make_two_hosts viw


# count FILE ERE: how many lines match.
count() {
	grep -Ec -- "$2" "$1" || true
}

# The kernel log from here on, into $VIW_OUT/NAME.dmesg.
DMESG_MARK=0
dmesg_mark() {
	DMESG_MARK=$(dmesg | wc -l)
}
dmesg_since() {
	dmesg | tail -n +"$((DMESG_MARK + 1))" >"$VIW_OUT/$1.dmesg"
	echo "$VIW_OUT/$1.dmesg"
}

PORT=7400
# conn NAME "TARGET OPTIONS" [-i INFO] PEER_STEPS...: one connection, viw
# listening in b on $PORT, the peer connecting from a and running the steps after
# the MPA exchange.  Leaves $VIW_OUT/NAME.{peer,target}; returns the
# peer's exit status (the target must end cleanly).
conn() {
	local name=$1 topts=$2 info tlog plog tpid rc=0
	shift 2
	info=$VIW_OUT/$name.info
	tlog=$VIW_OUT/$name.target
	plog=$VIW_OUT/$name.peer
	rm -f "$info"
	# shellcheck disable=SC2086 # topts is a list of options
	in_b "$TARGET" -s "$IP_B" "$PORT" --mr-size 8192 --info "$info" \
		--run 30 --until-disconnect $topts >"$tlog" 2>&1 &
	tpid=$!
	wait_listen "$NS_B" "$PORT"
	if [ "${1:-}" = -i ]; then
		info=$2
		shift 2
	fi
	in_a "$PEER" -t 30 -i "$info" -c "$IP_B:$PORT" "$@" >"$plog" 2>&1 ||
		rc=$?
	wait "$tpid" || die "$name: viw_target failed: $(tail -3 "$tlog")"
	sed "s/^/$name.peer: /" "$plog"
	sed "s/^/$name.target: /" "$tlog"
	return "$rc"
}

MPA=(mpa-req expect-rep:reject=0)

# try NAME CMD...: run one case in a subshell; a failure (die) is counted
# and the next case runs, so that one run shows every case that fails.
FAILED=()
try() {
	local name=$1
	shift
	PORT=$((PORT + 1))
	("$@") || FAILED+=("$name")
}

# ---- item 10: the stream ends with the first TERMINATE -------------------
after_term() {
	local d t

	dmesg_mark
	conn after-term "--recv 2" "${MPA[@]}" send:len=100 \
		term:layer=0,type=2,code=6 term:layer=0,type=2,code=6 \
		term:layer=1,type=2,code=3 term:layer=0,type=1,code=0 \
		term:layer=0,type=2,code=6 \
		write:stag=@STAG,to=@ADDR,len=200 \
		expect-close:secs=15 || die "after-term: peer failed"
	d=$(dmesg_since after-term)
	t=$VIW_OUT/after-term.target
	has "$t" '^WC opcode RECV status SUCCESS len 100$'
	[ "$(count "$t" '^ASYNC ')" = 1 ] ||
		die "after-term: $(count "$t" '^ASYNC ') async events, not 1"
	has "$t" '^ASYNC QP_FATAL$'
	has "$t" '^MR UNCHANGED$'
	has "$t" '^QPSTATE ERR$'
	[ "$(count "$d" 'peer TERMINATE')" = 1 ] ||
		die "after-term: $(count "$d" 'peer TERMINATE') TERMINATEs taken, not 1"
	has "$d" 'peer TERMINATE layer 0 type 2 code 6$'
	log "after-term: one TERMINATE taken, one async event, WRITE not placed"
}
try after-term after_term

# ---- item 16: a TERMINATE between the segments of a SEND -----------------
# TERMINATE (QN 2, MSN 1) from the peer: layer 1 (DDP), type 2 (untagged),
# code 5, with M and D set: a 2-byte length and an untagged DDP header
# follow, 20 bytes of 0x5a in all.
Z4=00000000
TERM_MD=4147${Z4}000000020000000100000000""1205c000
# term-mid-send NAME RECV_SIZE SEND_LEN: viw's READ is outstanding, the
# peer sends the first SEND_LEN bytes of a longer SEND (L=0), then the
# TERMINATE.
term_mid_send() {
	local name=$1 rsize=$2 slen=$3 d t

	dmesg_mark
	conn "$name" "--recv 1 --recv-size $rsize --read 64 --show-recv" \
		"${MPA[@]}" read-fpdus:count=1,secs=10 \
		"send:len=$slen,last=0" \
		"fpdu-raw:hdr=$TERM_MD,len=20,fill=0x5a" \
		expect-close:secs=15 || die "$name: peer failed"
	d=$(dmesg_since "$name")
	t=$VIW_OUT/$name.target
	# the cause the peer sent, to the log, the async event and the WR
	has "$d" 'peer TERMINATE layer 1 type 2 code 5$'
	hasnt "$d" 'TERMINATE layer .* sent$'
	has "$t" '^ASYNC QP_FATAL$'
	has "$t" '^WC opcode RDMA_READ status REM_INV_REQ_ERR '
	# the receive buffer: the SEND's bytes, then what was there before
	has "$t" "^RECVBUF 0 0\\.\\.$slen 0xa5 $slen\\.\\.$rsize 0x33\$"
	log "$name: TERMINATE cause 1/2/5 reported, receive buffer intact"
}
try mid-send term_mid_send mid-send 4096 100
# A body larger than the space left in the WQE: the old code failed the
# copy and sent a TERMINATE of its own with a stale cause.
try mid-send-small term_mid_send mid-send-small 16 8

# ---- item 16a: the cause of every TERMINATE viw sends --------------------
# A second connection on b, held open, whose MR belongs to another PD.
OTHER_INFO=$VIW_OUT/other.info
rm -f "$OTHER_INFO"
in_b "$TARGET" -s "$IP_B" 7399 --mr-size 8192 --info "$OTHER_INFO" \
	--run 300 --until-disconnect >"$VIW_OUT/other.target" 2>&1 &
OTHER_TARGET=$!
wait_listen "$NS_B" 7399
in_a "$PEER" -t 300 -c "$IP_B:7399" "${MPA[@]}" hold \
	>"$VIW_OUT/other.peer" 2>&1 &
OTHER_PEER=$!
wait_for 10 test -s "$OTHER_INFO" || die "other connection not up"

# expect NAME L/T/C "TARGET OPTIONS" [-i INFO] STEPS...: the peer's steps
# make viw send a TERMINATE with layer L, type T, code C, and viw logs it
# as sent.
expect() {
	try "$1" expect_case "$@"
}
expect_case() {
	local name=$1 ltc=$2 topts=$3 l t c d
	shift 3
	IFS=/ read -r l t c <<<"$ltc"
	dmesg_mark
	conn "$name" "$topts" "$@" \
		"expect-term:layer=$l,type=$t,code=$c,secs=10" \
		expect-close:secs=15 ||
		die "$name: no TERMINATE $ltc: $(grep -E '^(TERMINATE|FAIL)' \
			"$VIW_OUT/$name.peer" | head -2 | tr '\n' ' ')"
	d=$(dmesg_since "$name")
	has "$d" "TERMINATE layer $l type $t code $c sent\$"
	has "$VIW_OUT/$name.target" '^QPSTATE ERR$'
	log "$name: TERMINATE $ltc"
}

W=("write:stag=@STAG,to=@ADDR,len=64")
RR=read-req:len=64,src_stag=@STAG,src_to=@ADDR
# Untagged header (SEND, QN 0, MSN 1, MO 0) and tagged header, by their
# two control bytes.
UNTAGGED_TAIL=$Z4${Z4}00000001$Z4
TAGGED_TAIL=00001234$Z4$Z4
# a Read Request header (QN 1, MSN 1) and its body: sink STag 0x77, size 0
RREQ=4141${Z4}0000000100000001$Z4""00000077$Z4$Z4$Z4$Z4$Z4$Z4

# DDP tagged buffer errors (RFC 5041): layer 1, type 1
expect write-bad-stag 1/1/0 "" "${MPA[@]}" write:stag=@STAG+1,to=@ADDR,len=64
expect write-other-pd 1/1/2 "" -i "$OTHER_INFO" "${MPA[@]}" "${W[@]}"
expect write-bounds 1/1/1 "" "${MPA[@]}" write:stag=@STAG,to=@ADDR+8000,len=400
expect write-to-wrap 1/1/3 "" "${MPA[@]}" \
	write:stag=@STAG,to=0xffffffffffffff00,len=512
expect write-ddp-version 1/1/4 "" "${MPA[@]}" \
	"fpdu-raw:hdr=c240$TAGGED_TAIL,len=16"
expect read-resp-unasked 1/1/0 "" "${MPA[@]}" read-resp:stag=0x77,to=0,len=16
# RDMAP remote protection errors (RFC 5040): layer 0, type 1
expect write-access 0/1/2 "--mr-access r" "${MPA[@]}" "${W[@]}"
expect read-bad-stag 0/1/0 "" "${MPA[@]}" \
	read-req:len=64,src_stag=@STAG+1,src_to=@ADDR
expect read-other-pd 0/1/3 "" -i "$OTHER_INFO" "${MPA[@]}" "$RR"
expect read-access 0/1/2 "--mr-access w" "${MPA[@]}" "$RR"
expect read-bounds 0/1/1 "" "${MPA[@]}" \
	read-req:len=200,src_stag=@STAG,src_to=@ADDR+8100
expect read-to-wrap 0/1/4 "" "${MPA[@]}" \
	read-req:len=512,src_stag=@STAG,src_to=0xffffffffffffff00
# RDMAP remote operation errors: layer 0, type 2
expect rdmap-version 0/2/5 "--recv 1" "${MPA[@]}" \
	"fpdu-raw:hdr=4183$UNTAGGED_TAIL,len=16"
expect bad-opcode 0/2/6 "--recv 1" "${MPA[@]}" \
	"fpdu-raw:hdr=4148$UNTAGGED_TAIL,len=16"
expect tagged-send 0/2/6 "--recv 1" "${MPA[@]}" \
	"fpdu-raw:hdr=c143$TAGGED_TAIL,len=16"
# DDP untagged buffer errors: layer 1, type 2
expect send-ddp-version 1/2/6 "--recv 1" "${MPA[@]}" \
	"fpdu-raw:hdr=4243$UNTAGGED_TAIL,len=16"
expect send-bad-qn 1/2/1 "--recv 1" "${MPA[@]}" send:len=16,qn=5
expect send-no-buffer 1/2/2 "--recv 0" "${MPA[@]}" send:len=16
expect send-msn 1/2/3 "--recv 1" "${MPA[@]}" send:len=16,msn=5
expect read-msn 1/2/3 "" "${MPA[@]}" "$RR,msn=9"
expect send-mo 1/2/4 "--recv 1" "${MPA[@]}" send:len=16,mo=100
expect send-too-long 1/2/5 "--recv 1 --recv-size 64" "${MPA[@]}" send:len=100
# MPA (RFC 5044, RFC 6581): layer 2
expect mpa-crc 2/0/2 "--recv 1" mpa-req:crc=1 expect-rep:reject=0,crc=1 \
	send:len=16,crc=bad
# a ULPDU shorter than its own header (the rest of the header read from
# what follows)
expect short-ulpdu 2/0/3 "--recv 1" "${MPA[@]}" \
	"fpdu-raw:hdr=4143$Z4$Z4" garbage:16
# a Read Request with payload after its 28-byte body
expect read-req-payload 2/0/3 "" "${MPA[@]}" \
	"fpdu-raw:hdr=$RREQ,len=4"
# RFC 6581 peer-to-peer: viw, the responder, waits for the RTR it chose
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo 1 >/sys/kernel/debug/viw/mpa_p2p
expect rtr-mismatch 2/0/7 "--recv 1" mpa-req:rtr=write \
	expect-rep:reject=0,p2p=1,rtr=write send:len=16
echo 0 >/sys/kernel/debug/viw/mpa_p2p

# RFC 7306 atomics (docs/semantics.md §9).  A refused Atomic Request
# leaves the MR as it was; a valid one is answered with the original value.
A="atomic-req:stag=@STAG,to=@ADDR"
expect_atomic() {
	try "$1" expect_atomic_case "$@"
}
expect_atomic_case() {
	expect_case "$@"
	has "$VIW_OUT/$1.target" '^MR UNCHANGED$'
}
expect_atomic atomic-bad-stag 0/1/0 "--mr-access rwa" "${MPA[@]}" \
	atomic-req:stag=@STAG+1,to=@ADDR
expect_atomic atomic-other-pd 0/1/3 "--mr-access rwa" -i "$OTHER_INFO" \
	"${MPA[@]}" "$A"
expect_atomic atomic-access 0/1/2 "" "${MPA[@]}" "$A"
expect_atomic atomic-bounds 0/1/1 "--mr-access rwa" "${MPA[@]}" \
	atomic-req:stag=@STAG,to=@ADDR+8192
expect_atomic atomic-to-wrap 0/1/4 "--mr-access rwa" "${MPA[@]}" \
	atomic-req:stag=@STAG,to=0xfffffffffffffffc
expect_atomic atomic-unaligned 0/1/1 "--mr-access rwa" "${MPA[@]}" \
	atomic-req:stag=@STAG,to=@ADDR+4
expect_atomic atomic-bad-op 0/2/6 "--mr-access rwa" "${MPA[@]}" "$A,op=1"
expect_atomic atomic-msn 1/2/3 "--mr-access rwa" "${MPA[@]}" "$A,msn=9"
# an Atomic Request with payload after its 52-byte body
AREQ=414a${Z4}0000000100000001$Z4
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13; do AREQ+=$Z4; done
expect atomic-req-payload 2/0/3 "--mr-access rwa" "${MPA[@]}" \
	"fpdu-raw:hdr=$AREQ,len=4"
# an Atomic Response for an atomic viw never sent
expect atomic-resp-unasked 0/2/6 "" "${MPA[@]}" atomic-resp:id=7

# A valid FetchAdd of 5 on the MR's bytes 8..15 (viw_target's pattern,
# 0x3b 0x42 .. 0x6c, as a little-endian word): the response carries that
# word, and the add changed its low byte only.
atomic_ok() {
	conn atomic-ok "--mr-access rwa" "${MPA[@]}" \
		atomic-req:stag=@STAG,to=@ADDR+8,add=5,id=42 \
		read-fpdus:count=1,secs=10 close || die "atomic-ok: peer failed"
	has "$VIW_OUT/atomic-ok.peer" \
		'^FPDU ATOMIC_RESP msn 1 id 42 orig 0x6c655e575049423b$'
	has "$VIW_OUT/atomic-ok.target" '^MR CHANGED 8\.\.9$'
	log "atomic-ok: FetchAdd answered with the original value"
}
try atomic-ok atomic_ok

# The transmit engine is busy (READ responses through a small window) when
# the error is found: the TERMINATE follows the FPDU being sent.
BUSY=(rcvbuf:4096 "${MPA[@]}")
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
	BUSY+=("read-req:len=8192,src_stag=@STAG,src_to=@ADDR")
done
expect busy-tx 1/1/0 "" "${BUSY[@]}" \
	write:stag=@STAG+1,to=@ADDR,len=64

# (in_a runs viw_peer as a child of the background subshell)
pkill -P "$OTHER_PEER" 2>/dev/null || true
wait "$OTHER_PEER" 2>/dev/null || true
wait "$OTHER_TARGET" 2>/dev/null || true
[ ${#FAILED[@]} = 0 ] || die "${#FAILED[@]} case(s) failed: ${FAILED[*]}"
log "every TERMINATE cause as RFC 5040/5041/5044/6581 define it"
