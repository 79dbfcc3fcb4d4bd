#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vmtest-timeout: 300
#
# RFC 7306 Immediate Data (docs/semantics.md, "Immediate data"):
# - between two viw devices (tests/functional/viw_imm.c pair): SEND and
#   WRITE with immediate, payload, imm_data, opcode and wc_flags, receive
#   WQEs consumed, ordering behind WRITEs, zero-length and inline forms,
#   the solicited event, no receive -> REM_INV_REQ_ERR;
# - on the wire, against the raw peer tests/tools/viw_peer speaking viw's
#   modify_qp private data: what viw sends for each, and the TERMINATE
#   each malformed or unwanted Immediate Data message gets;
# - a peer whose private data does not offer Immediate Data (a viw of
#   before) gets none: an immediate WR completes with LOC_QP_OP_ERR and
#   sends nothing, and an Immediate Data message from it is refused; so
#   does an rdma_cm connection (viw_target), even between two viw devices.
. "$(dirname "$0")/../lib.sh"

bin=$VIW_BUILD/tests/functional/viw_imm
peer=$VIW_BUILD/tests/tools/viw_peer
make_two_hosts viw

in_a "$bin" pair -a "$DEV_A" -b "$DEV_B" </dev/null >"$VIW_OUT/pair.log" 2>&1 ||
	{ cat "$VIW_OUT/pair.log"; die "viw_imm pair failed"; }
grep -E "^(PASS|INFO)" "$VIW_OUT/pair.log" | sed 's/^/  pair: /'
log "immediate data between two viw devices ok"

# imm_hdr CTRL0 OPCODE QN MSN MO DATA FLAGS: an Immediate Data header,
# DDP control byte CTRL0 (41: last, 01: not last), as hex for fpdu-raw.
imm_hdr() {
	printf '%02x%02x00000000%08x%08x%08x%08x%08x' "$1" $((0x40 | $2)) \
		"$3" "$4" "$5" "$6" "$7"
}

# against TAG FLAGS TARGET_ARGS -- PEER_STEPS: a viw_imm target QP on b
# that accepts viw_peer on a, whose MPA request carries viw's private data
# with FLAGS (1: Immediate Data offered) and claims QP 77.
against() {
	local tag=$1 flags=$2 targs=() qpn
	shift 2
	while [ "$1" != -- ]; do targs+=("$1"); shift; done
	shift
	rm -f /tmp/imm-qpn
	in_b timeout 60 "$bin" target -d "$DEV_B" --dgid "$IP_A" --dqpn 77 \
		--qpn-file /tmp/imm-qpn -t 20 "${targs[@]}" </dev/null \
		>"$VIW_OUT/$tag.target" 2>&1 &
	local tpid=$!
	wait_for 10 test -s /tmp/imm-qpn || { cat "$VIW_OUT/$tag.target"; die "$tag: no QP"; }
	qpn=$(printf '%08x' "$(cat /tmp/imm-qpn)")
	in_a "$peer" -t 20 -c "$IP_B:20886" \
		"mpa-req:pd=16,pdhead=7669774401$(printf %02x "$flags")00000000004d$qpn" \
		expect-rep:reject=0 "$@" >"$VIW_OUT/$tag.peer" 2>&1 ||
		{ cat "$VIW_OUT/$tag.peer" "$VIW_OUT/$tag.target"; die "$tag: viw_peer failed"; }
	wait "$tpid" || { cat "$VIW_OUT/$tag.target"; die "$tag: viw_imm target failed"; }
	grep -E "^(PASS|INFO)" "$VIW_OUT/$tag.target" | sed "s/^/  $tag: /"
}

# What viw sends: the WRITE then RFC 7306's Immediate Data (solicited),
# and a SEND with immediate as one Immediate Data message with the flag.
against wire 1 --post both -- read-fpdus:count=3,secs=10
for want in "FPDU WRITE stag 0x1234 to 0x1000 len 16 last 1" \
	"FPDU IMM_SE qn 0 msn 1 mo 0 len 0 last 1 imm 0xa1b2c3d4 send 0" \
	"FPDU IMM qn 0 msn 2 mo 0 len 16 last 1 imm 0xa1b2c3d4 send 1"; do
	grep -qF "$want" "$VIW_OUT/wire.peer" ||
		{ cat "$VIW_OUT/wire.peer"; die "wire: no \"$want\""; }
done
log "wire: WRITE + Immediate Data, SEND with immediate"

# One Immediate Data takes the receive; the next finds none: no buffer.
ok=$(imm_hdr 0x41 8 0 1 0 0x12345678 0)
against nobuf 1 --recvs 1 --want-recv 1 --fatal -- "fpdu-raw:hdr=$ok" \
	"fpdu-raw:hdr=$(imm_hdr 0x41 8 0 2 0 0x12345678 0)" \
	expect-term:layer=1,type=2,code=2
