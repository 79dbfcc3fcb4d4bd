// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_cm_robust: the rdma_cm side of the connection-manager robustness
 * tests (tests/vm/guest/sec-cm.sh).  The other side is a raw TCP/MPA peer
 * that sends exactly the bytes a scenario needs.
 *
 *   viw_cm_robust -m MODE -s BIND_ADDR [-p PORT] [-b BACKLOG] [-t SECS]
 *   viw_cm_robust -m MODE -c SERVER_ADDR [-p PORT] [-t SECS]
 *
 * Server modes (one connection request unless said otherwise):
 *   fin-early   accept with one receive posted; ESTABLISHED, the peer's
 *               SEND and then DISCONNECTED must each come within 10 s
 *               (the peer sent its request, a SEND and a FIN at once).
 *   fin-wait    the same, but accept only after 2 s (the peer's FIN comes
 *               while the request waits for accept).
 *   accept-err  accept with the number of a QP in ERROR (created with
 *               ibv_create_qp, so librdmacm does not move it first):
 *               rdma_accept must fail.
 *   backlog     listen with BACKLOG and take the requests for -t seconds
 *               without answering them, then destroy the listener.
 *   pdata       every request must carry whole private data: its first
 *               six bytes say (big endian u16) its length, the IRD and
 *               the ORD the peer asked for; the event must show that
 *               length and min(IRD/ORD, device limit) as initiator depth
 *               and responder resources.  Each request is rejected.
 *   disconnect  accept with 16 responder resources and, as private data,
 *               a 1 MiB MR's rkey, address and length (be32, be64,
 *               be32); after ESTABLISHED wait 2 s (the peer sends READ
 *               Requests and stops reading), rdma_disconnect, and
 *               DISCONNECTED must come within 12 s (close timer 5 s).
 * Client mode:
 *   reject      connect with 200 bytes of private data 0xc1; the peer
 *               rejects (or fails) the request.  A REJECTED or error
 *               event must carry either no private data or exactly what
 *               the peer sent (-l LEN bytes of 0x5a), never our own.
 *
 * "PASS name" / "FAIL name: why" / "INFO" lines and "N passed, N failed".
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "viw_test.h"

#define CR_MR_LEN		(1 << 20)
#define CR_MAX_RD		32	/* viw's VIW_MAX_IRD/ORD */

struct cr_opts {
	const char *mode;
	const char *addr;
	const char *port;
	bool server;
	int backlog;
	int secs;
	int reject_len;
};

/* ep.qp: accept-err's QP, not the id's. */
struct cr_conn {
	struct vt_ep ep;
	void *buf;
};

/* PD, CQ, MR and, if @rdma_qp, the id's QP (rdma_create_qp). */
static int cr_setup(struct cr_conn *c, struct rdma_cm_id *id, bool rdma_qp)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	c->ep.id = id;
	c->ep.pd = ibv_alloc_pd(id->verbs);
	c->ep.cq = c->ep.pd ? ibv_create_cq(id->verbs, 64, NULL, NULL, 0) :
			      NULL;
	c->buf = calloc(1, CR_MR_LEN);
	if (!c->ep.cq || !c->buf)
		return -1;
	c->ep.mr = ibv_reg_mr(c->ep.pd, c->buf, CR_MR_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!c->ep.mr)
		return -1;
	if (!rdma_qp)
		return 0;
	attr.send_cq = c->ep.cq;
	attr.recv_cq = c->ep.cq;
	return rdma_create_qp(id, c->ep.pd, &attr);
}

static void cr_teardown(struct cr_conn *c)
{
	vt_ep_close(&c->ep);
	free(c->buf);
}

static int cr_post_recv(struct cr_conn *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->buf, .length = 4096,
		.lkey = c->ep.mr->lkey,
	};
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->ep.id->qp, &wr, &bad);
}

/* Wait up to @ms for @want; "name" is the check's name. */
static bool cr_expect(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, int ms, const char *name)
{
	struct rdma_cm_event *ev;
	char why[256];
	long long t0 = vt_now_ms();

	if (vt_cm_expect(ch, want, ms, &ev, why, sizeof(why))) {
		vt_fail(name, "%s", why);
		return false;
	}
	rdma_ack_cm_event(ev);
	vt_pass("%s (after %lld ms)", name, vt_now_ms() - t0);
	return true;
}

static struct rdma_cm_id *cr_listen(const struct cr_opts *o,
				    struct rdma_event_channel **ch)
{
	struct rdma_cm_id *listen;

	if (vt_bind_listener(o->addr, o->port, ch, &listen))
		return NULL;
	if (rdma_listen(listen, o->backlog)) {
		vt_fail("setup", "rdma_listen: %s", strerror(errno));
		return NULL;
	}
	printf("READY\n");
	return listen;
}

