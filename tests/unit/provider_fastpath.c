// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_fastpath: libviw's post and poll paths (viw_post.c) on
 * rings in ordinary memory, with the doorbell system call replaced by a
 * stub that records it.  Checks what the provider writes into WQEs, how
 * it refuses bad work requests, when it rings the doorbell, and how it
 * turns CQEs (including garbage ones) into work completions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viw.h"

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			printf("FAIL %s:%d: ", __func__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf("\n");					\
			failures++;					\
		}							\
	} while (0)

static void report(const char *name, int before)
{
	printf("%s %s\n", failures == before ? "PASS" : "FAIL", name);
}

/* The doorbell system calls, recorded. */
static unsigned int doorbells;
static int doorbell_rv;
static bool doorbell_had_wrs;

int ibv_cmd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	doorbells++;
	doorbell_had_wrs |= wr != NULL;
	return doorbell_rv;
}

int ibv_cmd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	doorbells++;
	doorbell_had_wrs |= wr != NULL;
	return doorbell_rv;
}

int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	doorbells++;
	doorbell_had_wrs |= wr != NULL;
	return doorbell_rv;
}

#define SLOTS 8

static struct viw_context ctx;
static struct viw_db_page db;
static struct viw_qp qp;
static struct viw_srq srq;
static struct viw_cq cq;

static void queue_init(struct viw_queue *q, uint32_t slot_size)
{
	uint64_t size = viw_ring_bytes(SLOTS, slot_size);

	free(q->map);
	q->map = aligned_alloc(4096, (size + 4095) & ~4095ull);
	memset(q->map, 0, size);
	q->map_size = size;
	viw_ring_init(&q->ring, q->map, size, SLOTS, slot_size);
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
}

/* A fresh QP (SQ and RQ), SRQ and CQ; the kernel wants wakeups. */
static void setup(void)
{
	memset(&db, 0, sizeof(db));
	db.flags = VIW_DB_NEED_WAKEUP;
	ctx.db = &db;
	ctx.max_sge = VIW_MAX_SGE;
	ctx.max_inline = VIW_MAX_INLINE;

	queue_init(&qp.sq, sizeof(struct viw_sqe));
	queue_init(&qp.rq, sizeof(struct viw_rqe));
	qp.vqp.qp.context = &ctx.vctx.context;
	qp.has_rq = true;
	qp.max_send_sge = 2;
	qp.max_recv_sge = 2;
	qp.max_inline = 32;
	qp.sq_sig_all = false;

	queue_init(&srq.q, sizeof(struct viw_rqe));
	srq.ibv_srq.context = &ctx.vctx.context;
	srq.max_sge = 1;

	queue_init(&cq.q, sizeof(struct viw_cqe));
	cq.ibv_cq.context = &ctx.vctx.context;

	doorbells = 0;
	doorbell_rv = 0;
	doorbell_had_wrs = false;
}

static struct viw_sqe *sqe_at(uint32_t i)
{
	return viw_ring_slot(&qp.sq.ring, i);
}

static struct viw_rqe *rqe_at(struct viw_queue *q, uint32_t i)
{
	return viw_ring_slot(&q->ring, i);
}

static char buf[256];
static struct ibv_sge sge2[2] = {
	{ (uintptr_t)buf, 16, 0x1111 }, { (uintptr_t)buf + 64, 32, 0x2222 },
};

