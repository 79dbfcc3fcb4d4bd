// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_fastpath: libviw's post and poll paths (viw_post.c) on
 * rings in ordinary memory, with the doorbell system call replaced by a
 * stub that records it.  Checks what the provider writes into WQEs, how
 * it refuses bad work requests, when it rings the doorbell, and how it
 * turns CQEs (including garbage ones) into work completions; the same for
 * the extended interface (viw_post_ex.c) through libibverbs' inline
 * ibv_wr_*() and ibv_start_poll() wrappers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viw.h"
#include "viw_check.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The doorbell system calls, recorded. */
static unsigned int doorbells;
static int doorbell_rv;

int viw_db_ring(struct ibv_context *ctx, enum viw_db_kind kind,
		uint32_t handle)
{
	doorbells++;
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
	uint64_t size = viw_rp_ring_bytes(SLOTS, slot_size);

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
}

/* What ibv_qp_to_qp_ex() returns for a QP with VERBS_QP_EX. */
static struct ibv_qp_ex *ibv_qp_to_qp_ex_local(void)
{
	return qp.vqp.comp_mask & VERBS_QP_EX ? &qp.vqp.qp_ex : NULL;
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
	int before = tc_failures, rv;

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
	CHECK(doorbells == 1, "doorbells %u", doorbells);

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
	tc_report("post_send fills SEND, WRITE, READ, SEND_WITH_INV", before);
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
	int before = tc_failures;
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
	tc_report("post_send fills BIND_MW, LOCAL_INV; ibv_bind_mw", before);
}

/* The immediate data's bytes as the consumer gave them, in inv_stag. */
static bool sqe_has_imm(uint32_t i, __be32 imm)
{
	return !memcmp(&sqe_at(i)->inv_stag, &imm, sizeof(imm));
}

static void test_imm_fill(void)
{
	__be32 imm = htobe32(0x11223344);
	struct ibv_send_wr wr[2], *bad;
	int before = tc_failures, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 40, .next = &wr[1],
		.sg_list = sge2, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .imm_data = imm,
		.send_flags = IBV_SEND_SOLICITED };
	wr[1] = (struct ibv_send_wr){ .wr_id = 41, .sg_list = sge2,
		.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htobe32(7), .send_flags = IBV_SEND_INLINE };
	wr[1].wr.rdma.remote_addr = 0x4000;
	wr[1].wr.rdma.rkey = 0x4321;
	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == 0 && qp.sq.ring.ctrl->prod == 2, "rv %d", rv);
	CHECK(sqe_at(0)->opcode == VIW_OP_SEND_IMM && sqe_has_imm(0, imm) &&
	      sqe_at(0)->flags == (VIW_WQE_VALID | VIW_WQE_SOLICITED) &&
	      sqe_at(0)->num_sge == 1 && !sqe_at(0)->raddr, "send_imm sqe");
	CHECK(sqe_at(1)->opcode == VIW_OP_WRITE_IMM &&
	      sqe_has_imm(1, htobe32(7)) && sqe_at(1)->raddr == 0x4000 &&
	      sqe_at(1)->rkey == 0x4321 && sqe_at(1)->inline_len == 16 &&
	      sqe_at(1)->flags == (VIW_WQE_VALID | VIW_WQE_INLINE),
	      "inline write_imm sqe");
	tc_report("post_send fills SEND_WITH_IMM and RDMA_WRITE_WITH_IMM",
		  before);
}

