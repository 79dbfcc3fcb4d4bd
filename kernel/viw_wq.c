// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: work queues (SQ and RQ).
 *
 * The process writes WQEs into the mapped ring and rings the doorbell (the
 * uverbs post command with no work requests, viw_qp.c).  The kernel copies
 * each WQE exactly once out of the ring and only ever looks at that copy,
 * so a process rewriting the ring under the kernel's feet changes nothing.
 * An SQE is copied straight into the transmit engine's WQE, which alone
 * uses it; the SQ's shadow keeps only what its completion needs (struct
 * viw_sq_rec), since a flush may retire the slot while the engine still
 * sends from its copy.  An RQE is copied into the RQ's shadow when it is
 * taken ahead of use; when the receive engine takes one straight from the
 * ring, it goes into the engine's and the shadow keeps its wr_id only.
 * Slots [done, fetch) belong to the kernel; at most num_slots of them, so
 * a process that keeps posting cannot make the kernel hold more.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "viw_qp.h"
#include "viw_trace.h"

/*
 * What the kernel keeps of an SQE it took: what its completion needs.
 * The WQE itself is in the transmit engine's copy (viw_sq_take()).
 */
struct viw_sq_rec {
	u64 wr_id;
	u32 byte_len;
	u16 flags;
	u8 opcode;			/* enum viw_cqe_opcode */
};

/* @kept: the bytes the shadow keeps of each slot's WQE */
static int viw_wq_init(struct viw_wq *wq, u32 num_slots, u32 slot_size,
		       u32 kept, u32 max_sge)
{
	int rv;

	rv = viw_ring_alloc(&wq->ring, num_slots, slot_size);
	if (rv)
		return rv;
	/* Charged to the process like the ring (viw_ring.c). */
	wq->shadow = kvcalloc(num_slots, kept, VIW_QMEM_GFP);
	wq->status = kvcalloc(num_slots, sizeof(*wq->status), VIW_QMEM_GFP);
	if (!wq->shadow || !wq->status) {
		kvfree(wq->shadow);
		kvfree(wq->status);
		wq->shadow = NULL;
		viw_ring_free(&wq->ring);
		return -ENOMEM;
	}
	wq->ring.extra = (size_t)num_slots * (kept + sizeof(*wq->status));
	wq->kept = kept;
	wq->fetch = 0;
	wq->done = 0;
	wq->failed = false;
	wq->max_sge = max_sge;
	wq->prod = 0;
	spin_lock_init(&wq->lock);
	spin_lock_init(&wq->post_lock);
	return 0;
}

int viw_sq_init(struct viw_wq *sq, u32 num_slots, u32 max_sge)
{
	return viw_wq_init(sq, num_slots, sizeof(struct viw_sqe),
			   sizeof(struct viw_sq_rec), max_sge);
}

int viw_rq_init(struct viw_wq *rq, u32 num_slots, u32 max_sge)
{
	return viw_wq_init(rq, num_slots, sizeof(struct viw_rqe),
			   sizeof(struct viw_rqe), max_sge);
}

void viw_wq_free(struct viw_wq *wq)
{
	if (!wq->shadow)
		return;
	viw_ring_free(&wq->ring);
	kvfree(wq->shadow);
	kvfree(wq->status);
	wq->shadow = NULL;
	wq->status = NULL;
}

void viw_wq_set_kflags(struct viw_wq *wq, u32 kflags)
{
	if (wq->shadow)
		viw_rp_kflags_set(wq->ring.ctrl, kflags);
}

static void *viw_wq_shadow(struct viw_wq *wq, u32 index)
{
	return wq->shadow +
	       (size_t)(index & (wq->ring.num_slots - 1)) * wq->kept;
}

static u8 *viw_wq_status(struct viw_wq *wq, u32 index)
{
	return &wq->status[index & (wq->ring.num_slots - 1)];
}

/*
 * Copy the next posted WQE out of the ring into @copy, @size bytes: the
 * whole slot, sizeof the SQE or RQE the queue was made for
 * (viw_sq_init(), viw_rq_init()).  Returns false if the slot at fetch is
 * not posted or the kernel already owns every slot.  Inline: each post
 * and each SEND received takes one.  @size is a constant in each caller,
 * so that the copy compiles to moves: the ring's slot_size would make it
 * a call to memcpy(), a string move of one byte at a time.
 */
