/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: queue pairs, their work queues, and the QP layer's interface to
 * the connection managers above it and the engines below.
 */
#ifndef VIW_QP_H
#define VIW_QP_H

#include "viw.h"
#include "viw_mem.h"
#include "viw_queue.h"

/* wq->status of an SQE the engine has taken and not finished */
#define VIW_WQE_PENDING		0xff

/*
 * A work queue of a QP: the ring shared with the process and a shadow
 * slot per ring slot, for what the kernel keeps of each WQE it took.  The
 * kernel reads a WQE from the ring exactly once, into its own memory (the
 * transmit engine's SQE, the receive engine's RQE or the RQ's shadow), and
 * validates that copy (viw_wq.c).  Slots [done, fetch) are owned by the
 * kernel; ctrl->cons mirrors done.
 */
struct viw_wq {
	struct viw_ring ring;
	void *shadow;			/* per slot: what the kernel keeps */
	u32 kept;			/* bytes of it a slot */
	u8 *status;			/* per slot: error found by validation */
	u32 fetch;			/* next slot to copy from the ring */
	u32 done;			/* next slot to complete */
	u32 next;			/* RQ: next slot for an incoming SEND */
	u32 max_sge;
	bool failed;			/* SQ: a WQE failed, flush the later */
	spinlock_t lock;
	/* a kernel QP's producer side (viw_kverbs.c) */
	spinlock_t post_lock;
	u32 prod;
};

/* What MPA negotiated for a connection (viw_qp_connect). */
struct viw_qp_conn {
	bool crc;
	u32 mulpdu;
	u8 ord;
	u8 ird;
	u8 rtr_expect;			/* passive p2p: RTR type (VIW_RTR_*) */
	u8 rtr_send;			/* active p2p: RTR type to send first */
};

struct viw_cep;
struct viw_direct_qp;
struct viw_engine;

/*
 * Attributes of the InfiniBand transport that mean nothing over TCP.
 * modify_qp accepts them and query_qp reports them back as they were set;
 * the address vector and the destination QP number also say whom a
 * modify_qp connection goes to (viw_direct.c).
 */
struct viw_qp_ib_attrs {
	struct ib_global_route grh;	/* without sgid_attr */
	u8 ah_flags;
	u8 sl;
	u8 static_rate;
	u8 port_num;
	u8 path_mtu;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;		/* as set: the engine uses qp->ord */
	u8 max_dest_rd_atomic;		/* as set: the engine uses qp->ird */
	u32 dest_qp_num;
	u32 rq_psn;
	u32 sq_psn;
};

/*
 * The waits the InfiniBand attributes timeout and retry_cnt bound
 * (viw_qp_ib_retry_ns()): without a timeout, which InfiniBand takes as
 * "for ever", viw waits VIW_IB_WAIT_DEFAULT, and never more than
 * VIW_IB_WAIT_MAX.
 */
#define VIW_IB_WAIT_DEFAULT	(15 * HZ)
#define VIW_IB_WAIT_MAX		(60 * HZ)