/* Atomics: operands in the SGE area, one 8-byte buffer, nothing inline. */
static void test_atomic_fill(void)
{
	struct ibv_sge res = { (uintptr_t)buf + 128, 8, 0x3333 };
	struct ibv_send_wr wr[2], *bad = NULL;
	struct viw_sqe_atomic at;
	int before = tc_failures, rv;

	setup();
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 20, .next = &wr[1],
		.sg_list = &res, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		.send_flags = IBV_SEND_SIGNALED };
	wr[0].wr.atomic.remote_addr = 0x2000;
	wr[0].wr.atomic.rkey = 0x99;
	wr[0].wr.atomic.compare_add = 5;
	wr[0].wr.atomic.swap = 0x1122334455667788ull;
	wr[1] = wr[0];
	wr[1].wr_id = 21;
	wr[1].next = NULL;
	wr[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[1].wr.atomic.compare_add = 3;

	rv = viw_post_send(&qp.vqp.qp, wr, &bad);
	CHECK(rv == 0, "rv %d", rv);
	memcpy(&at, sqe_at(0)->sge, sizeof(at));
	CHECK(sqe_at(0)->opcode == VIW_OP_ATOMIC_CMP_SWP &&
	      sqe_at(0)->raddr == 0x2000 && sqe_at(0)->rkey == 0x99 &&
	      sqe_at(0)->num_sge == 1 && at.sge.lkey == 0x3333 &&
	      at.sge.length == 8 && at.sge.addr == (uintptr_t)buf + 128 &&
	      at.compare_add == 5 && at.swap == 0x1122334455667788ull,
	      "cmp_swap sqe");
	memcpy(&at, sqe_at(1)->sge, sizeof(at));
	CHECK(sqe_at(1)->opcode == VIW_OP_ATOMIC_FETCH_ADD &&
	      at.compare_add == 3, "fetch_add sqe");

	wr[1].next = NULL;
	wr[1].num_sge = 2;
	CHECK(viw_post_send(&qp.vqp.qp, &wr[1], &bad) == EINVAL,
	      "two SGEs accepted");
	wr[1].num_sge = 1;
	wr[1].send_flags = IBV_SEND_INLINE;
	CHECK(viw_post_send(&qp.vqp.qp, &wr[1], &bad) == EINVAL,
	      "inline atomic accepted");
	CHECK(qp.sq.ring.ctrl->prod == 2, "refused WRs were posted");
	tc_report("post_send fills CMP_AND_SWP, FETCH_AND_ADD", before);
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
	int before = tc_failures;

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
	tc_report("doorbell only on NEED_WAKEUP or KF_ERROR, errors returned",
		  before);
}

/*
 * A queue whose no_doorbell word is set (the SQ while its transmit engine
 * runs, an RQ or SRQ always) is taken by the kernel without a doorbell,
 * unless the QP is in ERROR; each queue's own word counts.
 */
static void test_doorbell_no_doorbell(void)
{
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *rbad;
	struct ibv_send_wr *bad;
	int before = tc_failures;

	setup();
	qp.sq.ring.ctrl->no_doorbell = 1;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(doorbells == 0, "system call while the engine is busy");
	CHECK(qp.sq.ring.ctrl->prod == 1, "not published");

	CHECK(viw_post_recv(&qp.vqp.qp, &rwr, &rbad) == 0, "post_recv");
	CHECK(doorbells == 1, "the SQ's word spared the RQ's doorbell");
	qp.rq.ring.ctrl->no_doorbell = 1;
	CHECK(viw_post_recv(&qp.vqp.qp, &rwr, &rbad) == 0, "post_recv");
	CHECK(doorbells == 1, "system call for an RQ the kernel takes");
	CHECK(qp.rq.ring.ctrl->prod == 2, "RQ not published");

	qp.sq.ring.ctrl->kflags = VIW_RING_KF_ERROR;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post in error");
	CHECK(doorbells == 2, "no doorbell in error although busy");

	qp.sq.ring.ctrl->no_doorbell = 0;
	qp.sq.ring.ctrl->kflags = 0;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(doorbells == 3, "no doorbell once the engine stopped");
	tc_report("no doorbell where the kernel takes WQEs itself, unless in error",
		  before);
}

static void test_send_flags(void)
{
	struct ibv_send_wr *bad;
	int before = tc_failures;

	setup();
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(!(sqe_at(0)->flags & VIW_WQE_SIGNALED), "signaled by itself");
	qp.sq_sig_all = true;
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post");
	CHECK(sqe_at(1)->flags & VIW_WQE_SIGNALED, "sq_sig_all ignored");
	tc_report("sq_sig_all", before);
}

static void test_inline(void)
{
	struct ibv_send_wr *bad;
	struct viw_sqe *sqe;
	int before = tc_failures;

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
	tc_report("inline data copied, too long or READ refused", before);
}

