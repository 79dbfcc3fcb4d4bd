// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * wire.term: TERMINATE bodies and the cause -> completion status map.
 */
#include <errno.h>
#include <stdlib.h>

#include <rdma/viw-abi.h>

#include "wire_test.h"

/* Offending headers: a tagged WRITE, an untagged SEND, a Read Request. */
static void mk_ddp(u8 opcode, u8 *hdr)
{
	struct viw_ddp_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = opcode;
	h.last = true;
	h.tagged = opcode == VIW_RDMAP_WRITE;
	h.stag = 0x01020304;
	h.to = 0x1122334455667788ULL;
	h.qn = opcode == VIW_RDMAP_READ_REQ ? 1 : 0;
	h.msn = 7;
	CHECK(viw_ddp_encode(hdr, VIW_DDP_UNTAGGED_HDR_LEN, &h) > 0);
}

static struct viw_term mk_term(bool m, bool d, bool r, u8 opcode)
{
	struct viw_term t;
	int i;

	memset(&t, 0, sizeof(t));
	t.cause.layer = VIW_TERM_RDMAP;
	t.cause.etype = VIW_RDMAP_ET_REMOTE_PROT;
	t.cause.ecode = VIW_RDMAP_EC_BASE_BOUNDS;
	t.has_len = m;
	t.seg_len = 0xbeef;
	t.has_ddp_hdr = d;
	if (d) {
		mk_ddp(opcode, t.ddp_hdr);
		t.ddp_hdr_len = opcode == VIW_RDMAP_WRITE ? 14 : 18;
	}
	t.has_rreq = r;
	for (i = 0; i < VIW_RDMAP_READ_REQ_LEN && r; i++)
		t.rreq[i] = (u8)(0x80 + i);
	return t;
}

static void check_same(const struct viw_term *a, const struct viw_term *b)
{
	CHECK_EQ(a->cause.layer, b->cause.layer);
	CHECK_EQ(a->cause.etype, b->cause.etype);
	CHECK_EQ(a->cause.ecode, b->cause.ecode);
	CHECK_EQ(a->has_len, b->has_len);
	CHECK_EQ(a->has_ddp_hdr, b->has_ddp_hdr);
	CHECK_EQ(a->has_rreq, b->has_rreq);
	if (a->has_len)
		CHECK_EQ(a->seg_len, b->seg_len);
	if (a->has_ddp_hdr) {
		CHECK_EQ(a->ddp_hdr_len, b->ddp_hdr_len);
		CHECK(!memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len));
	}
	if (a->has_rreq)
		CHECK(!memcmp(a->rreq, b->rreq, VIW_RDMAP_READ_REQ_LEN));
}

/* Decode from a heap copy of exactly @len bytes (ASan catches over-reads). */
static int decode_exact(const u8 *buf, size_t len, struct viw_term *t)
{
	u8 *copy = malloc(len ? len : 1);
	int rv;

	memcpy(copy, buf, len);
	rv = viw_term_decode(copy, len, t);
	free(copy);
	return rv;
}

static void round_trip(const struct viw_term *t, int want_len)
{
	struct viw_term d;
	u8 buf[64];
	int n, len;

	n = viw_term_encode(buf, sizeof(buf), t);
	CHECK_EQ(n, want_len);
	if (n < 0)
		return;
	CHECK_EQ(decode_exact(buf, (size_t)n, &d), 0);
	check_same(t, &d);
	/* every proper prefix is refused */
	for (len = 0; len < n; len++)
		CHECK_EQ(decode_exact(buf, (size_t)len, &d), -EBADMSG);
	CHECK_EQ(viw_term_encode(buf, (size_t)n - 1, t), -ENOSPC);
}

static void test_round_trips(void)
{
	static const u8 ops[] = {
		VIW_RDMAP_WRITE, VIW_RDMAP_SEND, VIW_RDMAP_READ_REQ,
	};
	struct viw_term t;
	int m, d, r;
	size_t i;

	for (i = 0; i < sizeof(ops); i++) {
		for (m = 0; m < 2; m++) {
			for (d = 0; d < 2; d++) {
				for (r = 0; r < 2; r++) {
					int hl = ops[i] ? 18 : 14;
					int len = 4 + 2 * m + hl * d + 28 * r;

					if (r && d && ops[i] != 1)
						continue;
					t = mk_term(m, d, r, ops[i]);
					round_trip(&t, len);
				}
			}
		}
	}
}

