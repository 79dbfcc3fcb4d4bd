// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: the fast path.  Posting writes WQEs into the mapped SQ, RQ or
 * SRQ ring, polling reads CQEs from the mapped CQ ring; neither makes a
 * system call unless the kernel asks for one.
 *
 * After a batch the provider publishes the producer index, bumps the
 * doorbell sequence and, behind a full barrier, reads the kernel's flags:
 * VIW_DB_NEED_WAKEUP (no kernel engine is polling) or VIW_RING_KF_ERROR
 * (the QP is in ERROR and only a doorbell gets new WQEs flushed) make it
 * ring the doorbell, which is the uverbs post command with no work
 * requests, unless the queue says the kernel takes new WQEs by itself
 * (no_doorbell: an RQ or SRQ always, an SQ while its transmit engine
 * runs).  The barrier pairs with the kernel's, which sets NEED_WAKEUP or
 * clears no_doorbell before it takes its last look at the rings: either
 * the kernel sees the new WQEs or the provider sees the flag.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "viw.h"

/* Publish the batch and tell whether the kernel needs the system call. */
static bool viw_doorbell_needed(struct viw_context *ctx, struct viw_queue *q)
{
	viw_ring_publish_prod(&q->ring);
	__atomic_fetch_add(&ctx->db->seq, 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);

	if (viw_ring_kflags(&q->ring) & VIW_RING_KF_ERROR)
		return true;
	return (__atomic_load_n(&ctx->db->flags, __ATOMIC_RELAXED) &
		VIW_DB_NEED_WAKEUP) && !viw_rp_no_doorbell(q->ring.ctrl);
}

static int viw_sq_opcode(enum ibv_wr_opcode opcode, uint8_t *op)
{
	switch (opcode) {
	case IBV_WR_SEND:
		*op = VIW_OP_SEND;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*op = VIW_OP_SEND_INV;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*op = VIW_OP_WRITE;
		return 0;
	case IBV_WR_RDMA_READ:
		*op = VIW_OP_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*op = VIW_OP_ATOMIC_CMP_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*op = VIW_OP_ATOMIC_FETCH_ADD;
		return 0;
	case IBV_WR_BIND_MW:
		*op = VIW_OP_BIND_MW;
		return 0;
	case IBV_WR_LOCAL_INV:
		*op = VIW_OP_LOCAL_INV;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*op = VIW_OP_SEND_IMM;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*op = VIW_OP_WRITE_IMM;
		return 0;
	default:
		return EINVAL;
	}
}

#define VIW_SEND_FLAGS \
	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE | \
	 IBV_SEND_INLINE)

static uint16_t viw_sqe_flags(const struct viw_qp *qp,
			      const struct ibv_send_wr *wr)
{
	uint16_t flags = 0;

	if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= VIW_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		flags |= VIW_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		flags |= VIW_WQE_FENCE;
	if (wr->send_flags & IBV_SEND_INLINE)
		flags |= VIW_WQE_INLINE;
	return flags;
}

/* Total payload of an inline WR, or -1 if it does not fit. */
static int64_t viw_inline_len(const struct viw_qp *qp,
			      const struct ibv_send_wr *wr)
{
	uint64_t len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return len > qp->max_inline ? -1 : (int64_t)len;
}

static bool viw_op_is_atomic(uint8_t op)
{
	return op == VIW_OP_ATOMIC_CMP_SWP || op == VIW_OP_ATOMIC_FETCH_ADD;
}

/*
 * One buffer receives the original value and nothing goes inline; the
 * kernel checks that the buffer is 8 bytes and completes the WR in error
 * if it is not.
 */
static int viw_check_atomic_wr(const struct ibv_send_wr *wr)
{
	if (wr->num_sge != 1)
		return EINVAL;
	if (wr->send_flags & (~VIW_SEND_FLAGS | IBV_SEND_INLINE))
		return EINVAL;
	return 0;
}

/* IBV_ACCESS_LOCAL_WRITE is allowed and means nothing for a window. */
#define VIW_MW_IBV_ACCESS \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE)

/*
 * A bind names its window by the index part of the new rkey (the key
 * part, the low 8 bits, is the consumer's), so the two must agree.
 * Zero-based windows are not supported.
 */
