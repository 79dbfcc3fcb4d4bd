// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * wire.ddp: DDP/RDMAP segment headers, FPDU framing and the MPA CRC.
 */
#include <errno.h>
#include <stdlib.h>

#include "wire_test.h"

/* Expected viw_ddp_hdr_len() per opcode. */
#define NUM_OPS 13
static const u32 hdr_lens[NUM_OPS] = {
	14, 46, 14, 18, 18, 18, 18, 22, 26, 26, 70, 30, 22,
};
static const bool op_tagged[NUM_OPS] = { 1, 0, 1, 0, 0, 0, 0, 0 };
static const u32 op_qn[NUM_OPS] = { 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 1, 3, 4 };

static bool op_defined(int op)
{
	return op < NUM_OPS && hdr_lens[op];
}

/*
 * Read Request, TERMINATE, the atomics and viw's acknowledgement are
 * single-segment messages.
 */
static bool op_single(int op)
{
	return op == 1 || op == 7 || op == 10 || op == 11 || op == 12;
}

static struct viw_ddp_hdr mk_hdr(u8 opcode)
{
	struct viw_ddp_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = opcode;
	h.tagged = op_tagged[opcode];
	h.last = true;
	if (h.tagged) {
		h.stag = 0x11223344;
		h.to = 0x0102030405060708ULL;
		return h;
	}
	h.qn = op_qn[opcode];
	h.msn = 0xa0b0c0d0;
	if (opcode == VIW_RDMAP_SEND_INV || opcode == VIW_RDMAP_SEND_SE_INV)
		h.inv_stag = 0xdeadbeef;
	if ((opcode >= VIW_RDMAP_SEND && opcode <= VIW_RDMAP_SEND_SE_INV) ||
	    opcode == VIW_RDMAP_IMM || opcode == VIW_RDMAP_IMM_SE)
		h.mo = 4096;
	return h;
}

static void check_same(const struct viw_ddp_hdr *a,
		       const struct viw_ddp_hdr *b)
{
	CHECK_EQ(a->opcode, b->opcode);
	CHECK_EQ(a->tagged, b->tagged);
	CHECK_EQ(a->last, b->last);
	CHECK_EQ(a->stag, b->stag);
	CHECK(a->to == b->to);
	CHECK_EQ(a->inv_stag, b->inv_stag);
	CHECK_EQ(a->qn, b->qn);
	CHECK_EQ(a->msn, b->msn);
	CHECK_EQ(a->mo, b->mo);
}

/*
 * Decode from a heap copy of exactly @len bytes, so that AddressSanitizer
 * catches any read past the length.
 */
static int decode_exact(const u8 *buf, size_t len, struct viw_ddp_hdr *h,
			struct viw_term_cause *c)
{
	u8 *copy = malloc(len ? len : 1);
	int rv;

	memcpy(copy, buf, len);
	rv = viw_ddp_decode(copy, len, h, c);
	free(copy);
	return rv;
}

/*
 * The untagged header at @buf (18 bytes) and behind it the body an encoder
 * wrote: the body must be the @len bytes of @want, the header must say
 * so, and the whole FPDU must decode back into @dh.
 */
static void check_body(const u8 *buf, const u8 *want, size_t len,
		       struct viw_ddp_hdr *dh)
{
	struct viw_term_cause c;

	CHECK(!memcmp(buf + 18, want, len));
	CHECK_EQ(viw_ddp_hdr_len(buf), 18 + len);
	CHECK_EQ(decode_exact(buf, 18 + len, dh, &c), 0);
}

static void test_round_trips(void)
{
	struct viw_ddp_hdr h, d;
	struct viw_term_cause c;
	u8 buf[80];
	int op, last;

	for (op = 0; op < NUM_OPS; op++) {
		if (!op_defined(op))
			continue;
		for (last = 0; last < 2; last++) {
			h = mk_hdr((u8)op);
			h.last = last;
			if (!last && op_single(op)) {
				CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h),
					 -EINVAL);
				continue;
			}
			memset(buf, 0x5a, sizeof(buf));
			CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h),
				 op_tagged[op] ? 14 : 18);
			CHECK_EQ(viw_ddp_hdr_len(buf), hdr_lens[op]);
			CHECK_EQ(decode_exact(buf, hdr_lens[op], &d, &c), 0);
			check_same(&h, &d);
		}
	}
}

