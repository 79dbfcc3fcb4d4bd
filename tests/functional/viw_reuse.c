// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_reuse: a sender that reuses each buffer the moment a completion
 * frees it, and a receiver that compares every byte that arrived (issue
 * 10: a send WR completes only once the transport no longer needs its
 * pages; tests/vm/guest/reuse.sh runs it under netem loss).
 *
 *   viw_reuse -s HOST [-p PORT] [-t SECS]
 *   viw_reuse -c HOST [-p PORT] [-t SECS]
 *
 * The client sends RU_MSGS messages of RU_SIZE bytes from RU_SLOTS source
 * buffers taken in turn: the even ones as WRITEs to consecutive places of
 * the server's MR, the odd ones as SENDs into receives the server posted
 * at those places, in order.  Message m is stamped with m.  Only every
 * RU_SIGNAL-th WR is signaled: by the verbs, its completion frees the
 * buffers of the unsignaled WRs before it too.  As soon as the client
 * polls it, it scribbles over each buffer it frees; a buffer is stamped
 * again only for the next message it carries.  A last SEND says how many
 * messages went, and the server then compares every byte of them.
 *
 * A transport that still reads the application's pages after the
 * completion (a zero-copy transmit that completes when the data is
 * queued in the socket, not when it is acknowledged) sends the scribble
 * for whatever it sends, or sends again after a loss, later: the server
 * sees it.
 *
 * Output: "PASS name" / "FAIL name: why" / "INFO ..." lines and
 * "N passed, N failed".
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viw_test.h"

#define RU_DEFAULT_PORT		"7540"
#define RU_CLIENT_SECS		60
#define RU_SERVER_SECS		90
#define RU_MAGIC		0x72657573	/* "reus" */
#define RU_MSGS			128
#define RU_SIZE			(64 << 10)
#define RU_SLOTS		8
#define RU_SIGNAL		4
#define RU_SCRIBBLE		0xdd
#define RU_SENDS		(RU_MSGS / 2)	/* the odd messages */
#define RU_DONE_OFF		((size_t)RU_SLOTS * RU_SIZE)
#define RU_REGION		((size_t)RU_MSGS * RU_SIZE + 64)

/* The last SEND: how many messages were sent. */
struct ru_done {
	uint32_t magic;
	uint32_t msgs;
};

/* Word @w of message @m: a stamp that differs from message to message. */
static uint64_t ru_word(uint32_t m, size_t w)
{
	return ((uint64_t)(m + 1) << 40) ^ (w * 0x9e3779b97f4a7c15ull);
}

static void ru_stamp(uint8_t *p, uint32_t m)
{
	size_t w;

	for (w = 0; w < RU_SIZE / 8; w++) {
		uint64_t v = ru_word(m, w);

		memcpy(p + w * 8, &v, 8);
	}
}

/* The first byte of message @m at @p that differs, or -1. */
static long ru_first_bad(const uint8_t *p, uint32_t m)
{
	size_t w;

	for (w = 0; w < RU_SIZE / 8; w++) {
		uint64_t v = ru_word(m, w);

		if (memcmp(p + w * 8, &v, 8)) {
			const uint8_t *want = (const uint8_t *)&v;
			size_t b = 0;

			while (p[w * 8 + b] == want[b])
				b++;
			return (long)(w * 8 + b);
		}
	}
	return -1;
}

/* ---- server -------------------------------------------------------------- */

/* The listener and its one connection, whose MR is in the server's PD. */
struct ru_server {
	struct vt_server s;
	struct vt_ep conn;
	uint8_t *buf;
};

static bool ru_is_send(uint32_t m)
{
	return m & 1;
}

/* A receive for every SEND, at its message's place, then the last one's. */
static int ru_post_recvs(struct ru_server *v)
{
	struct ibv_sge sge = { .lkey = v->conn.mr->lkey, .length = RU_SIZE };
	uint32_t m;

	for (m = 0; m < RU_MSGS; m++) {
		if (!ru_is_send(m))
			continue;
		sge.addr = (uintptr_t)(v->buf + (size_t)m * RU_SIZE);
		if (vt_post_recv(v->conn.id->qp, m, &sge, 1))
			return -1;
	}
	sge.addr = (uintptr_t)(v->buf + (size_t)RU_MSGS * RU_SIZE);
	sge.length = sizeof(struct ru_done);
	return vt_post_recv(v->conn.id->qp, RU_MSGS, &sge, 1);
}

static int ru_accept(struct ru_server *v, struct rdma_cm_event *ev)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 2, .max_recv_wr = RU_SENDS + 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct vt_mr_offer offer = {
		.magic = htobe32(RU_MAGIC),
		.len = htobe32(RU_MSGS * RU_SIZE),
	};
	struct rdma_conn_param p = {
		.private_data = &offer,
		.private_data_len = sizeof(offer),
	};
	const char *step;

	v->conn.id = ev->id;
	if (vt_ep_qp(&v->conn, v->s.pd, RU_SENDS + 8, &attr)) {
		vt_fail("accept", "%s", v->conn.why);
		goto reject;
	}
	step = "ibv_reg_mr";
	v->buf = vt_alloc_filled(RU_REGION, 0);
	v->conn.mr = v->buf ? ibv_reg_mr(v->s.pd, v->buf, RU_REGION,
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!v->conn.mr)
		goto err;
	step = "ibv_post_recv";
	if (ru_post_recvs(v))
		goto err;
	offer.addr = htobe64((uintptr_t)v->buf);
	offer.rkey = htobe32(v->conn.mr->rkey);
	step = "rdma_accept";
	if (rdma_accept(v->conn.id, &p))
		goto err;
	return 0;