static int viw_check_bind(const struct ibv_mw *mw, uint32_t rkey,
			  const struct ibv_mw_bind_info *info)
{
	if (!mw || (rkey >> 8) != (mw->rkey >> 8))
		return EINVAL;
	if (info->mw_access_flags & ~VIW_MW_IBV_ACCESS)
		return EINVAL;
	if (!info->mr && (info->addr || info->length))
		return EINVAL;
	return 0;
}

static uint32_t viw_mw_access(unsigned int ibv_access)
{
	uint32_t access = 0;

	if (ibv_access & IBV_ACCESS_REMOTE_READ)
		access |= VIW_MW_REMOTE_READ;
	if (ibv_access & IBV_ACCESS_REMOTE_WRITE)
		access |= VIW_MW_REMOTE_WRITE;
	if (ibv_access & IBV_ACCESS_REMOTE_ATOMIC)
		access |= VIW_MW_REMOTE_ATOMIC;
	return access;
}

static int viw_check_send_wr(const struct viw_qp *qp,
			     const struct ibv_send_wr *wr, uint8_t *op)
{
	if (viw_sq_opcode(wr->opcode, op))
		return EINVAL;
	if (viw_op_is_atomic(*op))
		return viw_check_atomic_wr(wr);
	if (*op == VIW_OP_BIND_MW || *op == VIW_OP_LOCAL_INV) {
		if (wr->send_flags & ~(IBV_SEND_SIGNALED | IBV_SEND_FENCE))
			return EINVAL;
		if (*op == VIW_OP_LOCAL_INV)
			return 0;
		return viw_check_bind(wr->bind_mw.mw, wr->bind_mw.rkey,
				      &wr->bind_mw.bind_info);
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	if (wr->send_flags & ~VIW_SEND_FLAGS)
		return EINVAL;
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return 0;
	/* Inline data goes out; a READ has nothing to send. */
	if (*op == VIW_OP_READ || viw_inline_len(qp, wr) < 0)
		return EINVAL;
	return 0;
}

static void viw_sqe_copy_inline(struct viw_sqe *sqe,
				const struct ibv_send_wr *wr)
{
	uint8_t *dst = (uint8_t *)sqe->sge;
	uint32_t len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *sge = &wr->sg_list[i];

		memcpy(dst + len, (void *)(uintptr_t)sge->addr, sge->length);
		len += sge->length;
	}
	sqe->num_sge = 0;
	sqe->inline_len = len;
}

static void viw_sqe_copy_sges(struct viw_sqe *sqe,
			      const struct ibv_send_wr *wr)
{
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		sqe->sge[i].addr = wr->sg_list[i].addr;
		sqe->sge[i].length = wr->sg_list[i].length;
		sqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	sqe->num_sge = wr->num_sge;
	sqe->inline_len = 0;
}

/* The atomic operands go where the SGEs would be (viw-abi.h). */
static void viw_sqe_copy_atomic(struct viw_sqe *sqe,
				const struct ibv_send_wr *wr)
{
	struct viw_sqe_atomic at = {
		.sge = {
			.addr = wr->sg_list[0].addr,
			.length = wr->sg_list[0].length,
			.lkey = wr->sg_list[0].lkey,
		},
		.compare_add = wr->wr.atomic.compare_add,
		.swap = wr->wr.atomic.swap,
	};

	memcpy(sqe->sge, &at, sizeof(at));
	sqe->num_sge = 1;
	sqe->inline_len = 0;
}

static void viw_sqe_copy_bind(struct viw_sqe *sqe,
			      const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *info = &wr->bind_mw.bind_info;
	struct viw_bind_mw bind = {
		.addr = info->addr,
		.length = info->length,
		.mr_lkey = info->mr ? info->mr->lkey : 0,
		.access = viw_mw_access(info->mw_access_flags),
	};

	static_assert(sizeof(bind) <= sizeof(sqe->sge), "bind in sge[]");
	memset(sqe->sge, 0, sizeof(sqe->sge));
	memcpy(sqe->sge, &bind, sizeof(bind));
	sqe->rkey = wr->bind_mw.rkey;
	sqe->num_sge = 0;
	sqe->inline_len = 0;
}

/*
 * inv_stag carries the STag to invalidate, or the immediate data's four
 * bytes as the consumer gave them (network order, as the kernel sends
 * them).
 */
static uint32_t viw_sqe_inv_stag(const struct ibv_send_wr *wr, uint8_t op)
{
	uint32_t imm;

	if (op == VIW_OP_SEND_INV || op == VIW_OP_LOCAL_INV)
		return wr->invalidate_rkey;
	if (op != VIW_OP_SEND_IMM && op != VIW_OP_WRITE_IMM)
		return 0;
	memcpy(&imm, &wr->imm_data, sizeof(imm));
	return imm;
}

