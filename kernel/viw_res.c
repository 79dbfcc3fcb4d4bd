// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: driver details of QPs, CQs and MRs for the RDMA core's resource
 * tracking ("rdma resource show qp|cq|mr -dd").
 *
 * Ring indices and engine state are read without the engines' locks: they
 * are a snapshot for a person, and each value is read once.  The
 * connection is read under the QP's state_lock, which keeps qp->cep, and
 * with it the socket, from going away (viw_qp_disconnect() clears qp->cep
 * under that lock before the CEP releases its socket).
 */
#include <net/inet_sock.h>
#include <net/sock.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "viw_engine.h"
#include "viw_verbs.h"
#include "viw_cm.h"

static int viw_res_put_ring(struct sk_buff *msg, const char *prefix,
			    const struct viw_ring *ring)
{
	char name[24];

	snprintf(name, sizeof(name), "%s_size", prefix);
	if (rdma_nl_put_driver_u32(msg, name, ring->num_slots))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "%s_prod", prefix);
	if (rdma_nl_put_driver_u32(msg, name, READ_ONCE(ring->ctrl->prod)))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "%s_cons", prefix);
	if (rdma_nl_put_driver_u32(msg, name, READ_ONCE(ring->ctrl->cons)))
		return -EMSGSIZE;
	return 0;
}

/* A work queue: the shared ring, and how far the kernel took and retired. */
static int viw_res_put_wq(struct sk_buff *msg, const char *prefix,
			  const struct viw_wq *wq)
{
	char name[24];

	if (viw_res_put_ring(msg, prefix, &wq->ring))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "%s_fetch", prefix);
	if (rdma_nl_put_driver_u32(msg, name, READ_ONCE(wq->fetch)))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "%s_done", prefix);
	if (rdma_nl_put_driver_u32(msg, name, READ_ONCE(wq->done)))
		return -EMSGSIZE;
	return 0;
}

static const char *viw_res_rx_stage(enum viw_rx_stage stage)
{
	switch (stage) {
	case VIW_RX_HDR:
		return "header";
	case VIW_RX_PAYLOAD:
		return "payload";
	case VIW_RX_TRAILER:
		return "trailer";
	case VIW_RX_DEAD:
		return "dead";
	}
	return "unknown";
}

static int viw_res_put_engines(struct sk_buff *msg, struct viw_qp *qp)
{
	if (rdma_nl_put_driver_string(msg, "tx",
				      READ_ONCE(qp->eng->tx.active) ? "busy" : "idle") ||
	    rdma_nl_put_driver_u32(msg, "tx_wqe", READ_ONCE(qp->eng->tx.index)) ||
	    rdma_nl_put_driver_u32(msg, "tx_sent", READ_ONCE(qp->eng->tx.sent)) ||
	    rdma_nl_put_driver_u32(msg, "tx_msn", READ_ONCE(qp->eng->tx_msn_send)) ||
	    rdma_nl_put_driver_string(msg, "rx",
				      viw_res_rx_stage(READ_ONCE(qp->eng->rx.stage))) ||
	    rdma_nl_put_driver_u32(msg, "rx_msn", READ_ONCE(qp->eng->rx.msn_send)) ||
	    rdma_nl_put_driver_u32(msg, "orq",
				   READ_ONCE(qp->eng->orq_tail) -
				   READ_ONCE(qp->eng->orq_head)) ||
	    rdma_nl_put_driver_u32(msg, "irq",
				   READ_ONCE(qp->eng->irq_tail) -
				   READ_ONCE(qp->eng->irq_head)) ||
	    rdma_nl_put_driver_u32(msg, "term_sent", READ_ONCE(qp->term_sent)))
		return -EMSGSIZE;
	return 0;
}

/* "addr:port" of each end of the TCP connection. */
static int viw_res_put_tuple(struct sk_buff *msg, struct sock *sk)
{
	const struct inet_sock *inet = inet_sk(sk);
	char local[64], remote[64];

	if (sk->sk_family == AF_INET) {
		snprintf(local, sizeof(local), "%pI4:%u", &inet->inet_saddr,
			 ntohs(inet->inet_sport));
		snprintf(remote, sizeof(remote), "%pI4:%u", &inet->inet_daddr,
			 ntohs(inet->inet_dport));
#if IS_ENABLED(CONFIG_IPV6)
	} else if (sk->sk_family == AF_INET6) {
		snprintf(local, sizeof(local), "[%pI6c]:%u",
			 &sk->sk_v6_rcv_saddr, ntohs(inet->inet_sport));
		snprintf(remote, sizeof(remote), "[%pI6c]:%u",
			 &sk->sk_v6_daddr, ntohs(inet->inet_dport));
#endif
	} else {
		return 0;
	}
	if (rdma_nl_put_driver_string(msg, "tcp_local", local) ||
	    rdma_nl_put_driver_string(msg, "tcp_remote", remote))
		return -EMSGSIZE;
	return 0;
}