static __always_inline bool viw_wq_fetch(struct viw_wq *wq, void *copy,
					 size_t size)
{
	/* The kernel holds at most a ring's worth, [done, fetch). */
	if (!viw_rp_room(wq->fetch, wq->done, wq->ring.num_slots))
		return false;
	if (WARN_ON_ONCE(size != wq->ring.slot_size))
		return false;
	if (!viw_rp_wqe_take(copy, viw_ring_slot(&wq->ring, wq->fetch), size))
		return false;
	*viw_wq_status(wq, wq->fetch) = VIW_CQE_SUCCESS;
	/* read without the queue's lock by viw_sq_posted_hint() */
	WRITE_ONCE(wq->fetch, wq->fetch + 1);
	return true;
}

/* Fetch the next posted RQE into the RQ's shadow; returns the copy. */
static struct viw_rqe *viw_rq_fetch(struct viw_wq *rq)
{
	struct viw_rqe *copy = viw_wq_shadow(rq, rq->fetch);

	return viw_wq_fetch(rq, copy, sizeof(*copy)) ? copy : NULL;
}

/* Retire the oldest kernel-owned WQE and give its slot back. */
static void viw_wq_retire(struct viw_wq *wq)
{
	wq->done++;
	viw_rp_retire(wq->ring.ctrl, wq->done);
}

static u8 viw_sqe_cqe_opcode(const struct viw_sqe *sqe)
{
	switch (sqe->opcode) {
	case VIW_OP_WRITE:
	case VIW_OP_WRITE_IMM:
		return VIW_CQE_OP_WRITE;
	case VIW_OP_READ:
		return VIW_CQE_OP_READ;
	case VIW_OP_ATOMIC_CMP_SWP:
		return VIW_CQE_OP_COMP_SWAP;
	case VIW_OP_ATOMIC_FETCH_ADD:
		return VIW_CQE_OP_FETCH_ADD;
	case VIW_OP_BIND_MW:
		return VIW_CQE_OP_BIND_MW;
	case VIW_OP_LOCAL_INV:
		return VIW_CQE_OP_LOCAL_INV;
	case VIW_OP_REG_MR:
		return VIW_CQE_OP_REG_MR;
	default:
		return VIW_CQE_OP_SEND;
	}
}

static u32 viw_sqe_byte_len(const struct viw_sqe *sqe)
{
	u32 len = 0;
	int i;

	if (sqe->opcode == VIW_OP_ATOMIC_CMP_SWP ||
	    sqe->opcode == VIW_OP_ATOMIC_FETCH_ADD)
		return VIW_ATOMIC_SIZE;
	if (sqe->opcode != VIW_OP_READ)
		return 0;
	for (i = 0; i < min_t(int, sqe->num_sge, VIW_MAX_SGE); i++)
		len += sqe->sge[i].length;
	return len;
}

/* Keep what the completion of SQE @index, just copied to @sqe, needs. */
static void viw_sq_keep(struct viw_wq *sq, u32 index,
			const struct viw_sqe *sqe)
{
	struct viw_sq_rec *rec = viw_wq_shadow(sq, index);

	rec->wr_id = sqe->wr_id;
	rec->byte_len = viw_sqe_byte_len(sqe);
	rec->flags = sqe->flags;
	rec->opcode = viw_sqe_cqe_opcode(sqe);
}

/*
 * Retire the SQE at done and report it with @status if it must be.  The
 * slot goes back first: a consumer that sees the completion may post into
 * it at once.
 */
static void viw_sq_report(struct viw_qp *qp, u8 status)
{
	struct viw_sq_rec *rec = viw_wq_shadow(&qp->sq, qp->sq.done);
	struct viw_cqe_info info = {
		.wr_id = rec->wr_id,
		.ibqp = &qp->ibqp,
		.qp_id = qp->ibqp.qp_num,
		.opcode = rec->opcode,
		.status = status,
		.byte_len = rec->byte_len,
	};
	bool report = status != VIW_CQE_SUCCESS || qp->sq_sig_all ||
		      (rec->flags & VIW_WQE_SIGNALED);

	if ((rec->flags & VIW_WQE_QUIET) && viw_qp_is_kernel(qp))
		report = false;

	viw_wq_retire(&qp->sq);
	if (report)
		viw_cq_push(qp->scq, &info);
}