/*
 * Lock order, outermost first: a lock may be taken while one above it on
 * its line is held, never the other way round.
 *
 *   cep->lock (viw_cm.h) -> qp->state_lock -> qp->tx_lock -> socket lock
 *	viw_iw_accept(), viw_cep_reply_received() -> viw_qp_connect() ->
 *	viw_tx_send_rtr();
 *	viw_cep_close() -> viw_qp_conn_lost(), viw_qp_stream_whole(),
 *	viw_qp_disconnect();
 *	viw_direct_lost() -> viw_qp_quiet_close(), viw_qp_await_acks(),
 *	which never wait for a TX that waits in a full socket
 *	(viw_qp_lock_tx_bounded()); the TX sends under tx_lock
 *   cep->lock -> qp->tx_lock	viw_cep_local_close(): viw_qp_llp_close()
 *   cep->lock -> socket lock	viw_cep_kick_rx(), releasing the socket
 *   accepted cep->lock -> its listener's cep->lock	(viw_cm.c)
 *   cep->lock -> dd->lock	viw_direct_request() (viw_direct.c)
 *   qp->state_lock -> sq/rq.lock -> cq->lock	the flush on entering ERROR
 *   qp->tx_lock -> sq.lock -> cq->lock	the TX takes and completes SQEs
 *   qp->state_lock, qp->tx_lock -> rd_lock	viw_rd_reset(), viw_orq_push()
 *   viw_newlink_lock -> viw_devices_lock	(viw_main.c)
 *   poller->lock -> qp->state_lock, qp->tx_lock	the poller's doorbells
 *
 * Two tx_locks are never held at once (struct viw_tx_chain, viw_tx.c).
 *
 * The spinlocks (rd_lock, the wq, srq, cq and window locks, mac_lock,
 * viw_cep_list_lock) are leaves: only cq->lock is ever taken beneath one.  The receive engine runs in softirq under the
 * socket's sk_callback_lock and takes only spinlocks; it reaches ERROR
 * through viw_qp_fail(), which defers to a work item.  The QP never takes
 * cep->lock: it tells the CEP what happened with viw_cep_post_event().
 */
struct viw_qp {
	struct ib_qp ibqp;
	struct viw_device *vdev;
	struct viw_ucontext *uctx;	/* the creator's context */
	u64 uid;			/* never reused, unlike qp_num */
	struct viw_cq *scq;
	struct viw_cq *rcq;
	struct viw_srq *srq;
	struct viw_wq sq;
	struct viw_wq rq;		/* unused when srq is set */

	struct mutex state_lock;	/* serialises state transitions */
	enum ib_qp_state state;
	int access;			/* IB_ACCESS_REMOTE_* allowed */
	u32 max_inline;
	u8 ord;
	u8 ird;
	bool sq_sig_all;

	refcount_t ref;			/* iw_cm and the data path */
	atomic_t iw_handover;		/* refs iw_get_qp took for iw_add_ref */
	struct completion released;

	/* The connection, from RTS on (viw_qp_connect). */
	struct viw_cep *cep;		/* referenced */
	struct socket *sock;
	bool crc;			/* MPA CRC in use */
	u32 mulpdu;
	u8 rtr_expected;		/* passive p2p: RTR type still due */

	struct viw_qp_ib_attrs ib;
	/* Set at INIT->RTR with an address vector: modify_qp connects it. */
	struct viw_direct_qp *direct;
	/* The CEP making that connection, referenced (viw_direct.c). */
	struct viw_cep *connecting;
	bool direct_started;		/* viw_direct_start() was called */
	/*
	 * Its stream ended by the peer: by a FIN with nothing in flight
	 * (quietly), or on an acknowledged connection with WRs in flight.
	 */
	bool peer_closed;
	/*
	 * Then the WRs the peer never acknowledged fail when an InfiniBand
	 * requester would stop retrying (viw_qp_await_acks()).
	 */
	struct delayed_work peer_wait;
	/*
	 * modify_qp acceptor: the peer dropped the stream before it sent
	 * anything on it, and the QP waits for its next attempt.
	 */
	bool peer_retrying;
	/* The peer is a viw that agreed on Immediate Data (viw_direct.c). */
	bool peer_imm;
	/* ... and on acknowledgements: SENDs and WRITEs complete on them */
	bool peer_ack;

	/* transmit engine */
	struct work_struct tx_work;
	struct mutex tx_lock;		/* serialises writes to the socket */
	bool tx_direct;			/* under tx_lock: caller's context */
	/* the work item waits in the socket for the peer to read */
	bool tx_waiting_room;
	/* the ORQ and IRQ (viw_read.c), and the TERMINATE fields below */
	spinlock_t rd_lock;
	/* the engines' own state (viw_engine.h), seen only by them */
	struct viw_engine *eng;

	struct work_struct err_work;	/* error found in softirq context */
	struct viw_term term;		/* TERMINATE to send, if pending */
	bool term_pending;
	bool term_sent;
	/* the TERMINATE went out or cannot any more; ERROR was reached */
	struct completion term_done;
};