static const char *viw_res_rtr(const struct viw_mpa_frame *rep)
{
	if (!rep->p2p)
		return "none";
	switch (rep->rtr) {
	case VIW_RTR_SEND0:
		return "send0";
	case VIW_RTR_WRITE0:
		return "write0";
	case VIW_RTR_READ0:
		return "read0";
	}
	return "unknown";
}

/* What MPA negotiated (the reply frame), and the TCP 4-tuple. */
static int viw_res_put_conn(struct sk_buff *msg, struct viw_qp *qp)
{
	struct viw_cep *cep = qp->cep;
	struct socket *sock;

	if (!cep)
		return rdma_nl_put_driver_string(msg, "conn", "none");
	if (rdma_nl_put_driver_u32(msg, "mpa_rev", cep->rep.revision) ||
	    rdma_nl_put_driver_string(msg, "crc", qp->crc ? "on" : "off") ||
	    rdma_nl_put_driver_string(msg, "rtr", viw_res_rtr(&cep->rep)) ||
	    rdma_nl_put_driver_u32(msg, "mulpdu", qp->mulpdu))
		return -EMSGSIZE;
	sock = READ_ONCE(cep->sock);
	return sock ? viw_res_put_tuple(msg, sock->sk) : 0;
}

static int viw_res_put_qp(struct sk_buff *msg, void *obj)
{
	struct viw_qp *qp = obj;
	int rv;

	if (viw_res_put_wq(msg, "sq", &qp->sq))
		return -EMSGSIZE;
	if (!qp->srq && viw_res_put_wq(msg, "rq", &qp->rq))
		return -EMSGSIZE;
	if (viw_res_put_engines(msg, qp))
		return -EMSGSIZE;
	mutex_lock(&qp->state_lock);
	rv = viw_res_put_conn(msg, qp);
	mutex_unlock(&qp->state_lock);
	return rv;
}

static int viw_res_put_cq(struct sk_buff *msg, void *obj)
{
	struct viw_cq *cq = obj;

	if (viw_res_put_ring(msg, "ring", &cq->ring) ||
	    rdma_nl_put_driver_u32(msg, "overflowed", READ_ONCE(cq->overflowed)))
		return -EMSGSIZE;
	return 0;
}

/*
 * user memory, fast registration, device memory (pages of its own), or
 * all of memory
 */
static const char *viw_res_mr_type(const struct viw_mr *mr)
{
	if (mr->umem)
		return "user";
	if (mr->fast)
		return "fast";
	return mr->pages ? "dm" : "dma";
}

static int viw_res_put_mr(struct sk_buff *msg, void *obj)
{
	struct viw_mr *mr = obj;

	if (rdma_nl_put_driver_string(msg, "type", viw_res_mr_type(mr)) ||
	    rdma_nl_put_driver_u64(msg, "pages", mr->num_pages) ||
	    rdma_nl_put_driver_u32(msg, "page_offset", mr->page_offset) ||
	    rdma_nl_put_driver_u32_hex(msg, "access", mr->access) ||
	    rdma_nl_put_driver_u32(msg, "refs", refcount_read(&mr->ref)))
		return -EMSGSIZE;
	return 0;
}

/* The driver's attributes of one object, nested as the core expects. */
static int viw_res_fill(struct sk_buff *msg,
			int (*put)(struct sk_buff *msg, void *obj), void *obj)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	if (put(msg, obj)) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

int viw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	return viw_res_fill(msg, viw_res_put_qp, to_viw_qp(ibqp));
}

int viw_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	return viw_res_fill(msg, viw_res_put_cq, to_viw_cq(ibcq));
}

int viw_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	return viw_res_fill(msg, viw_res_put_mr, to_viw_mr(ibmr));
}
