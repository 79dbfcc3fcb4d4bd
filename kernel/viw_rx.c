// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the receive engine.
 *
 * Runs from the socket's data_ready callback (softirq, or process context
 * when the socket was owned) through tcp_read_sock().  It parses the FPDU
 * stream one segment at a time: header, payload, pad and CRC.  Every
 * header is validated before its payload moves: a tagged segment must name
 * an STag of the QP's PD with the access it needs and a range inside the
 * MR; an untagged SEND needs the expected MSN and a receive WQE large
 * enough.  Payload is copied straight from the skb into the target pages.
 * Any violation stops the stream, and the QP sends a TERMINATE and goes to
 * ERROR; the target memory is not written.
 *
 * Remote access is granted by the MR's rights alone.  The QP's access
 * flags are kept for query_qp but not enforced: for iWARP, librdmacm moves
 * an active-side QP to INIT with no access flags before the connection
 * exists and never updates them, so enforcing them would refuse every
 * READ and WRITE aimed at the connecting side (siw does not enforce them
 * either).
 */
#include <linux/crc32c.h>
#include <linux/skbuff.h>
#include <net/tcp.h>

#include "viw_engine.h"

static u16 viw_get_be16(const u8 *p)
{
	return (p[0] << 8) | p[1];
}

static void viw_rx_set_cause(struct viw_qp *qp, u8 layer, u8 etype, u8 ecode)
{
	qp->eng->rx.cause.layer = layer;
	qp->eng->rx.cause.etype = etype;
	qp->eng->rx.cause.ecode = ecode;
}

static int viw_rx_untagged_error(struct viw_qp *qp, u8 ecode)
{
	viw_rx_set_cause(qp, VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED, ecode);
	return -EPROTO;
}

static void viw_rx_release_rqe(struct viw_rx *rx)
{
	int i;

	for (i = 0; i < rx->rqe_nr_mr; i++) {
		if (rx->rqe_mr[i]) {
			viw_mr_put(rx->rqe_mr[i]);
			rx->rqe_mr[i] = NULL;
		}
	}
	rx->rqe_nr_mr = 0;
	rx->rqe_active = false;
}

/*
 * A receive completed by Immediate Data: viw's SEND with immediate is a
 * RECV with the data, the plain form that follows a WRITE with immediate
 * reports that WRITE and its length.  The CQE holds the four bytes as
 * they came (ibv_wc.imm_data is in network order).
 */
static void viw_rx_imm_info(struct viw_rx *rx, struct viw_cqe_info *info)
{
	info->flags |= VIW_CQE_IMM;
	info->inv_stag = (__force u32)cpu_to_be32(rx->imm.data);
	if (rx->imm.send)
		return;
	info->opcode = VIW_CQE_OP_RECV_RDMA_IMM;
	info->byte_len = rx->write_len;
	rx->write_len = 0;
	rx->write_done = false;
}

/* The receive WQE in qp->eng->rx is complete (or failed) with @status. */
static void viw_rx_complete_rqe(struct viw_qp *qp, u8 status)
{
	struct viw_rx *rx = &qp->eng->rx;
	u8 op = rx->ddp.opcode;
	struct viw_cqe_info info = {
		.wr_id = rx->rqe.wr_id,
		.ibqp = &qp->ibqp,
		.qp_id = qp->ibqp.qp_num,
		.opcode = VIW_CQE_OP_RECV,
		.status = status,
		.byte_len = rx->msg_len,
	};

	if (status == VIW_CQE_SUCCESS &&
	    (op == VIW_RDMAP_SEND_SE || op == VIW_RDMAP_SEND_SE_INV ||
	     op == VIW_RDMAP_IMM_SE))
		info.flags |= VIW_CQE_SOLICITED;
	if (status == VIW_CQE_SUCCESS &&
	    (op == VIW_RDMAP_SEND_INV || op == VIW_RDMAP_SEND_SE_INV)) {
		info.flags |= VIW_CQE_INV;
		info.inv_stag = rx->ddp.inv_stag;
	}
	if (status == VIW_CQE_SUCCESS &&
	    (op == VIW_RDMAP_IMM || op == VIW_RDMAP_IMM_SE))
		viw_rx_imm_info(rx, &info);

	if (rx->rqe_from_srq)
		viw_cq_push(qp->rcq, &info);
	else
		viw_rq_complete(qp, rx->rqe_index, &info);
	viw_rx_release_rqe(rx);
}

/* Drop every reference the engine holds.  RX must not be running. */
void viw_rx_reset(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;

	if (rx->mr) {
		viw_mr_put(rx->mr);
		rx->mr = NULL;
	}
	viw_rx_release_rqe(rx);
	rx->stage = VIW_RX_HDR;
	rx->hdr_got = 0;
	rx->hdr_need = 0;
}

