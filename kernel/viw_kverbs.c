// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the verbs of kernel consumers (NVMe over Fabrics, NFS over RDMA,
 * the rw API): post_send, post_recv, post_srq_recv, poll_cq and
 * req_notify_cq.
 *
 * A kernel consumer's QP, SRQ and CQ have the same rings as a process's,
 * in kernel memory that nothing maps.  These verbs do the provider's half
 * of the ring protocol (viw_ring_proto.h) in its place: a work request
 * becomes a WQE in the ring and the doorbell starts the engine, exactly as
 * the system call does for a process; a CQE becomes an ib_wc.  The engine
 * cannot tell the difference and validates the WQEs it takes as it does a
 * process's.  What is checked here is what the ring format cannot carry
 * (opcodes, flags, SGE counts, inline lengths): a bad work request is
 * refused with -EINVAL and *bad_wr, before anything of it reaches the
 * ring.
 *
 * Kernel consumers post from any context, softirq and under their own
 * spinlocks included, so nothing here sleeps: the producer side of each
 * ring has a spinlock of its own, and the SQ doorbell of a kernel QP
 * always leaves the sending to the transmit work item (viw_qp.c).
 * Addresses in SGEs are kernel virtual addresses (the device uses virtual
 * DMA), resolved through the PD's DMA MR or a registered MR.
 */
#include <linux/highmem.h>

#include "viw_qp.h"
#include "viw_verbs.h"

/* ---- posting: the provider's half of the ring protocol --------------------- */

/*
 * Write @wqe into the next slot of @ring and hand it over, as the
 * provider's post does.  Caller holds the ring's post lock and owns
 * *@prod.  Return: 0, or -ENOMEM if the ring is full.
 */
static int viw_kring_post(struct viw_ring *ring, u32 *prod, void *wqe)
{
	u16 *src_flags = viw_rp_wqe_flags(wqe);
	u16 flags = *src_flags;
	void *slot;

	if (!viw_rp_wq_room(ring->ctrl, *prod, ring->num_slots))
		return -ENOMEM;
	slot = viw_ring_slot(ring, *prod);
	/* The slot changes hands only with the VALID bit, set last. */
	*src_flags = flags & ~VIW_WQE_VALID;
	memcpy(slot, wqe, ring->slot_size);
	viw_rp_wqe_post(viw_rp_wqe_flags(slot), flags);
	(*prod)++;
	viw_rp_publish(&ring->ctrl->prod, *prod);
	return 0;
}

/* Copy @num_sge SGEs, refusing more than @max_sge or a length that wraps. */
static int viw_kcopy_sges(struct viw_sge *dst, const struct ib_sge *src,
			  int num_sge, u32 max_sge)
{
	u32 total = 0;
	int i;

	if (num_sge < 0 || num_sge > max_sge || num_sge > VIW_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < num_sge; i++) {
		if (total + src[i].length < total)
			return -EINVAL;
		total += src[i].length;
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return 0;
}

/*
 * IB_SEND_INLINE: the data is copied into the WQE now, from the kernel
 * virtual addresses the SGEs name; their lkeys do not matter.
 */
static int viw_ksqe_inline(struct viw_sqe *sqe, const struct ib_send_wr *wr)
{
	u8 *dst = (u8 *)sqe->sge;
	u32 len = 0;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > VIW_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > VIW_MAX_INLINE - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(unsigned long)sge->addr,
		       sge->length);
		len += sge->length;
	}
	sqe->flags |= VIW_WQE_INLINE;
	sqe->inline_len = len;
	sqe->num_sge = 0;
	return 0;
}

