// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_mw: memory windows and ibv_rereg_mr between two hosts, over
 * rdma_cm connections (docs/semantics.md, "Memory windows and rereg").
 *
 *   viw_mw -s BIND_ADDR [-p PORT] [-t SECS]    (server, the target)
 *   viw_mw -c SERVER_ADDR [-p PORT] [-t SECS]  (client, the initiator)
 *
 * The server registers "target" (64 KiB, LOCAL_WRITE | MW_BIND, no
 * remote rights of its own).  For each connection it allocates a type 2
 * window W2 and binds it with a BIND_MW work request to target[4K, 8K)
 * with REMOTE_READ | REMOTE_WRITE, and a type 1 window W1, bound with
 * ibv_bind_mw to target[16K, 20K) with REMOTE_READ; it also registers a
 * 4 KiB MR "plain" with REMOTE_READ.  It then acts as the scenario says
 * (the client names it in the connect private data) and sends the
 * client the keys in a SEND.  One scenario per connection, because an
 * access violation ends the connection:
 *
 *   valid      WRITE 4 KiB through W2, READ it back through W2, READ 8
 *              bytes through W1: all succeed, the data is in target.
 *              Then SEND with Invalidate of W2 (the server's receive
 *              reports it) and a READ through W2: REM_ACCESS_ERR.
 *   outside    READ through W2 across the window's end (inside the MR).
 *   rights     WRITE through the read-only W1, then a READ through W2.
 *   local_inv  the server invalidates W2 (LOCAL_INV), the client READs.
 *   unbind1    the server unbinds W1 (bind of length 0), the client
 *              READs through W1's old rkey.
 *   inv_type1  SEND with Invalidate of the type 1 W1, then a READ: the
 *              server's receive fails with REM_INV_REQ_ERR, the READ
 *              with REM_OP_ERR (RDMAP: STag cannot be invalidated).
 *   busy       dereg_mr and rereg_mr of target fail while W1 and W2 are
 *              bound; a READ through W2 then still succeeds.
 *   bind_dup, bind_foreign, bind_beyond, bind_alien, bind_badkey,
 *   local_inv1: the server binds the bound type 2 W2 again, binds a
 *              fresh type 2 window to an MR of another PD, or beyond the
 *              end of target, binds a window of another PD, binds with an
 *              lkey that names no MR (the provider passes both through:
 *              only the kernel can tell), invalidates the type 1 W1
 *              locally: MW_BIND_ERR for the binds, LOC_QP_OP_ERR for the
 *              invalidation, and the server's QP goes to ERROR.
 *   rereg_access  plain loses REMOTE_READ (in place, same rkey): READ
 *              fails.
 *   rereg_trans   plain moves to a new buffer: READ with the new rkey
 *              returns the new data, then READ with the old rkey fails.
 *   rereg_pd   plain moves to another PD: READ fails.
 *
 * The client asserts every completion status in posting order (after
 * the failing one, WR_FLUSH_ERR) and the data it read; the server
 * asserts its own completions and that target outside the window writes
 * stays untouched.  At the end the server deallocates the windows and
 * deregisters target, which then succeeds.  "PASS"/"FAIL"/"INFO" lines
 * and a final "N passed, N failed" (viw_test.h).
 */
#define _GNU_SOURCE
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

#define MW_DEFAULT_PORT		"7483"
#define MW_CLIENT_SECS		90
#define MW_SERVER_SECS		100

#define MW_TARGET_LEN		(64 * 1024)
#define MW_W2_OFF		4096
#define MW_W1_OFF		16384
#define MW_WIN_LEN		4096
#define MW_PLAIN_LEN		4096
#define MW_TARGET_FILL		0xa5
#define MW_PLAIN_FILL		0x11
#define MW_MOVED_FILL		0x22
#define MW_CBUF_LEN		(16 * 1024)
#define MW_CQ_MS		5000
#define MW_RETRY_MS		5000
#define MW_MAX_OPS		5

enum mw_scenario {
	MW_S_VALID,
	MW_S_OUTSIDE,
	MW_S_RIGHTS,
	MW_S_LOCAL_INV,
	MW_S_UNBIND1,
	MW_S_INV_TYPE1,
	MW_S_BUSY,
	MW_S_BIND_DUP,
	MW_S_BIND_FOREIGN,
	MW_S_BIND_BEYOND,
	MW_S_BIND_ALIEN,
	MW_S_BIND_BADKEY,
	MW_S_LOCAL_INV1,
	MW_S_REREG_ACCESS,
	MW_S_REREG_TRANS,
	MW_S_REREG_PD,
	MW_NUM_SCENARIOS,
};