/* Resolve the SGEs of the receive WQE just taken into rx->rqe. */
static int viw_rx_bind_rqe(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_term_cause cause;
	struct ib_pd *pd = qp->srq ? qp->srq->ibsrq.pd : qp->ibqp.pd;
	u32 max_sge = qp->srq ? qp->srq->max_sge : qp->rq.max_sge;
	int i;

	if (rx->rqe.num_sge > max_sge)
		return -EINVAL;
	rx->rqe_nr_mr = rx->rqe.num_sge;
	for (i = 0; i < rx->rqe.num_sge; i++) {
		struct viw_sge *sge = &rx->rqe.sge[i];

		if (!sge->length)
			continue;
		rx->rqe_mr[i] = viw_mr_get(qp->vdev, pd, sge->lkey,
					   IB_ACCESS_LOCAL_WRITE, sge->addr,
					   sge->length, &cause);
		if (!rx->rqe_mr[i])
			return -EPERM;
	}
	return 0;
}

static u32 viw_rqe_capacity(const struct viw_rqe *rqe)
{
	u64 total = 0;
	int i;

	for (i = 0; i < rqe->num_sge && i < VIW_MAX_SGE; i++)
		total += rqe->sge[i].length;
	return min_t(u64, total, U32_MAX);
}

/* Take the receive WQE for a new incoming SEND. */
static int viw_rx_take_rqe(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	int rv;

	if (qp->srq) {
		rv = viw_srq_take(qp->srq, &rx->rqe);
	} else {
		rv = viw_rq_take(qp, &rx->rqe, &rx->rqe_index);
		/* The queue reports an invalid WQE; failing the QP is ours. */
		if (rv == -EINVAL)
			viw_qp_fail(qp, NULL);
	}
	if (rv)
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_NOBUF);
	rx->rqe_from_srq = qp->srq;
	rx->rqe_active = true;
	rx->msg_len = 0;
	if (viw_rx_bind_rqe(qp)) {
		/* The WQE itself is bad: a local error, the QP stops. */
		viw_rx_set_cause(qp, VIW_TERM_RDMAP, VIW_RDMAP_ET_CATASTROPHIC,
				 VIW_RDMAP_EC_CATASTROPHIC_STREAM);
		viw_rx_complete_rqe(qp, VIW_CQE_LOC_PROT_ERR);
		return -EPROTO;
	}
	return 0;
}

static int viw_rx_start_send(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_ddp_hdr *h = &rx->ddp;
	int rv;

	if (h->msn != rx->msn_send)
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	if (h->mo != (rx->rqe_active ? rx->msg_len : 0))
		return viw_rx_untagged_error(qp, VIW_DDP_EC_UT_INVALID_MO);
	if (!rx->rqe_active) {
		rv = viw_rx_take_rqe(qp);
		if (rv)
			return rv;
	}
	if ((u64)h->mo + rx->payload_len > viw_rqe_capacity(&rx->rqe))
		return viw_rx_untagged_error(qp, VIW_DDP_EC_UT_MSG_TOOLONG);
	return 0;
}

/*
 * A tagged segment places at its tagged offset in @mr, which the STag
 * check found (referenced), or NULL with rx->cause set: then the cause
 * gets the segment's offset and length for the TERMINATE.
 */
static int viw_rx_place_tagged(struct viw_qp *qp, struct viw_mr *mr)
{
	struct viw_rx *rx = &qp->eng->rx;

	if (!mr) {
		viw_term_tagged_cause(&rx->cause, rx->ddp.to,
				      rx->payload_len, false);
		return -EPROTO;
	}
	rx->mr = mr;
	rx->addr = rx->ddp.to;
	return 0;
}

static int viw_rx_start_write(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;

	/* A zero-length WRITE places nothing; its STag is not checked. */
	if (!rx->payload_len)
		return 0;
	return viw_rx_place_tagged(qp,
				   viw_mr_get_remote(qp, rx->ddp.stag,
						     IB_ACCESS_REMOTE_WRITE,
						     rx->ddp.to,
						     rx->payload_len,
						     &rx->cause));
}

static int viw_rx_start_read_resp(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_orq_entry *ent = viw_orq_peek(qp);

	viw_rx_set_cause(qp, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
			 VIW_DDP_EC_T_INVALID_STAG);
	if (!ent || ent->atomic || rx->ddp.stag != ent->sink_stag)
		return -EPROTO;
	if (rx->ddp.to != ent->sink_to + ent->got ||
	    (u64)ent->got + rx->payload_len > ent->size) {
		qp->eng->rx.cause.ecode = VIW_DDP_EC_T_BASE_BOUNDS;
		return -EPROTO;
	}
	if (!rx->payload_len)
		return 0;
	return viw_rx_place_tagged(qp,
				   viw_mr_get(qp->vdev, qp->ibqp.pd,
					      rx->ddp.stag,
					      IB_ACCESS_LOCAL_WRITE,
					      rx->ddp.to, rx->payload_len,
					      &rx->cause));
}

