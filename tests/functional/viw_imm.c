// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_imm: RFC 7306 Immediate Data between viw peers, IBV_WR_SEND_WITH_IMM
 * and IBV_WR_RDMA_WRITE_WITH_IMM (tests/vm/guest/imm.sh; docs/semantics.md,
 * "Immediate data").
 *
 *   viw_imm pair -a DEV_A -b DEV_B [-g GID_INDEX]
 *        one process, one RC QP on each device, connected through
 *        modify_qp: payload placed, immediate data, opcode and wc_flags,
 *        receive WQEs consumed in order and left unwritten by a WRITE with
 *        immediate, the data of the WRITEs before visible when the
 *        completion is polled, zero-length and inline forms, the
 *        solicited event, both directions; last, a WRITE with immediate
 *        to a QP without a receive: REM_INV_REQ_ERR, both QPs in ERROR.
 *   viw_imm target -d DEV --dgid IP --dqpn N --qpn-file F [--recvs K]
 *        [--post write-imm|send-imm|both] [--want-sq STATUS]
 *        [--want-recv N] [--fatal] [-t SECS]
 *        the viw side of a raw peer (tests/tools/viw_peer): a QP that
 *        accepts a modify_qp connection from IP's QP N, with K receives
 *        of 64 bytes; it posts the given WRs (16 bytes, imm 0xa1b2c3d4,
 *        the WRITE solicited) and expects STATUS (success or
 *        loc_qp_op_err) for each; then N receives complete with
 *        immediate data, and with --fatal the QP ends in ERROR (it sent
 *        a TERMINATE) and the other receives are flushed unwritten.
 *
 * Output: "PASS name" / "FAIL name: why" lines, "N passed, N failed".
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_test.h"

#define BUF_SIZE	(1 << 20)
#define SRC_OFF		0		/* what the sender sends */
#define DST_OFF		(256 << 10)	/* where WRITEs place */
#define RECV_OFF	(512 << 10)	/* receive buffers */
#define RECV_SIZE	(8 << 10)
#define SENTINEL	0xee
#define WAIT_MS		10000

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	union ibv_gid gid;
};

static int side_open(struct side *s, const char *dev, int gid_index)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};

	s->ctx = vt_open_device(dev);
	s->buf = vt_alloc_filled(BUF_SIZE, SENTINEL);
	if (!s->ctx || !s->buf)
		return -1;
	if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cc = s->pd ? ibv_create_comp_channel(s->ctx) : NULL;
	s->cq = s->cc ? ibv_create_cq(s->ctx, 64, NULL, s->cc, 0) : NULL;
	s->mr = s->cq ? ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ) : NULL;
	if (!s->mr || vt_set_nonblock(s->cc->fd))
		return -1;
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &init);
	if (!s->qp)
		return -1;
	return vt_qp_to_init(s->qp, IBV_ACCESS_REMOTE_WRITE);
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->cc)
		ibv_destroy_comp_channel(s->cc);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
}

/* Receive buffer @i of @s: RECV_SIZE bytes at RECV_OFF, wr_id 100 + i. */
static int post_recv(struct side *s, int i, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf + RECV_OFF + i * RECV_SIZE,
		.length = len, .lkey = s->mr->lkey,
	};

	return vt_post_recv(s->qp, 100 + i, &sge, 1);
}

/* The byte at @k of pattern @seed, so that each scenario has its own. */
static uint8_t pat(int seed, size_t k)
{
	return (uint8_t)((k * 13 + seed * 29 + 1) % 251);
}

static void fill(uint8_t *p, size_t len, int seed)
{
	size_t k;

	for (k = 0; k < len; k++)
		p[k] = pat(seed, k);
}

/* Whether @len bytes at @p hold pattern @seed. */
static bool holds(const uint8_t *p, size_t len, int seed)
{
	size_t k;

	for (k = 0; k < len; k++)
		if (p[k] != pat(seed, k))
			return false;
	return true;
}