/* Fill a slot the provider owns; its VALID bit stays clear. */
static void viw_sqe_write(struct viw_sqe *sqe, const struct ibv_send_wr *wr,
			  uint8_t op, uint16_t flags)
{
	viw_rp_wqe_stage(&sqe->flags, flags);
	sqe->wr_id = wr->wr_id;
	sqe->opcode = op;
	sqe->inv_stag = viw_sqe_inv_stag(wr, op);
	sqe->raddr = 0;
	if (op == VIW_OP_BIND_MW) {
		viw_sqe_copy_bind(sqe, wr);
		return;
	}
	if (op == VIW_OP_LOCAL_INV) {
		sqe->rkey = 0;
		sqe->num_sge = 0;
		sqe->inline_len = 0;
		return;
	}
	if (op == VIW_OP_WRITE || op == VIW_OP_WRITE_IMM || op == VIW_OP_READ) {
		sqe->raddr = wr->wr.rdma.remote_addr;
		sqe->rkey = wr->wr.rdma.rkey;
	} else if (viw_op_is_atomic(op)) {
		sqe->raddr = wr->wr.atomic.remote_addr;
		sqe->rkey = wr->wr.atomic.rkey;
	} else {
		sqe->raddr = 0;
		sqe->rkey = 0;
	}
	if (viw_op_is_atomic(op))
		viw_sqe_copy_atomic(sqe, wr);
	else if (flags & VIW_WQE_INLINE)
		viw_sqe_copy_inline(sqe, wr);
	else
		viw_sqe_copy_sges(sqe, wr);
}

/*
 * Write @wr into the slot at the SQ's head and advance the head.  The
 * kernel takes a slot by its VALID bit alone, so the slot stays unposted
 * until viw_sq_publish(): that lets a batch of the ibv_wr_*() interface
 * be dropped whole.  Caller holds the SQ lock.
 */
int viw_sq_write(struct viw_qp *qp, const struct ibv_send_wr *wr)
{
	struct viw_ring *ring = &qp->sq.ring;
	uint8_t op;
	int rv;

	if (viw_ring_full(ring))
		return ENOMEM;
	rv = viw_check_send_wr(qp, wr, &op);
	if (rv)
		return rv;

	viw_sqe_write(viw_ring_slot(ring, ring->head), wr, op,
		      viw_sqe_flags(qp, wr));
	ring->head++;
	return 0;
}

/*
 * Type 1 windows are bound through the send queue too (as mlx4 and mlx5
 * do): a BIND_MW WQE with the next key, which the window takes once the
 * post succeeded.
 */
int viw_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr *bad_wr;
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	int rv;

	rv = viw_post_send(qp, &wr, &bad_wr);
	if (rv)
		return rv;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * Post the slots written since @first, in order, and tell whether the
 * kernel needs the doorbell system call.  Caller holds the SQ lock.
 */
bool viw_sq_publish(struct viw_context *ctx, struct viw_qp *qp,
		    uint32_t first)
{
	struct viw_ring *ring = &qp->sq.ring;
	uint32_t i;

	if (first == ring->head)
		return false;
	for (i = first; i != ring->head; i++) {
		struct viw_sqe *sqe = viw_ring_slot(ring, i);

		viw_rp_wqe_post(&sqe->flags, viw_rp_read_once(&sqe->flags));
	}
	return viw_doorbell_needed(ctx, &qp->sq);
}

int viw_sq_doorbell(struct ibv_qp *ibqp)
{
	return viw_db_ring(ibqp->context, VIW_DB_SQ, ibqp->handle);
}

int viw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct viw_context *ctx = to_viw_ctx(ibqp->context);
	struct viw_qp *qp = to_viw_qp(ibqp);
	bool ring_db;
	uint32_t first;
	int rv = 0;

	pthread_spin_lock(&qp->sq.lock);
	first = qp->sq.ring.head;
	for (; wr; wr = wr->next) {
		rv = viw_sq_write(qp, wr);
		if (rv) {
			*bad_wr = wr;
			break;
		}
	}
	ring_db = viw_sq_publish(ctx, qp, first);
	pthread_spin_unlock(&qp->sq.lock);

	/*
	 * The WRs are in the ring even if the doorbell fails, so none of
	 * them is reported as bad then; the next doorbell picks them up.
	 */
	if (ring_db) {
		int db_rv = viw_sq_doorbell(ibqp);

		if (db_rv && !rv) {
			*bad_wr = NULL;
			rv = db_rv;
		}
	}
	return rv;
}

