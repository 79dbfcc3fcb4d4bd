// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_semantics: the connection and flush semantics of an iWARP RNIC,
 * checked through librdmacm and libibverbs, one scenario per run.
 *
 *   viw_semantics --scenario NAME -s BIND_ADDR [-p PORT] [-t SECS]  (server)
 *   viw_semantics --scenario NAME -c SERVER_ADDR [-p PORT] [-t SECS] (client)
 *
 * Both sides record every rdma_cm event they get ("EVENT side +ms NAME
 * status N") and the completions they poll, and check counts and order.
 * Scenarios (tests/vm/guest/semantics.sh runs them and does the external
 * actions: SIGKILL, netem, link down, namespace deletion):
 *
 *   flush            (client only) modify_qp(ERR) of a QP with queued SQ
 *                    and RQ WRs: all complete with WR_FLUSH_ERR, in order,
 *                    unsignaled sends too, before modify_qp returns; posts
 *                    in ERR complete at once; a drain marker completes; a
 *                    QP on an SRQ raises IBV_EVENT_QP_LAST_WQE_REACHED.
 *   flush-many       (client only) 4000 receives and 4000 sends (1 in 64
 *                    signaled) flushed by modify_qp(ERR): 8000 FLUSH_ERR
 *                    completions, each queue in wr_id order.
 *   disconnect       the client calls rdma_disconnect: it returns at once;
 *                    each side gets exactly one DISCONNECTED (status 0);
 *                    queued receives, and a send posted while closing, are
 *                    flushed; the QPs end in ERR; a send posted afterwards
 *                    completes with FLUSH_ERR at once (drain marker).
 *   both             both sides call rdma_disconnect at the same instant
 *                    (a CLOCK_REALTIME time from the accept private data):
 *                    each gets exactly one DISCONNECTED.
 *   kill             the client RDMA WRITEs in a loop and prints READY; the
 *                    script SIGKILLs it; the server gets exactly one
 *                    DISCONNECTED, its receives are flushed, QP in ERR.
 *   close-timer      client prints READY and waits for SIGUSR1 (the script
 *                    makes the server's namespace drop everything), then
 *                    rdma_disconnect: DISCONNECTED after 4-9 s (the 5 s
 *                    close timer), exactly once, QP in ERR.
 *   destroy-closing  as close-timer, but the client destroys its QP 200 ms
 *                    after rdma_disconnect: rdma_destroy_qp returns within
 *                    3 s; exactly one DISCONNECTED; clean teardown.
 *   accept-fail      client prints CONNECTING after rdma_connect; server
 *                    prints REQUEST on CONNECT_REQUEST and waits for
 *                    SIGUSR1 (the script resets the client's TCP connection
 *                    first), sleeps 1 s, accepts: rdma_accept fails with an
 *                    errno and no event follows within 3 s; the client gets
 *                    one connection failure event and never ESTABLISHED.
 *   link-down        client prints READY; the script sets its link down:
 *                    the client gets exactly one DISCONNECTED, its receives
 *                    flushed, QP in ERR, IBV_EVENT_PORT_ERR.  The server
 *                    waits for SIGUSR1 (link back up), then disconnects if
 *                    still connected: at most one DISCONNECTED.
 *   ns-delete        client prints READY; the script deletes the server's
 *                    namespace (and kills the server): the client gets
 *                    DEVICE_REMOVAL (at most one DISCONNECTED before it),
 *                    tears everything down and exits.
 *   error-disconnect the client moves its connected QP to ERR and then
 *                    calls rdma_disconnect (librdmacm first moves the QP
 *                    to SQD): it returns 0; each side gets exactly one
 *                    DISCONNECTED.
 *   reset            the server moves its QP from RTS to RESET as soon as
 *                    it is ESTABLISHED: modify_qp returns 0, its posted
 *                    receives are discarded without completions, it gets
 *                    exactly one DISCONNECTED and the QP stays in RESET.
 *                    The client WRITEs into the server's buffer 1.5 s
 *                    later: the WRITE does not succeed and the server's
 *                    buffer is unchanged.
 *   early-post       both sides post 8 receives and 8 SENDs before
 *                    rdma_connect / rdma_accept (run with MPA peer-to-peer
 *                    mode, where the initiator's RTR must be the first
 *                    FPDU): all 16 complete successfully on each side.
 *   early-post-raw   either side posts 8 SENDs (no receives) before
 *                    rdma_connect / rdma_accept, against a raw MPA peer
 *                    that checks the order of the FPDUs (the initiator's
 *                    RTR first; nothing from the responder before it):
 *                    all 8 complete successfully.
 *   bad-tail         the client posts, in one call, BT_GOOD small signaled
 *                    WRITEs into the server's buffer, then a WRITE whose
 *                    lkey names no MR, then BT_AFTER WRITEs more: the good
 *                    ones complete with success, in order, the bad one
 *                    LOC_PROT_ERR, the rest WR_FLUSH_ERR (the engine may
 *                    hold small messages to write them together: a bad WQE
 *                    behind them does not take them down).  The server,
 *                    once DISCONNECTED, finds the good WRITEs' bytes in
 *                    its buffer and none of the others'.
 *   bad-inv-tail     as bad-tail, but the bad WQE is a Local Invalidate of
 *                    an STag that names nothing: the good WRITEs complete
 *                    with success, in order, the invalidation
 *                    LOC_QP_OP_ERR, the rest WR_FLUSH_ERR (a local
 *                    operation runs only once every WQE before it is on
 *                    the wire, held ones too).
 *
 * "PASS name" / "FAIL name: detail" per check, "INFO" lines, and a final
 * "N passed, N failed"; exit 0 only if all passed.  Every wait has a
 * deadline; a watchdog ends the process 5 s after the run's (-t, default
 * 40 s).  The client retries its connection for 5 s while it is refused.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "viw_test.h"

#define SM_MAGIC		0x7669776d	/* "viwm" */
#define SM_DEFAULT_PORT		"7490"
#define SM_DEFAULT_SECS		40
#define SM_BUF_LEN		(64 * 1024)
#define SM_MSG_LEN		64

#define SM_EVENT_MS		3000
#define SM_CONNECT_MS		10000
#define SM_RETRY_MS		5000
#define SM_QUIET_MS		2000	/* no second DISCONNECTED in this time */
#define SM_PROMPT_MS		1000	/* a flush "at once" */

static volatile sig_atomic_t go;

/* ---- time ---------------------------------------------------------------- */

static long long real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* Wait for SIGUSR1 from the script; false after @ms. */
static bool wait_go(int ms)
{
	long long end = vt_deadline_in(ms);

	while (!go) {
		if (!vt_ms_left(end))
			return false;
		usleep(10000);
	}
	return true;
}

/* A marker line for the guest script. */
static void marker(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

/* ---- verbs helpers ------------------------------------------------------- */

static void check_qp_state(const char *name, struct ibv_qp *qp, int want)
{
	int state = vt_qp_state(qp);

	vt_check(state == want, name, "QP in %s, expected %s",
		 vt_qp_state_str(state), vt_qp_state_str(want));
}

static int modify_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

static int post_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t wr_id,
		     uint32_t off)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mr->addr + off, .length = SM_MSG_LEN,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t wr_id,
		     bool signaled)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mr->addr, .length = SM_MSG_LEN,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Completion @i for @wr_id, one of the @n WRs of @kind from @base, must
 * be WR number *@next of them: 1 if so (*@next moves on), 0 if @wr_id is
 * not of @kind, -1 after a FAIL @name if it is out of order.
 */
