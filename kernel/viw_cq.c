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

/* A kernel consumer's CQ: viw_poll_cq() reads the ring in its place. */
static int viw_cq_kernel_init(struct viw_cq *cq)
{
	cq->wc_qp = kvcalloc(cq->ring.num_slots, sizeof(*cq->wc_qp),
			     GFP_KERNEL);
	return cq->wc_qp ? 0 : -ENOMEM;
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

	viw_ring_free(&cq->ring);
	kvfree(cq->wc_qp);
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

	if (overflow_event)
		viw_cq_async_error(cq);
	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return rv;
}
