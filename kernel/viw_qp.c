// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: queue pairs and their state machine.
 *
 * States are the verbs states.  A QP reaches RTS only through a connection
 * (iw_cm), so modify_qp from a consumer moves it among RESET, INIT and RTR,
 * and to ERROR from anywhere.  Entering ERROR flushes both work queues
 * before modify_qp returns: every outstanding WQE completes, in posting
 * order, with FLUSH_ERR.
 */
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_qp.h"
#include "viw_verbs.h"
#include "viw_cm.h"
#include "viw_trace.h"

/* How long the error work waits for the TERMINATE to go out. */
#define VIW_TERM_TIMEOUT	HZ

/* Modify-QP attributes viw acts on; the others need a connection. */
#define VIW_QP_ATTR_SUPPORTED                                                  \
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |                  \
	 IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_MAX_QP_RD_ATOMIC |              \
	 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_EN_SQD_ASYNC_NOTIFY |                \
	 VIW_QP_ATTR_IB)

/*
 * InfiniBand transport attributes: kept and reported back, and for a
 * modify_qp connection the address vector and destination QP say whom to
 * connect to and timeout/retry_cnt bound the attempt (viw_direct.c).
 */
#define VIW_QP_ATTR_IB                                                         \
	(IB_QP_AV | IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |         \
	 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MIN_RNR_TIMER |                \
	 IB_QP_SQ_PSN | IB_QP_DEST_QPN)

static void viw_qp_err_work(struct work_struct *work);
static void viw_qp_peer_wait_end(struct work_struct *work);

/* The state machine's and the engines' parts of a new QP (create_qp). */
void viw_qp_init(struct viw_qp *qp)
{
	mutex_init(&qp->state_lock);
	refcount_set(&qp->ref, 1);
	atomic_set(&qp->iw_handover, 0);
	init_completion(&qp->released);
	spin_lock_init(&qp->rd_lock);
	spin_lock_init(&qp->rq.lock);
	INIT_WORK(&qp->err_work, viw_qp_err_work);
	INIT_DELAYED_WORK(&qp->peer_wait, viw_qp_peer_wait_end);
	viw_tx_qp_init(qp);
}