static void test_bad_send(void)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	int before = tc_failures, rv;

	setup();
	CHECK(post_one(IBV_WR_TSO, 0, 1, &bad) == EINVAL, "TSO accepted");
	CHECK(post_one(IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, &bad) == EINVAL,
	      "atomic without a result buffer accepted");
	CHECK(post_one(IBV_WR_SEND, 0, 3, &bad) == EINVAL, "3 > 2 sges");
	CHECK(post_one(IBV_WR_SEND, 0, -1, &bad) == EINVAL, "-1 sges");
	CHECK(post_one(IBV_WR_SEND, IBV_SEND_IP_CSUM, 1, &bad) == EINVAL,
	      "unknown send flag accepted");
	CHECK(qp.sq.ring.ctrl->prod == 0 && doorbells == 0, "something posted");

	/* A bad WR in a chain (an atomic without its buffer) stops it. */
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
	tc_report("bad send WRs refused with EINVAL, bad_wr set", before);
}

static void test_sq_full(void)
{
	struct ibv_send_wr wr[SLOTS + 2], *bad = NULL;
	int before = tc_failures, i, rv;

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
	tc_report("full SQ: ENOMEM at the first WR that does not fit", before);
}

static void test_recv(void)
{
	struct ibv_recv_wr wr[SLOTS + 1], *bad = NULL;
	struct viw_rqe *rqe;
	int before = tc_failures, i, rv;

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
	tc_report("post_recv: fill, ENOMEM, EINVAL, QP on an SRQ", before);
}

static void test_srq_recv(void)
{
	struct ibv_recv_wr wr[2], *bad = NULL;
	int before = tc_failures, rv;

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
	CHECK(doorbells == 1, "doorbell");
	tc_report("post_srq_recv", before);
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
	viw_rp_cqe_publish(cqe, flags);
}

static const enum ibv_wc_status want_status[] = {
	IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
	IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_BAD_RESP_ERR,
	IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR,
	IBV_WC_REM_OP_ERR, IBV_WC_GENERAL_ERR, IBV_WC_MW_BIND_ERR,
	IBV_WC_RETRY_EXC_ERR,
};
_Static_assert(sizeof(want_status) / sizeof(want_status[0]) ==
	       VIW_CQE_STATUS_MAX + 1, "want_status names every viw_cqe_status");

static void test_poll_status(void)
{
	struct ibv_wc wc[SLOTS];
	uint32_t i, n = VIW_CQE_STATUS_MAX + 1, done = 0;
	int before = tc_failures, got;

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
	tc_report("poll_cq maps every viw_cqe_status", before);
}

static void test_poll_atomic(void)
{
	struct ibv_wc wc[2];
	int before = tc_failures, got;

	setup();
	kernel_cqe(0, VIW_CQE_SUCCESS, VIW_CQE_OP_COMP_SWAP, 0);
	kernel_cqe(1, VIW_CQE_SUCCESS, VIW_CQE_OP_FETCH_ADD, 0);
	got = viw_poll_cq(&cq.ibv_cq, 2, wc);
	CHECK(got == 2, "got %d", got);
	CHECK(wc[0].opcode == IBV_WC_COMP_SWAP &&
	      wc[0].status == IBV_WC_SUCCESS, "comp_swap -> %d", wc[0].opcode);
	CHECK(wc[1].opcode == IBV_WC_FETCH_ADD &&
	      wc[1].status == IBV_WC_SUCCESS, "fetch_add -> %d", wc[1].opcode);
	tc_report("poll_cq maps the atomic opcodes", before);
}

static void test_poll_garbage(void)
{
	struct ibv_wc wc[4];
	int before = tc_failures, got;

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
	tc_report("poll_cq: bad status/opcode -> GENERAL_ERR, INV, partial, MW",
		  before);
}

/* A CQE with VIW_CQE_IMM: IBV_WC_WITH_IMM and the bytes as they came. */
static void imm_cqe(uint32_t i, uint8_t opcode, __be32 imm)
{
	struct viw_cqe *cqe = viw_ring_slot(&cq.q.ring, i);

	kernel_cqe(i, VIW_CQE_SUCCESS, opcode, 0);
	viw_rp_cqe_release(cqe);
	memcpy(&cqe->inv_stag, &imm, sizeof(imm));
	viw_rp_cqe_publish(cqe, VIW_CQE_IMM);
}