static const char *const mw_names[MW_NUM_SCENARIOS] = {
	[MW_S_VALID] = "valid",
	[MW_S_OUTSIDE] = "outside",
	[MW_S_RIGHTS] = "rights",
	[MW_S_LOCAL_INV] = "local_inv",
	[MW_S_UNBIND1] = "unbind1",
	[MW_S_INV_TYPE1] = "inv_type1",
	[MW_S_BUSY] = "busy",
	[MW_S_BIND_DUP] = "bind_dup",
	[MW_S_BIND_FOREIGN] = "bind_foreign",
	[MW_S_BIND_BEYOND] = "bind_beyond",
	[MW_S_BIND_ALIEN] = "bind_alien",
	[MW_S_BIND_BADKEY] = "bind_badkey",
	[MW_S_LOCAL_INV1] = "local_inv1",
	[MW_S_REREG_ACCESS] = "rereg_access",
	[MW_S_REREG_TRANS] = "rereg_trans",
	[MW_S_REREG_PD] = "rereg_pd",
};

/* Server -> client in a SEND; both ends run on the same architecture. */
struct mw_offer {
	uint64_t w2_addr;
	uint64_t w1_addr;
	uint64_t plain_addr;
	uint32_t w2_rkey;
	uint32_t w1_rkey;
	uint32_t plain_rkey;
	uint32_t old_rkey;	/* rereg_trans: plain's rkey before */
};

/* A QP and its CQ, as rdma_cm's synchronous calls make them. */
struct mw_conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
};

static int mw_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return rdma_create_qp(id, pd, &attr);
}

/* Wait until @qp is in ERR (the connection ended), at most @ms. */
static bool mw_wait_qp_err(struct ibv_qp *qp, int ms)
{
	long long end = vt_deadline_in(ms);

	while (vt_now_ms() < end) {
		if (vt_qp_state(qp) == IBV_QPS_ERR)
			return true;
		usleep(10000);
	}
	return false;
}

/* Wait for one completion; its status, or -1 if none came in time. */
static int mw_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	if (vt_poll_cq_until(cq, wc, 1, vt_deadline_in(MW_CQ_MS)) != 1)
		return -1;
	return wc->status;
}

static void mw_check_wc(const char *name, struct ibv_cq *cq,
			enum ibv_wc_opcode opcode, enum ibv_wc_status want)
{
	struct ibv_wc wc;
	int st = mw_wait_wc(cq, &wc);

	if (st < 0) {
		vt_fail(name, "no completion");
		return;
	}
	vt_check(st == (int)want && (st != IBV_WC_SUCCESS ||
				     wc.opcode == opcode), name,
		 "status %s (%d), opcode %d; want %s", ibv_wc_status_str(st),
		 st, wc.opcode, ibv_wc_status_str(want));
}

/* ---- server -------------------------------------------------------------- */

struct mw_server {
	struct rdma_cm_id *listen;
	struct ibv_pd *pd;
	struct ibv_pd *other_pd;
	uint8_t *target;
	struct ibv_mr *target_mr;
	uint8_t *other;
	struct ibv_mr *other_mr;
	struct mw_offer offer;
	struct ibv_mr *offer_mr;
	char recv_buf[64];
	struct ibv_mr *recv_mr;
};

/* Per connection: the windows, plain, its moved buffer. */
struct mw_sconn {
	struct mw_conn c;
	struct ibv_mw *w1;
	struct ibv_mw *w2;
	struct ibv_mw *w3;		/* bind_foreign, bind_beyond */
	uint8_t *plain;
	uint8_t *moved;
	struct ibv_mr *plain_mr;
};

static int mw_post_bind2(struct ibv_mw *mw, struct mw_sconn *k,
			 struct ibv_mr *mr, uint64_t addr, uint64_t len,
			 uint32_t *rkey)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = addr, .length = len,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};
	*rkey = wr.bind_mw.rkey;
	return ibv_post_send(k->c.id->qp, &wr, &bad);
}

static int mw_bind1(struct mw_sconn *k, struct ibv_mr *mr, uint64_t addr,
		    uint64_t len)
{
	struct ibv_mw_bind bind = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = IBV_ACCESS_REMOTE_READ },
	};

	return ibv_bind_mw(k->c.id->qp, k->w1, &bind);
}

