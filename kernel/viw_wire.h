/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw wire format: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP
 * (RFC 5040, and the atomic operations and Immediate Data of RFC 7306)
 * headers.
 *
 * Plain C with no kernel dependency: the same viw_wire.c is built into the
 * module and into the user-space unit tests and fuzzers.  All multi-byte
 * fields are read and written byte by byte in network order, so there are
 * no endian types and no alignment requirements on the buffers.  Every
 * decoder validates what it reads and never reads past the length it is
 * given.
 */
#ifndef VIW_WIRE_H
#define VIW_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#endif

/* ---- MPA connection setup ---------------------------------------------- */

#define VIW_MPA_KEY_LEN		16
#define VIW_MPA_HDR_LEN		20	/* key, flags, revision, PD_Length */
#define VIW_MPA_V2_EXT_LEN	4	/* IRD/ORD words at the start of PD */
#define VIW_MPA_MAX_PDATA	512	/* RFC 5044 limit on PD_Length */
#define VIW_MPA_MAX_IRD_ORD	0x3fff

/* RFC 6581 RTR message types, as offered in a request or chosen in a reply */
enum viw_mpa_rtr {
	VIW_RTR_SEND0 = 1 << 0,		/* zero-length SEND */
	VIW_RTR_WRITE0 = 1 << 1,	/* zero-length RDMA WRITE */
	VIW_RTR_READ0 = 1 << 2,		/* zero-length RDMA READ */
};

/* A decoded (or to-be-encoded) MPA request or reply frame. */
struct viw_mpa_frame {
	bool reply;		/* "MPA ID Rep Frame" rather than "Req" */
	bool markers;		/* M: sender requires markers */
	bool crc;		/* C: sender requires CRC */
	bool reject;		/* R: reply rejects the connection */
	bool enhanced;		/* RFC 6581 data leads the private data */
	u8 revision;		/* 1 or 2 */
	u16 pd_len;		/* PD_Length on the wire, incl. the v2 words */
	/* RFC 6581 words, valid when enhanced */
	bool p2p;		/* peer-to-peer: an RTR message follows */
	u8 rtr;			/* enum viw_mpa_rtr bits */
	u16 ird;
	u16 ord;
};

/*
 * Encode the fixed header and, if enhanced, the IRD/ORD words.  @ulp_pd_len
 * is the consumer's private data length; the encoder sets frame->pd_len.
 * Returns the bytes written (20 or 24), or a negative errno if the frame
 * is not valid (e.g. private data too long).  The caller appends the
 * consumer's private data.
 */
int viw_mpa_encode(u8 *buf, size_t len, struct viw_mpa_frame *frame,
		   u16 ulp_pd_len);

/*
 * Decode the fixed 20-byte header.  Checks the key for @reply, the
 * revision (1 or 2) and PD_Length <= VIW_MPA_MAX_PDATA.  Returns 0 or
 * -EBADMSG / -EPROTO.
 */
int viw_mpa_decode_hdr(const u8 *buf, size_t len, bool reply,
		       struct viw_mpa_frame *frame);

/*
 * Decode the RFC 6581 words from the start of the private data (when the
 * header says enhanced).  Returns 0, or -EBADMSG if pd_len is too short.
 */
int viw_mpa_decode_v2(const u8 *pdata, size_t len,
		      struct viw_mpa_frame *frame);

/* Local MPA preferences (per device, tunable through debugfs). */
struct viw_mpa_prefs {
	u8 revision;		/* 1 or 2 */
	bool crc;		/* request CRC */
	bool p2p;		/* offer/require an RTR message */
	u8 rtr;			/* RTR types offered by the initiator */
};

/*
 * The RTR type a responder picks from the @offered bits (enum
 * viw_mpa_rtr): WRITE0, then READ0, then SEND0.  Returns 0 if none is.
 */
u8 viw_mpa_pick_rtr(u8 offered);

/*
 * Responder: build the reply frame for request @req under @prefs with the
 * local @ird/@ord.  Fails with -EPROTO if the request cannot be accepted
 * (markers required, bad revision, no common RTR type when p2p was asked
 * for).  CRC is used if either side asks for it.  The reply revision
 * equals the request's.  For an enhanced reply, ird/ord are the local
 * values and exactly one RTR bit is chosen when p2p.
 */
