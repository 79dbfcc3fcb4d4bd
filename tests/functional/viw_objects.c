// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_objects: verbs objects, flushing and error paths on one viw device,
 * without a connection.  Runs in the test VM with viw.ko loaded:
 *
 *   viw_objects DEVICE
 *
 * Prints one "PASS name" or "FAIL name: why" line per check (and "INFO"
 * lines that document behaviour) and exits 0 only if every check passed.
 *
 * Behaviour this test pins down (viw, documented in the check names):
 *  - sends posted while the QP is in INIT stay queued (iWARP cannot send
 *    before RTS, and viw does not refuse them at post time); moving the QP
 *    to ERR flushes them in posting order, like the receives;
 *  - WRs posted while the QP is in ERR complete with WR_FLUSH_ERR;
 *  - receive WQEs are validated when the doorbell hands them to the
 *    kernel: an lkey of another PD completes with LOC_PROT_ERR, moves the
 *    QP to ERR and flushes the WRs behind it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "viw_test.h"

#define ITERATIONS 200
#define NUM_RECV 100
#define NUM_SEND 10
#define QP_DEPTH 128
#define BUF_SIZE 4096
#define CQ_TIMEOUT_MS 5000

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_pd *pd;
	struct ibv_pd *other_pd;
	struct ibv_mr *mr;
	struct ibv_mr *other_mr;	/* registered with other_pd */
	char *buf;
	char *other_buf;
};

/* A QP with its own send and receive CQs. */
struct tqp {
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_cap cap;
};

/* Poll until @n completions arrived or @timeout_ms passed. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	return vt_poll_cq_until(cq, wc, n, vt_deadline_in(timeout_ms));
}

/* True if the CQ stays empty for a while. */
static bool cq_stays_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	usleep(100000);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

static bool transition(const char *name, struct ibv_qp *qp,
		       enum ibv_qp_state state);

static struct ibv_qp *create_qp(struct env *e, struct ibv_cq *scq,
				struct ibv_cq *rcq, struct ibv_srq *srq,
				struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = QP_DEPTH,
			.max_recv_wr = srq ? 0 : QP_DEPTH,
			.max_send_sge = 2,
			.max_recv_sge = srq ? 0 : 2,
			.max_inline_data = 64,
		},
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &init);

	if (qp && cap)
		*cap = init.cap;
	return qp;
}

static bool tqp_create(struct env *e, struct tqp *t)
{
	memset(t, 0, sizeof(*t));
	t->scq = ibv_create_cq(e->ctx, 2 * QP_DEPTH, NULL, NULL, 0);
	t->rcq = ibv_create_cq(e->ctx, 2 * QP_DEPTH, NULL, NULL, 0);
	if (t->scq && t->rcq)
		t->qp = create_qp(e, t->scq, t->rcq, NULL, &t->cap);
	return t->qp != NULL;
}

/* A new QP in INIT, or a FAIL line for @name. */
static bool tqp_init(struct env *e, struct tqp *t, const char *name)
{
	if (!tqp_create(e, t)) {
		vt_fail(name, "creating CQs and QP: %s", strerror(errno));
		return false;
	}
	return transition(name, t->qp, IBV_QPS_INIT);
}

static void tqp_destroy(struct tqp *t)
{
	if (t->qp)
		ibv_destroy_qp(t->qp);
	if (t->scq)
		ibv_destroy_cq(t->scq);
	if (t->rcq)
		ibv_destroy_cq(t->rcq);
}

static int modify_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT) {
		attr.pkey_index = 0;
		attr.port_num = 1;
		attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &attr, mask);
}

/* Move to @state and check that ibv_query_qp() reports it. */
static bool transition(const char *name, struct ibv_qp *qp,
		       enum ibv_qp_state state)
{
	int rv = modify_state(qp, state);
	int got;

	if (rv) {
		vt_fail(name, "ibv_modify_qp to %d: %s", state, strerror(rv));
		return false;
	}
	got = vt_qp_state(qp);
	if (got != (int)state) {
		vt_fail(name, "ibv_query_qp says state %d, expected %d", got,
			state);
		return false;
	}
	return true;
}