/* Retire finished SQEs in posting order.  Caller holds sq.lock. */
static void viw_sq_retire_finished(struct viw_qp *qp)
{
	struct viw_wq *sq = &qp->sq;

	while (sq->done != sq->fetch) {
		u8 status = *viw_wq_status(sq, sq->done);

		if (status == VIW_WQE_PENDING)
			break;
		viw_sq_report(qp, status);
	}
}

/*
 * SQE @index failed: work requests behind it that finished on the wire
 * but wait for it are flushed too.  Once a WR completes in error, every
 * later one completes with FLUSH_ERR (the peer, which stopped at the
 * error, discarded them).  Caller holds sq.lock.
 */
static void viw_sq_error_at(struct viw_qp *qp, u32 index, u8 status)
{
	struct viw_wq *sq = &qp->sq;
	u32 i;

	*viw_wq_status(sq, index) = status;
	for (i = index + 1; i != sq->fetch; i++) {
		if (*viw_wq_status(sq, i) == VIW_CQE_SUCCESS)
			*viw_wq_status(sq, i) = VIW_CQE_WR_FLUSH_ERR;
	}
	/* and so are those still on the wire, until the flush */
	sq->failed = true;
}

/**
 * viw_sq_complete - an SQE the engine took has finished
 * @qp: the QP
 * @index: its SQ index
 * @status: its completion status
 *
 * SQEs complete in posting order: one that finishes early waits for the
 * ones before it.  An index the flush already retired is ignored.
 */
void viw_sq_complete(struct viw_qp *qp, u32 index, u8 status)
{
	struct viw_wq *sq = &qp->sq;
	unsigned long flags;

	spin_lock_irqsave(&sq->lock, flags);
	if (index - sq->done < sq->fetch - sq->done) {
		if (status != VIW_CQE_SUCCESS)
			viw_sq_error_at(qp, index, status);
		else if (sq->failed)
			*viw_wq_status(sq, index) = VIW_CQE_WR_FLUSH_ERR;
		else
			*viw_wq_status(sq, index) = status;
		viw_sq_retire_finished(qp);
	}
	spin_unlock_irqrestore(&sq->lock, flags);
}

/* Is a WQE posted at the SQ's fetch index that the engine may take now? */
bool viw_sq_has_posted(struct viw_qp *qp)
{
	struct viw_wq *sq = &qp->sq;
	unsigned long flags;
	bool posted;

	spin_lock_irqsave(&sq->lock, flags);
	posted = viw_rp_room(sq->fetch, sq->done, sq->ring.num_slots) &&
		 viw_rp_wqe_posted(viw_rp_wqe_flags(viw_ring_slot(&sq->ring,
								  sq->fetch)));
	spin_unlock_irqrestore(&sq->lock, flags);
	return posted;
}

/**
 * viw_sq_take - copy the next posted SQE out of the ring
 * @qp: the QP, sq.lock held
 * @sqe: where to copy it: the transmit engine's WQE, or the flush's
 *
 * The one copy of the WQE the kernel makes; the SQ keeps what its
 * completion needs.  Return: whether one was posted (and may be taken).
 */
bool viw_sq_take(struct viw_qp *qp, struct viw_sqe *sqe)
{
	struct viw_wq *sq = &qp->sq;
	u32 index = sq->fetch;

	if (!viw_wq_fetch(sq, sqe, sizeof(*sqe)))
		return false;
	viw_sq_keep(sq, index, sqe);
	*viw_wq_status(sq, index) = VIW_WQE_PENDING;
	return true;
}

/*
 * Take the next posted WQE for a flush, which needs only what completes
 * it.  Caller holds wq->lock.
 */
static bool viw_wq_take_for_flush(struct viw_qp *qp, struct viw_wq *wq,
				  bool is_sq)
{
	struct viw_sqe sqe;

	if (!is_sq)
		return viw_rq_fetch(wq);
	return viw_sq_take(qp, &sqe);
}