/* Layout as siw builds it for a DDP untagged error: M and D. */
static void test_known_bytes(void)
{
	struct viw_term t = mk_term(true, true, false, VIW_RDMAP_SEND);
	u8 buf[64];

	t.cause.layer = VIW_TERM_DDP;
	t.cause.etype = VIW_DDP_ET_UNTAGGED;
	t.cause.ecode = VIW_DDP_EC_UT_INVALID_MSN_RANGE;
	t.seg_len = 0x0102;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), 24);
	CHECK(buf[0] == 0x12 && buf[1] == 0x03 && buf[2] == 0xc0 &&
	      buf[3] == 0x00);
	CHECK(buf[4] == 0x01 && buf[5] == 0x02);
	CHECK(buf[6] == 0x41 && buf[7] == 0x43);	/* the SEND header */
	CHECK(!memcmp(buf + 6, t.ddp_hdr, 18));

	t = mk_term(false, false, false, 0);
	t.cause.layer = VIW_TERM_LLP;
	t.cause.etype = 0;
	t.cause.ecode = VIW_LLP_EC_CRC;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), 4);
	CHECK(buf[0] == 0x20 && buf[1] == 0x02 && buf[2] == 0 && buf[3] == 0);
}

/* A whole TERMINATE segment: its untagged header and the body. */
static void test_segment(void)
{
	struct viw_term t = mk_term(true, true, true, VIW_RDMAP_READ_REQ), d;
	struct viw_ddp_hdr h, dh;
	struct viw_term_cause c;
	u8 seg[18 + 52];
	int n;

	memset(&h, 0, sizeof(h));
	h.opcode = VIW_RDMAP_TERMINATE;
	h.last = true;
	h.qn = VIW_QN_TERMINATE;
	h.msn = 1;
	CHECK_EQ(viw_ddp_encode(seg, sizeof(seg), &h), 18);
	CHECK_EQ(viw_ddp_hdr_len(seg), 22);
	n = viw_term_encode(seg + 18, sizeof(seg) - 18, &t);
	CHECK_EQ(n, 52);
	CHECK_EQ(viw_ddp_decode(seg, 18 + (size_t)n, &dh, &c), 0);
	CHECK_EQ(dh.opcode, VIW_RDMAP_TERMINATE);
	CHECK_EQ(dh.qn, 2);
	CHECK_EQ(viw_term_decode(seg + 18, (size_t)n, &d), 0);
	check_same(&t, &d);
}

/*
 * What siw sends for a remote protection error on an inbound SEND or
 * WRITE: M, D and R all set, no Read Request, and for a WRITE 18 bytes
 * where the tagged header has 14.
 */
static void test_siw_quirks(void)
{
	struct viw_term d;
	u8 buf[64];

	memset(buf, 0, sizeof(buf));
	buf[0] = 0x01;		/* RDMAP, remote protection */
	buf[1] = 0x00;		/* invalid STag */
	buf[2] = 0xe0;		/* M D R */
	buf[4] = 0x00;
	buf[5] = 0x10;
	mk_ddp(VIW_RDMAP_SEND, buf + 6);
	CHECK_EQ(decode_exact(buf, 4 + 2 + 18, &d), 0);
	CHECK(d.has_len && d.has_ddp_hdr && !d.has_rreq);
	CHECK_EQ(d.seg_len, 0x10);
	CHECK_EQ(d.ddp_hdr_len, 18);

	mk_ddp(VIW_RDMAP_WRITE, buf + 6);
	CHECK_EQ(decode_exact(buf, 4 + 2 + 18, &d), 0);
	CHECK(d.has_ddp_hdr && !d.has_rreq);
	CHECK_EQ(d.ddp_hdr_len, 14);
	CHECK(!memcmp(d.ddp_hdr, buf + 6, 14));

	/* with a Read Request header, R means the body follows */
	mk_ddp(VIW_RDMAP_READ_REQ, buf + 6);
	CHECK_EQ(decode_exact(buf, 4 + 2 + 18, &d), -EBADMSG);
	CHECK_EQ(decode_exact(buf, 4 + 2 + 18 + 28, &d), 0);
	CHECK(d.has_rreq);

	/* reserved bits of the control word are ignored */
	memset(buf, 0, sizeof(buf));
	buf[2] = 0x1f;
	buf[3] = 0xff;
	CHECK_EQ(decode_exact(buf, 4, &d), 0);
	CHECK(!d.has_len && !d.has_ddp_hdr && !d.has_rreq);
	/* R without D: the Read Request body follows the control word */
	buf[2] = 0x20;
	CHECK_EQ(decode_exact(buf, 4, &d), -EBADMSG);
	CHECK_EQ(decode_exact(buf, 32, &d), 0);
	CHECK(d.has_rreq && !d.has_ddp_hdr);
	/* trailing bytes are ignored */
	CHECK_EQ(decode_exact(buf, 64, &d), 0);
}