/* The next CONNECT_REQUEST; its id in @id.  False on timeout. */
static bool cr_next_request(struct rdma_event_channel *ch, long long deadline,
			    struct rdma_cm_event **ev)
{
	while (!vt_cm_get(ch, deadline, ev)) {
		if ((*ev)->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return true;
		vt_info("event %s", rdma_event_str((*ev)->event));
		rdma_ack_cm_event(*ev);
	}
	return false;
}

static void cr_fin_early(struct rdma_event_channel *ch, struct cr_conn *c)
{
	struct rdma_conn_param param = { .responder_resources = 1 };
	struct ibv_wc wc;

	if (cr_post_recv(c) || rdma_accept(c->ep.id, &param)) {
		vt_fail("accept", "%s", strerror(errno));
		return;
	}
	if (!cr_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 10000, "established"))
		return;
	vt_check(vt_poll_cq_until(c->ep.cq, &wc, 1,
				  vt_deadline_in(10000)) == 1 &&
		 wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
		 "early-send", "the SEND that came with the request");
	cr_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 10000, "disconnected");
}

/*
 * A QP of the id's device but not the id's, so that librdmacm passes its
 * number to the kernel without moving it to RTR and RTS first: the
 * driver's accept gets a QP in ERROR.
 */
static void cr_accept_err(struct cr_conn *c)
{
	struct ibv_qp_init_attr init = {
		.send_cq = c->ep.cq, .recv_cq = c->ep.cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct rdma_conn_param param = { .responder_resources = 1 };
	int rv;

	c->ep.qp = ibv_create_qp(c->ep.pd, &init);
	if (!c->ep.qp || ibv_modify_qp(c->ep.qp, &attr, IBV_QP_STATE)) {
		vt_fail("setup", "modify_qp(ERR): %s", strerror(errno));
		return;
	}
	param.qp_num = c->ep.qp->qp_num;
	rv = rdma_accept(c->ep.id, &param);
	vt_check(rv != 0, "accept-fails", "rdma_accept with a QP in ERROR "
		 "returned %d", rv);
}

static void cr_disconnect(struct rdma_event_channel *ch, struct cr_conn *c)
{
	struct {
		uint32_t rkey;
		uint64_t addr;
		uint32_t len;
	} __attribute__((packed)) pd = {
		.rkey = htobe32(c->ep.mr->rkey),
		.addr = htobe64((uintptr_t)c->buf),
		.len = htobe32(CR_MR_LEN),
	};
	struct rdma_conn_param param = {
		.responder_resources = 16,
		.private_data = &pd,
		.private_data_len = sizeof(pd),
	};
	long long t0;

	if (rdma_accept(c->ep.id, &param)) {
		vt_fail("accept", "%s", strerror(errno));
		return;
	}
	if (!cr_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 10000, "established"))
		return;
	sleep(2);
	t0 = vt_now_ms();
	if (rdma_disconnect(c->ep.id)) {
		vt_fail("disconnect", "rdma_disconnect: %s", strerror(errno));
		return;
	}
	vt_info("rdma_disconnect returned after %lld ms", vt_now_ms() - t0);
	cr_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 12000, "disconnected");
}

/* Server modes that take one connection request. */
static void cr_serve_one(const struct cr_opts *o,
			 struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	struct cr_conn c = {};

	if (!cr_next_request(ch, vt_run_deadline, &ev)) {
		vt_fail("request", "no CONNECT_REQUEST");
		return;
	}
	if (cr_setup(&c, ev->id, strcmp(o->mode, "accept-err"))) {
		vt_fail("setup", "QP: %s", strerror(errno));
		rdma_ack_cm_event(ev);
		cr_teardown(&c);
		return;
	}
	rdma_ack_cm_event(ev);
	if (!strcmp(o->mode, "fin-early")) {
		cr_fin_early(ch, &c);
	} else if (!strcmp(o->mode, "fin-wait")) {
		sleep(2);
		cr_fin_early(ch, &c);
	} else if (!strcmp(o->mode, "accept-err")) {
		cr_accept_err(&c);
	} else {
		cr_disconnect(ch, &c);
	}
	cr_teardown(&c);
}

static void cr_check_pdata(struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;
	const uint8_t *d = p->private_data;
	unsigned int len, ird, ord;

	if (p->private_data_len < 6) {
		vt_fail("pdata", "private data of %u bytes", p->private_data_len);
		return;
	}
	len = d[0] << 8 | d[1];
	ird = d[2] << 8 | d[3];
	ord = d[4] << 8 | d[5];
	vt_check(p->private_data_len == len, "pdata-len",
		 "peer sent %u bytes, event has %u", len, p->private_data_len);
	vt_check(p->initiator_depth == (ird < CR_MAX_RD ? ird : CR_MAX_RD) &&
		 p->responder_resources == (ord < CR_MAX_RD ? ord : CR_MAX_RD),
		 "ird-ord", "peer IRD %u ORD %u, event initiator_depth %u "
		 "responder_resources %u", ird, ord, p->initiator_depth,
		 p->responder_resources);
}

