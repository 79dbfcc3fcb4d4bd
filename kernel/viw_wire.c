// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw wire codec: MPA connection setup frames (RFC 5044, RFC 6581), FPDU
 * framing helpers, DDP/RDMAP segment headers (RFC 5041, RFC 5040, RFC
 * 7306) and the TERMINATE message.
 *
 * The codec only converts between bytes and structs and applies the rules
 * that follow from the bytes alone; state (MSNs, STags, IRD/ORD limits,
 * CRC computation) belongs to the callers.  It is shared verbatim by the
 * module and the user-space tests and fuzzers, so it uses nothing beyond
 * memcmp/memcpy/memset and errno values.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif
#include <rdma/viw-abi.h>

#include "viw_wire.h"

/* ---- byte order helpers ------------------------------------------------- */

static inline u16 viw_get_be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static inline u32 viw_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline u64 viw_get_be64(const u8 *p)
{
	return (u64)viw_get_be32(p) << 32 | viw_get_be32(p + 4);
}

static inline void viw_put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void viw_put_be32(u8 *p, u32 v)
{
	viw_put_be16(p, v >> 16);
	viw_put_be16(p + 2, v & 0xffff);
}

static inline void viw_put_be64(u8 *p, u64 v)
{
	viw_put_be32(p, v >> 32);
	viw_put_be32(p + 4, v & 0xffffffffU);
}

/* ---- MPA request/reply frames ------------------------------------------- */

static const char viw_mpa_key_req[] = "MPA ID Req Frame";
static const char viw_mpa_key_rep[] = "MPA ID Rep Frame";

/*
 * Flags byte.  0x10 is the RFC 6581 "enhanced" bit (only meaningful with
 * revision 2).  0x08 is siw's experimental GSO flag and 0x07 is reserved:
 * both are never sent and ignored on receipt, as RFC 5044 asks for
 * reserved bits.
 */
#define VIW_MPA_F_MARKERS	0x80
#define VIW_MPA_F_CRC		0x40
#define VIW_MPA_F_REJECT	0x20
#define VIW_MPA_F_ENHANCED	0x10

/* RFC 6581 words: IRD word first, ORD word second. */
#define VIW_MPA_V2_P2P		0x8000	/* IRD word */
#define VIW_MPA_V2_SEND0	0x4000	/* IRD word: zero-length SEND RTR */
#define VIW_MPA_V2_WRITE0	0x8000	/* ORD word: zero-length WRITE RTR */
#define VIW_MPA_V2_READ0	0x4000	/* ORD word: zero-length READ RTR */

#define VIW_RTR_ALL	(VIW_RTR_SEND0 | VIW_RTR_WRITE0 | VIW_RTR_READ0)

static bool viw_mpa_rev_ok(u8 revision)
{
	return revision == 1 || revision == 2;
}

/*
 * What viw_mpa_encode() refuses to put on the wire.  The RFC 6581 fields
 * are only looked at for an enhanced frame; RTR bits mean nothing without
 * P, so they are refused rather than silently dropped.
 */
static int viw_mpa_check_frame(const struct viw_mpa_frame *frame)
{
	if (!viw_mpa_rev_ok(frame->revision))
		return -EINVAL;
	if (frame->reject && !frame->reply)
		return -EINVAL;
	if (!frame->enhanced)
		return 0;
	if (frame->revision != 2)
		return -EINVAL;
	if (frame->ird > VIW_MPA_MAX_IRD_ORD || frame->ord > VIW_MPA_MAX_IRD_ORD)
		return -EINVAL;
	if (frame->rtr & ~VIW_RTR_ALL)
		return -EINVAL;
	if (frame->rtr && !frame->p2p)
		return -EINVAL;
	return 0;
}

static u8 viw_mpa_flags(const struct viw_mpa_frame *frame)
{
	u8 flags = 0;

	if (frame->markers)
		flags |= VIW_MPA_F_MARKERS;
	if (frame->crc)
		flags |= VIW_MPA_F_CRC;
	if (frame->reject)
		flags |= VIW_MPA_F_REJECT;
	if (frame->enhanced)
		flags |= VIW_MPA_F_ENHANCED;
	return flags;
}

static void viw_mpa_put_v2(u8 *p, const struct viw_mpa_frame *frame)
{
	u16 ird = frame->ird;
	u16 ord = frame->ord;

	if (frame->p2p)
		ird |= VIW_MPA_V2_P2P;
	if (frame->rtr & VIW_RTR_SEND0)
		ird |= VIW_MPA_V2_SEND0;
	if (frame->rtr & VIW_RTR_WRITE0)
		ord |= VIW_MPA_V2_WRITE0;
	if (frame->rtr & VIW_RTR_READ0)
		ord |= VIW_MPA_V2_READ0;
	viw_put_be16(p, ird);
	viw_put_be16(p + 2, ord);
}