static void test_known_bytes(void)
{
	static const u8 write[] = {
		0xc1, 0x40, 0x11, 0x22, 0x33, 0x44,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	static const u8 send_inv[] = {
		0x01, 0x44, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0,
		0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0x10, 0x00,
	};
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_WRITE);
	u8 buf[18];

	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 14);
	CHECK(!memcmp(buf, write, sizeof(write)));
	h = mk_hdr(VIW_RDMAP_SEND_INV);
	h.last = false;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	CHECK(!memcmp(buf, send_inv, sizeof(send_inv)));
}

static void test_inv_stag(void)
{
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_SEND), d;
	struct viw_term_cause c;
	u8 buf[18];

	/* RsvdULP is only the STag for the _INV opcodes */
	h.inv_stag = 0x12345678;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	CHECK_EQ(buf[2] | buf[3] | buf[4] | buf[5], 0);
	buf[2] = 0xff;	/* reserved on receipt: ignored */
	CHECK_EQ(viw_ddp_decode(buf, 18, &d, &c), 0);
	CHECK_EQ(d.inv_stag, 0);
	buf[1] = 0x40 | VIW_RDMAP_SEND_SE_INV;
	CHECK_EQ(viw_ddp_decode(buf, 18, &d, &c), 0);
	CHECK_EQ(d.inv_stag, 0xff000000);
}

static void expect_cause(const u8 *ctrl, u8 layer, u8 etype, u8 ecode)
{
	struct viw_ddp_hdr d;
	struct viw_term_cause c = { 0xee, 0xee, 0xee };
	u8 buf[64];

	memset(buf, 0, sizeof(buf));
	buf[0] = ctrl[0];
	buf[1] = ctrl[1];
	CHECK_EQ(viw_ddp_hdr_len(buf), 0);
	CHECK_EQ(viw_ddp_decode(buf, sizeof(buf), &d, &c), -EPROTO);
	CHECK_EQ(c.layer, layer);
	CHECK_EQ(c.etype, etype);
	CHECK_EQ(c.ecode, ecode);
	/* the control bytes alone are enough to find these */
	CHECK_EQ(decode_exact(buf, 2, &d, &c), -EPROTO);
	CHECK_EQ(c.layer, layer);
	CHECK_EQ(c.ecode, ecode);
}

static void test_versions(void)
{
	static const u8 dv_bad[] = { 0x00, 0x02, 0x03 };
	static const u8 ddp_rsvd[] = { 0x04, 0x08, 0x10, 0x20 };
	static const u8 rv_bad[] = { 0x00, 0x80, 0xc0 };
	static const u8 rdmap_rsvd[] = { 0x10, 0x20 };
	u8 ctrl[2];
	size_t i;

	for (i = 0; i < sizeof(dv_bad); i++) {
		ctrl[0] = 0xc0 | dv_bad[i];	/* tagged WRITE */
		ctrl[1] = 0x40;
		expect_cause(ctrl, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
			     VIW_DDP_EC_T_VERSION);
		ctrl[0] = 0x40 | dv_bad[i];	/* untagged SEND */
		ctrl[1] = 0x43;
		expect_cause(ctrl, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
			     VIW_DDP_EC_UT_VERSION);
		ctrl[1] = 0x03;			/* DDP is checked first */
		expect_cause(ctrl, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
			     VIW_DDP_EC_UT_VERSION);
	}
	for (i = 0; i < sizeof(ddp_rsvd); i++) {
		ctrl[0] = 0xc1 | ddp_rsvd[i];
		ctrl[1] = 0x42;
		expect_cause(ctrl, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
			     VIW_DDP_EC_T_VERSION);
		ctrl[0] = 0x41 | ddp_rsvd[i];
		ctrl[1] = 0x43;
		expect_cause(ctrl, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
			     VIW_DDP_EC_UT_VERSION);
	}
	for (i = 0; i < sizeof(rv_bad); i++) {
		ctrl[0] = 0x41;
		ctrl[1] = rv_bad[i] | 0x03;
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_VERSION);
		ctrl[1] = rv_bad[i] | 0x0f;	/* before the opcode */
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_VERSION);
	}
	for (i = 0; i < sizeof(rdmap_rsvd); i++) {
		ctrl[0] = 0xc1;
		ctrl[1] = 0x40 | rdmap_rsvd[i];
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_VERSION);
	}
}