int viw_mpa_build_reply(const struct viw_mpa_frame *req,
			const struct viw_mpa_prefs *prefs, u16 ird, u16 ord,
			struct viw_mpa_frame *rep);

/*
 * Initiator: check reply @rep against request @req.  Returns 0, -ECONNREFUSED
 * if the reply rejects, or -EPROTO if it is inconsistent (other revision,
 * markers, CRC dropped although requested, RTR type not offered, p2p
 * mismatch).
 */
int viw_mpa_check_reply(const struct viw_mpa_frame *req,
			const struct viw_mpa_frame *rep);

/* Whether CRC is in use once @req and @rep were exchanged. */
static inline bool viw_mpa_crc_on(const struct viw_mpa_frame *req,
				  const struct viw_mpa_frame *rep)
{
	return req->crc || rep->crc;
}

/* ---- FPDU framing (MPA) ------------------------------------------------- */

#define VIW_MPA_LEN_SIZE	2	/* ULPDU_Length */
#define VIW_MPA_CRC_SIZE	4

/* Pad bytes after a ULPDU of @ulpdu_len so that the FPDU is 4-aligned. */
static inline u32 viw_mpa_pad(u32 ulpdu_len)
{
	return (4 - ((ulpdu_len + VIW_MPA_LEN_SIZE) & 3)) & 3;
}

/* Total FPDU size on the wire for a ULPDU (DDP segment) of @ulpdu_len. */
static inline u32 viw_fpdu_len(u32 ulpdu_len)
{
	return VIW_MPA_LEN_SIZE + ulpdu_len + viw_mpa_pad(ulpdu_len) +
	       VIW_MPA_CRC_SIZE;
}

/*
 * Largest ULPDU (DDP header + payload) that fits one TCP segment of
 * @emss bytes, so that each FPDU starts a segment (RFC 5044 FPDU
 * alignment).  At least 128 even for a tiny MSS.
 */
u32 viw_mulpdu(u32 emss);

/*
 * MPA CRC (CRC32c, as in iSCSI).  The caller runs the CRC over the
 * ULPDU_Length field, the ULPDU and the pad starting from state
 * VIW_CRC_INIT, then stores/compares viw_crc_final() in the trailer,
 * little-endian.  When CRC is not in use the trailer is sent as zero and
 * ignored on receipt.
 */
#define VIW_CRC_INIT 0xffffffffU
static inline u32 viw_crc_final(u32 state)
{
	return ~state;
}

void viw_put_crc(u8 *p, u32 crc);	/* stores little-endian */
u32 viw_get_crc(const u8 *p);

/* ---- DDP / RDMAP segment headers --------------------------------------- */

enum viw_rdmap_opcode {
	VIW_RDMAP_WRITE = 0x0,
	VIW_RDMAP_READ_REQ = 0x1,
	VIW_RDMAP_READ_RESP = 0x2,
	VIW_RDMAP_SEND = 0x3,
	VIW_RDMAP_SEND_INV = 0x4,
	VIW_RDMAP_SEND_SE = 0x5,
	VIW_RDMAP_SEND_SE_INV = 0x6,
	VIW_RDMAP_TERMINATE = 0x7,
	/* RFC 7306 */
	VIW_RDMAP_IMM = 0x8,		/* Immediate Data */
	VIW_RDMAP_IMM_SE = 0x9,		/* Immediate Data with Solicited Event */
	VIW_RDMAP_ATOMIC_REQ = 0xa,
	VIW_RDMAP_ATOMIC_RESP = 0xb,
	/*
	 * viw's own, only between two viw QPs that agreed on it (a reserved
	 * opcode of RFC 5040 and 7306): the responder acknowledges the
	 * messages it placed, so that the requester's WQEs complete only
	 * once the peer took them (docs/semantics.md, section 13).
	 */
	VIW_RDMAP_ACK = 0xc,
	VIW_RDMAP_OPCODE_MAX = VIW_RDMAP_ACK,
};