static int in_order(const char *name, const char *kind, int i,
		    uint64_t wr_id, uint64_t base, int n, int *next)
{
	if (!n || wr_id < base || wr_id >= base + n)
		return 0;
	if (wr_id != base + *next) {
		vt_fail(name, "completion %d: %s wr_id %llu, expected %llu "
			"(out of order)", i, kind, (unsigned long long)wr_id,
			(unsigned long long)(base + *next));
		return -1;
	}
	(*next)++;
	return 1;
}

/*
 * Check @n completions: each FLUSH_ERR; the receive ones (wr_id in
 * [rbase, rbase + nr)) in order, the send ones ([sbase, sbase + ns)) in
 * order.  Returns true if all good; reports one FAIL @name otherwise.
 */
static bool check_flushed(const char *name, const struct ibv_wc *wc, int n,
			  uint64_t rbase, int nr, uint64_t sbase, int ns)
{
	int i, rv, r = 0, s = 0;

	if (n != nr + ns) {
		vt_fail(name, "%d completions, expected %d (%d recv + %d send)",
			n, nr + ns, nr, ns);
		return false;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
			vt_fail(name, "completion %d wr_id %llu: %s, expected "
				"WR_FLUSH_ERR", i,
				(unsigned long long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status));
			return false;
		}
		rv = in_order(name, "recv", i, wc[i].wr_id, rbase, nr, &r);
		if (!rv)
			rv = in_order(name, "send", i, wc[i].wr_id, sbase, ns,
				      &s);
		if (rv < 0)
			return false;
		if (!rv) {
			vt_fail(name, "completion %d: unexpected wr_id %llu", i,
				(unsigned long long)wc[i].wr_id);
			return false;
		}
	}
	vt_pass("%s", name);
	return true;
}

/* Wait for an async event of @type on @ctx; logs all events seen. */
static bool wait_async(struct ibv_context *ctx, enum ibv_event_type type,
		       int ms)
{
	long long end = vt_deadline_in(ms);
	struct ibv_async_event ev;
	int flags = fcntl(ctx->async_fd, F_GETFL);

	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	for (;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

		if (!ibv_get_async_event(ctx, &ev)) {
			enum ibv_event_type t = ev.event_type;

			ibv_ack_async_event(&ev);
			vt_info("async event %s", ibv_event_type_str(t));
			if (t == type)
				return true;
			continue;
		}
		if (!vt_ms_left(end))
			return false;
		poll(&pfd, 1, vt_ms_left(end) < 100 ? vt_ms_left(end) : 100);
	}
}

/* ---- rdma_cm helpers and the event log --------------------------------- */

struct conn {
	const char *side;
	struct sockaddr_storage addr;
	struct vt_ep ep;
	struct rdma_cm_id *listen;
	uint8_t *buf;
	int cq_depth;
	int sq_depth;
	int rq_depth;
	struct ibv_srq *srq;
	char seq[1024];		/* the events, in order */
	int n_events;
	int n_est;
	int n_disc;
	int disc_status;
	long long t_disc;
	long long t0;
	/* accept private data, server -> client */
	uint64_t peer_addr;
	uint32_t peer_rkey;
	long long sync_real;
};

struct sm_offer {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint64_t sync_real;
};

static void record(struct conn *c, struct rdma_cm_event *ev)
{
	const char *name = rdma_event_str(ev->event);
	size_t len = strlen(c->seq);

	if (!strncmp(name, "RDMA_CM_EVENT_", 14))
		name += 14;
	printf("EVENT %s +%lld %s status %d\n", c->side, vt_now_ms() - c->t0,
	       name, ev->status);
	snprintf(c->seq + len, sizeof(c->seq) - len, "%s%s", len ? " " : "",
		 name);
	c->n_events++;
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		c->n_est++;
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
		c->n_disc++;
		c->disc_status = ev->status;
		c->t_disc = vt_now_ms();
	}
}

static int make_channel(struct conn *c)
{
	char why[256];

	c->ep.ch = vt_create_channel(why, sizeof(why));
	if (!c->ep.ch) {
		vt_fail("setup", "%s", why);
		return -1;
	}
	return 0;
}

/*
 * The next event before @deadline, recorded and stored in *@type (and the
 * private data parsed if it is an offer); 0, or -ETIMEDOUT / -errno.
 * The event is acked, except CONNECT_REQUEST, which is returned in *@req.
 */
static int next_event(struct conn *c, long long deadline,
		      enum rdma_cm_event_type *type,
		      struct rdma_cm_event **req)
{
	struct rdma_cm_event *ev;
	int rv = vt_cm_get(c->ep.ch, deadline, &ev);

	if (rv)
		return rv;
	record(c, ev);
	*type = ev->event;
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED &&
	    ev->param.conn.private_data_len >= sizeof(struct sm_offer)) {
		struct sm_offer o;

		memcpy(&o, ev->param.conn.private_data, sizeof(o));
		if (be32toh(o.magic) == SM_MAGIC) {
			c->peer_rkey = be32toh(o.rkey);
			c->peer_addr = be64toh(o.addr);
			c->sync_real = (long long)be64toh(o.sync_real);
		}
	}
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && req) {
		*req = ev;
		return 0;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* The next event must be @want within @ms. */
static bool expect_event(struct conn *c, enum rdma_cm_event_type want, int ms,
			 const char *name)
{
	enum rdma_cm_event_type type;
	long long start = vt_now_ms();
	int rv = next_event(c, vt_deadline_in(ms), &type, NULL);

	if (rv) {
		vt_fail(name, "no %s within %lld ms: %s", rdma_event_str(want),
			vt_now_ms() - start, strerror(-rv));
		return false;
	}
	if (type != want) {
		vt_fail(name, "got %s, expected %s", rdma_event_str(type),
			rdma_event_str(want));
		return false;
	}
	return true;
}

/* Wait up to @ms for the first DISCONNECTED; logs any other event. */
static bool wait_disconnected(struct conn *c, int ms, const char *name)
{
	long long end = vt_deadline_in(ms), start = vt_now_ms();
	enum rdma_cm_event_type type;

	while (!c->n_disc) {
		int rv = next_event(c, end, &type, NULL);

		if (rv) {
			vt_fail(name, "no DISCONNECTED within %lld ms (%s); "
				"events: %s", vt_now_ms() - start,
				strerror(-rv), c->seq);
			return false;
		}
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			vt_fail(name, "DEVICE_REMOVAL; events: %s", c->seq);
			return false;
		}
	}
	vt_pass("%s", name);
	return true;
}

/* No further event within @ms; then the sequence must be @want. */
static void check_quiet_and_seq(struct conn *c, int ms, const char *want)
{
	long long end = vt_deadline_in(ms);
	enum rdma_cm_event_type type;
	char name[96];

	while (!next_event(c, end, &type, NULL))
		;
	snprintf(name, sizeof(name), "%s exactly one DISCONNECTED", c->side);
	vt_check(c->n_disc == 1, name, "%d DISCONNECTED; events: %s", c->n_disc,
		 c->seq);
	snprintf(name, sizeof(name), "%s event sequence", c->side);
	vt_check(!strcmp(c->seq, want), name, "got \"%s\", expected \"%s\"",
		 c->seq, want);
}