static void test_poll_imm(void)
{
	struct ibv_wc wc[2];
	int before = tc_failures, got;

	setup();
	imm_cqe(0, VIW_CQE_OP_RECV, htobe32(0xcafe0001));
	imm_cqe(1, VIW_CQE_OP_RECV_RDMA_IMM, htobe32(5));
	got = viw_poll_cq(&cq.ibv_cq, 2, wc);
	CHECK(got == 2, "got %d", got);
	CHECK(wc[0].opcode == IBV_WC_RECV && wc[0].wc_flags == IBV_WC_WITH_IMM &&
	      be32toh(wc[0].imm_data) == 0xcafe0001 &&
	      wc[0].status == IBV_WC_SUCCESS, "recv with imm");
	CHECK(wc[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      wc[1].wc_flags == IBV_WC_WITH_IMM &&
	      be32toh(wc[1].imm_data) == 5 && wc[1].byte_len == 65,
	      "recv_rdma_with_imm");
	tc_report("poll_cq: IBV_WC_WITH_IMM, imm_data, RECV_RDMA_WITH_IMM",
		  before);
}

static void test_notify(void)
{
	int before = tc_failures;

	setup();
	CHECK(viw_req_notify_cq(&cq.ibv_cq, 1) == 0, "rv");
	CHECK(cq.q.ring.ctrl->arm == VIW_CQ_ARM_SOLICITED, "arm %u",
	      cq.q.ring.ctrl->arm);
	CHECK(viw_req_notify_cq(&cq.ibv_cq, 0) == 0, "rv");
	CHECK(cq.q.ring.ctrl->arm ==
	      (VIW_CQ_ARM_SOLICITED | VIW_CQ_ARM_NEXT), "arm %u",
	      cq.q.ring.ctrl->arm);
	CHECK(doorbells == 0, "system call to arm");
	tc_report("req_notify_cq sets arm bits without a system call", before);
}

/* The extended QP interface, as ibv_create_qp_ex() sets it up. */
static struct ibv_qp_ex *qp_ex_setup(uint64_t send_ops)
{
	setup();
	viw_qp_ex_init(&qp, send_ops);
	return ibv_qp_to_qp_ex_local();
}

static bool sq_unlocked(void)
{
	if (pthread_spin_trylock(&qp.sq.lock))
		return false;
	pthread_spin_unlock(&qp.sq.lock);
	return true;
}

static bool any_slot_valid(void)
{
	uint32_t i;

	for (i = 0; i < SLOTS; i++)
		if (sqe_at(i)->flags & VIW_WQE_VALID)
			return true;
	return false;
}

static void test_wr_batch(void)
{
	struct ibv_qp_ex *qpx = qp_ex_setup(VIW_QP_EX_SEND_OPS);
	int before = tc_failures, rv;

	memcpy(buf + 128, "hello", 5);
	ibv_wr_start(qpx);
	qpx->wr_id = 20;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0x1111, (uintptr_t)buf, 16);
	qpx->wr_id = 21;
	qpx->wr_flags = IBV_SEND_FENCE;
	ibv_wr_rdma_write(qpx, 0xabcd, 0x123456789abcull);
	ibv_wr_set_sge_list(qpx, 2, sge2);
	qpx->wr_id = 22;
	qpx->wr_flags = 0;
	ibv_wr_rdma_read(qpx, 0x77, 0x1000);
	ibv_wr_set_sge(qpx, 0x2222, (uintptr_t)buf + 64, 32);
	qpx->wr_id = 23;
	ibv_wr_send_inv(qpx, 0x5555);
	ibv_wr_set_inline_data(qpx, buf + 128, 5);
	CHECK(!any_slot_valid() && qp.sq.ring.ctrl->prod == 0 &&
	      doorbells == 0, "the kernel could see an unfinished batch");

	rv = ibv_wr_complete(qpx);
	CHECK(rv == 0, "rv %d", rv);
	CHECK(sq_unlocked(), "SQ still locked after wr_complete");
	CHECK(qp.sq.ring.ctrl->prod == 4 && doorbells == 1,
	      "prod %u doorbells %u",
	      qp.sq.ring.ctrl->prod, doorbells);
	CHECK(sqe_at(0)->wr_id == 20 && sqe_at(0)->opcode == VIW_OP_SEND &&
	      sqe_at(0)->flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED) &&
	      sqe_at(0)->num_sge == 1 && sqe_at(0)->sge[0].lkey == 0x1111 &&
	      sqe_at(0)->sge[0].length == 16, "send sqe");
	CHECK(sqe_at(1)->wr_id == 21 && sqe_at(1)->opcode == VIW_OP_WRITE &&
	      sqe_at(1)->flags == (VIW_WQE_VALID | VIW_WQE_FENCE) &&
	      sqe_at(1)->raddr == 0x123456789abcull &&
	      sqe_at(1)->rkey == 0xabcd && sqe_at(1)->num_sge == 2 &&
	      sqe_at(1)->sge[1].lkey == 0x2222, "write sqe");
	CHECK(sqe_at(2)->opcode == VIW_OP_READ && sqe_at(2)->rkey == 0x77 &&
	      sqe_at(2)->raddr == 0x1000 && sqe_at(2)->flags == VIW_WQE_VALID,
	      "read sqe");
	CHECK(sqe_at(3)->opcode == VIW_OP_SEND_INV &&
	      sqe_at(3)->inv_stag == 0x5555 &&
	      sqe_at(3)->flags == (VIW_WQE_VALID | VIW_WQE_INLINE) &&
	      sqe_at(3)->inline_len == 5 && sqe_at(3)->num_sge == 0 &&
	      !memcmp(sqe_at(3)->sge, "hello", 5), "inline send_inv sqe");
	tc_report("ibv_wr_*: a batch fills the ring and posts at wr_complete",
		  before);
}