err:
	vt_fail("accept", "%s: %s", step, strerror(errno));
reject:
	rdma_reject(ev->id, NULL, 0);
	return -1;
}

/* Every receive, in order, and the count of messages from the last. */
static int ru_take_recvs(struct ru_server *v, uint32_t *msgs)
{
	struct ibv_wc wc;
	const struct ru_done *done;
	uint32_t m;

	for (m = 0; m <= RU_MSGS; m++) {
		if (m < RU_MSGS && !ru_is_send(m))
			continue;
		if (vt_poll_cq_until(v->conn.cq, &wc, 1, vt_run_deadline) != 1) {
			vt_fail("recv", "no completion for message %u", m);
			return -1;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != m ||
		    (m < RU_MSGS && wc.byte_len != RU_SIZE)) {
			vt_fail("recv", "message %u: wr_id %llu, %s, %u bytes",
				m, (unsigned long long)wc.wr_id,
				vt_wc_status_name(wc.status), wc.byte_len);
			return -1;
		}
	}
	done = (const struct ru_done *)(v->buf + (size_t)RU_MSGS * RU_SIZE);
	if (be32toh(done->magic) != RU_MAGIC) {
		vt_fail("recv", "the last SEND is not the count");
		return -1;
	}
	*msgs = be32toh(done->msgs);
	return 0;
}

/* Compare every message with its stamp. */
static void ru_verify(struct ru_server *v, uint32_t msgs)
{
	uint32_t m, bad = 0, first = 0;
	long at = -1;

	vt_check(msgs == RU_MSGS, "count", "the client sent %u messages, "
		 "want %u", msgs, RU_MSGS);
	for (m = 0; m < RU_MSGS; m++) {
		const uint8_t *p = v->buf + (size_t)m * RU_SIZE;
		long off = ru_first_bad(p, m);

		if (off < 0)
			continue;
		if (!bad++) {
			first = m;
			at = off;
		}
	}
	if (!bad) {
		vt_pass("data: %u messages of %u bytes arrived as posted",
			RU_MSGS, RU_SIZE);
		return;
	}
	vt_fail("data", "%u of %u messages differ from what was posted; the "
		"first is message %u (%s), at byte %ld: 0x%02x%s", bad,
		RU_MSGS, first, ru_is_send(first) ? "SEND" : "WRITE", at,
		v->buf[(size_t)first * RU_SIZE + at],
		v->buf[(size_t)first * RU_SIZE + at] == RU_SCRIBBLE ?
		", the client's scribble" : "");
}