int viw_mpa_encode(u8 *buf, size_t len, struct viw_mpa_frame *frame,
		   u16 ulp_pd_len)
{
	u32 ext = frame->enhanced ? VIW_MPA_V2_EXT_LEN : 0;
	int rv;

	rv = viw_mpa_check_frame(frame);
	if (rv)
		return rv;
	if (ulp_pd_len + ext > VIW_MPA_MAX_PDATA)
		return -EMSGSIZE;
	if (len < VIW_MPA_HDR_LEN + ext)
		return -ENOSPC;

	frame->pd_len = ulp_pd_len + ext;
	memcpy(buf, frame->reply ? viw_mpa_key_rep : viw_mpa_key_req,
	       VIW_MPA_KEY_LEN);
	buf[16] = viw_mpa_flags(frame);
	buf[17] = frame->revision;
	viw_put_be16(buf + 18, frame->pd_len);
	if (frame->enhanced)
		viw_mpa_put_v2(buf + VIW_MPA_HDR_LEN, frame);
	return VIW_MPA_HDR_LEN + ext;
}

/*
 * A wrong key means the bytes are not the frame we wait for at all
 * (-EBADMSG); a well-formed frame we cannot speak is -EPROTO.  R in a
 * request and the enhanced bit in a revision 1 frame are reserved bits
 * there, so they are ignored rather than refused.
 */
int viw_mpa_decode_hdr(const u8 *buf, size_t len, bool reply,
		       struct viw_mpa_frame *frame)
{
	u8 flags;

	memset(frame, 0, sizeof(*frame));
	if (len < VIW_MPA_HDR_LEN)
		return -EBADMSG;
	if (memcmp(buf, reply ? viw_mpa_key_rep : viw_mpa_key_req,
		   VIW_MPA_KEY_LEN))
		return -EBADMSG;

	flags = buf[16];
	frame->reply = reply;
	frame->markers = flags & VIW_MPA_F_MARKERS;
	frame->crc = flags & VIW_MPA_F_CRC;
	frame->reject = reply && (flags & VIW_MPA_F_REJECT);
	frame->revision = buf[17];
	frame->enhanced = frame->revision == 2 && (flags & VIW_MPA_F_ENHANCED);
	frame->pd_len = viw_get_be16(buf + 18);

	if (!viw_mpa_rev_ok(frame->revision))
		return -EPROTO;
	if (frame->pd_len > VIW_MPA_MAX_PDATA)
		return -EPROTO;
	if (frame->enhanced && frame->pd_len < VIW_MPA_V2_EXT_LEN)
		return -EPROTO;
	return 0;
}

/* RTR bits are only defined together with P; without it they are noise. */
int viw_mpa_decode_v2(const u8 *pdata, size_t len,
		      struct viw_mpa_frame *frame)
{
	u16 ird, ord;

	if (len < VIW_MPA_V2_EXT_LEN)
		return -EBADMSG;

	ird = viw_get_be16(pdata);
	ord = viw_get_be16(pdata + 2);
	frame->p2p = ird & VIW_MPA_V2_P2P;
	frame->ird = ird & VIW_MPA_MAX_IRD_ORD;
	frame->ord = ord & VIW_MPA_MAX_IRD_ORD;
	frame->rtr = 0;
	if (!frame->p2p)
		return 0;
	if (ird & VIW_MPA_V2_SEND0)
		frame->rtr |= VIW_RTR_SEND0;
	if (ord & VIW_MPA_V2_WRITE0)
		frame->rtr |= VIW_RTR_WRITE0;
	if (ord & VIW_MPA_V2_READ0)
		frame->rtr |= VIW_RTR_READ0;
	return 0;
}

/*
 * viw can receive all three RTR messages.  WRITE0 costs the responder
 * nothing (and is siw's choice too); READ0 costs a Read Response and an
 * inbound read slot; SEND0 consumes a posted receive, so it comes last.
 * Returns 0 if nothing offered is usable.
 */
u8 viw_mpa_pick_rtr(u8 offered)
{
	if (offered & VIW_RTR_WRITE0)
		return VIW_RTR_WRITE0;
	if (offered & VIW_RTR_READ0)
		return VIW_RTR_READ0;
	if (offered & VIW_RTR_SEND0)
		return VIW_RTR_SEND0;
	return 0;
}

/*
 * P in the request asks for an RTR message.  A responder that does not
 * want peer-to-peer mode answers with P clear (RFC 6581); one that does
 * echoes P and picks exactly one of the offered RTR types.
 */
static int viw_mpa_reply_p2p(const struct viw_mpa_frame *req,
			     const struct viw_mpa_prefs *prefs,
			     struct viw_mpa_frame *rep)
{
	if (!req->p2p || !prefs->p2p)
		return 0;
	rep->rtr = viw_mpa_pick_rtr(req->rtr);
	if (!rep->rtr)
		return -EPROTO;
	rep->p2p = true;
	return 0;
}

/*
 * The reply follows the request's revision whatever prefs->revision says:
 * viw speaks both, and strict initiators (siw) drop a connection whose
 * reply revision differs.  prefs->revision and prefs->rtr only shape the
 * requests viw sends.  CRC is on if either side asks (RFC 5044).
 */