# Each refused message: DDP/RDMAP/LLP layer, type, code of the TERMINATE.
against qn 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x41 8 1 1 0 1 0)" expect-term:layer=1,type=2,code=1
against msn 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x41 9 0 5 0 1 0)" expect-term:layer=1,type=2,code=3
against payload 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x41 8 0 1 0 1 0),len=4" expect-term:layer=2,type=0,code=3
against rsvd 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x41 8 0 1 0 1 2)" expect-term:layer=0,type=2,code=6
against notlast 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x01 8 0 1 0 1 0)" expect-term:layer=0,type=2,code=6
against toolong 1 --recvs 1 --fatal -- \
	"fpdu-raw:hdr=$(imm_hdr 0x41 8 0 1 0 1 1),len=100" expect-term:layer=1,type=2,code=5
log "hostile Immediate Data: no buffer, QN, MSN, length, flags, L, too long"

# viw's acknowledgements (docs/semantics.md §13), flags bit 1 (value 2):
# ack_hdr MSN COUNT: an acknowledgement on queue 4, as hex for fpdu-raw.
ack_hdr() { printf '%02x%02x00000000%08x%08x%08x%08x' 0x41 0x4c 4 "$1" 0 "$2"; }
# A WRITE with immediate is two messages: it completes once both are
# acknowledged (the peer reads them first, so the count is of messages
# sent), and not before.
against acked 3 --post write-imm --want-sq success -- \
	read-fpdus:count=2,secs=10 "fpdu-raw:hdr=$(ack_hdr 1 2)" read-fpdus:secs=2
# Refused: from a peer that did not offer them, a count of messages never
# sent, an MSN out of sequence.
against ack-unwanted 1 --recvs 1 --fatal -- "fpdu-raw:hdr=$(ack_hdr 1 0)" \
	expect-term:layer=0,type=2,code=6
against ack-ahead 3 --recvs 1 --fatal -- "fpdu-raw:hdr=$(ack_hdr 1 5)" \
	expect-term:layer=1,type=2,code=3
against ack-msn 3 --recvs 1 --fatal -- "fpdu-raw:hdr=$(ack_hdr 2 0)" \
	expect-term:layer=1,type=2,code=3
log "acknowledgements: a WRITE with immediate completes on its count; unwanted, ahead, bad MSN refused"

# A peer that does not offer it: nothing goes out, its messages are refused.
against old-out 0 --post write-imm --want-sq loc_qp_op_err -- read-fpdus:secs=3
if grep -E "FPDU (WRITE|IMM)" "$VIW_OUT/old-out.peer"; then
	die "old-out: immediate data sent to a peer that did not offer it"
fi
against old-in 0 --recvs 1 --fatal -- "fpdu-raw:hdr=$ok" \
	expect-term:layer=0,type=2,code=6
log "a peer without Immediate Data: WR refused locally, message refused"

# An rdma_cm connection never agrees on it, even between two viw devices
# (its private data is the consumer's): the SEND with immediate
# (viw_target posts it first) fails locally, the WRITE with immediate
# behind it is flushed, the server receives nothing.
target=$VIW_BUILD/tests/functional/viw_target
in_b "$target" -s "$IP_B" 7471 --recv 1 --run 6 --until-disconnect \
	</dev/null >"$VIW_OUT/cm.server" 2>&1 &
spid=$!
wait_listen "$NS_B" 7471
in_a "$target" -c "$IP_B" 7471 --write 16 --send 16 --imm --run 4 \
	</dev/null >"$VIW_OUT/cm.client" 2>&1 || true
wait "$spid" || true
has "$VIW_OUT/cm.client" '^WC opcode SEND status LOC_QP_OP_ERR ' ||
	{ cat "$VIW_OUT/cm.client"; die "rdma_cm: SEND with immediate not refused"; }
has "$VIW_OUT/cm.client" '^WC opcode RDMA_WRITE status WR_FLUSH_ERR ' ||
	{ cat "$VIW_OUT/cm.client"; die "rdma_cm: the WRITE behind it not flushed"; }
hasnt "$VIW_OUT/cm.server" '^WC opcode RECV status SUCCESS' ||
	{ cat "$VIW_OUT/cm.server"; die "rdma_cm: the server received something"; }
log "rdma_cm connection: immediate data refused with LOC_QP_OP_ERR"

wait_for 10 objects_zero "$DEV_A" || die "objects left on $DEV_A: $(objects_of "$DEV_A")"
wait_for 10 objects_zero "$DEV_B" || die "objects left on $DEV_B: $(objects_of "$DEV_B")"
