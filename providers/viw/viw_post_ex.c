// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: the extended fast path.  ibv_wr_*() on a QP made by
 * ibv_create_qp_ex() and ibv_start_poll() on a CQ made by
 * ibv_create_cq_ex().  Both are front ends to the ring steps of
 * viw_post.c, so the ring protocol exists once.
 *
 * A wr_* batch holds the SQ lock from wr_start to wr_complete or
 * wr_abort.  Each opcode call stages a struct ibv_send_wr; the data call
 * that follows (wr_set_sge, wr_set_sge_list, wr_set_inline_data,
 * wr_set_inline_data_list) completes it and writes it into the next slot,
 * which stays unposted.  wr_complete posts every slot of the batch, or
 * none if any WR of it was bad: it then returns that WR's errno, as
 * ibv_wr_post(3) asks.
 */
#include <errno.h>
#include <string.h>

#include "viw.h"

/* Write the staged WR into the SQ; a WR that got no data has no SGEs. */
static void viw_wr_flush(struct viw_qp *qp)
{
	struct viw_wr_batch *b = &qp->batch;
	int rv;

	if (!b->pending)
		return;
	b->pending = false;
	if (b->err)
		return;
	rv = viw_sq_write(qp, &b->wr);
	if (rv)
		b->err = rv;
}

static struct ibv_send_wr *viw_wr_begin(struct ibv_qp_ex *qpx,
					enum ibv_wr_opcode opcode,
					uint64_t op_flag)
{
	struct viw_qp *qp = qp_ex_to_viw_qp(qpx);
	struct viw_wr_batch *b = &qp->batch;

	viw_wr_flush(qp);
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.wr_id = qpx->wr_id;
	b->wr.opcode = opcode;
	/* Only the data call says whether the payload is inline. */
	b->wr.send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
	b->pending = true;
	if (!(b->ops & op_flag) && !b->err)
		b->err = EINVAL;
	return &b->wr;
}

static void viw_wr_send(struct ibv_qp_ex *qpx)
{
	viw_wr_begin(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void viw_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr;

	wr = viw_wr_begin(qpx, IBV_WR_SEND_WITH_IMM,
			  IBV_QP_EX_WITH_SEND_WITH_IMM);
	wr->imm_data = imm_data;
}

static void viw_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr;

	wr = viw_wr_begin(qpx, IBV_WR_SEND_WITH_INV,
			  IBV_QP_EX_WITH_SEND_WITH_INV);
	wr->invalidate_rkey = invalidate_rkey;
}

static void viw_wr_begin_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			      uint64_t op_flag, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct ibv_send_wr *wr = viw_wr_begin(qpx, opcode, op_flag);

	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
}

static void viw_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	viw_wr_begin_rdma(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE,
			  rkey, remote_addr);
}

static void viw_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = &qp_ex_to_viw_qp(qpx)->batch.wr;

	viw_wr_begin_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
			  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey, remote_addr);
	wr->imm_data = imm_data;
}

static void viw_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	viw_wr_begin_rdma(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ,
			  rkey, remote_addr);
}

/* The result buffer comes with the data call, as for a READ. */
static void viw_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	struct ibv_send_wr *wr;

	wr = viw_wr_begin(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
			  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare;
	wr->wr.atomic.swap = swap;
}

static void viw_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	struct ibv_send_wr *wr;

	wr = viw_wr_begin(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = add;
}

/*
 * A bind takes no data call: it is written at the next opcode or at
 * wr_complete.  As with IBV_WR_BIND_MW in ibv_post_send(), the window
 * takes @rkey only once the bind executed; the consumer keeps track of
 * it.
 */
static void viw_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			   uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr;

	wr = viw_wr_begin(qpx, IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW);
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

/* Give the staged WR its data and write it into the SQ. */
static void viw_wr_set_data(struct ibv_qp_ex *qpx, struct ibv_sge *sg_list,
			    size_t num_sge, bool is_inline)
{
	struct viw_qp *qp = qp_ex_to_viw_qp(qpx);
	struct viw_wr_batch *b = &qp->batch;

	/* Data without an opcode before it. */
	if (!b->pending) {
		if (!b->err)
			b->err = EINVAL;
		return;
	}
	b->wr.sg_list = sg_list;
	b->wr.num_sge = num_sge > VIW_MAX_SGE ? -1 : (int)num_sge;
	if (is_inline)
		b->wr.send_flags |= IBV_SEND_INLINE;
	viw_wr_flush(qp);
}

static void viw_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	viw_wr_set_data(qpx, &sge, 1, false);
}

static void viw_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	/* viw_sq_write() only reads the list, during this call. */
	viw_wr_set_data(qpx, (struct ibv_sge *)sg_list, num_sge, false);
}

static void viw_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct ibv_sge sge[VIW_MAX_SGE];
	size_t i;

	for (i = 0; i < num_buf && i < VIW_MAX_SGE; i++) {
		/* Longer than any inline limit: refused as too long. */
		sge[i].length = buf_list[i].length > VIW_MAX_INLINE ?
				VIW_MAX_INLINE + 1 : buf_list[i].length;
		sge[i].addr = (uintptr_t)buf_list[i].addr;
		sge[i].lkey = 0;
	}
	viw_wr_set_data(qpx, sge, num_buf, true);
}

static void viw_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	viw_wr_set_inline_data_list(qpx, 1, &buf);
}