static int alloc_res(struct conn *c, struct ibv_context *verbs)
{
	c->buf = aligned_alloc(4096, SM_BUF_LEN);
	if (!c->buf)
		return -1;
	memset(c->buf, 0x5a, SM_BUF_LEN);
	c->ep.pd = ibv_alloc_pd(verbs);
	if (!c->ep.pd)
		goto err;
	c->ep.mr = ibv_reg_mr(c->ep.pd, c->buf, SM_BUF_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	if (!c->ep.mr)
		goto err;
	c->ep.cq = ibv_create_cq(verbs, c->cq_depth ? c->cq_depth : 256, NULL,
				 NULL, 0);
	if (!c->ep.cq)
		goto err;
	return 0;
err:
	vt_fail("setup", "PD/MR/CQ: %s", strerror(errno));
	return -1;
}

static int create_qp(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.send_cq = c->ep.cq, .recv_cq = c->ep.cq,
		.cap = {
			.max_send_wr = c->sq_depth ? c->sq_depth : 32,
			.max_recv_wr = c->rq_depth ? c->rq_depth : 32,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
	};

	if (rdma_create_qp(id, c->ep.pd, &attr)) {
		vt_fail("setup", "rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The connection, then the listener, then the channel they share. */
static void conn_close(struct conn *c)
{
	struct rdma_event_channel *ch = c->ep.ch;

	c->ep.ch = NULL;
	vt_ep_close(&c->ep);
	if (c->listen)
		rdma_destroy_id(c->listen);
	if (ch)
		rdma_destroy_event_channel(ch);
	c->listen = NULL;
	free(c->buf);
	c->buf = NULL;
}

/* Channel, id, address and route resolved, resources: no connection. */
static int client_prepare(struct conn *c)
{
	if (make_channel(c))
		return -1;
	if (rdma_create_id(c->ep.ch, &c->ep.id, c, RDMA_PS_TCP)) {
		vt_fail("setup", "rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(c->ep.id, NULL, (struct sockaddr *)&c->addr,
			      2000)) {
		vt_fail("setup", "rdma_resolve_addr: %s", strerror(errno));
		return -1;
	}
	if (!expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, SM_EVENT_MS,
			  "client address resolved"))
		return -1;
	if (rdma_resolve_route(c->ep.id, 2000)) {
		vt_fail("setup", "rdma_resolve_route: %s", strerror(errno));
		return -1;
	}
	if (!expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, SM_EVENT_MS,
			  "client route resolved"))
		return -1;
	if (alloc_res(c, c->ep.id->verbs))
		return -1;
	return create_qp(c, c->ep.id);
}

/*
 * Connect (retrying for a few seconds while refused), with @nrecv receives
 * posted first.  true once ESTABLISHED.
 */
static bool client_connect(struct conn *c, int nrecv, uint64_t rbase)
{
	long long retry_end = vt_deadline_in(SM_RETRY_MS);
	struct rdma_conn_param param = {
		.responder_resources = 4, .initiator_depth = 4,
	};
	enum rdma_cm_event_type type;
	int i, rv;

	for (;;) {
		c->seq[0] = 0;
		c->n_events = 0;
		c->t0 = vt_now_ms();
		if (client_prepare(c))
			return false;
		for (i = 0; i < nrecv; i++)
			if (post_recv(c->ep.id->qp, c->ep.mr, rbase + i,
				      SM_MSG_LEN * i)) {
				vt_fail("client post recv", "%s",
					strerror(errno));
				return false;
			}
		if (rdma_connect(c->ep.id, &param)) {
			vt_fail("client connect", "rdma_connect: %s",
				strerror(errno));
			return false;
		}
		marker("CONNECTING");
		rv = next_event(c, vt_deadline_in(SM_CONNECT_MS), &type, NULL);
		if (!rv && type == RDMA_CM_EVENT_ESTABLISHED) {
			vt_pass("client connect");
			return true;
		}
		if (rv || type != RDMA_CM_EVENT_REJECTED ||
		    vt_now_ms() >= retry_end) {
			vt_fail("client connect", "%s; events: %s",
				rv ? strerror(-rv) : rdma_event_str(type),
				c->seq);
			return false;
		}
		vt_info("connection refused; retrying");
		conn_close(c);
		usleep(200000);
	}
}

/* Listen and take one connection request, its QP made, unaccepted. */
static bool server_take_request(struct conn *c)
{
	struct rdma_cm_event *req = NULL;
	enum rdma_cm_event_type type;
	int rv;

	c->t0 = vt_now_ms();
	if (make_channel(c))
		return false;
	if (rdma_create_id(c->ep.ch, &c->listen, c, RDMA_PS_TCP) ||
	    rdma_bind_addr(c->listen, (struct sockaddr *)&c->addr) ||
	    rdma_listen(c->listen, 4)) {
		vt_fail("setup", "listen: %s", strerror(errno));
		return false;
	}
	if (!c->listen->verbs) {
		vt_fail("setup", "the bind address is not an RDMA device's");
		return false;
	}
	if (alloc_res(c, c->listen->verbs))
		return false;
	marker("LISTENING");
	rv = next_event(c, vt_deadline_in(20000), &type, &req);
	if (rv || type != RDMA_CM_EVENT_CONNECT_REQUEST) {
		vt_fail("server connect request", "%s; events: %s",
			rv ? strerror(-rv) : rdma_event_str(type), c->seq);
		return false;
	}
	c->ep.id = req->id;
	rdma_ack_cm_event(req);
	return !create_qp(c, c->ep.id);
}

/* Accept with the offer (our MR, a sync time @sync_in ms from now). */
static int server_accept(struct conn *c, int sync_in)
{
	struct sm_offer o = {
		.magic = htobe32(SM_MAGIC), .rkey = htobe32(c->ep.mr->rkey),
		.addr = htobe64((uintptr_t)c->buf),
		.sync_real = htobe64((uint64_t)(real_ms() + sync_in)),
	};
	struct rdma_conn_param param = {
		.private_data = &o, .private_data_len = sizeof(o),
		.responder_resources = 4, .initiator_depth = 4,
	};

	c->sync_real = (long long)be64toh(o.sync_real);
	return rdma_accept(c->ep.id, &param);
}

/* Full server side: request, QP with @nrecv receives, accept, ESTABLISHED. */
static bool server_connect(struct conn *c, int nrecv, uint64_t rbase,
			   int sync_in)
{
	int i;

	if (!server_take_request(c))
		return false;
	for (i = 0; i < nrecv; i++)
		if (post_recv(c->ep.id->qp, c->ep.mr, rbase + i,
			      SM_MSG_LEN * i)) {
			vt_fail("server post recv", "%s", strerror(errno));
			return false;
		}
	if (server_accept(c, sync_in)) {
		vt_fail("server accept", "rdma_accept: %s", strerror(errno));
		return false;
	}
	return expect_event(c, RDMA_CM_EVENT_ESTABLISHED, SM_CONNECT_MS,
			    "server established");
}

#define CLIENT_SEQ "ADDR_RESOLVED ROUTE_RESOLVED ESTABLISHED DISCONNECTED"
#define SERVER_SEQ "CONNECT_REQUEST ESTABLISHED DISCONNECTED"

/* After DISCONNECTED: @nrecv receives flushed in order (plus @nsend sends
 * from @sbase), QP in ERR, a send posted now flushes at once. */
static void check_after_close(struct conn *c, int nrecv, uint64_t rbase,
			      int nsend, uint64_t sbase)
{
	struct ibv_wc wc[64];
	char name[96];
	long long t;
	int n;

	snprintf(name, sizeof(name), "%s QP in ERR after DISCONNECTED",
		 c->side);
	check_qp_state(name, c->ep.id->qp, IBV_QPS_ERR);
	n = vt_poll_cq_until(c->ep.cq, wc, nrecv + nsend, vt_deadline_in(500));
	if (n == nrecv + nsend)
		n += vt_poll_cq_until(c->ep.cq, wc + n, 1, 0);	/* extras? */
	snprintf(name, sizeof(name), "%s outstanding WRs flushed in order",
		 c->side);
	check_flushed(name, wc, n, rbase, nrecv, sbase, nsend);

	/* Posting in ERROR, and the drain marker. */
	t = vt_now_ms();
	snprintf(name, sizeof(name), "%s send posted after close flushed",
		 c->side);
	if (post_send(c->ep.id->qp, c->ep.mr, 9000, true)) {
		vt_fail(name, "ibv_post_send: %s", strerror(errno));
		return;
	}
	n = vt_poll_cq_until(c->ep.cq, wc, 1, vt_deadline_in(SM_PROMPT_MS));
	if (n == 1 && wc[0].wr_id == 9000 &&
	    wc[0].status == IBV_WC_WR_FLUSH_ERR)
		vt_pass("%s (%lld ms)", name, vt_now_ms() - t);
	else
		vt_fail(name, "%d completions in %d ms%s%s", n, SM_PROMPT_MS,
			n ? ", status " : "",
			n ? ibv_wc_status_str(wc[0].status) : "");
}

/* ---- scenarios ------------------------------------------------------------ */

/* 1: modify_qp(ERR) flushes everything, in order, before it returns. */
static void sc_flush(struct conn *c)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16,
						     .max_sge = 1 } };
	struct ibv_qp_init_attr qattr = { .qp_type = IBV_QPT_RC };
	struct ibv_wc wc[64];
	struct ibv_qp *qp, *sqp;
	int i, n, rv, state;
	long long t;

	if (client_prepare(c))
		return;
	qp = c->ep.id->qp;
	state = vt_qp_state(qp);
	vt_info("QP after rdma_create_qp: %s", vt_qp_state_str(state));
	for (i = 0; i < 8; i++) {
		rv = post_recv(qp, c->ep.mr, 1000 + i, SM_MSG_LEN * i);
		rv = rv ? rv : post_send(qp, c->ep.mr, 2000 + i, i % 2 == 0);
		if (rv) {
			vt_fail("flush post", "%s", strerror(rv));
			return;
		}
	}
	n = ibv_poll_cq(c->ep.cq, 64, wc);
	vt_check(n == 0, "flush nothing completes before ERR", "%d completions",
		 n);
	if (modify_err(qp)) {
		vt_fail("flush modify_qp(ERR)", "%s", strerror(errno));
		return;
	}
	/* No waiting: the flush happened inside modify_qp. */
	n = vt_poll_cq_until(c->ep.cq, wc, 64, 0);
	check_flushed("flush 8 recv + 8 send (4 unsignaled) flushed before "
		      "modify_qp returned", wc, n, 1000, 8, 2000, 8);
	check_qp_state("flush QP in ERR", qp, IBV_QPS_ERR);

	/* Posts in ERROR complete at once, unsignaled too. */
	t = vt_now_ms();
	rv = post_send(qp, c->ep.mr, 3000, false);
	rv = rv ? rv : post_recv(qp, c->ep.mr, 3001, 0);
	if (rv) {
		vt_fail("flush post in ERR", "%s", strerror(rv));
		return;
	}
	n = vt_poll_cq_until(c->ep.cq, wc, 2, vt_deadline_in(SM_PROMPT_MS));
	n += vt_poll_cq_until(c->ep.cq, wc + n, 1, 0);
	if (n == 2 && wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	    wc[1].status == IBV_WC_WR_FLUSH_ERR &&
	    ((wc[0].wr_id == 3000 && wc[1].wr_id == 3001) ||
	     (wc[0].wr_id == 3001 && wc[1].wr_id == 3000)))
		vt_pass("flush posts in ERR complete at once (%lld ms)",
			vt_now_ms() - t);
	else
		vt_fail("flush posts in ERR complete at once", "%d completions "
			"within %d ms (expected unsignaled send 3000 and recv "
			"3001, FLUSH_ERR)", n, SM_PROMPT_MS);

	/* The drain marker. */
	for (i = 0; i < 3; i++) {
		rv = post_send(qp, c->ep.mr, 4000 + i, true);
		if (rv)
			break;
		n = vt_poll_cq_until(c->ep.cq, wc, 1,
				     vt_deadline_in(SM_PROMPT_MS));
		if (n != 1 || wc[0].wr_id != 4000u + i ||
		    wc[0].status != IBV_WC_WR_FLUSH_ERR)
			break;
	}
	vt_check(i == 3, "flush drain marker completes (3 rounds)",
		 "round %d: %s", i,
		 rv ? strerror(rv) : "no FLUSH_ERR completion");

	/* A QP on an SRQ: LAST_WQE_REACHED. */
	c->srq = ibv_create_srq(c->ep.pd, &sattr);
	if (!c->srq) {
		vt_fail("flush srq", "ibv_create_srq: %s", strerror(errno));
		return;
	}
	qattr.send_cq = c->ep.cq;
	qattr.recv_cq = c->ep.cq;
	qattr.srq = c->srq;
	qattr.cap.max_send_wr = 4;
	qattr.cap.max_send_sge = 1;
	sqp = ibv_create_qp(c->ep.pd, &qattr);
	if (!sqp) {
		vt_fail("flush srq", "ibv_create_qp on SRQ: %s",
			strerror(errno));
		goto out_srq;
	}
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1 };

		if (ibv_modify_qp(sqp, &a, IBV_QP_STATE | IBV_QP_PORT |
				  IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
			vt_info("srq QP to INIT: %s", strerror(errno));
	}
	if (modify_err(sqp))
		vt_fail("flush srq modify_qp(ERR)", "%s", strerror(errno));
	else
		vt_check(wait_async(c->ep.id->verbs,
				    IBV_EVENT_QP_LAST_WQE_REACHED, 2000),
			 "flush SRQ QP gets IBV_EVENT_QP_LAST_WQE_REACHED",
			 "not within 2 s");
	ibv_destroy_qp(sqp);
out_srq:
	ibv_destroy_srq(c->srq);
	c->srq = NULL;
}