/* Raise an asynchronous event on the QP for its consumer. */
void viw_qp_event(struct viw_qp *qp, enum ib_event_type type)
{
	struct ib_event event = {
		.device = qp->ibqp.device,
		.event = type,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
}

/* Every state change goes through here: tracepoint viw:viw_qp_state. */
static void viw_qp_store_state(struct viw_qp *qp, enum ib_qp_state next)
{
	trace_viw_qp_state(qp, qp->state, next);
	WRITE_ONCE(qp->state, next);
}

static void viw_qp_set_kflags(struct viw_qp *qp, u32 kflags)
{
	viw_wq_set_kflags(&qp->sq, kflags);
	viw_wq_set_kflags(&qp->rq, kflags);
}

/*
 * Ways into ERROR.  Only viw_qp_error_locked() stores it, under state_lock;
 * each way in decides whether the QP still goes there:
 *
 *   viw_qp_enter_error()	unconditionally, in process context: an
 *				invalid receive WQE (doorbell), destroy_qp.
 *   viw_qp_conn_lost()	the connection ended (CEP close, link down):
 *				only a QP still using it (RTS, SQD, SQE).
 *   viw_qp_direct_error()	a modify_qp connection failed: unless the
 *				consumer moved the QP to ERROR, RESET or
 *				INIT, or dropped the attempt that failed.
 *   viw_qp_fail()		from any context, the engines' way: defers to
 *				err_work, which sends the TERMINATE for
 *				@cause (in SQE) and then enters ERROR.
 *   viw_qp_terminated()	the peer's TERMINATE (RX): fails the oldest
 *				SQE, raises the event, then viw_qp_fail().
 *
 * modify_qp(ERR) enters it directly (viw_qp_set_state_locked()).  Code
 * that cannot sleep or holds a spinlock calls viw_qp_fail().
 */

/*
 * Take tx_lock, unless the transmit work waits in the socket for the peer
 * to read: it holds tx_lock until the peer reads or the connection is
 * aborted, which may be the caller's next step, so the caller must not
 * wait for that.  Any other hold ends within a run of the engine.
 * Return: whether tx_lock is held.  state_lock held.
 */
static bool viw_qp_lock_tx_bounded(struct viw_qp *qp)
{
	while (!mutex_trylock(&qp->tx_lock)) {
		if (READ_ONCE(qp->tx_waiting_room))
			return false;
		usleep_range(50, 200);
	}
	return true;
}

/*
 * A QP in ERROR or RESET aborts its connection, or the attempt to make
 * one: the CEP of a modify_qp connection is qp->connecting until the
 * stream is up, and qp->cep too after.  state_lock held.
 */
static void viw_qp_abort_conn(struct viw_qp *qp)
{
	/*
	 * What was placed is acknowledged before the reset: a consumer that
	 * destroys its QP right after its last receive completed must not
	 * get the peer's last SEND flushed (viw_tx_last_ack()).  A run of
	 * the engine that holds tx_lock may have passed its acknowledgement
	 * before that receive was placed, and the run the receive kicked
	 * would find the connection gone: wait for the engine, unless it
	 * waits for the peer to read, which then gets nothing more.
	 */
	if (qp->sock && viw_qp_lock_tx_bounded(qp)) {
		if (qp->sock)
			viw_tx_last_ack(qp);
		mutex_unlock(&qp->tx_lock);
	}
	if (qp->cep)
		viw_cep_post_event(qp->cep, VIW_CEP_EV_ABORT);
	if (qp->connecting && qp->connecting != qp->cep)
		viw_cep_post_event(qp->connecting, VIW_CEP_EV_ABORT);
}

/* Caller holds state_lock. */
static void viw_qp_error_locked(struct viw_qp *qp)
{
	viw_qp_store_state(qp, IB_QPS_ERR);
	/* From here on the process rings the doorbell after every post. */
	viw_qp_set_kflags(qp, VIW_RING_KF_ERROR);
	/*
	 * Pairs with the full barrier the provider puts between publishing
	 * a WQE and reading kflags: a WQE is either seen by the flush below
	 * or followed by a doorbell that flushes it.
	 */
	smp_mb();
	viw_sq_flush(qp);
	viw_rq_flush(qp);
	if (qp->srq)
		viw_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	/* An error work waiting for its TERMINATE need not wait any more. */
	complete_all(&qp->term_done);
	viw_qp_abort_conn(qp);
}

void viw_qp_enter_error(struct viw_qp *qp)
{
	mutex_lock(&qp->state_lock);
	if (qp->state != IB_QPS_ERR)
		viw_qp_error_locked(qp);
	mutex_unlock(&qp->state_lock);
}

/**
 * viw_qp_conn_lost - the QP's connection ended or is being torn down
 * @qp: the QP
 *
 * A QP that still uses the connection goes to ERROR.  One the consumer
 * moved to RESET (and maybe on to INIT or RTR) meanwhile stays where it
 * is: its work queues were emptied then, and it is not connected any more.
 */
void viw_qp_conn_lost(struct viw_qp *qp)
{
	mutex_lock(&qp->state_lock);
	if (viw_qp_state_connected(qp->state) && !qp->peer_closed &&
	    !qp->peer_retrying)
		viw_qp_error_locked(qp);
	mutex_unlock(&qp->state_lock);
}

static bool viw_qp_transition_ok(enum ib_qp_state cur, enum ib_qp_state next)
{
	if (next == IB_QPS_ERR || next == IB_QPS_RESET)
		return true;
	switch (cur) {
	case IB_QPS_ERR:
		/*
		 * librdmacm's rdma_disconnect() moves an iWARP QP to SQD
		 * (CLOSING) before it disconnects.  After an error there is
		 * no connection left to close: accept it and stay in ERROR.
		 */
		return next == IB_QPS_SQD;
	case IB_QPS_RESET:
		return next == IB_QPS_INIT;
	case IB_QPS_INIT:
		return next == IB_QPS_INIT || next == IB_QPS_RTR;
	case IB_QPS_RTR:
		return next == IB_QPS_RTR;
	case IB_QPS_RTS:
		return next == IB_QPS_RTS || next == IB_QPS_SQD;
	case IB_QPS_SQD:
		return next == IB_QPS_SQD;
	default:
		return false;
	}
}

/* A modify_qp connection's QP goes to RTS by modify_qp. */
static bool viw_qp_direct_rts(struct viw_qp *qp, enum ib_qp_state next)
{
	return qp->direct && qp->state == IB_QPS_RTR && next == IB_QPS_RTS;
}

/* May modify_qp apply @attr to @qp?  state_lock held. */
int viw_qp_check_attr(struct viw_qp *qp, struct ib_qp_attr *attr, int mask)
{
	if (mask & ~VIW_QP_ATTR_SUPPORTED)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != qp->state)
		return -EINVAL;
	if ((mask & IB_QP_STATE) &&
	    !viw_qp_transition_ok(qp->state, attr->qp_state) &&
	    !viw_qp_direct_rts(qp, attr->qp_state))
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > VIW_MAX_ORD)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > VIW_MAX_IRD)
		return -EINVAL;
	return 0;
}

/*
 * Any state -> RESET (IB spec 1.4, 10.3.1): the work queues are emptied
 * without completions.  A connection still attached is aborted (the peer
 * sees a reset, the consumer CLOSE with -ECONNRESET); from here on the
 * transmit engine takes nothing and the receive engine places nothing.
 */
static void viw_qp_reset_locked(struct viw_qp *qp)
{
	viw_qp_store_state(qp, IB_QPS_RESET);
	WRITE_ONCE(qp->peer_closed, false);
	qp->peer_retrying = false;
	viw_qp_set_kflags(qp, 0);
	/* As in viw_qp_error_locked: a WQE posted meanwhile is discarded. */
	smp_mb();
	viw_sq_discard(qp);
	viw_rq_discard(qp);
	viw_qp_abort_conn(qp);
}

