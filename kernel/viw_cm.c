// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: connection management, the provider side of iw_cm.
 *
 * A connection endpoint (CEP) owns one TCP socket.  Socket callbacks only
 * record what happened (enum viw_cep_event_bit) and queue the CEP's work
 * item; the work item does everything else under the CEP's mutex, in
 * process context: MPA request/reply exchange, iw_cm upcalls, closing.
 * Once a connection is established the QP's receive engine takes over
 * data_ready, and the CEP only watches for the close.
 *
 * Upcalls: CONNECT_REQUEST (passive), CONNECT_REPLY (active, once, with
 * the result), ESTABLISHED (passive, after accept), DISCONNECT (the peer
 * closed first) and CLOSE (once, for every connection that reached
 * ESTABLISHED or a successful CONNECT_REPLY).  CLOSE is never sent while
 * the iw_cm id is still connecting.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/nsproxy.h>
#include <linux/seq_file.h>
#include <linux/tcp.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "viw_qp.h"
#include "viw_cm.h"
#include "viw_trace.h"

/* How long connection setup (TCP connect and MPA exchange) may take. */
#define VIW_MPA_TIMEOUT		(10 * HZ)
/* How long a connection request waits for accept or reject. */
#define VIW_ANSWER_TIMEOUT	(60 * HZ)
/* How long a graceful close waits for the peer's FIN before a reset. */
#define VIW_CLOSE_TIMEOUT	(5 * HZ)
/* How soon a close tries its FIN again while an FPDU is being sent. */
#define VIW_FIN_RETRY		msecs_to_jiffies(10)
/*
 * iw_cm passes private data lengths to the consumer in a u8 (struct
 * iw_cm_event): longer private data would arrive cut, so it is refused
 * both ways.
 */
#define VIW_CM_MAX_PDATA	U8_MAX

static struct workqueue_struct *viw_cm_wq;

/*
 * Every CEP from allocation to release.  A passive CEP that waits for its
 * MPA request belongs to no device and no cm_id; only this list lets the
 * end of its listener, and module exit, find it.
 */
static LIST_HEAD(viw_cep_list);
static DEFINE_SPINLOCK(viw_cep_list_lock);
static int viw_cep_live;

/*
 * A child CEP takes its listener's lock while holding its own, so the
 * listeners' locks are a lock class of their own.
 */
static struct lock_class_key viw_listener_lock_key;

/*
 * Local MPA preferences, shared by all devices and tunable in debugfs.
 * Defaults match siw: MPA v2, CRC only if the peer asks, no RTR.
 */
static struct viw_mpa_prefs viw_mpa_prefs = {
	.revision = 2,
	.crc = false,
	.p2p = false,
	.rtr = VIW_RTR_WRITE0 | VIW_RTR_READ0 | VIW_RTR_SEND0,
};

struct viw_mpa_prefs *viw_cm_prefs(void)
{
	return &viw_mpa_prefs;
}

/*
 * debugfs viw/ceps: the number of live CEPs, then one line for each:
 * its state, its role, and what it holds.  Every device has one
 * "direct-listener" (modify_qp connections, viw_direct.c) while it lives.
 */
void viw_cm_show_ceps(struct seq_file *m)
{
	struct viw_cep *cep;
	unsigned long flags;

	spin_lock_irqsave(&viw_cep_list_lock, flags);
	seq_printf(m, "%d\n", viw_cep_live);
	list_for_each_entry(cep, &viw_cep_list, cep_entry)
		seq_printf(m, "state %d %s sock %d qp %d cm_id %d refs %u\n",
			   cep->state, cep->active ? "active" :
			   cep->listener ? "passive" :
			   cep->direct ? "direct-listener" : "listener",
			   !!cep->sock, !!cep->qp, !!cep->cm_id,
			   kref_read(&cep->ref));
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
}

/*
 * TCP retransmissions of @vdev's live sockets.  A CEP clears its socket
 * pointer under viw_cep_list_lock before it releases the socket.
 */
u64 viw_cm_tcp_retrans(struct viw_device *vdev)
{
	struct viw_cep *cep;
	struct socket *sock;
	unsigned long flags;
	u64 sum = 0;

	spin_lock_irqsave(&viw_cep_list_lock, flags);
	list_for_each_entry(cep, &viw_cep_list, cep_entry) {
		sock = READ_ONCE(cep->sock);
		if (cep->vdev == vdev && sock)
			sum += READ_ONCE(tcp_sk(sock->sk)->total_retrans);
	}
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
	return sum;
}

static void viw_cep_work(struct work_struct *work);
static void viw_cep_timeout(struct work_struct *work);
static void viw_cep_direct_adopt(struct viw_cep *cep,
				 const struct viw_cep_owner *owner,
				 struct socket *nsock);
static void viw_cep_fin_retry(struct work_struct *work);

static struct viw_cep *viw_cep_alloc(struct viw_device *vdev)
{
	struct viw_cep *cep = kzalloc(sizeof(*cep), GFP_KERNEL);
	unsigned long flags;

	if (!cep)
		return NULL;
	kref_init(&cep->ref);
	mutex_init(&cep->lock);
	INIT_WORK(&cep->work, viw_cep_work);
	INIT_DELAYED_WORK(&cep->timer, viw_cep_timeout);
	INIT_DELAYED_WORK(&cep->fin_retry, viw_cep_fin_retry);
	INIT_LIST_HEAD(&cep->listen_entry);
	INIT_LIST_HEAD(&cep->pend_entry);
	cep->vdev = vdev;
	cep->state = VIW_CEP_IDLE;

	spin_lock_irqsave(&viw_cep_list_lock, flags);
	list_add_tail(&cep->cep_entry, &viw_cep_list);
	viw_cep_live++;
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
	return cep;
}

static void viw_cep_release(struct kref *ref)
{
	struct viw_cep *cep = container_of(ref, struct viw_cep, ref);
	unsigned long flags;

	WARN_ON_ONCE(cep->sock || cep->qp || cep->cm_id);
	spin_lock_irqsave(&viw_cep_list_lock, flags);
	list_del(&cep->cep_entry);
	viw_cep_live--;
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
	if (cep->listener)
		viw_cep_put(cep->listener);
	mutex_destroy(&cep->lock);
	kfree(cep);
}

void viw_cep_get(struct viw_cep *cep)
{
	kref_get(&cep->ref);
}

void viw_cep_put(struct viw_cep *cep)
{
	kref_put(&cep->ref, viw_cep_release);
}

/*
 * The next CEP on viw_cep_list after @prev (NULL: the first), referenced;
 * drops @prev's reference.  NULL at the end.
 */
static struct viw_cep *viw_cep_next(struct viw_cep *prev)
{
	struct list_head *pos = prev ? &prev->cep_entry : &viw_cep_list;
	struct viw_cep *cep = NULL;
	unsigned long flags;

	spin_lock_irqsave(&viw_cep_list_lock, flags);
	for (pos = pos->next; pos != &viw_cep_list; pos = pos->next) {
		cep = list_entry(pos, struct viw_cep, cep_entry);
		/* One being released is skipped. */
		if (kref_get_unless_zero(&cep->ref))
			break;
		cep = NULL;
	}
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
	if (prev)
		viw_cep_put(prev);
	return cep;
}

/* Record @ev and run the work item; safe from any context. */
void viw_cep_post_event(struct viw_cep *cep, enum viw_cep_event_bit ev)
{
	set_bit(ev, &cep->events);
	viw_cep_get(cep);
	if (!queue_work(viw_cm_wq, &cep->work))
		viw_cep_put(cep);
}