static void test_opcodes(void)
{
	u8 ctrl[2];
	int op;

	for (op = 8; op < 16; op++) {
		if (op_defined(op))
			continue;
		ctrl[0] = 0x41;
		ctrl[1] = (u8)(0x40 | op);
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_OPCODE);
		ctrl[0] = 0xc1;
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_OPCODE);
	}
	/* T bit that does not match the opcode */
	for (op = 0; op < NUM_OPS; op++) {
		if (!op_defined(op))
			continue;
		ctrl[0] = (op_tagged[op] ? 0x00 : 0x80) | 0x41;
		ctrl[1] = (u8)(0x40 | op);
		expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			     VIW_RDMAP_EC_OPCODE);
	}
	/* single-segment messages without L */
	ctrl[0] = 0x01;
	ctrl[1] = 0x40 | VIW_RDMAP_READ_REQ;
	expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
		     VIW_RDMAP_EC_OPCODE);
	ctrl[1] = 0x40 | VIW_RDMAP_TERMINATE;
	expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
		     VIW_RDMAP_EC_OPCODE);
	ctrl[1] = 0x40 | VIW_RDMAP_ATOMIC_REQ;
	expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
		     VIW_RDMAP_EC_OPCODE);
	ctrl[1] = 0x40 | VIW_RDMAP_ATOMIC_RESP;
	expect_cause(ctrl, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
		     VIW_RDMAP_EC_OPCODE);
}

static void test_qn_mo(void)
{
	struct viw_ddp_hdr h, d;
	struct viw_term_cause c;
	u8 buf[80];
	u32 qn;
	int op;

	for (op = 1; op < NUM_OPS; op++) {
		if (op_tagged[op] || !op_defined(op))
			continue;
		for (qn = 0; qn < 4; qn++) {
			h = mk_hdr((u8)op);
			viw_ddp_encode(buf, sizeof(buf), &h);
			buf[9] = (u8)qn;
			if (qn == op_qn[op]) {
				CHECK_EQ(viw_ddp_decode(buf, 80, &d, &c), 0);
				continue;
			}
			CHECK_EQ(viw_ddp_decode(buf, 80, &d, &c), -EPROTO);
			CHECK_EQ(c.layer, VIW_TERM_DDP);
			CHECK_EQ(c.etype, VIW_DDP_ET_UNTAGGED);
			CHECK_EQ(c.ecode, VIW_DDP_EC_UT_INVALID_QN);
			/* the encoder refuses it too */
			h.qn = qn;
			CHECK_EQ(viw_ddp_encode(buf, 80, &h), -EINVAL);
		}
		/* a QN with high bits set is not QN 0..3 */
		h = mk_hdr((u8)op);
		viw_ddp_encode(buf, sizeof(buf), &h);
		buf[6] = 0x01;
		CHECK_EQ(viw_ddp_decode(buf, 80, &d, &c), -EPROTO);
		CHECK_EQ(c.ecode, VIW_DDP_EC_UT_INVALID_QN);
	}
	/* MO must be 0 in single-segment messages, anything goes else */
	for (op = 1; op < NUM_OPS; op++) {
		if (op_tagged[op] || !op_defined(op))
			continue;
		h = mk_hdr((u8)op);
		viw_ddp_encode(buf, sizeof(buf), &h);
		buf[17] = 4;
		if (!op_single(op)) {
			CHECK_EQ(viw_ddp_decode(buf, 80, &d, &c), 0);
			continue;
		}
		CHECK_EQ(viw_ddp_decode(buf, 80, &d, &c), -EPROTO);
		CHECK_EQ(c.layer, VIW_TERM_DDP);
		CHECK_EQ(c.etype, VIW_DDP_ET_UNTAGGED);
		CHECK_EQ(c.ecode, VIW_DDP_EC_UT_INVALID_MO);
		h.mo = 4;
		CHECK_EQ(viw_ddp_encode(buf, 80, &h), -EINVAL);
	}
}

