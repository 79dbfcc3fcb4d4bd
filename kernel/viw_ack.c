// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the SEND and WRITE WQEs that wait for the peer's acknowledgement.
 *
 * On a modify_qp connection between two viw QPs that agreed on it, the
 * responder acknowledges the SEND-type and WRITE messages it placed (a
 * count, viw_tx.c sends it, viw_rx.c reads it).  The requester completes
 * such a WQE only once the count covers its last message, as an
 * InfiniBand requester completes on the responder's ACK.  So a message
 * the responder refuses fails the WQE that sent it, with the status its
 * TERMINATE gives (viw_qp_terminated()), and not a later one.
 *
 * The queue holds at most one entry per SQ slot: only WQEs the engine
 * took are in it, and the SQ has no more than its slots outstanding.
 */
#include <linux/log2.h>
#include <linux/slab.h>

#include "viw_engine.h"

/**
 * viw_ack_alloc - the queue, sized for the QP's send queue
 * @qp: a new QP whose engine state exists
 * @sq_slots: the SQ's slots
 *
 * Return: 0 or -ENOMEM.  viw_engine_free() frees it.
 */
int viw_ack_alloc(struct viw_qp *qp, u32 sq_slots)
{
	u32 size = roundup_pow_of_two(max_t(u32, sq_slots, 1));

	qp->eng->ackq = kcalloc(size, sizeof(*qp->eng->ackq), GFP_KERNEL);
	if (!qp->eng->ackq)
		return -ENOMEM;
	qp->eng->ackq_size = size;
	return 0;
}

static struct viw_ack_wait *viw_ack_slot(struct viw_engine *eng, u32 index)
{
	return &eng->ackq[index & (eng->ackq_size - 1)];
}

/*
 * Is @placed at least @msg_no?  Both count from the stream's start modulo
 * 2^32, and no more than 2^31 messages are ever outstanding.
 */
static bool viw_ack_covers(u32 placed, u32 msg_no)
{
	return (s32)(placed - msg_no) >= 0;
}

/**
 * viw_ack_wait - a WQE's last message is about to be sent
 * @qp: the QP (tx_lock held)
 * @sq_index: its SQ index
 * @msg_no: the message count once that message is placed
 *
 * The entry goes in before the message goes on the wire, so that an
 * acknowledgement, which may come at once, always finds it.
 */
void viw_ack_wait(struct viw_qp *qp, u32 sq_index, u32 msg_no)
{
	struct viw_engine *eng = qp->eng;
	unsigned long flags;

	spin_lock_irqsave(&qp->rd_lock, flags);
	if (!WARN_ON_ONCE(eng->ackq_tail - eng->ackq_head >= eng->ackq_size)) {
		*viw_ack_slot(eng, eng->ackq_tail) = (struct viw_ack_wait) {
			.sq_index = sq_index,
			.msg_no = msg_no,
		};
		eng->ackq_tail++;
	}
	spin_unlock_irqrestore(&qp->rd_lock, flags);
}

/* Take the oldest entry if @placed covers it; rd_lock held. */
static bool viw_ack_pop_covered(struct viw_engine *eng, u32 placed,
				u32 *sq_index)
{
	struct viw_ack_wait *w;

	if (eng->ackq_head == eng->ackq_tail)
		return false;
	w = viw_ack_slot(eng, eng->ackq_head);
	if (!viw_ack_covers(placed, w->msg_no))
		return false;
	*sq_index = w->sq_index;
	eng->ackq_head++;
	return true;
}

/**
 * viw_ack_received - the peer acknowledged @placed messages
 * @qp: the QP, from the receive engine
 * @placed: the peer's count
 *
 * The WQEs it covers complete.  A count that goes back, or covers
 * messages never sent, is a protocol error.
 *
 * Return: 0, or -EPROTO for a count that cannot be.
 */
int viw_ack_received(struct viw_qp *qp, u32 placed)
{
	struct viw_engine *eng = qp->eng;
	unsigned long flags;
	u32 sq_index;

	if (!viw_ack_covers(placed, eng->rx.peer_placed) ||
	    !viw_ack_covers(READ_ONCE(eng->tx_msgs), placed))
		return -EPROTO;
	eng->rx.peer_placed = placed;
	for (;;) {
		bool more;

		spin_lock_irqsave(&qp->rd_lock, flags);
		more = viw_ack_pop_covered(eng, placed, &sq_index);
		spin_unlock_irqrestore(&qp->rd_lock, flags);
		if (!more)
			return 0;
		viw_sq_complete(qp, sq_index, VIW_CQE_SUCCESS);
	}
}

/* Forget every entry: the QP stopped, and the flush completes the WQEs. */
void viw_ack_reset(struct viw_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rd_lock, flags);
	qp->eng->ackq_head = qp->eng->ackq_tail;
	spin_unlock_irqrestore(&qp->rd_lock, flags);
}
