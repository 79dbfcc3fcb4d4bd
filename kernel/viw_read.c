// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: RDMA READ and atomic bookkeeping.
 *
 * The ORQ holds the READs and atomics this QP sent, oldest first;
 * responses arrive in that order (RFC 5040, RFC 7306), so only its head
 * can be filled.  The IRQ holds the READs and atomics the peer sent; the
 * transmit engine answers them in order.  The negotiated ORD and IRD bound
 * the two queues, for both kinds together.
 *
 * Both are plain queues: they report what finished, and the engines
 * complete the WQEs, fail the QP and kick the transmit engine.
 */
#include "viw_engine.h"

static u32 viw_rd_slot(u32 index, u32 size)
{
	return index % size;
}

bool viw_orq_busy(struct viw_qp *qp)
{
	return READ_ONCE(qp->eng->orq_head) != READ_ONCE(qp->eng->orq_tail);
}

bool viw_orq_full(struct viw_qp *qp)
{
	return qp->eng->orq_tail - READ_ONCE(qp->eng->orq_head) >= max_t(u8, qp->ord, 1);
}

static bool viw_orq_add(struct viw_qp *qp, const struct viw_orq_entry *ent)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&qp->rd_lock, flags);
	if (qp->eng->orq_tail - qp->eng->orq_head < VIW_MAX_ORD) {
		qp->eng->orq[viw_rd_slot(qp->eng->orq_tail, VIW_MAX_ORD)] = *ent;
		qp->eng->orq_tail++;
		ok = true;
	}
	spin_unlock_irqrestore(&qp->rd_lock, flags);
	return ok;
}

bool viw_orq_push(struct viw_qp *qp, u32 sq_index,
		  const struct viw_read_req *rr)
{
	struct viw_orq_entry ent = {
		.sq_index = sq_index,
		.sink_stag = rr->sink_stag,
		.sink_to = rr->sink_to,
		.size = rr->size,
	};

	return viw_orq_add(qp, &ent);
}

/* The zero-length READ of the MPA RTR: answered, but completes nothing. */
bool viw_orq_push_internal(struct viw_qp *qp)
{
	struct viw_orq_entry ent = { .internal = true };

	return viw_orq_add(qp, &ent);
}

bool viw_orq_push_atomic(struct viw_qp *qp, u32 sq_index,
			 const struct viw_sge *sink, u32 req_id)
{
	struct viw_orq_entry ent = {
		.sq_index = sq_index,
		.sink_stag = sink->lkey,
		.sink_to = sink->addr,
		.size = VIW_ATOMIC_SIZE,
		.atomic = true,
		.req_id = req_id,
	};

	return viw_orq_add(qp, &ent);
}

/* Called by the receive engine only, which is the sole consumer. */
struct viw_orq_entry *viw_orq_peek(struct viw_qp *qp)
{
	if (!viw_orq_busy(qp))
		return NULL;
	return &qp->eng->orq[viw_rd_slot(qp->eng->orq_head, VIW_MAX_ORD)];
}

/* Retire the head of the ORQ; only the receive engine does. */
static void viw_orq_pop(struct viw_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rd_lock, flags);
	qp->eng->orq_head++;
	spin_unlock_irqrestore(&qp->rd_lock, flags);
}

/**
 * viw_orq_progress - response bytes were placed for the head READ
 * @qp: the QP
 * @n: how many more
 * @last: the response ends here
 * @done: set to the finished entry when @last
 *
 * Return: whether the head entry finished and left the ORQ.
 */
bool viw_orq_progress(struct viw_qp *qp, u32 n, bool last,
		      struct viw_orq_entry *done)
{
	struct viw_orq_entry *ent = viw_orq_peek(qp);

	if (!ent)
		return false;
	ent->got += n;
	if (!last)
		return false;
	*done = *ent;
	viw_orq_pop(qp);
	return true;
}

/*
 * The head atomic got its response.  Return: whether it was one, and left
 * the ORQ with its SQ index in *@sq_index.
 */
bool viw_orq_atomic_done(struct viw_qp *qp, u32 *sq_index)
{
	struct viw_orq_entry *ent = viw_orq_peek(qp);

	if (WARN_ON_ONCE(!ent || !ent->atomic))
		return false;
	*sq_index = ent->sq_index;
	viw_orq_pop(qp);
	return true;
}

bool viw_irq_push(struct viw_qp *qp, const struct viw_irq_entry *ent)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&qp->rd_lock, flags);
	if (qp->eng->irq_tail - qp->eng->irq_head < max_t(u8, qp->ird, 1)) {
		qp->eng->irq[viw_rd_slot(qp->eng->irq_tail, VIW_MAX_IRD)] = *ent;
		/* read without rd_lock by viw_irq_peek() */
		WRITE_ONCE(qp->eng->irq_tail, qp->eng->irq_tail + 1);
		ok = true;
	}
	spin_unlock_irqrestore(&qp->rd_lock, flags);
	return ok;
}

/*
 * Called by the transmit engine only, which is the sole consumer, between
 * its messages.  Most looks find no READ waiting, and they take no lock:
 * a READ queued after the look kicks the engine (viw_rx_queue_inbound()),
 * which then looks again.
 */
struct viw_irq_entry *viw_irq_peek(struct viw_qp *qp)
{
	struct viw_irq_entry *ent = NULL;
	unsigned long flags;

	if (!viw_irq_waiting(qp))
		return NULL;
	spin_lock_irqsave(&qp->rd_lock, flags);
	if (qp->eng->irq_head != qp->eng->irq_tail)
		ent = &qp->eng->irq[viw_rd_slot(qp->eng->irq_head, VIW_MAX_IRD)];
	spin_unlock_irqrestore(&qp->rd_lock, flags);
	return ent;
}

/* Drop the oldest inbound READ; returns its source MR reference. */
struct viw_mr *viw_irq_pop(struct viw_qp *qp)
{
	struct viw_irq_entry *ent;
	unsigned long flags;
	struct viw_mr *mr;

	spin_lock_irqsave(&qp->rd_lock, flags);
	ent = &qp->eng->irq[viw_rd_slot(qp->eng->irq_head, VIW_MAX_IRD)];
	mr = ent->mr;
	ent->mr = NULL;
	WRITE_ONCE(qp->eng->irq_head, qp->eng->irq_head + 1);
	spin_unlock_irqrestore(&qp->rd_lock, flags);
	return mr;
}

/* Drop both queues when the QP stops; their WQEs are flushed. */
void viw_rd_reset(struct viw_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rd_lock, flags);
	while (qp->eng->irq_head != qp->eng->irq_tail) {
		struct viw_irq_entry *ent;

		ent = &qp->eng->irq[viw_rd_slot(qp->eng->irq_head, VIW_MAX_IRD)];
		if (ent->mr)
			viw_mr_put(ent->mr);
		ent->mr = NULL;
		WRITE_ONCE(qp->eng->irq_head, qp->eng->irq_head + 1);
	}
	qp->eng->orq_head = qp->eng->orq_tail;
	spin_unlock_irqrestore(&qp->rd_lock, flags);
}