/* Where a WRITE of a scenario goes: @doff into @to's DST_OFF area. */
struct dst {
	uint64_t addr;
	uint32_t rkey;
};

static struct dst dst_of(struct side *to, uint32_t doff)
{
	struct dst d = { (uintptr_t)to->buf + DST_OFF + doff, to->mr->rkey };

	return d;
}

/* One WR of a scenario: its SGE and the remote side of a WRITE or READ. */
struct op {
	enum ibv_wr_opcode opcode;
	uint32_t soff;		/* at SRC_OFF + soff of the poster's buffer */
	uint32_t len;
	struct dst d;
	uint32_t imm;
	unsigned int flags;	/* besides IBV_SEND_SIGNALED */
};

/* Post @n ops of @from as one list, so that all are queued at once. */
static int post_ops(struct side *from, const struct op *ops, int n)
{
	struct ibv_send_wr wr[4] = {}, *bad;
	struct ibv_sge sge[4];
	int i;

	for (i = 0; i < n && i < 4; i++) {
		sge[i].addr = (uintptr_t)from->buf + SRC_OFF + ops[i].soff;
		sge[i].length = ops[i].len;
		sge[i].lkey = from->mr->lkey;
		wr[i].wr_id = ops[i].opcode;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = ops[i].len ? 1 : 0;
		wr[i].opcode = ops[i].opcode;
		wr[i].send_flags = IBV_SEND_SIGNALED | ops[i].flags;
		wr[i].imm_data = htobe32(ops[i].imm);
		wr[i].wr.rdma.remote_addr = ops[i].d.addr;
		wr[i].wr.rdma.rkey = ops[i].d.rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	return n > 4 ? EINVAL : ibv_post_send(from->qp, wr, &bad);
}

/*
 * One signaled WR from @from's SRC_OFF + @soff: a SEND or WRITE (to @d),
 * with immediate data @imm if @opcode takes it.
 */
static int post_one(struct side *from, enum ibv_wr_opcode opcode,
		    uint32_t soff, uint32_t len, struct dst d, uint32_t imm,
		    unsigned int flags)
{
	struct op op = { opcode, soff, len, d, imm, flags };

	return post_ops(from, &op, 1);
}

static bool poll_one(struct side *s, struct ibv_wc *wc)
{
	return vt_poll_cq_until(s->cq, wc, 1, vt_deadline_in(WAIT_MS)) == 1;
}

/* The sender's completions of @n WRs: all successful. */
static void check_sent(const char *name, struct side *s, int n)
{
	struct ibv_wc wc[4];
	int got = vt_poll_cq_until(s->cq, wc, n, vt_deadline_in(WAIT_MS));
	int i, ok = got == n;

	for (i = 0; i < got; i++)
		ok &= wc[i].status == IBV_WC_SUCCESS;
	vt_check(ok, name, "%d of %d sent, first %s", got, n,
		 got ? ibv_wc_status_str(wc[0].status) : "none");
}

/* What a receive completed by immediate data must look like. */
struct want {
	const char *name;
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t imm;
	uint32_t byte_len;
};

static bool check_recv(struct side *s, const struct want *w)
{
	struct ibv_wc wc;

	if (!poll_one(s, &wc)) {
		vt_fail(w->name, "no receive completion");
		return false;
	}
	vt_check(wc.status == IBV_WC_SUCCESS && wc.wr_id == w->wr_id &&
		 wc.opcode == w->opcode && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		 be32toh(wc.imm_data) == w->imm && wc.byte_len == w->byte_len,
		 w->name,
		 "status %s wr_id %llu opcode %s flags %#x imm %#x len %u",
		 ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
		 vt_wc_opcode_name(wc.opcode), wc.wc_flags,
		 be32toh(wc.imm_data), wc.byte_len);
	return wc.status == IBV_WC_SUCCESS;
}

static uint8_t *recv_buf(struct side *s, int i)
{
	return s->buf + RECV_OFF + i * RECV_SIZE;
}

/*
 * A WRITE, then a WRITE with immediate of 70000 bytes (many segments):
 * the receive completes as RECV_RDMA_WITH_IMM with the WRITE's length,
 * both WRITEs' data is there when it is polled, and the receive buffer
 * is not written.
 */
static void scenario_write_imm(struct side *a, struct side *b)
{
	struct want w = { "write_imm completion", 100,
			  IBV_WC_RECV_RDMA_WITH_IMM, 0x12345678, 70000 };

	fill(a->buf + SRC_OFF, 4096, 1);
	fill(a->buf + SRC_OFF + 4096, 70000, 2);
	if (post_recv(b, 0, RECV_SIZE) || post_recv(b, 1, RECV_SIZE) ||
	    post_one(a, IBV_WR_RDMA_WRITE, 0, 4096, dst_of(b, 0), 0, 0) ||
	    post_one(a, IBV_WR_RDMA_WRITE_WITH_IMM, 4096, 70000,
		     dst_of(b, 4096), w.imm, 0)) {
		vt_fail("write_imm posted", "%s", strerror(errno));
		return;
	}
	if (!check_recv(b, &w))
		return;
	vt_check(holds(b->buf + DST_OFF, 4096, 1) &&
		 holds(b->buf + DST_OFF + 4096, 70000, 2),
		 "write_imm: the WRITEs before are placed when it completes",
		 "data not there");
	vt_check(vt_find_not(recv_buf(b, 0), RECV_SIZE, SENTINEL) < 0,
		 "write_imm: receive buffer not written", "byte %ld written",
		 vt_find_not(recv_buf(b, 0), RECV_SIZE, SENTINEL));
	check_sent("write_imm: both WRITEs complete", a, 2);
}

/*
 * A solicited SEND with immediate of 6000 bytes takes the next receive
 * (the WRITE's took the first) and places its payload there; the
 * solicited event fires.
 */
static void scenario_send_imm(struct side *a, struct side *b)
{
	struct want w = { "send_imm completion", 101, IBV_WC_RECV, 0xcafef00d,
			  6000 };
	uint8_t *rb = recv_buf(b, 1);

	fill(a->buf + SRC_OFF + 80000, 6000, 3);
	if (ibv_req_notify_cq(b->cq, 1) ||
	    post_one(a, IBV_WR_SEND_WITH_IMM, 80000, 6000, dst_of(b, 0), w.imm,
		     IBV_SEND_SOLICITED)) {
		vt_fail("send_imm posted", "%s", strerror(errno));
		return;
	}
	vt_check(!vt_wait_cq_event(b->cc, b->cq, vt_deadline_in(WAIT_MS)),
		 "send_imm: solicited event", "none");
	if (!check_recv(b, &w))
		return;
	vt_check(holds(rb, 6000, 3) && rb[6000] == SENTINEL,
		 "send_imm: payload placed, nothing beyond", "payload wrong");
	check_sent("send_imm sent", a, 1);
}

/* Zero-length forms, in order, then an inline WRITE with immediate. */
static void scenario_small(struct side *a, struct side *b)
{
	static const struct want w[] = {
		{ "zero-length send_imm", 102, IBV_WC_RECV, 1, 0 },
		{ "zero-length write_imm", 103, IBV_WC_RECV_RDMA_WITH_IMM, 2, 0 },
		{ "inline write_imm", 104, IBV_WC_RECV_RDMA_WITH_IMM, 3, 32 },
	};
	int i;

	fill(a->buf + SRC_OFF + 90000, 32, 4);
	for (i = 0; i < 3; i++)
		post_recv(b, 2 + i, RECV_SIZE);
	if (post_one(a, IBV_WR_SEND_WITH_IMM, 0, 0, dst_of(b, 0), 1, 0) ||
	    post_one(a, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, dst_of(b, 0), 2, 0) ||
	    post_one(a, IBV_WR_RDMA_WRITE_WITH_IMM, 90000, 32,
		     dst_of(b, 90000), 3, IBV_SEND_INLINE)) {
		vt_fail("small posted", "%s", strerror(errno));
		return;
	}
	for (i = 0; i < 3; i++)
		if (!check_recv(b, &w[i]))
			return;
	vt_check(holds(b->buf + DST_OFF + 90000, 32, 4) &&
		 vt_find_not(recv_buf(b, 4), RECV_SIZE, SENTINEL) < 0,
		 "inline write_imm placed", "data wrong");
	check_sent("small ones sent", a, 3);
}

/* From b to a: the connection carries immediate data both ways. */
static void scenario_reverse(struct side *a, struct side *b)
{
	struct want w = { "b to a: send_imm", 100, IBV_WC_RECV, 0x0badf00d,
			  100 };

	fill(b->buf + SRC_OFF, 100, 5);
	if (post_recv(a, 0, RECV_SIZE) ||
	    post_one(b, IBV_WR_SEND_WITH_IMM, 0, 100, dst_of(a, 0), w.imm, 0)) {
		vt_fail("reverse posted", "%s", strerror(errno));
		return;
	}
	if (check_recv(a, &w))
		vt_check(holds(recv_buf(a, 0), 100, 5), "b to a: payload",
			 "payload wrong");
	check_sent("b to a sent", b, 1);
}

/*
 * b has no receive left: a's WRITE with immediate is refused with the
 * TERMINATE for "no buffer" (DDP untagged, 0x1/0x2/0x02), which fails the
 * oldest WR a has outstanding with REM_INV_REQ_ERR: the WRITE with
 * immediate itself if it has not completed yet (like a WRITE, it
 * completes once sent), else the READ posted with it, which waits for its
 * response then.  Both QPs end in ERROR.
 */
static void scenario_no_recv(struct side *a, struct side *b)
{
	const struct op ops[] = {
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 0, 16, dst_of(b, 100000), 9, 0 },
		{ IBV_WR_RDMA_READ, 200000, 16, dst_of(b, 100000), 0, 0 },
	};
	struct ibv_wc wc[2] = {};
	int got, bad;

	if (post_ops(a, ops, 2)) {
		vt_fail("no_recv posted", "%s", strerror(errno));
		return;
	}
	got = vt_poll_cq_until(a->cq, wc, 2, vt_deadline_in(WAIT_MS));
	bad = got == 2 && wc[0].status == IBV_WC_SUCCESS ? 1 : 0;
	vt_check(got == 2 && wc[bad].status == IBV_WC_REM_INV_REQ_ERR &&
		 wc[1].status != IBV_WC_SUCCESS,
		 "write_imm without a receive: REM_INV_REQ_ERR",
		 "%d completions: %s, %s", got,
		 got > 0 ? ibv_wc_status_str(wc[0].status) : "-",
		 got > 1 ? ibv_wc_status_str(wc[1].status) : "-");
	vt_info("vendor_err %#x (%s failed)", wc[bad].vendor_err,
		bad ? "the READ" : "the WRITE with immediate");
	vt_check(vt_wait_qp_state(a->qp, IBV_QPS_ERR, WAIT_MS) == IBV_QPS_ERR &&
		 vt_wait_qp_state(b->qp, IBV_QPS_ERR, WAIT_MS) == IBV_QPS_ERR,
		 "no receive: both QPs in ERROR", "a %s b %s",
		 vt_qp_state_str(vt_qp_state(a->qp)),
		 vt_qp_state_str(vt_qp_state(b->qp)));
}

