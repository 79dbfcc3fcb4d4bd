/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: the state the transmit, receive and READ engines keep of a QP
 * (viw_tx.c, viw_rx.c, viw_read.c).
 */
#ifndef VIW_ENGINE_H
#define VIW_ENGINE_H

#include "viw_qp.h"

/*
 * An RDMA READ or atomic this QP sent and waits a response for.  For an
 * atomic, sink_stag/sink_to name the 8-byte local buffer for the
 * original value.
 */
struct viw_orq_entry {
	u32 sq_index;
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 got;			/* response bytes placed */
	bool internal;			/* the MPA RTR, not a WQE */
	bool atomic;
	u32 req_id;			/* atomic: the Request Identifier */
};

/*
 * An RDMA READ or atomic the peer asked for, to be answered by the TX
 * engine in arrival order.  An atomic is performed when its turn comes,
 * so that the READs before it read memory as it was before.
 */
struct viw_irq_entry {
	struct viw_read_req req;
	struct viw_mr *mr;		/* source or target, referenced */
	u32 sent;
	bool atomic;
	struct viw_atomic_req areq;
};

/*
 * bio_vecs of one FPDU: header, payload pieces, trailer.  A payload below
 * 64 KiB gathered from VIW_MAX_SGE SGEs spans at most 64 KiB / PAGE_SIZE
 * whole pages plus two partial pages per SGE.
 */
#define VIW_TX_MAX_PIECES	(SZ_64K / PAGE_SIZE + 2 * VIW_MAX_SGE)
#define VIW_TX_MAX_BVEC		(VIW_TX_MAX_PIECES + 2)

/*
 * The FPDUs of one message gathered for a single sendmsg (viw_tx_fpdu()),
 * and of the whole messages before it while more are posted
 * (viw_tx_hold_last()).  An FPDU fills a TCP segment (MULPDU), and TCP
 * sends every full segment it is given at once: written one by one, each
 * FPDU went through the whole network stack, and the receiver's, as a
 * packet of its own.  Given up to 64 KiB at a time, TCP builds packets of
 * its GSO size; the bytes on the wire are the same.  A batched FPDU's
 * header and trailer wait in a slot of their own until the batch is sent.
 */
#define VIW_TX_BATCH_BYTES	SZ_64K
/* A kernel QP's copies of fast-register MR payload: one FPDU's worth. */
#define VIW_TX_BOUNCE_BYTES	SZ_64K
#define VIW_TX_SLOT		64
#define VIW_TX_SLOT_TRAILER	56	/* pad and CRC: at most 7 bytes */
#define VIW_TX_BATCH_FPDUS	(PAGE_SIZE / VIW_TX_SLOT)
#define VIW_TX_BATCH_BVEC	256
/* Whole messages a batch holds for the next (viw_tx_hold_last()). */
#define VIW_TX_BATCH_HELD	16

struct viw_tx_batch {
	u8 *slots;			/* a page of VIW_TX_SLOT byte slots */
	struct page *slots_page;	/* its page, for the bio_vecs */
	u32 fpdus;
	u32 nbv;
	u32 bytes;			/* on the wire */
	u32 payload;
	bool more;			/* the message goes on after it */
	u32 end[VIW_TX_BATCH_FPDUS];	/* where each FPDU ends, in bytes */
	struct bio_vec bv[VIW_TX_BATCH_BVEC];
	/* whole messages in it: their SQ indexes, completed once written */
	u32 held;
	u32 held_index[VIW_TX_BATCH_HELD];
	/* and the MRs their payload pieces point into, referenced */
	u32 nr_mr;
	struct viw_mr *mr[VIW_TX_BATCH_HELD * VIW_MAX_SGE];
};

/* The WQE the transmit engine is sending. */
struct viw_tx_wqe {
	struct viw_sqe sqe;		/* the one copy of the SQE */
	u32 index;			/* SQ index */
	u32 len;			/* payload length */
	u32 sent;			/* payload bytes sent */
	struct viw_mr *mr[VIW_MAX_SGE];	/* referenced while sending */
	u8 nr_mr;			/* mr[] beyond it are NULL */
	bool active;
};

enum viw_rx_stage {
	VIW_RX_HDR,
	VIW_RX_PAYLOAD,
	VIW_RX_TRAILER,
	VIW_RX_DEAD,			/* after an error: ignore the stream */
};

/* Receive engine state: where in the FPDU stream the QP is. */
struct viw_rx {
	enum viw_rx_stage stage;
	u8 hdr[VIW_MPA_LEN_SIZE + VIW_MAX_HDR_LEN];
	u32 hdr_got;
	u32 hdr_need;
	u8 trailer[3 + VIW_MPA_CRC_SIZE];
	u32 tr_got;
	u32 tr_need;
	u32 crc;			/* running CRC state */
	u32 ulpdu_len;
	u32 payload_len;
	u32 payload_got;
	struct viw_ddp_hdr ddp;

	/* placement target of the current segment */
	struct viw_mr *mr;		/* tagged: referenced */
	u64 addr;
	/* untagged SEND: the receive WQE being filled */
	struct viw_rqe rqe;
	struct viw_mr *rqe_mr[VIW_MAX_SGE];
	u8 rqe_nr_mr;			/* rqe_mr[] beyond it are NULL */
	bool rqe_active;
	bool rqe_from_srq;
	u32 rqe_index;			/* RQ index when not from the SRQ */
	u32 msg_len;			/* bytes of the message so far */
	struct viw_imm imm;		/* Immediate Data: its header */
	/* the WRITE a plain Immediate Data reports (viw_rx_end_write) */
	u32 write_len;
	bool write_done;		/* write_len is of a whole WRITE */