/*
 * Queue a READ or atomic for the TX engine, in arrival order; beyond the
 * IRD it is refused (and its MR reference dropped).
 */
static int viw_rx_queue_inbound(struct viw_qp *qp,
				const struct viw_irq_entry *ent)
{
	if (!viw_irq_push(qp, ent)) {
		ibdev_dbg(qp->ibqp.device, "QP %u: %s beyond IRD %u\n",
			  qp->ibqp.qp_num, ent->atomic ? "atomic" : "READ",
			  qp->ird);
		if (ent->mr)
			viw_mr_put(ent->mr);
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	}
	qp->eng->rx.msn_rreq++;
	viw_tx_kick(qp);
	return 0;
}

static int viw_rx_read_req(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_irq_entry ent = {};

	if (rx->ddp.msn != rx->msn_rreq) {
		ibdev_dbg(qp->ibqp.device, "QP %u: READ MSN %u, expected %u\n",
			  qp->ibqp.qp_num, rx->ddp.msn, rx->msn_rreq);
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	}
	viw_read_req_decode(rx->hdr + VIW_MPA_LEN_SIZE +
			    VIW_DDP_UNTAGGED_HDR_LEN, &ent.req);
	if (ent.req.size) {
		ent.mr = viw_mr_get_remote(qp, ent.req.src_stag,
					   IB_ACCESS_REMOTE_READ,
					   ent.req.src_to, ent.req.size,
					   &qp->eng->rx.cause);
		if (!ent.mr) {
			/* RDMAP, not DDP, checks a READ's source */
			viw_term_tagged_cause(&qp->eng->rx.cause, ent.req.src_to,
					      ent.req.size, true);
			return -EPROTO;
		}
	}
	return viw_rx_queue_inbound(qp, &ent);
}

/* Where the RDMAP body of an untagged segment starts in rx->hdr. */
static const u8 *viw_rx_body(struct viw_rx *rx)
{
	return rx->hdr + VIW_MPA_LEN_SIZE + VIW_DDP_UNTAGGED_HDR_LEN;
}

/*
 * A QP connected by modify_qp has the access flags its consumer set, as
 * on InfiniBand, and remote atomics need IB_ACCESS_REMOTE_ATOMIC there.
 * For an rdma_cm QP the MR's rights alone decide, as for READ and WRITE
 * (see the top of this file): iw_cm grants an iWARP QP remote read and
 * write only, and nothing would ever grant it atomics.
 */
static bool viw_rx_atomic_allowed(struct viw_qp *qp)
{
	return !qp->direct ||
	       (READ_ONCE(qp->access) & IB_ACCESS_REMOTE_ATOMIC);
}

/*
 * The target of an Atomic Request: an STag of the QP's PD with remote
 * atomic rights, covering 8 bytes at an 8-byte aligned offset.  RDMAP
 * checks it, as for a READ's source.  An unaligned target is reported as
 * a base or bounds violation: the 8 bytes named are not a valid target.
 */
static struct viw_mr *viw_rx_atomic_target(struct viw_qp *qp,
					   const struct viw_atomic_req *ar)
{
	struct viw_term_cause *cause = &qp->eng->rx.cause;
	struct viw_mr *mr;

	if (!viw_rx_atomic_allowed(qp)) {
		viw_rx_set_cause(qp, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
				 VIW_RDMAP_EC_ACCESS);
		return NULL;
	}
	mr = viw_mr_get(qp->vdev, qp->ibqp.pd, ar->stag,
			IB_ACCESS_REMOTE_ATOMIC, ar->to, VIW_ATOMIC_SIZE,
			cause);
	if (mr && !viw_atomic_aligned(ar->to)) {
		viw_mr_put(mr);
		mr = NULL;
		viw_rx_set_cause(qp, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
				 VIW_DDP_EC_T_BASE_BOUNDS);
	}
	if (!mr)
		viw_term_tagged_cause(cause, ar->to, VIW_ATOMIC_SIZE, true);
	return mr;
}

/*
 * An Atomic Request, CRC checked: validate it and queue it behind the
 * READs that came before it.  Memory is not touched until the TX engine
 * performs it, and never for a request refused here.
 */
static int viw_rx_atomic_req(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_irq_entry ent = { .atomic = true };

	if (rx->ddp.msn != rx->msn_rreq)
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	if (viw_atomic_req_decode(viw_rx_body(rx), &ent.areq, &qp->eng->rx.cause))
		return -EPROTO;
	ent.mr = viw_rx_atomic_target(qp, &ent.areq);
	if (!ent.mr)
		return -EPROTO;
	return viw_rx_queue_inbound(qp, &ent);
}

/*
 * A segment of a Read Response was placed.  When the response ends, its
 * READ completes; a short one is an error of the responder.
 */