static int connect_pair(struct side *a, struct side *b, int gid_index)
{
	if (vt_qp_to_rtr(a->qp, gid_index, &b->gid, b->qp->qp_num) ||
	    vt_qp_to_rtr(b->qp, gid_index, &a->gid, a->qp->qp_num) ||
	    vt_qp_to_rts(a->qp, 14, 7) || vt_qp_to_rts(b->qp, 14, 7))
		return -1;
	return 0;
}

static int run_pair(const char *dev_a, const char *dev_b, int gid_index)
{
	struct side a = { .name = "a" }, b = { .name = "b" };

	if (side_open(&a, dev_a, gid_index) || side_open(&b, dev_b, gid_index) ||
	    connect_pair(&a, &b, gid_index)) {
		vt_fail("setup", "%s", strerror(errno));
	} else {
		scenario_write_imm(&a, &b);
		scenario_send_imm(&a, &b);
		scenario_small(&a, &b);
		scenario_reverse(&a, &b);
		scenario_no_recv(&a, &b);
	}
	side_close(&a);
	side_close(&b);
	return vt_finish();
}

/* ---- target: the viw side of a raw peer ------------------------------------ */

struct target_opts {
	const char *dev;
	const char *dgid;
	long dqpn;
	const char *qpn_file;
	int recvs;
	const char *post;
	const char *want_sq;
	int want_recv;
	bool fatal;
	int secs;
};