/* ibv_wr_atomic_*: the same SQEs as post_send's atomics. */
static void test_wr_atomic(void)
{
	struct ibv_qp_ex *qpx = qp_ex_setup(VIW_QP_EX_SEND_OPS);
	struct viw_sqe_atomic at;
	int before = tc_failures, rv;

	ibv_wr_start(qpx);
	qpx->wr_id = 30;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(qpx, 0x99, 0x2000, 5, 0x1122334455667788ull);
	ibv_wr_set_sge(qpx, 0x3333, (uintptr_t)buf + 128, 8);
	qpx->wr_id = 31;
	ibv_wr_atomic_fetch_add(qpx, 0x98, 0x2008, 3);
	ibv_wr_set_sge(qpx, 0x3333, (uintptr_t)buf + 136, 8);
	rv = ibv_wr_complete(qpx);
	CHECK(rv == 0, "rv %d", rv);
	memcpy(&at, sqe_at(0)->sge, sizeof(at));
	CHECK(sqe_at(0)->wr_id == 30 &&
	      sqe_at(0)->opcode == VIW_OP_ATOMIC_CMP_SWP &&
	      sqe_at(0)->raddr == 0x2000 && sqe_at(0)->rkey == 0x99 &&
	      sqe_at(0)->num_sge == 1 && at.sge.lkey == 0x3333 &&
	      at.sge.length == 8 && at.compare_add == 5 &&
	      at.swap == 0x1122334455667788ull, "cmp_swp sqe");
	memcpy(&at, sqe_at(1)->sge, sizeof(at));
	CHECK(sqe_at(1)->opcode == VIW_OP_ATOMIC_FETCH_ADD &&
	      sqe_at(1)->raddr == 0x2008 && sqe_at(1)->rkey == 0x98 &&
	      at.compare_add == 3 && at.sge.addr == (uintptr_t)buf + 136,
	      "fetch_add sqe");

	qpx = qp_ex_setup(IBV_QP_EX_WITH_SEND);
	ibv_wr_start(qpx);
	ibv_wr_atomic_fetch_add(qpx, 1, 0x1000, 1);
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qpx) == EINVAL && !any_slot_valid(),
	      "atomic on a QP without WITH_ATOMIC_FETCH_AND_ADD posted");
	tc_report("ibv_wr_atomic_cmp_swp and ibv_wr_atomic_fetch_add", before);
}