/* Each pending delayed work of a CEP holds a reference. */
static void viw_cep_arm(struct viw_cep *cep, struct delayed_work *dw,
			unsigned long timeout)
{
	viw_cep_get(cep);
	if (!mod_delayed_work(viw_cm_wq, dw, timeout))
		return;
	/* It was pending already: that queued instance holds a reference. */
	viw_cep_put(cep);
}

static void viw_cep_arm_timer(struct viw_cep *cep, unsigned long timeout)
{
	viw_cep_arm(cep, &cep->timer, timeout);
}

static void viw_cep_cancel_timer(struct viw_cep *cep)
{
	if (cancel_delayed_work(&cep->timer))
		viw_cep_put(cep);
	if (cancel_delayed_work(&cep->fin_retry))
		viw_cep_put(cep);
}

static void viw_cep_timeout(struct work_struct *work)
{
	struct viw_cep *cep = container_of(to_delayed_work(work),
					   struct viw_cep, timer);

	viw_cep_post_event(cep, VIW_CEP_EV_TIMEOUT);
	viw_cep_put(cep);
}

static void viw_cep_fin_retry(struct work_struct *work)
{
	struct viw_cep *cep = container_of(to_delayed_work(work),
					   struct viw_cep, fin_retry);

	viw_cep_post_event(cep, VIW_CEP_EV_CLOSE);
	viw_cep_put(cep);
}

/* ---- socket callbacks ---------------------------------------------------- */