#define TARGET_IMM	0xa1b2c3d4

/* The WRs --post names; the WRITE to the raw peer's STag 0x1234 at 0x1000. */
static int target_post(struct side *s, const char *what)
{
	struct dst peer = { 0x1000, 0x1234 };
	int rv = 0, n = 0;

	if (!strcmp(what, "write-imm") || !strcmp(what, "both")) {
		rv |= post_one(s, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 16, peer,
			       TARGET_IMM, IBV_SEND_SOLICITED);
		n++;
	}
	if (!strcmp(what, "send-imm") || !strcmp(what, "both")) {
		rv |= post_one(s, IBV_WR_SEND_WITH_IMM, 0, 16, peer, TARGET_IMM,
			       0);
		n++;
	}
	return rv ? -1 : n;
}

static void target_check_sq(const struct target_opts *o, struct side *s,
			    int n)
{
	enum ibv_wc_status want = strcmp(o->want_sq, "loc_qp_op_err") ?
				  IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR;
	struct ibv_wc wc[2];
	int got, i;

	got = vt_poll_cq_until(s->cq, wc, n, vt_deadline_in(o->secs * 1000));
	for (i = 0; i < got && wc[i].status != IBV_WC_WR_FLUSH_ERR; i++)
		vt_check(wc[i].status == want, "sent WR status", "wr %s: %s",
			 vt_wc_opcode_name(wc[i].opcode),
			 ibv_wc_status_str(wc[i].status));
	vt_check(got == n, "sent WRs complete", "%d of %d", got, n);
}