/*
 * WQEs one hold of a queue lock flushes or validates.  The locks are taken
 * with IRQs off (the receive path takes them in softirq context), so a
 * deep queue is worked through in batches with the lock dropped between
 * them.  Every step still runs under the lock and retires the oldest WQE,
 * so completions keep posting order across batches.
 */
#define VIW_WQ_BATCH		64

/*
 * Complete up to @max WQEs: the kernel-owned ones, then posted ones, in
 * order.  A WQE still in flight completes with FLUSH_ERR, one that
 * validation rejected with its error, and an SQE that finished but waited
 * for an earlier one with its own status.  Returns how many; fewer than
 * @max means the queue is empty.  Caller holds wq->lock.
 */
static u32 viw_wq_flush_locked(struct viw_qp *qp, struct viw_wq *wq,
			       struct viw_cq *cq, bool is_sq, u32 max)
{
	u32 n;

	for (n = 0; n < max; n++) {
		u8 status;

		if (wq->done == wq->fetch &&
		    !viw_wq_take_for_flush(qp, wq, is_sq))
			break;
		status = *viw_wq_status(wq, wq->done);
		if (!cq) {
			/* RESET: emptied without completions */
			viw_wq_retire(wq);
		} else if (is_sq) {
			if (status == VIW_WQE_PENDING)
				status = VIW_CQE_WR_FLUSH_ERR;
			viw_sq_report(qp, status);
		} else {
			struct viw_rqe *rqe = viw_wq_shadow(wq, wq->done);
			struct viw_cqe_info info = {
				.wr_id = rqe->wr_id,
				.ibqp = &qp->ibqp,
				.qp_id = qp->ibqp.qp_num,
				.opcode = VIW_CQE_OP_RECV,
				.status = status ? : VIW_CQE_WR_FLUSH_ERR,
			};

			viw_wq_retire(wq);
			viw_cq_push(cq, &info);
		}
		viw_count(qp->vdev, VIW_CNT_FLUSHED_WQES, 1);
	}
	wq->next = wq->done;
	/* Every WQE the engine took is retired: none is left to fail. */
	if (wq->done == wq->fetch)
		wq->failed = false;
	return n;
}

/*
 * Flush @wq completely, a batch per lock hold.  A process that posts
 * while this runs cannot keep the kernel here: one flush retires at most
 * two rings' worth.
 */
static void viw_wq_flush(struct viw_qp *qp, struct viw_wq *wq,
			 struct viw_cq *cq, bool is_sq)
{
	u32 budget = 2 * wq->ring.num_slots;
	unsigned long flags;
	u32 batch, n, total = 0;

	do {
		batch = min_t(u32, budget, VIW_WQ_BATCH);
		spin_lock_irqsave(&wq->lock, flags);
		n = viw_wq_flush_locked(qp, wq, cq, is_sq, batch);
		spin_unlock_irqrestore(&wq->lock, flags);
		budget -= n;
		total += n;
	} while (n == batch && budget);
	trace_viw_flush(qp, is_sq, !cq, total);
}

void viw_sq_flush(struct viw_qp *qp)
{
	viw_wq_flush(qp, &qp->sq, qp->scq, true);
}

void viw_rq_flush(struct viw_qp *qp)
{
	if (qp->srq)
		return;
	viw_wq_flush(qp, &qp->rq, qp->rcq, false);
}

/* Empty the queues without completions (modify_qp to RESET). */
void viw_sq_discard(struct viw_qp *qp)
{
	viw_wq_flush(qp, &qp->sq, NULL, true);
}

void viw_rq_discard(struct viw_qp *qp)
{
	if (qp->srq)
		return;
	viw_wq_flush(qp, &qp->rq, NULL, false);
}

/*
 * Returns VIW_CQE_SUCCESS or the status the RQE must complete with.  Only
 * the WQE's shape is checked here.  Its lkeys, PD and ranges are checked
 * when a SEND uses it (viw_rx_bind_rqe), as an RNIC does: the MR may be
 * re-registered or deregistered between the post and the SEND, and only
 * the MR as it is then counts (docs/semantics.md section 8).
 */