static void test_truncated(void)
{
	struct viw_ddp_hdr h, d;
	struct viw_term_cause c;
	u8 buf[80];
	size_t len;
	int op;

	for (op = 0; op < NUM_OPS; op++) {
		if (!op_defined(op))
			continue;
		h = mk_hdr((u8)op);
		viw_ddp_encode(buf, sizeof(buf), &h);
		for (len = 0; len < hdr_lens[op]; len++) {
			memset(&c, 0xee, sizeof(c));
			CHECK_EQ(decode_exact(buf, len, &d, &c), -EBADMSG);
			CHECK_EQ(c.layer, VIW_TERM_DDP);
			CHECK_EQ(c.etype, VIW_DDP_ET_CATASTROPHIC);
			CHECK_EQ(c.ecode, 0);
		}
		CHECK_EQ(decode_exact(buf, len, &d, &c), 0);
		/* the encoder needs room for the header */
		CHECK_EQ(viw_ddp_encode(buf, op_tagged[op] ? 13 : 17, &h),
			 -ENOSPC);
	}
}

static void test_encode_errors(void)
{
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_SEND);
	u8 buf[64];

	h.opcode = 13;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), -EINVAL);
	h.opcode = 0xff;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), -EINVAL);
	h = mk_hdr(VIW_RDMAP_WRITE);
	h.tagged = false;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), -EINVAL);
	h = mk_hdr(VIW_RDMAP_SEND);
	h.tagged = true;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), -EINVAL);
	h = mk_hdr(VIW_RDMAP_TERMINATE);
	h.last = false;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), -EINVAL);
}

static void test_read_req(void)
{
	static const u8 want[28] = {
		0x00, 0x00, 0x01, 0x00,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
		0x00, 0x01, 0x00, 0x00,
		0xaa, 0xbb, 0xcc, 0xdd,
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
	};
	struct viw_read_req rr = {
		.sink_stag = 0x100, .sink_to = 0x1011121314151617ULL,
		.size = 0x10000, .src_stag = 0xaabbccdd,
		.src_to = 0xf0f1f2f3f4f5f6f7ULL,
	}, d;
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_READ_REQ), dh;
	u8 buf[46];

	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	viw_read_req_encode(buf + 18, &rr);
	check_body(buf, want, sizeof(want), &dh);
	viw_read_req_decode(buf + 18, &d);
	CHECK_EQ(d.sink_stag, rr.sink_stag);
	CHECK(d.sink_to == rr.sink_to);
	CHECK_EQ(d.size, rr.size);
	CHECK_EQ(d.src_stag, rr.src_stag);
	CHECK(d.src_to == rr.src_to);
}

/*
 * RFC 7306 Immediate Data: untagged on the Send queue (QN 0) with an
 * 8-byte header, byte by byte; viw's flags word and its round trip.
 */
static void test_imm(void)
{
	static const u8 want[26] = {
		0x41, 0x49, 0, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x00, 0x00, 0x07, 0, 0, 0, 0,
		0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x00,
	};
	struct viw_imm imm = { .data = 0x12345678 }, d;
	struct viw_ddp_hdr h, dh;
	struct viw_term_cause c;
	u8 buf[26];

	memset(&h, 0, sizeof(h));
	h.opcode = VIW_RDMAP_IMM_SE;
	h.last = true;
	h.msn = 7;
	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	viw_imm_encode(buf + 18, &imm);
	CHECK(!memcmp(buf, want, sizeof(want)));
	check_body(buf, want + 18, 8, &dh);
	CHECK_EQ(dh.opcode, VIW_RDMAP_IMM_SE);
	CHECK_EQ(dh.qn, VIW_QN_SEND);
	CHECK_EQ(dh.msn, 7);
	memset(&d, 0xee, sizeof(d));
	CHECK_EQ(viw_imm_decode(buf + 18, &d, &c), 0);
	CHECK_EQ(d.data, 0x12345678);
	CHECK(!d.send);

	/* viw's SEND with immediate: the flag is bit 0 of the second word */
	imm.send = true;
	viw_imm_encode(buf + 18, &imm);
	CHECK_EQ(buf[25], 0x01);
	CHECK_EQ(viw_imm_decode(buf + 18, &d, &c), 0);
	CHECK(d.send);
	CHECK_EQ(d.data, 0x12345678);
}

