// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: connections made by modify_qp, without iw_cm (docs/semantics.md,
 * "Connections made by modify_qp").
 *
 * A consumer that moves an RC QP from INIT to RTR with an address vector
 * (GRH: sgid_index of one of the device's IP GIDs, dgid the peer's) and a
 * destination QP number asks viw to make the connection itself.  Both
 * sides compare (local GID, local QPN) with (remote GID, remote QPN), GIDs
 * as 16 bytes in network order first: the side with the smaller pair
 * connects, the other accepts.  Every device listens on TCP port
 * VIW_DIRECT_PORT of its netdev's namespace, bound to the netdev.  The
 * MPA request and reply carry struct viw_direct_pdata: a marker and both
 * QP numbers, so the acceptor hands the stream to the QP it names, and
 * only if that QP expects exactly this peer (address and QP number).
 *
 * The connection itself is an ordinary CEP of viw_cm.c and the QP the same
 * state machine as for iw_cm; the QP state follows modify_qp only: a
 * stream that comes up in RTR receives, and sends wait for RTS.  If the
 * stream is not up within the QP's bound (timeout and retry_cnt), or it
 * fails, the QP goes to ERROR and the consumer gets IB_EVENT_QP_FATAL.
 *
 * A QP reset may connect again, and so may its peer; the end of the old
 * connection, which the CM reports late, never fails the new one (a QP in
 * INIT has none, and an attempt the QP dropped is not its attempt), and
 * an acceptor outlives a stream its peer dropped before using it
 * (viw_direct_lost()).
 */
#include <linux/inet.h>
#include <linux/tcp.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "viw_qp.h"
#include "viw_cm.h"

/* Requests for QPs not yet in RTR a device holds at most. */
#define VIW_DIRECT_MAX_PENDING	64
/* The shortest connection bound (the others: VIW_IB_WAIT_*, viw_qp.h). */
#define VIW_DIRECT_WAIT_MIN	(4 * HZ)
/* How long a reset QP's next RTR waits for its old stream to go. */
#define VIW_DIRECT_REUSE_WAIT_MS	2000

static const u8 viw_direct_magic[4] = { 'v', 'i', 'w', 'D' };
static const struct viw_cep_owner viw_direct_owner;
static void viw_direct_retake(struct work_struct *work);

struct viw_direct_dev {
	struct mutex lock;		/* pending, and the QPs' accepting flag */
	struct viw_cep *listener;
	struct list_head pending;	/* CEPs (pend_entry), referenced */
	int num_pending;
};

struct viw_direct_qp {
	struct viw_qp *qp;
	bool active;
	bool accepting;			/* passive, in RTR: under dd->lock */
	bool taking;			/* an accept in flight: under dd->lock */
	struct sockaddr_storage laddr;
	struct sockaddr_storage raddr;	/* port VIW_DIRECT_PORT if active */
	unsigned long start;		/* jiffies at RTR, or when a peer retries */
	struct delayed_work deadline;
	struct work_struct retake;	/* take a request that waited */
};

/* ---- addresses ------------------------------------------------------------ */

static void viw_gid_to_sa(const union ib_gid *gid, int ifindex, u16 port,
			  struct sockaddr_storage *ss)
{
	const struct in6_addr *a = (const struct in6_addr *)gid->raw;

	memset(ss, 0, sizeof(*ss));
	if (ipv6_addr_v4mapped(a)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = a->s6_addr32[3];
		sin->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = *a;
		sin6->sin6_port = htons(port);
		if (ipv6_addr_type(a) & IPV6_ADDR_LINKLOCAL)
			sin6->sin6_scope_id = ifindex;
	}
}

/* The address of @sa as a GID (IPv4 mapped). */
static void viw_sa_to_gid(const struct sockaddr_storage *ss,
			  union ib_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (ss->ss_family == AF_INET)
		ipv6_addr_set_v4mapped(((const struct sockaddr_in *)ss)->sin_addr.s_addr,
				       (struct in6_addr *)gid->raw);
	else
		memcpy(gid->raw, &((const struct sockaddr_in6 *)ss)->sin6_addr,
		       sizeof(*gid));
}