static void viw_cm_data_ready(struct sock *sk)
{
	struct viw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep)
		viw_cep_post_event(cep, VIW_CEP_EV_READABLE);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void viw_cm_state_change(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct viw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		orig = cep->sk_state_change;
		switch (sk->sk_state) {
		case TCP_ESTABLISHED:
			viw_cep_post_event(cep, VIW_CEP_EV_CONNECTED);
			break;
		case TCP_CLOSE:
		case TCP_CLOSE_WAIT:
			viw_cep_post_event(cep, VIW_CEP_EV_PEER_CLOSED);
			break;
		default:
			break;
		}
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

static void viw_cep_save_callbacks(struct viw_cep *cep, struct sock *sk)
{
	cep->sk_state_change = sk->sk_state_change;
	cep->sk_data_ready = sk->sk_data_ready;
	cep->sk_write_space = sk->sk_write_space;
}

/* Take over @sock's callbacks for the MPA phase. */
static void viw_cep_attach(struct viw_cep *cep, struct socket *sock)
{
	struct sock *sk = sock->sk;

	/* The socket's callbacks hold the CEP until it is released. */
	viw_cep_get(cep);
	cep->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = cep;
	sk->sk_data_ready = viw_cm_data_ready;
	sk->sk_state_change = viw_cm_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Callbacks report what happens from now on.  A FIN or reset that came
 * before (to the listener's callbacks, which an accepted socket inherits,
 * or while no state acted on it) is found in the socket's state.
 */
static void viw_cep_check_peer_closed(struct viw_cep *cep)
{
	if (cep->sock &&
	    (READ_ONCE(cep->sock->sk->sk_shutdown) & RCV_SHUTDOWN))
		viw_cep_post_event(cep, VIW_CEP_EV_PEER_CLOSED);
}

/*
 * data_ready once the QP has the stream: the CEP hands the data to its
 * QP's receive engine, which knows nothing of CEPs.
 */
static void viw_cm_qp_data_ready(struct sock *sk)
{
	struct viw_cep *cep;

	read_lock(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep && cep->qp)
		viw_rx_data_ready(cep->qp, sk);
	read_unlock(&sk->sk_callback_lock);
}

/* Hand data_ready to the QP's receive engine. */
static void viw_cep_attach_qp(struct viw_cep *cep)
{
	struct sock *sk = cep->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = viw_cm_qp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Give the socket its callbacks back and shut it down.  Once the callback
 * lock was taken here, no callback of viw runs for it any more, and a
 * transmit engine blocked on it returns.
 */
static void viw_cep_shutdown_socket(struct viw_cep *cep, bool abort)
{
	struct socket *sock = cep->sock;
	struct sock *sk;

	if (!sock)
		return;
	sk = sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = cep->sk_data_ready;
	sk->sk_state_change = cep->sk_state_change;
	sk->sk_write_space = cep->sk_write_space;
	write_unlock_bh(&sk->sk_callback_lock);

	/*
	 * An abort must reach the peer as a reset, not a FIN: tcp_abort()
	 * sends the RST at once.  Either way a transmit engine blocked on the
	 * socket wakes up with an error.
	 */
	if (abort)
		tcp_abort(sk, ECONNRESET);
	else
		kernel_sock_shutdown(sock, SHUT_RDWR);
}

/*
 * Release the socket; a QP must no longer use it.  The caller holds its
 * own reference on the CEP: this drops the socket's.
 */
static void viw_cep_release_socket(struct viw_cep *cep, bool abort)
{
	struct socket *sock = cep->sock;
	unsigned long flags;

	if (!sock)
		return;
	viw_cep_shutdown_socket(cep, abort);
	/* Its retransmissions stay counted (viw_cm_tcp_retrans). */
	spin_lock_irqsave(&viw_cep_list_lock, flags);
	viw_count(cep->vdev, VIW_CNT_TCP_RETRANS_CLOSED,
		  READ_ONCE(tcp_sk(sock->sk)->total_retrans));
	WRITE_ONCE(cep->sock, NULL);
	spin_unlock_irqrestore(&viw_cep_list_lock, flags);
	sock_release(sock);
	viw_cep_put(cep);
}

/* Run the receive engine on bytes that arrived before it took over. */
static void viw_cep_kick_rx(struct viw_cep *cep)
{
	struct sock *sk = cep->sock->sk;

	lock_sock(sk);
	local_bh_disable();
	viw_cm_qp_data_ready(sk);
	local_bh_enable();
	release_sock(sk);
}

/* ---- upcalls --------------------------------------------------------------- */

static void viw_cep_addrs(struct viw_cep *cep, struct iw_cm_event *event)
{
	if (!cep->sock)
		return;
	kernel_getsockname(cep->sock, (struct sockaddr *)&event->local_addr);
	kernel_getpeername(cep->sock, (struct sockaddr *)&event->remote_addr);
}

/* Private data of the received frame, after the RFC 6581 words. */
static void viw_cep_pdata(struct viw_cep *cep, const struct viw_mpa_frame *f,
			  struct iw_cm_event *event)
{
	u16 skip = f->enhanced ? VIW_MPA_V2_EXT_LEN : 0;

	/* Only a whole frame's: mpa_buf may hold what was sent before. */
	if (cep->frame_done && f->pd_len > skip) {
		event->private_data = cep->mpa_buf + VIW_MPA_HDR_LEN + skip;
		event->private_data_len = f->pd_len - skip;
	}
}

static int viw_cm_upcall(struct viw_cep *cep, enum iw_cm_event_type type,
			 int status)
{
	struct iw_cm_id *cm_id = cep->cm_id;
	struct iw_cm_event event = {
		.event = type,
		.status = status,
		.ird = cep->ird,
		.ord = cep->ord,
	};

	viw_cep_addrs(cep, &event);
	trace_viw_cm_event(cep->vdev, cep, type, status);
	switch (type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		cm_id = cep->listener->cm_id;
		event.provider_data = cep;
		viw_cep_pdata(cep, &cep->req, &event);
		break;
	case IW_CM_EVENT_CONNECT_REPLY:
		viw_cep_pdata(cep, &cep->rep, &event);
		break;
	default:
		break;
	}
	if (!cm_id)
		return 0;
	return cm_id->event_handler(cm_id, &event);
}

static void viw_cep_drop_cm_id(struct viw_cep *cep)
{
	if (!cep->cm_id)
		return;
	cep->cm_id->provider_data = NULL;
	cep->cm_id->rem_ref(cep->cm_id);
	cep->cm_id = NULL;
}

static void viw_cep_drop_qp(struct viw_cep *cep)
{
	struct viw_qp *qp = cep->qp;

	if (!qp)
		return;
	viw_qp_disconnect(qp);
	if (cep->direct)
		cep->direct->detached(qp);
	viw_qp_put(qp);
	cep->qp = NULL;
}

/* Tear the connection down and, if it was ever up, say CLOSE once. */
static void viw_cep_close(struct viw_cep *cep, int status, bool abort)
{
	bool was_up = cep->state == VIW_CEP_ESTABLISHED ||
		      cep->state == VIW_CEP_CLOSING;

	viw_cep_cancel_timer(cep);
	if (cep->qp && cep->direct && was_up)
		cep->direct->lost(cep, cep->qp, !status && !abort);
	if (cep->qp)
		viw_qp_conn_lost(cep->qp);
	/* A FIN must not cut an FPDU: a stream that cannot end whole is reset. */
	if (!abort && cep->qp && !viw_qp_stream_whole(cep->qp))
		abort = true;
	if (was_up)
		trace_viw_cm_close(cep->vdev, cep, status, abort);
	viw_cep_shutdown_socket(cep, abort);
	viw_cep_drop_qp(cep);
	viw_cep_release_socket(cep, abort);
	cep->state = VIW_CEP_CLOSED;
	if (was_up && !cep->close_sent) {
		cep->close_sent = true;
		viw_cm_upcall(cep, IW_CM_EVENT_CLOSE, status);
	}
	viw_cep_drop_cm_id(cep);
}

/* ---- MPA exchange ---------------------------------------------------------- */

/* Read up to @want more bytes into mpa_buf.  Returns 0 when complete. */
static int viw_cep_recv(struct viw_cep *cep, u32 want)
{
	while (cep->mpa_len < want) {
		struct kvec iov = {
			.iov_base = cep->mpa_buf + cep->mpa_len,
			.iov_len = want - cep->mpa_len,
		};
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
		int rv;

		rv = kernel_recvmsg(cep->sock, &msg, &iov, 1, iov.iov_len,
				    MSG_DONTWAIT);
		if (rv == 0)
			return -ECONNRESET;
		if (rv < 0)
			return rv;
		cep->mpa_len += rv;
	}
	return 0;
}

/*
 * Read a whole MPA request or reply into mpa_buf and decode it.  Returns
 * 0 when complete, -EAGAIN while bytes are missing, or an error.
 */
static int viw_cep_read_frame(struct viw_cep *cep, bool reply,
			      struct viw_mpa_frame *frame)
{
	int rv;

	cep->frame_done = false;
	rv = viw_cep_recv(cep, VIW_MPA_HDR_LEN);
	if (rv)
		return rv;
	rv = viw_mpa_decode_hdr(cep->mpa_buf, VIW_MPA_HDR_LEN, reply, frame);
	if (rv)
		return rv;
	if (frame->pd_len - (frame->enhanced ? VIW_MPA_V2_EXT_LEN : 0) >
	    VIW_CM_MAX_PDATA)
		return -EPROTO;
	rv = viw_cep_recv(cep, VIW_MPA_HDR_LEN + frame->pd_len);
	if (rv)
		return rv;
	if (frame->enhanced)
		rv = viw_mpa_decode_v2(cep->mpa_buf + VIW_MPA_HDR_LEN,
				       frame->pd_len, frame);
	cep->frame_done = !rv;
	return rv;
}

static int viw_cep_send(struct viw_cep *cep, const void *buf, size_t len)
{
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int rv;

	rv = kernel_sendmsg(cep->sock, &msg, &iov, 1, len);
	if (rv < 0)
		return rv;
	return rv == len ? 0 : -EPIPE;
}

/* Send an MPA frame with the consumer's private data. */
static int viw_cep_send_frame(struct viw_cep *cep, struct viw_mpa_frame *f,
			      const void *pdata, u16 pdata_len)
{
	u8 *buf;
	int hlen, rv;

	buf = kmalloc(VIW_MPA_HDR_LEN + VIW_MPA_MAX_PDATA, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	hlen = viw_mpa_encode(buf, VIW_MPA_HDR_LEN + VIW_MPA_MAX_PDATA, f,
			      pdata_len);
	if (hlen < 0) {
		rv = hlen;
	} else {
		if (pdata_len)
			memcpy(buf + hlen, pdata, pdata_len);
		rv = viw_cep_send(cep, buf, hlen + pdata_len);
	}
	kfree(buf);
	return rv;
}

static u32 viw_cep_mulpdu(struct viw_cep *cep)
{
	return viw_mulpdu(tcp_sk(cep->sock->sk)->mss_cache);
}

/* ---- active side ----------------------------------------------------------- */

static void viw_cep_connect_failed(struct viw_cep *cep, int status)
{
	viw_cep_cancel_timer(cep);
	viw_cep_release_socket(cep, true);
	if (cep->qp) {
		if (cep->direct)
			cep->direct->failed(cep, cep->qp, status);
		viw_qp_put(cep->qp);
		cep->qp = NULL;
	}
	cep->state = VIW_CEP_CLOSED;
	viw_count(cep->vdev, VIW_CNT_CONN_FAILED, 1);
	viw_cm_upcall(cep, IW_CM_EVENT_CONNECT_REPLY, status);
	viw_cep_drop_cm_id(cep);
}

static void viw_cep_tcp_connected(struct viw_cep *cep)
{
	struct viw_mpa_frame *req = &cep->req;
	int rv;

	if (cep->state != VIW_CEP_CONNECTING)
		return;
	memset(req, 0, sizeof(*req));
	/* debugfs may hold anything: use only what is valid */
	req->revision = viw_mpa_prefs.revision == 1 ? 1 : 2;
	req->crc = viw_mpa_prefs.crc;
	if (req->revision == 2) {
		req->enhanced = true;
		req->ird = cep->ird;
		req->ord = cep->ord;
		req->rtr = viw_mpa_prefs.rtr &
			   (VIW_RTR_SEND0 | VIW_RTR_WRITE0 | VIW_RTR_READ0);
		req->p2p = viw_mpa_prefs.p2p && req->rtr;
		if (!req->p2p)
			req->rtr = 0;
	}
	rv = viw_cep_send_frame(cep, req, cep->mpa_buf, cep->mpa_len);
	cep->mpa_len = 0;
	if (rv) {
		viw_cep_connect_failed(cep, rv);
		return;
	}
	cep->state = VIW_CEP_MPA_REQ_SENT;
}

static void viw_cep_reply_received(struct viw_cep *cep)
{
	struct viw_qp_conn conn = {};
	int rv;

	rv = viw_cep_read_frame(cep, true, &cep->rep);
	if (rv == -EAGAIN)
		return;
	if (!rv)
		rv = viw_mpa_check_reply(&cep->req, &cep->rep);
	if (rv == -ECONNREFUSED)
		viw_count(cep->vdev, VIW_CNT_MPA_REJECT_RCVD, 1);
	if (!rv && cep->direct)
		rv = cep->direct->check_reply(cep);
	if (rv) {
		viw_cep_connect_failed(cep, rv == -ECONNREFUSED ?
					    -ECONNREFUSED : -ECONNRESET);
		return;
	}

	conn.crc = viw_mpa_crc_on(&cep->req, &cep->rep);
	conn.mulpdu = viw_cep_mulpdu(cep);
	conn.ord = cep->rep.enhanced ? min(cep->ord, cep->rep.ird) : cep->ord;
	conn.ird = cep->ird;
	/* viw_qp_connect sends the RTR before any WQE can go */
	if (cep->rep.enhanced && cep->rep.p2p)
		conn.rtr_send = cep->rep.rtr;
	rv = viw_qp_connect(cep->qp, cep, cep->sock, &conn);
	if (rv) {
		viw_cep_connect_failed(cep, rv);
		return;
	}
	viw_cep_attach_qp(cep);
	viw_cep_cancel_timer(cep);
	cep->state = VIW_CEP_ESTABLISHED;
	viw_cm_upcall(cep, IW_CM_EVENT_CONNECT_REPLY, 0);
	/* Bytes may have arrived behind the reply before the switch. */
	viw_cep_kick_rx(cep);
}

/* Bind @sock (the CEP's from now on) to @laddr and start connecting. */
static int viw_cep_connect_sock(struct viw_cep *cep, struct socket *sock,
				struct sockaddr *laddr, struct sockaddr *raddr,
				int alen)
{
	int rv;

	sock_set_reuseaddr(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	rv = kernel_bind(sock, laddr, alen);
	if (rv) {
		sock_release(sock);
		return rv;
	}
	viw_cep_save_callbacks(cep, sock->sk);
	viw_cep_attach(cep, sock);
	cep->state = VIW_CEP_CONNECTING;
	rv = kernel_connect(sock, raddr, alen, O_NONBLOCK);
	if (rv == -EINPROGRESS)
		return 0;
	if (!rv) {
		viw_cep_post_event(cep, VIW_CEP_EV_CONNECTED);
		return 0;
	}
	viw_cep_release_socket(cep, true);
	return rv;
}

/*
 * The namespace a connection is made in: the caller's for a process, as
 * for any socket it opens.  A kernel consumer connects from a work item
 * (rdma_cm's, rpciod), whose namespace is the initial one whatever the
 * ULP was set up in; its connection goes where the device's netdev is,
 * where rdma_cm found the route.  Not a kernel socket: it holds the
 * namespace, which must not go while the connection lives.
 */
static struct net *viw_cep_connect_net(struct viw_cep *cep)
{
	if (viw_qp_is_kernel(cep->qp))
		return dev_net(cep->vdev->netdev);
	return current->nsproxy->net_ns;
}

/*
 * A new socket of @cep's, bound to @laddr and connecting to @raddr.  With
 * @any_port, TCP chooses the port when it connects.
 */
static int viw_cep_sock_connect(struct viw_cep *cep, struct sockaddr *laddr,
				struct sockaddr *raddr, int alen, bool any_port)
{
	struct socket *sock;
	int rv;

	rv = __sock_create(viw_cep_connect_net(cep), raddr->sa_family,
			   SOCK_STREAM, IPPROTO_TCP, &sock, 0);
	if (rv)
		return rv;
	if (any_port)
		viw_sock_set_bind_address_no_port(sock->sk);
	return viw_cep_connect_sock(cep, sock, laddr, raddr, alen);
}

/* Clear the port of @ss; false if it had none. */
static bool viw_sa_clear_port(struct sockaddr_storage *ss)
{
	__be16 *port = ss->ss_family == AF_INET ?
		       &((struct sockaddr_in *)ss)->sin_port :
		       &((struct sockaddr_in6 *)ss)->sin6_port;
	bool had = *port;

	*port = 0;
	return had;
}

/*
 * rdma_cm reserves the consumer's local port in its own port space only,
 * so TCP may not let the connection have it: another socket holds the
 * port (bind: -EADDRINUSE), or a connection from it to the same peer is
 * in TIME_WAIT (connect: -EADDRNOTAVAIL).  The wire does not need that
 * port: the connection then takes one of TCP's choosing, and
 * CONNECT_REPLY reports the address used (viw_cep_addrs()).  iw_cm keeps
 * it as the mapped address, and the consumer keeps seeing rdma_cm's, as
 * under the iWARP port mapper.
 */
static int viw_cep_bind_connect(struct viw_cep *cep, struct iw_cm_id *cm_id)
{
	struct sockaddr *laddr = (struct sockaddr *)&cm_id->m_local_addr;
	struct sockaddr *raddr = (struct sockaddr *)&cm_id->m_remote_addr;
	int family = raddr->sa_family;
	int alen = family == AF_INET ? sizeof(struct sockaddr_in) :
				       sizeof(struct sockaddr_in6);
	struct sockaddr_storage any = {};
	int rv;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	rv = viw_cep_sock_connect(cep, laddr, raddr, alen, false);
	if (rv != -EADDRINUSE && rv != -EADDRNOTAVAIL)
		return rv;
	memcpy(&any, laddr, alen);
	if (!viw_sa_clear_port(&any))
		return rv;
	pr_debug("local port %pISp not free for TCP (%d): taking another\n",
		 laddr, rv);
	return viw_cep_sock_connect(cep, (struct sockaddr *)&any, raddr, alen,
				    true);
}

int viw_iw_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct viw_device *vdev = to_viw_dev(cm_id->device);
	struct viw_cep *cep;
	struct viw_qp *qp;
	int rv;

	if (param->private_data_len > VIW_CM_MAX_PDATA ||
	    param->ord > VIW_MAX_ORD || param->ird > VIW_MAX_IRD)
		return -EINVAL;
	qp = viw_qp_lookup(vdev, param->qpn);
	if (!qp)
		return -EINVAL;
	cep = viw_cep_alloc(vdev);
	if (!cep) {
		viw_qp_put(qp);
		return -ENOMEM;
	}

	mutex_lock(&cep->lock);
	cep->active = true;
	cep->qp = qp;
	cep->ird = param->ird;
	cep->ord = param->ord;
	/* mpa_buf holds the private data to send until the request goes. */
	memcpy(cep->mpa_buf, param->private_data, param->private_data_len);
	cep->mpa_len = param->private_data_len;
	cep->cm_id = cm_id;
	cm_id->add_ref(cm_id);
	cm_id->provider_data = cep;

	rv = viw_cep_bind_connect(cep, cm_id);
	if (rv) {
		viw_count(vdev, VIW_CNT_CONN_FAILED, 1);
		cep->qp = NULL;
		viw_qp_put(qp);
		viw_cep_drop_cm_id(cep);
		cep->state = VIW_CEP_CLOSED;
	} else {
		viw_cep_arm_timer(cep, VIW_MPA_TIMEOUT);
	}
	mutex_unlock(&cep->lock);
	viw_cep_put(cep);
	return rv;
}

/* ---- passive side ---------------------------------------------------------- */

/*
 * The request cannot go to the consumer: the listener is going away, or
 * iw_cm refused the upcall (-ENOMEM when the listen backlog's work
 * entries are used up).  iw_cm will never answer such a request.
 */
static void viw_cep_request_refused(struct viw_cep *cep, int rv)
{
	bool held = cep->state == VIW_CEP_MPA_REQ_RCVD;

	pr_debug("CEP %p: connection request dropped: %d\n", cep, rv);
	viw_cep_close(cep, 0, true);
	if (held)
		viw_cep_put(cep);	/* the reference taken for iw_cm */
}

static void viw_cep_request_received(struct viw_cep *cep)
{
	struct viw_cep *lcep = cep->listener;
	int rv;

	rv = viw_cep_read_frame(cep, false, &cep->req);
	if (rv == -EAGAIN)
		return;
	if (rv) {
		viw_count(cep->vdev, VIW_CNT_CONN_FAILED, 1);
		viw_cep_close(cep, 0, true);
		return;
	}
	/*
	 * The consumer gets the peer's IRD as its initiator depth and the
	 * peer's ORD as its responder resources (8 bits in iw_cm): what
	 * exceeds this device's limits is of no use to it.
	 */
	cep->ird = cep->req.enhanced ? min_t(u16, cep->req.ird, VIW_MAX_ORD) :
				       VIW_MAX_ORD;
	cep->ord = cep->req.enhanced ? min_t(u16, cep->req.ord, VIW_MAX_IRD) :
				       VIW_MAX_IRD;

	mutex_lock(&lcep->lock);
	if (lcep->direct && lcep->state == VIW_CEP_LISTENING) {
		/* The device stays while its listener does. */
		lcep->direct->request(cep);
	} else if (lcep->state == VIW_CEP_LISTENING && lcep->cm_id) {
		cep->state = VIW_CEP_MPA_REQ_RCVD;
		/* Held for iw_cm until it calls accept or reject. */
		viw_cep_get(cep);
		/* A consumer that never answers loses the connection. */
		viw_cep_arm_timer(cep, VIW_ANSWER_TIMEOUT);
		rv = viw_cm_upcall(cep, IW_CM_EVENT_CONNECT_REQUEST, 0);
	} else {
		rv = -ECONNREFUSED;
	}
	mutex_unlock(&lcep->lock);
	if (rv)
		viw_cep_request_refused(cep, rv);
}

static void viw_cep_accept_one(struct viw_cep *lcep, struct socket *nsock)
{
	struct viw_cep *cep = viw_cep_alloc(lcep->vdev);

	if (!cep) {
		sock_release(nsock);
		return;
	}
	viw_cep_get(lcep);
	cep->listener = lcep;
	if (lcep->direct)
		viw_cep_direct_adopt(cep, lcep->direct, nsock);
	/* The accepted socket inherited the listener's callbacks. */
	cep->sk_state_change = lcep->sk_state_change;
	cep->sk_data_ready = lcep->sk_data_ready;
	cep->sk_write_space = lcep->sk_write_space;
	tcp_sock_set_nodelay(nsock->sk);

	/*
	 * The listener's lock is held.  Nothing else can hold this new CEP's
	 * lock before its callbacks are installed; the subclass tells lockdep
	 * so, since the order is otherwise child before listener.
	 */
	mutex_lock_nested(&cep->lock, SINGLE_DEPTH_NESTING);
	viw_cep_attach(cep, nsock);
	cep->state = VIW_CEP_MPA_REQ_WAIT;
	viw_cep_arm_timer(cep, VIW_MPA_TIMEOUT);
	/* The request, even a FIN, may be in the socket already. */
	viw_cep_post_event(cep, VIW_CEP_EV_READABLE);
	viw_cep_check_peer_closed(cep);
	mutex_unlock(&cep->lock);
	viw_cep_put(cep);
}

static void viw_cep_listener_readable(struct viw_cep *lcep)
{
	struct socket *nsock;

	while (lcep->state == VIW_CEP_LISTENING &&
	       !kernel_accept(lcep->sock, &nsock, O_NONBLOCK))
		viw_cep_accept_one(lcep, nsock);
}

static int viw_cep_send_reply(struct viw_cep *cep,
			      struct iw_cm_conn_param *param)
{
	int rv;

	rv = viw_mpa_build_reply(&cep->req, &viw_mpa_prefs, param->ird,
				 param->ord, &cep->rep);
	if (rv)
		return rv;
	return viw_cep_send_frame(cep, &cep->rep, param->private_data,
				  param->private_data_len);
}

static int viw_cep_accept_qp(struct viw_cep *cep,
			     struct iw_cm_conn_param *param)
{
	struct viw_qp_conn conn = {
		.crc = viw_mpa_crc_on(&cep->req, &cep->rep),
		.mulpdu = viw_cep_mulpdu(cep),
		.ird = param->ird,
		.ord = cep->req.enhanced ? min_t(u32, param->ord, cep->req.ird) :
					   param->ord,
	};

	if (cep->rep.enhanced && cep->rep.p2p)
		conn.rtr_expect = cep->rep.rtr;
	return viw_qp_connect(cep->qp, cep, cep->sock, &conn);
}

/*
 * Whether @qp can take the connection, checked before the MPA reply tells
 * the peer it was accepted.  viw_qp_connect() checks again under the QP's
 * lock; only a consumer racing itself on the QP gets past this one.
 */
static bool viw_cep_qp_usable(struct viw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return (state == IB_QPS_INIT || state == IB_QPS_RTR) &&
	       !READ_ONCE(qp->cep);
}

int viw_iw_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct viw_cep *cep = cm_id->provider_data;
	struct viw_qp *qp;
	int rv;

	if (!cep || param->private_data_len > VIW_CM_MAX_PDATA ||
	    param->ord > VIW_MAX_ORD || param->ird > VIW_MAX_IRD)
		return -EINVAL;
	qp = viw_qp_lookup(cep->vdev, param->qpn);
	if (!qp)
		return -EINVAL;

	mutex_lock(&cep->lock);
	if (cep->state != VIW_CEP_MPA_REQ_RCVD || !cep->sock) {
		rv = -ECONNRESET;
		goto err;
	}
	viw_cep_cancel_timer(cep);
	if (!viw_cep_qp_usable(qp)) {
		/* The peer sees a reset, never an accepting reply. */
		rv = -EINVAL;
		goto err_close;
	}
	cep->qp = qp;
	rv = viw_cep_send_reply(cep, param);
	if (!rv)
		rv = viw_cep_accept_qp(cep, param);
	if (rv)
		goto err_close;

	cep->cm_id = cm_id;
	cm_id->add_ref(cm_id);
	viw_cep_attach_qp(cep);
	if (qp->rtr_expected) {
		cep->state = VIW_CEP_RTR_WAIT;
		viw_cep_arm_timer(cep, VIW_MPA_TIMEOUT);
	} else {
		cep->state = VIW_CEP_ESTABLISHED;
		viw_cm_upcall(cep, IW_CM_EVENT_ESTABLISHED, 0);
	}
	viw_cep_kick_rx(cep);
	/* A FIN that came with the request ends the connection now. */
	viw_cep_check_peer_closed(cep);
	mutex_unlock(&cep->lock);
	/* iw_cm is done with this CEP: drop the request's reference. */
	viw_cep_put(cep);
	return 0;

err_close:
	/* A failed accept makes no upcall: iw_cm reports the error. */
	viw_count(cep->vdev, VIW_CNT_CONN_FAILED, 1);
	viw_cep_release_socket(cep, true);
	cep->qp = NULL;
	cep->state = VIW_CEP_CLOSED;
err:
	mutex_unlock(&cep->lock);
	viw_qp_put(qp);
	cm_id->provider_data = NULL;
	viw_cep_put(cep);
	return rv;
}

int viw_iw_reject(struct iw_cm_id *cm_id, const void *pdata, u8 pdata_len)
{
	struct viw_cep *cep = cm_id->provider_data;

	if (!cep)
		return -EINVAL;
	mutex_lock(&cep->lock);
	viw_cep_cancel_timer(cep);
	if (cep->state == VIW_CEP_MPA_REQ_RCVD && cep->sock) {
		struct viw_mpa_frame rep = {
			.reply = true,
			.reject = true,
			.revision = cep->req.revision,
		};

		if (!viw_cep_send_frame(cep, &rep, pdata, pdata_len))
			viw_count(cep->vdev, VIW_CNT_MPA_REJECT_SENT, 1);
	}
	viw_cep_release_socket(cep, false);
	cep->state = VIW_CEP_CLOSED;
	mutex_unlock(&cep->lock);
	cm_id->provider_data = NULL;
	viw_cep_put(cep);
	return 0;
}

/* ---- listeners ------------------------------------------------------------- */

static bool viw_listen_addr_any(const struct sockaddr *laddr)
{
	if (laddr->sa_family == AF_INET)
		return ((const struct sockaddr_in *)laddr)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)laddr)->sin6_addr);
}