static void viw_qp_set_state_locked(struct viw_qp *qp, enum ib_qp_state next)
{
	if (next == IB_QPS_ERR) {
		if (qp->state != IB_QPS_ERR)
			viw_qp_error_locked(qp);
		return;
	}
	if (next == IB_QPS_RESET) {
		viw_qp_reset_locked(qp);
		return;
	}
	/* ERROR -> SQD: nothing to close (see viw_qp_transition_ok). */
	if (qp->state == IB_QPS_ERR)
		return;
	/* SQD is the RDMAC CLOSING state: a graceful close of the stream. */
	if (next == IB_QPS_SQD && qp->state == IB_QPS_RTS && qp->cep)
		viw_cep_post_event(qp->cep, VIW_CEP_EV_CLOSE);
	viw_qp_store_state(qp, next);
}

/* Keep the IB attributes to report them back (struct viw_qp_ib_attrs). */
static void viw_qp_save_ib(struct viw_qp *qp, struct ib_qp_attr *attr,
			   int mask)
{
	struct viw_qp_ib_attrs *ib = &qp->ib;

	if (mask & IB_QP_AV) {
		const struct rdma_ah_attr *ah = &attr->ah_attr;

		ib->ah_flags = rdma_ah_get_ah_flags(ah);
		ib->sl = rdma_ah_get_sl(ah);
		ib->static_rate = rdma_ah_get_static_rate(ah);
		ib->port_num = rdma_ah_get_port_num(ah);
		ib->grh = ah->grh;
		ib->grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_PATH_MTU)
		ib->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		ib->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		ib->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		ib->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		ib->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		ib->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_SQ_PSN)
		ib->sq_psn = attr->sq_psn & 0xffffff;
	if (mask & IB_QP_DEST_QPN)
		ib->dest_qp_num = attr->dest_qp_num & 0xffffff;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		ib->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		ib->max_dest_rd_atomic = attr->max_dest_rd_atomic;
}

/* Apply what viw_qp_check_attr() allowed.  state_lock held. */
void viw_qp_apply_attr(struct viw_qp *qp, struct ib_qp_attr *attr, int mask)
{
	viw_qp_save_ib(qp, attr, mask);
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	/*
	 * A modify_qp connection tells the peer the device's IRD and ORD
	 * (viw_direct.c); what the consumer sets is only reported back.
	 */
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && !qp->direct)
		qp->ord = attr->max_rd_atomic;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && !qp->direct)
		qp->ird = attr->max_dest_rd_atomic;
	if (mask & IB_QP_STATE)
		viw_qp_set_state_locked(qp, attr->qp_state);
}

/* ---- references --------------------------------------------------------- */

void viw_qp_get(struct viw_qp *qp)
{
	refcount_inc(&qp->ref);
}

void viw_qp_put(struct viw_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

/* Look up a QP by number and take a reference. */
struct viw_qp *viw_qp_lookup(struct viw_device *vdev, u32 qpn)
{
	struct viw_qp *qp;

	xa_lock(&vdev->qp_xa);
	qp = xa_load(&vdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&vdev->qp_xa);
	return qp;
}

/*
 * iw_cm holds the QP with these from connect/accept until the CLOSE (or a
 * failed CONNECT_REPLY) and destroy_qp waits for them.
 *
 * iw_cm_connect() and iw_cm_accept() call iw_get_qp and then, on success,
 * iw_add_ref at once.  Between the two the QP must not be freed, so
 * iw_get_qp keeps the reference its lookup took and iw_add_ref takes that
 * one over instead of taking a new one.  The counts are interchangeable:
 * as long as every successful iw_get_qp is followed by one iw_add_ref, it
 * does not matter which iw_add_ref consumes which handover.
 */
void viw_iw_add_ref(struct ib_qp *ibqp)
{
	struct viw_qp *qp = to_viw_qp(ibqp);

	if (atomic_dec_if_positive(&qp->iw_handover) < 0)
		viw_qp_get(qp);
}

void viw_iw_rem_ref(struct ib_qp *ibqp)
{
	viw_qp_put(to_viw_qp(ibqp));
}

/*
 * iw_cm looks a QP up by the number rdma_connect or rdma_accept names, in
 * the context of the caller: a process may name only its own QPs, never
 * another's (its creator, as restrack records it).  A kernel consumer's QP
 * has no creator task.  Most ULPs connect and accept from their kernel
 * threads and work items (the rdma_cm and iw_cm work queues, rpciod,
 * nfsd), but cifs's SMB Direct calls rdma_connect inside mount(2), in the
 * mounting process.  iw_get_qp cannot tell that call from one a process
 * made through rdma_ucm, so a process may name a kernel QP only with
 * CAP_SYS_ADMIN (which mount needs, and which can load code into the
 * kernel anyway): any other that guessed a ULP's QP number must not take
 * it over.  A modify_qp connection needs no such check: modify_qp acts on
 * the caller's own QP handle.
 */
static bool viw_qp_owned_by_current(struct viw_qp *qp)
{
	struct task_struct *owner = qp->ibqp.res.task;

	if (viw_qp_is_kernel(qp))
		return (current->flags & PF_KTHREAD) || capable(CAP_SYS_ADMIN);
	return owner && same_thread_group(owner, current);
}

struct ib_qp *viw_iw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct viw_qp *qp = viw_qp_lookup(to_viw_dev(ibdev), qpn);

	if (!qp)
		return NULL;
	if (!viw_qp_owned_by_current(qp)) {
		viw_qp_put(qp);
		return NULL;
	}
	/* Referenced until iw_add_ref takes the reference over. */
	atomic_inc(&qp->iw_handover);
	return &qp->ibqp;
}