/* 6: thousands of WRs flushed. */
static void sc_flush_many(struct conn *c)
{
	enum { NR = 4000, NS = 4000 };
	struct ibv_recv_wr rwr[100], *rbad;
	struct ibv_send_wr swr[100], *sbad;
	struct ibv_sge sge = { 0 };
	struct ibv_wc *wc;
	int i, j, n;
	long long t;

	c->cq_depth = 8192 + 64;
	c->sq_depth = 4096;
	c->rq_depth = 4096;
	if (client_prepare(c))
		return;
	sge.addr = (uintptr_t)c->buf;
	sge.length = SM_MSG_LEN;
	sge.lkey = c->ep.mr->lkey;
	for (i = 0; i < NR; i += 100) {
		for (j = 0; j < 100; j++) {
			rwr[j] = (struct ibv_recv_wr){
				.wr_id = i + j, .sg_list = &sge, .num_sge = 1,
				.next = j < 99 ? &rwr[j + 1] : NULL,
			};
		}
		if (ibv_post_recv(c->ep.id->qp, rwr, &rbad)) {
			vt_fail("flush-many post recv", "at %d: %s", i,
				strerror(errno));
			return;
		}
	}
	for (i = 0; i < NS; i += 100) {
		for (j = 0; j < 100; j++) {
			swr[j] = (struct ibv_send_wr){
				.wr_id = 100000 + i + j, .sg_list = &sge,
				.num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = (i + j) % 64 == 63 ?
					      IBV_SEND_SIGNALED : 0,
				.next = j < 99 ? &swr[j + 1] : NULL,
			};
		}
		if (ibv_post_send(c->ep.id->qp, swr, &sbad)) {
			vt_fail("flush-many post send", "at %d: %s", i,
				strerror(errno));
			return;
		}
	}
	wc = calloc(NR + NS + 64, sizeof(*wc));
	if (!wc)
		return;
	t = vt_now_ms();
	if (modify_err(c->ep.id->qp)) {
		vt_fail("flush-many modify_qp(ERR)", "%s", strerror(errno));
		free(wc);
		return;
	}
	vt_info("modify_qp(ERR) took %lld ms", vt_now_ms() - t);
	n = vt_poll_cq_until(c->ep.cq, wc, NR + NS + 64, 0);
	check_flushed("flush-many 4000 recv + 4000 send flushed in order "
		      "before modify_qp returned", wc, n, 0, NR, 100000, NS);
	check_qp_state("flush-many QP in ERR", c->ep.id->qp, IBV_QPS_ERR);
	free(wc);
}