static int viw_listen_bind(struct viw_device *vdev, struct socket *sock,
			   struct iw_cm_id *cm_id)
{
	struct sockaddr *laddr = (struct sockaddr *)&cm_id->m_local_addr;
	int alen = sizeof(struct sockaddr_in);

	if (laddr->sa_family == AF_INET6) {
		alen = sizeof(struct sockaddr_in6);
		if (cm_id->afonly && ip6_sock_set_v6only(sock->sk))
			return -EINVAL;
	}
	/*
	 * A wildcard listen is made on every RDMA device; each viw device
	 * takes the connections of its own netdev only.
	 */
	if (viw_listen_addr_any(laddr))
		sock->sk->sk_bound_dev_if = vdev->netdev->ifindex;
	return kernel_bind(sock, laddr, alen);
}

/*
 * RDMA devices are shared by all network namespaces, but a viw device's
 * connections arrive in its netdev's namespace only.  A wildcard listen
 * from another namespace has nothing to listen for on this device.
 */
static bool viw_listen_foreign(struct viw_device *vdev, struct iw_cm_id *cm_id)
{
	return viw_listen_addr_any((struct sockaddr *)&cm_id->m_local_addr) &&
	       !net_eq(dev_net(vdev->netdev), current->nsproxy->net_ns);
}