/* ---- doorbells ---------------------------------------------------------- */

/*
 * The doorbells read the state after the process's posts; the full barrier
 * pairs with the one in viw_qp_error_locked(): either the flush there sees
 * the new WQEs, or the doorbell sees ERROR and flushes them itself.
 * viw_rq_flush_in_error() is that look for the RQ, which a kernel
 * consumer's post makes too; it returns true if the QP is in ERROR.
 */
static bool viw_rq_flush_in_error(struct viw_qp *qp)
{
	/* Orders the posts before the state read; see above. */
	smp_mb();
	if (READ_ONCE(qp->state) != IB_QPS_ERR)
		return false;
	viw_rq_flush(qp);
	return true;
}

static int viw_rq_doorbell(struct viw_qp *qp)
{
	if (viw_rq_flush_in_error(qp))
		return 0;
	if (viw_rq_take_all(qp)) {
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: invalid receive WQE\n",
				       qp->ibqp.qp_num);
		/* A kernel consumer may post from atomic context. */
		if (viw_qp_is_kernel(qp))
			viw_qp_fail(qp, NULL);
		else
			viw_qp_enter_error(qp);
	}
	return 0;
}

/**
 * viw_qp_ib_retry_ns - how long an InfiniBand requester retries a peer
 *	that does not answer: 4.096 us * 2^timeout a try, retry_cnt + 1 tries
 * @ib: the QP's InfiniBand attributes
 *
 * Return: that time in ns, or 0 without a timeout ("for ever").
 */
u64 viw_qp_ib_retry_ns(const struct viw_qp_ib_attrs *ib)
{
	if (!ib->timeout)
		return 0;
	return (4096ULL << min_t(u8, ib->timeout, 31)) * (ib->retry_cnt + 1);
}

/* How long the WRs of a QP whose peer left wait for acknowledgements. */
static unsigned long viw_qp_peer_wait_time(const struct viw_qp *qp)
{
	u64 ns = viw_qp_ib_retry_ns(&qp->ib);

	if (!ns)
		return VIW_IB_WAIT_DEFAULT;
	return min_t(u64, nsecs_to_jiffies64(ns), VIW_IB_WAIT_MAX);
}

/*
 * A modify_qp connection's peer does not answer, or answers no more: the
 * QP goes to ERROR as an InfiniBand QP whose retries ran out, its oldest
 * WR with RETRY_EXC_ERR (viw_sq_retries_exceeded()).  Caller holds
 * state_lock.
 */
static void viw_qp_give_up_locked(struct viw_qp *qp)
{
	viw_sq_retries_exceeded(qp);
	viw_qp_error_locked(qp);
}

/* The wait of viw_qp_await_acks() ended: the QP fails, if it still waits. */
static void viw_qp_peer_wait_end(struct work_struct *work)
{
	struct viw_qp *qp = container_of(to_delayed_work(work), struct viw_qp,
					 peer_wait);
	bool failed;

	mutex_lock(&qp->state_lock);
	failed = READ_ONCE(qp->peer_closed) &&
		 (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS);
	if (failed)
		viw_qp_give_up_locked(qp);
	mutex_unlock(&qp->state_lock);
	if (failed)
		viw_qp_event(qp, IB_EVENT_QP_FATAL);
}

/**
 * viw_qp_stop_peer_wait - before the QP is destroyed or connects again
 * @qp: the QP, not under state_lock
 */
void viw_qp_stop_peer_wait(struct viw_qp *qp)
{
	cancel_delayed_work_sync(&qp->peer_wait);
}

/*
 * A WR posted after the peer of a modify_qp connection closed
 * (viw_qp_quiet_close) cannot be delivered.  The QP fails as InfiniBand's
 * RC QP does when it finds its peer gone: on a connection with
 * acknowledgements once its retries would end, measured from the first
 * such WR (a later one does not move the end); on one without, now.
 */
static void viw_qp_send_after_close(struct viw_qp *qp)
{
	if (READ_ONCE(qp->peer_ack)) {
		queue_delayed_work(system_wq, &qp->peer_wait,
				   viw_qp_peer_wait_time(qp));
		return;
	}
	if (viw_qp_direct_error(qp, NULL))
		viw_qp_event(qp, IB_EVENT_QP_FATAL);
}

/*
 * Start the transmit engine for new send WQEs.  An idle engine sends in
 * the caller's context, as a hardware doorbell starts the adapter at once:
 * a lone post then costs one system call and no context switch.  A stream
 * of small messages is handed to the work item on another CPU, so that
 * the posts that follow need no system call (viw_tx_doorbell()).  The
 * work item takes over whatever is left (a busy engine, a full socket,
 * more than one budget of FPDUs).
 */
static void viw_qp_sq_start(struct viw_qp *qp, bool polled)
{
	/* A kernel consumer may post in atomic context: never send there. */
	if (viw_qp_is_kernel(qp))
		viw_tx_kick(qp);
	else
		viw_tx_doorbell(qp, !polled);
}