/* 2, 3a, 8: graceful close started by the client. */
static void sc_disconnect(struct conn *c, bool server)
{
	long long t;
	int state;

	if (server) {
		if (!server_connect(c, 8, 500, 0))
			return;
		wait_disconnected(c, 10000, "server DISCONNECTED");
		vt_check(c->disc_status == 0, "server DISCONNECTED status 0",
			 "status %d", c->disc_status);
		check_after_close(c, 8, 500, 0, 0);
		check_quiet_and_seq(c, SM_QUIET_MS, SERVER_SEQ);
		return;
	}
	if (!client_connect(c, 8, 500))
		return;
	t = vt_now_ms();
	if (rdma_disconnect(c->ep.id)) {
		vt_fail("client rdma_disconnect", "%s", strerror(errno));
		return;
	}
	t = vt_now_ms() - t;
	vt_check(t < 500, "client rdma_disconnect returns at once",
		 "took %lld ms", t);
	state = vt_qp_state(c->ep.id->qp);
	vt_info("client QP right after rdma_disconnect: %s",
		vt_qp_state_str(state));
	/* Queued while closing: must be flushed when the close completes. */
	if (post_send(c->ep.id->qp, c->ep.mr, 600, true)) {
		vt_info("post_send while closing refused: %s", strerror(errno));
		state = -1;
	} else {
		state = 1;
	}
	t = vt_now_ms();
	if (wait_disconnected(c, 4000, "client DISCONNECTED (graceful, "
			      "before the close timer)"))
		vt_info("DISCONNECTED %lld ms after rdma_disconnect",
			c->t_disc - t);
	vt_check(c->disc_status == 0, "client DISCONNECTED status 0",
		 "status %d", c->disc_status);
	check_after_close(c, 8, 500, state == 1 ? 1 : 0, 600);
	check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
}

/* 3b: both sides call rdma_disconnect at the same instant. */
static void sc_both(struct conn *c, bool server)
{
	long long wait;

	if (server ? !server_connect(c, 4, 500, 1500) :
		     !client_connect(c, 4, 500))
		return;
	if (!server && !c->sync_real) {
		vt_fail("both sync", "no sync time in the accept private data");
		return;
	}
	wait = c->sync_real - real_ms();
	vt_info("disconnecting in %lld ms", wait);
	if (wait > 0 && wait < 5000)
		usleep(wait * 1000);
	if (rdma_disconnect(c->ep.id))
		vt_info("rdma_disconnect: %s (the peer's close came first)",
			strerror(errno));
	wait_disconnected(c, 8000, server ? "server DISCONNECTED" :
			  "client DISCONNECTED");
	vt_info("%s DISCONNECTED status %d", c->side, c->disc_status);
	check_after_close(c, 4, 500, 0, 0);
	check_quiet_and_seq(c, SM_QUIET_MS, server ? SERVER_SEQ : CLIENT_SEQ);
}

/* 3c: the client is SIGKILLed mid-transfer; the server survives. */
static void sc_kill(struct conn *c, bool server)
{
	struct ibv_wc wc[16];
	int i, inflight = 0;
	bool ready = false;
	long n = 0;

	if (server) {
		if (!server_connect(c, 32, 500, 0))
			return;
		if (wait_disconnected(c, 25000, "server DISCONNECTED after "
				      "the client was killed"))
			vt_check(c->disc_status == -ECONNRESET, "kill server "
				 "DISCONNECTED status -ECONNRESET (reset)",
				 "status %d", c->disc_status);
		check_after_close(c, 32, 500, 0, 0);
		check_quiet_and_seq(c, SM_QUIET_MS, SERVER_SEQ);
		return;
	}
	if (!client_connect(c, 0, 0))
		return;
	/* RDMA WRITEs into the server's buffer until killed. */
	while (vt_ms_left(vt_run_deadline)) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->buf, .length = 4096,
			.lkey = c->ep.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = n, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = c->peer_addr +
					(n % 8) * 4096,
				     .rkey = c->peer_rkey },
		}, *bad;

		if (inflight < 16 && !ibv_post_send(c->ep.id->qp, &wr, &bad)) {
			inflight++;
			n++;
		}
		i = ibv_poll_cq(c->ep.cq, 16, wc);
		if (i > 0)
			inflight -= i;
		if (i > 0 && wc[0].status != IBV_WC_SUCCESS) {
			vt_fail("kill client WRITE", "%s",
				ibv_wc_status_str(wc[0].status));
			return;
		}
		if (n >= 64 && !ready) {
			marker("READY");
			ready = true;
		}
		if (inflight >= 16)
			usleep(100);
	}
	vt_fail("kill", "the client was not killed");
}