int viw_mpa_build_reply(const struct viw_mpa_frame *req,
			const struct viw_mpa_prefs *prefs, u16 ird, u16 ord,
			struct viw_mpa_frame *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (req->reply)
		return -EINVAL;
	if (req->markers || !viw_mpa_rev_ok(req->revision))
		return -EPROTO;
	if (req->enhanced && req->revision != 2)
		return -EPROTO;

	rep->reply = true;
	rep->crc = req->crc || prefs->crc;
	rep->revision = req->revision;
	rep->enhanced = req->enhanced;
	if (!rep->enhanced)
		return 0;
	if (ird > VIW_MPA_MAX_IRD_ORD || ord > VIW_MPA_MAX_IRD_ORD)
		return -EINVAL;
	rep->ird = ird;
	rep->ord = ord;
	return viw_mpa_reply_p2p(req, prefs, rep);
}

static bool viw_one_bit(u8 v)
{
	return v && !(v & (v - 1));
}

/* P in a reply must answer P in the request with one offered RTR type. */
static int viw_mpa_check_p2p(const struct viw_mpa_frame *req,
			     const struct viw_mpa_frame *rep)
{
	if (!rep->p2p)
		return 0;
	if (!req->p2p || !viw_one_bit(rep->rtr) || !(rep->rtr & req->rtr))
		return -EPROTO;
	return 0;
}

/*
 * A reject is reported as such even if the rest of the reply is odd: the
 * peer said no, and that is what the consumer needs to hear.
 */
int viw_mpa_check_reply(const struct viw_mpa_frame *req,
			const struct viw_mpa_frame *rep)
{
	if (!rep->reply)
		return -EPROTO;
	if (rep->reject)
		return -ECONNREFUSED;
	if (rep->revision != req->revision || rep->markers)
		return -EPROTO;
	if (req->crc && !rep->crc)
		return -EPROTO;
	if (rep->enhanced != req->enhanced)
		return -EPROTO;
	if (!rep->enhanced)
		return 0;
	return viw_mpa_check_p2p(req, rep);
}

/* ---- FPDU framing ------------------------------------------------------- */

#define VIW_MULPDU_MIN		128U
/* Largest FPDU whose ULPDU_Length still fits 16 bits, with a zero pad. */
#define VIW_FPDU_MAX		(VIW_MPA_LEN_SIZE + 0xfffeU + VIW_MPA_CRC_SIZE)

/*
 * The largest ULPDU with viw_fpdu_len() <= emss: the FPDU is a multiple of
 * four, so the length field plus ULPDU may use emss - CRC rounded down to
 * four.  Such a ULPDU never needs a pad.
 */
u32 viw_mulpdu(u32 emss)
{
	u32 ulpdu;

	if (emss > VIW_FPDU_MAX)
		emss = VIW_FPDU_MAX;
	if (emss < VIW_MULPDU_MIN + VIW_MPA_LEN_SIZE + VIW_MPA_CRC_SIZE)
		return VIW_MULPDU_MIN;
	ulpdu = ((emss - VIW_MPA_CRC_SIZE) & ~3U) - VIW_MPA_LEN_SIZE;
	return ulpdu < VIW_MULPDU_MIN ? VIW_MULPDU_MIN : ulpdu;
}

/*
 * The kernel's crc32c shash stores its final value in little-endian
 * order; siw (and every other iWARP stack) put exactly those bytes on the
 * wire.
 */
void viw_put_crc(u8 *p, u32 crc)
{
	p[0] = crc & 0xff;
	p[1] = (crc >> 8) & 0xff;
	p[2] = (crc >> 16) & 0xff;
	p[3] = crc >> 24;
}

u32 viw_get_crc(const u8 *p)
{
	return (u32)p[3] << 24 | (u32)p[2] << 16 | (u32)p[1] << 8 | p[0];
}

/* ---- DDP / RDMAP segment headers ---------------------------------------- */

/* DDP control byte */
#define VIW_DDP_F_TAGGED	0x80
#define VIW_DDP_F_LAST		0x40
#define VIW_DDP_RSVD		0x3c
#define VIW_DDP_DV		0x03
#define VIW_DDP_VERSION		0x01
/* RDMAP control byte */
#define VIW_RDMAP_RV		0xc0
#define VIW_RDMAP_RSVD		0x30
#define VIW_RDMAP_OPCODE	0x0f
#define VIW_RDMAP_VERSION	0x40	/* RV = 1 */

/* Field offsets from the DDP control byte */
#define VIW_OFF_STAG		2	/* tagged */
#define VIW_OFF_TO		6
#define VIW_OFF_RSVDULP		2	/* untagged */
#define VIW_OFF_QN		6
#define VIW_OFF_MSN		10
#define VIW_OFF_MO		14