static int viw_ksqe_atomic(struct viw_sqe *sqe, const struct ib_send_wr *wr,
			   u8 opcode)
{
	const struct ib_atomic_wr *awr = atomic_wr(wr);
	struct viw_sqe_atomic at = {};

	/* One 8-byte local buffer for the original value. */
	if (wr->num_sge != 1 || wr->sg_list[0].length != VIW_ATOMIC_SIZE)
		return -EINVAL;
	at.sge.addr = wr->sg_list[0].addr;
	at.sge.length = wr->sg_list[0].length;
	at.sge.lkey = wr->sg_list[0].lkey;
	at.compare_add = awr->compare_add;
	at.swap = awr->swap;
	memcpy(sqe->sge, &at, sizeof(at));
	sqe->opcode = opcode;
	sqe->num_sge = 1;
	sqe->raddr = awr->remote_addr;
	sqe->rkey = awr->rkey;
	return 0;
}

/*
 * IB_WR_REG_MR: the MR's range as map_mr_sg left it, and the new key.  The
 * engine finds the MR by the index of the key, which must be the MR's
 * own (ib_update_fast_reg_key changes only the key byte).
 */
static int viw_ksqe_reg_mr(struct viw_sqe *sqe, const struct ib_reg_wr *rwr)
{
	struct viw_bind_mw b = {};

	if (viw_stag_index(rwr->key) != viw_stag_index(rwr->mr->lkey) ||
	    rwr->mr->type != IB_MR_TYPE_MEM_REG)
		return -EINVAL;
	b.addr = rwr->mr->iova;
	b.length = rwr->mr->length;
	b.access = rwr->access;
	memcpy(sqe->sge, &b, sizeof(b));
	sqe->opcode = VIW_OP_REG_MR;
	sqe->rkey = rwr->key;
	return 0;
}

/* WRITE, WRITE with immediate, READ: the remote buffer. */
static void viw_ksqe_rdma(struct viw_sqe *sqe, const struct ib_send_wr *wr,
			  u8 opcode)
{
	sqe->opcode = opcode;
	sqe->raddr = rdma_wr(wr)->remote_addr;
	sqe->rkey = rdma_wr(wr)->rkey;
}

/*
 * The opcode and its operands.  *@data is set for the opcodes whose SGEs
 * carry data (inline or not); the others were complete here.
 */
static int viw_ksqe_opcode(struct viw_sqe *sqe, const struct ib_send_wr *wr,
			   bool *data)
{
	*data = true;
	switch (wr->opcode) {
	case IB_WR_SEND:
		sqe->opcode = VIW_OP_SEND;
		return 0;
	case IB_WR_SEND_WITH_INV:
		sqe->opcode = VIW_OP_SEND_INV;
		sqe->inv_stag = wr->ex.invalidate_rkey;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		sqe->opcode = VIW_OP_SEND_IMM;
		sqe->inv_stag = (__force u32)wr->ex.imm_data;
		return 0;
	case IB_WR_RDMA_WRITE:
		viw_ksqe_rdma(sqe, wr, VIW_OP_WRITE);
		return 0;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		viw_ksqe_rdma(sqe, wr, VIW_OP_WRITE_IMM);
		sqe->inv_stag = (__force u32)wr->ex.imm_data;
		return 0;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		viw_ksqe_rdma(sqe, wr, VIW_OP_READ);
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*data = false;
		return viw_ksqe_atomic(sqe, wr, VIW_OP_ATOMIC_CMP_SWP);
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*data = false;
		return viw_ksqe_atomic(sqe, wr, VIW_OP_ATOMIC_FETCH_ADD);
	case IB_WR_LOCAL_INV:
		*data = false;
		sqe->opcode = VIW_OP_LOCAL_INV;
		sqe->inv_stag = wr->ex.invalidate_rkey;
		return 0;
	case IB_WR_REG_MR:
		*data = false;
		return viw_ksqe_reg_mr(sqe, reg_wr(wr));
	default:
		return -EINVAL;
	}
}

#define VIW_KSEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | \
			 IB_SEND_SOLICITED | IB_SEND_INLINE)