static int mw_post_local_inv(struct mw_sconn *k, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	}, *bad;

	return ibv_post_send(k->c.id->qp, &wr, &bad);
}

/* Bind W2 and W1 over target; fills the offer.  0 if both bound. */
static int server_bind_windows(struct mw_server *s, struct mw_sconn *k)
{
	uintptr_t base = (uintptr_t)s->target;
	int before = vt_failed;

	if (mw_post_bind2(k->w2, k, s->target_mr, base + MW_W2_OFF,
			  MW_WIN_LEN, &s->offer.w2_rkey)) {
		vt_fail("bind type 2", "post: %s", strerror(errno));
		return -1;
	}
	mw_check_wc("bind type 2 window", k->c.cq, IBV_WC_BIND_MW,
		    IBV_WC_SUCCESS);
	if (mw_bind1(k, s->target_mr, base + MW_W1_OFF, MW_WIN_LEN)) {
		vt_fail("bind type 1", "ibv_bind_mw: %s", strerror(errno));
		return -1;
	}
	mw_check_wc("bind type 1 window", k->c.cq, IBV_WC_BIND_MW,
		    IBV_WC_SUCCESS);
	s->offer.w2_addr = base + MW_W2_OFF;
	s->offer.w1_addr = base + MW_W1_OFF;
	s->offer.w1_rkey = k->w1->rkey;
	return vt_failed == before ? 0 : -1;
}

static uint8_t *mw_alloc_filled(size_t len, uint8_t fill)
{
	uint8_t *p = aligned_alloc(4096, len);

	if (p)
		memset(p, fill, len);
	return p;
}

static int server_plain(struct mw_server *s, struct mw_sconn *k)
{
	k->plain = mw_alloc_filled(MW_PLAIN_LEN, MW_PLAIN_FILL);
	k->moved = mw_alloc_filled(MW_PLAIN_LEN, MW_MOVED_FILL);
	if (!k->plain || !k->moved)
		return -1;
	k->plain_mr = ibv_reg_mr(s->pd, k->plain, MW_PLAIN_LEN,
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_READ);
	if (!k->plain_mr)
		return -1;
	s->offer.plain_addr = (uintptr_t)k->plain;
	s->offer.plain_rkey = k->plain_mr->rkey;
	s->offer.old_rkey = k->plain_mr->rkey;
	return 0;
}