static void viw_rx_read_resp(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_orq_entry done;
	bool complete;

	if (!viw_orq_progress(qp, rx->payload_len, rx->ddp.last, &done))
		return;
	complete = done.got == done.size;
	if (!done.internal)
		viw_sq_complete(qp, done.sq_index, complete ?
			       VIW_CQE_SUCCESS : VIW_CQE_BAD_RESP_ERR);
	if (!complete) {
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: short READ response %u of %u\n",
				       qp->ibqp.qp_num, done.got, done.size);
		viw_qp_fail(qp, NULL);
	}
	/* A READ or a fenced WQE may be waiting for this one. */
	viw_tx_kick_orq(qp);
}

/* The head atomic is answered: its WQE completes with @status. */
static void viw_rx_atomic_done(struct viw_qp *qp, u8 status)
{
	u32 sq_index;

	if (!viw_orq_atomic_done(qp, &sq_index))
		return;
	viw_sq_complete(qp, sq_index, status);
	viw_tx_kick_orq(qp);
}

/*
 * An Atomic Response, CRC checked: it answers the oldest outstanding
 * request, which must be the atomic it names.  The original value goes to
 * the WQE's local buffer, checked again now: it may have been deregistered
 * since the post.
 */
static int viw_rx_atomic_resp(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_orq_entry *ent = viw_orq_peek(qp);
	struct viw_atomic_resp resp;
	struct viw_term_cause cause;
	struct viw_mr *mr;
	u8 status;

	if (rx->ddp.msn != rx->msn_aresp)
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	viw_atomic_resp_decode(viw_rx_body(rx), &resp);
	if (!ent || !ent->atomic || ent->req_id != resp.req_id) {
		viw_rx_set_cause(qp, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
				 VIW_RDMAP_EC_OPCODE);
		return -EPROTO;
	}
	rx->msn_aresp++;
	mr = viw_mr_get(qp->vdev, qp->ibqp.pd, ent->sink_stag,
			IB_ACCESS_LOCAL_WRITE, ent->sink_to, VIW_ATOMIC_SIZE,
			&cause);
	if (!mr) {
		viw_rx_atomic_done(qp, VIW_CQE_LOC_PROT_ERR);
		viw_qp_fail(qp, NULL);
		return 0;
	}
	status = viw_mr_store_u64(mr, ent->sink_stag, ent->sink_to, resp.orig) ?
		 VIW_CQE_LOC_PROT_ERR : VIW_CQE_SUCCESS;
	viw_mr_put(mr);
	viw_rx_atomic_done(qp, status);
	if (status != VIW_CQE_SUCCESS)
		viw_qp_fail(qp, NULL);
	return 0;
}

static int viw_rx_opcode_error(struct viw_qp *qp)
{
	viw_rx_set_cause(qp, VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_OP,
			 VIW_RDMAP_EC_OPCODE);
	return -EPROTO;
}

/*
 * An Immediate Data message or an acknowledgement from a peer that did
 * not agree on it.
 */
static bool viw_rx_op_unwanted(struct viw_qp *qp)
{
	/* the RDMAP opcode: the low four bits of the second control byte */
	u8 opcode = qp->eng->rx.hdr[VIW_MPA_LEN_SIZE + 1] & 0xf;

	if (opcode == VIW_RDMAP_ACK)
		return !READ_ONCE(qp->peer_ack);
	return (opcode == VIW_RDMAP_IMM || opcode == VIW_RDMAP_IMM_SE) &&
	       !READ_ONCE(qp->peer_imm);
}

/*
 * An Immediate Data message (RFC 7306), only from a viw peer that agreed
 * on it (viw_rx_hdr() refuses it from any other, as an unexpected opcode,
 * as before viw spoke it).  viw's SEND with immediate is placed like a SEND.  The plain
 * form is one segment with nothing behind its header; like a SEND it
 * needs the expected MSN and a receive WQE, and places nothing in it.
 */
static int viw_rx_start_imm(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;

	if (viw_imm_decode(viw_rx_body(rx), &rx->imm, &rx->cause))
		return -EPROTO;
	if (!rx->imm.send) {
		if (!rx->ddp.last)
			return viw_rx_opcode_error(qp);
		if (rx->ddp.mo)
			return viw_rx_untagged_error(qp,
						     VIW_DDP_EC_UT_INVALID_MO);
		/* as for the other messages that are a header only */
		if (rx->payload_len) {
			viw_rx_set_cause(qp, VIW_TERM_LLP, 0,
					 VIW_LLP_EC_FPDU_START);
			return -EPROTO;
		}
	}
	return viw_rx_start_send(qp);
}

/*
 * The first message of a passive peer-to-peer connection must be the
 * zero-length RTR that was agreed on.
 */