static int viw_sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
					  sizeof(struct sockaddr_in6);
}

/*
 * Who connects: the side whose (GID, QPN) is smaller.  Both sides see the
 * same two pairs, swapped, and so agree.
 */
static bool viw_direct_is_active(const union ib_gid *lgid, u32 lqpn,
				 const union ib_gid *rgid, u32 rqpn)
{
	int c = memcmp(lgid->raw, rgid->raw, sizeof(lgid->raw));

	return c < 0 || (c == 0 && lqpn < rqpn);
}

/* ---- events and failure --------------------------------------------------- */

/*
 * How long the stream may take to come up: 4.096 us * 2^timeout per try,
 * retry_cnt + 1 tries, as the IB attributes say, within [4 s, 60 s].
 */
static unsigned long viw_direct_bound(const struct viw_qp_ib_attrs *ib)
{
	u64 ns = viw_qp_ib_retry_ns(ib);

	if (!ns)
		return VIW_IB_WAIT_DEFAULT;
	return clamp_t(u64, nsecs_to_jiffies64(ns), VIW_DIRECT_WAIT_MIN,
		       VIW_IB_WAIT_MAX);
}

static void viw_direct_arm(struct viw_direct_qp *dq)
{
	unsigned long until = dq->start + viw_direct_bound(&dq->qp->ib);
	unsigned long now = jiffies;

	mod_delayed_work(system_wq, &dq->deadline,
			 time_after(until, now) ? until - now : 0);
}

/*
 * The connection could not be made or broke before the consumer ended it:
 * the QP goes to ERROR (flushing its WRs) and the consumer learns of it.
 * Nothing is raised when the consumer moved the QP on already (to ERROR,
 * RESET or INIT) or dropped @attempt: see viw_qp_direct_error().
 */
static bool viw_direct_fail(struct viw_qp *qp, const struct viw_cep *attempt,
			    int status)
{
	if (!viw_qp_direct_error(qp, attempt))
		return false;
	ibdev_dbg(qp->ibqp.device, "QP %u: modify_qp connection failed: %d\n",
		  qp->ibqp.qp_num, status);
	viw_qp_event(qp, IB_EVENT_QP_FATAL);
	return true;
}

/* From the CM: a direct connect attempt failed. */
static void viw_direct_failed(struct viw_cep *cep, struct viw_qp *qp,
			      int status)
{
	viw_count(qp->vdev, VIW_CNT_CONN_FAILED, 1);
	viw_direct_fail(qp, cep, status);
}

/*
 * From the CM: an established direct connection ended, by a FIN
 * (@graceful) or otherwise.  The tools destroy their QP right after their
 * last completion, and InfiniBand's RC QP notices a peer that left only
 * when it sends: a tool still polling for the completions of its last
 * exchange must not see them flushed.  So after a FIN with nothing in
 * flight the QP stays as it is (viw_qp_quiet_close).
 *
 * An acceptor's stream that the peer reset before sending anything on it
 * is an attempt the peer gave up: it was reset while connecting, and its
 * request reached this QP after it had dropped it (it connects again at
 * once, and the two requests race).  If this QP sent nothing either, it
 * waits for the next attempt, bounded as from its RTR.
 *
 * On a connection with acknowledgements, a FIN or reset with WRs in
 * flight leaves the QP as it is too, as InfiniBand's requester keeps
 * retrying a peer that stopped answering: the WRs the peer never
 * acknowledged fail when those retries would end (viw_qp_await_acks()).
 *
 * Otherwise a reset, a TERMINATE or a FIN with WRs in flight fails the
 * QP now.
 */
static void viw_direct_lost(struct viw_cep *cep, struct viw_qp *qp,
			    bool graceful)
{
	struct viw_direct_qp *dq = qp->direct;

	if (graceful && viw_qp_quiet_close(qp)) {
		ibdev_dbg(qp->ibqp.device,
			  "QP %u: peer closed, QP fails at its next send\n",
			  qp->ibqp.qp_num);
		return;
	}
	if (!graceful && viw_cep_direct_peer_silent(cep) &&
	    viw_qp_await_retry(qp)) {
		ibdev_dbg(qp->ibqp.device,
			  "QP %u: peer dropped its attempt, waiting for another\n",
			  qp->ibqp.qp_num);
		dq->start = jiffies;
		viw_direct_arm(dq);
		return;
	}
	if (viw_qp_await_acks(qp)) {
		ibdev_dbg(qp->ibqp.device,
			  "QP %u: peer left, its unacknowledged WRs fail when retries would end\n",
			  qp->ibqp.qp_num);
		return;
	}
	viw_direct_fail(qp, NULL, -ECONNRESET);
}