static int viw_sq_doorbell(struct viw_qp *qp, bool polled)
{
	/* Pairs with viw_qp_error_locked(), as in viw_rq_doorbell(). */
	smp_mb();
	/*
	 * Outside ERROR and RTS, WQEs wait in the ring until the QP is
	 * connected and the transmit engine takes them.
	 */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		viw_sq_flush(qp);
	else if (READ_ONCE(qp->peer_closed))
		viw_qp_send_after_close(qp);
	else if (viw_qp_tx_open(qp))
		viw_qp_sq_start(qp, polled);
	return 0;
}

/* The process rang the SQ doorbell (viw_post_send()). */
void viw_qp_sq_doorbell(struct viw_qp *qp)
{
	viw_count(qp->vdev, VIW_CNT_DOORBELLS, 1);
	trace_viw_doorbell(qp, true);
	viw_sq_doorbell(qp, false);
}

/* The process rang the RQ doorbell of a QP without SRQ. */
void viw_qp_rq_doorbell(struct viw_qp *qp)
{
	viw_count(qp->vdev, VIW_CNT_DOORBELLS, 1);
	trace_viw_doorbell(qp, false);
	viw_rq_doorbell(qp);
}

/*
 * A kernel consumer posted to the RQ of a QP without SRQ.  The receive
 * engine copies each RQE from the ring when a SEND needs it, so outside
 * ERROR there is nothing to do: taking them here would copy each twice.
 * In ERROR the new RQEs are flushed (ib_drain_rq's marker among them).
 */
void viw_qp_rq_kposted(struct viw_qp *qp)
{
	viw_rq_flush_in_error(qp);
}

/* ---- connection -------------------------------------------------------- */

static bool viw_qp_can_connect(struct viw_qp *qp, struct viw_cep *cep)
{
	if (qp->cep || !qp->direct != !cep->direct)
		return false;
	/*
	 * A modify_qp initiator takes only the stream of its current
	 * attempt: one it dropped when it was reset may still complete.
	 */
	if (qp->direct)
		return (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS) &&
		       (!cep->active || cep == qp->connecting);
	return qp->state == IB_QPS_INIT || qp->state == IB_QPS_RTR;
}

/*
 * For tests, through debugfs bind_delay_ms (0, the default: no wait): how
 * long viw_qp_bind_stream() waits, tx_lock held, once the socket is set,
 * so that what a test sends surely comes while a connection is being bound
 * (tests/functional/viw_remote_err.c -D).  At most a second.
 */
static u32 viw_qp_bind_delay_ms;

u32 *viw_qp_bind_delay_knob(void)
{
	return &viw_qp_bind_delay_ms;
}

/*
 * Set up the new stream's state and publish its socket, under tx_lock: a
 * modify_qp QP in RTR or RTS may run its transmit engine already, which
 * waits only for the socket (viw_tx_step()).  The socket goes last, so
 * that no doorbell frames a message with the last stream's MSNs, MPA CRC
 * setting or FPDU size.  The initiator's RTR (RFC 6581, 3) is the
 * stream's first FPDU: it goes out before tx_lock is released, so that
 * neither a doorbell nor a kick can start the engine first.  The socket
 * has only carried the MPA request, so the few bytes fit in its buffer.
 * state_lock held.
 */
static int viw_qp_bind_stream(struct viw_qp *qp, struct socket *sock,
			      const struct viw_qp_conn *conn)
{
	int rv = 0;

	mutex_lock(&qp->tx_lock);
	qp->peer_retrying = false;
	qp->crc = conn->crc;
	qp->mulpdu = conn->mulpdu;
	qp->ord = conn->ord;
	qp->ird = conn->ird;
	/* One may use fewer READs than the peer allows, never more. */
	if (qp->direct && qp->ib.max_rd_atomic)
		qp->ord = min(qp->ord, qp->ib.max_rd_atomic);
	qp->rtr_expected = conn->rtr_expect;
	viw_engine_stream_start(qp);
	qp->term_pending = false;
	qp->term_sent = false;
	qp->sock = sock;
	viw_test_delay(&viw_qp_bind_delay_ms);
	if (conn->rtr_send) {
		rv = viw_tx_send_rtr(qp, conn->rtr_send);
		if (rv)
			qp->sock = NULL;
	}
	mutex_unlock(&qp->tx_lock);
	return rv;
}

/**
 * viw_qp_connect - bind a QP to an established MPA connection
 * @qp: a QP in INIT or RTR
 * @cep: the connection endpoint, referenced by the QP from now on
 * @sock: its socket
 * @conn: what MPA negotiated
 *
 * Moves the QP to RTS and starts the engine on WQEs posted before.
 * Return: 0, or -EINVAL if the QP cannot take a connection (nothing then
 * changes).
 */
int viw_qp_connect(struct viw_qp *qp, struct viw_cep *cep,
		   struct socket *sock, const struct viw_qp_conn *conn)
{
	int rv = 0;