/* What the opcode implies for the rest of the header. */
struct viw_op_info {
	bool defined;		/* an opcode viw speaks */
	bool tagged;
	bool single;		/* one segment: L set, MO 0 */
	bool inv;		/* RsvdULP carries the STag to invalidate */
	u8 qn;			/* untagged queue */
	u8 body;		/* fixed RDMAP bytes after the DDP header */
};

static const struct viw_op_info viw_ops[VIW_RDMAP_OPCODE_MAX + 1] = {
	[VIW_RDMAP_WRITE] = { .defined = true, .tagged = true },
	[VIW_RDMAP_READ_REQ] = { .defined = true, .single = true,
				 .qn = VIW_QN_READ_REQ,
				 .body = VIW_RDMAP_READ_REQ_LEN },
	[VIW_RDMAP_READ_RESP] = { .defined = true, .tagged = true },
	[VIW_RDMAP_SEND] = { .defined = true, .qn = VIW_QN_SEND },
	[VIW_RDMAP_SEND_INV] = { .defined = true, .inv = true,
				 .qn = VIW_QN_SEND },
	[VIW_RDMAP_SEND_SE] = { .defined = true, .qn = VIW_QN_SEND },
	[VIW_RDMAP_SEND_SE_INV] = { .defined = true, .inv = true,
				    .qn = VIW_QN_SEND },
	[VIW_RDMAP_TERMINATE] = { .defined = true, .single = true,
				  .qn = VIW_QN_TERMINATE,
				  .body = VIW_RDMAP_TERM_CTRL_LEN },
	/*
	 * viw's SEND with immediate spans segments; RFC 7306's own form is
	 * a single segment, checked with the flags of its body.
	 */
	[VIW_RDMAP_IMM] = { .defined = true, .qn = VIW_QN_SEND,
			    .body = VIW_RDMAP_IMM_LEN },
	[VIW_RDMAP_IMM_SE] = { .defined = true, .qn = VIW_QN_SEND,
			       .body = VIW_RDMAP_IMM_LEN },
	[VIW_RDMAP_ATOMIC_REQ] = { .defined = true, .single = true,
				   .qn = VIW_QN_READ_REQ,
				   .body = VIW_RDMAP_ATOMIC_REQ_LEN },
	[VIW_RDMAP_ATOMIC_RESP] = { .defined = true, .single = true,
				    .qn = VIW_QN_ATOMIC_RESP,
				    .body = VIW_RDMAP_ATOMIC_RESP_LEN },
	[VIW_RDMAP_ACK] = { .defined = true, .single = true,
			    .qn = VIW_QN_ACK, .body = VIW_RDMAP_ACK_LEN },
};

static bool viw_op_defined(u8 opcode)
{
	return opcode <= VIW_RDMAP_OPCODE_MAX && viw_ops[opcode].defined;
}

static int viw_cause(struct viw_term_cause *cause, u8 layer, u8 etype,
		     u8 ecode)
{
	cause->layer = layer;
	cause->etype = etype;
	cause->ecode = ecode;
	return -EPROTO;
}

static int viw_ddp_version_err(struct viw_term_cause *cause, bool tagged)
{
	if (tagged)
		return viw_cause(cause, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
				 VIW_DDP_EC_T_VERSION);
	return viw_cause(cause, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
			 VIW_DDP_EC_UT_VERSION);
}

static int viw_opcode_err(struct viw_term_cause *cause)
{
	return viw_cause(cause, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			 VIW_RDMAP_EC_OPCODE);
}

/*
 * Checks that need only the two control bytes.  Reserved bits that are
 * set are reported as a version error of their layer: a peer that sets
 * them speaks a format we do not know, which is what the version error
 * says, and it tells the peer which layer to look at.  A single-segment
 * type (Read Request, TERMINATE) without L and a tagged opcode in an
 * untagged segment (or the reverse) are both an opcode used in a way RDMAP
 * does not define, so they get the opcode error.  Inline: every FPDU
 * received goes through it twice (its length, then its header).
 */
static inline int viw_ctrl_check(const u8 *ctrl, struct viw_term_cause *cause)
{
	bool tagged = ctrl[0] & VIW_DDP_F_TAGGED;
	u8 opcode = ctrl[1] & VIW_RDMAP_OPCODE;

	if ((ctrl[0] & (VIW_DDP_RSVD | VIW_DDP_DV)) != VIW_DDP_VERSION)
		return viw_ddp_version_err(cause, tagged);
	if ((ctrl[1] & (VIW_RDMAP_RSVD | VIW_RDMAP_RV)) != VIW_RDMAP_VERSION)
		return viw_cause(cause, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
				 VIW_RDMAP_EC_VERSION);
	if (!viw_op_defined(opcode) || viw_ops[opcode].tagged != tagged)
		return viw_opcode_err(cause);
	if (viw_ops[opcode].single && !(ctrl[0] & VIW_DDP_F_LAST))
		return viw_opcode_err(cause);
	return 0;
}

static u32 viw_op_hdr_len(const struct viw_op_info *op)
{
	return (op->tagged ? VIW_DDP_TAGGED_HDR_LEN :
			     VIW_DDP_UNTAGGED_HDR_LEN) + op->body;
}