static void viw_direct_deadline(struct work_struct *work)
{
	struct viw_direct_qp *dq = container_of(to_delayed_work(work),
						struct viw_direct_qp,
						deadline);

	/*
	 * The deadline is not cancelled when the QP enters ERROR, RESET or
	 * INIT: then it finds nothing to fail, and counts nothing.  Nor when
	 * the stream comes up: a stream the peer ended since is no attempt
	 * that failed (viw_qp_quiet_close(), viw_qp_await_acks()).
	 */
	if (!READ_ONCE(dq->qp->cep) && !READ_ONCE(dq->qp->peer_closed) &&
	    viw_direct_fail(dq->qp, NULL, -ETIMEDOUT))
		viw_count(dq->qp->vdev, VIW_CNT_CONN_FAILED, 1);
}

/*
 * The state of @qp's last modify_qp connection, for the next one: the QP
 * was reset, its stream is gone and the deadline cancelled
 * (viw_direct_prepare_reconnect()).  It stops accepting at once, under
 * the lock the request lookups take.  state_lock held.
 */
static struct viw_direct_qp *viw_direct_reuse(struct viw_qp *qp)
{
	struct viw_direct_dev *dd = qp->vdev->direct;
	struct viw_direct_qp *dq = qp->direct;

	if (dd)
		mutex_lock(&dd->lock);
	dq->accepting = false;
	if (dd)
		mutex_unlock(&dd->lock);
	qp->direct_started = false;
	return dq;
}

/**
 * viw_direct_prepare_reconnect - before a modify_qp to RTR with an address
 *	vector (not under state_lock)
 * @qp: the QP
 *
 * A QP the consumer moved through RESET after a modify_qp connection (as
 * rdma-core's tests do to recover from an error) may connect again.  The
 * RESET aborted the old stream; wait, a bounded time, until it is torn
 * down (viw_qp_disconnect() clears qp->cep), so that the old deadline
 * cannot fire into the new attempt, and drop the old connect attempt.
 */
void viw_direct_prepare_reconnect(struct viw_qp *qp)
{
	struct viw_direct_qp *dq = READ_ONCE(qp->direct);
	struct viw_cep *connecting;
	int ms;

	if (!dq || READ_ONCE(qp->state) != IB_QPS_INIT)
		return;
	for (ms = 0; ms < VIW_DIRECT_REUSE_WAIT_MS && READ_ONCE(qp->cep); ms++)
		usleep_range(1000, 2000);
	cancel_delayed_work_sync(&dq->deadline);
	viw_qp_stop_peer_wait(qp);
	cancel_work_sync(&dq->retake);
	mutex_lock(&qp->state_lock);
	connecting = qp->state == IB_QPS_INIT && !qp->cep ? qp->connecting : NULL;
	if (connecting)
		qp->connecting = NULL;
	mutex_unlock(&qp->state_lock);
	if (connecting)
		viw_cep_put(connecting);
}

/* ---- modify_qp ------------------------------------------------------------ */

/**
 * viw_direct_modify - check a modify_qp and note what it means for the
 *	connection; state_lock held
 * @qp: the QP
 * @attr: the attributes
 * @mask: which of them are set
 *
 * INIT->RTR with IB_QP_AV makes @qp a modify_qp QP; RTR->RTS with a
 * timeout moves its deadline.
 * Return: 0, or -EINVAL if the attributes cannot make a connection.
 */
