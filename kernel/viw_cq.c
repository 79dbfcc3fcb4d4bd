// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: completion queues.
 *
 * The kernel is the only producer of a CQ ring.  It keeps its producer
 * index to itself (ctrl->prod is only a mirror for the process) and finds a
 * slot free when its VALID bit is clear: the consumer clears it after
 * reading the CQE.  A process that never consumes therefore overflows its
 * own CQ and nothing else.
 */
#include <linux/slab.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_queue.h"
#include "viw_verbs.h"

/* A process's CQ: its ring is mapped, and the provider polls it. */
static int viw_cq_expose(struct viw_cq *cq, struct ib_udata *udata)
{
	struct viw_uresp_create_cq uresp = {};
	int rv;

	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	rv = viw_ring_expose(&cq->ring, udata, &uresp.ring_key);
	if (rv)
		return rv;
	uresp.num_cqe = cq->ring.num_slots;
	uresp.ring_size = cq->ring.size;
	return ib_copy_to_udata(udata, &uresp, sizeof(uresp));
}

static void viw_cq_async_error(struct viw_cq *cq)
{
	struct ib_event event = {
		.device = cq->ibcq.device,
		.event = IB_EVENT_CQ_ERR,
		.element.cq = &cq->ibcq,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
}

/*
 * A kernel CQ's notifications, outside every lock of viw's: the consumer
 * may post, poll and re-arm from its handler (the RDMA core's
 * IB_POLL_SOFTIRQ and workqueue handlers only schedule their pollers).
 * One run may deliver the notifications of several arms at once.
 */
static void viw_cq_notify_task(struct tasklet_struct *t)
{
	struct viw_cq *cq = from_tasklet(cq, t, notify_task);

	if (test_and_clear_bit(VIW_CQ_DUE_ERR, &cq->notify_due))
		viw_cq_async_error(cq);
	if (test_and_clear_bit(VIW_CQ_DUE_COMP, &cq->notify_due) &&
	    cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/* A kernel consumer's CQ: viw_poll_cq() reads the ring in its place. */
static int viw_cq_kernel_init(struct viw_cq *cq)
{
	cq->wc_qp = kvcalloc(cq->ring.num_slots, sizeof(*cq->wc_qp),
			     GFP_KERNEL);
	if (!cq->wc_qp)
		return -ENOMEM;
	cq->notify_due = 0;
	tasklet_setup(&cq->notify_task, viw_cq_notify_task);
	return 0;
}

/**
 * viw_cq_sync - wait for a kernel CQ's pending notifications
 * @cq: the CQ, of a QP being destroyed
 *
 * Once a QP is gone its completions are notified too: the consumer frees
 * the CQ next, and the core stops its poller before it calls
 * destroy_cq, so a handler must not run after that.  Process context.
 */
void viw_cq_sync(struct viw_cq *cq)
{
	if (!cq->wc_qp)
		return;
	tasklet_kill(&cq->notify_task);
	/*
	 * Another QP of the CQ may have tried to schedule it while
	 * tasklet_kill() held it: what that one left due goes now.
	 */
	smp_mb__after_atomic();
	if (READ_ONCE(cq->notify_due))
		tasklet_schedule(&cq->notify_task);
}

static int viw_cq_create(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibcq->device);
	struct viw_cq *cq = to_viw_cq(ibcq);
	int rv;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > VIW_MAX_CQE)
		return -EINVAL;
	if (!viw_obj_get(vdev, VIW_OBJ_CQ))
		return -ENOMEM;

	spin_lock_init(&cq->lock);
	cq->prod = 0;
	cq->cons = 0;
	cq->overflowed = false;
	cq->wc_qp = NULL;
	rv = viw_ring_alloc(&cq->ring, roundup_pow_of_two(attr->cqe),
			    sizeof(struct viw_cqe));
	if (rv)
		goto err_count;
	rv = udata ? viw_cq_expose(cq, udata) : viw_cq_kernel_init(cq);
	if (rv)
		goto err_ring;
	ibcq->cqe = cq->ring.num_slots;
	return 0;

err_ring:
	viw_ring_free(&cq->ring);
err_count:
	viw_obj_put(vdev, VIW_OBJ_CQ);
	return rv;
}

#ifdef VIW_CREATE_CQ_TAKES_ATTRS
int viw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs)
{
	return viw_cq_create(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}
#else
int viw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
	return viw_cq_create(ibcq, attr, udata);
}
#endif

int viw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct viw_cq *cq = to_viw_cq(ibcq);

	/* No QP is left to push: nothing schedules it again. */
	if (cq->wc_qp)
		tasklet_kill(&cq->notify_task);
	viw_ring_free(&cq->ring);
	kvfree(cq->wc_qp);
	viw_obj_put(to_viw_dev(ibcq->device), VIW_OBJ_CQ);
	return 0;
}

/*
 * Deliver what viw_cq_push() found due.  A process's handlers are
 * uverbs', which only queue an event and wake its reader, so they run
 * at once; a kernel consumer's run from the tasklet.
 */
static void viw_cq_notify(struct viw_cq *cq, bool overflow_event, bool comp)
{
	if (cq->wc_qp) {
		if (overflow_event)
			set_bit(VIW_CQ_DUE_ERR, &cq->notify_due);
		if (comp)
			set_bit(VIW_CQ_DUE_COMP, &cq->notify_due);
		if (overflow_event || comp)
			tasklet_schedule(&cq->notify_task);
		return;
	}
	if (overflow_event)
		viw_cq_async_error(cq);
	if (comp && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/**
 * viw_cq_push - write one completion into a CQ ring
 * @cq: the CQ
 * @info: the completion
 *
 * Callers hold queue locks: a kernel consumer's handlers run later, from
 * the CQ's tasklet (viw_cq_notify()).
 *
 * Return: 0, or -ENOSPC if the ring had no free slot; the CQ is then in
 * error and its owner gets IB_EVENT_CQ_ERR once.
 */
int viw_cq_push(struct viw_cq *cq, const struct viw_cqe_info *info)
{
	const struct viw_cqe cqe = {
		.wr_id = info->wr_id,
		.flags = info->flags,
		.opcode = info->opcode,
		.status = info->status,
		.byte_len = info->byte_len,
		.qp_id = info->qp_id,
		.inv_stag = info->inv_stag,
		.vendor_err = info->vendor_err,
	};
	struct viw_ring_ctrl *ctrl = cq->ring.ctrl;
	bool overflow_event = false;
	bool notify = false;
	unsigned long irqflags;
	int rv = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->overflowed ||
	    !viw_rp_cq_push(ctrl, cq->ring.num_slots, &cq->prod, &cqe)) {
		rv = -ENOSPC;
		overflow_event = !cq->overflowed;
		cq->overflowed = true;
		viw_rp_kflags_add(ctrl, VIW_RING_KF_OVERFLOW);
		goto out;
	}
	if (cq->wc_qp)
		cq->wc_qp[(cq->prod - 1) & (cq->ring.num_slots - 1)] = info->ibqp;
	notify = viw_rp_cq_take_arm(ctrl, info->flags & VIW_CQE_SOLICITED);
out:
	spin_unlock_irqrestore(&cq->lock, irqflags);

	viw_cq_notify(cq, overflow_event, notify);
	return rv;
}
