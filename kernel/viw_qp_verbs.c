// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the QP verbs, create_qp, modify_qp, query_qp and destroy_qp.
 *
 * They sit above both connection managers: modify_qp hands the attributes
 * to the QP state machine (viw_qp.c) and to the modify_qp connection
 * manager (viw_direct.c), which makes a connection when they name a peer;
 * iw_cm's connections come through viw_cm.c instead.
 */
#include <linux/slab.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_qp.h"
#include "viw_verbs.h"

#define VIW_MAX_QP_ID 0xffffff

static int viw_qp_check_init_attr(struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC || attr->create_flags)
		return -EOPNOTSUPP;
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	if (cap->max_send_wr > VIW_MAX_QP_WR ||
	    cap->max_recv_wr > VIW_MAX_QP_WR ||
	    cap->max_send_sge > VIW_MAX_SGE ||
	    cap->max_recv_sge > VIW_MAX_SGE ||
	    cap->max_inline_data > VIW_MAX_INLINE)
		return -EINVAL;
	return 0;
}

static int viw_qp_alloc_queues(struct viw_qp *qp, struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;
	int rv;

	rv = viw_sq_init(&qp->sq, roundup_pow_of_two(max(cap->max_send_wr, 1U)),
			 cap->max_send_sge);
	if (rv || qp->srq)
		return rv;
	rv = viw_rq_init(&qp->rq, roundup_pow_of_two(max(cap->max_recv_wr, 1U)),
			 cap->max_recv_sge);
	if (rv) {
		viw_wq_free(&qp->sq);
		return rv;
	}
	/*
	 * The receive engine takes an RQE when a SEND needs one
	 * (viw_rq_take()), so posts need no doorbell; one still takes and
	 * checks what was posted at once.
	 */
	viw_rp_no_doorbell_set(qp->rq.ring.ctrl, true);
	return 0;
}

/*
 * A process's QP: its rings are mapped and charged to its context.  A
 * kernel consumer's stay in kernel memory, where viw_kverbs.c posts.
 */
static int viw_qp_expose_queues(struct viw_qp *qp, struct ib_udata *udata,
				struct viw_uresp_create_qp *uresp)
{
	int rv;

	rv = viw_ring_expose(&qp->sq.ring, udata, &uresp->sq_key);
	if (rv)
		return rv;
	uresp->num_sqe = qp->sq.ring.num_slots;
	uresp->sq_size = qp->sq.ring.size;
	if (qp->srq)
		return 0;
	rv = viw_ring_expose(&qp->rq.ring, udata, &uresp->rq_key);
	if (rv)
		return rv;
	uresp->num_rqe = qp->rq.ring.num_slots;
	uresp->rq_size = qp->rq.ring.size;
	return 0;
}

/* Identifies a QP for its type 2 windows, which outlive qp_num's reuse. */
static atomic64_t viw_qp_uid_seq = ATOMIC64_INIT(0);

int viw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibqp->device);
	struct viw_qp *qp = to_viw_qp(ibqp);
	struct viw_uresp_create_qp uresp = {};
	u32 id;
	int rv;

	rv = viw_qp_check_init_attr(attr);
	if (rv)
		return rv;
	if (udata && udata->outlen < sizeof(uresp))
		return -EINVAL;
	if (!viw_obj_get(vdev, VIW_OBJ_QP))
		return -ENOMEM;

	qp->vdev = vdev;
	qp->uctx = rdma_udata_to_drv_context(udata, struct viw_ucontext,
					     ibuctx);
	qp->uid = atomic64_inc_return(&viw_qp_uid_seq);
	qp->scq = to_viw_cq(attr->send_cq);
	qp->rcq = to_viw_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_viw_srq(attr->srq) : NULL;
	/*
	 * RDMAC verbs have no RESET: a new QP is IDLE, which verbs call INIT
	 * (as siw reports it, and as rdma-core's tests expect of an RNIC).
	 */
	qp->state = IB_QPS_INIT;
	qp->sq_sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_inline = VIW_MAX_INLINE;
	viw_qp_init(qp);
	rv = viw_engine_alloc(qp);
	if (rv)
		goto err_count;

	rv = viw_qp_alloc_queues(qp, attr);
	if (rv)
		goto err_count;
	rv = viw_ack_alloc(qp, qp->sq.ring.num_slots);
	if (rv)
		goto err_queues;
	if (udata) {
		rv = viw_qp_expose_queues(qp, udata, &uresp);
		if (rv)
			goto err_queues;
	}
	/*
	 * Reserve the number only: lookups (iw_get_qp, connect, accept) must
	 * not find the QP before the last failure point below, or a failed
	 * create would free a QP that another thread holds.
	 */
	rv = xa_alloc_cyclic(&vdev->qp_xa, &id, NULL, XA_LIMIT(1, VIW_MAX_QP_ID),
			     &vdev->next_qp_id, GFP_KERNEL);
	if (rv < 0)
		goto err_queues;
	ibqp->qp_num = id;
	uresp.qp_id = id;

	attr->cap.max_send_wr = qp->sq.ring.num_slots;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.ring.num_slots;
	attr->cap.max_inline_data = qp->max_inline;
	rv = udata ? ib_copy_to_udata(udata, &uresp, sizeof(uresp)) : 0;
	if (rv)
		goto err_id;
	/* The slot exists: storing into it allocates nothing and cannot fail. */
	WARN_ON_ONCE(xa_is_err(xa_store(&vdev->qp_xa, id, qp, GFP_KERNEL)));
	return 0;

err_id:
	xa_erase(&vdev->qp_xa, id);