/* 4 and 5: the peer drops everything; the close timer ends the close. */
static void sc_close_timer(struct conn *c, bool server, bool destroy)
{
	long long t, dt;

	if (server) {
		if (!server_connect(c, 4, 500, 0))
			return;
		/* It still sees the client's FIN: only its own output is
		 * dropped.  Timing is not asserted here. */
		wait_disconnected(c, 25000, "server DISCONNECTED");
		vt_info("server DISCONNECTED status %d", c->disc_status);
		check_quiet_and_seq(c, SM_QUIET_MS, SERVER_SEQ);
		return;
	}
	if (!client_connect(c, 4, 500))
		return;
	marker("READY");
	if (!wait_go(20000)) {
		vt_fail("close-timer", "no SIGUSR1 from the script");
		return;
	}
	t = vt_now_ms();
	if (rdma_disconnect(c->ep.id)) {
		vt_fail("client rdma_disconnect", "%s", strerror(errno));
		return;
	}
	if (destroy) {
		struct ibv_qp *qp = c->ep.id->qp;
		long long d;

		usleep(200000);
		vt_info("QP before destroy: %s; events so far: %s",
			vt_qp_state_str(vt_qp_state(qp)), c->seq);
		d = vt_now_ms();
		rdma_destroy_qp(c->ep.id);
		d = vt_now_ms() - d;
		vt_check(d < 3000, "destroy-closing rdma_destroy_qp returns "
			 "within 3 s", "took %lld ms", d);
		vt_info("rdma_destroy_qp took %lld ms", d);
		wait_disconnected(c, 10000, "destroy-closing client "
				  "DISCONNECTED");
		vt_info("client DISCONNECTED status %d after %lld ms",
			c->disc_status, c->t_disc - t);
		check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
		return;
	}
	wait_disconnected(c, 12000, "close-timer client DISCONNECTED");
	dt = c->t_disc - t;
	if (c->n_disc)
		vt_check(dt >= 4000 && dt <= 9000, "close-timer DISCONNECTED "
			 "after the 5 s close timer", "after %lld ms, expected "
			 "4000-9000", dt);
	if (c->n_disc)
		vt_check(c->disc_status == -ETIMEDOUT, "close-timer client "
			 "DISCONNECTED status -ETIMEDOUT", "status %d",
			 c->disc_status);
	vt_info("client DISCONNECTED status %d after %lld ms", c->disc_status,
		dt);
	if (c->n_disc)
		check_after_close(c, 4, 500, 0, 0);
	check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
}

/* 7: accept after the client's connection was reset. */
static void sc_accept_fail(struct conn *c, bool server)
{
	enum rdma_cm_event_type type;
	long long end;
	int rv, err;

	if (!server) {
		struct rdma_conn_param param = {
			.responder_resources = 4, .initiator_depth = 4,
		};

		c->t0 = vt_now_ms();
		if (client_prepare(c))
			return;
		if (rdma_connect(c->ep.id, &param)) {
			vt_fail("client connect", "%s", strerror(errno));
			return;
		}
		marker("CONNECTING");
		rv = next_event(c, vt_deadline_in(20000), &type, NULL);
		vt_check(!rv && type != RDMA_CM_EVENT_ESTABLISHED,
			 "accept-fail client connection fails",
			 "%s", rv ? strerror(-rv) : rdma_event_str(type));
		end = vt_deadline_in(3000);
		while (!next_event(c, end, &type, NULL))
			;
		/* ADDR_RESOLVED ROUTE_RESOLVED and one failure event */
		vt_check(c->n_est == 0 && c->n_disc == 0 && c->n_events == 3,
			 "accept-fail client one failure event, no "
			 "ESTABLISHED/DISCONNECTED", "events: %s", c->seq);
		return;
	}
	if (!server_take_request(c))
		return;
	marker("REQUEST");
	if (!wait_go(20000)) {
		vt_fail("accept-fail", "no SIGUSR1 from the script");
		return;
	}
	sleep(1);
	rv = server_accept(c, 0);
	err = errno;
	if (rv)
		vt_info("rdma_accept: %d, errno %d (%s)", rv, err,
			strerror(err));
	vt_check(rv != 0, "accept-fail rdma_accept fails", "returned 0");
	vt_check(rv == 0 || err != 0, "accept-fail rdma_accept sets errno",
		 "errno 0");
	end = vt_deadline_in(3000);
	while (!next_event(c, end, &type, NULL))
		;
	vt_check(!strcmp(c->seq, "CONNECT_REQUEST"),
		 "accept-fail no event after the failed accept",
		 "events: %s", c->seq);
}

/* 9: the client's link goes down. */
static void sc_link_down(struct conn *c, bool server)
{
	if (server) {
		if (!server_connect(c, 4, 500, 0))
			return;
		if (!wait_go(30000))
			vt_fail("link-down", "no SIGUSR1 from the script");
		if (!c->n_disc) {
			enum rdma_cm_event_type type;

			/* Drain what arrived meanwhile. */
			while (!next_event(c, vt_now_ms(), &type, NULL))
				;
		}
		if (!c->n_disc) {
			vt_info("server not disconnected yet: rdma_disconnect");
			rdma_disconnect(c->ep.id);
			wait_disconnected(c, 8000, "server DISCONNECTED");
		}
		{
			enum rdma_cm_event_type type;
			long long end = vt_deadline_in(1000);

			while (!next_event(c, end, &type, NULL))
				;
		}
		vt_check(c->n_disc <= 1, "link-down server at most one "
			 "DISCONNECTED", "%d; events: %s", c->n_disc, c->seq);
		vt_info("server events: %s (status %d)", c->seq,
			c->disc_status);
		return;
	}
	if (!client_connect(c, 4, 500))
		return;
	marker("READY");
	if (wait_disconnected(c, 25000, "link-down client DISCONNECTED"))
		vt_check(c->disc_status == -ECONNRESET, "link-down client "
			 "DISCONNECTED status -ECONNRESET (reset)", "status %d",
			 c->disc_status);
	vt_check(wait_async(c->ep.id->verbs, IBV_EVENT_PORT_ERR, 5000),
		 "link-down client IBV_EVENT_PORT_ERR", "not within 5 s");
	if (c->n_disc)
		check_after_close(c, 4, 500, 0, 0);
	check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
}

/* 10: the server's namespace goes away with both devices. */
static void sc_ns_delete(struct conn *c, bool server)
{
	enum rdma_cm_event_type type;
	bool removal = false;
	long long end, t;
	int rv;

	if (server) {
		if (!server_connect(c, 4, 500, 0))
			return;
		/* Killed by the script. */
		while (vt_ms_left(vt_run_deadline) &&
		       !next_event(c, vt_run_deadline, &type, NULL))
			;
		vt_info("server events: %s", c->seq);
		return;
	}
	if (!client_connect(c, 4, 500))
		return;
	marker("READY");
	end = vt_deadline_in(30000);
	while (!removal) {
		rv = next_event(c, end, &type, NULL);
		if (rv)
			break;
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			removal = true;
	}
	vt_check(removal, "ns-delete client DEVICE_REMOVAL", "not within 30 s; "
		 "events: %s", c->seq);
	vt_check(c->n_disc <= 1, "ns-delete at most one DISCONNECTED",
		 "events: %s", c->seq);
	vt_check(!strcmp(c->seq, "ADDR_RESOLVED ROUTE_RESOLVED ESTABLISHED "
			 "DEVICE_REMOVAL") ||
		 !strcmp(c->seq, CLIENT_SEQ " DEVICE_REMOVAL"),
		 "ns-delete client event sequence", "got \"%s\"", c->seq);
	t = vt_now_ms();
	conn_close(c);
	t = vt_now_ms() - t;
	vt_check(t < 5000, "ns-delete client teardown", "took %lld ms", t);
}