static void server_rereg(struct mw_server *s, struct mw_sconn *k, int sc)
{
	const char *name = mw_names[sc];
	int rv;

	if (sc == MW_S_REREG_ACCESS) {
		rv = ibv_rereg_mr(k->plain_mr, IBV_REREG_MR_CHANGE_ACCESS,
				  NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
		vt_check(!rv && k->plain_mr->rkey == s->offer.old_rkey, name,
			 "rereg access: %d, rkey %#x was %#x", rv,
			 k->plain_mr->rkey, s->offer.old_rkey);
	} else if (sc == MW_S_REREG_TRANS) {
		rv = ibv_rereg_mr(k->plain_mr, IBV_REREG_MR_CHANGE_TRANSLATION,
				  NULL, k->moved, MW_PLAIN_LEN, 0);
		vt_check(!rv && k->plain_mr->rkey != s->offer.old_rkey, name,
			 "rereg translation: %d, rkey %#x", rv,
			 k->plain_mr->rkey);
		s->offer.plain_addr = (uintptr_t)k->moved;
	} else {
		rv = ibv_rereg_mr(k->plain_mr, IBV_REREG_MR_CHANGE_PD,
				  s->other_pd, NULL, 0, 0);
		vt_check(!rv, name, "rereg pd: %d", rv);
	}
	s->offer.plain_rkey = k->plain_mr->rkey;
}

/* Scenario actions before the offer goes out. */
static void server_before_offer(struct mw_server *s, struct mw_sconn *k,
				int sc)
{
	int rv;

	switch (sc) {
	case MW_S_LOCAL_INV:
		if (!mw_post_local_inv(k, s->offer.w2_rkey))
			mw_check_wc("local_inv: LOCAL_INV completes", k->c.cq,
				    IBV_WC_LOCAL_INV, IBV_WC_SUCCESS);
		break;
	case MW_S_UNBIND1:
		if (!mw_bind1(k, NULL, 0, 0))
			mw_check_wc("unbind1: bind of length 0 completes",
				    k->c.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
		break;
	case MW_S_BUSY:
		rv = ibv_dereg_mr(s->target_mr);
		vt_check(rv == EBUSY, "busy: dereg_mr with bound windows",
			 "returned %d, want EBUSY", rv);
		rv = ibv_rereg_mr(s->target_mr, IBV_REREG_MR_CHANGE_ACCESS,
				  NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_MW_BIND);
		vt_check(rv != 0 && errno == EBUSY,
			 "busy: rereg_mr with bound windows",
			 "returned %d, errno %d", rv, errno);
		break;
	case MW_S_REREG_ACCESS:
	case MW_S_REREG_TRANS:
	case MW_S_REREG_PD:
		server_rereg(s, k, sc);
		break;
	default:
		break;
	}
}

/* Scenarios in which the server's own work request fails. */
static void server_bad_local_op(struct mw_server *s, struct mw_sconn *k,
				int sc)
{
	uintptr_t base = (uintptr_t)s->target;
	enum ibv_wc_status want = IBV_WC_MW_BIND_ERR;
	enum ibv_wc_opcode op = IBV_WC_BIND_MW;
	struct ibv_mr fake = *s->target_mr;
	uint32_t rkey;
	int rv;

	if (sc == MW_S_BIND_FOREIGN || sc == MW_S_BIND_BEYOND ||
	    sc == MW_S_BIND_ALIEN || sc == MW_S_BIND_BADKEY) {
		k->w3 = ibv_alloc_mw(sc == MW_S_BIND_ALIEN ? s->other_pd : s->pd,
				     IBV_MW_TYPE_2);
		if (!k->w3) {
			vt_fail(mw_names[sc], "alloc_mw: %s", strerror(errno));
			return;
		}
	}
	switch (sc) {
	case MW_S_BIND_DUP:
		/* W2 is bound: a type 2 window must be invalidated first */
		rv = mw_post_bind2(k->w2, k, s->target_mr, base, MW_WIN_LEN,
				   &rkey);
		break;
	case MW_S_BIND_FOREIGN:
		rv = mw_post_bind2(k->w3, k, s->other_mr, (uintptr_t)s->other,
				   MW_WIN_LEN, &rkey);
		break;
	case MW_S_BIND_BEYOND:
		rv = mw_post_bind2(k->w3, k, s->target_mr,
				   base + MW_TARGET_LEN - MW_WIN_LEN / 2,
				   MW_WIN_LEN, &rkey);
		break;
	case MW_S_BIND_ALIEN:
		rv = mw_post_bind2(k->w3, k, s->target_mr, base, MW_WIN_LEN,
				   &rkey);
		break;
	case MW_S_BIND_BADKEY:
		fake.lkey ^= 0x5a5a5a00;
		rv = mw_post_bind2(k->w3, k, &fake, base, MW_WIN_LEN, &rkey);
		break;
	case MW_S_LOCAL_INV1:
		rv = mw_post_local_inv(k, k->w1->rkey);
		want = IBV_WC_LOC_QP_OP_ERR;
		op = IBV_WC_LOCAL_INV;
		break;
	default:
		return;
	}
	if (rv) {
		vt_fail(mw_names[sc], "post: %s", strerror(rv));
		return;
	}
	mw_check_wc(mw_names[sc], k->c.cq, op, want);
}

static int server_send_offer(struct mw_server *s, struct mw_sconn *k)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&s->offer, .length = sizeof(s->offer),
		.lkey = s->offer_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (ibv_post_send(k->c.id->qp, &wr, &bad))
		return -1;
	mw_check_wc("offer sent", k->c.cq, IBV_WC_SEND, IBV_WC_SUCCESS);
	return 0;
}

static int server_post_recv(struct mw_server *s, struct mw_sconn *k)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->recv_buf, .length = sizeof(s->recv_buf),
		.lkey = s->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(k->c.id->qp, &wr, &bad);
}