	mutex_lock(&qp->state_lock);
	/* A QP is iw_cm's or modify_qp's, never both. */
	if (!viw_qp_can_connect(qp, cep)) {
		rv = -EINVAL;
		goto out;
	}
	viw_cep_get(cep);
	qp->cep = cep;
	rv = viw_qp_bind_stream(qp, sock, conn);
	if (rv) {
		viw_rd_reset(qp);
		qp->cep = NULL;
		viw_cep_put(cep);
		goto out;
	}
	reinit_completion(&qp->term_done);
	viw_qp_set_kflags(qp, 0);
	/* modify_qp alone moves a modify_qp connection's QP. */
	if (!qp->direct)
		viw_qp_store_state(qp, IB_QPS_RTS);
	viw_count(qp->vdev, VIW_CNT_CONN_ESTABLISHED, 1);
	ibdev_dbg(qp->ibqp.device, "QP %u: RTS, ord %u ird %u crc %d mulpdu %u\n",
		  qp->ibqp.qp_num, qp->ord, qp->ird, qp->crc, qp->mulpdu);
out:
	mutex_unlock(&qp->state_lock);
	if (!rv)
		viw_tx_kick(qp);
	return rv;
}

/*
 * The connection is gone (the CEP released the socket, so the receive
 * engine cannot run any more): stop the engine and let go of the CEP.
 */
void viw_qp_disconnect(struct viw_qp *qp)
{
	struct viw_cep *cep;

	viw_qp_conn_lost(qp);
	cancel_work_sync(&qp->err_work);
	mutex_lock(&qp->tx_lock);
	qp->sock = NULL;
	viw_tx_abort(qp);
	mutex_unlock(&qp->tx_lock);
	cancel_work_sync(&qp->tx_work);
	/* No run is queued any more that would clear it. */
	viw_sq_set_busy(qp, false);

	viw_rx_reset(qp);
	viw_rd_reset(qp);
	viw_ack_reset(qp);
	mutex_lock(&qp->state_lock);
	cep = qp->cep;
	qp->cep = NULL;
	mutex_unlock(&qp->state_lock);
	if (cep) {
		viw_count(qp->vdev, VIW_CNT_CONN_CLOSED, 1);
		viw_cep_put(cep);
	}
}

/**
 * viw_qp_llp_close - end the stream with a FIN between two FPDUs
 * @qp: a connected QP
 *
 * The FIN must not cut an FPDU the transmit engine is sending.
 * Return: false if the engine is in the middle of one (try again later).
 */
bool viw_qp_llp_close(struct viw_qp *qp)
{
	if (!mutex_trylock(&qp->tx_lock))
		return false;
	/* The rest of an FPDU may wait in a spill: the work item writes it. */
	if (qp->sock && !viw_tx_write_owed(qp)) {
		mutex_unlock(&qp->tx_lock);
		viw_tx_kick(qp);
		return false;
	}
	/* What was placed is acknowledged: the peer's WQEs complete. */
	if (qp->sock) {
		viw_tx_last_ack(qp);
		kernel_sock_shutdown(qp->sock, SHUT_WR);
	}
	mutex_unlock(&qp->tx_lock);
	return true;
}

/**
 * viw_qp_stream_whole - may a FIN end the QP's stream now?
 * @qp: the QP, its connection being closed (viw_cep_close())
 *
 * Not while a transmit work waits in the socket for room, in the middle
 * of an FPDU, nor while bytes a doorbell's run left to the work item wait
 * (viw_tx_write_owed()), which go first if the socket takes them at once,
 * nor ever after a write stopped inside an FPDU whose rest could not be
 * kept (viw_tx_cut()).
 * Return: true if the stream is between two FPDUs, with nothing owed.
 */
bool viw_qp_stream_whole(struct viw_qp *qp)
{
	bool whole;

	mutex_lock(&qp->state_lock);
	whole = viw_qp_lock_tx_bounded(qp);
	if (whole) {
		whole = !qp->sock || viw_tx_write_owed(qp);
		mutex_unlock(&qp->tx_lock);
	}
	mutex_unlock(&qp->state_lock);
	return whole;
}

/*
 * Have the transmit engine send the pending TERMINATE after the FPDU it
 * may be sending, and wait for it a bounded time.  This runs without
 * state_lock: the send blocks while the peer does not read, and what ends
 * such a send, aborting the connection, needs state_lock (destroy_qp,
 * modify_qp, the link going down, the connection's own close).  If the
 * TERMINATE is not out in time, the QP goes to ERROR without it, and the
 * connection is reset.
 */
static void viw_qp_send_terminate(struct viw_qp *qp)
{
	bool sent;

	if (!READ_ONCE(qp->term_pending))
		return;
	viw_tx_kick(qp);
	wait_for_completion_timeout(&qp->term_done, VIW_TERM_TIMEOUT);
	sent = READ_ONCE(qp->term_sent);
	ibdev_info_ratelimited(qp->ibqp.device,
			       "QP %u: TERMINATE layer %u type %u code %u %s\n",
			       qp->ibqp.qp_num, qp->term.cause.layer,
			       qp->term.cause.etype, qp->term.cause.ecode,
			       sent ? "sent" : "not sent");
}