int viw_direct_modify(struct viw_qp *qp, struct ib_qp_attr *attr, int mask)
{
	struct net_device *ndev = qp->vdev->netdev;
	const struct ib_global_route *grh = &attr->ah_attr.grh;
	struct viw_direct_qp *dq;
	union ib_gid sgid;
	bool active;

	if (!(mask & IB_QP_STATE))
		return 0;
	if (attr->qp_state == IB_QPS_RTS && qp->direct) {
		if (qp->state == IB_QPS_RTR && (mask & IB_QP_TIMEOUT)) {
			qp->ib.timeout = attr->timeout;
			if (mask & IB_QP_RETRY_CNT)
				qp->ib.retry_cnt = attr->retry_cnt;
			viw_direct_arm(qp->direct);
		}
		return 0;
	}
	if (attr->qp_state != IB_QPS_RTR || qp->state != IB_QPS_INIT ||
	    !(mask & IB_QP_AV))
		return 0;
	/*
	 * One connection at a time; iw_cm's QPs are never in RTR here.  A
	 * QP reset after its modify_qp connection connects again once that
	 * stream is gone (viw_direct_prepare_reconnect()).
	 */
	if (qp->cep || !(mask & IB_QP_DEST_QPN) ||
	    !(rdma_ah_get_ah_flags(&attr->ah_attr) & IB_AH_GRH))
		return -EINVAL;
	if (grh->sgid_index == 0 ||
	    viw_query_gid(&qp->vdev->ibdev, 1, grh->sgid_index, &sgid) ||
	    ipv6_addr_any((struct in6_addr *)sgid.raw) ||
	    ipv6_addr_v4mapped((struct in6_addr *)sgid.raw) !=
	    ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw) ||
	    ipv6_addr_any((const struct in6_addr *)grh->dgid.raw))
		return -EINVAL;
	active = viw_direct_is_active(&sgid, qp->ibqp.qp_num, &grh->dgid,
				      attr->dest_qp_num);
	/* A QP cannot be its own peer. */
	if (!active && !memcmp(&sgid, &grh->dgid, sizeof(sgid)) &&
	    attr->dest_qp_num == qp->ibqp.qp_num)
		return -EINVAL;

	dq = qp->direct ? viw_direct_reuse(qp) : kzalloc(sizeof(*dq), GFP_KERNEL);
	if (!dq)
		return -ENOMEM;
	dq->qp = qp;
	dq->active = active;
	dq->start = jiffies;
	INIT_DELAYED_WORK(&dq->deadline, viw_direct_deadline);
	INIT_WORK(&dq->retake, viw_direct_retake);
	viw_gid_to_sa(&sgid, ndev->ifindex, 0, &dq->laddr);
	viw_gid_to_sa(&grh->dgid, ndev->ifindex, active ? VIW_DIRECT_PORT : 0,
		      &dq->raddr);
	qp->direct = dq;
	return 0;
}

/* ---- passive side ---------------------------------------------------------- */

static bool viw_direct_pdata_ok(const struct viw_direct_pdata *pd)
{
	return !memcmp(pd->magic, viw_direct_magic, sizeof(pd->magic)) &&
	       pd->version == VIW_DIRECT_VERSION;
}

/*
 * Immediate Data is used only if both sides say they speak it: viw of
 * before sends flags 0 and ignores them.
 */
static bool viw_direct_peer_imm(const struct viw_direct_pdata *pd)
{
	return pd->flags & VIW_DIRECT_F_IMM;
}

/* So are acknowledgements (docs/semantics.md, section 13). */
static bool viw_direct_peer_ack(const struct viw_direct_pdata *pd)
{
	return pd->flags & VIW_DIRECT_F_ACK;
}

static void viw_direct_fill(struct viw_direct_pdata *pd, u32 src, u32 dst)
{
	memset(pd, 0, sizeof(*pd));
	memcpy(pd->magic, viw_direct_magic, sizeof(pd->magic));
	pd->version = VIW_DIRECT_VERSION;
	pd->flags = VIW_DIRECT_F_IMM | VIW_DIRECT_F_ACK;
	pd->src_qpn = cpu_to_be32(src);
	pd->dst_qpn = cpu_to_be32(dst);
}

/*
 * Is passive @qp accepting, and is @cep's request from the peer it
 * expects?  It may have a stream already.  dd->lock held.
 */