u32 viw_ddp_hdr_len(const u8 ctrl[2])
{
	struct viw_term_cause cause;

	if (viw_ctrl_check(ctrl, &cause))
		return 0;
	return viw_op_hdr_len(&viw_ops[ctrl[1] & VIW_RDMAP_OPCODE]);
}

/*
 * A segment shorter than its own header: MPA framed it correctly (the CRC
 * matched), yet the contents cannot be parsed.  RFC 5041 has no code for
 * that; DDP "local catastrophic" (type 0, code 0, as siw uses for
 * malformed segments) is the closest.
 */
static int viw_ddp_short(struct viw_term_cause *cause)
{
	viw_cause(cause, VIW_TERM_DDP, VIW_DDP_ET_CATASTROPHIC, 0);
	return -EBADMSG;
}

static int viw_ddp_decode_untagged(const u8 *buf, struct viw_ddp_hdr *hdr,
				   struct viw_term_cause *cause)
{
	const struct viw_op_info *op = &viw_ops[hdr->opcode];

	hdr->qn = viw_get_be32(buf + VIW_OFF_QN);
	hdr->msn = viw_get_be32(buf + VIW_OFF_MSN);
	hdr->mo = viw_get_be32(buf + VIW_OFF_MO);
	/* RsvdULP is reserved (ignored) for all other untagged opcodes. */
	if (op->inv)
		hdr->inv_stag = viw_get_be32(buf + VIW_OFF_RSVDULP);

	if (hdr->qn != op->qn)
		return viw_cause(cause, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
				 VIW_DDP_EC_UT_INVALID_QN);
	if (op->single && hdr->mo)
		return viw_cause(cause, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED,
				 VIW_DDP_EC_UT_INVALID_MO);
	return 0;
}

/*
 * Returns -EPROTO for a header to be answered with a TERMINATE and
 * -EBADMSG if @len is shorter than the header; @cause is set for both.
 */
int viw_ddp_decode(const u8 *buf, size_t len, struct viw_ddp_hdr *hdr,
		   struct viw_term_cause *cause)
{
	int rv;

	memset(hdr, 0, sizeof(*hdr));
	if (len < 2)
		return viw_ddp_short(cause);
	rv = viw_ctrl_check(buf, cause);
	if (rv)
		return rv;

	hdr->opcode = buf[1] & VIW_RDMAP_OPCODE;
	hdr->tagged = buf[0] & VIW_DDP_F_TAGGED;
	hdr->last = buf[0] & VIW_DDP_F_LAST;
	if (len < viw_op_hdr_len(&viw_ops[hdr->opcode]))
		return viw_ddp_short(cause);
	if (!hdr->tagged)
		return viw_ddp_decode_untagged(buf, hdr, cause);

	hdr->stag = viw_get_be32(buf + VIW_OFF_STAG);
	hdr->to = viw_get_be64(buf + VIW_OFF_TO);
	return 0;
}

/* Refuse anything viw_ddp_decode() would refuse, so bugs show up here. */
static bool viw_ddp_hdr_ok(const struct viw_ddp_hdr *hdr)
{
	const struct viw_op_info *op;

	if (!viw_op_defined(hdr->opcode))
		return false;
	op = &viw_ops[hdr->opcode];
	if (hdr->tagged != op->tagged || (op->single && !hdr->last))
		return false;
	if (op->tagged)
		return true;
	return hdr->qn == op->qn && !(op->single && hdr->mo);
}

int viw_ddp_encode(u8 *buf, size_t len, const struct viw_ddp_hdr *hdr)
{
	u32 hlen;

	if (!viw_ddp_hdr_ok(hdr))
		return -EINVAL;
	hlen = hdr->tagged ? VIW_DDP_TAGGED_HDR_LEN : VIW_DDP_UNTAGGED_HDR_LEN;
	if (len < hlen)
		return -ENOSPC;

	buf[0] = VIW_DDP_VERSION;
	if (hdr->tagged)
		buf[0] |= VIW_DDP_F_TAGGED;
	if (hdr->last)
		buf[0] |= VIW_DDP_F_LAST;
	buf[1] = VIW_RDMAP_VERSION | hdr->opcode;
	if (hdr->tagged) {
		viw_put_be32(buf + VIW_OFF_STAG, hdr->stag);
		viw_put_be64(buf + VIW_OFF_TO, hdr->to);
		return hlen;
	}
	viw_put_be32(buf + VIW_OFF_RSVDULP,
		     viw_ops[hdr->opcode].inv ? hdr->inv_stag : 0);
	viw_put_be32(buf + VIW_OFF_QN, hdr->qn);
	viw_put_be32(buf + VIW_OFF_MSN, hdr->msn);
	viw_put_be32(buf + VIW_OFF_MO, hdr->mo);
	return hlen;
}