static u8 viw_rqe_check(struct viw_qp *qp, const struct viw_rqe *rqe)
{
	if (rqe->num_sge > qp->rq.max_sge)
		return VIW_CQE_LOC_QP_OP_ERR;
	return VIW_CQE_SUCCESS;
}

/* Check the RQE just fetched, at fetch - 1, and keep its status. */
static bool viw_rq_check_fetched(struct viw_qp *qp, const struct viw_rqe *rqe)
{
	u8 status = viw_rqe_check(qp, rqe);

	*viw_wq_status(&qp->rq, qp->rq.fetch - 1) = status;
	return status == VIW_CQE_SUCCESS;
}

/* Take and validate one more posted RQE.  Caller holds rq.lock. */
static bool viw_rq_take_posted_one(struct viw_qp *qp)
{
	struct viw_rqe *rqe = viw_rq_fetch(&qp->rq);

	return rqe && viw_rq_check_fetched(qp, rqe);
}

/*
 * Take and validate up to VIW_WQ_BATCH newly posted RQEs.  Returns false
 * when one is invalid: it keeps its error status in the shadow and the QP
 * must go to ERROR, which completes it in its place in posting order.
 * *@more is set if the batch ran out before the posted RQEs did.  Caller
 * holds rq.lock.
 */
static bool viw_rq_take_posted(struct viw_qp *qp, bool *more)
{
	u32 before;
	int n;

	*more = false;
	for (n = 0; n < VIW_WQ_BATCH; n++) {
		before = qp->rq.fetch;
		if (!viw_rq_take_posted_one(qp))
			return qp->rq.fetch == before;
	}
	*more = true;
	return true;
}

/*
 * None was taken ahead: copy the next posted RQE straight into the
 * engine's @rqe, the one copy the kernel makes of it.  The shadow keeps
 * only its wr_id, for a flush.  Returns 0, -ENOENT or -EINVAL.  Caller
 * holds rq.lock.
 */
static int viw_rq_take_direct(struct viw_qp *qp, struct viw_rqe *rqe,
			      u32 *index)
{
	struct viw_wq *rq = &qp->rq;
	struct viw_rqe *kept = viw_wq_shadow(rq, rq->fetch);

	if (!viw_wq_fetch(rq, rqe, sizeof(*rqe)))
		return -ENOENT;
	kept->wr_id = rqe->wr_id;
	if (!viw_rq_check_fetched(qp, rqe))
		return -EINVAL;
	*index = rq->next++;
	return 0;
}

/**
 * viw_rq_take - give the receive engine the next receive WQE
 * @qp: a QP without SRQ
 * @rqe: where to copy the WQE
 * @index: set to its RQ index, for viw_rq_complete()
 *
 * Return: 0, -ENOENT if none is posted, or -EINVAL if the next one is
 * invalid (the caller then fails the QP).
 */
int viw_rq_take(struct viw_qp *qp, struct viw_rqe *rqe, u32 *index)
{
	struct viw_wq *rq = &qp->rq;
	unsigned long flags;
	int rv = 0;

	spin_lock_irqsave(&rq->lock, flags);
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		rv = -ENOENT;
	} else if (rq->next == rq->fetch) {
		rv = viw_rq_take_direct(qp, rqe, index);
	} else if (*viw_wq_status(rq, rq->next) != VIW_CQE_SUCCESS) {
		rv = -EINVAL;
	} else {
		*rqe = *(struct viw_rqe *)viw_wq_shadow(rq, rq->next);
		*index = rq->next++;
	}
	spin_unlock_irqrestore(&rq->lock, flags);
	return rv;
}

/**
 * viw_rq_complete - a receive WQE the engine took has finished
 * @qp: a QP without SRQ
 * @index: its RQ index, from viw_rq_take()
 * @info: its completion
 *
 * A WQE the flush already retired (the QP left RTS) gets no second one.
 */
void viw_rq_complete(struct viw_qp *qp, u32 index,
		     const struct viw_cqe_info *info)
{
	struct viw_wq *rq = &qp->rq;
	unsigned long flags;

	spin_lock_irqsave(&rq->lock, flags);
	if (index == rq->done && rq->done != rq->fetch) {
		/* the slot goes back before the completion shows */
		viw_wq_retire(rq);
		viw_cq_push(qp->rcq, info);
	}
	spin_unlock_irqrestore(&rq->lock, flags);
}