static bool viw_direct_expects(struct viw_qp *qp, struct viw_cep *cep)
{
	struct viw_direct_qp *dq = qp->direct;
	enum ib_qp_state state = READ_ONCE(qp->state);
	union ib_gid peer;

	/* A reset QP's old state accepts nothing. */
	if (state != IB_QPS_RTR && state != IB_QPS_RTS)
		return false;
	if (!dq || dq->active || !dq->accepting)
		return false;
	viw_sa_to_gid(&cep->direct_peer, &peer);
	return cep->direct_src == qp->ib.dest_qp_num &&
	       !memcmp(&peer, &qp->ib.grh.dgid, sizeof(peer));
}

/*
 * May passive @qp take the request in @cep now?  Not while it has a
 * stream or is accepting another request: one accept at a time, so that
 * no peer is sent an accepting reply that the QP then cannot honour.
 * dd->lock held.
 */
static bool viw_direct_match(struct viw_qp *qp, struct viw_cep *cep)
{
	return !READ_ONCE(qp->cep) && viw_direct_expects(qp, cep) &&
	       !qp->direct->taking;
}

/*
 * May a request for @qp wait?  Only until @qp reaches RTR as acceptor:
 * the QP may have no modify_qp state yet, or have it from a modify_qp
 * that has not yet started accepting.  A QP in ERROR, RESET or INIT whose
 * stream is gone may be reset and connect again (its peer recovering
 * first): the request waits for that too, bounded like any wait.  So
 * does a request from the peer an acceptor expects while that acceptor
 * has a stream, or is accepting another request: the peer was reset while
 * connecting and connects again, and the stream is its attempt before,
 * which it drops (viw_direct_lost()); if not, the request times out.
 * dd->lock held; the caller's QP reference keeps qp->direct.
 */
static bool viw_direct_may_wait(struct viw_qp *qp, struct viw_cep *cep)
{
	struct viw_direct_qp *dq = READ_ONCE(qp->direct);
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (READ_ONCE(qp->cep) || (dq && dq->taking))
		return viw_direct_expects(qp, cep);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS)
		return true;
	return !dq || (!dq->active && !dq->accepting);
}

static int viw_direct_do_accept(struct viw_cep *cep, struct viw_qp *qp)
{
	const struct viw_direct_pdata *req;
	struct viw_direct_pdata pd;
	u16 len;

	/* viw_direct_request() checked the request; before the stream is up */
	req = viw_cep_direct_pdata(cep, false, &len);
	WRITE_ONCE(qp->peer_imm, req && len >= sizeof(*req) &&
		   viw_direct_peer_imm(req));
	WRITE_ONCE(qp->peer_ack, req && len >= sizeof(*req) &&
		   viw_direct_peer_ack(req));
	viw_direct_fill(&pd, qp->ibqp.qp_num, cep->direct_src);
	return viw_cep_direct_accept(cep, qp, &pd, sizeof(pd));
}

/* Refuse a request that waited, and drop the waiting list's reference. */
static void viw_direct_reject_unlocked(struct viw_cep *cep)
{
	mutex_lock(&cep->lock);
	viw_cep_direct_reject(cep);
	mutex_unlock(&cep->lock);
	viw_cep_put(cep);
}

/* Drop the pending requests that ended (timed out or closed). */
static void viw_direct_prune(struct viw_direct_dev *dd)
{
	struct viw_cep *cep, *next;

	list_for_each_entry_safe(cep, next, &dd->pending, pend_entry) {
		if (viw_cep_direct_waiting(cep))
			continue;
		list_del_init(&cep->pend_entry);
		dd->num_pending--;
		viw_cep_put(cep);
	}
}

/*
 * Accept @cep (lock held) for passive @qp: the one accept in flight,
 * which the caller marked (dq->taking, under dd->lock).  The caller's QP
 * reference goes to the CEP.  If the request is gone (the peer gave up
 * before), the QP takes the next that waits, or waits for one until its
 * deadline.
 */