void viw_read_req_encode(u8 *buf, const struct viw_read_req *rr)
{
	viw_put_be32(buf, rr->sink_stag);
	viw_put_be64(buf + 4, rr->sink_to);
	viw_put_be32(buf + 12, rr->size);
	viw_put_be32(buf + 16, rr->src_stag);
	viw_put_be64(buf + 20, rr->src_to);
}

void viw_read_req_decode(const u8 *buf, struct viw_read_req *rr)
{
	rr->sink_stag = viw_get_be32(buf);
	rr->sink_to = viw_get_be64(buf + 4);
	rr->size = viw_get_be32(buf + 12);
	rr->src_stag = viw_get_be32(buf + 16);
	rr->src_to = viw_get_be64(buf + 20);
}

/*
 * Atomic Request body: Reserved (28 bits) and Atomic Operation Code (4),
 * Request Identifier, Remote STag, Remote Tagged Offset, then the four
 * 64-bit operands.  Atomic Response body: Original Request Identifier and
 * Original Remote Data Value.
 */
#define VIW_ATOMIC_OP_MASK	0xfU

void viw_atomic_req_encode(u8 *buf, const struct viw_atomic_req *ar)
{
	viw_put_be32(buf, ar->op & VIW_ATOMIC_OP_MASK);
	viw_put_be32(buf + 4, ar->req_id);
	viw_put_be32(buf + 8, ar->stag);
	viw_put_be64(buf + 12, ar->to);
	viw_put_be64(buf + 20, ar->add_swap);
	viw_put_be64(buf + 28, ar->add_swap_mask);
	viw_put_be64(buf + 36, ar->compare);
	viw_put_be64(buf + 44, ar->compare_mask);
}

/*
 * An operation code viw does not know, like reserved bits that are set,
 * is a request RDMAP does not define: the unexpected opcode error, as for
 * an unknown RDMAP opcode.
 */
int viw_atomic_req_decode(const u8 *buf, struct viw_atomic_req *ar,
			  struct viw_term_cause *cause)
{
	u32 w = viw_get_be32(buf);

	ar->op = w & VIW_ATOMIC_OP_MASK;
	ar->req_id = viw_get_be32(buf + 4);
	ar->stag = viw_get_be32(buf + 8);
	ar->to = viw_get_be64(buf + 12);
	ar->add_swap = viw_get_be64(buf + 20);
	ar->add_swap_mask = viw_get_be64(buf + 28);
	ar->compare = viw_get_be64(buf + 36);
	ar->compare_mask = viw_get_be64(buf + 44);
	if (w & ~VIW_ATOMIC_OP_MASK ||
	    (ar->op != VIW_ATOMIC_FETCH_ADD && ar->op != VIW_ATOMIC_CMP_SWAP))
		return viw_opcode_err(cause);
	return 0;
}

void viw_atomic_resp_encode(u8 *buf, const struct viw_atomic_resp *resp)
{
	viw_put_be32(buf, resp->req_id);
	viw_put_be64(buf + 4, resp->orig);
}

void viw_atomic_resp_decode(const u8 *buf, struct viw_atomic_resp *resp)
{
	resp->req_id = viw_get_be32(buf);
	resp->orig = viw_get_be64(buf + 4);
}

void viw_ack_encode(u8 *buf, u32 placed)
{
	viw_put_be32(buf, placed);
}

u32 viw_ack_decode(const u8 *buf)
{
	return viw_get_be32(buf);
}

void viw_imm_encode(u8 *buf, const struct viw_imm *imm)
{
	viw_put_be32(buf, imm->data);
	viw_put_be32(buf + 4, imm->send ? VIW_IMM_F_SEND : 0);
}

/* Unknown flags, like an unknown Atomic Operation Code: unexpected opcode. */
int viw_imm_decode(const u8 *buf, struct viw_imm *imm,
		   struct viw_term_cause *cause)
{
	u32 flags = viw_get_be32(buf + 4);

	imm->data = viw_get_be32(buf);
	imm->send = flags & VIW_IMM_F_SEND;
	if (flags & ~VIW_IMM_F_SEND)
		return viw_opcode_err(cause);
	return 0;
}

/*
 * Field-wise add: with the mask bits (the top bit of each field) cleared
 * in both operands, no carry crosses a field; the top bits are the XOR of
 * the operands' top bits and the carry that reached them.
 */
static u64 viw_masked_add(u64 a, u64 b, u64 mask)
{
	return ((a & ~mask) + (b & ~mask)) ^ ((a ^ b) & mask);
}

u64 viw_atomic_apply(const struct viw_atomic_req *ar, u64 orig)
{
	if (ar->op == VIW_ATOMIC_FETCH_ADD)
		return viw_masked_add(orig, ar->add_swap, ar->add_swap_mask);
	if ((orig ^ ar->compare) & ar->compare_mask)
		return orig;
	return (orig & ~ar->add_swap_mask) |
	       (ar->add_swap & ar->add_swap_mask);
}

/* ---- TERMINATE ---------------------------------------------------------- */