/* Reserved flag bits of the Immediate Data header: unexpected opcode. */
static void test_imm_errors(void)
{
	struct viw_imm imm = { .data = 1, .send = true }, d;
	struct viw_term_cause c;
	u8 body[8];
	int bit;

	for (bit = 1; bit < 32; bit++) {
		viw_imm_encode(body, &imm);
		body[7 - bit / 8] |= (u8)(1 << (bit % 8));
		memset(&c, 0xee, sizeof(c));
		CHECK_EQ(viw_imm_decode(body, &d, &c), -EPROTO);
		CHECK_EQ(c.layer, VIW_TERM_RDMAP);
		CHECK_EQ(c.etype, VIW_RDMAP_ET_REMOTE_OP);
		CHECK_EQ(c.ecode, VIW_RDMAP_EC_OPCODE);
	}
	/* a tagged Immediate Data is refused (test_qn_mo: other queues) */
	body[0] = 0xc1;
	body[1] = 0x40 | VIW_RDMAP_IMM;
	CHECK_EQ(viw_ddp_hdr_len(body), 0);
}

/* RFC 7306 Atomic Request body, byte by byte, and its round trip. */
static void test_atomic_req(void)
{
	static const u8 want[52] = {
		0x00, 0x00, 0x00, 0x02,
		0x01, 0x02, 0x03, 0x04,
		0xaa, 0xbb, 0xcc, 0xdd,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x1c,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	struct viw_atomic_req ar = {
		.op = VIW_ATOMIC_CMP_SWAP, .req_id = 0x01020304,
		.stag = 0xaabbccdd, .to = 0x101112131415161cULL,
		.add_swap = 0x2021222324252627ULL, .add_swap_mask = ~0ULL,
		.compare = 0x3031323334353637ULL, .compare_mask = ~0ULL,
	}, d;
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_ATOMIC_REQ), dh;
	struct viw_term_cause c;
	u8 buf[70];

	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	viw_atomic_req_encode(buf + 18, &ar);
	check_body(buf, want, sizeof(want), &dh);
	CHECK_EQ(dh.qn, VIW_QN_READ_REQ);
	CHECK_EQ(viw_atomic_req_decode(buf + 18, &d, &c), 0);
	CHECK_EQ(d.op, ar.op);
	CHECK_EQ(d.req_id, ar.req_id);
	CHECK_EQ(d.stag, ar.stag);
	CHECK(d.to == ar.to);
	CHECK(d.add_swap == ar.add_swap);
	CHECK(d.add_swap_mask == ar.add_swap_mask);
	CHECK(d.compare == ar.compare);
	CHECK(d.compare_mask == ar.compare_mask);
	CHECK(viw_atomic_aligned(0x1000));
	CHECK(!viw_atomic_aligned(d.to));
}

/* Unknown Atomic Operation Codes and reserved bits: unexpected opcode. */
static void test_atomic_req_errors(void)
{
	struct viw_atomic_req ar = { .op = VIW_ATOMIC_FETCH_ADD }, d;
	struct viw_term_cause c;
	u8 body[52];
	int op;

	for (op = 0; op < 16; op++) {
		ar.op = (u8)op;
		viw_atomic_req_encode(body, &ar);
		memset(&c, 0xee, sizeof(c));
		if (op == VIW_ATOMIC_FETCH_ADD || op == VIW_ATOMIC_CMP_SWAP) {
			CHECK_EQ(viw_atomic_req_decode(body, &d, &c), 0);
			CHECK_EQ(d.op, op);
			continue;
		}
		CHECK_EQ(viw_atomic_req_decode(body, &d, &c), -EPROTO);
		CHECK_EQ(c.layer, VIW_TERM_RDMAP);
		CHECK_EQ(c.etype, VIW_RDMAP_ET_REMOTE_OP);
		CHECK_EQ(c.ecode, VIW_RDMAP_EC_OPCODE);
	}
	ar.op = VIW_ATOMIC_FETCH_ADD;
	viw_atomic_req_encode(body, &ar);
	body[2] = 0x10;		/* a reserved bit */
	CHECK_EQ(viw_atomic_req_decode(body, &d, &c), -EPROTO);
	CHECK_EQ(c.ecode, VIW_RDMAP_EC_OPCODE);
}

static void test_atomic_resp(void)
{
	static const u8 want[12] = {
		0xca, 0xfe, 0x00, 0x01,
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
	};
	struct viw_atomic_resp r = {
		.req_id = 0xcafe0001, .orig = 0x800000000000002aULL,
	}, d;
	struct viw_ddp_hdr h = mk_hdr(VIW_RDMAP_ATOMIC_RESP), dh;
	u8 buf[30];

	CHECK_EQ(viw_ddp_encode(buf, sizeof(buf), &h), 18);
	viw_atomic_resp_encode(buf + 18, &r);
	check_body(buf, want, sizeof(want), &dh);
	CHECK_EQ(dh.qn, VIW_QN_ATOMIC_RESP);
	viw_atomic_resp_decode(buf + 18, &d);
	CHECK_EQ(d.req_id, r.req_id);
	CHECK(d.orig == r.orig);
}