static void viw_qp_err_work(struct work_struct *work)
{
	struct viw_qp *qp = container_of(work, struct viw_qp, err_work);
	bool connected;

	/* SQE: the transmit engine takes no more WQEs, only the TERMINATE. */
	mutex_lock(&qp->state_lock);
	/* A modify_qp connection may be up while its QP is in RTR. */
	connected = qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD ||
		    (qp->state == IB_QPS_RTR && qp->cep);
	if (connected)
		viw_qp_store_state(qp, IB_QPS_SQE);
	mutex_unlock(&qp->state_lock);
	if (!connected)
		return;

	viw_qp_send_terminate(qp);

	/* Unless the consumer moved the QP on meanwhile. */
	mutex_lock(&qp->state_lock);
	if (qp->state == IB_QPS_SQE)
		viw_qp_error_locked(qp);
	mutex_unlock(&qp->state_lock);
}

/**
 * viw_qp_fail - the QP hit an error it cannot recover from
 * @qp: the QP
 * @cause: if not NULL, the peer caused it: send a TERMINATE with @cause
 *
 * Safe from any context.  The QP goes to ERROR from a work item.  Only
 * this writes the TERMINATE to send (qp->term), under rd_lock: the first
 * cause stays, and the transmit engine reads it once term_pending is set.
 */
void viw_qp_fail(struct viw_qp *qp, const struct viw_term_cause *cause)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rd_lock, flags);
	if (cause && !qp->term_pending) {
		memset(&qp->term, 0, sizeof(qp->term));
		qp->term.cause = *cause;
		qp->term_pending = true;
	}
	spin_unlock_irqrestore(&qp->rd_lock, flags);
	schedule_work(&qp->err_work);
}

/*
 * The peer sent a TERMINATE: the oldest outstanding send WQE fails with
 * what the peer reported, the consumer learns of it, and the QP stops.
 */