/* What the client's SEND with Invalidate did at the server. */
static void server_check_inv(struct mw_server *s, struct mw_sconn *k, int sc)
{
	struct ibv_wc wc;
	int st;

	if (sc != MW_S_VALID && sc != MW_S_INV_TYPE1)
		return;
	st = mw_wait_wc(k->c.id->recv_cq, &wc);
	if (sc == MW_S_VALID)
		vt_check(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
			 (wc.wc_flags & IBV_WC_WITH_INV) &&
			 wc.invalidated_rkey == s->offer.w2_rkey,
			 "valid: receive reports the invalidated W2",
			 "status %d flags %#x rkey %#x", st, wc.wc_flags,
			 wc.invalidated_rkey);
	else
		vt_check(st == IBV_WC_REM_INV_REQ_ERR,
			 "inv_type1: receive fails", "status %d", st);
}

/* target outside what the client may write holds the fill. */
static void server_check_target(struct mw_server *s, int sc)
{
	size_t i, bad = 0;

	for (i = 0; i < MW_TARGET_LEN; i++) {
		bool written = sc == MW_S_VALID && i >= MW_W2_OFF &&
			       i < MW_W2_OFF + MW_WIN_LEN;

		if (!written && s->target[i] != MW_TARGET_FILL)
			bad++;
		if (written && s->target[i] != (uint8_t)(i * 7))
			bad++;
	}
	vt_check(!bad, sc == MW_S_VALID ? "valid: WRITE landed in the window" :
		 "target untouched", "%s: %zu bytes differ", mw_names[sc], bad);
	memset(s->target, MW_TARGET_FILL, MW_TARGET_LEN);
}

static void server_conn_free(struct mw_sconn *k)
{
	if (k->w1 && ibv_dealloc_mw(k->w1))
		vt_fail("dealloc_mw", "type 1: %s", strerror(errno));
	if (k->w2 && ibv_dealloc_mw(k->w2))
		vt_fail("dealloc_mw", "type 2: %s", strerror(errno));
	if (k->w3 && ibv_dealloc_mw(k->w3))
		vt_fail("dealloc_mw", "type 2: %s", strerror(errno));
	if (k->c.id) {
		rdma_disconnect(k->c.id);
		rdma_destroy_qp(k->c.id);
		rdma_destroy_id(k->c.id);
	}
	if (k->plain_mr)
		ibv_dereg_mr(k->plain_mr);
	free(k->plain);
	free(k->moved);
}

static int server_accept(struct mw_server *s, struct mw_sconn *k, int *sc)
{
	struct rdma_conn_param param = { .responder_resources = 2,
					 .initiator_depth = 2 };
	struct rdma_cm_id *id;

	if (rdma_get_request(s->listen, &id))
		return -1;
	k->c.id = id;
	if (!id->event || id->event->param.conn.private_data_len < 1)
		return -1;
	*sc = *(const uint8_t *)id->event->param.conn.private_data;
	if (*sc >= MW_NUM_SCENARIOS || mw_create_qp(id, s->pd))
		return -1;
	k->c.cq = id->send_cq;
	k->w1 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_1);
	k->w2 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	if (!k->w1 || !k->w2 || server_post_recv(s, k) ||
	    server_plain(s, k))
		return -1;
	return rdma_accept(id, &param);
}

static void server_one(struct mw_server *s)
{
	struct mw_sconn k = {};
	int sc = -1;

	if (server_accept(s, &k, &sc)) {
		vt_fail("server accept", "scenario %d: %s", sc,
			strerror(errno));
		server_conn_free(&k);
		return;
	}
	if (!server_bind_windows(s, &k)) {
		server_before_offer(s, &k, sc);
		if (!server_send_offer(s, &k)) {
			server_bad_local_op(s, &k, sc);
			server_check_inv(s, &k, sc);
			/* the client reads the offer, acts, and closes */
			mw_wait_qp_err(k.c.id->qp, 20000);
		}
	}
	server_check_target(s, sc);
	server_conn_free(&k);
}