static u64 fetch_add(u64 orig, u64 add, u64 mask)
{
	struct viw_atomic_req ar = {
		.op = VIW_ATOMIC_FETCH_ADD, .add_swap = add,
		.add_swap_mask = mask,
	};

	return viw_atomic_apply(&ar, orig);
}

static u64 cmp_swap(u64 orig, u64 cmp, u64 cmask, u64 swap, u64 smask)
{
	struct viw_atomic_req ar = {
		.op = VIW_ATOMIC_CMP_SWAP, .compare = cmp,
		.compare_mask = cmask, .add_swap = swap,
		.add_swap_mask = smask,
	};

	return viw_atomic_apply(&ar, orig);
}

static void test_atomic_apply(void)
{
	/* plain 64-bit add, wrapping */
	CHECK(fetch_add(1, 2, 0) == 3);
	CHECK(fetch_add(~0ULL, 1, 0) == 0);
	CHECK(fetch_add(0x00000000ffffffffULL, 1, 0) == 0x100000000ULL);
	/* two 32-bit fields: the carry out of bit 31 is dropped */
	CHECK(fetch_add(0x00000001ffffffffULL, 0x0000000100000001ULL,
			0x8000000080000000ULL) == 0x0000000200000000ULL);
	/* eight 8-bit fields */
	CHECK(fetch_add(0x01ff7f8000000000ULL, 0x0101010100000000ULL,
			0x8080808080808080ULL) == 0x0200808100000000ULL);
	/* the verbs' CmpSwap: full compare, full swap */
	CHECK(cmp_swap(5, 5, ~0ULL, 9, ~0ULL) == 9);
	CHECK(cmp_swap(5, 6, ~0ULL, 9, ~0ULL) == 5);
	/* masked: compare the low byte only, swap the high half only */
	CHECK(cmp_swap(0x11223344556677aaULL, 0xaa, 0xff,
		       0xdeadbeef00000000ULL, 0xffffffff00000000ULL) ==
	      0xdeadbeef556677aaULL);
	CHECK(cmp_swap(0x11223344556677abULL, 0xaa, 0xff, 0, ~0ULL) ==
	      0x11223344556677abULL);
	/* a zero compare mask always swaps */
	CHECK(cmp_swap(1, 2, 0, 3, ~0ULL) == 3);
}

static void test_framing(void)
{
	u32 emss, m;

	CHECK_EQ(viw_mpa_pad(0), 2);
	CHECK_EQ(viw_mpa_pad(1), 1);
	CHECK_EQ(viw_mpa_pad(2), 0);
	CHECK_EQ(viw_mpa_pad(3), 3);
	CHECK_EQ(viw_mpa_pad(14), 0);
	CHECK_EQ(viw_mpa_pad(18), 0);
	CHECK_EQ(viw_mpa_pad(21), 1);
	CHECK_EQ(viw_fpdu_len(0), 8);
	CHECK_EQ(viw_fpdu_len(14), 20);
	CHECK_EQ(viw_fpdu_len(21), 28);
	CHECK_EQ(viw_fpdu_len(46), 52);

	CHECK_EQ(viw_mulpdu(1460), 1454);
	CHECK_EQ(viw_mulpdu(1448), 1442);
	CHECK_EQ(viw_mulpdu(8960), 8954);
	CHECK_EQ(viw_mulpdu(0), 128);
	CHECK_EQ(viw_mulpdu(100), 128);
	CHECK_EQ(viw_mulpdu(0xffffffffU), 65534);
	for (emss = 0; emss < 70000; emss++) {
		m = viw_mulpdu(emss);
		CHECK(m >= 128 && m <= 0xffff);
		if (emss < 136 || emss > 65540)
			continue;
		/* fits, and the next larger ULPDU does not */
		CHECK(viw_fpdu_len(m) <= emss);
		CHECK(viw_fpdu_len(m + 1) > emss);
		if (tc_failures)
			break;
	}
	CHECK_EQ(viw_fpdu_len(viw_mulpdu(65540)), 65540);
}