/*
 * --want-recv receives complete with immediate data and nothing placed
 * (the peer's plain form); with --fatal the rest are flushed, unwritten.
 */
static void target_check_rq(const struct target_opts *o, struct side *s)
{
	struct ibv_wc wc;
	int i, ev;

	for (i = 0; i < o->want_recv; i++) {
		struct want w = { "receive with immediate data", 100 + i,
				  IBV_WC_RECV_RDMA_WITH_IMM, 0x12345678, 0 };

		check_recv(s, &w);
	}
	if (!o->fatal)
		return;
	/* The side that sends the TERMINATE goes to ERROR without an event. */
	vt_check(vt_wait_qp_state(s->qp, IBV_QPS_ERR, o->secs * 1000) ==
		 IBV_QPS_ERR, "QP in ERROR", "state %s",
		 vt_qp_state_str(vt_qp_state(s->qp)));
	ev = vt_qp_async_event(s->ctx, s->qp, 0);
	vt_info("async event: %s", ev >= 0 ? ibv_event_type_str(ev) : "none");
	for (i = o->want_recv; i < o->recvs; i++) {
		bool got = poll_one(s, &wc);

		vt_check(got && wc.status == IBV_WC_WR_FLUSH_ERR &&
			 vt_find_not(recv_buf(s, i), 64, SENTINEL) < 0,
			 "other receives flushed, unwritten", "wr %d: %s", i,
			 got ? ibv_wc_status_str(wc.status) : "none");
	}
}