static void test_send_fill(void)
{
	struct ibv_send_wr wr[4], *bad = NULL;
	int before = failures, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 10, .next = &wr[1],
		.sg_list = sge2, .num_sge = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED };
	wr[1] = (struct ibv_send_wr){ .wr_id = 11, .next = &wr[2],
		.sg_list = sge2, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_FENCE };
	wr[1].wr.rdma.remote_addr = 0x123456789abcull;
	wr[1].wr.rdma.rkey = 0xabcd;
	wr[2] = (struct ibv_send_wr){ .wr_id = 12, .next = &wr[3],
		.sg_list = sge2, .num_sge = 1, .opcode = IBV_WR_RDMA_READ };
	wr[2].wr.rdma.remote_addr = 0x1000;
	wr[2].wr.rdma.rkey = 0x77;
	wr[3] = (struct ibv_send_wr){ .wr_id = 13, .num_sge = 0,
		.opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = 0x5555 };

	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == 0, "rv %d", rv);
	CHECK(qp.sq.ring.ctrl->prod == 4, "prod %u", qp.sq.ring.ctrl->prod);
	CHECK(db.seq == 1, "db seq %u", db.seq);
	CHECK(doorbells == 1 && !doorbell_had_wrs, "doorbells %u", doorbells);

	CHECK(sqe_at(0)->wr_id == 10 && sqe_at(0)->opcode == VIW_OP_SEND &&
	      sqe_at(0)->flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED |
				   VIW_WQE_SOLICITED) &&
	      sqe_at(0)->num_sge == 2 && sqe_at(0)->sge[1].lkey == 0x2222 &&
	      sqe_at(0)->sge[1].length == 32 &&
	      sqe_at(0)->sge[1].addr == (uintptr_t)buf + 64, "send sqe");
	CHECK(sqe_at(1)->opcode == VIW_OP_WRITE &&
	      sqe_at(1)->flags == (VIW_WQE_VALID | VIW_WQE_FENCE) &&
	      sqe_at(1)->raddr == 0x123456789abcull &&
	      sqe_at(1)->rkey == 0xabcd, "write sqe");
	CHECK(sqe_at(2)->opcode == VIW_OP_READ && sqe_at(2)->raddr == 0x1000 &&
	      sqe_at(2)->rkey == 0x77 && sqe_at(2)->flags == VIW_WQE_VALID,
	      "read sqe");
	CHECK(sqe_at(3)->opcode == VIW_OP_SEND_INV &&
	      sqe_at(3)->inv_stag == 0x5555 && sqe_at(3)->num_sge == 0,
	      "send_inv sqe");
	report("post_send fills SEND, WRITE, READ, SEND_WITH_INV", before);
}

static struct viw_bind_mw sqe_bind(uint32_t i)
{
	struct viw_bind_mw b;

	memcpy(&b, sqe_at(i)->sge, sizeof(b));
	return b;
}