static int ru_listen(struct ru_server *v, const char *host, const char *port)
{
	struct rdma_cm_event *ev;
	char why[128];

	if (vt_server_open(&v->s, host, port) || vt_server_listen(&v->s, 1))
		return -1;
	if (vt_server_event(v->s.ch, vt_run_deadline, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		vt_fail("accept", "first event %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (ru_accept(v, ev)) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	rdma_ack_cm_event(ev);
	if (vt_cm_expect(v->s.ch, RDMA_CM_EVENT_ESTABLISHED, 15000, &ev, why,
			 sizeof(why))) {
		vt_fail("accept", "%s", why);
		return -1;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

static void ru_serve(struct ru_server *v)
{
	uint32_t msgs;

	if (!ru_take_recvs(v, &msgs))
		ru_verify(v, msgs);
}

static void ru_server_close(struct ru_server *v)
{
	if (v->conn.id)
		rdma_disconnect(v->conn.id);
	vt_ep_close(&v->conn);
	free(v->buf);
	vt_server_close(&v->s);
}

VT_RUN_SERVER(struct ru_server, ru_listen, ru_serve, ru_server_close)

/* ---- client -------------------------------------------------------------- */

struct ru_client {
	struct vt_ep ep;
	uint8_t *buf;		/* RU_SLOTS sources, then the count */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t freed;		/* messages whose buffers are free again */
	uint32_t scribbled;	/* buffers scribbled on at a completion */
};

static uint8_t *ru_slot(struct ru_client *c, uint32_t m)
{
	return c->buf + (size_t)(m % RU_SLOTS) * RU_SIZE;
}

static int ru_connect(struct ru_client *c, const char *host, const char *port)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 2 * RU_SLOTS, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param p = { 0 };
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	struct vt_mr_offer o;
	int rv;

	if (vt_resolve(host, port, false, &dst))
		return -1;
	rv = vt_ep_route(&c->ep, &dst, c, 2000, 10000);
	if (!rv)
		rv = vt_ep_alloc(&c->ep, c->buf, RU_DONE_OFF + 64,
				 4 * RU_SLOTS, &attr);
	if (!rv)
		rv = vt_ep_connect(&c->ep, &p, 15000, &ev);
	if (!rv) {
		rv = vt_take_offer(ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &o,
				   sizeof(o), RU_MAGIC, 0, c->ep.why,
				   sizeof(c->ep.why));
		rdma_ack_cm_event(ev);
	}
	if (!rv && be32toh(o.len) < RU_MSGS * RU_SIZE) {
		snprintf(c->ep.why, sizeof(c->ep.why), "the server's MR has "
			 "%u bytes", be32toh(o.len));
		rv = -EPROTO;
	}
	if (rv) {
		vt_fail("connect", "%s", c->ep.why);
		return -1;
	}
	c->raddr = be64toh(o.addr);
	c->rkey = be32toh(o.rkey);
	return 0;
}

/*
 * Wait for the next completion, a signaled WR's: it and every WR before
 * it are done, and their buffers are scribbled on at once.
 */
static int ru_reap(struct ru_client *c)
{
	struct ibv_wc wc;

	if (vt_poll_cq_until(c->ep.cq, &wc, 1, vt_run_deadline) != 1) {
		vt_fail("complete", "no completion after message %u", c->freed);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= RU_MSGS ||
	    wc.wr_id < c->freed) {
		vt_fail("complete", "wr_id %llu: %s (%u freed before)",
			(unsigned long long)wc.wr_id,
			vt_wc_status_name(wc.status), c->freed);
		return -1;
	}
	for (; c->freed <= wc.wr_id; c->freed++) {
		memset(ru_slot(c, c->freed), RU_SCRIBBLE, RU_SIZE);
		c->scribbled++;
	}
	return 0;
}

static int ru_post(struct ru_client *c, uint32_t m)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)ru_slot(c, m),
		.length = RU_SIZE,
		.lkey = c->ep.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = m,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = ru_is_send(m) ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
	}, *bad;
	int rv;

	if (m % RU_SIGNAL == RU_SIGNAL - 1 || m == RU_MSGS - 1)
		wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = c->raddr + (uint64_t)m * RU_SIZE;
	wr.wr.rdma.rkey = c->rkey;
	ru_stamp(ru_slot(c, m), m);
	rv = ibv_post_send(c->ep.id->qp, &wr, &bad);
	if (rv)
		vt_fail("post", "message %u: %s", m, strerror(rv));
	return rv ? -1 : 0;
}

/* Each message once its buffer is free; then all of them complete. */
static int ru_send_all(struct ru_client *c)
{
	uint32_t m;

	for (m = 0; m < RU_MSGS; m++) {
		while (m - c->freed >= RU_SLOTS)
			if (ru_reap(c))
				return -1;
		if (ru_post(c, m))
			return -1;
	}
	while (c->freed < RU_MSGS)
		if (ru_reap(c))
			return -1;
	return 0;
}

/* The count, in a SEND of its own, which follows every message. */
static int ru_send_count(struct ru_client *c)
{
	struct ru_done *done = (struct ru_done *)(c->buf + RU_DONE_OFF);
	struct ibv_sge sge = {
		.addr = (uintptr_t)done,
		.length = sizeof(*done),
		.lkey = c->ep.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = RU_MSGS,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	done->magic = htobe32(RU_MAGIC);
	done->msgs = htobe32(RU_MSGS);
	if (ibv_post_send(c->ep.id->qp, &wr, &bad) ||
	    vt_poll_cq_until(c->ep.cq, &wc, 1, vt_run_deadline) != 1 ||
	    wc.status != IBV_WC_SUCCESS) {
		vt_fail("count", "the last SEND did not complete");
		return -1;
	}
	return 0;
}

/* The server disconnects once it compared every message. */
static void ru_wait_server(struct ru_client *c)
{
	struct rdma_cm_event *ev;

	if (vt_cm_expect(c->ep.ch, RDMA_CM_EVENT_DISCONNECTED, 30000, &ev,
			 c->ep.why, sizeof(c->ep.why))) {
		vt_info("the server did not disconnect: %s", c->ep.why);
		return;
	}
	rdma_ack_cm_event(ev);
}

static int run_client(const char *host, const char *port)
{
	struct ru_client c = { 0 };

	c.buf = vt_alloc_filled(RU_DONE_OFF + 64, 0);
	if (c.buf && !ru_connect(&c, host, port) && !ru_send_all(&c) &&
	    !ru_send_count(&c)) {
		vt_pass("complete: %u WRs of %u bytes, %u signaled, each "
			"buffer scribbled on as its completion was polled",
			RU_MSGS, RU_SIZE, RU_MSGS / RU_SIGNAL);
		ru_wait_server(&c);
	}
	vt_info("%u buffers scribbled on", c.scribbled);
	vt_ep_close(&c.ep);
	free(c.buf);
	return 0;
}

VT_MAIN(RU_DEFAULT_PORT, RU_CLIENT_SECS, RU_SERVER_SECS, run_client,
	run_server);