static int viw_rx_check_rtr(struct viw_qp *qp)
{
	static const u8 rtr_opcode[] = {
		[VIW_RTR_SEND0] = VIW_RDMAP_SEND,
		[VIW_RTR_WRITE0] = VIW_RDMAP_WRITE,
		[VIW_RTR_READ0] = VIW_RDMAP_READ_REQ,
	};
	struct viw_rx *rx = &qp->eng->rx;

	if (rx->ddp.opcode != rtr_opcode[qp->rtr_expected] ||
	    rx->payload_len || !rx->ddp.last) {
		viw_rx_set_cause(qp, VIW_TERM_LLP, 0,
				 VIW_LLP_EC_NO_MATCHING_RTR);
		return -EPROTO;
	}
	if (rx->ddp.opcode == VIW_RDMAP_SEND)
		rx->msn_send++;
	return 0;
}

/* The header of a segment is complete: validate it and find its target. */
static int viw_rx_start_segment(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 hlen = rx->hdr_need - VIW_MPA_LEN_SIZE;
	int rv;

	rx->ulpdu_len = viw_get_be16(rx->hdr);
	rv = viw_ddp_decode(rx->hdr + VIW_MPA_LEN_SIZE, hlen, &rx->ddp,
			    &qp->eng->rx.cause);
	if (rv)
		return rv;
	if (rx->ulpdu_len < hlen) {
		viw_rx_set_cause(qp, VIW_TERM_LLP, 0, VIW_LLP_EC_FPDU_START);
		return -EPROTO;
	}
	rx->payload_len = rx->ulpdu_len - hlen;
	rx->payload_got = 0;
	if (qp->crc)
		rx->crc = crc32c(VIW_CRC_INIT, rx->hdr, rx->hdr_need);

	if (qp->rtr_expected) {
		rv = viw_rx_check_rtr(qp);
		if (rv || rx->ddp.opcode != VIW_RDMAP_READ_REQ)
			return rv;
	}
	switch (rx->ddp.opcode) {
	case VIW_RDMAP_WRITE:
		return viw_rx_start_write(qp);
	case VIW_RDMAP_READ_RESP:
		return viw_rx_start_read_resp(qp);
	case VIW_RDMAP_READ_REQ:
	case VIW_RDMAP_ATOMIC_REQ:
	case VIW_RDMAP_ATOMIC_RESP:
	case VIW_RDMAP_ACK:
		/* all of these are header only */
		if (rx->payload_len) {
			viw_rx_set_cause(qp, VIW_TERM_LLP, 0,
					 VIW_LLP_EC_FPDU_START);
			return -EPROTO;
		}
		if (rx->ddp.opcode != VIW_RDMAP_READ_REQ)
			return 0;	/* acted on once the CRC is checked */
		return viw_rx_read_req(qp);
	case VIW_RDMAP_TERMINATE:
		return 0;
	case VIW_RDMAP_IMM:
	case VIW_RDMAP_IMM_SE:
		return viw_rx_start_imm(qp);
	default:
		if (qp->rtr_expected)
			return 0;
		return viw_rx_start_send(qp);
	}
}

/*
 * The first two bytes of the DDP header are in rx->hdr: the header's
 * length follows from them (rx->hdr_need).  Inline: each segment's header
 * is read through here.
 */
static __always_inline int viw_rx_hdr_len(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 hlen = viw_ddp_hdr_len(rx->hdr + VIW_MPA_LEN_SIZE);
	int rv;

	if (!hlen) {
		rv = viw_ddp_decode(rx->hdr + VIW_MPA_LEN_SIZE, 2, &rx->ddp,
				    &qp->eng->rx.cause);
		if (!rv)
			viw_rx_set_cause(qp, VIW_TERM_RDMAP,
					 VIW_RDMAP_ET_REMOTE_OP,
					 VIW_RDMAP_EC_OPCODE);
		return -EPROTO;
	}
	/* Refused at once, as before viw spoke it: see start_imm. */
	if (viw_rx_op_unwanted(qp))
		return viw_rx_opcode_error(qp);
	rx->hdr_need = VIW_MPA_LEN_SIZE + hlen;
	return 0;
}

/* The whole header is in rx->hdr: start the segment. */
static int viw_rx_hdr_done(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	int rv;

	rv = viw_rx_start_segment(qp);
	if (rv)
		return rv;
	rx->stage = rx->payload_len ? VIW_RX_PAYLOAD : VIW_RX_TRAILER;
	rx->tr_got = 0;
	rx->tr_need = viw_mpa_pad(rx->ulpdu_len) + VIW_MPA_CRC_SIZE;
	return 0;
}

/*
 * Most headers arrive whole, with the longest header's worth of bytes
 * behind them in the skb: one copy takes the header, where reading its
 * length first took two.  Returns the header's length or an error.
 */
static int viw_rx_hdr_whole(struct viw_qp *qp, struct sk_buff *skb, u32 off)
{
	struct viw_rx *rx = &qp->eng->rx;
	int rv;

	if (skb_copy_bits(skb, off, rx->hdr, sizeof(rx->hdr)))
		return -EFAULT;
	rv = viw_rx_hdr_len(qp);
	if (rv)
		return rv;
	rx->hdr_got = rx->hdr_need;
	rv = viw_rx_hdr_done(qp);
	return rv ? rv : rx->hdr_need;
}