/* ibv_wr_send_imm, ibv_wr_rdma_write_imm and ibv_wr_bind_mw. */
static void test_wr_imm_bind(void)
{
	struct ibv_qp_ex *qpx = qp_ex_setup(VIW_QP_EX_SEND_OPS);
	struct ibv_mr mr = { .lkey = 0x3344 };
	struct ibv_mw mw = { .rkey = 0x1200, .type = IBV_MW_TYPE_2 };
	struct ibv_mw_bind_info info = { .mr = &mr, .addr = 0x1000,
		.length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_READ };
	struct viw_bind_mw b;
	int before = tc_failures, rv;

	ibv_wr_start(qpx);
	qpx->wr_id = 50;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htobe32(0x01020304));
	ibv_wr_set_sge(qpx, 0x1111, (uintptr_t)buf, 16);
	qpx->wr_id = 51;
	ibv_wr_rdma_write_imm(qpx, 0xabcd, 0x8000, htobe32(9));
	ibv_wr_set_sge(qpx, 0x1111, (uintptr_t)buf, 0);
	qpx->wr_id = 52;
	ibv_wr_bind_mw(qpx, &mw, 0x1201, &info);
	rv = ibv_wr_complete(qpx);
	CHECK(rv == 0 && qp.sq.ring.ctrl->prod == 3, "rv %d prod %u", rv,
	      qp.sq.ring.ctrl->prod);
	CHECK(sqe_at(0)->wr_id == 50 && sqe_at(0)->opcode == VIW_OP_SEND_IMM &&
	      sqe_has_imm(0, htobe32(0x01020304)) &&
	      sqe_at(0)->sge[0].length == 16, "wr_send_imm sqe");
	CHECK(sqe_at(1)->wr_id == 51 && sqe_at(1)->opcode == VIW_OP_WRITE_IMM &&
	      sqe_has_imm(1, htobe32(9)) && sqe_at(1)->raddr == 0x8000 &&
	      sqe_at(1)->rkey == 0xabcd, "wr_rdma_write_imm sqe");
	b = sqe_bind(2);
	CHECK(sqe_at(2)->wr_id == 52 && sqe_at(2)->opcode == VIW_OP_BIND_MW &&
	      sqe_at(2)->rkey == 0x1201 && b.mr_lkey == 0x3344 &&
	      b.addr == 0x1000 && b.length == 64 &&
	      b.access == VIW_MW_REMOTE_READ &&
	      sqe_at(2)->flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED),
	      "wr_bind_mw sqe");

	/* not in send_ops_flags, or another window's index: nothing posted */
	qpx = qp_ex_setup(IBV_QP_EX_WITH_SEND);
	ibv_wr_start(qpx);
	ibv_wr_send_imm(qpx, 0);
	ibv_wr_set_sge(qpx, 0x1111, (uintptr_t)buf, 16);
	CHECK(ibv_wr_complete(qpx) == EINVAL && !any_slot_valid(),
	      "send_imm without WITH_SEND_WITH_IMM posted");
	qpx = qp_ex_setup(VIW_QP_EX_SEND_OPS);
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mw, 0x1301, &info);
	CHECK(ibv_wr_complete(qpx) == EINVAL && !any_slot_valid(),
	      "bind with a foreign index posted");
	tc_report("ibv_wr_send_imm, ibv_wr_rdma_write_imm, ibv_wr_bind_mw",
		  before);
}

/* A batch with one bad WR among good ones; returns wr_complete's errno. */
static int wr_batch_with(void (*bad_wr)(struct ibv_qp_ex *qpx))
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex_local();

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	bad_wr(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	return ibv_wr_complete(qpx);
}

static void bad_too_many_sges(struct ibv_qp_ex *qpx)
{
	struct ibv_sge sge[3] = {};

	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 3, sge);	/* qp.max_send_sge is 2 */
}

static void bad_inline_too_long(struct ibv_qp_ex *qpx)
{
	struct ibv_data_buf b[2] = { { buf, 20 }, { buf, 13 } };

	ibv_wr_send(qpx);
	ibv_wr_set_inline_data_list(qpx, 2, b);	/* 33 > qp.max_inline */
}