/* Set up @cep as the listener on a new socket. */
static int viw_listen_start(struct viw_cep *cep, struct iw_cm_id *cm_id,
			    int backlog)
{
	struct socket *sock;
	int rv;

	rv = sock_create(cm_id->m_local_addr.ss_family, SOCK_STREAM,
			 IPPROTO_TCP, &sock);
	if (rv)
		return rv;
	sock_set_reuseaddr(sock->sk);
	rv = viw_listen_bind(cep->vdev, sock, cm_id);
	if (!rv)
		rv = kernel_listen(sock, backlog);
	if (rv) {
		sock_release(sock);
		return rv;
	}

	lockdep_set_class(&cep->lock, &viw_listener_lock_key);
	viw_cep_save_callbacks(cep, sock->sk);
	mutex_lock(&cep->lock);
	viw_cep_attach(cep, sock);
	cep->state = VIW_CEP_LISTENING;
	cep->cm_id = cm_id;
	cm_id->add_ref(cm_id);
	mutex_unlock(&cep->lock);
	return 0;
}

int viw_iw_create_listen(struct iw_cm_id *cm_id, int backlog)
{
	struct viw_device *vdev = to_viw_dev(cm_id->device);
	int family = cm_id->m_local_addr.ss_family;
	struct list_head *listeners;
	struct viw_cep *cep;
	int rv;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	listeners = kmalloc(sizeof(*listeners), GFP_KERNEL);
	if (!listeners)
		return -ENOMEM;
	INIT_LIST_HEAD(listeners);
	if (viw_listen_foreign(vdev, cm_id)) {
		cm_id->provider_data = listeners;
		return 0;
	}
	cep = viw_cep_alloc(vdev);
	if (!cep) {
		rv = -ENOMEM;
		goto err_free;
	}
	rv = viw_listen_start(cep, cm_id, backlog);
	if (rv)
		goto err_cep;

	list_add(&cep->listen_entry, listeners);
	cm_id->provider_data = listeners;
	/* Connections may be queued already. */
	viw_cep_post_event(cep, VIW_CEP_EV_READABLE);
	return 0;

err_cep:
	viw_cep_put(cep);
err_free:
	ibdev_info_ratelimited(cm_id->device, "listen on %pISpc failed: %d\n",
			       &cm_id->m_local_addr, rv);
	kfree(listeners);
	return rv;
}