static void test_mw_fill(void)
{
	struct ibv_mr mr = { .lkey = 0x3344 };
	struct ibv_mw mw = { .rkey = 0x1200, .type = IBV_MW_TYPE_2 };
	struct ibv_mw mw1 = { .rkey = 0x56ff, .type = IBV_MW_TYPE_1 };
	struct ibv_mw_bind bind1 = { .wr_id = 22,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = &mr, .addr = 0x5000, .length = 4096,
			       .mw_access_flags = IBV_ACCESS_REMOTE_READ } };
	struct ibv_send_wr wr[2], *bad;
	struct viw_bind_mw b;
	int before = failures;
	int rv;

	setup();
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 20, .next = &wr[1],
		.opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED };
	wr[0].bind_mw.mw = &mw;
	wr[0].bind_mw.rkey = 0x1201;
	wr[0].bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = &mr,
		.addr = 0x1000, .length = 1ull << 33,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_LOCAL_WRITE };
	wr[1] = (struct ibv_send_wr){ .wr_id = 21, .opcode = IBV_WR_LOCAL_INV,
		.invalidate_rkey = 0x1201 };
	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == 0 && qp.sq.ring.ctrl->prod == 2, "rv %d", rv);
	b = sqe_bind(0);
	CHECK(sqe_at(0)->opcode == VIW_OP_BIND_MW && sqe_at(0)->rkey == 0x1201 &&
	      sqe_at(0)->flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED) &&
	      b.addr == 0x1000 && b.length == 1ull << 33 &&
	      b.mr_lkey == 0x3344 && b.access == VIW_MW_REMOTE_WRITE,
	      "bind sqe");
	CHECK(sqe_at(1)->opcode == VIW_OP_LOCAL_INV &&
	      sqe_at(1)->inv_stag == 0x1201 && sqe_at(1)->num_sge == 0,
	      "local_inv sqe");

	/* another window's index, a zero-based window, inline */
	wr[0].next = NULL;
	wr[0].bind_mw.rkey = 0x1301;
	CHECK(viw_post_send(&qp.vqp.qp, wr, &bad) == EINVAL, "foreign index");
	wr[0].bind_mw.rkey = 0x1201;
	wr[0].bind_mw.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	CHECK(viw_post_send(&qp.vqp.qp, wr, &bad) == EINVAL, "zero based");
	wr[0].bind_mw.bind_info.mw_access_flags = 0;
	wr[0].send_flags = IBV_SEND_INLINE;
	CHECK(viw_post_send(&qp.vqp.qp, wr, &bad) == EINVAL, "inline bind");
	CHECK(qp.sq.ring.ctrl->prod == 2, "bad bind posted");

	/* type 1: through the SQ, the window takes the next key */
	CHECK(viw_bind_mw(&qp.vqp.qp, &mw1, &bind1) == 0, "bind_mw");
	b = sqe_bind(2);
	CHECK(mw1.rkey == 0x5600 && sqe_at(2)->rkey == 0x5600 &&
	      sqe_at(2)->wr_id == 22 && b.length == 4096 &&
	      b.access == VIW_MW_REMOTE_READ, "type 1 bind, rkey %#x",
	      mw1.rkey);
	report("post_send fills BIND_MW, LOCAL_INV; ibv_bind_mw", before);
}

static int post_one(enum ibv_wr_opcode op, int flags, int num_sge,
		    struct ibv_send_wr **bad)
{
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge2,
		.num_sge = num_sge, .opcode = op, .send_flags = flags };

	return viw_post_send(&qp.vqp.qp, &wr, bad);
}

static void test_doorbell_rules(void)
{
	struct ibv_send_wr *bad;
	int before = failures;

	setup();
	db.flags = 0;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(doorbells == 0, "system call while the kernel polls");
	CHECK(db.seq == 1 && qp.sq.ring.ctrl->prod == 1, "not published");

	qp.sq.ring.ctrl->kflags = VIW_RING_KF_ERROR;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post in error");
	CHECK(doorbells == 1, "no doorbell for a QP in error");

	qp.sq.ring.ctrl->kflags = 0;
	db.flags = VIW_DB_NEED_WAKEUP;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(doorbells == 2, "no doorbell with NEED_WAKEUP");

	doorbell_rv = EIO;
	bad = (void *)1;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == EIO, "doorbell error lost");
	CHECK(bad == NULL, "bad_wr set although the WR is in the ring");
	CHECK(qp.sq.ring.ctrl->prod == 4, "prod %u", qp.sq.ring.ctrl->prod);
	report("doorbell only on NEED_WAKEUP or KF_ERROR, errors returned",
	       before);
}

static void test_send_flags(void)
{
	struct ibv_send_wr *bad;
	int before = failures;

	setup();
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(!(sqe_at(0)->flags & VIW_WQE_SIGNALED), "signaled by itself");
	qp.sq_sig_all = true;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(sqe_at(1)->flags & VIW_WQE_SIGNALED, "sq_sig_all ignored");
	report("sq_sig_all", before);
}