static void bad_inline_read(struct ibv_qp_ex *qpx)
{
	ibv_wr_rdma_read(qpx, 1, 0x1000);
	ibv_wr_set_inline_data(qpx, buf, 4);
}

static void bad_data_without_opcode(struct ibv_qp_ex *qpx)
{
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
}

static void bad_opcode_not_enabled(struct ibv_qp_ex *qpx)
{
	ibv_wr_rdma_write(qpx, 1, 0x1000);	/* QP has WITH_SEND only */
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
}

static void bad_ring_overflow(struct ibv_qp_ex *qpx)
{
	int i;

	for (i = 0; i < SLOTS; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	}
}

static void test_wr_bad_batch(void)
{
	static const struct {
		void (*fn)(struct ibv_qp_ex *qpx);
		uint64_t ops;
		int rv;
		const char *what;
	} cases[] = {
		{ bad_too_many_sges, VIW_QP_EX_SEND_OPS, EINVAL, "3 sges" },
		{ bad_inline_too_long, VIW_QP_EX_SEND_OPS, EINVAL, "inline" },
		{ bad_inline_read, VIW_QP_EX_SEND_OPS, EINVAL, "inline READ" },
		{ bad_data_without_opcode, VIW_QP_EX_SEND_OPS, EINVAL,
		  "data without opcode" },
		{ bad_opcode_not_enabled, IBV_QP_EX_WITH_SEND, EINVAL,
		  "opcode not in send_ops_flags" },
		{ bad_ring_overflow, VIW_QP_EX_SEND_OPS, ENOMEM, "SQ overflow" },
	};
	int before = tc_failures, rv;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		qp_ex_setup(cases[i].ops);
		rv = wr_batch_with(cases[i].fn);
		CHECK(rv == cases[i].rv, "%s: rv %d", cases[i].what, rv);
		CHECK(!any_slot_valid() && qp.sq.ring.ctrl->prod == 0 &&
		      qp.sq.ring.head == 0 && doorbells == 0,
		      "%s: part of the batch posted", cases[i].what);
		CHECK(sq_unlocked(), "%s: SQ left locked", cases[i].what);
	}
	tc_report("ibv_wr_complete: a bad WR drops the whole batch", before);
}

static void test_wr_abort(void)
{
	struct ibv_qp_ex *qpx = qp_ex_setup(VIW_QP_EX_SEND_OPS);
	struct ibv_send_wr *bad;
	int before = tc_failures;

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	ibv_wr_abort(qpx);
	CHECK(sq_unlocked(), "SQ left locked");
	CHECK(!any_slot_valid() && qp.sq.ring.head == 0 && doorbells == 0,
	      "aborted WR posted");

	/* A WR given no data goes out with no SGEs. */
	ibv_wr_start(qpx);
	qpx->wr_id = 31;
	ibv_wr_send(qpx);
	qpx->wr_id = 32;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qpx) == 0, "complete");
	CHECK(sqe_at(0)->wr_id == 31 && sqe_at(0)->num_sge == 0 &&
	      sqe_at(1)->wr_id == 32 && sqe_at(1)->num_sge == 1, "no-data WR");

	/* post_send and the wr_* batches share the ring. */
	CHECK(post_one(IBV_WR_SEND, 0, 1, &bad) == 0, "post_send");
	CHECK(qp.sq.ring.ctrl->prod == 3 && sqe_at(2)->flags & VIW_WQE_VALID,
	      "post_send after a batch");
	tc_report("ibv_wr_abort posts nothing; a WR without data has no SGEs",
		  before);
}