static void viw_wr_start(struct ibv_qp_ex *qpx)
{
	struct viw_qp *qp = qp_ex_to_viw_qp(qpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->batch.first = qp->sq.ring.head;
	qp->batch.pending = false;
	qp->batch.err = 0;
}

/* Forget the batch's slots; none of them was posted. */
static void viw_wr_drop(struct viw_qp *qp)
{
	qp->batch.pending = false;
	qp->sq.ring.head = qp->batch.first;
	pthread_spin_unlock(&qp->sq.lock);
}

static int viw_wr_complete(struct ibv_qp_ex *qpx)
{
	struct viw_qp *qp = qp_ex_to_viw_qp(qpx);
	struct viw_context *ctx = to_viw_ctx(qpx->qp_base.context);
	int err;
	bool ring_db;

	viw_wr_flush(qp);
	err = qp->batch.err;
	if (err) {
		viw_wr_drop(qp);
		return err;
	}
	ring_db = viw_sq_publish(ctx, qp, qp->batch.first);
	pthread_spin_unlock(&qp->sq.lock);
	/* As in viw_post_send(): the WRs stay posted if this fails. */
	return ring_db ? viw_sq_doorbell(&qpx->qp_base) : 0;
}

static void viw_wr_abort(struct ibv_qp_ex *qpx)
{
	viw_wr_drop(qp_ex_to_viw_qp(qpx));
}

/*
 * Called once the QP exists.  Only the opcodes viw's SQ carries get a
 * function; create_qp_ex refused any other send_ops_flags.
 */
void viw_qp_ex_init(struct viw_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qp->batch.ops = send_ops_flags;
	qp->vqp.comp_mask |= VERBS_QP_EX;
	qpx->wr_send = viw_wr_send;
	qpx->wr_send_imm = viw_wr_send_imm;
	qpx->wr_send_inv = viw_wr_send_inv;
	qpx->wr_rdma_write = viw_wr_rdma_write;
	qpx->wr_rdma_write_imm = viw_wr_rdma_write_imm;
	qpx->wr_rdma_read = viw_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = viw_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = viw_wr_atomic_fetch_add;
	qpx->wr_bind_mw = viw_wr_bind_mw;
	qpx->wr_set_sge = viw_wr_set_sge;
	qpx->wr_set_sge_list = viw_wr_set_sge_list;
	qpx->wr_set_inline_data = viw_wr_set_inline_data;
	qpx->wr_set_inline_data_list = viw_wr_set_inline_data_list;
	qpx->wr_start = viw_wr_start;
	qpx->wr_complete = viw_wr_complete;
	qpx->wr_abort = viw_wr_abort;
}

/* ibv_cq_ex: one completion at a time, read into cq->cur. */

static int viw_cq_ex_read_next(struct viw_cq *cq)
{
	if (!viw_cq_pop(cq, &cq->cur))
		return ENOENT;
	cq->ibv_cq_ex.status = cq->cur.status;
	cq->ibv_cq_ex.wr_id = cq->cur.wr_id;
	return 0;
}

static int viw_cq_ex_start_poll(struct ibv_cq_ex *cqx,
				struct ibv_poll_cq_attr *attr)
{
	struct viw_cq *cq = cq_ex_to_viw_cq(cqx);
	int rv;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->q.lock);
	rv = viw_cq_ex_read_next(cq);
	/* No end_poll follows a failed start_poll. */
	if (rv)
		pthread_spin_unlock(&cq->q.lock);
	return rv;
}

static int viw_cq_ex_next_poll(struct ibv_cq_ex *cqx)
{
	return viw_cq_ex_read_next(cq_ex_to_viw_cq(cqx));
}

static void viw_cq_ex_end_poll(struct ibv_cq_ex *cqx)
{
	struct viw_cq *cq = cq_ex_to_viw_cq(cqx);

	viw_ring_publish_cons(&cq->q.ring);
	pthread_spin_unlock(&cq->q.lock);
}

static enum ibv_wc_opcode viw_cq_ex_read_opcode(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.opcode;
}

static uint32_t viw_cq_ex_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.vendor_err;
}

static uint32_t viw_cq_ex_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.byte_len;
}

/*
 * The immediate data with IBV_WC_WITH_IMM; like struct ibv_wc, the field
 * holds the invalidated STag when read_wc_flags has IBV_WC_WITH_INV
 * (ibv_wc_read_invalidated_rkey() reads it through this function).
 */
static __be32 viw_cq_ex_read_imm_data(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.imm_data;
}

static uint32_t viw_cq_ex_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.qp_num;
}

static unsigned int viw_cq_ex_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cq_ex_to_viw_cq(cqx)->cur.wc_flags;
}

/* UD and IB addressing fields: 0 on an RC-only iWARP device, as in wc. */
static uint32_t viw_cq_ex_read_zero32(struct ibv_cq_ex *cqx)
{
	return 0;
}

static uint8_t viw_cq_ex_read_zero8(struct ibv_cq_ex *cqx)
{
	return 0;
}

/* Called once the CQ exists; create_cq_ex refused other wc_flags. */
void viw_cq_ex_init(struct viw_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->ibv_cq_ex;

	cqx->start_poll = viw_cq_ex_start_poll;
	cqx->next_poll = viw_cq_ex_next_poll;
	cqx->end_poll = viw_cq_ex_end_poll;
	cqx->read_opcode = viw_cq_ex_read_opcode;
	cqx->read_vendor_err = viw_cq_ex_read_vendor_err;
	cqx->read_byte_len = viw_cq_ex_read_byte_len;
	cqx->read_imm_data = viw_cq_ex_read_imm_data;
	cqx->read_qp_num = viw_cq_ex_read_qp_num;
	cqx->read_src_qp = viw_cq_ex_read_zero32;
	cqx->read_wc_flags = viw_cq_ex_read_wc_flags;
	cqx->read_slid = viw_cq_ex_read_zero32;
	cqx->read_sl = viw_cq_ex_read_zero8;
	cqx->read_dlid_path_bits = viw_cq_ex_read_zero8;
}
