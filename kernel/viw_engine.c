// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the engines' state of a QP (struct viw_engine, viw_engine.h), in an
 * allocation of its own so that only the engines see its layout.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "viw_engine.h"

int viw_engine_alloc(struct viw_qp *qp)
{
	struct viw_engine *eng = kzalloc(sizeof(*eng), GFP_KERNEL);

	if (!eng)
		return -ENOMEM;
	/* FPDU headers and trailers are built in one page. */
	eng->tx_buf = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!eng->tx_buf) {
		kfree(eng);
		return -ENOMEM;
	}
	eng->tx_batch = kzalloc(sizeof(*eng->tx_batch), GFP_KERNEL);
	if (!eng->tx_batch)
		goto err_buf;
	eng->tx_batch->slots = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!eng->tx_batch->slots)
		goto err_batch;
	/* Looked up once: each FPDU points into these pages twice. */
	eng->tx_buf_page = virt_to_page(eng->tx_buf);
	eng->tx_batch->slots_page = virt_to_page(eng->tx_batch->slots);
	/* Only a kernel PD has fast-register MRs (viw_alloc_mr()). */
	if (viw_qp_is_kernel(qp)) {
		eng->tx_bounce = kmalloc(VIW_TX_BOUNCE_BYTES, GFP_KERNEL);
		if (!eng->tx_bounce)
			goto err_slots;
	}
	qp->eng = eng;
	return 0;

err_slots:
	free_page((unsigned long)eng->tx_batch->slots);
err_batch:
	kfree(eng->tx_batch);
err_buf:
	free_page((unsigned long)eng->tx_buf);
	kfree(eng);
	return -ENOMEM;
}

void viw_engine_free(struct viw_qp *qp)
{
	if (!qp->eng)
		return;
	viw_engine_drop_spill(qp);
	kfree(qp->eng->tx_bounce);
	free_page((unsigned long)qp->eng->tx_batch->slots);
	kfree(qp->eng->tx_batch);
	free_page((unsigned long)qp->eng->tx_buf);
	kfree(qp->eng->ackq);
	kfree(qp->eng);
	qp->eng = NULL;
}

/*
 * Forget what a doorbell's run left for the work item to write
 * (viw_tx_spill()): its stream is gone.  tx_lock held, or the QP unused.
 */
void viw_engine_drop_spill(struct viw_qp *qp)
{
	kvfree(qp->eng->tx_spill);
	qp->eng->tx_spill = NULL;
	qp->eng->tx_spill_len = 0;
}

/*
 * A new stream (viw_qp_connect): each queue's MSN starts at 1 in both
 * directions (RFC 5040, 5.1), the next atomic's Request Identifier at 0,
 * the message counts of acknowledgements at 0, and the receive engine at
 * the first FPDU's header.  Nothing waits for an acknowledgement.
 */
void viw_engine_stream_start(struct viw_qp *qp)
{
	struct viw_engine *eng = qp->eng;

	viw_engine_drop_spill(qp);
	eng->tx_torn = false;
	eng->tx_msn_send = 1;
	eng->tx_msn_rreq = 1;
	eng->tx_msn_term = 1;
	eng->tx_msn_aresp = 1;
	eng->tx_atomic_id = 0;
	eng->tx_msn_ack = 1;
	eng->tx_msgs = 0;
	eng->tx_ack_sent = 0;
	eng->ackq_head = eng->ackq_tail;
	memset(&eng->rx, 0, sizeof(eng->rx));
	eng->rx.msn_send = 1;
	eng->rx.msn_rreq = 1;
	eng->rx.msn_aresp = 1;
	eng->rx.msn_ack = 1;
}