static void test_cq_ex_poll(void)
{
	struct ibv_cq_ex *cqx = &cq.ibv_cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc;
	int before = tc_failures;

	setup();
	viw_cq_ex_init(&cq);
	CHECK(ibv_start_poll(cqx, &attr) == ENOENT, "empty CQ");
	CHECK(pthread_spin_trylock(&cq.q.lock) == 0, "CQ left locked");
	pthread_spin_unlock(&cq.q.lock);

	kernel_cqe(0, VIW_CQE_SUCCESS, VIW_CQE_OP_SEND, 0);
	kernel_cqe(1, VIW_CQE_SUCCESS, VIW_CQE_OP_RECV, VIW_CQE_INV);
	kernel_cqe(2, VIW_CQE_REM_ACCESS_ERR, VIW_CQE_OP_WRITE, 0);
	attr.comp_mask = 1;
	CHECK(ibv_start_poll(cqx, &attr) == EINVAL, "unknown comp_mask");
	attr.comp_mask = 0;

	CHECK(ibv_start_poll(cqx, &attr) == 0, "start_poll");
	CHECK(cqx->wr_id == 1000 && cqx->status == IBV_WC_SUCCESS &&
	      ibv_wc_read_opcode(cqx) == IBV_WC_SEND &&
	      ibv_wc_read_byte_len(cqx) == 64 &&
	      ibv_wc_read_qp_num(cqx) == 42 && !ibv_wc_read_wc_flags(cqx),
	      "first completion");
	CHECK(!(((struct viw_cqe *)viw_ring_slot(&cq.q.ring, 0))->flags &
		VIW_CQE_VALID), "slot not handed back");
	CHECK(ibv_next_poll(cqx) == 0, "next_poll");
	CHECK(cqx->wr_id == 1001 && ibv_wc_read_opcode(cqx) == IBV_WC_RECV &&
	      (ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_INV) &&
	      ibv_wc_read_invalidated_rkey(cqx) == 0x9999 &&
	      ibv_wc_read_src_qp(cqx) == 0 && ibv_wc_read_slid(cqx) == 0,
	      "invalidating receive");
	CHECK(ibv_next_poll(cqx) == 0, "next_poll");
	CHECK(cqx->status == IBV_WC_REM_ACCESS_ERR &&
	      ibv_wc_read_vendor_err(cqx) == 0x123 &&
	      ibv_wc_read_opcode(cqx) == IBV_WC_RDMA_WRITE, "error completion");
	CHECK(ibv_next_poll(cqx) == ENOENT, "past the last CQE");
	ibv_end_poll(cqx);
	CHECK(cq.q.ring.ctrl->cons == 3, "cons %u", cq.q.ring.ctrl->cons);
	CHECK(pthread_spin_trylock(&cq.q.lock) == 0, "CQ left locked");
	pthread_spin_unlock(&cq.q.lock);

	/* ibv_poll_cq on the same CQ continues where the batch stopped. */
	kernel_cqe(3, VIW_CQE_SUCCESS, VIW_CQE_OP_READ, 0);
	CHECK(viw_poll_cq(ibv_cq_ex_to_cq(cqx), 1, &wc) == 1 &&
	      wc.wr_id == 1003 && wc.opcode == IBV_WC_RDMA_READ,
	      "poll_cq after start_poll");

	imm_cqe(4, VIW_CQE_OP_RECV_RDMA_IMM, htobe32(0x77));
	CHECK(ibv_start_poll(cqx, &attr) == 0, "start_poll");
	CHECK(ibv_wc_read_opcode(cqx) == IBV_WC_RECV_RDMA_WITH_IMM &&
	      ibv_wc_read_wc_flags(cqx) == IBV_WC_WITH_IMM &&
	      be32toh(ibv_wc_read_imm_data(cqx)) == 0x77, "read_imm_data");
	ibv_end_poll(cqx);
	tc_report("ibv_cq_ex: start/next/end_poll, read_*, mixed with poll_cq",
		  before);
}

int main(void)
{
	test_send_fill();
	test_mw_fill();
	test_imm_fill();
	test_atomic_fill();
	test_doorbell_rules();
	test_doorbell_no_doorbell();
	test_send_flags();
	test_inline();
	test_bad_send();
	test_sq_full();
	test_recv();
	test_srq_recv();
	test_poll_status();
	test_poll_atomic();
	test_poll_garbage();
	test_poll_imm();
	test_notify();
	test_wr_batch();
	test_wr_atomic();
	test_wr_imm_bind();
	test_wr_bad_batch();
	test_wr_abort();
	test_cq_ex_poll();
	return tc_done("unit.provider_fastpath");
}