/*
 * Close the children of @lcep that still wait for their MPA request: they
 * belong to no cm_id yet, and nothing else would stop their timers and
 * socket callbacks.  Children past that point belong to iw_cm.
 */
static void viw_listen_close_children(struct viw_cep *lcep)
{
	struct viw_cep *cep = NULL;

	while ((cep = viw_cep_next(cep))) {
		if (cep->listener != lcep)
			continue;
		mutex_lock(&cep->lock);
		if (cep->state == VIW_CEP_MPA_REQ_WAIT)
			viw_cep_close(cep, 0, true);
		mutex_unlock(&cep->lock);
	}
}

int viw_iw_destroy_listen(struct iw_cm_id *cm_id)
{
	struct list_head *listeners = cm_id->provider_data;
	struct viw_cep *cep, *next;

	if (!listeners)
		return 0;
	list_for_each_entry_safe(cep, next, listeners, listen_entry) {
		list_del_init(&cep->listen_entry);
		mutex_lock(&cep->lock);
		viw_cep_release_socket(cep, false);
		cep->state = VIW_CEP_CLOSED;
		viw_cep_drop_cm_id(cep);
		mutex_unlock(&cep->lock);
		/* After the listener's lock: a child takes it inside its own. */
		viw_listen_close_children(cep);
		viw_cep_put(cep);
	}
	kfree(listeners);
	cm_id->provider_data = NULL;
	return 0;
}

/* ---- the work item ---------------------------------------------------------- */

static void viw_cep_readable(struct viw_cep *cep)
{
	switch (cep->state) {
	case VIW_CEP_LISTENING:
		viw_cep_listener_readable(cep);
		break;
	case VIW_CEP_MPA_REQ_WAIT:
		viw_cep_request_received(cep);
		break;
	case VIW_CEP_MPA_REQ_SENT:
		viw_cep_reply_received(cep);
		break;
	default:
		break;
	}
}

/*
 * A passive connection that waits for its RTR ends before it got it:
 * accept returned 0, so iw_cm must see ESTABLISHED before the CLOSE.
 */
static void viw_cep_end_rtr_wait(struct viw_cep *cep)
{
	if (cep->state != VIW_CEP_RTR_WAIT)
		return;
	viw_cm_upcall(cep, IW_CM_EVENT_ESTABLISHED, 0);
	cep->state = VIW_CEP_ESTABLISHED;
}

/* The RTR never came (the peer closed, or time ran out). */
static void viw_cep_fail_rtr_wait(struct viw_cep *cep)
{
	viw_cep_end_rtr_wait(cep);
	viw_cep_close(cep, -ECONNRESET, true);
}

/* The peer sent FIN or RST. */
static void viw_cep_peer_closed(struct viw_cep *cep)
{
	int status = cep->sock && cep->sock->sk->sk_err ? -ECONNRESET : 0;

	/*
	 * The MPA frame may have come with the FIN, after a read of this
	 * pass found the socket empty: read what is there before acting on
	 * the FIN, so a peer that sends its request (or reply) and closes at
	 * once is answered.
	 */
	if (cep->state == VIW_CEP_MPA_REQ_WAIT ||
	    cep->state == VIW_CEP_MPA_REQ_SENT)
		viw_cep_readable(cep);

	switch (cep->state) {
	case VIW_CEP_CONNECTING:
	case VIW_CEP_MPA_REQ_SENT:
		viw_cep_connect_failed(cep, cep->sock && cep->sock->sk->sk_err ?
					    -cep->sock->sk->sk_err :
					    -ECONNRESET);
		break;
	case VIW_CEP_MPA_REQ_WAIT:
		viw_cep_close(cep, 0, true);
		break;
	case VIW_CEP_MPA_REQ_RCVD:
		/*
		 * A FIN is acted on once the consumer accepted (the peer may
		 * still read our reply); a reset ends the request now, and
		 * accept or reject finds the socket gone.
		 */
		if (cep->sock && cep->sock->sk->sk_state == TCP_CLOSE)
			viw_cep_release_socket(cep, true);
		break;
	case VIW_CEP_RTR_WAIT:
		viw_cep_fail_rtr_wait(cep);
		break;
	case VIW_CEP_ESTABLISHED:
		viw_cm_upcall(cep, IW_CM_EVENT_DISCONNECT, 0);
		viw_cep_close(cep, status, status != 0);
		break;
	case VIW_CEP_CLOSING:
		viw_cep_close(cep, status, status != 0);
		break;
	default:
		break;
	}
}