static void test_encode_errors(void)
{
	struct viw_term t = mk_term(true, true, true, VIW_RDMAP_SEND);
	u8 buf[64];

	/* R with a terminated header that is not a Read Request */
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), -EINVAL);
	t = mk_term(true, true, false, VIW_RDMAP_SEND);
	t.ddp_hdr_len = 14;	/* untagged header is 18 bytes */
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), -EINVAL);
	t = mk_term(true, true, false, VIW_RDMAP_WRITE);
	t.ddp_hdr_len = 18;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), -EINVAL);
	t = mk_term(false, false, false, 0);
	t.cause.layer = 0x10;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), -EINVAL);
	t.cause.layer = 0xf;
	t.cause.etype = 0x10;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), -EINVAL);
	t.cause.etype = 0xf;
	t.cause.ecode = 0xff;
	CHECK_EQ(viw_term_encode(buf, sizeof(buf), &t), 4);
	CHECK(buf[0] == 0xff && buf[1] == 0xff);
	CHECK_EQ(viw_term_encode(buf, 3, &t), -ENOSPC);
}

static u8 status_of(u8 layer, u8 etype, u8 ecode)
{
	struct viw_term_cause c = { layer, etype, ecode };

	return viw_term_to_wc_status(&c);
}

static void test_wc_status(void)
{
	int code;

	for (code = 0; code <= 4; code++)
		CHECK_EQ(status_of(VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
				   (u8)code), VIW_CQE_REM_ACCESS_ERR);
	CHECK_EQ(status_of(VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT, 0xff),
		 VIW_CQE_REM_ACCESS_ERR);
	for (code = 5; code <= 9; code++)
		CHECK_EQ(status_of(VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
				   (u8)code), VIW_CQE_REM_OP_ERR);
	CHECK_EQ(status_of(VIW_TERM_RDMAP, VIW_RDMAP_ET_CATASTROPHIC, 0),
		 VIW_CQE_REM_OP_ERR);
	CHECK_EQ(status_of(VIW_TERM_RDMAP, 3, 0), VIW_CQE_GENERAL_ERR);

	CHECK_EQ(status_of(VIW_TERM_DDP, VIW_DDP_ET_CATASTROPHIC, 0),
		 VIW_CQE_REM_OP_ERR);
	for (code = 0; code <= 3; code++)
		CHECK_EQ(status_of(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, (u8)code),
			 VIW_CQE_REM_ACCESS_ERR);
	CHECK_EQ(status_of(VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
			   VIW_DDP_EC_T_VERSION), VIW_CQE_REM_OP_ERR);
	for (code = 1; code <= 5; code++)
		CHECK_EQ(status_of(VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
				   (u8)code), VIW_CQE_REM_INV_REQ_ERR);
	CHECK_EQ(status_of(VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
			   VIW_DDP_EC_UT_VERSION), VIW_CQE_REM_OP_ERR);
	CHECK_EQ(status_of(VIW_TERM_DDP, 3, 0), VIW_CQE_GENERAL_ERR);

	for (code = 1; code <= 7; code++)
		CHECK_EQ(status_of(VIW_TERM_LLP, 0, (u8)code),
			 VIW_CQE_GENERAL_ERR);
	CHECK_EQ(status_of(3, 0, 0), VIW_CQE_GENERAL_ERR);
	CHECK_EQ(status_of(0xf, 0xf, 0xff), VIW_CQE_GENERAL_ERR);
}