static void test_inline(void)
{
	struct ibv_send_wr *bad;
	struct viw_sqe *sqe;
	int before = failures;

	setup();
	memcpy(buf, "hello, ", 7);
	memcpy(buf + 64, "inline world", 12);
	sge2[0].length = 7;
	sge2[1].length = 12;
	CHECK(post_one(IBV_WR_SEND, IBV_SEND_INLINE, 2, &bad) == 0, "post");
	sqe = sqe_at(0);
	CHECK(sqe->flags & VIW_WQE_INLINE, "no INLINE flag");
	CHECK(sqe->inline_len == 19 && sqe->num_sge == 0, "len %u sge %u",
	      sqe->inline_len, sqe->num_sge);
	CHECK(!memcmp(sqe->sge, "hello, inline world", 19), "data");

	sge2[1].length = 26;	/* 33 > qp.max_inline */
	CHECK(post_one(IBV_WR_SEND, IBV_SEND_INLINE, 2, &bad) == EINVAL,
	      "too long inline accepted");
	CHECK(post_one(IBV_WR_RDMA_READ, IBV_SEND_INLINE, 1, &bad) == EINVAL,
	      "inline READ accepted");
	CHECK(qp.sq.ring.ctrl->prod == 1, "refused WRs were posted");
	sge2[0].length = 16;
	sge2[1].length = 32;
	report("inline data copied, too long or READ refused", before);
}

static void test_bad_send(void)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	int before = failures, rv;

	setup();
	CHECK(post_one(IBV_WR_SEND_WITH_IMM, 0, 1, &bad) == EINVAL,
	      "SEND_WITH_IMM accepted");
	CHECK(post_one(IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 1, &bad) == EINVAL,
	      "atomic accepted");
	CHECK(post_one(IBV_WR_SEND, 0, 3, &bad) == EINVAL, "3 > 2 sges");
	CHECK(post_one(IBV_WR_SEND, 0, -1, &bad) == EINVAL, "-1 sges");
	CHECK(post_one(IBV_WR_SEND, IBV_SEND_IP_CSUM, 1, &bad) == EINVAL,
	      "unknown send flag accepted");
	CHECK(qp.sq.ring.ctrl->prod == 0 && doorbells == 0, "something posted");

	/* A bad WR in a chain: the ones before it stay posted. */
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 1, .next = &wr[1],
		.opcode = IBV_WR_SEND };
	wr[1] = (struct ibv_send_wr){ .wr_id = 2, .next = &wr[2],
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	wr[2] = (struct ibv_send_wr){ .wr_id = 3, .opcode = IBV_WR_SEND };
	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == EINVAL && bad == &wr[1], "rv %d bad %p", rv, (void *)bad);
	CHECK(qp.sq.ring.ctrl->prod == 1 && sqe_at(0)->wr_id == 1 &&
	      !(sqe_at(1)->flags & VIW_WQE_VALID), "prod %u",
	      qp.sq.ring.ctrl->prod);
	CHECK(doorbells == 1, "posted WR without doorbell");
	report("bad send WRs refused with EINVAL, bad_wr set", before);
}

static void test_sq_full(void)
{
	struct ibv_send_wr wr[SLOTS + 2], *bad = NULL;
	int before = failures, i, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < SLOTS + 2; i++) {
		wr[i].wr_id = i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].next = i + 1 < SLOTS + 2 ? &wr[i + 1] : NULL;
	}
	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == ENOMEM && bad == &wr[SLOTS], "rv %d", rv);
	CHECK(qp.sq.ring.ctrl->prod == SLOTS, "prod %u",
	      qp.sq.ring.ctrl->prod);

	/* The kernel finishes three: three more fit. */
	qp.sq.ring.ctrl->cons = 3;
	rv = viw_post_send(&qp.vqp.qp, &wr[SLOTS - 1], &bad);
	CHECK(rv == 0, "rv %d after the kernel freed slots", rv);
	CHECK(qp.sq.ring.ctrl->prod == SLOTS + 3, "prod %u",
	      qp.sq.ring.ctrl->prod);
	CHECK(sqe_at(SLOTS)->wr_id == SLOTS - 1, "wrapped slot");
	report("full SQ: ENOMEM at the first WR that does not fit", before);
}