static void test_crc_bytes(void)
{
	u8 b[4];

	viw_put_crc(b, 0x12345678);
	CHECK(b[0] == 0x78 && b[1] == 0x56 && b[2] == 0x34 && b[3] == 0x12);
	CHECK_EQ(viw_get_crc(b), 0x12345678);
	viw_put_crc(b, 0xfedcba98);
	CHECK_EQ(viw_get_crc(b), 0xfedcba98);
}

static u32 crc_of(const void *p, size_t len)
{
	return viw_crc_final(wire_crc32c(VIW_CRC_INIT, p, len));
}

/* Check value and the RFC 3720 (iSCSI) B.4 vectors, in wire byte order. */
static void test_crc32c_kat(void)
{
	static const u8 want[4][4] = {
		{ 0xaa, 0x36, 0x91, 0x8a }, { 0x43, 0xab, 0xa8, 0x62 },
		{ 0x4e, 0x79, 0xdd, 0x46 }, { 0x5c, 0xdb, 0x3f, 0x11 },
	};
	u8 v[4][32], b[4];
	int i, j;

	CHECK_EQ(crc_of("123456789", 9), 0xe3069283);
	for (i = 0; i < 32; i++) {
		v[0][i] = 0;
		v[1][i] = 0xff;
		v[2][i] = (u8)i;
		v[3][i] = (u8)(31 - i);
	}
	for (j = 0; j < 4; j++) {
		viw_put_crc(b, crc_of(v[j], 32));
		CHECK(!memcmp(b, want[j], 4));
	}
	/* updating in pieces gives the same value */
	CHECK_EQ(viw_crc_final(wire_crc32c(wire_crc32c(VIW_CRC_INIT,
						       "1234", 4),
					   "56789", 5)), 0xe3069283);
}

/*
 * A complete FPDU: untagged SEND, last, MSN 1, payload "viw", one pad
 * byte.  The CRC bytes were computed with an independent CRC32c
 * implementation (Python crcmod, "crc-32c").
 */
static void test_fpdu_kat(void)
{
	static const u8 want[28] = {
		0x00, 0x15, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 1, 0, 0, 0, 0, 'v', 'i', 'w', 0x00,
		0x58, 0x17, 0x31, 0xf9,
	};
	struct viw_ddp_hdr h, d;
	struct viw_term_cause c;
	u8 fpdu[28];
	u32 ulpdu = 18 + 3;

	memset(&h, 0, sizeof(h));
	h.opcode = VIW_RDMAP_SEND;
	h.last = true;
	h.msn = 1;
	memset(fpdu, 0, sizeof(fpdu));
	CHECK_EQ(viw_fpdu_len(ulpdu), 28);
	fpdu[0] = 0;
	fpdu[1] = (u8)ulpdu;
	CHECK_EQ(viw_ddp_encode(fpdu + 2, sizeof(fpdu) - 2, &h), 18);
	memcpy(fpdu + 20, "viw", 3);
	wire_fpdu_seal(fpdu);
	CHECK(!memcmp(fpdu, want, sizeof(want)));

	/* receive side: recompute and compare with the trailer */
	CHECK_EQ(viw_get_crc(fpdu + 24), crc_of(fpdu, 24));
	CHECK_EQ(viw_ddp_decode(fpdu + 2, ulpdu, &d, &c), 0);
	CHECK_EQ(d.msn, 1);
	fpdu[21] ^= 1;
	CHECK(viw_get_crc(fpdu + 24) != crc_of(fpdu, 24));
}

int main(void)
{
	RUN(test_round_trips);
	RUN(test_known_bytes);
	RUN(test_inv_stag);
	RUN(test_versions);
	RUN(test_opcodes);
	RUN(test_qn_mo);
	RUN(test_truncated);
	RUN(test_encode_errors);
	RUN(test_read_req);
	RUN(test_imm);
	RUN(test_imm_errors);
	RUN(test_atomic_req);
	RUN(test_atomic_req_errors);
	RUN(test_atomic_resp);
	RUN(test_atomic_apply);
	RUN(test_framing);
	RUN(test_crc_bytes);
	RUN(test_crc32c_kat);
	RUN(test_fpdu_kat);
	return tc_done("wire.ddp");
}