/* pdata and backlog: take every request until the run's end. */
static void cr_serve_many(const struct cr_opts *o,
			  struct rdma_event_channel *ch)
{
	long long deadline = vt_run_deadline - 2000;
	struct rdma_cm_event *ev;
	int n = 0;

	while (cr_next_request(ch, deadline, &ev)) {
		n++;
		if (!strcmp(o->mode, "pdata")) {
			cr_check_pdata(ev);
			rdma_reject(ev->id, NULL, 0);
		}
		/* backlog: unanswered until the listener goes */
		rdma_ack_cm_event(ev);
	}
	printf("REQUESTS %d\n", n);
	if (!strcmp(o->mode, "backlog"))
		vt_pass("backlog: %d requests reached the consumer", n);
}

static void cr_server(const struct cr_opts *o)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen = cr_listen(o, &ch);

	if (!listen)
		return;
	if (!strcmp(o->mode, "pdata") || !strcmp(o->mode, "backlog"))
		cr_serve_many(o, ch);
	else
		cr_serve_one(o, ch);
	rdma_destroy_id(listen);
	printf("LISTENER DESTROYED\n");
}

static void cr_check_reject(const struct cr_opts *o, struct rdma_cm_event *ev)
{
	const uint8_t *d = ev->param.conn.private_data;
	unsigned int len = ev->param.conn.private_data_len, i, own = 0;
	bool theirs = len == (unsigned int)o->reject_len;

	for (i = 0; i < len; i++) {
		own += d[i] == 0xc1;
		theirs = theirs && d[i] == 0x5a;
	}
	vt_info("%s status %d, %u bytes of private data",
		rdma_event_str(ev->event), ev->status, len);
	vt_check(ev->event != RDMA_CM_EVENT_ESTABLISHED, "not-established",
		 "the connection was established");
	vt_check(!own, "no-stale-pdata", "%u of %u private data bytes are "
		 "our own request's", own, len);
	vt_check(!len || theirs, "pdata-whole", "%u bytes, the peer sent %d",
		 len, o->reject_len);
}

static void cr_client(const struct cr_opts *o)
{
	static uint8_t hello[200];
	struct rdma_conn_param param = {
		.initiator_depth = 1, .responder_resources = 1,
		.private_data = hello, .private_data_len = sizeof(hello),
	};
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct sockaddr_storage dst;
	struct cr_conn c = {};
	struct rdma_cm_id *id;
	char why[256];

	memset(hello, 0xc1, sizeof(hello));
	if (vt_resolve(o->addr, o->port, false, &dst) ||
	    vt_route_client(&dst, NULL, 2000, 5000, &ch, &id, why,
			    sizeof(why))) {
		vt_fail("setup", "%s", why);
		return;
	}
	if (cr_setup(&c, id, true) || rdma_connect(id, &param)) {
		vt_fail("setup", "connect: %s", strerror(errno));
		cr_teardown(&c);
		return;
	}
	if (vt_cm_get(ch, vt_deadline_in(15000), &ev)) {
		vt_fail("event", "no connection event within 15 s");
	} else {
		cr_check_reject(o, ev);
		rdma_ack_cm_event(ev);
	}
	cr_teardown(&c);
}

static int cr_parse(int argc, char **argv, struct cr_opts *o)
{
	struct vt_args a = { .port = "7530", .secs = 30 };
	int opt;

	*o = (struct cr_opts){ .backlog = 8 };
	while ((opt = vt_next_opt(argc, argv, "m:b:l:", NULL, &a)) != -1) {
		switch (opt) {
		case 'm':
			o->mode = optarg;
			break;
		case 'b':
			o->backlog = atoi(optarg);
			break;
		case 'l':
			o->reject_len = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	o->addr = a.addr;
	o->port = a.port;
	o->server = a.server;
	o->secs = a.secs;
	return o->mode && o->addr && optind == argc && o->secs > 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct cr_opts o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cr_parse(argc, argv, &o)) {
		fprintf(stderr, "usage: %s -m MODE -s ADDR|-c ADDR [-p PORT] "
			"[-b BACKLOG] [-t SECS] [-l LEN]\n", argv[0]);
		return 2;
	}
	vt_start(o.secs);
	if (o.server)
		cr_server(&o);
	else
		cr_client(&o);
	return vt_finish();
}
