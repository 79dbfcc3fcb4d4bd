// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the viw wire codec.  Every input goes through all
 * decoders, and whatever decodes must survive encode -> decode unchanged.
 * An assertion failure or a sanitizer report is a finding.
 *
 * Reproduce a finding:  ./fuzz_wire crash-<sha1>
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/viw-abi.h>

#include "viw_wire.h"

#define FUZZ_ASSERT(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant %s broken\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Copy to a buffer of exactly @size bytes: libFuzzer's own buffer is
 * exact already, but sub-ranges we hand on must be exact too.
 */
static u8 *dup_exact(const u8 *p, size_t size)
{
	u8 *q = malloc(size ? size : 1);

	FUZZ_ASSERT(q);
	memcpy(q, p, size);
	return q;
}

static bool same_mpa(const struct viw_mpa_frame *a,
		     const struct viw_mpa_frame *b)
{
	return a->reply == b->reply && a->markers == b->markers &&
	       a->crc == b->crc && a->reject == b->reject &&
	       a->enhanced == b->enhanced && a->revision == b->revision &&
	       a->pd_len == b->pd_len && a->p2p == b->p2p &&
	       a->rtr == b->rtr && a->ird == b->ird && a->ord == b->ord;
}

/* Encode @f, decode it back (header and v2 words), expect @f again. */
static void mpa_reencode(const struct viw_mpa_frame *f)
{
	struct viw_mpa_frame e = *f, d;
	u32 ext = f->enhanced ? VIW_MPA_V2_EXT_LEN : 0;
	u8 buf[VIW_MPA_HDR_LEN + VIW_MPA_V2_EXT_LEN];
	int n;

	FUZZ_ASSERT(f->pd_len >= ext);
	n = viw_mpa_encode(buf, sizeof(buf), &e, (u16)(f->pd_len - ext));
	FUZZ_ASSERT(n == (int)(VIW_MPA_HDR_LEN + ext));
	FUZZ_ASSERT(viw_mpa_decode_hdr(buf, (size_t)n, f->reply, &d) == 0);
	if (d.enhanced)
		FUZZ_ASSERT(viw_mpa_decode_v2(buf + VIW_MPA_HDR_LEN, ext,
					      &d) == 0);
	FUZZ_ASSERT(same_mpa(f, &d));
}

/* The responder's answer must always satisfy the initiator's check. */
static void mpa_negotiate(const struct viw_mpa_frame *req, u8 knobs)
{
	struct viw_mpa_prefs prefs = {
		.revision = (knobs & 1) ? 2 : 1,
		.crc = knobs & 2,
		.p2p = knobs & 4,
		.rtr = (knobs >> 3) & 7,
	};
	u16 ird = (knobs & 0x40) ? 0x3fff : 1;
	struct viw_mpa_frame rep;
	int rv = viw_mpa_build_reply(req, &prefs, ird, ird, &rep);

	if (req->markers)
		FUZZ_ASSERT(rv == -EPROTO);
	if (rv)
		return;
	FUZZ_ASSERT(rep.revision == req->revision);
	FUZZ_ASSERT(rep.crc == (req->crc || prefs.crc));
	FUZZ_ASSERT(viw_mpa_check_reply(req, &rep) == 0);
	rep.pd_len = rep.enhanced ? VIW_MPA_V2_EXT_LEN : 0;
	mpa_reencode(&rep);
}

static void fuzz_mpa(const u8 *data, size_t size, bool reply)
{
	struct viw_mpa_frame f;
	size_t avail;
	int rv;

	rv = viw_mpa_decode_hdr(data, size, reply, &f);
	FUZZ_ASSERT(rv == 0 || rv == -EBADMSG || rv == -EPROTO);
	if (rv)
		return;
	FUZZ_ASSERT(f.pd_len <= VIW_MPA_MAX_PDATA);
	if (f.enhanced) {
		avail = size - VIW_MPA_HDR_LEN;
		if (avail > f.pd_len)
			avail = f.pd_len;
		rv = viw_mpa_decode_v2(data + VIW_MPA_HDR_LEN, avail, &f);
		FUZZ_ASSERT(rv == 0 || (rv == -EBADMSG && avail < 4));
		if (rv)
			return;
	}
	mpa_reencode(&f);
	if (!reply)
		mpa_negotiate(&f, size > 24 ? data[24] : 0);
}

static bool same_ddp(const struct viw_ddp_hdr *a, const struct viw_ddp_hdr *b)
{
	return a->opcode == b->opcode && a->tagged == b->tagged &&
	       a->last == b->last && a->stag == b->stag && a->to == b->to &&
	       a->inv_stag == b->inv_stag && a->qn == b->qn &&
	       a->msn == b->msn && a->mo == b->mo;
}