static inline struct viw_qp *to_viw_qp(struct ib_qp *qp)
{
	return container_of(qp, struct viw_qp, ibqp);
}

/* A kernel consumer's QP: its rings are in kernel memory only. */
static inline bool viw_qp_is_kernel(const struct viw_qp *qp)
{
	return !qp->uctx;
}

/* viw_direct.c: connections made by modify_qp */
int viw_direct_modify(struct viw_qp *qp, struct ib_qp_attr *attr, int mask);
void viw_direct_prepare_reconnect(struct viw_qp *qp);
void viw_direct_qp_destroy(struct viw_qp *qp);
void viw_direct_start(struct viw_qp *qp);

/* viw_qp.c */
void viw_qp_init(struct viw_qp *qp);
int viw_qp_check_attr(struct viw_qp *qp, struct ib_qp_attr *attr, int mask);
void viw_qp_apply_attr(struct viw_qp *qp, struct ib_qp_attr *attr, int mask);
void viw_qp_enter_error(struct viw_qp *qp);
void viw_qp_conn_lost(struct viw_qp *qp);
void viw_qp_get(struct viw_qp *qp);
void viw_qp_put(struct viw_qp *qp);
struct viw_qp *viw_qp_lookup(struct viw_device *vdev, u32 qpn);
int viw_qp_connect(struct viw_qp *qp, struct viw_cep *cep,
		   struct socket *sock, const struct viw_qp_conn *conn);
void viw_qp_disconnect(struct viw_qp *qp);
bool viw_qp_llp_close(struct viw_qp *qp);
bool viw_qp_stream_whole(struct viw_qp *qp);
void viw_qp_fail(struct viw_qp *qp, const struct viw_term_cause *cause);
void viw_qp_terminated(struct viw_qp *qp, const struct viw_term_cause *cause);
bool viw_qp_term_sent(struct viw_qp *qp);
bool viw_qp_direct_error(struct viw_qp *qp, const struct viw_cep *attempt);
void viw_qp_rtr_received(struct viw_qp *qp);
void viw_qp_event(struct viw_qp *qp, enum ib_event_type type);
bool viw_qp_quiet_close(struct viw_qp *qp);
bool viw_qp_await_retry(struct viw_qp *qp);
bool viw_qp_await_acks(struct viw_qp *qp);
void viw_qp_stop_peer_wait(struct viw_qp *qp);
u64 viw_qp_ib_retry_ns(const struct viw_qp_ib_attrs *ib);
void viw_qp_poll_doorbells(struct viw_device *vdev);
void viw_qp_sq_doorbell(struct viw_qp *qp);
void viw_qp_rq_doorbell(struct viw_qp *qp);
void viw_qp_rq_kposted(struct viw_qp *qp);

/*
 * The QP's state as the engines see it, without state_lock: predicates on
 * one READ_ONCE of the state, inline so that the engines need not call up
 * into viw_qp.c for them.
 */

/* Connected, or in one of the states a connection leaves behind. */
static inline bool viw_qp_state_connected(enum ib_qp_state state)
{
	return state == IB_QPS_RTS || state == IB_QPS_SQD ||
	       state == IB_QPS_SQE;
}

/*
 * RX takes nothing while the consumer has the QP back (RESET, INIT, RTR),
 * except for a modify_qp connection, which may come up in RTR: an RTR QP
 * receives (viw_direct.c).
 */
static inline bool viw_qp_rx_open(struct viw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state == IB_QPS_RTR && READ_ONCE(qp->direct))
		return true;
	return viw_qp_state_connected(state) || state == IB_QPS_ERR;
}

/*
 * The transmit engine sends in RTS, and a modify_qp connection's QP also in
 * RTR.  iWARP has no RTR (RDMAC verbs go from IDLE to RTS), and the tools
 * that connect through modify_qp expect an RTR QP to answer READs, as an
 * InfiniBand responder does, and perftest's iWARP credit SENDs to leave a
 * receiver it never moves to RTS (viw_direct.c).
 */