void viw_qp_terminated(struct viw_qp *qp, const struct viw_term_cause *cause)
{
	u8 status = viw_term_to_wc_status(cause);

	viw_count(qp->vdev, VIW_CNT_TERM_RCVD, 1);
	trace_viw_term_rcvd(qp, cause);
	ibdev_info_ratelimited(qp->ibqp.device,
			       "QP %u: peer TERMINATE layer %u type %u code %u\n",
			       qp->ibqp.qp_num, cause->layer, cause->etype,
			       cause->ecode);
	viw_sq_fail_oldest(qp, status);
	viw_qp_event(qp, cause->etype == VIW_RDMAP_ET_REMOTE_PROT &&
			 cause->layer == VIW_TERM_RDMAP ?
			 IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
	if (qp->cep)
		viw_cep_post_event(qp->cep, VIW_CEP_EV_TERMINATED);
	viw_qp_fail(qp, NULL);
}

/*
 * In RTR or RTS with nothing of the SQ in flight: no WQE being sent, no
 * READ waiting for its response, nothing posted and not yet taken.
 * state_lock and tx_lock held.
 */
static bool viw_qp_sq_quiet(struct viw_qp *qp)
{
	return (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS) &&
	       !viw_tx_busy(qp) && viw_sq_idle(qp);
}

/*
 * viw_qp_sq_quiet() under tx_lock, or false without a look if the
 * transmit work waits in the socket: its WQE is in flight, and it may
 * wait until the caller aborts the connection (viw_qp_lock_tx_bounded()).
 * state_lock held.
 */
static bool viw_qp_sq_quiet_now(struct viw_qp *qp)
{
	bool quiet;

	if (!viw_qp_lock_tx_bounded(qp))
		return false;
	quiet = viw_qp_sq_quiet(qp);
	mutex_unlock(&qp->tx_lock);
	return quiet;
}

/*
 * A modify_qp stream ended with nothing of the SQ in flight: the QP stays,
 * marked as one whose peer closed, or (@peer_returns) as one that waits
 * for the peer's next stream.  Return: whether it stays.
 */
static bool viw_qp_stream_end_quiet(struct viw_qp *qp, bool peer_returns)
{
	bool quiet;

	mutex_lock(&qp->state_lock);
	quiet = viw_qp_sq_quiet_now(qp);
	if (quiet && peer_returns)
		qp->peer_retrying = true;
	else if (quiet)
		WRITE_ONCE(qp->peer_closed, true);
	mutex_unlock(&qp->state_lock);
	return quiet;
}

/**
 * viw_qp_quiet_close - a modify_qp connection's peer closed with a FIN
 * @qp: the QP
 *
 * If nothing of its SQ is in flight (no WQE being sent, no READ waiting
 * for its response, nothing posted and not yet taken), the QP stays in
 * RTR or RTS with its receives posted, as an InfiniBand QP whose peer
 * went away does; viw_sq_doorbell() fails it at its next send (with
 * acknowledgements, when that send's retries would end).
 * Return: whether it stays.
 */
bool viw_qp_quiet_close(struct viw_qp *qp)
{
	return viw_qp_stream_end_quiet(qp, false);
}

/**
 * viw_qp_await_acks - a modify_qp connection's peer ended the stream
 *	(FIN or reset) while WRs of the QP's SQ were in flight
 * @qp: the QP
 *
 * On a connection with acknowledgements the QP stays in RTR or RTS, as an
 * InfiniBand QP whose peer stopped answering keeps retrying: the peer's
 * last acknowledgements, which went out before its FIN, have completed
 * what it placed, and the WRs it never acknowledged fail, the QP with
 * them, once those retries would end (viw_qp_peer_wait_time()).  A tool
 * that still polls for its last completions then gets them first.
 * Return: whether it stays.
 */
bool viw_qp_await_acks(struct viw_qp *qp)
{
	bool stays;

	mutex_lock(&qp->state_lock);
	stays = READ_ONCE(qp->peer_ack) &&
		(qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS) &&
		!viw_qp_sq_quiet_now(qp);
	if (stays) {
		WRITE_ONCE(qp->peer_closed, true);
		mod_delayed_work(system_wq, &qp->peer_wait,
				 viw_qp_peer_wait_time(qp));
	}
	mutex_unlock(&qp->state_lock);
	return stays;
}

/**
 * viw_qp_await_retry - a modify_qp acceptor's peer dropped the stream
 *	before it sent anything on it
 * @qp: the QP
 *
 * The peer gave up its attempt (it was reset while connecting, and
 * connects again).  If nothing of the QP's SQ is in flight either, the
 * stream carried nothing at all: the QP stays in RTR or RTS, as before
 * its stream came, with its receives posted, and takes the peer's next
 * stream (viw_direct.c bounds the wait).
 * Return: whether it stays.
 */
bool viw_qp_await_retry(struct viw_qp *qp)
{
	return viw_qp_stream_end_quiet(qp, true);
}

/**
 * viw_qp_direct_error - a modify_qp connection failed or broke
 *	(viw_direct.c): the QP goes to ERROR, its oldest WR with
 *	RETRY_EXC_ERR, as InfiniBand's when its peer does not answer
 * @qp: the QP
 * @attempt: the connect attempt that failed, or NULL
 *
 * Not if the consumer moved the QP to ERROR or RESET already, nor in
 * INIT: the CM reports the end of a connection some time after the
 * consumer reset its QP, and a QP brought back to INIT has no connection
 * of its own yet.  Nor if @attempt is not the QP's attempt any more: the
 * QP was reset and connects again (viw_direct_prepare_reconnect()).
 * Return: whether the QP moved, under the same lock as the checks.
 */
bool viw_qp_direct_error(struct viw_qp *qp, const struct viw_cep *attempt)
{
	bool moved;

	mutex_lock(&qp->state_lock);
	moved = qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET &&
		qp->state != IB_QPS_INIT &&
		(!attempt || attempt == qp->connecting);
	if (moved)
		viw_qp_give_up_locked(qp);
	mutex_unlock(&qp->state_lock);
	return moved;
}

bool viw_qp_term_sent(struct viw_qp *qp)
{
	return READ_ONCE(qp->term_sent);
}

/*
 * Passive peer-to-peer connection: the initiator's RTR arrived (receive
 * engine).  RFC 6581, 3: the responder sends nothing before it, so the
 * transmit engine waited; start it now.
 */
void viw_qp_rtr_received(struct viw_qp *qp)
{
	WRITE_ONCE(qp->rtr_expected, 0);
	viw_cep_post_event(qp->cep, VIW_CEP_EV_RTR);
	viw_tx_kick(qp);
}

/* The first live QP at or after *@index, referenced; NULL at the end. */
static struct viw_qp *viw_qp_next(struct viw_device *vdev,
				  unsigned long *index)
{
	struct viw_qp *qp;

	xa_lock(&vdev->qp_xa);
	for (;;) {
		qp = xa_find(&vdev->qp_xa, index, ULONG_MAX, XA_PRESENT);
		if (!qp || refcount_inc_not_zero(&qp->ref))
			break;
		(*index)++;	/* being destroyed */
	}
	xa_unlock(&vdev->qp_xa);
	return qp;
}

/*
 * The netdev went down: abort every connection of the device.  Its QPs go
 * to ERROR (flushing their work requests) and their consumers get CLOSE
 * with -ECONNRESET at once, rather than when TCP gives up.
 */
void viw_device_link_down(struct viw_device *vdev)
{
	unsigned long index = 0;
	struct viw_qp *qp;

	while ((qp = viw_qp_next(vdev, &index))) {
		if (READ_ONCE(qp->cep))
			viw_qp_conn_lost(qp);
		viw_qp_put(qp);
		index++;
	}
}

/*
 * The doorbells a poller pass rings for @qp: those whose producer index
 * moved past what the kernel took.  prod is the process's to write; it only
 * tells where to look, and a doorbell with nothing new does nothing.
 */
static void viw_qp_poll_one(struct viw_qp *qp)
{
	if (READ_ONCE(qp->sq.ring.ctrl->prod) != READ_ONCE(qp->sq.fetch))
		viw_sq_doorbell(qp, true);
	if (!qp->srq &&
	    READ_ONCE(qp->rq.ring.ctrl->prod) != READ_ONCE(qp->rq.fetch))
		viw_rq_doorbell(qp);
}

/*
 * The poller (viw_poll.c) saw the doorbell sequence of some contexts move:
 * their QPs get the doorbells the system call would have rung.  Runs under
 * the poller's lock, which keeps the contexts' poll_dirty stable.
 */
void viw_qp_poll_doorbells(struct viw_device *vdev)
{
	unsigned long index = 0;
	struct viw_qp *qp;

	while ((qp = viw_qp_next(vdev, &index))) {
		if (qp->uctx && qp->uctx->poll_dirty)
			viw_qp_poll_one(qp);
		viw_qp_put(qp);
		index++;
	}
}