static void viw_direct_take(struct viw_qp *qp, struct viw_cep *cep)
{
	struct viw_direct_dev *dd = qp->vdev->direct;
	int rv;

	viw_qp_get(qp);			/* ours, for after the accept */
	rv = viw_direct_do_accept(cep, qp);
	mutex_lock(&dd->lock);
	qp->direct->taking = false;
	mutex_unlock(&dd->lock);
	if (rv) {
		ibdev_dbg(qp->ibqp.device, "QP %u: waiting request gone: %d\n",
			  qp->ibqp.qp_num, rv);
		schedule_work(&qp->direct->retake);
	}
	viw_qp_put(qp);
}

/**
 * viw_direct_request - an MPA request arrived on the device's listener
 * @cep: its CEP, lock held, the request read
 *
 * Accepts it for the QP it names if that QP waits for it, keeps it (for a
 * bounded time) if the QP is not yet in RTR, or rejects it.
 */
static void viw_direct_request(struct viw_cep *cep)
{
	struct viw_direct_dev *dd = cep->vdev->direct;
	const struct viw_direct_pdata *pd;
	struct viw_qp *qp;
	bool accept = false;
	u16 len;

	pd = viw_cep_direct_pdata(cep, false, &len);
	if (!dd || !pd || len < sizeof(*pd) || !viw_direct_pdata_ok(pd) ||
	    kernel_getpeername(cep->sock, (struct sockaddr *)&cep->direct_peer) < 0) {
		viw_cep_direct_reject(cep);
		return;
	}
	cep->direct_src = be32_to_cpu(pd->src_qpn);
	cep->direct_dst = be32_to_cpu(pd->dst_qpn);
	qp = viw_qp_lookup(cep->vdev, cep->direct_dst);
	if (!qp) {
		viw_cep_direct_reject(cep);
		return;
	}

	mutex_lock(&dd->lock);
	if (viw_direct_match(qp, cep)) {
		accept = true;
		qp->direct->taking = true;
	} else if (viw_direct_may_wait(qp, cep) &&
		   dd->num_pending < VIW_DIRECT_MAX_PENDING) {
		/* The QP is not in RTR yet: the request waits for it. */
		viw_cep_direct_hold(cep, VIW_IB_WAIT_MAX);
		viw_cep_get(cep);
		list_add_tail(&cep->pend_entry, &dd->pending);
		dd->num_pending++;
		viw_qp_put(qp);
		qp = NULL;
	}
	mutex_unlock(&dd->lock);
	if (accept) {
		viw_cep_direct_hold(cep, VIW_IB_WAIT_MAX);
		viw_direct_take(qp, cep);
	} else if (qp) {
		viw_qp_put(qp);
		viw_cep_direct_reject(cep);
	}
}

/*
 * Passive @qp reached RTR (@start), or lost a stream its peer dropped and
 * waits for the next: take a request that waits for it.
 *
 * The peer QP may have asked twice: it was reset and connects again, and
 * waits on its newest request.  The list is in the order the CEPs' work
 * items read the requests, which two CPUs may swap, so the last one is
 * only likely to be the newest.  It is taken, and the others wait on: the
 * peer's reset of the attempt it dropped ends that one (pruned), and if
 * the one taken was the dropped attempt, its accept fails or its stream
 * is reset unused, and the QP takes the next (viw_direct_lost()).
 */
static void viw_direct_take_pending(struct viw_qp *qp, bool start)
{
	struct viw_direct_dev *dd = qp->vdev->direct;
	struct viw_cep *cep, *next, *found = NULL;
	LIST_HEAD(reject);

	if (!dd)
		return;
	mutex_lock(&dd->lock);
	if (start)
		qp->direct->accepting = true;
	viw_direct_prune(dd);
	list_for_each_entry_safe(cep, next, &dd->pending, pend_entry) {
		if (cep->direct_dst != qp->ibqp.qp_num)
			continue;
		if (viw_direct_match(qp, cep)) {
			found = cep;
			continue;
		}
		/*
		 * One the QP cannot take now waits on if it may (for a
		 * stream or an accept to end, or for the QP to reach RTR
		 * again); another peer naming this QP is refused.
		 */
		if (viw_direct_may_wait(qp, cep))
			continue;
		list_move_tail(&cep->pend_entry, &reject);
		dd->num_pending--;
	}
	if (found) {
		list_del_init(&found->pend_entry);
		dd->num_pending--;
		qp->direct->taking = true;
	}
	mutex_unlock(&dd->lock);

	list_for_each_entry_safe(cep, next, &reject, pend_entry) {
		list_del_init(&cep->pend_entry);
		viw_direct_reject_unlocked(cep);
	}
	if (!found)
		return;
	viw_qp_get(qp);
	mutex_lock(&found->lock);
	viw_direct_take(qp, found);
	mutex_unlock(&found->lock);
	viw_cep_put(found);
}