/* Translate one ib_send_wr into the SQE format of the ring. */
static int viw_ksqe_build(struct viw_qp *qp, struct viw_sqe *sqe,
			  const struct ib_send_wr *wr)
{
	bool data;
	int rv;

	if (wr->send_flags & ~VIW_KSEND_FLAGS)
		return -EINVAL;
	memset(sqe, 0, sizeof(*sqe));
	sqe->wr_id = wr->wr_id;
	sqe->flags = VIW_WQE_VALID;
	if (wr->send_flags & IB_SEND_SIGNALED)
		sqe->flags |= VIW_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		sqe->flags |= VIW_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		sqe->flags |= VIW_WQE_FENCE;
	rv = viw_ksqe_opcode(sqe, wr, &data);
	if (rv || !data) {
		/* Inline data only goes with SEND and WRITE. */
		return rv ? rv : (wr->send_flags & IB_SEND_INLINE ? -EINVAL : 0);
	}
	if (wr->send_flags & IB_SEND_INLINE) {
		if (sqe->opcode == VIW_OP_READ)
			return -EINVAL;
		return viw_ksqe_inline(sqe, wr);
	}
	if (sqe->opcode == VIW_OP_READ && wr->num_sge > VIW_MAX_SGE_RD)
		return -EINVAL;
	sqe->num_sge = wr->num_sge;
	return viw_kcopy_sges(sqe->sge, wr->sg_list, wr->num_sge,
			      qp->sq.max_sge);
}

/*
 * IB_WR_RDMA_READ_WITH_INV (the rw API's READ on iWARP, rdma_cap_read_inv)
 * invalidates its sink once the READ is done: the STag of its one SGE,
 * which the Read Request names (as siw does; ex.invalidate_rkey is the
 * key from before the rw API's ib_update_fast_reg_key).  It becomes the
 * READ and a fenced Local Invalidate of the sink behind it: the fence
 * holds the invalidation until the READ's response is placed, and the
 * next REG_MR of the MR comes after both in send queue order.  The
 * invalidation is quiet: the READ's completion is the work request's,
 * and a failure fails the QP, which flushes what follows.
 */
static void viw_ksqe_read_inv(struct viw_sqe *inv, const struct ib_send_wr *wr)
{
	memset(inv, 0, sizeof(*inv));
	inv->wr_id = wr->wr_id;
	inv->flags = VIW_WQE_VALID | VIW_WQE_FENCE | VIW_WQE_QUIET;
	inv->opcode = VIW_OP_LOCAL_INV;
	inv->inv_stag = wr->sg_list[0].lkey;
}

/* Post one work request: one SQE, or two for a READ with invalidate. */
static int viw_kpost_one_send(struct viw_qp *qp, const struct ib_send_wr *wr)
{
	struct viw_wq *sq = &qp->sq;
	struct viw_sqe sqe, inv;
	int rv;

	rv = viw_ksqe_build(qp, &sqe, wr);
	if (rv)
		return rv;
	if (wr->opcode != IB_WR_RDMA_READ_WITH_INV)
		return viw_kring_post(&sq->ring, &sq->prod, &sqe);
	if (wr->num_sge != 1)
		return -EINVAL;
	if (viw_rp_wq_room(sq->ring.ctrl, sq->prod, sq->ring.num_slots) < 2)
		return -ENOMEM;
	viw_ksqe_read_inv(&inv, wr);
	rv = viw_kring_post(&sq->ring, &sq->prod, &sqe);
	return rv ? rv : viw_kring_post(&sq->ring, &sq->prod, &inv);
}

/**
 * viw_kpost_send - post_send of a kernel consumer
 * @qp: a kernel QP
 * @wr: the list of work requests
 * @bad_wr: set to the first one not posted
 *
 * Work requests go into the SQ in any state; the doorbell then sends them
 * (RTS), flushes them (ERROR: the drain's marker among them), or leaves
 * them for the connection to come up.
 *
 * Return: 0, -EINVAL for a malformed work request, -ENOMEM if the SQ is
 * full.
 */
