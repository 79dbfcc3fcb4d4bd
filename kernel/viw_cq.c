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
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_queue.h"
#include "viw_verbs.h"

static int viw_cq_create(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibcq->device);
	struct viw_cq *cq = to_viw_cq(ibcq);
	struct viw_uresp_create_cq uresp = {};
	int rv;

	if (attr->flags)
		return -EOPNOTSUPP;
	/* Kernel consumers come with the kernel post paths, not yet. */
	if (!udata)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > VIW_MAX_CQE)
		return -EINVAL;
	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	if (!viw_obj_get(vdev, VIW_OBJ_CQ))
		return -ENOMEM;

	spin_lock_init(&cq->lock);
	cq->prod = 0;
	cq->overflowed = false;
	rv = viw_ring_alloc(&cq->ring, roundup_pow_of_two(attr->cqe),
			    sizeof(struct viw_cqe));
	if (rv)
		goto err_count;
	rv = viw_ring_expose(&cq->ring, udata, &uresp.ring_key);
	if (rv)
		goto err_ring;

	ibcq->cqe = cq->ring.num_slots;
	uresp.num_cqe = cq->ring.num_slots;
	uresp.ring_size = cq->ring.size;
	rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (rv)
		goto err_ring;
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

	viw_ring_free(&cq->ring);
	viw_obj_put(to_viw_dev(ibcq->device), VIW_OBJ_CQ);
	return 0;
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
 * Tries of the cmpxchg below.  The arm word is in memory the process can
 * write at any time, and this runs with the CQ lock held and IRQs off, so
 * a thread that keeps flipping the word must not be able to keep us here.
 */
#define VIW_CQ_ARM_TRIES	8

/*
 * Disarm the CQ and return true if the consumer asked to be told about
 * this completion.  The consumer may re-arm concurrently, hence cmpxchg.
 * If the word keeps changing under us, disarm it unconditionally and
 * report the event: a spurious completion event is harmless (the consumer
 * polls and may find nothing new), a lost one would leave it asleep.
 */
static bool viw_cq_take_arm(struct viw_cq *cq, bool solicited)
{
	u32 *arm = &cq->ring.ctrl->arm;
	u32 old = READ_ONCE(*arm);
	int tries;

	for (tries = 0; tries < VIW_CQ_ARM_TRIES; tries++) {
		u32 seen;

		if (!(old & VIW_CQ_ARM_NEXT) &&
		    !(solicited && (old & VIW_CQ_ARM_SOLICITED)))
			return false;
		seen = cmpxchg(arm, old, 0);
		if (seen == old)
			return true;
		old = seen;
	}
	xchg(arm, 0);
	return true;
}

/**
 * viw_cq_push - write one completion into a CQ ring
 * @cq: the CQ
 * @info: the completion
 *
 * Return: 0, or -ENOSPC if the ring had no free slot; the CQ is then in
 * error and its owner gets IB_EVENT_CQ_ERR once.
 */
int viw_cq_push(struct viw_cq *cq, const struct viw_cqe_info *info)
{
	bool overflow_event = false;
	bool notify = false;
	bool busy;
	unsigned long irqflags;
	struct viw_cqe *cqe;
	int rv = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	cqe = viw_ring_slot(&cq->ring, cq->prod);
	/*
	 * Acquire pairs with the consumer's release store that frees the
	 * slot: its reads of the old CQE are done before we overwrite it.
	 */
	busy = smp_load_acquire(&cqe->flags) & VIW_CQE_VALID;
	if (cq->overflowed || busy) {
		rv = -ENOSPC;
		overflow_event = !cq->overflowed;
		cq->overflowed = true;
		WRITE_ONCE(cq->ring.ctrl->kflags,
			   READ_ONCE(cq->ring.ctrl->kflags) | VIW_RING_KF_OVERFLOW);
		goto out;
	}
	cqe->wr_id = info->wr_id;
	cqe->opcode = info->opcode;
	cqe->status = info->status;
	cqe->byte_len = info->byte_len;
	cqe->qp_id = info->qp_id;
	cqe->inv_stag = info->inv_stag;
	cqe->vendor_err = info->vendor_err;
	/* Publishes the fields above to the consumer. */
	smp_store_release(&cqe->flags, info->flags | VIW_CQE_VALID);
	cq->prod++;
	WRITE_ONCE(cq->ring.ctrl->prod, cq->prod);
	notify = viw_cq_take_arm(cq, info->flags & VIW_CQE_SOLICITED);
out:
	spin_unlock_irqrestore(&cq->lock, irqflags);

	if (overflow_event)
		viw_cq_async_error(cq);
	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return rv;
}

/*
 * A user CQ is polled by the provider from the mapped ring; the uverbs
 * poll command has nothing to add.
 */
int viw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	return -EOPNOTSUPP;
}

int viw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	return -EOPNOTSUPP;
}