static int post_recv(struct env *e, struct ibv_qp *qp, uint64_t wr_id,
		     uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf, .length = 64, .lkey = lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct env *e, struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* n completions on @cq: status, opcode, qp_num and wr_id first..first+n-1. */
static bool expect_flushed(const char *name, struct ibv_cq *cq,
			   struct ibv_qp *qp, uint64_t first, int n,
			   enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc[QP_DEPTH * 2];
	int got = poll_n(cq, wc, n, CQ_TIMEOUT_MS), i;

	if (got != n) {
		vt_fail(name, "%d of %d completions", got, n);
		return false;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR ||
		    wc[i].wr_id != first + i || wc[i].opcode != opcode ||
		    wc[i].qp_num != qp->qp_num) {
			vt_fail(name, "completion %d: wr_id %llu status %s "
				"opcode %d qp_num %u", i,
				(unsigned long long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status), wc[i].opcode,
				wc[i].qp_num);
			return false;
		}
	}
	if (!cq_stays_empty(cq)) {
		vt_fail(name, "more than %d completions", n);
		return false;
	}
	return true;
}

static bool create_destroy_once(struct env *e, struct ibv_comp_channel *ch)
{
	struct ibv_srq_init_attr sattr = { .attr = { 16, 1, 0 } };
	struct ibv_pd *pd = ibv_alloc_pd(e->ctx);
	struct ibv_mr *mr = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL, *sqp = NULL;
	struct ibv_srq *srq = NULL;
	bool ok;

	if (pd)
		mr = ibv_reg_mr(pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		cq = ibv_create_cq(e->ctx, 16, NULL, ch, 0);
	if (cq)
		qp = create_qp(e, cq, cq, NULL, NULL);
	if (qp)
		srq = ibv_create_srq(pd, &sattr);
	if (srq)
		sqp = create_qp(e, cq, cq, srq, NULL);
	ok = sqp != NULL;

	ok &= !sqp || !ibv_destroy_qp(sqp);
	ok &= !srq || !ibv_destroy_srq(srq);
	ok &= !qp || !ibv_destroy_qp(qp);
	ok &= !cq || !ibv_destroy_cq(cq);
	ok &= !mr || !ibv_dereg_mr(mr);
	ok &= !pd || !ibv_dealloc_pd(pd);
	return ok;
}

static void test_objects(struct env *e)
{
	const char *name = "create/destroy PD, MR, CQ+channel, QP, SRQ, "
			   "QP on SRQ x200";
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	int i;

	if (!ch) {
		vt_fail(name, "ibv_create_comp_channel: %s", strerror(errno));
		return;
	}
	for (i = 0; i < ITERATIONS; i++) {
		if (!create_destroy_once(e, ch)) {
			vt_fail(name, "iteration %d: %s", i, strerror(errno));
			break;
		}
	}
	if (i == ITERATIONS)
		vt_pass("%s", name);
	ibv_destroy_comp_channel(ch);
}

static void test_state_reporting(struct env *e)
{
	const char *name = "ibv_query_qp: new INIT -> ERR -> RESET -> INIT";
	struct tqp t;

	if (!tqp_create(e, &t)) {
		vt_fail(name, "create: %s", strerror(errno));
		goto out;
	}
	/* RDMAC's IDLE, which verbs call INIT (rdma-core's test_query_rc_qp) */
	if (vt_qp_state(t.qp) != IBV_QPS_INIT) {
		vt_fail(name, "new QP in state %d", vt_qp_state(t.qp));
		goto out;
	}
	if (transition(name, t.qp, IBV_QPS_ERR) &&
	    transition(name, t.qp, IBV_QPS_RESET) &&
	    transition(name, t.qp, IBV_QPS_INIT))
		vt_pass("%s", name);
out:
	tqp_destroy(&t);
}

static bool post_n(struct env *e, struct tqp *t, bool send, int n,
		   const char *name)
{
	int i, rv = 0;

	for (i = 0; i < n && !rv; i++)
		rv = send ? post_send(e, t->qp, i) :
			    post_recv(e, t->qp, i, e->mr->lkey);
	if (rv)
		vt_fail(name, "post %d: %s", i - 1, strerror(rv));
	return !rv;
}

/* Receives and sends posted in INIT flush in order on the way to ERR. */
static void test_flush_on_err(struct env *e)
{
	const char *rname = "INIT: 100 receives flush in order on ERR";
	const char *sname = "INIT: 10 sends stay queued, flush in order on ERR";
	struct tqp t;

	if (!tqp_init(e, &t, rname))
		goto out;
	if (!post_n(e, &t, false, NUM_RECV, rname) ||
	    !post_n(e, &t, true, NUM_SEND, sname))
		goto out;
	if (!cq_stays_empty(t.scq))
		vt_info("sends posted in INIT completed before ERR");
	if (!transition(rname, t.qp, IBV_QPS_ERR))
		goto out;
	if (expect_flushed(rname, t.rcq, t.qp, 0, NUM_RECV, IBV_WC_RECV))
		vt_pass("%s", rname);
	if (expect_flushed(sname, t.scq, t.qp, 0, NUM_SEND, IBV_WC_SEND))
		vt_pass("%s", sname);
out:
	tqp_destroy(&t);
}

/* In ERR, every newly posted WR is flushed (on its doorbell). */
static void test_post_in_err(struct env *e)
{
	const char *rname = "ERR: a posted receive is flushed";
	const char *sname = "ERR: a posted send is flushed";
	struct tqp t;
	int rv;

	if (!tqp_init(e, &t, rname) || !transition(rname, t.qp, IBV_QPS_ERR))
		goto out;
	rv = post_recv(e, t.qp, 7, e->mr->lkey);
	if (rv)
		vt_fail(rname, "ibv_post_recv: %s", strerror(rv));
	else if (expect_flushed(rname, t.rcq, t.qp, 7, 1, IBV_WC_RECV))
		vt_pass("%s", rname);
	rv = post_send(e, t.qp, 9);
	if (rv)
		vt_fail(sname, "ibv_post_send: %s", strerror(rv));
	else if (expect_flushed(sname, t.scq, t.qp, 9, 1, IBV_WC_SEND))
		vt_pass("%s", sname);
out:
	tqp_destroy(&t);
}

static bool wait_cq_event(const char *name, struct ibv_comp_channel *ch,
			  struct ibv_cq *cq)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&pfd, 1, CQ_TIMEOUT_MS) != 1) {
		vt_fail(name, "no completion event within %d ms", CQ_TIMEOUT_MS);
		return false;
	}
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
		vt_fail(name, "ibv_get_cq_event: %s", strerror(errno));
		return false;
	}
	ibv_ack_cq_events(ev_cq, 1);
	if (ev_cq != cq || ev_ctx != (void *)cq) {
		vt_fail(name, "event for another CQ");
		return false;
	}
	return true;
}