static void viw_cep_timed_out(struct viw_cep *cep)
{
	switch (cep->state) {
	case VIW_CEP_CONNECTING:
	case VIW_CEP_MPA_REQ_SENT:
		viw_cep_connect_failed(cep, -ETIMEDOUT);
		break;
	case VIW_CEP_MPA_REQ_WAIT:
		viw_cep_close(cep, 0, true);
		break;
	case VIW_CEP_MPA_REQ_RCVD:
		/* accept or reject will find the socket gone */
		viw_cep_release_socket(cep, true);
		break;
	case VIW_CEP_RTR_WAIT:
		viw_cep_fail_rtr_wait(cep);
		break;
	case VIW_CEP_CLOSING:
		viw_cep_close(cep, -ETIMEDOUT, true);
		break;
	default:
		break;
	}
}

/*
 * The consumer started a graceful close: send the FIN once the transmit
 * engine is between FPDUs.  The close timer runs from the request on, so
 * a peer that stops reading (the engine stays blocked in an FPDU) gets a
 * reset after VIW_CLOSE_TIMEOUT, which also unblocks the engine.
 */
static void viw_cep_local_close(struct viw_cep *cep)
{
	if (cep->state == VIW_CEP_ESTABLISHED) {
		cep->state = VIW_CEP_CLOSING;
		cep->fin_pending = true;
		viw_cep_arm_timer(cep, VIW_CLOSE_TIMEOUT);
	}
	if (cep->state != VIW_CEP_CLOSING || !cep->fin_pending)
		return;
	if (!viw_qp_llp_close(cep->qp)) {
		viw_cep_arm(cep, &cep->fin_retry, VIW_FIN_RETRY);
		return;
	}
	cep->fin_pending = false;
}

/*
 * The QP went to ERROR.  If it told the peer why with a TERMINATE, the
 * stream ends with a FIN so that the TERMINATE is delivered; otherwise it
 * is reset.
 */
static void viw_cep_local_abort(struct viw_cep *cep)
{
	/*
	 * A modify_qp connection has no disconnect of its own: its consumer
	 * ends it with ERROR or destroy_qp, right after its last completion
	 * (ibv_rc_pingpong does).  It ends with a FIN, which the peer gets
	 * after every byte sent before, as InfiniBand delivers the packets a
	 * QP sent before it was destroyed.
	 */
	bool reset = !(cep->qp && viw_qp_term_sent(cep->qp)) && !cep->direct;

	/* A modify_qp connection still being made ends with its QP. */
	if (cep->direct && (cep->state == VIW_CEP_CONNECTING ||
			    cep->state == VIW_CEP_MPA_REQ_SENT)) {
		viw_cep_connect_failed(cep, -ECONNABORTED);
		return;
	}
	viw_cep_end_rtr_wait(cep);
	switch (cep->state) {
	case VIW_CEP_ESTABLISHED:
	case VIW_CEP_CLOSING:
		viw_cep_close(cep, -ECONNRESET, reset);
		break;
	default:
		break;
	}
}

/* The peer reported an error with a TERMINATE and closes the stream. */
static void viw_cep_terminated(struct viw_cep *cep)
{
	viw_cep_end_rtr_wait(cep);
	switch (cep->state) {
	case VIW_CEP_ESTABLISHED:
		viw_cm_upcall(cep, IW_CM_EVENT_DISCONNECT, 0);
		fallthrough;
	case VIW_CEP_CLOSING:
		viw_cep_close(cep, -ECONNRESET, false);
		break;
	default:
		break;
	}
}

static void viw_cep_rtr_received(struct viw_cep *cep)
{
	if (cep->state != VIW_CEP_RTR_WAIT)
		return;
	viw_cep_cancel_timer(cep);
	cep->state = VIW_CEP_ESTABLISHED;
	viw_cm_upcall(cep, IW_CM_EVENT_ESTABLISHED, 0);
}

static void viw_cep_work(struct work_struct *work)
{
	struct viw_cep *cep = container_of(work, struct viw_cep, work);

	mutex_lock(&cep->lock);
	if (test_and_clear_bit(VIW_CEP_EV_CONNECTED, &cep->events))
		viw_cep_tcp_connected(cep);
	if (test_and_clear_bit(VIW_CEP_EV_READABLE, &cep->events))
		viw_cep_readable(cep);
	if (test_and_clear_bit(VIW_CEP_EV_RTR, &cep->events))
		viw_cep_rtr_received(cep);
	/* What the peer did is reported before what it made us do. */
	if (test_and_clear_bit(VIW_CEP_EV_TERMINATED, &cep->events))
		viw_cep_terminated(cep);
	if (test_and_clear_bit(VIW_CEP_EV_PEER_CLOSED, &cep->events))
		viw_cep_peer_closed(cep);
	if (test_and_clear_bit(VIW_CEP_EV_ABORT, &cep->events))
		viw_cep_local_abort(cep);
	if (test_and_clear_bit(VIW_CEP_EV_CLOSE, &cep->events))
		viw_cep_local_close(cep);
	if (test_and_clear_bit(VIW_CEP_EV_TIMEOUT, &cep->events))
		viw_cep_timed_out(cep);
	mutex_unlock(&cep->lock);
	viw_cep_put(cep);
}

/* ---- modify_qp connections (viw_direct.c) ------------------------------ */

/*
 * The direct listener is a kernel socket, which holds no reference on its
 * namespace.  A connection it accepts holds one, like every other socket
 * of viw, so that the namespace outlives it.
 */
static void viw_sock_hold_net(struct sock *sk)
{
	if (sk->sk_net_refcnt)
		return;
	sk->sk_net_refcnt = 1;
	get_net_track(sock_net(sk), &sk->ns_tracker, GFP_KERNEL);
	sock_inuse_add(sock_net(sk), 1);
}

static void viw_cep_direct_adopt(struct viw_cep *cep,
				 const struct viw_cep_owner *owner,
				 struct socket *nsock)
{
	cep->direct = owner;
	viw_sock_hold_net(nsock->sk);
}

/* Listen on @sock (bound, listening) for modify_qp connections of @owner. */
struct viw_cep *viw_cep_direct_listen(struct viw_device *vdev,
				      struct socket *sock,
				      const struct viw_cep_owner *owner)
{
	struct viw_cep *cep = viw_cep_alloc(vdev);

	if (!cep)
		return NULL;
	cep->direct = owner;
	lockdep_set_class(&cep->lock, &viw_listener_lock_key);
	viw_cep_save_callbacks(cep, sock->sk);
	mutex_lock(&cep->lock);
	viw_cep_attach(cep, sock);
	cep->state = VIW_CEP_LISTENING;
	mutex_unlock(&cep->lock);
	viw_cep_post_event(cep, VIW_CEP_EV_READABLE);
	return cep;
}