/*
 * Control word: Layer(31:28) EType(27:24) ErrorCode(23:16) M D R, then 13
 * reserved bits, ignored on receipt.  The optional parts follow without
 * padding: 16-bit DDP segment length, the terminated DDP header (whose T
 * bit gives its length) and the 28-byte Read Request body.  This is also
 * how siw lays them out and parses them (siw_send_terminate() sends the
 * length and header as one 2-byte-MPA-length-plus-header block).
 */
#define VIW_TERM_F_M		0x8000
#define VIW_TERM_F_D		0x4000
#define VIW_TERM_F_R		0x2000

static u8 viw_term_hdr_len(const u8 *ddp_hdr)
{
	return ddp_hdr[0] & VIW_DDP_F_TAGGED ? VIW_DDP_TAGGED_HDR_LEN :
					       VIW_DDP_UNTAGGED_HDR_LEN;
}

static bool viw_term_hdr_is_rreq(const u8 *ddp_hdr)
{
	return !(ddp_hdr[0] & VIW_DDP_F_TAGGED) &&
	       (ddp_hdr[1] & VIW_RDMAP_OPCODE) == VIW_RDMAP_READ_REQ;
}

/*
 * siw sets R for every remote protection error, also when the terminated
 * header is a SEND or WRITE and no Read Request follows.  So a Read
 * Request body is only expected when the terminated DDP header, if
 * present, is that of a Read Request.
 */
static bool viw_term_rreq_follows(const struct viw_term *term)
{
	return !term->has_ddp_hdr || viw_term_hdr_is_rreq(term->ddp_hdr);
}

static int viw_term_body_len(const struct viw_term *term)
{
	int len = VIW_RDMAP_TERM_CTRL_LEN;

	if (term->cause.layer > 0xf || term->cause.etype > 0xf)
		return -EINVAL;
	if (term->has_len)
		len += 2;
	if (term->has_ddp_hdr) {
		if (term->ddp_hdr_len != viw_term_hdr_len(term->ddp_hdr))
			return -EINVAL;
		len += term->ddp_hdr_len;
	}
	if (term->has_rreq) {
		if (!viw_term_rreq_follows(term))
			return -EINVAL;
		len += VIW_RDMAP_READ_REQ_LEN;
	}
	return len;
}

static u32 viw_term_ctrl(const struct viw_term *term)
{
	u32 w = (u32)term->cause.layer << 28 | (u32)term->cause.etype << 24 |
		(u32)term->cause.ecode << 16;

	if (term->has_len)
		w |= VIW_TERM_F_M;
	if (term->has_ddp_hdr)
		w |= VIW_TERM_F_D;
	if (term->has_rreq)
		w |= VIW_TERM_F_R;
	return w;
}

int viw_term_encode(u8 *buf, size_t len, const struct viw_term *term)
{
	int blen = viw_term_body_len(term);
	u8 *p;

	if (blen < 0)
		return blen;
	if (len < (size_t)blen)
		return -ENOSPC;

	viw_put_be32(buf, viw_term_ctrl(term));
	p = buf + VIW_RDMAP_TERM_CTRL_LEN;
	if (term->has_len) {
		viw_put_be16(p, term->seg_len);
		p += 2;
	}
	if (term->has_ddp_hdr) {
		memcpy(p, term->ddp_hdr, term->ddp_hdr_len);
		p += term->ddp_hdr_len;
	}
	if (term->has_rreq)
		memcpy(p, term->rreq, VIW_RDMAP_READ_REQ_LEN);
	return blen;
}

/* The terminated DDP header at @buf + *pos; advances *pos past it. */
static int viw_term_decode_hdr(const u8 *buf, size_t len, size_t *pos,
			       struct viw_term *term)
{
	u8 hlen;

	if (len < *pos + 1)
		return -EBADMSG;
	hlen = viw_term_hdr_len(buf + *pos);
	if (len < *pos + hlen)
		return -EBADMSG;
	memcpy(term->ddp_hdr, buf + *pos, hlen);
	term->ddp_hdr_len = hlen;
	term->has_ddp_hdr = true;
	*pos += hlen;
	return 0;
}

/*
 * Bytes after the parts the flags announce are ignored: siw sends 18
 * bytes for a terminated tagged header in some cases.
 */
int viw_term_decode(const u8 *buf, size_t len, struct viw_term *term)
{
	size_t pos = VIW_RDMAP_TERM_CTRL_LEN;
	u32 w;

	memset(term, 0, sizeof(*term));
	if (len < VIW_RDMAP_TERM_CTRL_LEN)
		return -EBADMSG;
	w = viw_get_be32(buf);
	term->cause.layer = w >> 28;
	term->cause.etype = (w >> 24) & 0xf;
	term->cause.ecode = (w >> 16) & 0xff;

	if (w & VIW_TERM_F_M) {
		if (len < pos + 2)
			return -EBADMSG;
		term->seg_len = viw_get_be16(buf + pos);
		term->has_len = true;
		pos += 2;
	}
	if ((w & VIW_TERM_F_D) && viw_term_decode_hdr(buf, len, &pos, term))
		return -EBADMSG;
	if (!(w & VIW_TERM_F_R) || !viw_term_rreq_follows(term))
		return 0;
	if (len < pos + VIW_RDMAP_READ_REQ_LEN)
		return -EBADMSG;
	memcpy(term->rreq, buf + pos, VIW_RDMAP_READ_REQ_LEN);
	term->has_rreq = true;
	return 0;
}