static void test_comp_channel(struct env *e)
{
	const char *name = "armed CQ raises an event for a flush completion";
	struct vt_ep ep = { .cc = ibv_create_comp_channel(e->ctx) };
	struct ibv_wc wc;

	if (ep.cc)
		ep.cq = ibv_create_cq(e->ctx, 16, NULL, ep.cc, 0);
	if (ep.cq) {
		ep.cq->cq_context = ep.cq;
		ep.qp = create_qp(e, ep.cq, ep.cq, NULL, NULL);
	}
	if (!ep.qp || !transition(name, ep.qp, IBV_QPS_INIT) ||
	    !transition(name, ep.qp, IBV_QPS_ERR)) {
		vt_fail(name, "setup: %s", strerror(errno));
		goto out;
	}
	if (ibv_req_notify_cq(ep.cq, 0) ||
	    post_recv(e, ep.qp, 1, e->mr->lkey)) {
		vt_fail(name, "arm or post failed");
		goto out;
	}
	if (wait_cq_event(name, ep.cc, ep.cq) &&
	    poll_n(ep.cq, &wc, 1, 1000) == 1)
		vt_pass("%s", name);
out:
	vt_ep_close(&ep);
}

static void test_bad_create(struct env *e)
{
	struct ibv_qp_init_attr init;
	struct ibv_cq *cq, *big;
	struct ibv_qp *qp;

	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	if (!cq) {
		vt_fail("bad create requests", "create_cq: %s", strerror(errno));
		return;
	}
	errno = 0;
	big = ibv_create_cq(e->ctx, e->attr.max_cqe + 1, NULL, NULL, 0);
	if (!big && errno)
		vt_pass("create_cq with cqe > max_cqe fails");
	else
		vt_fail("create_cq with cqe > max_cqe fails", "%s",
			big ? "it succeeded" : "errno not set");
	if (big)
		ibv_destroy_cq(big);

	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	init.cap = (struct ibv_qp_cap){ e->attr.max_qp_wr + 1, 1, 1, 1, 0 };
	errno = 0;
	qp = ibv_create_qp(e->pd, &init);
	if (!qp && errno)
		vt_pass("create_qp with max_send_wr > max_qp_wr fails");
	else
		vt_fail("create_qp with max_send_wr > max_qp_wr fails",
			"it succeeded");
	if (qp)
		ibv_destroy_qp(qp);

	init.cap = (struct ibv_qp_cap){ 1, 1, e->attr.max_sge + 1, 1, 0 };
	errno = 0;
	qp = ibv_create_qp(e->pd, &init);
	if (!qp && errno)
		vt_pass("create_qp with max_send_sge > max_sge fails");
	else
		vt_fail("create_qp with max_send_sge > max_sge fails",
			"it succeeded");
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static void test_too_many_sge(struct env *e)
{
	const char *name = "post_send with num_sge > max_send_sge: EINVAL";
	struct ibv_sge sge[32] = {};
	struct ibv_send_wr wr = {}, *bad = NULL;
	struct tqp t;
	int rv;

	if (!tqp_init(e, &t, name))
		goto out;
	if (t.cap.max_send_sge >= 32) {
		vt_fail(name, "max_send_sge %u too big for the test",
			t.cap.max_send_sge);
		goto out;
	}
	wr.sg_list = sge;
	wr.num_sge = t.cap.max_send_sge + 1;
	wr.opcode = IBV_WR_SEND;
	rv = ibv_post_send(t.qp, &wr, &bad);
	if (rv == EINVAL && bad == &wr)
		vt_pass("%s", name);
	else
		vt_fail(name, "returned %d, bad_wr %s", rv,
			bad == &wr ? "set" : "not set");
out:
	tqp_destroy(&t);
}

/* Posts a chain of 2 * QP_DEPTH + 2 WRs; the ring takes at most its slots. */
static void check_ring_full(const char *name, int rv, uintptr_t bad_index,
			    uint32_t cap)
{
	if (rv != ENOMEM)
		vt_fail(name, "returned %d (%s)", rv, strerror(rv));
	else if (bad_index < cap || bad_index > 2 * QP_DEPTH)
		vt_fail(name, "failed at WR %lu with %u WRs of capacity",
			(unsigned long)bad_index, cap);
	else
		vt_pass("%s", name);
}

static void test_ring_full(struct env *e)
{
	static struct ibv_send_wr swr[2 * QP_DEPTH + 2];
	static struct ibv_recv_wr rwr[2 * QP_DEPTH + 2];
	struct ibv_sge sge = { (uintptr_t)e->buf, 64, e->mr->lkey };
	struct ibv_send_wr *sbad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	struct tqp t;
	int i, n = 2 * QP_DEPTH + 2, rv;

	if (!tqp_init(e, &t, "ring full setup"))
		goto out;
	for (i = 0; i < n; i++) {
		swr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.next = i + 1 < n ? &swr[i + 1] : NULL };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge,
			.num_sge = 1, .next = i + 1 < n ? &rwr[i + 1] : NULL };
	}
	rv = ibv_post_recv(t.qp, rwr, &rbad);
	check_ring_full("RQ ring full: ENOMEM, bad_wr at the first refused",
			rv, rbad ? rbad - rwr : 0, t.cap.max_recv_wr);
	rv = ibv_post_send(t.qp, swr, &sbad);
	check_ring_full("SQ ring full (INIT): ENOMEM, bad_wr at the first "
			"refused", rv, sbad ? sbad - swr : 0,
			t.cap.max_send_wr);