int viw_kpost_send(struct viw_qp *qp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct viw_wq *sq = &qp->sq;
	unsigned long flags;
	int rv = 0;

	spin_lock_irqsave(&sq->post_lock, flags);
	for (; wr; wr = wr->next) {
		rv = viw_kpost_one_send(qp, wr);
		if (rv)
			break;
	}
	spin_unlock_irqrestore(&sq->post_lock, flags);
	if (rv == -EINVAL)
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: malformed work request: opcode %d flags %#x num_sge %d\n",
				       qp->ibqp.qp_num, wr->opcode,
				       wr->send_flags, wr->num_sge);
	if (rv)
		*bad_wr = wr;
	viw_qp_sq_doorbell(qp);
	return rv;
}

/* Translate one ib_recv_wr into an RQE; @max_sge is the queue's. */
static int viw_krqe_build(struct viw_rqe *rqe, const struct ib_recv_wr *wr,
			  u32 max_sge)
{
	memset(rqe, 0, sizeof(*rqe));
	rqe->wr_id = wr->wr_id;
	rqe->flags = VIW_WQE_VALID;
	rqe->num_sge = wr->num_sge;
	return viw_kcopy_sges(rqe->sge, wr->sg_list, wr->num_sge, max_sge);
}

/* Post the list @wr to a receive ring; returns the first one not posted. */
static const struct ib_recv_wr *
viw_kpost_rqes(struct viw_ring *ring, u32 *prod, spinlock_t *lock,
	       const struct ib_recv_wr *wr, u32 max_sge, int *rv)
{
	struct viw_rqe rqe;
	unsigned long flags;

	*rv = 0;
	spin_lock_irqsave(lock, flags);
	for (; wr; wr = wr->next) {
		*rv = viw_krqe_build(&rqe, wr, max_sge);
		if (!*rv)
			*rv = viw_kring_post(ring, prod, &rqe);
		if (*rv)
			break;
	}
	spin_unlock_irqrestore(lock, flags);
	return wr;
}

/**
 * viw_kpost_recv - post_recv of a kernel consumer
 * @qp: a kernel QP
 * @wr: the list of work requests
 * @bad_wr: set to the first one not posted
 *
 * Return: 0, -EINVAL for a malformed work request or a QP with an SRQ,
 * -ENOMEM if the RQ is full.
 */
int viw_kpost_recv(struct viw_qp *qp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct viw_wq *rq = &qp->rq;
	int rv;

	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	wr = viw_kpost_rqes(&rq->ring, &rq->prod, &rq->post_lock, wr,
			    rq->max_sge, &rv);
	if (rv)
		*bad_wr = wr;
	viw_qp_rq_kposted(qp);
	return rv;
}

/*
 * The SRQ's RQEs are taken when a message arrives (viw_srq_take()), so a
 * post rings nothing.  A process's SRQ has an empty list here: its
 * doorbell, which exists so that a process can always ring it.
 */
int viw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct viw_srq *srq = to_viw_srq(ibsrq);
	int rv;

	if (ibsrq->uobject) {
		if (!wr)
			return 0;
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	wr = viw_kpost_rqes(&srq->ring, &srq->prod, &srq->post_lock, wr,
			    srq->max_sge, &rv);
	if (rv)
		*bad_wr = wr;
	return rv;
}

/* ---- completions: the consumer's half of the CQ ring ----------------------- */

static enum ib_wc_status viw_wc_status(u8 status)
{
	static const enum ib_wc_status map[VIW_CQE_STATUS_MAX + 1] = {
		[VIW_CQE_SUCCESS] = IB_WC_SUCCESS,
		[VIW_CQE_LOC_LEN_ERR] = IB_WC_LOC_LEN_ERR,
		[VIW_CQE_LOC_QP_OP_ERR] = IB_WC_LOC_QP_OP_ERR,
		[VIW_CQE_LOC_PROT_ERR] = IB_WC_LOC_PROT_ERR,
		[VIW_CQE_WR_FLUSH_ERR] = IB_WC_WR_FLUSH_ERR,
		[VIW_CQE_BAD_RESP_ERR] = IB_WC_BAD_RESP_ERR,
		[VIW_CQE_LOC_ACCESS_ERR] = IB_WC_LOC_ACCESS_ERR,
		[VIW_CQE_REM_INV_REQ_ERR] = IB_WC_REM_INV_REQ_ERR,
		[VIW_CQE_REM_ACCESS_ERR] = IB_WC_REM_ACCESS_ERR,
		[VIW_CQE_REM_OP_ERR] = IB_WC_REM_OP_ERR,
		[VIW_CQE_GENERAL_ERR] = IB_WC_GENERAL_ERR,
		[VIW_CQE_MW_BIND_ERR] = IB_WC_MW_BIND_ERR,
		[VIW_CQE_RETRY_EXC_ERR] = IB_WC_RETRY_EXC_ERR,
	};