/* 12: rdma_disconnect after modify_qp(ERR): the ERR -> SQD move is a no-op. */
static void sc_error_disconnect(struct conn *c, bool server)
{
	int rv;

	if (server) {
		if (!server_connect(c, 4, 500, 0))
			return;
		wait_disconnected(c, 10000, "server DISCONNECTED");
		check_after_close(c, 4, 500, 0, 0);
		check_quiet_and_seq(c, SM_QUIET_MS, SERVER_SEQ);
		return;
	}
	if (!client_connect(c, 4, 500))
		return;
	if (modify_err(c->ep.id->qp)) {
		vt_fail("client modify_qp(ERR)", "%s", strerror(errno));
		return;
	}
	rv = rdma_disconnect(c->ep.id);
	vt_check(!rv, "client rdma_disconnect after modify_qp(ERR) returns 0",
		 "returned %d (%s)", rv, strerror(rv > 0 ? rv : errno));
	check_qp_state("client QP in ERR after rdma_disconnect", c->ep.id->qp,
		       IBV_QPS_ERR);
	wait_disconnected(c, 10000, "client DISCONNECTED");
	check_after_close(c, 4, 500, 0, 0);
	check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
}

static int modify_reset(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

/* The first of @len bytes of @p that is not @byte, or -1. */
static long first_not(const uint8_t *p, size_t len, uint8_t byte)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != byte)
			return (long)i;
	return -1;
}

static void sc_reset_server(struct conn *c)
{
	struct ibv_wc wc[8];
	long long wait;
	long bad;
	int n;

	if (!server_connect(c, 4, 500, 1500))
		return;
	vt_check(!modify_reset(c->ep.id->qp), "server modify_qp(RTS -> RESET)",
		 "%s", strerror(errno));
	check_qp_state("server QP in RESET", c->ep.id->qp, IBV_QPS_RESET);
	wait_disconnected(c, 5000, "server DISCONNECTED after RESET");
	n = vt_poll_cq_until(c->ep.cq, wc, 8, vt_deadline_in(500));
	vt_check(n == 0, "receives discarded without completions",
		 "%d completions, first %s", n,
		 n > 0 ? ibv_wc_status_str(wc[0].status) : "");
	/* The client writes 1.5 s after the accept; give it time. */
	wait = c->sync_real - real_ms() + 1500;
	if (wait > 0 && wait < 5000)
		usleep(wait * 1000);
	bad = first_not(c->buf, SM_BUF_LEN, 0x5a);
	vt_check(bad < 0, "no WRITE placed after RESET",
		 "buffer changed at byte %ld (0x%02x)", bad,
		 bad < 0 ? 0 : c->buf[bad]);
	check_qp_state("server QP still in RESET after the close", c->ep.id->qp,
		       IBV_QPS_RESET);
	check_quiet_and_seq(c, SM_QUIET_MS, SERVER_SEQ);
}

/* 13: RTS -> RESET aborts the connection; the peer's WRITEs go nowhere. */
static void sc_reset(struct conn *c, bool server)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 77, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	long long wait;
	int n;

	if (server) {
		sc_reset_server(c);
		return;
	}
	if (!client_connect(c, 0, 0))
		return;
	wait = c->sync_real - real_ms();
	if (wait > 0 && wait < 5000)
		usleep(wait * 1000);
	memset(c->buf, 0xa5, 4096);
	sge = (struct ibv_sge){ .addr = (uintptr_t)c->buf, .length = 4096,
				.lkey = c->ep.mr->lkey };
	wr.wr.rdma.remote_addr = c->peer_addr;
	wr.wr.rdma.rkey = c->peer_rkey;
	if (ibv_post_send(c->ep.id->qp, &wr, &bad)) {
		vt_fail("client post WRITE", "%s", strerror(errno));
		return;
	}
	n = vt_poll_cq_until(c->ep.cq, &wc, 1, vt_deadline_in(5000));
	vt_check(n == 1 && wc.status != IBV_WC_SUCCESS,
		 "client WRITE after the peer's RESET does not succeed",
		 "%d completions%s%s", n, n ? ", status " : "",
		 n ? ibv_wc_status_str(wc.status) : "");
	wait_disconnected(c, 5000, "client DISCONNECTED");
	check_quiet_and_seq(c, SM_QUIET_MS, CLIENT_SEQ);
}