static inline bool viw_qp_tx_open(struct viw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state == IB_QPS_RTR && READ_ONCE(qp->direct))
		return true;
	return state == IB_QPS_RTS;
}

/* viw_tx.c */
void viw_tx_qp_init(struct viw_qp *qp);
void viw_tx_kick(struct viw_qp *qp);
void viw_tx_kick_orq(struct viw_qp *qp);
void viw_tx_doorbell(struct viw_qp *qp, bool may_hand_off);
void viw_tx_abort(struct viw_qp *qp);
bool viw_tx_busy(struct viw_qp *qp);
int viw_tx_send_rtr(struct viw_qp *qp, u8 rtr);
void viw_tx_last_ack(struct viw_qp *qp);
bool viw_tx_write_owed(struct viw_qp *qp);

/* viw_rx.c */
void viw_rx_data_ready(struct viw_qp *qp, struct sock *sk);
void viw_rx_reset(struct viw_qp *qp);

/* viw_engine.c */
int viw_engine_alloc(struct viw_qp *qp);
void viw_engine_free(struct viw_qp *qp);
void viw_engine_stream_start(struct viw_qp *qp);

/* viw_read.c */
bool viw_orq_busy(struct viw_qp *qp);
void viw_rd_reset(struct viw_qp *qp);

/* viw_ack.c */
int viw_ack_alloc(struct viw_qp *qp, u32 sq_slots);
void viw_ack_reset(struct viw_qp *qp);

/* viw_wq.c: work queue processing */
int viw_sq_init(struct viw_wq *sq, u32 num_slots, u32 max_sge);
int viw_rq_init(struct viw_wq *rq, u32 num_slots, u32 max_sge);
void viw_wq_free(struct viw_wq *wq);
void viw_sq_flush(struct viw_qp *qp);
void viw_rq_flush(struct viw_qp *qp);
void viw_sq_discard(struct viw_qp *qp);
void viw_rq_discard(struct viw_qp *qp);
void viw_wq_set_kflags(struct viw_wq *wq, u32 kflags);
bool viw_sq_has_posted(struct viw_qp *qp);
bool viw_sq_take(struct viw_qp *qp, struct viw_sqe *sqe);
void viw_sq_complete(struct viw_qp *qp, u32 index, u8 status);
void viw_sq_fail_oldest(struct viw_qp *qp, u8 status);
void viw_sq_retries_exceeded(struct viw_qp *qp);
bool viw_sq_idle(struct viw_qp *qp);
int viw_rq_take(struct viw_qp *qp, struct viw_rqe *rqe, u32 *index);
int viw_rq_take_all(struct viw_qp *qp);
void viw_rq_complete(struct viw_qp *qp, u32 index,
		     const struct viw_cqe_info *info);

/*
 * The transmit engine runs (@busy) or stopped: new SQEs need no doorbell
 * while it runs (struct viw_ring_ctrl, no_doorbell).  This and the next
 * are inline: every lone post's run calls each twice.
 */
static inline void viw_sq_set_busy(struct viw_qp *qp, bool busy)
{
	if (qp->sq.shadow)
		viw_rp_no_doorbell_set(qp->sq.ring.ctrl, busy);
}

/*
 * A look at the SQ's fetch slot without sq.lock, for the transmit engine
 * (tx_lock held), which alone moves fetch outside ERROR.  It may miss a
 * WQE published meanwhile, as a look under the lock a moment earlier
 * would, and it leaves the room to viw_sq_take(): a guess, which saves a
 * lock where most looks find nothing, and which the engine's last look
 * before it stops (viw_sq_has_posted()) makes good.
 */
static inline bool viw_sq_posted_hint(struct viw_qp *qp)
{
	struct viw_wq *sq = &qp->sq;

	return viw_rp_wqe_posted(viw_rp_wqe_flags(viw_ring_slot(&sq->ring,
						READ_ONCE(sq->fetch))));
}

/* viw_kverbs.c: the post verbs of kernel consumers */
int viw_kpost_send(struct viw_qp *qp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int viw_kpost_recv(struct viw_qp *qp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);

#endif /* VIW_QP_H */