static struct viw_term_cause tagged(u8 layer, u8 etype, u8 ecode, u64 to,
				    u32 len, bool rdmap)
{
	struct viw_term_cause c = { layer, etype, ecode };

	viw_term_tagged_cause(&c, to, len, rdmap);
	return c;
}

#define CHECK_CAUSE(c, l, t, e)						\
	do {								\
		CHECK_EQ((c).layer, l);					\
		CHECK_EQ((c).etype, t);					\
		CHECK_EQ((c).ecode, e);					\
	} while (0)

/* A WRITE or Read Response refused by DDP keeps DDP's codes. */
static void test_tagged_ddp(void)
{
	struct viw_term_cause c;
	int code;

	for (code = 0; code <= 4; code++) {
		c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, (u8)code, 0x1000,
			   64, false);
		CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED, code);
	}
	/* the last byte at 2^64 - 1 does not wrap; one more does */
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL - 63, 64, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
		    VIW_DDP_EC_T_BASE_BOUNDS);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL - 62, 64, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_TO_WRAP);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL, 0xffffffffU, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_TO_WRAP);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL, 0, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
		    VIW_DDP_EC_T_BASE_BOUNDS);
	/* an STag check that failed first is not hidden by the wrap */
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_INVALID_STAG,
		   ~0ULL, 64, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
		    VIW_DDP_EC_T_INVALID_STAG);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_STAG_NOT_ASSOC,
		   ~0ULL, 64, false);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
		    VIW_DDP_EC_T_STAG_NOT_ASSOC);
	/* access rights are RDMAP's already */
	c = tagged(VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		   VIW_RDMAP_EC_ACCESS, ~0ULL, 64, false);
	CHECK_CAUSE(c, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		    VIW_RDMAP_EC_ACCESS);
}

/* The source of a Read Request is checked by RDMAP, with RDMAP's codes. */
static void test_tagged_rdmap(void)
{
	static const u8 want[] = {
		[VIW_DDP_EC_T_INVALID_STAG] = 0x00,
		[VIW_DDP_EC_T_BASE_BOUNDS] = 0x01,
		[VIW_DDP_EC_T_STAG_NOT_ASSOC] = 0x03,
		[VIW_DDP_EC_T_TO_WRAP] = 0x04,
		[VIW_DDP_EC_T_VERSION] = 0xff,
	};
	struct viw_term_cause c;
	int code;

	for (code = 0; code <= 4; code++) {
		c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, (u8)code, 0x1000,
			   64, true);
		CHECK_CAUSE(c, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
			    want[code]);
	}
	CHECK_EQ(VIW_RDMAP_EC_STAG_NOT_ASSOC, 0x03);
	CHECK_EQ(VIW_RDMAP_EC_TO_WRAP, 0x04);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL - 15, 17, true);
	CHECK_CAUSE(c, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		    VIW_RDMAP_EC_TO_WRAP);
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, VIW_DDP_EC_T_BASE_BOUNDS,
		   ~0ULL - 15, 16, true);
	CHECK_CAUSE(c, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		    VIW_RDMAP_EC_BASE_BOUNDS);
	c = tagged(VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		   VIW_RDMAP_EC_ACCESS, 0, 64, true);
	CHECK_CAUSE(c, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		    VIW_RDMAP_EC_ACCESS);
	/* not a tagged buffer error: left alone */
	c = tagged(VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
		   VIW_DDP_EC_UT_INVALID_MSN_RANGE, ~0ULL, 64, true);
	CHECK_CAUSE(c, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
		    VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	/* a refused READ source is a remote access error for the requester */
	for (code = 0; code <= 4; code++) {
		c = tagged(VIW_TERM_DDP, VIW_DDP_ET_TAGGED, (u8)code, 0, 1,
			   true);
		CHECK_EQ(viw_term_to_wc_status(&c), VIW_CQE_REM_ACCESS_ERR);
	}
}

int main(void)
{
	RUN(test_round_trips);
	RUN(test_known_bytes);
	RUN(test_segment);
	RUN(test_siw_quirks);
	RUN(test_encode_errors);
	RUN(test_wc_status);
	RUN(test_tagged_ddp);
	RUN(test_tagged_rdmap);
	return tc_done("wire.term");
}