/*
 * Untagged queues.  An Atomic Request travels on the Read Request queue
 * and shares its MSN sequence (and the IRD/ORD credits): the responder
 * answers READs and atomics in the order they arrived.  Atomic Responses
 * have a queue of their own.  Immediate Data travels on the Send queue,
 * shares the SEND MSN sequence and consumes a receive WQE like a SEND.
 */
enum viw_ddp_qn {
	VIW_QN_SEND = 0,
	VIW_QN_READ_REQ = 1,
	VIW_QN_TERMINATE = 2,
	VIW_QN_ATOMIC_RESP = 3,
	VIW_QN_ACK = 4,			/* viw's acknowledgements */
};

#define VIW_DDP_TAGGED_HDR_LEN		14	/* ctrl, STag, TO */
#define VIW_DDP_UNTAGGED_HDR_LEN	18	/* ctrl, rsvd/inv, QN, MSN, MO */
#define VIW_RDMAP_READ_REQ_LEN		28	/* body of a Read Request */
#define VIW_RDMAP_TERM_CTRL_LEN		4
#define VIW_RDMAP_ATOMIC_REQ_LEN	52	/* body of an Atomic Request */
#define VIW_RDMAP_ATOMIC_RESP_LEN	12	/* body of an Atomic Response */
#define VIW_RDMAP_IMM_LEN		8	/* Immediate Data header */
#define VIW_RDMAP_ACK_LEN		4	/* body of a viw acknowledgement */
/* Largest header viw sends or must parse before the payload. */
#define VIW_MAX_HDR_LEN	(VIW_DDP_UNTAGGED_HDR_LEN + VIW_RDMAP_ATOMIC_REQ_LEN)

/* A decoded DDP segment header together with its RDMAP control. */
struct viw_ddp_hdr {
	u8 opcode;		/* enum viw_rdmap_opcode */
	bool tagged;
	bool last;
	/* tagged */
	u32 stag;
	u64 to;
	/* untagged */
	u32 inv_stag;		/* SEND_INV, SEND_SE_INV: STag to invalidate */
	u32 qn;
	u32 msn;
	u32 mo;
};

/* Body of an RDMA Read Request (follows its untagged header). */
struct viw_read_req {
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 src_stag;
	u64 src_to;
};

/* RFC 7306 Atomic Operation Codes */
enum viw_atomic_op {
	VIW_ATOMIC_FETCH_ADD = 0x0,
	VIW_ATOMIC_CMP_SWAP = 0x2,
};

/* The size and alignment of an atomic target. */
#define VIW_ATOMIC_SIZE		8

/*
 * Body of an Atomic Request.  FetchAdd uses add_swap/add_swap_mask as
 * Add Data and Add Mask, CmpSwap as Swap Data and Swap Mask plus the
 * Compare Data and Compare Mask.  The verbs' plain operations are FetchAdd
 * with Add Mask 0 and CmpSwap with both masks all ones.
 */
struct viw_atomic_req {
	u8 op;			/* enum viw_atomic_op */
	u32 req_id;		/* echoed in the response */
	u32 stag;
	u64 to;
	u64 add_swap;
	u64 add_swap_mask;
	u64 compare;
	u64 compare_mask;
};

/* Body of an Atomic Response. */
struct viw_atomic_resp {
	u32 req_id;
	u64 orig;		/* the target's value before the operation */
};

/*
 * The 8-byte Immediate Data header of an Immediate Data message, as viw
 * fills it (RFC 7306 leaves its contents to the consumer): the first four
 * bytes are the verbs' 32-bit immediate data, then a word of viw flags.
 * Without VIW_IMM_F_SEND the message is RFC 7306's own: it follows an
 * RDMA Write (the verbs' WRITE with immediate), is one segment and carries
 * nothing after the header.  With it, it is viw's SEND with immediate:
 * the Send's payload follows the header in every segment, placed at MO
 * like a SEND's.  The other flag bits are reserved: sent as zero, refused
 * on receipt.  Only viw peers that agreed on it get either form.
 */
#define VIW_IMM_F_SEND		0x1U

struct viw_imm {
	u32 data;		/* the immediate data, in wire byte order */
	bool send;		/* VIW_IMM_F_SEND */
};

/* Why a header is not acceptable, as a TERMINATE would report it. */
struct viw_term_cause {
	u8 layer;		/* enum viw_term_layer */
	u8 etype;
	u8 ecode;
};