static void test_recv(void)
{
	struct ibv_recv_wr wr[SLOTS + 1], *bad = NULL;
	struct viw_rqe *rqe;
	int before = failures, i, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < SLOTS + 1; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].sg_list = sge2;
		wr[i].num_sge = 2;
		wr[i].next = i < SLOTS ? &wr[i + 1] : NULL;
	}
	rv = viw_post_recv(&qp.vqp.qp, wr, &bad);
	CHECK(rv == ENOMEM && bad == &wr[SLOTS], "rv %d", rv);
	rqe = rqe_at(&qp.rq, 0);
	CHECK(rqe->wr_id == 100 && rqe->num_sge == 2 &&
	      rqe->flags == VIW_WQE_VALID && rqe->sge[1].lkey == 0x2222,
	      "rqe");
	CHECK(qp.rq.ring.ctrl->prod == SLOTS && doorbells == 1, "published");

	setup();
	wr[0].num_sge = 3;
	wr[0].next = NULL;
	rv = viw_post_recv(&qp.vqp.qp, wr, &bad);
	CHECK(rv == EINVAL && bad == &wr[0], "3 sges: rv %d", rv);

	qp.has_rq = false;
	wr[0].num_sge = 1;
	bad = NULL;
	rv = viw_post_recv(&qp.vqp.qp, wr, &bad);
	CHECK(rv == EINVAL && bad == &wr[0], "QP on SRQ: rv %d", rv);
	CHECK(doorbells == 0, "doorbell for nothing");
	report("post_recv: fill, ENOMEM, EINVAL, QP on an SRQ", before);
}

static void test_srq_recv(void)
{
	struct ibv_recv_wr wr[2], *bad = NULL;
	int before = failures, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_recv_wr){ .wr_id = 5, .next = &wr[1],
		.sg_list = sge2, .num_sge = 1 };
	wr[1] = (struct ibv_recv_wr){ .wr_id = 6, .sg_list = sge2,
		.num_sge = 2 };
	rv = viw_post_srq_recv(&srq.ibv_srq, wr, &bad);
	CHECK(rv == EINVAL && bad == &wr[1], "rv %d", rv);
	CHECK(srq.q.ring.ctrl->prod == 1 && rqe_at(&srq.q, 0)->wr_id == 5,
	      "first WR not posted");
	CHECK(doorbells == 1 && !doorbell_had_wrs, "doorbell");
	report("post_srq_recv", before);
}

static void kernel_cqe(uint32_t i, uint8_t status, uint8_t opcode,
		       uint32_t flags)
{
	struct viw_cqe *cqe = viw_ring_slot(&cq.q.ring, i);

	cqe->wr_id = 1000 + i;
	cqe->status = status;
	cqe->opcode = opcode;
	cqe->byte_len = 64 + i;
	cqe->qp_id = 42;
	cqe->inv_stag = 0x9999;
	cqe->vendor_err = status ? 0x123 : 0;
	viw_cqe_publish(cqe, flags);
}

static const enum ibv_wc_status want_status[] = {
	IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
	IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_BAD_RESP_ERR,
	IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR,
	IBV_WC_REM_OP_ERR, IBV_WC_GENERAL_ERR, IBV_WC_MW_BIND_ERR,
};

static void test_poll_status(void)
{
	struct ibv_wc wc[SLOTS];
	uint32_t i, n = VIW_CQE_STATUS_MAX + 1, done = 0;
	int before = failures, got;

	setup();
	while (done < n) {
		for (i = done; i < n && i < done + SLOTS; i++)
			kernel_cqe(i, i, VIW_CQE_OP_RECV, 0);
		got = viw_poll_cq(&cq.ibv_cq, SLOTS, wc);
		CHECK(got == (int)(i - done), "got %d", got);
		for (i = 0; i < (uint32_t)got; i++, done++) {
			CHECK(wc[i].status == want_status[done] &&
			      wc[i].wr_id == 1000 + done &&
			      wc[i].opcode == IBV_WC_RECV &&
			      wc[i].qp_num == 42 &&
			      wc[i].byte_len == 64 + done,
			      "status %u -> %d", done, wc[i].status);
		}
		if (got <= 0)
			break;
	}
	CHECK(cq.q.ring.ctrl->cons == n, "cons %u", cq.q.ring.ctrl->cons);
	CHECK(viw_poll_cq(&cq.ibv_cq, SLOTS, wc) == 0, "empty CQ polled");
	report("poll_cq maps every viw_cqe_status", before);
}

