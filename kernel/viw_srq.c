// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: shared receive queues.
 *
 * An SRQ is a ring of RQEs that the receive path of any QP attached to it
 * takes from when a message arrives.  Unlike a QP's RQ it has nothing to
 * flush: its WQEs belong to the SRQ, not to a QP.
 */
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_queue.h"
#include "viw_verbs.h"

static int viw_srq_check_attr(const struct ib_srq_attr *attr)
{
	if (attr->max_wr > VIW_MAX_SRQ_WR || attr->max_sge > VIW_MAX_SGE)
		return -EINVAL;
	if (attr->srq_limit > attr->max_wr)
		return -EINVAL;
	return 0;
}

/* A process's SRQ: its ring is mapped, and the provider posts to it. */
static int viw_srq_expose(struct viw_srq *srq, struct ib_udata *udata)
{
	struct viw_uresp_create_srq uresp = {};
	int rv;

	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	rv = viw_ring_expose(&srq->ring, udata, &uresp.ring_key);
	if (rv)
		return rv;
	uresp.srq_id = 0;
	uresp.num_rqe = srq->ring.num_slots;
	uresp.ring_size = srq->ring.size;
	return ib_copy_to_udata(udata, &uresp, sizeof(uresp));
}

/*
 * Without udata the SRQ is a kernel consumer's: the ring stays in kernel
 * memory and viw_post_srq_recv() fills it (viw_kverbs.c).
 */
int viw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibsrq->device);
	struct viw_srq *srq = to_viw_srq(ibsrq);
	int rv;

	if (attr->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	rv = viw_srq_check_attr(&attr->attr);
	if (rv)
		return rv;
	if (!viw_obj_get(vdev, VIW_OBJ_SRQ))
		return -ENOMEM;

	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	srq->fetch = 0;
	srq->prod = 0;
	srq->limit = attr->attr.srq_limit;
	srq->max_sge = attr->attr.max_sge;
	rv = viw_ring_alloc(&srq->ring,
			    roundup_pow_of_two(max(attr->attr.max_wr, 1U)),
			    sizeof(struct viw_rqe));
	if (rv)
		goto err_count;
	/* RQEs are taken when a message arrives: posts need no doorbell. */
	viw_rp_no_doorbell_set(srq->ring.ctrl, true);
	if (udata) {
		rv = viw_srq_expose(srq, udata);
		if (rv)
			goto err_ring;
	}
	attr->attr.max_wr = srq->ring.num_slots;
	return 0;

err_ring:
	viw_ring_free(&srq->ring);
err_count:
	viw_obj_put(vdev, VIW_OBJ_SRQ);
	return rv;
}

int viw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct viw_srq *srq = to_viw_srq(ibsrq);
	unsigned long flags;

	/* A ring in mapped memory cannot be resized in place. */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->ring.num_slots)
		return -EINVAL;
	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int viw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct viw_srq *srq = to_viw_srq(ibsrq);

	attr->max_wr = srq->ring.num_slots;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int viw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct viw_srq *srq = to_viw_srq(ibsrq);

	viw_ring_free(&srq->ring);
	viw_obj_put(to_viw_dev(ibsrq->device), VIW_OBJ_SRQ);
	return 0;
}

static void viw_srq_limit_event(struct viw_srq *srq)
{
	struct ib_event event = {
		.device = srq->ibsrq.device,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
		.element.srq = &srq->ibsrq,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
}

/**
 * viw_srq_take - take the next posted RQE for an incoming SEND
 * @srq: the SRQ
 * @rqe: where to copy it
 *
 * The slot goes back to the process at once: the receiving QP owns the
 * copy from now on.  Return: 0 or -ENOENT.
 */
int viw_srq_take(struct viw_srq *srq, struct viw_rqe *rqe)
{
	struct viw_ring_ctrl *ctrl = srq->ring.ctrl;
	bool limit_hit = false;
	unsigned long flags;
	struct viw_rqe *slot;
	int rv = -ENOENT;

	spin_lock_irqsave(&srq->lock, flags);
	slot = viw_ring_slot(&srq->ring, srq->fetch);
	if (viw_rp_wqe_take(rqe, slot, sizeof(*rqe))) {
		srq->fetch++;
		viw_rp_retire(ctrl, srq->fetch);
		if (viw_rp_srq_below_limit(ctrl, srq->fetch, srq->limit)) {
			srq->limit = 0;
			limit_hit = true;
		}
		rv = 0;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (limit_hit)
		viw_srq_limit_event(srq);
	return rv;
}