	return status <= VIW_CQE_STATUS_MAX ? map[status] : IB_WC_GENERAL_ERR;
}

static enum ib_wc_opcode viw_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case VIW_CQE_OP_WRITE:
		return IB_WC_RDMA_WRITE;
	case VIW_CQE_OP_READ:
		return IB_WC_RDMA_READ;
	case VIW_CQE_OP_RECV:
		return IB_WC_RECV;
	case VIW_CQE_OP_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case VIW_CQE_OP_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case VIW_CQE_OP_BIND_MW:
		return IB_WC_BIND_MW;
	case VIW_CQE_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case VIW_CQE_OP_RECV_RDMA_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	case VIW_CQE_OP_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

static void viw_cqe_to_wc(const struct viw_cqe *cqe, u32 flags,
			  struct ib_qp *ibqp, struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = viw_wc_status(cqe->status);
	wc->opcode = viw_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp = ibqp;
	wc->port_num = 1;
	if (flags & VIW_CQE_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->inv_stag;
	} else if (flags & VIW_CQE_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)cqe->inv_stag;
	}
}

/*
 * A process's CQ is polled by the provider from the mapped ring; the
 * uverbs poll command has nothing to add.  A kernel consumer's is read
 * here, under the lock its producers take, so that poll and push see the
 * slot and its QP together.
 */
int viw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct viw_cq *cq = to_viw_cq(ibcq);
	u32 mask = cq->ring.num_slots - 1;
	unsigned long irqflags;
	int n;

	if (!cq->wc_qp)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->lock, irqflags);
	for (n = 0; n < num_entries; n++) {
		struct viw_cqe *cqe = viw_ring_slot(&cq->ring, cq->cons);
		u32 flags = viw_rp_cqe_flags(cqe);

		if (!(flags & VIW_CQE_VALID))
			break;
		viw_cqe_to_wc(cqe, flags, cq->wc_qp[cq->cons & mask], &wc[n]);
		cq->wc_qp[cq->cons & mask] = NULL;
		viw_rp_cqe_release(cqe);
		cq->cons++;
	}
	viw_rp_publish(&cq->ring.ctrl->cons, cq->cons);
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return n;
}

/*
 * Arm the CQ: viw_cq_push() disarms it and calls the consumer's
 * comp_handler for the next completion (or the next solicited one).  The
 * arm word is written under cq->lock, which the producers hold when they
 * take it, so no completion slips between the check below and the arm.
 */
int viw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct viw_cq *cq = to_viw_cq(ibcq);
	struct viw_ring_ctrl *ctrl = cq->ring.ctrl;
	unsigned long irqflags;
	struct viw_cqe *cqe;
	int missed = 0;
	u32 arm;

	if (!cq->wc_qp)
		return -EOPNOTSUPP;
	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      VIW_CQ_ARM_SOLICITED : VIW_CQ_ARM_NEXT;
	spin_lock_irqsave(&cq->lock, irqflags);
	WRITE_ONCE(ctrl->arm, READ_ONCE(ctrl->arm) | arm);
	cqe = viw_ring_slot(&cq->ring, cq->cons);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    (viw_rp_cqe_flags(cqe) & VIW_CQE_VALID))
		missed = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return missed;
}