err_queues:
	viw_wq_free(&qp->rq);
	viw_wq_free(&qp->sq);
err_count:
	viw_engine_free(qp);
	viw_obj_put(vdev, VIW_OBJ_QP);
	return rv;
}

int viw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct viw_qp *qp = to_viw_qp(ibqp);
	bool start = false, kick = false;
	int rv;

	if ((mask & IB_QP_STATE) && attr->qp_state == IB_QPS_RTR &&
	    (mask & IB_QP_AV))
		viw_direct_prepare_reconnect(qp);
	mutex_lock(&qp->state_lock);
	rv = viw_qp_check_attr(qp, attr, mask);
	/* Whether the attributes make or bound a modify_qp connection. */
	if (!rv)
		rv = viw_direct_modify(qp, attr, mask);
	if (rv)
		goto out;
	viw_qp_apply_attr(qp, attr, mask);
	start = qp->direct && qp->state == IB_QPS_RTR && !qp->direct_started;
	if (start)
		qp->direct_started = true;
	kick = qp->direct && viw_qp_tx_open(qp);
out:
	mutex_unlock(&qp->state_lock);
	if (start)
		viw_direct_start(qp);
	/* WRs posted before RTS, or before the stream came up, go now. */
	if (kick)
		viw_tx_kick(qp);
	return rv;
}

/* The IB attributes as modify_qp set them. */
static void viw_query_ib(struct viw_qp *qp, struct ib_qp_attr *attr)
{
	struct viw_qp_ib_attrs *ib = &qp->ib;
	struct rdma_ah_attr *ah = &attr->ah_attr;

	attr->path_mtu = ib->path_mtu ? ib->path_mtu : IB_MTU_4096;
	attr->timeout = ib->timeout;
	attr->retry_cnt = ib->retry_cnt;
	attr->rnr_retry = ib->rnr_retry;
	attr->min_rnr_timer = ib->min_rnr_timer;
	attr->rq_psn = ib->rq_psn;
	attr->sq_psn = ib->sq_psn;
	attr->dest_qp_num = ib->dest_qp_num;
	ah->type = rdma_ah_find_type(qp->ibqp.device, 1);
	rdma_ah_set_sl(ah, ib->sl);
	rdma_ah_set_static_rate(ah, ib->static_rate);
	rdma_ah_set_port_num(ah, ib->port_num ? ib->port_num : 1);
	if (ib->ah_flags & IB_AH_GRH)
		rdma_ah_set_grh(ah, &ib->grh.dgid, ib->grh.flow_label,
				ib->grh.sgid_index, ib->grh.hop_limit,
				ib->grh.traffic_class);
}

int viw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr)
{
	struct viw_qp *qp = to_viw_qp(ibqp);
	struct ib_qp_cap cap = {
		.max_send_wr = qp->sq.ring.num_slots,
		.max_recv_wr = qp->srq ? 0 : qp->rq.ring.num_slots,
		.max_send_sge = qp->sq.max_sge,
		.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge,
		.max_inline_data = qp->max_inline,
	};

	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->max_rd_atomic = qp->direct ? qp->ib.max_rd_atomic : qp->ord;
	attr->max_dest_rd_atomic = qp->direct ? qp->ib.max_dest_rd_atomic :
						qp->ird;
	attr->port_num = 1;
	attr->cap = cap;
	viw_query_ib(qp, attr);

	init_attr->qp_type = IB_QPT_RC;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = cap;
	init_attr->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
						  IB_SIGNAL_REQ_WR;
	return 0;
}

int viw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct viw_qp *qp = to_viw_qp(ibqp);
	struct viw_device *vdev = qp->vdev;

	/*
	 * Stop the QP and its connection, then wait until iw_cm and the
	 * connection have let go of it.
	 */
	viw_qp_enter_error(qp);
	xa_erase(&vdev->qp_xa, ibqp->qp_num);
	viw_qp_put(qp);
	wait_for_completion(&qp->released);

	viw_qp_stop_peer_wait(qp);
	cancel_work_sync(&qp->err_work);
	cancel_work_sync(&qp->tx_work);
	viw_tx_abort(qp);
	viw_rx_reset(qp);
	viw_rd_reset(qp);
	viw_direct_qp_destroy(qp);
	/* Its last completions are notified before the CQs can go. */
	viw_cq_sync(qp->scq);
	viw_cq_sync(qp->rcq);
	viw_wq_free(&qp->rq);
	viw_wq_free(&qp->sq);
	viw_engine_free(qp);
	mutex_destroy(&qp->state_lock);
	viw_obj_put(vdev, VIW_OBJ_QP);
	return 0;
}

/*
 * uverbs post_send/post_recv with an empty list is viw's doorbell: the
 * process has written its WQEs into the mapped ring.  The doorbell poller,
 * if it polls, learns that the process rang (viw_poll.c).  A list of work
 * requests comes from a kernel consumer only (uverbs' own post commands
 * would bring one for a process's QP, which is refused): viw_kverbs.c
 * writes them into the QP's kernel ring.
 */
int viw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct viw_qp *qp = to_viw_qp(ibqp);

	if (viw_qp_is_kernel(qp))
		return viw_kpost_send(qp, wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	viw_qp_sq_doorbell(qp);
	viw_poll_doorbell(qp->vdev);
	return 0;
}

int viw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct viw_qp *qp = to_viw_qp(ibqp);

	if (viw_qp_is_kernel(qp))
		return viw_kpost_recv(qp, wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	if (qp->srq)
		return -EINVAL;
	viw_qp_rq_doorbell(qp);
	viw_poll_doorbell(qp->vdev);
	return 0;
}