static int viw_rx_hdr(struct viw_qp *qp, struct sk_buff *skb, u32 off,
		      u32 avail)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 need = rx->hdr_need ? rx->hdr_need : VIW_MPA_LEN_SIZE + 2;
	u32 n = min(avail, need - rx->hdr_got);
	int rv;

	if (!rx->hdr_got && avail >= sizeof(rx->hdr))
		return viw_rx_hdr_whole(qp, skb, off);
	if (skb_copy_bits(skb, off, rx->hdr + rx->hdr_got, n))
		return -EFAULT;
	rx->hdr_got += n;
	if (rx->hdr_got < need)
		return n;
	if (!rx->hdr_need) {
		rv = viw_rx_hdr_len(qp);
		return rv ? rv : n;
	}
	rv = viw_rx_hdr_done(qp);
	return rv ? rv : n;
}

/* Place @n payload bytes of a SEND into the receive WQE's buffers. */
static int viw_rx_place_send(struct viw_qp *qp, struct sk_buff *skb,
			     u32 off, u32 n)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 pos = rx->ddp.mo + rx->payload_got;
	u32 *crc = qp->crc ? &rx->crc : NULL;
	int i;

	for (i = 0; i < rx->rqe.num_sge && n; i++) {
		struct viw_sge *sge = &rx->rqe.sge[i];
		u32 chunk;
		int rv;

		if (pos >= sge->length) {
			pos -= sge->length;
			continue;
		}
		chunk = min(n, sge->length - pos);
		rv = viw_mr_place_skb(rx->rqe_mr[i], sge->lkey, sge->addr + pos,
				      skb, off, chunk, crc);
		/* The consumer invalidated its own buffer: a local error. */
		if (rv == -ESTALE)
			viw_rx_set_cause(qp, VIW_TERM_RDMAP,
					 VIW_RDMAP_ET_CATASTROPHIC,
					 VIW_RDMAP_EC_CATASTROPHIC_STREAM);
		if (rv)
			return rv;
		off += chunk;
		n -= chunk;
		pos = 0;
	}
	return n ? -EFAULT : 0;
}

/* Fold skb bytes that are not placed anywhere into the CRC. */
static int viw_rx_crc_skb(struct viw_qp *qp, struct sk_buff *skb, u32 off,
			  u32 n, u8 *keep, u32 keep_len)
{
	u8 buf[64];

	while (n) {
		u32 chunk = min_t(u32, n, sizeof(buf));

		if (skb_copy_bits(skb, off, buf, chunk))
			return -EFAULT;
		if (qp->crc)
			qp->eng->rx.crc = crc32c(qp->eng->rx.crc, buf, chunk);
		if (keep && keep_len) {
			u32 k = min(chunk, keep_len);

			memcpy(keep, buf, k);
			keep += k;
			keep_len -= k;
		}
		off += chunk;
		n -= chunk;
	}
	return 0;
}

/*
 * A TERMINATE's body is kept in rx->term_body for decoding.  It travels on
 * its own queue (QN 2), so it may arrive between the segments of a SEND:
 * the receive WQE that SEND is filling is not its buffer.
 */
static int viw_rx_keep_term(struct viw_qp *qp, struct sk_buff *skb, u32 off,
			    u32 n)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 got = rx->payload_got;

	if (got >= sizeof(rx->term_body))
		return viw_rx_crc_skb(qp, skb, off, n, NULL, 0);
	return viw_rx_crc_skb(qp, skb, off, n, rx->term_body + got,
			      sizeof(rx->term_body) - got);
}

/*
 * Place @n payload bytes of a tagged segment.  A fast-register MR that
 * was invalidated after the segment's header was checked takes no more
 * of it: the segment fails as one to an invalid STag would.
 */
static int viw_rx_place_mr(struct viw_qp *qp, struct sk_buff *skb, u32 off,
			   u32 n)
{
	struct viw_rx *rx = &qp->eng->rx;
	int rv;

	rv = viw_mr_place_skb(rx->mr, rx->ddp.stag, rx->addr + rx->payload_got,
			      skb, off, n, qp->crc ? &rx->crc : NULL);
	if (rv != -ESTALE)
		return rv;
	viw_rx_set_cause(qp, VIW_TERM_DDP, VIW_DDP_ET_TAGGED,
			 VIW_DDP_EC_T_INVALID_STAG);
	viw_term_tagged_cause(&rx->cause, rx->ddp.to, rx->payload_len, false);
	return -EPROTO;
}