static void viw_direct_retake(struct work_struct *work)
{
	struct viw_direct_qp *dq = container_of(work, struct viw_direct_qp,
						retake);

	viw_direct_take_pending(dq->qp, false);
}

/*
 * From the CM: @qp has no stream any more.  If its peer dropped it and
 * connects again, that request may be waiting already: take it, from a
 * work item, without the old CEP's lock.
 */
static void viw_direct_detached(struct viw_qp *qp)
{
	if (READ_ONCE(qp->peer_retrying))
		schedule_work(&qp->direct->retake);
}

/* ---- active side ----------------------------------------------------------- */

static int viw_direct_active_start(struct viw_qp *qp)
{
	struct viw_direct_qp *dq = qp->direct;
	struct net *net = dev_net(qp->vdev->netdev);
	struct viw_direct_pdata pd;
	struct socket *sock;
	int rv;

	/* A user socket: it holds the namespace while it lives. */
	rv = __sock_create(net, dq->raddr.ss_family, SOCK_STREAM, IPPROTO_TCP,
			   &sock, 0);
	if (rv)
		return rv;
	viw_direct_fill(&pd, qp->ibqp.qp_num, qp->ib.dest_qp_num);
	rv = viw_cep_direct_connect(qp, &viw_direct_owner, sock, &dq->laddr,
				    &dq->raddr, viw_sa_len(&dq->raddr), &pd,
				    sizeof(pd), viw_direct_bound(&qp->ib),
				    &qp->connecting);
	ibdev_dbg(qp->ibqp.device, "QP %u: connecting to %pISpc QP %u: %d\n",
		  qp->ibqp.qp_num, &dq->raddr, qp->ib.dest_qp_num, rv);
	return rv;
}

/**
 * viw_direct_start - start connecting or accepting, once, after the
 *	modify_qp that moved @qp to RTR (not under state_lock)
 * @qp: the QP
 */
void viw_direct_start(struct viw_qp *qp)
{
	struct viw_direct_qp *dq = qp->direct;
	int rv;

	viw_direct_arm(dq);
	if (!dq->active) {
		viw_direct_take_pending(qp, true);
		return;
	}
	rv = viw_direct_active_start(qp);
	if (rv)
		viw_direct_fail(qp, NULL, rv);
}

/* Reply of the acceptor: the marker and both QP numbers, swapped. */
static int viw_direct_check_reply(struct viw_cep *cep)
{
	const struct viw_direct_pdata *pd;
	struct viw_qp *qp = cep->qp;
	u16 len;

	/* An attempt the QP dropped (reset, connecting again) ends here. */
	if (READ_ONCE(qp->connecting) != cep)
		return -ECONNABORTED;
	pd = viw_cep_direct_pdata(cep, true, &len);
	if (!pd || len < sizeof(*pd) || !viw_direct_pdata_ok(pd) ||
	    be32_to_cpu(pd->src_qpn) != qp->ib.dest_qp_num ||
	    be32_to_cpu(pd->dst_qpn) != qp->ibqp.qp_num) {
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: the peer is no viw modify_qp acceptor\n",
				       qp->ibqp.qp_num);
		return -ECONNREFUSED;
	}
	/* before viw_qp_connect() gives the QP its stream */
	WRITE_ONCE(qp->peer_imm, viw_direct_peer_imm(pd));
	WRITE_ONCE(qp->peer_ack, viw_direct_peer_ack(pd));
	return 0;
}

static const struct viw_cep_owner viw_direct_owner = {
	.request = viw_direct_request,
	.check_reply = viw_direct_check_reply,
	.failed = viw_direct_failed,
	.lost = viw_direct_lost,
	.detached = viw_direct_detached,
};