static void check_cause(const struct viw_term_cause *c)
{
	u8 st = viw_term_to_wc_status(c);

	FUZZ_ASSERT(c->layer <= VIW_TERM_LLP);
	FUZZ_ASSERT(st != VIW_CQE_SUCCESS && st <= VIW_CQE_STATUS_MAX);
}

/*
 * An Atomic Request body decodes, or is refused as an unexpected opcode;
 * one that decodes encodes to the same bytes.  Applying it is a pure
 * function: a CmpSwap whose compare fails leaves the value alone.
 */
static void fuzz_atomic_req(const u8 *body)
{
	struct viw_atomic_req ar;
	struct viw_term_cause c;
	u8 buf[VIW_RDMAP_ATOMIC_REQ_LEN];
	u64 orig;
	int rv;

	rv = viw_atomic_req_decode(body, &ar, &c);
	if (rv) {
		FUZZ_ASSERT(rv == -EPROTO && c.layer == VIW_TERM_RDMAP &&
			    c.ecode == VIW_RDMAP_EC_OPCODE);
		check_cause(&c);
		return;
	}
	viw_atomic_req_encode(buf, &ar);
	FUZZ_ASSERT(!memcmp(buf, body, sizeof(buf)));
	orig = ar.add_swap ^ ar.compare;
	if (ar.op == VIW_ATOMIC_CMP_SWAP &&
	    ((orig ^ ar.compare) & ar.compare_mask))
		FUZZ_ASSERT(viw_atomic_apply(&ar, orig) == orig);
	if (ar.op == VIW_ATOMIC_FETCH_ADD && !ar.add_swap_mask)
		FUZZ_ASSERT(viw_atomic_apply(&ar, orig) == orig + ar.add_swap);
}

static void fuzz_atomic_resp(const u8 *body)
{
	struct viw_atomic_resp r;
	u8 buf[VIW_RDMAP_ATOMIC_RESP_LEN];

	viw_atomic_resp_decode(body, &r);
	viw_atomic_resp_encode(buf, &r);
	FUZZ_ASSERT(!memcmp(buf, body, sizeof(buf)));
}

/*
 * An Immediate Data header decodes, or is refused as an unexpected opcode
 * for reserved flag bits; one that decodes encodes to the same bytes.
 */
static void fuzz_imm(const u8 *body)
{
	struct viw_imm imm;
	struct viw_term_cause c;
	u8 buf[VIW_RDMAP_IMM_LEN];
	int rv;

	rv = viw_imm_decode(body, &imm, &c);
	if (rv) {
		FUZZ_ASSERT(rv == -EPROTO && c.layer == VIW_TERM_RDMAP &&
			    c.ecode == VIW_RDMAP_EC_OPCODE);
		check_cause(&c);
		return;
	}
	viw_imm_encode(buf, &imm);
	FUZZ_ASSERT(!memcmp(buf, body, sizeof(buf)));
}

/* The bodies behind a good header: Read Request, TERMINATE, atomics, imm. */
static void fuzz_ddp_body(const u8 *data, size_t size,
			  const struct viw_ddp_hdr *h)
{
	struct viw_read_req rr;
	struct viw_term t;
	u8 buf[VIW_RDMAP_READ_REQ_LEN];

	if (h->opcode == VIW_RDMAP_READ_REQ) {
		viw_read_req_decode(data + VIW_DDP_UNTAGGED_HDR_LEN, &rr);
		viw_read_req_encode(buf, &rr);
		FUZZ_ASSERT(!memcmp(buf, data + VIW_DDP_UNTAGGED_HDR_LEN,
				    sizeof(buf)));
	}
	if (h->opcode == VIW_RDMAP_TERMINATE)
		viw_term_decode(data + VIW_DDP_UNTAGGED_HDR_LEN,
				size - VIW_DDP_UNTAGGED_HDR_LEN, &t);
	if (h->opcode == VIW_RDMAP_ATOMIC_REQ)
		fuzz_atomic_req(data + VIW_DDP_UNTAGGED_HDR_LEN);
	if (h->opcode == VIW_RDMAP_ATOMIC_RESP)
		fuzz_atomic_resp(data + VIW_DDP_UNTAGGED_HDR_LEN);
	if (h->opcode == VIW_RDMAP_IMM || h->opcode == VIW_RDMAP_IMM_SE)
		fuzz_imm(data + VIW_DDP_UNTAGGED_HDR_LEN);
}