static int viw_rx_payload(struct viw_qp *qp, struct sk_buff *skb, u32 off,
			  u32 avail)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 n = min(avail, rx->payload_len - rx->payload_got);
	int rv;

	if (rx->ddp.opcode == VIW_RDMAP_TERMINATE)
		rv = viw_rx_keep_term(qp, skb, off, n);
	else if (rx->mr)
		rv = viw_rx_place_mr(qp, skb, off, n);
	else if (rx->rqe_active)
		rv = viw_rx_place_send(qp, skb, off, n);
	else
		rv = viw_rx_crc_skb(qp, skb, off, n, NULL, 0);
	if (rv)
		return rv;
	rx->payload_got += n;
	viw_count(qp->vdev, VIW_CNT_RX_BYTES, n);
	if (rx->payload_got == rx->payload_len)
		rx->stage = VIW_RX_TRAILER;
	return n;
}

/*
 * A TERMINATE arrived: the peer reports an error and closes.  Nothing
 * after it is parsed (RFC 5040: the stream ends with the TERMINATE), so a
 * peer cannot pile up async events with more TERMINATEs or have data
 * placed into a QP that is going to ERROR.
 */
static void viw_rx_terminate(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	struct viw_term term = {};
	u32 len = VIW_RDMAP_TERM_CTRL_LEN + rx->payload_len;
	u8 body[VIW_RDMAP_TERM_CTRL_LEN + sizeof(rx->term_body)];

	rx->stage = VIW_RX_DEAD;
	memcpy(body, rx->hdr + VIW_MPA_LEN_SIZE + VIW_DDP_UNTAGGED_HDR_LEN,
	       VIW_RDMAP_TERM_CTRL_LEN);
	memcpy(body + VIW_RDMAP_TERM_CTRL_LEN, rx->term_body,
	       sizeof(rx->term_body));
	/*
	 * A body shorter than its flags announce is not answered: the
	 * stream ends anyway, and the control word, always there, still
	 * gives the cause.
	 */
	viw_term_decode(body, min_t(u32, len, sizeof(body)), &term);
	viw_qp_terminated(qp, &term.cause);
}

/*
 * For tests, through debugfs rx_send_done_delay_ms (0, the default: no
 * wait): how long the receive engine spins, in the softirq that delivers
 * the stream, right after it completed a SEND's receive, so that a test
 * can destroy the QP surely before the engine goes on
 * (tests/functional/viw_remote_err.c -L).  At most 500 ms.
 */
static u32 viw_rx_send_done_delay_ms;

u32 *viw_rx_send_done_delay_knob(void)
{
	return &viw_rx_send_done_delay_ms;
}

/* A whole SEND-type or WRITE message was placed: count it for the ACK. */
static void viw_rx_placed(struct viw_rx *rx)
{
	WRITE_ONCE(rx->placed, rx->placed + 1);
}

/*
 * A viw acknowledgement, CRC checked: the peer placed that many of our
 * messages, and the WQEs that sent them complete.  Its MSN and count must
 * follow on from the last.
 */
static int viw_rx_ack(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;

	if (rx->ddp.msn != rx->msn_ack ||
	    viw_ack_received(qp, viw_ack_decode(viw_rx_body(rx))))
		return viw_rx_untagged_error(qp,
					     VIW_DDP_EC_UT_INVALID_MSN_RANGE);
	rx->msn_ack++;
	viw_count(qp->vdev, VIW_CNT_ACKS_RCVD, 1);
	return 0;
}

/*
 * The last segment of a SEND arrived.  A SEND with Invalidate first
 * invalidates the STag it names (RFC 5040 §5.3): if that is not allowed,
 * the receive completes in error and the QP sends a TERMINATE.
 */
static int viw_rx_end_send(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;
	u8 op = rx->ddp.opcode;

	rx->msn_send++;
	if ((op == VIW_RDMAP_SEND_INV || op == VIW_RDMAP_SEND_SE_INV) &&
	    viw_mw_remote_inv(qp, rx->ddp.inv_stag, &qp->eng->rx.cause)) {
		viw_rx_complete_rqe(qp, VIW_CQE_REM_INV_REQ_ERR);
		return -EPROTO;
	}
	/*
	 * Counted before the completion: a consumer that polls it and
	 * destroys its QP at once acknowledges it (viw_tx_last_ack()).
	 */
	viw_rx_placed(rx);
	viw_rx_complete_rqe(qp, VIW_CQE_SUCCESS);
	viw_test_delay_atomic(&viw_rx_send_done_delay_ms);
	return 0;
}

/*
 * A WRITE segment was placed.  The plain Immediate Data behind a WRITE
 * with immediate reports that WRITE's length, as InfiniBand does: viw
 * sends the two back to back, the WRITE even when it is empty, so the
 * last whole WRITE before it is its own.
 */
static void viw_rx_end_write(struct viw_rx *rx)
{
	if (rx->write_done) {
		rx->write_len = 0;
		rx->write_done = false;
	}
	rx->write_len += rx->payload_len;
	rx->write_done = rx->ddp.last;
	if (rx->ddp.last)
		viw_rx_placed(rx);
}