enum viw_term_layer {
	VIW_TERM_RDMAP = 0x0,
	VIW_TERM_DDP = 0x1,
	VIW_TERM_LLP = 0x2,
};

enum viw_rdmap_etype {
	VIW_RDMAP_ET_CATASTROPHIC = 0x0,
	VIW_RDMAP_ET_REMOTE_PROT = 0x1,
	VIW_RDMAP_ET_REMOTE_OP = 0x2,
};

enum viw_rdmap_ecode {
	VIW_RDMAP_EC_INVALID_STAG = 0x00,
	VIW_RDMAP_EC_BASE_BOUNDS = 0x01,
	VIW_RDMAP_EC_ACCESS = 0x02,
	VIW_RDMAP_EC_STAG_NOT_ASSOC = 0x03,
	VIW_RDMAP_EC_TO_WRAP = 0x04,
	VIW_RDMAP_EC_VERSION = 0x05,
	VIW_RDMAP_EC_OPCODE = 0x06,
	VIW_RDMAP_EC_CATASTROPHIC_STREAM = 0x07,
	VIW_RDMAP_EC_CATASTROPHIC_GLOBAL = 0x08,
	VIW_RDMAP_EC_CANNOT_INVALIDATE = 0x09,
	VIW_RDMAP_EC_UNSPECIFIED = 0xff,
};

enum viw_ddp_etype {
	VIW_DDP_ET_CATASTROPHIC = 0x0,
	VIW_DDP_ET_TAGGED = 0x1,
	VIW_DDP_ET_UNTAGGED = 0x2,
};

enum viw_ddp_ecode {
	VIW_DDP_EC_T_INVALID_STAG = 0x00,
	VIW_DDP_EC_T_BASE_BOUNDS = 0x01,
	VIW_DDP_EC_T_STAG_NOT_ASSOC = 0x02,
	VIW_DDP_EC_T_TO_WRAP = 0x03,
	VIW_DDP_EC_T_VERSION = 0x04,
	VIW_DDP_EC_UT_INVALID_QN = 0x01,
	VIW_DDP_EC_UT_INVALID_MSN_NOBUF = 0x02,
	VIW_DDP_EC_UT_INVALID_MSN_RANGE = 0x03,
	VIW_DDP_EC_UT_INVALID_MO = 0x04,
	VIW_DDP_EC_UT_MSG_TOOLONG = 0x05,
	VIW_DDP_EC_UT_VERSION = 0x06,
};

enum viw_llp_ecode {
	VIW_LLP_EC_STREAM_LOST = 0x01,
	VIW_LLP_EC_CRC = 0x02,
	VIW_LLP_EC_FPDU_START = 0x03,
	VIW_LLP_EC_INVALID_REQ_RESP = 0x04,
	VIW_LLP_EC_LOCAL_CATASTROPHIC = 0x05,
	VIW_LLP_EC_INSUFFICIENT_IRD = 0x06,
	VIW_LLP_EC_NO_MATCHING_RTR = 0x07,
};

/*
 * Header length that follows the MPA length field for a segment whose
 * first two bytes (DDP and RDMAP control) are @ctrl, including the Read
 * Request, atomic and Immediate Data bodies and the TERMINATE control
 * word; 0 if @ctrl is invalid.
 */
u32 viw_ddp_hdr_len(const u8 ctrl[2]);

/*
 * Decode and validate the header of one DDP segment.  @buf starts at the
 * DDP control byte (after the MPA length) and holds @len bytes, at least
 * viw_ddp_hdr_len().  Checks DDP and RDMAP versions, reserved bits, that
 * the opcode exists, that tagged/untagged and the QN match the opcode,
 * and that non-last segments are not of a single-segment type.  Returns 0,
 * or -EPROTO with @cause set for a TERMINATE, or -EBADMSG if @len is
 * shorter than the header (@cause is set then too).
 */
int viw_ddp_decode(const u8 *buf, size_t len, struct viw_ddp_hdr *hdr,
		   struct viw_term_cause *cause);

/*
 * Encode a segment header (without the MPA length).  Returns the header
 * length (14 or 18) or a negative errno for an invalid @hdr.
 */