static int server_setup(struct mw_server *s, const char *host,
			const char *port)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *res;

	if (rdma_getaddrinfo(host, port, &hints, &res))
		return -1;
	if (rdma_create_ep(&s->listen, res, NULL, NULL)) {
		rdma_freeaddrinfo(res);
		return -1;
	}
	rdma_freeaddrinfo(res);
	if (rdma_listen(s->listen, 4))
		return -1;
	s->pd = ibv_alloc_pd(s->listen->verbs);
	s->other_pd = ibv_alloc_pd(s->listen->verbs);
	s->target = mw_alloc_filled(MW_TARGET_LEN, MW_TARGET_FILL);
	s->other = mw_alloc_filled(MW_TARGET_LEN, 0);
	if (!s->pd || !s->other_pd || !s->target || !s->other)
		return -1;
	s->target_mr = ibv_reg_mr(s->pd, s->target, MW_TARGET_LEN,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	s->other_mr = ibv_reg_mr(s->other_pd, s->other, MW_TARGET_LEN,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	s->offer_mr = ibv_reg_mr(s->pd, &s->offer, sizeof(s->offer), 0);
	s->recv_mr = ibv_reg_mr(s->pd, s->recv_buf, sizeof(s->recv_buf),
				IBV_ACCESS_LOCAL_WRITE);
	return s->target_mr && s->other_mr && s->offer_mr && s->recv_mr ?
	       0 : -1;
}

static int run_server(const char *host, const char *port)
{
	struct mw_server s = {};
	int sc;

	if (server_setup(&s, host, port)) {
		vt_fail("server setup", "%s", strerror(errno));
		return -1;
	}
	for (sc = 0; sc < MW_NUM_SCENARIOS; sc++)
		server_one(&s);
	/* Every window is gone: target can go now. */
	vt_check(!ibv_dereg_mr(s.target_mr),
		 "dereg_mr once the windows are deallocated", "%s",
		 strerror(errno));
	ibv_dereg_mr(s.other_mr);
	ibv_dereg_mr(s.offer_mr);
	ibv_dereg_mr(s.recv_mr);
	ibv_dealloc_pd(s.other_pd);
	ibv_dealloc_pd(s.pd);
	rdma_destroy_ep(s.listen);
	free(s.target);
	free(s.other);
	return 0;
}

/* ---- client -------------------------------------------------------------- */

struct mw_op {
	enum ibv_wr_opcode opcode;
	uint32_t rkey;
	uint64_t raddr;
	uint32_t len;
	uint32_t loff;			/* in the client's buffer */
	enum ibv_wc_status want;
};

struct mw_client {
	struct mw_conn c;
	struct ibv_pd *pd;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_mr *offer_mr;
	struct mw_offer offer;
};

static void client_drop_mrs(struct mw_client *cl)
{
	if (cl->offer_mr)
		ibv_dereg_mr(cl->offer_mr);
	if (cl->mr)
		ibv_dereg_mr(cl->mr);
	cl->offer_mr = NULL;
	cl->mr = NULL;
}

/*
 * The server sends its offer as soon as the connection is up, so the
 * receive for it is posted before rdma_connect(): a SEND that finds no
 * receive is a DDP error, and the client's QP would end the connection.
 */
static int client_post_offer_recv(struct mw_client *cl)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&cl->offer, .length = sizeof(cl->offer),
	};
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	cl->offer_mr = ibv_reg_mr(cl->pd, &cl->offer, sizeof(cl->offer),
				  IBV_ACCESS_LOCAL_WRITE);
	cl->mr = ibv_reg_mr(cl->pd, cl->buf, MW_CBUF_LEN,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!cl->offer_mr || !cl->mr)
		return -1;
	sge.lkey = cl->offer_mr->lkey;
	return ibv_post_recv(cl->c.id->qp, &wr, &bad);
}

static int client_connect(struct mw_client *cl, const char *host,
			  const char *port, uint8_t sc)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct rdma_conn_param param = {
		.private_data = &sc, .private_data_len = 1,
		.responder_resources = 2, .initiator_depth = 2,
	};
	long long end = vt_deadline_in(MW_RETRY_MS);
	int rv;

	do {
		if (rdma_getaddrinfo(host, port, &hints, &res))
			return -1;
		rv = rdma_create_ep(&cl->c.id, res, NULL, NULL);
		rdma_freeaddrinfo(res);
		if (rv)
			return -1;
		cl->pd = ibv_alloc_pd(cl->c.id->verbs);
		rv = cl->pd ? mw_create_qp(cl->c.id, cl->pd) : -1;
		if (!rv)
			rv = client_post_offer_recv(cl);
		if (!rv)
			rv = rdma_connect(cl->c.id, &param);
		if (!rv)
			break;
		client_drop_mrs(cl);
		rdma_destroy_ep(cl->c.id);
		if (cl->pd)
			ibv_dealloc_pd(cl->pd);
		cl->c.id = NULL;
		cl->pd = NULL;
		usleep(100000);
	} while (vt_now_ms() < end);
	if (rv)
		return -1;
	cl->c.cq = cl->c.id->send_cq;
	return 0;
}