/* RDMAP remote protection codes for the DDP tagged buffer codes. */
static const u8 viw_rdmap_prot_ecode[] = {
	[VIW_DDP_EC_T_INVALID_STAG] = VIW_RDMAP_EC_INVALID_STAG,
	[VIW_DDP_EC_T_BASE_BOUNDS] = VIW_RDMAP_EC_BASE_BOUNDS,
	[VIW_DDP_EC_T_STAG_NOT_ASSOC] = VIW_RDMAP_EC_STAG_NOT_ASSOC,
	[VIW_DDP_EC_T_TO_WRAP] = VIW_RDMAP_EC_TO_WRAP,
};

/* Whether the last byte of [@to, @to + @len) is past the 64-bit TO space. */
static bool viw_to_wraps(u64 to, u32 len)
{
	return len && to + (len - 1) < to;
}

void viw_term_tagged_cause(struct viw_term_cause *cause, u64 to, u32 len,
			   bool rdmap)
{
	if (cause->layer != VIW_TERM_DDP || cause->etype != VIW_DDP_ET_TAGGED)
		return;
	if (cause->ecode == VIW_DDP_EC_T_BASE_BOUNDS && viw_to_wraps(to, len))
		cause->ecode = VIW_DDP_EC_T_TO_WRAP;
	if (!rdmap)
		return;
	cause->layer = VIW_TERM_RDMAP;
	cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
	if (cause->ecode < sizeof(viw_rdmap_prot_ecode))
		cause->ecode = viw_rdmap_prot_ecode[cause->ecode];
	else
		cause->ecode = VIW_RDMAP_EC_UNSPECIFIED;
}

/*
 * TERMINATE cause -> completion status of the work request it kills.
 *
 *   Layer  EType             ErrorCode                 status
 *   RDMAP  catastrophic      any                       REM_OP_ERR
 *   RDMAP  remote protection any                       REM_ACCESS_ERR
 *   RDMAP  remote operation  any                       REM_OP_ERR
 *   DDP    catastrophic      any                       REM_OP_ERR
 *   DDP    tagged            version                   REM_OP_ERR
 *   DDP    tagged            other (STag, bounds, ..)  REM_ACCESS_ERR
 *   DDP    untagged          version                   REM_OP_ERR
 *   DDP    untagged          other                     REM_INV_REQ_ERR
 *   LLP    any               any                       GENERAL_ERR
 *   other                                              GENERAL_ERR
 *
 * Version errors mean the peer could not process the message at all,
 * like the RDMAP remote operation errors.  The untagged codes (invalid
 * QN/MSN/MO, no buffer, message too long) say the message was not
 * acceptable to the receiver; IB reports its closest equivalent, a
 * responder NAK for an invalid request or a too-long message, as
 * REM_INV_REQ_ERR.  iWARP has no RNR retry, so "no buffer" is final.
 * LLP errors are about the stream, not the request.
 */
static u8 viw_ddp_to_wc_status(const struct viw_term_cause *cause)
{
	switch (cause->etype) {
	case VIW_DDP_ET_TAGGED:
		if (cause->ecode == VIW_DDP_EC_T_VERSION)
			return VIW_CQE_REM_OP_ERR;
		return VIW_CQE_REM_ACCESS_ERR;
	case VIW_DDP_ET_UNTAGGED:
		if (cause->ecode == VIW_DDP_EC_UT_VERSION)
			return VIW_CQE_REM_OP_ERR;
		return VIW_CQE_REM_INV_REQ_ERR;
	case VIW_DDP_ET_CATASTROPHIC:
		return VIW_CQE_REM_OP_ERR;
	default:
		return VIW_CQE_GENERAL_ERR;
	}
}

static u8 viw_rdmap_to_wc_status(const struct viw_term_cause *cause)
{
	switch (cause->etype) {
	case VIW_RDMAP_ET_REMOTE_PROT:
		return VIW_CQE_REM_ACCESS_ERR;
	case VIW_RDMAP_ET_REMOTE_OP:
	case VIW_RDMAP_ET_CATASTROPHIC:
		return VIW_CQE_REM_OP_ERR;
	default:
		return VIW_CQE_GENERAL_ERR;
	}
}

u8 viw_term_to_wc_status(const struct viw_term_cause *cause)
{
	switch (cause->layer) {
	case VIW_TERM_RDMAP:
		return viw_rdmap_to_wc_status(cause);
	case VIW_TERM_DDP:
		return viw_ddp_to_wc_status(cause);
	default:
		return VIW_CQE_GENERAL_ERR;
	}
}