int viw_ddp_encode(u8 *buf, size_t len, const struct viw_ddp_hdr *hdr);

void viw_read_req_encode(u8 *buf, const struct viw_read_req *rr);
void viw_read_req_decode(const u8 *buf, struct viw_read_req *rr);

void viw_atomic_req_encode(u8 *buf, const struct viw_atomic_req *ar);
/*
 * Decode an Atomic Request body.  Returns 0, or -EPROTO with @cause set
 * (RDMAP remote operation error, unexpected opcode) for an Atomic
 * Operation Code viw does not know or reserved bits that are set.
 */
int viw_atomic_req_decode(const u8 *buf, struct viw_atomic_req *ar,
			  struct viw_term_cause *cause);
void viw_atomic_resp_encode(u8 *buf, const struct viw_atomic_resp *resp);
void viw_atomic_resp_decode(const u8 *buf, struct viw_atomic_resp *resp);

/*
 * A viw acknowledgement's body: how many SEND-type and WRITE messages of
 * the stream the responder has placed, modulo 2^32.
 */
void viw_ack_encode(u8 *buf, u32 placed);
u32 viw_ack_decode(const u8 *buf);

void viw_imm_encode(u8 *buf, const struct viw_imm *imm);
/*
 * Decode an Immediate Data header.  Returns 0, or -EPROTO with @cause set
 * (RDMAP remote operation error, unexpected opcode) if reserved flag bits
 * are set: a form of the message viw does not know.
 */
int viw_imm_decode(const u8 *buf, struct viw_imm *imm,
		   struct viw_term_cause *cause);

/*
 * The value the target holds after @ar was applied to @orig.  FetchAdd
 * adds in fields: a bit set in the Add Mask ends a field, so the carry
 * out of that bit is dropped (mask 0 is a plain 64-bit add).  CmpSwap
 * compares the bits in the Compare Mask and, if they are equal, replaces
 * the bits in the Swap Mask.
 */
u64 viw_atomic_apply(const struct viw_atomic_req *ar, u64 orig);

/* Whether @to is a valid atomic target address: 8-byte aligned. */
static inline bool viw_atomic_aligned(u64 to)
{
	return !(to & (VIW_ATOMIC_SIZE - 1));
}

/* ---- TERMINATE ------------------------------------------------------------ */

/*
 * A TERMINATE message body (after its untagged DDP header): the control
 * word, then optionally the length of the offending segment (M), the
 * offending DDP header (D) and an offending Read Request (R).
 */
struct viw_term {
	struct viw_term_cause cause;
	bool has_len;			/* M */
	bool has_ddp_hdr;		/* D */
	bool has_rreq;			/* R */
	u16 seg_len;
	u8 ddp_hdr[VIW_DDP_UNTAGGED_HDR_LEN];
	u8 ddp_hdr_len;			/* 14 or 18 */
	u8 rreq[VIW_RDMAP_READ_REQ_LEN];
};

/* Returns the body length written, or a negative errno. */
int viw_term_encode(u8 *buf, size_t len, const struct viw_term *term);
/* Decodes what @len bytes hold; returns 0 or -EBADMSG. */
int viw_term_decode(const u8 *buf, size_t len, struct viw_term *term);

/*
 * Report a refused tagged access as the layer that checked it does.
 * @cause is what the STag check found: a DDP tagged buffer error, or the
 * RDMAP access rights error.  @to and @len are the refused range.  A range
 * whose last byte lies beyond 2^64 - 1 is reported as "TO wrap", not "base
 * or bounds".  For the source of a Read Request (@rdmap), RDMAP checks the
 * STag and reports a remote protection error with RDMAP's codes, which
 * differ from DDP's from "STag not associated" on (RFC 5040's Terminate
 * error codes and RFC 5041's error numbers, as registered with IANA by
 * RFC 6580).
 */
void viw_term_tagged_cause(struct viw_term_cause *cause, u64 to, u32 len,
			   bool rdmap);

/* Map a TERMINATE cause to a work completion status (enum viw_cqe_status). */
u8 viw_term_to_wc_status(const struct viw_term_cause *cause);

#endif /* VIW_WIRE_H */