/* The offer, into the receive client_connect() posted. */
static int client_get_offer(struct mw_client *cl)
{
	struct ibv_wc wc;
	int st;

	st = mw_wait_wc(cl->c.id->recv_cq, &wc);
	ibv_dereg_mr(cl->offer_mr);
	cl->offer_mr = NULL;
	return st == IBV_WC_SUCCESS ? 0 : -1;
}

/*
 * Post the work requests as one list, so that all are in the send queue
 * before the peer can answer the first: a READ behind a violating WRITE
 * is then outstanding when the TERMINATE comes, and takes its status.
 */
static int client_post(struct mw_client *cl, const struct mw_op *ops, int n)
{
	struct ibv_send_wr wr[MW_MAX_OPS] = {}, *bad;
	struct ibv_sge sge[MW_MAX_OPS];
	int i;

	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)cl->buf + ops[i].loff,
			.length = ops[i].len, .lkey = cl->mr->lkey,
		};
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = ops[i].opcode;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		if (ops[i].opcode == IBV_WR_SEND_WITH_INV) {
			wr[i].num_sge = 0;
			wr[i].invalidate_rkey = ops[i].rkey;
		} else {
			wr[i].wr.rdma.rkey = ops[i].rkey;
			wr[i].wr.rdma.remote_addr = ops[i].raddr;
		}
	}
	return ibv_post_send(cl->c.id->qp, wr, &bad);
}

#define MW_OP(o, k, a, l, off, w) \
	((struct mw_op){ .opcode = (o), .rkey = (k), .raddr = (a), \
			 .len = (l), .loff = (off), .want = (w) })

/* The client's work requests of scenario @sc; returns how many. */
static int client_ops(const struct mw_offer *o, int sc, struct mw_op *ops)
{
	const enum ibv_wc_status ok = IBV_WC_SUCCESS;
	const enum ibv_wc_status acc = IBV_WC_REM_ACCESS_ERR;
	const enum ibv_wc_status fl = IBV_WC_WR_FLUSH_ERR;
	const enum ibv_wr_opcode rd = IBV_WR_RDMA_READ;

	switch (sc) {
	case MW_S_VALID:
		ops[0] = MW_OP(IBV_WR_RDMA_WRITE, o->w2_rkey, o->w2_addr,
			       MW_WIN_LEN, 0, ok);
		ops[1] = MW_OP(rd, o->w2_rkey, o->w2_addr, MW_WIN_LEN,
			       MW_WIN_LEN, ok);
		ops[2] = MW_OP(rd, o->w1_rkey, o->w1_addr + 8, 8,
			       2 * MW_WIN_LEN, ok);
		ops[3] = MW_OP(IBV_WR_SEND_WITH_INV, o->w2_rkey, 0, 0, 0, ok);
		ops[4] = MW_OP(rd, o->w2_rkey, o->w2_addr, 8, 0, acc);
		return 5;
	case MW_S_OUTSIDE:
		ops[0] = MW_OP(rd, o->w2_rkey, o->w2_addr + MW_WIN_LEN - 4, 8,
			       0, acc);
		ops[1] = MW_OP(rd, o->w2_rkey, o->w2_addr, 8, 64, fl);
		return 2;
	case MW_S_RIGHTS:
		ops[0] = MW_OP(IBV_WR_RDMA_WRITE, o->w1_rkey, o->w1_addr, 64,
			       0, ok);
		ops[1] = MW_OP(rd, o->w2_rkey, o->w2_addr, 8, 64, acc);
		return 2;
	case MW_S_INV_TYPE1:
		ops[0] = MW_OP(IBV_WR_SEND_WITH_INV, o->w1_rkey, 0, 0, 0, ok);
		ops[1] = MW_OP(rd, o->w2_rkey, o->w2_addr, 8, 64,
			       IBV_WC_REM_OP_ERR);
		return 2;
	case MW_S_LOCAL_INV:
	case MW_S_UNBIND1:
		ops[0] = MW_OP(rd, sc == MW_S_LOCAL_INV ? o->w2_rkey :
			       o->w1_rkey, sc == MW_S_LOCAL_INV ? o->w2_addr :
			       o->w1_addr, 8, 0, acc);
		return 1;
	case MW_S_BUSY:
		ops[0] = MW_OP(rd, o->w2_rkey, o->w2_addr, 8, 0, ok);
		return 1;
	case MW_S_REREG_ACCESS:
	case MW_S_REREG_PD:
		ops[0] = MW_OP(rd, o->plain_rkey, o->plain_addr, 8, 0, acc);
		return 1;
	case MW_S_REREG_TRANS:
		ops[0] = MW_OP(rd, o->plain_rkey, o->plain_addr, 8, 0, ok);
		ops[1] = MW_OP(rd, o->old_rkey, o->plain_addr, 8, 64, acc);
		return 2;
	default:
		return 0;	/* the server's own WR fails */
	}
}