static void test_poll_garbage(void)
{
	struct ibv_wc wc[4];
	int before = failures, got;

	setup();
	kernel_cqe(0, 200, VIW_CQE_OP_SEND, 0);
	kernel_cqe(1, VIW_CQE_SUCCESS, 77, 0);
	kernel_cqe(2, VIW_CQE_SUCCESS, VIW_CQE_OP_RECV, VIW_CQE_INV);
	kernel_cqe(3, VIW_CQE_SUCCESS, VIW_CQE_OP_READ, 0);
	got = viw_poll_cq(&cq.ibv_cq, 2, wc);
	CHECK(got == 2, "got %d, asked for 2", got);
	CHECK(wc[0].status == IBV_WC_GENERAL_ERR && wc[0].vendor_err == 0x123,
	      "unknown status -> %d", wc[0].status);
	CHECK(wc[1].status == IBV_WC_GENERAL_ERR, "unknown opcode accepted");
	CHECK(cq.q.ring.ctrl->cons == 2, "cons %u", cq.q.ring.ctrl->cons);
	CHECK(!(((struct viw_cqe *)viw_ring_slot(&cq.q.ring, 0))->flags &
		VIW_CQE_VALID), "slot not handed back");
	CHECK(((struct viw_cqe *)viw_ring_slot(&cq.q.ring, 2))->flags &
	      VIW_CQE_VALID, "unpolled slot handed back");

	got = viw_poll_cq(&cq.ibv_cq, 4, wc);
	CHECK(got == 2, "got %d", got);
	CHECK(wc[0].wc_flags & IBV_WC_WITH_INV &&
	      wc[0].invalidated_rkey == 0x9999, "invalidate lost");
	CHECK(wc[1].opcode == IBV_WC_RDMA_READ && !wc[1].wc_flags, "read");

	kernel_cqe(4, VIW_CQE_SUCCESS, VIW_CQE_OP_BIND_MW, 0);
	kernel_cqe(5, VIW_CQE_MW_BIND_ERR, VIW_CQE_OP_LOCAL_INV, 0);
	got = viw_poll_cq(&cq.ibv_cq, 4, wc);
	CHECK(got == 2 && wc[0].opcode == IBV_WC_BIND_MW &&
	      wc[1].opcode == IBV_WC_LOCAL_INV &&
	      wc[1].status == IBV_WC_MW_BIND_ERR, "bind/local_inv opcodes");
	report("poll_cq: bad status/opcode -> GENERAL_ERR, INV, partial, MW",
	       before);
}

static void test_notify(void)
{
	int before = failures;

	setup();
	CHECK(viw_req_notify_cq(&cq.ibv_cq, 1) == 0, "rv");
	CHECK(cq.q.ring.ctrl->arm == VIW_CQ_ARM_SOLICITED, "arm %u",
	      cq.q.ring.ctrl->arm);
	CHECK(viw_req_notify_cq(&cq.ibv_cq, 0) == 0, "rv");
	CHECK(cq.q.ring.ctrl->arm ==
	      (VIW_CQ_ARM_SOLICITED | VIW_CQ_ARM_NEXT), "arm %u",
	      cq.q.ring.ctrl->arm);
	CHECK(doorbells == 0, "system call to arm");
	report("req_notify_cq sets arm bits without a system call", before);
}

int main(void)
{
	test_send_fill();
	test_doorbell_rules();
	test_mw_fill();
	test_send_flags();
	test_inline();
	test_bad_send();
	test_sq_full();
	test_recv();
	test_srq_recv();
	test_poll_status();
	test_poll_garbage();
	test_notify();
	if (failures) {
		printf("%d fast path check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