static int run_target(const struct target_opts *o)
{
	struct side s = { .name = "target" };
	union ibv_gid dgid;
	int i, n = 0;

	if (side_open(&s, o->dev, 1) || vt_parse_gid(o->dgid, &dgid)) {
		vt_fail("setup", "%s", strerror(errno));
		goto out;
	}
	for (i = 0; i < o->recvs; i++)
		post_recv(&s, i, 64);
	if (vt_qp_to_rtr(s.qp, 1, &dgid, o->dqpn) ||
	    vt_qp_to_rts(s.qp, 14, 7)) {
		vt_fail("setup", "modify_qp: %s", strerror(errno));
		goto out;
	}
	vt_publish_qpn(o->qpn_file, s.qp->qp_num);
	if (o->post)
		n = target_post(&s, o->post);
	if (n < 0)
		vt_fail("post", "%s", strerror(errno));
	else if (n)
		target_check_sq(o, &s, n);
	target_check_rq(o, &s);
out:
	side_close(&s);
	return vt_finish();
}

static int parse_target(int argc, char **argv, struct target_opts *o)
{
	static const struct option longopts[] = {
		{ "dgid", required_argument, NULL, 'G' },
		{ "dqpn", required_argument, NULL, 'Q' },
		{ "qpn-file", required_argument, NULL, 'F' },
		{ "recvs", required_argument, NULL, 'r' },
		{ "post", required_argument, NULL, 'P' },
		{ "want-sq", required_argument, NULL, 'S' },
		{ "want-recv", required_argument, NULL, 'R' },
		{ "fatal", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 't':
			o->secs = atoi(optarg);
			break;
		case 'G':
			o->dgid = optarg;
			break;
		case 'Q':
			o->dqpn = atol(optarg);
			break;
		case 'F':
			o->qpn_file = optarg;
			break;
		case 'r':
			o->recvs = atoi(optarg);
			break;
		case 'P':
			o->post = optarg;
			break;
		case 'S':
			o->want_sq = optarg;
			break;
		case 'R':
			o->want_recv = atoi(optarg);
			break;
		case 'f':
			o->fatal = true;
			break;
		default:
			return -1;
		}
	}
	if (!o->dev || !o->dgid || !o->qpn_file || o->recvs > 16 ||
	    o->want_recv > o->recvs)
		return -1;
	return 0;
}

static int parse_pair(int argc, char **argv, const char **a, const char **b,
		      int *gid_index)
{
	int c;

	while ((c = getopt(argc, argv, "a:b:g:")) != -1) {
		switch (c) {
		case 'a':
			*a = optarg;
			break;
		case 'b':
			*b = optarg;
			break;
		case 'g':
			*gid_index = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	return *a && *b ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct target_opts t = { .secs = 30, .want_sq = "success" };
	const char *dev_a = NULL, *dev_b = NULL;
	int gid_index = 1;

	if (argc > 1 && !strcmp(argv[1], "pair")) {
		if (parse_pair(argc - 1, argv + 1, &dev_a, &dev_b, &gid_index))
			goto usage;
		vt_start(60);
		return run_pair(dev_a, dev_b, gid_index);
	}
	if (argc > 1 && !strcmp(argv[1], "target")) {
		if (parse_target(argc - 1, argv + 1, &t))
			goto usage;
		vt_start(t.secs + 10);
		return run_target(&t);
	}
usage:
	fprintf(stderr, "usage: %s pair -a DEV_A -b DEV_B [-g GID_INDEX]\n"
		"       %s target -d DEV --dgid IP --dqpn N --qpn-file F "
		"[--recvs K] [--post write-imm|send-imm|both] "
		"[--want-sq success|loc_qp_op_err] [--want-recv N] [--fatal] "
		"[-t SECS]\n", argv[0], argv[0]);
	return 2;
}