void viw_cep_direct_unlisten(struct viw_cep *lcep)
{
	mutex_lock(&lcep->lock);
	viw_cep_release_socket(lcep, false);
	lcep->state = VIW_CEP_CLOSED;
	mutex_unlock(&lcep->lock);
	viw_listen_close_children(lcep);
	viw_cep_put(lcep);
}

/**
 * viw_cep_direct_connect - start the connection of a modify_qp QP
 * @qp: the QP, in RTR
 * @owner: what the CEP reports to
 * @sock: a new TCP socket, consumed
 * @laddr: the local address to bind to
 * @raddr: the acceptor's address and port
 * @alen: the length of both
 * @pdata: the private data of the MPA request
 * @len: its length
 * @timeout: how long the TCP connect and MPA exchange may take
 * @out: set to the CEP, referenced, on success
 *
 * Return: 0, or a negative errno (the QP is then not referenced).
 */
int viw_cep_direct_connect(struct viw_qp *qp,
			   const struct viw_cep_owner *owner,
			   struct socket *sock,
			   struct sockaddr_storage *laddr,
			   struct sockaddr_storage *raddr, int alen,
			   const void *pdata, u16 len, unsigned long timeout,
			   struct viw_cep **out)
{
	struct viw_cep *cep;
	int rv;

	if (len > VIW_MPA_MAX_PDATA - VIW_MPA_V2_EXT_LEN) {
		sock_release(sock);
		return -EINVAL;
	}
	cep = viw_cep_alloc(qp->vdev);
	if (!cep) {
		sock_release(sock);
		return -ENOMEM;
	}
	mutex_lock(&cep->lock);
	cep->direct = owner;
	cep->active = true;
	viw_qp_get(qp);
	cep->qp = qp;
	/* The QP's own limits come into force at RTS. */
	cep->ird = VIW_MAX_IRD;
	cep->ord = VIW_MAX_ORD;
	memcpy(cep->mpa_buf, pdata, len);
	cep->mpa_len = len;
	rv = viw_cep_connect_sock(cep, sock, (struct sockaddr *)laddr,
				  (struct sockaddr *)raddr, alen);
	if (rv) {
		cep->qp = NULL;
		viw_qp_put(qp);
		cep->state = VIW_CEP_CLOSED;
	} else {
		viw_cep_arm_timer(cep, timeout);
		viw_cep_get(cep);
		*out = cep;
	}
	mutex_unlock(&cep->lock);
	viw_cep_put(cep);
	return rv;
}

/* The consumer's private data of the request or reply received. */
const void *viw_cep_direct_pdata(struct viw_cep *cep, bool reply, u16 *len)
{
	const struct viw_mpa_frame *f = reply ? &cep->rep : &cep->req;
	u16 skip = f->enhanced ? VIW_MPA_V2_EXT_LEN : 0;

	if (f->pd_len <= skip)
		return NULL;
	*len = f->pd_len - skip;
	return cep->mpa_buf + VIW_MPA_HDR_LEN + skip;
}

/* Keep a request (lock held) for at most @timeout until its QP takes it. */
void viw_cep_direct_hold(struct viw_cep *cep, unsigned long timeout)
{
	cep->state = VIW_CEP_MPA_REQ_RCVD;
	viw_cep_arm_timer(cep, timeout);
}

/* Whether a held request can still be accepted. */
bool viw_cep_direct_waiting(struct viw_cep *cep)
{
	return READ_ONCE(cep->state) == VIW_CEP_MPA_REQ_RCVD &&
	       READ_ONCE(cep->sock);
}

/* What TCP has received on the CEP's stream so far, MPA request included. */
static u64 viw_cep_bytes_received(struct viw_cep *cep)
{
	return READ_ONCE(tcp_sk(cep->sock->sk)->bytes_received);
}

/**
 * viw_cep_direct_peer_silent - whether the initiator of an accepted
 *	modify_qp connection sent nothing after its MPA request; lock held
 * @cep: the CEP, its socket not yet released
 */
bool viw_cep_direct_peer_silent(struct viw_cep *cep)
{
	return !cep->active && cep->sock &&
	       viw_cep_bytes_received(cep) == cep->direct_rx_mark;
}

/**
 * viw_cep_direct_accept - accept a held request for @qp; lock held
 * @cep: the CEP, in MPA_REQ_RCVD
 * @qp: the QP, whose reference goes to the CEP (dropped on failure)
 * @pdata: the private data of the MPA reply
 * @len: its length
 *
 * Return: 0, or a negative errno (the CEP is then closed).
 */
int viw_cep_direct_accept(struct viw_cep *cep, struct viw_qp *qp,
			  const void *pdata, u16 len)
{
	struct iw_cm_conn_param param = {
		.private_data = pdata,
		.private_data_len = len,
		.ord = VIW_MAX_ORD,
		.ird = VIW_MAX_IRD,
		.qpn = qp->ibqp.qp_num,
	};
	int rv;

	if (cep->state != VIW_CEP_MPA_REQ_RCVD || !cep->sock) {
		viw_qp_put(qp);
		return -ECONNRESET;
	}
	viw_cep_cancel_timer(cep);
	cep->qp = qp;
	/*
	 * Before the reply: the initiator sends nothing until it has it, and
	 * whatever it sends after counts as spoken, even if it arrives while
	 * the QP is being bound (viw_cep_direct_peer_silent()).
	 */
	cep->direct_rx_mark = viw_cep_bytes_received(cep);
	rv = viw_cep_send_reply(cep, &param);
	if (!rv)
		rv = viw_cep_accept_qp(cep, &param);
	if (rv) {
		viw_cep_release_socket(cep, true);
		cep->qp = NULL;
		viw_qp_put(qp);
		cep->state = VIW_CEP_CLOSED;
		return rv;
	}
	viw_cep_attach_qp(cep);
	if (qp->rtr_expected) {
		cep->state = VIW_CEP_RTR_WAIT;
		viw_cep_arm_timer(cep, VIW_MPA_TIMEOUT);
	} else {
		cep->state = VIW_CEP_ESTABLISHED;
	}
	viw_cep_kick_rx(cep);
	/* A FIN that came with the request ends the connection now. */
	viw_cep_check_peer_closed(cep);
	return 0;
}

/* Refuse a request with an MPA reject and close; lock held. */
void viw_cep_direct_reject(struct viw_cep *cep)
{
	struct viw_mpa_frame rep = {
		.reply = true,
		.reject = true,
		.revision = cep->req.revision,
	};

	viw_cep_cancel_timer(cep);
	if (cep->sock && (cep->state == VIW_CEP_MPA_REQ_WAIT ||
			  cep->state == VIW_CEP_MPA_REQ_RCVD))
		viw_cep_send_frame(cep, &rep, NULL, 0);
	viw_cep_release_socket(cep, false);
	cep->state = VIW_CEP_CLOSED;
}

int viw_cm_init(void)
{
	viw_cm_wq = alloc_workqueue("viw_cm", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return viw_cm_wq ? 0 : -ENOMEM;
}

/*
 * Close what is left at module exit.  The devices are gone, so only CEPs
 * that no device or cm_id reaches remain (a request iw_cm never answered);
 * their sockets, callbacks and timers must not outlive the module.
 */
void viw_cm_exit(void)
{
	struct viw_cep *cep = NULL;

	while ((cep = viw_cep_next(cep))) {
		mutex_lock(&cep->lock);
		viw_cep_cancel_timer(cep);
		viw_cep_release_socket(cep, true);
		cep->state = VIW_CEP_CLOSED;
		mutex_unlock(&cep->lock);
	}
	/* Queued work, a timer that fired included, runs to its end. */
	destroy_workqueue(viw_cm_wq);
	if (viw_cep_live)
		pr_warn("%d connection endpoints leaked\n", viw_cep_live);
}