static void fuzz_ddp(const u8 *data, size_t size)
{
	struct viw_ddp_hdr h, d;
	struct viw_term_cause c;
	u32 hlen = size >= 2 ? viw_ddp_hdr_len(data) : 0;
	u8 *copy;
	int rv, n;

	rv = viw_ddp_decode(data, size, &h, &c);
	if (size >= 2 && !hlen)
		FUZZ_ASSERT(rv == -EPROTO);
	if (hlen && size < hlen)
		FUZZ_ASSERT(rv == -EBADMSG);
	/* past the control bytes only QN and MO can still be wrong */
	if (hlen && size >= hlen && rv)
		FUZZ_ASSERT(rv == -EPROTO && c.layer == VIW_TERM_DDP &&
			    c.etype == VIW_DDP_ET_UNTAGGED &&
			    (c.ecode == VIW_DDP_EC_UT_INVALID_QN ||
			     c.ecode == VIW_DDP_EC_UT_INVALID_MO));
	if (rv) {
		check_cause(&c);
		return;
	}
	fuzz_ddp_body(data, size, &h);

	/* re-encode over a copy: the body bytes stay as they were */
	copy = dup_exact(data, size);
	n = viw_ddp_encode(copy, size, &h);
	FUZZ_ASSERT(n == (h.tagged ? VIW_DDP_TAGGED_HDR_LEN :
			  VIW_DDP_UNTAGGED_HDR_LEN));
	FUZZ_ASSERT(viw_ddp_hdr_len(copy) == hlen);
	FUZZ_ASSERT(viw_ddp_decode(copy, size, &d, &c) == 0);
	FUZZ_ASSERT(same_ddp(&h, &d));
	/* only the reserved RsvdULP of non-_INV opcodes may differ */
	if (h.tagged || h.opcode == VIW_RDMAP_SEND_INV ||
	    h.opcode == VIW_RDMAP_SEND_SE_INV)
		FUZZ_ASSERT(!memcmp(copy, data, (size_t)n));
	else
		FUZZ_ASSERT(!memcmp(copy, data, 2) &&
			    !memcmp(copy + 6, data + 6, (size_t)n - 6));
	free(copy);
}

static bool same_term(const struct viw_term *a, const struct viw_term *b)
{
	return a->cause.layer == b->cause.layer &&
	       a->cause.etype == b->cause.etype &&
	       a->cause.ecode == b->cause.ecode &&
	       a->has_len == b->has_len && a->has_ddp_hdr == b->has_ddp_hdr &&
	       a->has_rreq == b->has_rreq && a->seg_len == b->seg_len &&
	       a->ddp_hdr_len == b->ddp_hdr_len &&
	       !memcmp(a->ddp_hdr, b->ddp_hdr, sizeof(a->ddp_hdr)) &&
	       !memcmp(a->rreq, b->rreq, sizeof(a->rreq));
}

static void fuzz_term(const u8 *data, size_t size)
{
	struct viw_term t, d;
	u8 buf[64];
	int rv, n;

	rv = viw_term_decode(data, size, &t);
	FUZZ_ASSERT(rv == 0 || rv == -EBADMSG);
	if (rv)
		return;
	/* a peer may send any layer; the mapping must still hold */
	FUZZ_ASSERT(viw_term_to_wc_status(&t.cause) != VIW_CQE_SUCCESS);
	FUZZ_ASSERT(viw_term_to_wc_status(&t.cause) <= VIW_CQE_STATUS_MAX);
	n = viw_term_encode(buf, sizeof(buf), &t);
	FUZZ_ASSERT(n > 0 && (size_t)n <= size && n <= 52);
	FUZZ_ASSERT(viw_term_decode(buf, (size_t)n, &d) == 0);
	FUZZ_ASSERT(same_term(&t, &d));
}

static void fuzz_framing(const u8 *data, size_t size)
{
	u32 emss, m, crc;
	u8 b[4];

	if (size < 4)
		return;
	emss = (u32)data[0] << 24 | (u32)data[1] << 16 |
	       (u32)data[2] << 8 | data[3];
	m = viw_mulpdu(emss);
	FUZZ_ASSERT(m >= 128 && m <= 0xffff);
	if (emss >= 136)
		FUZZ_ASSERT(viw_fpdu_len(m) <= emss);
	FUZZ_ASSERT((viw_fpdu_len(m) & 3) == 0);
	crc = viw_get_crc(data);
	viw_put_crc(b, crc);
	FUZZ_ASSERT(!memcmp(b, data, 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_mpa(data, size, false);
	fuzz_mpa(data, size, true);
	fuzz_ddp(data, size);
	fuzz_term(data, size);
	fuzz_framing(data, size);
	return 0;
}