static void viw_rqe_write(struct viw_rqe *rqe, const struct ibv_recv_wr *wr)
{
	int i;

	viw_rp_wqe_stage(&rqe->flags, 0);
	rqe->wr_id = wr->wr_id;
	rqe->rsvd0 = 0;
	rqe->rsvd1 = 0;
	for (i = 0; i < wr->num_sge; i++) {
		rqe->sge[i].addr = wr->sg_list[i].addr;
		rqe->sge[i].length = wr->sg_list[i].length;
		rqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	rqe->num_sge = wr->num_sge;
}

static int viw_rq_post_one(struct viw_ring *ring, uint32_t max_sge,
			   const struct ibv_recv_wr *wr)
{
	struct viw_rqe *rqe;

	if (viw_ring_full(ring))
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;

	rqe = viw_ring_slot(ring, ring->head);
	viw_rqe_write(rqe, wr);
	viw_rp_wqe_post(&rqe->flags, 0);
	ring->head++;
	return 0;
}

/*
 * Post a list of receives to an RQ or SRQ ring.  Returns the errno of
 * the first failing WR (then in *bad_wr) and whether to ring the doorbell.
 */
static int viw_post_recv_list(struct viw_context *ctx, struct viw_queue *q,
			      uint32_t max_sge, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr, bool *ring_db)
{
	int posted = 0;
	int rv = 0;

	pthread_spin_lock(&q->lock);
	for (; wr; wr = wr->next, posted++) {
		rv = viw_rq_post_one(&q->ring, max_sge, wr);
		if (rv) {
			*bad_wr = wr;
			break;
		}
	}
	*ring_db = posted && viw_doorbell_needed(ctx, q);
	pthread_spin_unlock(&q->lock);
	return rv;
}

int viw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct viw_context *ctx = to_viw_ctx(ibqp->context);
	struct viw_qp *qp = to_viw_qp(ibqp);
	bool ring_db;
	int rv;

	/* Receives of a QP on an SRQ go to the SRQ. */
	if (!qp->has_rq) {
		*bad_wr = wr;
		return EINVAL;
	}
	rv = viw_post_recv_list(ctx, &qp->rq, qp->max_recv_sge, wr, bad_wr,
				&ring_db);
	if (ring_db) {
		int db_rv = viw_db_ring(ibqp->context, VIW_DB_RQ,
					ibqp->handle);

		if (db_rv && !rv) {
			*bad_wr = NULL;
			rv = db_rv;
		}
	}
	return rv;
}

int viw_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct viw_context *ctx = to_viw_ctx(ibsrq->context);
	struct viw_srq *srq = to_viw_srq(ibsrq);
	bool ring_db;
	int rv;

	rv = viw_post_recv_list(ctx, &srq->q, srq->max_sge, wr, bad_wr,
				&ring_db);
	if (ring_db) {
		int db_rv = viw_db_ring(ibsrq->context, VIW_DB_SRQ,
					ibsrq->handle);

		if (db_rv && !rv) {
			*bad_wr = NULL;
			rv = db_rv;
		}
	}
	return rv;
}