/*
 * Everything of a segment arrived and checked: act on it.  Returns
 * -EPROTO, with the cause set, for an atomic to be refused.
 */
static int viw_rx_end_segment(struct viw_qp *qp)
{
	struct viw_rx *rx = &qp->eng->rx;

	viw_count(qp->vdev, VIW_CNT_RX_FPDUS, 1);
	if (rx->ddp.opcode != VIW_RDMAP_ACK)
		WRITE_ONCE(rx->answers, rx->answers + 1);
	if (rx->mr) {
		viw_mr_put(rx->mr);
		rx->mr = NULL;
	}
	if (qp->rtr_expected) {
		viw_qp_rtr_received(qp);
		return 0;
	}
	switch (rx->ddp.opcode) {
	case VIW_RDMAP_ATOMIC_REQ:
		return viw_rx_atomic_req(qp);
	case VIW_RDMAP_ATOMIC_RESP:
		return viw_rx_atomic_resp(qp);
	case VIW_RDMAP_ACK:
		return viw_rx_ack(qp);
	case VIW_RDMAP_READ_RESP:
		viw_rx_read_resp(qp);
		break;
	case VIW_RDMAP_WRITE:
		viw_rx_end_write(rx);
		break;
	case VIW_RDMAP_SEND:
	case VIW_RDMAP_SEND_SE:
	case VIW_RDMAP_SEND_INV:
	case VIW_RDMAP_SEND_SE_INV:
	case VIW_RDMAP_IMM:
	case VIW_RDMAP_IMM_SE:
		rx->msg_len += rx->payload_len;
		if (rx->ddp.last)
			return viw_rx_end_send(qp);
		break;
	case VIW_RDMAP_TERMINATE:
		viw_rx_terminate(qp);
		break;
	default:
		break;
	}
	return 0;
}

static int viw_rx_trailer(struct viw_qp *qp, struct sk_buff *skb, u32 off,
			  u32 avail)
{
	struct viw_rx *rx = &qp->eng->rx;
	u32 n = min(avail, rx->tr_need - rx->tr_got);
	u32 pad = rx->tr_need - VIW_MPA_CRC_SIZE;
	int rv;

	/* Without CRCs the pad and the CRC field are not looked at. */
	if (qp->crc && skb_copy_bits(skb, off, rx->trailer + rx->tr_got, n))
		return -EFAULT;
	rx->tr_got += n;
	if (rx->tr_got < rx->tr_need)
		return n;

	if (qp->crc) {
		u32 crc = viw_crc_final(crc32c(rx->crc, rx->trailer, pad));

		if (crc != viw_get_crc(rx->trailer + pad)) {
			viw_count(qp->vdev, VIW_CNT_CRC_ERRORS, 1);
			viw_rx_set_cause(qp, VIW_TERM_LLP, 0, VIW_LLP_EC_CRC);
			return -EPROTO;
		}
	}
	rv = viw_rx_end_segment(qp);
	if (rv)
		return rv;
	rx->stage = rx->stage == VIW_RX_DEAD ? VIW_RX_DEAD : VIW_RX_HDR;
	rx->hdr_got = 0;
	rx->hdr_need = 0;
	return n;
}

/* tcp_read_sock() actor: consume @len bytes of @skb from @off. */
static int viw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int off, size_t len)
{
	struct viw_qp *qp = desc->arg.data;
	struct viw_rx *rx = &qp->eng->rx;
	size_t done = 0;

	while (done < len && rx->stage != VIW_RX_DEAD) {
		int rv;

		switch (rx->stage) {
		case VIW_RX_HDR:
			rv = viw_rx_hdr(qp, skb, off + done, len - done);
			break;
		case VIW_RX_PAYLOAD:
			rv = viw_rx_payload(qp, skb, off + done, len - done);
			break;
		default:
			rv = viw_rx_trailer(qp, skb, off + done, len - done);
			break;
		}
		if (rv < 0) {
			rx->stage = VIW_RX_DEAD;
			viw_qp_fail(qp, &qp->eng->rx.cause);
			break;
		}
		done += rv;
	}
	/* A dead stream is drained and dropped until the close. */
	return len;
}

/*
 * Data arrived on the socket of connected @qp: the CM's data_ready calls
 * this in softirq context, under the socket's sk_callback_lock.
 */
void viw_rx_data_ready(struct viw_qp *qp, struct sock *sk)
{
	read_descriptor_t desc = { .count = 1, .arg.data = qp };

	/* A QP moved to RESET places nothing until its socket is gone. */
	if (!viw_qp_rx_open(qp))
		return;
	tcp_read_sock(sk, &desc, viw_rx_actor);
	/* One acknowledgement for all that this read placed. */
	if (READ_ONCE(qp->peer_ack) &&
	    READ_ONCE(qp->eng->rx.placed) != READ_ONCE(qp->eng->tx_ack_sent))
		viw_tx_kick(qp);
}