/* destroy_qp, after the QP was released by its connection. */
void viw_direct_qp_destroy(struct viw_qp *qp)
{
	struct viw_direct_qp *dq = qp->direct;

	if (!dq)
		return;
	cancel_delayed_work_sync(&dq->deadline);
	cancel_work_sync(&dq->retake);
	if (qp->connecting)
		viw_cep_put(qp->connecting);
	qp->connecting = NULL;
	qp->direct = NULL;
	kfree(dq);
}

/* ---- the device's listener ------------------------------------------------ */

static int viw_direct_listen_sock(struct viw_device *vdev, int family,
				  struct socket **out)
{
	struct net_device *ndev = vdev->netdev;
	struct sockaddr_storage ss = {};
	struct socket *sock;
	int rv;

	/*
	 * A kernel socket holds no reference on the namespace, so that the
	 * namespace can go away: the netdev's unregistration, which comes
	 * first, closes the listener (viw_direct_remove_device).
	 */
	rv = sock_create_kern(dev_net(ndev), family, SOCK_STREAM, IPPROTO_TCP,
			      &sock);
	if (rv)
		return rv;
	sock_set_reuseaddr(sock->sk);
	sock->sk->sk_bound_dev_if = ndev->ifindex;
	ss.ss_family = family;
	if (family == AF_INET6) {
		/* IPv4 peers too, as mapped addresses. */
		lock_sock(sock->sk);
		sock->sk->sk_ipv6only = false;
		release_sock(sock->sk);
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(VIW_DIRECT_PORT);
	} else {
		((struct sockaddr_in *)&ss)->sin_port = htons(VIW_DIRECT_PORT);
	}
	rv = kernel_bind(sock, (struct sockaddr *)&ss, viw_sa_len(&ss));
	if (!rv)
		rv = kernel_listen(sock, VIW_DIRECT_MAX_PENDING);
	if (rv) {
		sock_release(sock);
		return rv;
	}
	*out = sock;
	return 0;
}

int viw_direct_add_device(struct viw_device *vdev)
{
	struct viw_direct_dev *dd;
	struct socket *sock;
	int rv;

	dd = kzalloc(sizeof(*dd), GFP_KERNEL);
	if (!dd)
		return -ENOMEM;
	mutex_init(&dd->lock);
	INIT_LIST_HEAD(&dd->pending);
	rv = viw_direct_listen_sock(vdev, AF_INET6, &sock);
	if (rv)
		rv = viw_direct_listen_sock(vdev, AF_INET, &sock);
	if (!rv) {
		dd->listener = viw_cep_direct_listen(vdev, sock,
						     &viw_direct_owner);
		if (!dd->listener) {
			sock_release(sock);
			rv = -ENOMEM;
		}
	}
	if (rv)
		ibdev_warn(&vdev->ibdev,
			   "no listener on port %u (%d): modify_qp connections to this device fail\n",
			   VIW_DIRECT_PORT, rv);
	vdev->direct = dd;
	return 0;
}

void viw_direct_remove_device(struct viw_device *vdev)
{
	struct viw_direct_dev *dd = vdev->direct;
	struct viw_cep *cep, *next, *lcep;
	LIST_HEAD(drop);

	if (!dd)
		return;
	mutex_lock(&dd->lock);
	lcep = dd->listener;
	dd->listener = NULL;
	mutex_unlock(&dd->lock);
	/* First the listener: after it, no request reaches dd. */
	if (lcep)
		viw_cep_direct_unlisten(lcep);
	mutex_lock(&dd->lock);
	list_splice_init(&dd->pending, &drop);
	dd->num_pending = 0;
	mutex_unlock(&dd->lock);
	list_for_each_entry_safe(cep, next, &drop, pend_entry) {
		list_del_init(&cep->pend_entry);
		viw_direct_reject_unlocked(cep);
	}
}

void viw_direct_free_device(struct viw_device *vdev)
{
	struct viw_direct_dev *dd = vdev->direct;

	if (!dd)
		return;
	viw_direct_remove_device(vdev);
	mutex_destroy(&dd->lock);
	vdev->direct = NULL;
	kfree(dd);
}