static void client_check_wcs(struct mw_client *cl, int sc,
			     const struct mw_op *ops, int n)
{
	struct ibv_wc wc[MW_MAX_OPS];
	int got, i, bad = -1;

	got = vt_poll_cq_until(cl->c.cq, wc, n, vt_deadline_in(MW_CQ_MS));
	for (i = 0; i < got && bad < 0; i++) {
		if (wc[i].wr_id != (uint64_t)i || wc[i].status != ops[i].want)
			bad = i;
	}
	if (got != n || bad >= 0) {
		i = bad >= 0 ? bad : got;
		vt_fail(mw_names[sc], "%d of %d completions; WR %d: %s, want %s",
			got, n, i,
			i < got ? ibv_wc_status_str(wc[i].status) : "none",
			i < n ? ibv_wc_status_str(ops[i].want) : "-");
		return;
	}
	vt_pass("%s: completions as expected", mw_names[sc]);
}

/* The data the client read in its successful READs. */
static void client_check_data(struct mw_client *cl, int sc)
{
	size_t i, bad = 0;

	if (sc == MW_S_VALID) {
		for (i = 0; i < MW_WIN_LEN; i++)
			bad += cl->buf[MW_WIN_LEN + i] !=
			       (uint8_t)((MW_W2_OFF + i) * 7);
		for (i = 0; i < 8; i++)
			bad += cl->buf[2 * MW_WIN_LEN + i] != MW_TARGET_FILL;
	} else if (sc == MW_S_REREG_TRANS) {
		for (i = 0; i < 8; i++)
			bad += cl->buf[i] != MW_MOVED_FILL;
	} else {
		return;
	}
	vt_check(!bad, sc == MW_S_VALID ? "valid: READ through the windows" :
		 "rereg_trans: READ of the new buffer", "%zu bytes differ",
		 bad);
}

static void client_one(struct mw_client *cl, const char *host,
		       const char *port, int sc)
{
	struct mw_op ops[MW_MAX_OPS];
	int n;
	size_t i;

	for (i = 0; i < MW_WIN_LEN; i++)
		cl->buf[i] = (uint8_t)((MW_W2_OFF + i) * 7);
	memset(cl->buf + MW_WIN_LEN, 0, MW_CBUF_LEN - MW_WIN_LEN);
	if (client_connect(cl, host, port, sc) || client_get_offer(cl)) {
		vt_fail(mw_names[sc], "connect or offer: %s", strerror(errno));
		goto out;
	}
	n = client_ops(&cl->offer, sc, ops);
	if (!n) {
		/* the server's failing WR takes the connection down */
		vt_check(mw_wait_qp_err(cl->c.id->qp, 10000), mw_names[sc],
			 "the connection did not end");
		goto out;
	}
	if (client_post(cl, ops, n)) {
		vt_fail(mw_names[sc], "post: %s", strerror(errno));
		goto out;
	}
	client_check_wcs(cl, sc, ops, n);
	client_check_data(cl, sc);
out:
	if (cl->c.id) {
		rdma_disconnect(cl->c.id);
		client_drop_mrs(cl);
		rdma_destroy_ep(cl->c.id);
		cl->c.id = NULL;
	}
	if (cl->pd)
		ibv_dealloc_pd(cl->pd);
	cl->pd = NULL;
}

static int run_client(const char *host, const char *port)
{
	struct mw_client cl = {};
	int sc;

	cl.buf = aligned_alloc(4096, MW_CBUF_LEN);
	if (!cl.buf)
		return -1;
	for (sc = 0; sc < MW_NUM_SCENARIOS; sc++)
		client_one(&cl, host, port, sc);
	free(cl.buf);
	return 0;
}

VT_MAIN(MW_DEFAULT_PORT, MW_CLIENT_SECS, MW_SERVER_SECS, run_client,
	run_server);