static const enum ibv_wc_status viw_wc_status[VIW_CQE_STATUS_MAX + 1] = {
	[VIW_CQE_SUCCESS] = IBV_WC_SUCCESS,
	[VIW_CQE_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
	[VIW_CQE_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
	[VIW_CQE_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
	[VIW_CQE_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
	[VIW_CQE_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
	[VIW_CQE_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
	[VIW_CQE_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
	[VIW_CQE_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
	[VIW_CQE_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
	[VIW_CQE_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	[VIW_CQE_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
	[VIW_CQE_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
};

static enum ibv_wc_status viw_map_status(uint8_t status)
{
	if (status > VIW_CQE_STATUS_MAX)
		return IBV_WC_GENERAL_ERR;
	return viw_wc_status[status];
}

/* Returns false for an opcode the kernel should never have written. */
static bool viw_map_opcode(uint8_t op, enum ibv_wc_opcode *opcode)
{
	switch (op) {
	case VIW_CQE_OP_SEND:
		*opcode = IBV_WC_SEND;
		return true;
	case VIW_CQE_OP_WRITE:
		*opcode = IBV_WC_RDMA_WRITE;
		return true;
	case VIW_CQE_OP_READ:
		*opcode = IBV_WC_RDMA_READ;
		return true;
	case VIW_CQE_OP_RECV:
		*opcode = IBV_WC_RECV;
		return true;
	case VIW_CQE_OP_COMP_SWAP:
		*opcode = IBV_WC_COMP_SWAP;
		return true;
	case VIW_CQE_OP_FETCH_ADD:
		*opcode = IBV_WC_FETCH_ADD;
		return true;
	case VIW_CQE_OP_BIND_MW:
		*opcode = IBV_WC_BIND_MW;
		return true;
	case VIW_CQE_OP_LOCAL_INV:
		*opcode = IBV_WC_LOCAL_INV;
		return true;
	case VIW_CQE_OP_RECV_RDMA_IMM:
		*opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		return true;
	default:
		*opcode = IBV_WC_SEND;
		return false;
	}
}

static void viw_cqe_to_wc(const struct viw_cqe *cqe, uint32_t flags,
			  struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = viw_map_status(cqe->status);
	if (!viw_map_opcode(cqe->opcode, &wc->opcode))
		wc->status = IBV_WC_GENERAL_ERR;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp_num = cqe->qp_id;
	if (flags & VIW_CQE_INV) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = cqe->inv_stag;
	} else if (flags & VIW_CQE_IMM) {
		/* the bytes as they came: imm_data is in network order */
		wc->wc_flags |= IBV_WC_WITH_IMM;
		memcpy(&wc->imm_data, &cqe->inv_stag, sizeof(wc->imm_data));
	}
}

/*
 * Take the next CQE into @wc and give its slot back to the kernel.
 * Returns false if the ring holds none.  Caller holds the CQ lock and
 * publishes cons afterwards.
 */
bool viw_cq_pop(struct viw_cq *cq, struct ibv_wc *wc)
{
	struct viw_ring *ring = &cq->q.ring;
	struct viw_cqe *cqe = viw_ring_slot(ring, ring->head);
	uint32_t flags = viw_rp_cqe_flags(cqe);

	if (!(flags & VIW_CQE_VALID))
		return false;
	viw_cqe_to_wc(cqe, flags, wc);
	viw_rp_cqe_release(cqe);
	ring->head++;
	return true;
}

/*
 * Remove the CQEs of QP @qpn from @cq: a QP moved to RESET leaves no
 * completion behind, as libibverbs' consumers expect (mlx4 and mlx5 do
 * the same), so that a QP reset and connected again does not hand out
 * the flushes of its old life.  The CQEs of other QPs keep their order
 * and move up to close the gaps.  The kernel writes only slots this side
 * released (viw_rp_cq_push()), so the run of valid CQEs from head on is
 * ours to rewrite while it keeps producing behind it.
 */
void viw_cq_clean(struct viw_cq *cq, uint32_t qpn)
{
	struct viw_ring *ring = &cq->q.ring;
	uint32_t end = ring->head, i, freed = 0;

	pthread_spin_lock(&cq->q.lock);
	while (end - ring->head < ring->num_slots &&
	       (viw_rp_cqe_flags(viw_ring_slot(ring, end)) & VIW_CQE_VALID))
		end++;
	for (i = end; i != ring->head;) {
		struct viw_cqe *cqe = viw_ring_slot(ring, --i);

		if (cqe->qp_id == qpn)
			freed++;
		else if (freed)
			memcpy(viw_ring_slot(ring, i + freed), cqe, sizeof(*cqe));
	}
	for (i = 0; i < freed; i++)
		viw_rp_cqe_release(viw_ring_slot(ring, ring->head + i));
	ring->head += freed;
	if (freed)
		viw_ring_publish_cons(ring);
	pthread_spin_unlock(&cq->q.lock);
}

int viw_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct viw_cq *cq = to_viw_cq(ibcq);
	int n;

	pthread_spin_lock(&cq->q.lock);
	for (n = 0; n < num_entries; n++)
		if (!viw_cq_pop(cq, &wc[n]))
			break;
	if (n)
		viw_ring_publish_cons(&cq->q.ring);
	pthread_spin_unlock(&cq->q.lock);
	return n;
}

int viw_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	viw_rp_cq_arm(to_viw_cq(ibcq)->q.ring.ctrl, solicited_only);
	return 0;
}