/* Poll @n completions within 5 s; all must be successful. */
static void check_all_ok(struct conn *c, int n, const char *name)
{
	struct ibv_wc wc[32];
	int got = vt_poll_cq_until(c->ep.cq, wc, n, vt_deadline_in(5000)), i;

	for (i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			break;
	vt_check(got == n && i == got, name,
		 "%d of %d completions, completion %d: %s", got, n, i,
		 i < got ? ibv_wc_status_str(wc[i].status) : "-");
}

/*
 * 14: WQEs posted before the connection is up wait for it and, in
 * peer-to-peer mode, for the RTR (RFC 6581, 3).  @nrecv receives and 8
 * SENDs are posted first.
 */
static void sc_early_post(struct conn *c, bool server, int nrecv)
{
	char name[96];
	int i;

	if (server) {
		if (!server_take_request(c))
			return;
	} else if (client_prepare(c)) {
		return;
	}
	for (i = 0; i < nrecv; i++)
		if (post_recv(c->ep.id->qp, c->ep.mr, 500 + i,
			      SM_MSG_LEN * (i + 1)))
			goto err_post;
	for (i = 0; i < 8; i++)
		if (post_send(c->ep.id->qp, c->ep.mr, 600 + i, true))
			goto err_post;
	if (server) {
		if (server_accept(c, 0)) {
			vt_fail("server accept", "%s", strerror(errno));
			return;
		}
		if (!expect_event(c, RDMA_CM_EVENT_ESTABLISHED, SM_CONNECT_MS,
				  "server established"))
			return;
	} else {
		struct rdma_conn_param param = {
			.responder_resources = 4, .initiator_depth = 4,
		};

		if (rdma_connect(c->ep.id, &param) ||
		    !expect_event(c, RDMA_CM_EVENT_ESTABLISHED, SM_CONNECT_MS,
				  "client established"))
			return;
	}
	snprintf(name, sizeof(name), "%s: %d WRs posted before the "
		 "connection completed successfully", c->side, nrecv + 8);
	check_all_ok(c, nrecv + 8, name);
	if (!server && rdma_disconnect(c->ep.id))
		vt_fail("client rdma_disconnect", "%s", strerror(errno));
	wait_disconnected(c, 10000, server ? "server DISCONNECTED" :
			  "client DISCONNECTED");
	return;
err_post:
	vt_fail("post before connecting", "%s", strerror(errno));
}

/* bad-tail: WRITEs before the bad one, after it, and each one's length */
#define BT_GOOD		8
#define BT_AFTER	2
#define BT_LEN		512
#define BT_FILL(k)	(0x40 + (k))

/* Has the server's buffer BT_FILL(k) at WRITE k's place, for k < BT_GOOD? */
static void bad_tail_server_check(struct conn *c)
{
	int k;

	for (k = 0; k < BT_GOOD + 1 + BT_AFTER; k++) {
		const uint8_t *p = c->buf + k * BT_LEN;
		uint8_t want = k < BT_GOOD ? BT_FILL(k) : 0x5a;
		long at = first_not(p, BT_LEN, want);

		if (at >= 0) {
			vt_fail("bad-tail server buffer",
				"WRITE %d's place: byte %ld is 0x%02x, not 0x%02x",
				k, at, p[at], want);
			return;
		}
	}
	vt_pass("bad-tail server buffer: the WRITEs before the bad one landed, none after it");
}

/* bad-tail, client: what the completions must be, in posting order. */
static void bad_tail_client_check(struct conn *c, enum ibv_wc_status bad)
{
	struct ibv_wc wc[BT_GOOD + 1 + BT_AFTER];
	int n = BT_GOOD + 1 + BT_AFTER, got, k;

	got = vt_poll_cq_until(c->ep.cq, wc, n, vt_deadline_in(5000));
	if (got != n) {
		vt_fail("bad-tail completions", "%d of %d", got, n);
		return;
	}
	for (k = 0; k < n; k++) {
		enum ibv_wc_status want = k < BT_GOOD ? IBV_WC_SUCCESS :
					  k == BT_GOOD ? bad :
					  IBV_WC_WR_FLUSH_ERR;

		if (wc[k].wr_id != (uint64_t)k || wc[k].status != want) {
			vt_fail("bad-tail completions",
				"completion %d: wr_id %llu %s, want %d %s", k,
				(unsigned long long)wc[k].wr_id,
				ibv_wc_status_str(wc[k].status), k,
				ibv_wc_status_str(want));
			return;
		}
	}
	vt_pass("bad-tail completions: the WRITEs before the bad WQE succeed in order, it fails %s, the rest are flushed",
		ibv_wc_status_str(bad));
}

/*
 * bad-inv-tail's bad WQE: a Local Invalidate of an STag that names
 * nothing (the server's rkey with another key: no window, no FR MR).
 */
static void bad_tail_make_inv(struct ibv_send_wr *wr, uint32_t peer_rkey)
{
	wr->opcode = IBV_WR_LOCAL_INV;
	wr->sg_list = NULL;
	wr->num_sge = 0;
	wr->invalidate_rkey = peer_rkey ^ 0x5a;
}

/*
 * A bad WQE behind small WRITEs posted in one call (see top): a WRITE
 * with a bad lkey, or with @bad_inv a Local Invalidate that fails.
 */
static void sc_bad_tail(struct conn *c, bool server, bool bad_inv)
{
	struct ibv_send_wr wr[BT_GOOD + 1 + BT_AFTER], *bad;
	struct ibv_sge sge[BT_GOOD + 1 + BT_AFTER];
	int n = BT_GOOD + 1 + BT_AFTER, k;

	if (server) {
		if (!server_connect(c, 0, 0, 0))
			return;
		if (wait_disconnected(c, 10000, "server DISCONNECTED"))
			bad_tail_server_check(c);
		return;
	}
	if (!client_connect(c, 0, 0))
		return;
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < n; k++) {
		memset(c->buf + k * BT_LEN, BT_FILL(k), BT_LEN);
		sge[k] = (struct ibv_sge) {
			.addr = (uintptr_t)c->buf + k * BT_LEN,
			.length = BT_LEN,
			.lkey = c->ep.mr->lkey ^ (k == BT_GOOD ? 0xff00 : 0),
		};
		wr[k].wr_id = k;
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].opcode = IBV_WR_RDMA_WRITE;
		wr[k].send_flags = IBV_SEND_SIGNALED;
		wr[k].wr.rdma.remote_addr = c->peer_addr + k * BT_LEN;
		wr[k].wr.rdma.rkey = c->peer_rkey;
		wr[k].next = k + 1 < n ? &wr[k + 1] : NULL;
	}
	if (bad_inv) {
		sge[BT_GOOD].lkey = c->ep.mr->lkey;
		bad_tail_make_inv(&wr[BT_GOOD], c->peer_rkey);
	}
	if (ibv_post_send(c->ep.id->qp, wr, &bad)) {
		vt_fail("bad-tail post", "%s", strerror(errno));
		return;
	}
	bad_tail_client_check(c, bad_inv ? IBV_WC_LOC_QP_OP_ERR :
					IBV_WC_LOC_PROT_ERR);
	wait_disconnected(c, 10000, "client DISCONNECTED");
}

/* ---- main ---------------------------------------------------------------- */

static const char *const scenarios[] = {
	"flush", "flush-many", "disconnect", "both", "kill", "close-timer",
	"destroy-closing", "accept-fail", "link-down", "ns-delete",
	"error-disconnect", "reset", "early-post", "early-post-raw", "bad-tail",
	"bad-inv-tail",
};

static void usage(const char *prog)
{
	size_t i;

	fprintf(stderr, "usage: %s --scenario NAME (-s BIND_ADDR | -c "
		"SERVER_ADDR) [-p PORT] [-t SECS]\nscenarios:", prog);
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(stderr, " %s", scenarios[i]);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 'S' },
		{ 0 },
	};
	struct vt_args a = { .port = SM_DEFAULT_PORT, .secs = SM_DEFAULT_SECS };
	const char *sc = NULL;
	struct conn c = { 0 };
	bool server;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = vt_next_opt(argc, argv, "", opts, &a)) != -1) {
		if (opt != 'S') {
			usage(argv[0]);
			return 2;
		}
		sc = optarg;
	}
	if (!a.addr || !sc || optind != argc || a.secs <= 0) {
		usage(argv[0]);
		return 2;
	}
	server = a.server;
	vt_detail_size = 512;	/* room for the event sequences */
	signal(SIGUSR1, on_usr1);
	vt_start(a.secs);
	c.side = server ? "server" : "client";
	c.t0 = vt_now_ms();
	if (vt_resolve(a.addr, a.port, server, &c.addr))
		goto out;
	vt_info("scenario %s, %s %s port %s", sc, c.side, a.addr, a.port);

	if (!strcmp(sc, "flush") && !server)
		sc_flush(&c);
	else if (!strcmp(sc, "flush-many") && !server)
		sc_flush_many(&c);
	else if (!strcmp(sc, "disconnect"))
		sc_disconnect(&c, server);
	else if (!strcmp(sc, "both"))
		sc_both(&c, server);
	else if (!strcmp(sc, "kill"))
		sc_kill(&c, server);
	else if (!strcmp(sc, "close-timer"))
		sc_close_timer(&c, server, false);
	else if (!strcmp(sc, "destroy-closing"))
		sc_close_timer(&c, server, true);
	else if (!strcmp(sc, "accept-fail"))
		sc_accept_fail(&c, server);
	else if (!strcmp(sc, "link-down"))
		sc_link_down(&c, server);
	else if (!strcmp(sc, "ns-delete"))
		sc_ns_delete(&c, server);
	else if (!strcmp(sc, "error-disconnect"))
		sc_error_disconnect(&c, server);
	else if (!strcmp(sc, "reset"))
		sc_reset(&c, server);
	else if (!strcmp(sc, "early-post"))
		sc_early_post(&c, server, 8);
	else if (!strcmp(sc, "early-post-raw"))
		sc_early_post(&c, server, 0);
	else if (!strcmp(sc, "bad-tail"))
		sc_bad_tail(&c, server, false);
	else if (!strcmp(sc, "bad-inv-tail"))
		sc_bad_tail(&c, server, true);
	else {
		usage(argv[0]);
		return 2;
	}
	vt_info("%s events: %s", c.side, c.seq[0] ? c.seq : "(none)");
	conn_close(&c);
out:
	return vt_finish();
}