out:
	tqp_destroy(&t);
}

static bool expect_wc(const char *name, const struct ibv_wc *wc,
		      uint64_t wr_id, enum ibv_wc_status status)
{
	if (wc->wr_id == wr_id && wc->status == status &&
	    wc->opcode == IBV_WC_RECV)
		return true;
	vt_fail(name, "wr_id %llu: %s, expected wr_id %llu: %s",
		(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
		(unsigned long long)wr_id, ibv_wc_status_str(status));
	return false;
}

/* A receive with another PD's lkey fails when the kernel takes it. */
/*
 * A receive's lkey is checked when a SEND uses it, not when it is posted
 * (docs/semantics.md section 8): in INIT, one with another PD's lkey
 * waits like the others, and ERROR flushes all three in order.  Its use
 * by a SEND is vm.remote_err's foreign_recv.
 */
static void test_foreign_lkey(struct env *e)
{
	const char *name = "receive with another PD's lkey: accepted when "
			   "posted, flushed in order by ERROR";
	struct ibv_wc wc[3];
	struct tqp t;
	int got;

	if (!tqp_init(e, &t, name))
		goto out;
	if (post_recv(e, t.qp, 100, e->other_mr->lkey) ||
	    post_recv(e, t.qp, 101, e->mr->lkey) ||
	    post_recv(e, t.qp, 102, e->mr->lkey)) {
		vt_fail(name, "post failed");
		goto out;
	}
	if (!cq_stays_empty(t.rcq) || vt_qp_state(t.qp) != IBV_QPS_INIT) {
		vt_fail(name, "completed or failed when posted (QP in %s)",
			vt_qp_state_str(vt_qp_state(t.qp)));
		goto out;
	}
	if (!transition(name, t.qp, IBV_QPS_ERR))
		goto out;
	got = poll_n(t.rcq, wc, 3, CQ_TIMEOUT_MS);
	if (got != 3) {
		vt_fail(name, "%d of 3 completions", got);
		goto out;
	}
	if (expect_wc(name, &wc[0], 100, IBV_WC_WR_FLUSH_ERR) &&
	    expect_wc(name, &wc[1], 101, IBV_WC_WR_FLUSH_ERR) &&
	    expect_wc(name, &wc[2], 102, IBV_WC_WR_FLUSH_ERR))
		vt_pass("%s", name);
out:
	tqp_destroy(&t);
}

static void test_recv_on_srq_qp(struct env *e)
{
	const char *name = "post_recv on a QP with an SRQ: EINVAL";
	struct ibv_srq_init_attr sattr = { .attr = { 16, 1, 0 } };
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(e->pd, &sattr);
	struct ibv_qp *qp = NULL;
	int rv;

	if (cq && srq)
		qp = create_qp(e, cq, cq, srq, NULL);
	if (!qp) {
		vt_fail(name, "setup: %s", strerror(errno));
	} else {
		rv = post_recv(e, qp, 1, e->mr->lkey);
		if (rv == EINVAL)
			vt_pass("%s", name);
		else
			vt_fail(name, "returned %d", rv);
		ibv_destroy_qp(qp);
	}
	if (srq)
		ibv_destroy_srq(srq);
	if (cq)
		ibv_destroy_cq(cq);
}

static int env_setup(struct env *e, const char *dev)
{
	memset(e, 0, sizeof(*e));
	e->ctx = vt_open_device(dev);
	if (!e->ctx) {
		vt_fail("open device", "%s: %s", dev, strerror(errno));
		return -1;
	}
	if (ibv_query_device(e->ctx, &e->attr)) {
		vt_fail("query device", "%s", strerror(errno));
		return -1;
	}
	e->buf = calloc(1, BUF_SIZE);
	e->other_buf = calloc(1, BUF_SIZE);
	e->pd = ibv_alloc_pd(e->ctx);
	e->other_pd = ibv_alloc_pd(e->ctx);
	if (e->pd && e->other_pd && e->buf && e->other_buf) {
		e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE);
		e->other_mr = ibv_reg_mr(e->other_pd, e->other_buf, BUF_SIZE,
					 IBV_ACCESS_LOCAL_WRITE);
	}
	if (!e->mr || !e->other_mr) {
		vt_fail("setup PDs and MRs", "%s", strerror(errno));
		return -1;
	}
	vt_pass("open device, query it, two PDs with an MR each");
	vt_info("max_qp_wr %d max_sge %d max_cqe %d", e->attr.max_qp_wr,
		e->attr.max_sge, e->attr.max_cqe);
	return 0;
}

static void env_teardown(struct env *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->other_mr)
		ibv_dereg_mr(e->other_mr);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->other_pd)
		ibv_dealloc_pd(e->other_pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
	free(e->other_buf);
}

int main(int argc, char **argv)
{
	struct env e;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_start(295);	/* a lost completion must fail the run, not hang it */
	if (!env_setup(&e, argv[1])) {
		test_objects(&e);
		test_state_reporting(&e);
		test_flush_on_err(&e);
		test_post_in_err(&e);
		test_comp_channel(&e);
		test_bad_create(&e);
		test_too_many_sge(&e);
		test_ring_full(&e);
		test_foreign_lkey(&e);
		test_recv_on_srq_qp(&e);
	}
	env_teardown(&e);
	return vt_finish();
}