/*
 * One batch of the RQ doorbell under rq.lock.  Returns false if an RQE was
 * invalid; *@more says whether another batch is due.
 */
static bool viw_rq_doorbell_batch(struct viw_qp *qp, bool *more)
{
	unsigned long flags;
	bool valid = true;

	*more = false;
	spin_lock_irqsave(&qp->rq.lock, flags);
	/* RESET: taken when the QP leaves RESET; ERR: being flushed. */
	if (READ_ONCE(qp->state) != IB_QPS_RESET &&
	    READ_ONCE(qp->state) != IB_QPS_ERR)
		valid = viw_rq_take_posted(qp, more);
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	return valid;
}

/**
 * viw_rq_take_all - take what the process posted to the RQ
 * @qp: a QP without SRQ
 *
 * Copies at most a ring's worth, so that a process reposting meanwhile
 * cannot keep the kernel here.  The caller has checked for ERROR.
 * Return: 0, or -EINVAL if a receive WQE was invalid.
 */
int viw_rq_take_all(struct viw_qp *qp)
{
	u32 batches = qp->rq.ring.num_slots / VIW_WQ_BATCH + 1;
	bool more, valid;

	do {
		valid = viw_rq_doorbell_batch(qp, &more);
	} while (valid && more && --batches);
	return valid ? 0 : -EINVAL;
}

/*
 * Nothing of the SQ is in the kernel's hands or posted to it: every WQE the
 * process posted has completed.  Caller holds tx_lock (no fetch meanwhile).
 */
bool viw_sq_idle(struct viw_qp *qp)
{
	struct viw_wq *sq = &qp->sq;
	void *slot = viw_ring_slot(&sq->ring, sq->fetch);

	if (READ_ONCE(sq->done) != sq->fetch)
		return false;
	return !viw_rp_wqe_posted(viw_rp_wqe_flags(slot));
}

/*
 * Give the oldest unfinished SQE the engine took @status; false if it
 * took none.  Caller holds sq.lock.
 */
static bool viw_sq_fail_oldest_taken(struct viw_qp *qp, u8 status)
{
	struct viw_wq *sq = &qp->sq;
	u32 i;

	for (i = sq->done; i != sq->fetch; i++) {
		if (*viw_wq_status(sq, i) == VIW_WQE_PENDING) {
			viw_sq_error_at(qp, i, status);
			return true;
		}
	}
	return false;
}

/* The peer reported an error: the oldest unfinished SQE takes it. */
void viw_sq_fail_oldest(struct viw_qp *qp, u8 status)
{
	struct viw_wq *sq = &qp->sq;
	unsigned long flags;

	spin_lock_irqsave(&sq->lock, flags);
	viw_sq_fail_oldest_taken(qp, status);
	viw_sq_retire_finished(qp);
	spin_unlock_irqrestore(&sq->lock, flags);
}

/**
 * viw_sq_retries_exceeded - the peer stopped answering for good
 * @qp: the QP, state_lock held, about to go to ERROR; sq.lock orders its
 *	take against the transmit engine's, as the flush does
 *
 * As an InfiniBand requester whose retries ran out, the oldest WR not
 * completed fails with RETRY_EXC_ERR, whether the engine took it or it
 * still waits in the ring (posted before the connection came up or after
 * the peer left); the flush that follows completes the rest with
 * FLUSH_ERR.  Not if a WR failed already, with the status the peer's
 * TERMINATE gave it: the rest are flushed.
 */
void viw_sq_retries_exceeded(struct viw_qp *qp)
{
	struct viw_wq *sq = &qp->sq;
	struct viw_sqe sqe;
	unsigned long flags;

	spin_lock_irqsave(&sq->lock, flags);
	if (!sq->failed &&
	    !viw_sq_fail_oldest_taken(qp, VIW_CQE_RETRY_EXC_ERR) &&
	    sq->done == sq->fetch && viw_sq_take(qp, &sqe))
		viw_sq_error_at(qp, sq->done, VIW_CQE_RETRY_EXC_ERR);
	viw_sq_retire_finished(qp);
	spin_unlock_irqrestore(&sq->lock, flags);
}