	u32 msn_send;			/* next expected MSN per queue */
	u32 msn_rreq;			/* Read and Atomic Requests */
	u32 msn_aresp;			/* Atomic Responses */
	u32 msn_ack;			/* viw acknowledgements */
	/* SEND-type and WRITE messages placed, for viw acknowledgements */
	u32 placed;
	u32 peer_placed;		/* the latest the peer acknowledged */
	/* segments of the peer's own messages: all but acknowledgements */
	u32 answers;
	/* TERMINATE body after its control word: M length, D and R headers */
	u8 term_body[2 + VIW_DDP_UNTAGGED_HDR_LEN + VIW_RDMAP_READ_REQ_LEN];
	/* why the segment being processed failed, for viw_qp_fail() */
	struct viw_term_cause cause;
};

/*
 * A SEND or WRITE WQE that was sent and waits for the peer's
 * acknowledgement: it completes once the peer has placed @msg_no messages.
 */
struct viw_ack_wait {
	u32 sq_index;
	u32 msg_no;
};

/*
 * What the engines keep of one QP, allocated with it (viw_engine_alloc).
 * The QP layer and the connection managers reach it only through the
 * engines' functions.
 */
struct viw_engine {
	/* transmit engine, under qp->tx_lock */
	u8 *tx_buf;			/* a page: FPDU headers and trailers */
	struct page *tx_buf_page;	/* its page, for the bio_vecs */
	struct bio_vec tx_bv[VIW_TX_MAX_BVEC];	/* the FPDU being built */
	struct viw_tx_batch *tx_batch;	/* FPDUs not yet in the socket */
	u8 *tx_bounce;			/* kernel QPs: viw_tx_bounce() */
	u32 tx_bounce_used;		/* bytes of it the FPDU being built uses */
	bool tx_bounced;		/* that FPDU is written at once */
	bool tx_starved;		/* this run found no WQE to take */
	struct viw_tx_wqe tx;
	u32 tx_msn_send;
	u32 tx_msn_rreq;
	u32 tx_msn_term;
	u32 tx_msn_aresp;
	u32 tx_atomic_id;		/* Request Identifier of the next atomic */
	u32 tx_msn_ack;
	u32 tx_msgs;			/* SEND-type and WRITE messages sent */
	u32 tx_ack_sent;		/* rx.placed as last acknowledged */
	bool tx_may_cork;		/* in viw_tx_run(), which pushes */
	bool tx_corked;			/* the last write held back its tail */
	u8 *tx_spill;			/* what TCP refused a doorbell's run */
	u32 tx_spill_len;
	bool tx_torn;			/* the stream stopped inside an FPDU */

	u32 tx_taken;			/* WQEs taken, ever */

	/* doorbells, unlocked: a hint (viw_tx_streams()) */
	u32 db_answers;			/* rx.answers at the last doorbell */
	u32 db_taken;			/* tx_taken at the last doorbell */
	unsigned long db_time;		/* jiffies at the last doorbell */
	u32 db_streak;			/* doorbells with no answer between */
	bool db_small;			/* the last WQE taken was small */

	/* WQEs waiting for an acknowledgement, oldest first, under rd_lock */
	struct viw_ack_wait *ackq;
	u32 ackq_size;			/* power of two, >= SQ slots */
	u32 ackq_head;
	u32 ackq_tail;

	/* RDMA READs: outstanding (ORQ) and inbound (IRQ), under rd_lock */
	struct viw_orq_entry orq[VIW_MAX_ORD];
	u32 orq_head;
	u32 orq_tail;
	struct viw_irq_entry irq[VIW_MAX_IRD];
	u32 irq_head;
	u32 irq_tail;

	/* receive engine, run from the socket's data_ready */
	struct viw_rx rx;
};

/* viw_read.c: the ORQ and IRQ, for the engines */
bool viw_orq_full(struct viw_qp *qp);
bool viw_orq_push(struct viw_qp *qp, u32 sq_index,
		  const struct viw_read_req *rr);
bool viw_orq_push_internal(struct viw_qp *qp);
bool viw_orq_push_atomic(struct viw_qp *qp, u32 sq_index,
			 const struct viw_sge *sink, u32 req_id);
bool viw_orq_atomic_done(struct viw_qp *qp, u32 *sq_index);
struct viw_orq_entry *viw_orq_peek(struct viw_qp *qp);
bool viw_orq_progress(struct viw_qp *qp, u32 n, bool last,
		      struct viw_orq_entry *done);
bool viw_irq_push(struct viw_qp *qp, const struct viw_irq_entry *ent);
struct viw_irq_entry *viw_irq_peek(struct viw_qp *qp);
struct viw_mr *viw_irq_pop(struct viw_qp *qp);

/*
 * Does an inbound READ or atomic wait for its response?  A look without
 * rd_lock, for the transmit engine between its messages (viw_irq_peek()).
 */
static inline bool viw_irq_waiting(struct viw_qp *qp)
{
	return READ_ONCE(qp->eng->irq_head) != READ_ONCE(qp->eng->irq_tail);
}

/* viw_engine.c */
void viw_engine_drop_spill(struct viw_qp *qp);

/* viw_ack.c: WQEs waiting for the peer's acknowledgement */
void viw_ack_wait(struct viw_qp *qp, u32 sq_index, u32 msg_no);
int viw_ack_received(struct viw_qp *qp, u32 placed);

#endif /* VIW_ENGINE_H */
