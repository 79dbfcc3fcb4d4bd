// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.abi_layout: the layout of <rdma/viw-abi.h>, the host interface
 * between the viw kernel driver and libviw.
 *
 * The compile-time asserts make a wrong layout a build error; the run-time
 * checks repeat them so that ctest reports them, and compare with the
 * layout the same header has when compiled as strict C99 (abi_c99.c).
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include <rdma/viw-abi.h>

#include "abi_c99.h"
#include "viw_check.h"

#define CACHELINE 64

/* Slot and page sizes the header promises. */
_Static_assert(sizeof(struct viw_sqe) == VIW_SQE_SIZE, "sqe size");
_Static_assert(sizeof(struct viw_rqe) == VIW_RQE_SIZE, "rqe size");
_Static_assert(sizeof(struct viw_cqe) == VIW_CQE_SIZE, "cqe size");
_Static_assert(VIW_SQE_SIZE == 128 && VIW_RQE_SIZE == 128 &&
	       VIW_CQE_SIZE == 32, "slot sizes changed");
_Static_assert(sizeof(struct viw_sge) == 16, "sge size");
_Static_assert(sizeof(struct viw_ring_ctrl) <= VIW_RING_SLOTS_OFFSET,
	       "ring control block overlaps the slots");
_Static_assert(VIW_RING_SLOTS_OFFSET % VIW_SQE_SIZE == 0 &&
	       VIW_RING_SLOTS_OFFSET % VIW_CQE_SIZE == 0,
	       "slots not aligned to their size");
_Static_assert(sizeof(struct viw_db_page) <= VIW_DB_PAGE_SIZE, "db page");

/* prod, cons and the CQ words sit in cache lines of their own. */
_Static_assert(offsetof(struct viw_ring_ctrl, prod) == 0, "prod");
_Static_assert(offsetof(struct viw_ring_ctrl, cons) == CACHELINE, "cons");
_Static_assert(offsetof(struct viw_ring_ctrl, arm) == 2 * CACHELINE, "arm");
_Static_assert(offsetof(struct viw_ring_ctrl, kflags) == 2 * CACHELINE + 4,
	       "kflags");
_Static_assert(offsetof(struct viw_ring_ctrl, no_doorbell) ==
	       2 * CACHELINE + 8, "no_doorbell");
_Static_assert(offsetof(struct viw_db_page, flags) == 0, "db flags");
_Static_assert(offsetof(struct viw_db_page, seq) == CACHELINE, "db seq");

/* The ownership words: atomically accessed, so naturally aligned. */
_Static_assert(offsetof(struct viw_sqe, flags) == 8, "sqe flags");
_Static_assert(offsetof(struct viw_rqe, flags) == 8, "rqe flags");
_Static_assert(offsetof(struct viw_cqe, flags) == 8, "cqe flags");

/* Key fields of the slots. */
_Static_assert(offsetof(struct viw_sqe, wr_id) == 0, "sqe wr_id");
_Static_assert(offsetof(struct viw_sqe, opcode) == 10, "sqe opcode");
_Static_assert(offsetof(struct viw_sqe, num_sge) == 11, "sqe num_sge");
_Static_assert(offsetof(struct viw_sqe, inv_stag) == 12, "sqe inv_stag");
_Static_assert(offsetof(struct viw_sqe, raddr) == 16, "sqe raddr");
_Static_assert(offsetof(struct viw_sqe, rkey) == 24, "sqe rkey");
_Static_assert(offsetof(struct viw_sqe, inline_len) == 28, "sqe inline_len");
_Static_assert(offsetof(struct viw_sqe, sge) == 32, "sqe sge");
_Static_assert(offsetof(struct viw_rqe, num_sge) == 11, "rqe num_sge");
_Static_assert(offsetof(struct viw_rqe, sge) == 16, "rqe sge");
_Static_assert(offsetof(struct viw_cqe, wr_id) == 0, "cqe wr_id");
_Static_assert(offsetof(struct viw_cqe, opcode) == 12, "cqe opcode");
_Static_assert(offsetof(struct viw_cqe, status) == 13, "cqe status");
_Static_assert(offsetof(struct viw_cqe, byte_len) == 16, "cqe byte_len");
_Static_assert(offsetof(struct viw_cqe, qp_id) == 20, "cqe qp_id");
_Static_assert(offsetof(struct viw_cqe, inv_stag) == 24, "cqe inv_stag");
_Static_assert(offsetof(struct viw_cqe, vendor_err) == 28, "cqe vendor_err");
_Static_assert(offsetof(struct viw_sge, addr) == 0 &&
	       offsetof(struct viw_sge, length) == 8 &&
	       offsetof(struct viw_sge, lkey) == 12, "sge fields");

/* Inline data lives in place of sge[]. */
_Static_assert(sizeof(((struct viw_sqe *)0)->sge) >= VIW_MAX_INLINE,
	       "inline data does not fit");

/* Values fit the fields that carry them. */
_Static_assert(VIW_OP_MAX <= 0xff && VIW_CQE_STATUS_MAX <= 0xff,
	       "u8 fields");
_Static_assert(VIW_MAX_SGE <= 0xff, "num_sge is a u8");
_Static_assert(VIW_WQE_INLINE <= 0xffff, "wqe flags are u16");

/* The uverbs driver data: 64-bit aligned, 64-bit multiples. */
_Static_assert(sizeof(struct viw_uresp_alloc_ctx) == 40, "alloc_ctx");
_Static_assert(sizeof(struct viw_uresp_create_cq) == 24, "create_cq");
_Static_assert(sizeof(struct viw_uresp_create_qp) == 48, "create_qp");
_Static_assert(sizeof(struct viw_uresp_create_srq) == 24, "create_srq");
_Static_assert(offsetof(struct viw_uresp_alloc_ctx, db_key) == 8, "db_key");
_Static_assert(offsetof(struct viw_uresp_create_cq, ring_key) == 8, "cq key");
_Static_assert(offsetof(struct viw_uresp_create_qp, sq_key) == 16, "sq_key");
_Static_assert(offsetof(struct viw_uresp_create_qp, rq_key) == 32, "rq_key");
_Static_assert(offsetof(struct viw_uresp_create_srq, ring_key) == 8,
	       "srq key");

/* Every 64-bit member is 8-byte aligned in every struct that has one. */
_Static_assert(alignof(struct viw_sqe) == 8 && alignof(struct viw_rqe) == 8 &&
	       alignof(struct viw_cqe) == 8 && alignof(struct viw_sge) == 8,
	       "slot alignment");
_Static_assert(alignof(struct viw_uresp_alloc_ctx) == 8 &&
	       alignof(struct viw_uresp_create_cq) == 8 &&
	       alignof(struct viw_uresp_create_qp) == 8 &&
	       alignof(struct viw_uresp_create_srq) == 8, "uresp alignment");

/* PASS @name, or FAIL @name with the two sizes. */
#define CHECK_SIZE(ok, name, got, want)					\
	tc_result(ok, name, "got %zu, want %zu", (size_t)(got), (size_t)(want))
#define LAYOUT_EQ(name, got, want)					\
	CHECK_SIZE((got) == (want), name, got, want)
#define CHECK_ALIGNED(type, field)					\
	CHECK_SIZE(offsetof(type, field) % 8 == 0, #type "." #field " aligned", \
		   offsetof(type, field) % 8, 0)

static void check_sizes(void)
{
	LAYOUT_EQ("sqe size", sizeof(struct viw_sqe), (size_t)VIW_SQE_SIZE);
	LAYOUT_EQ("rqe size", sizeof(struct viw_rqe), (size_t)VIW_RQE_SIZE);
	LAYOUT_EQ("cqe size", sizeof(struct viw_cqe), (size_t)VIW_CQE_SIZE);
	CHECK_SIZE(sizeof(struct viw_ring_ctrl) <= VIW_RING_SLOTS_OFFSET,
		   "ring ctrl fits before the slots",
		   sizeof(struct viw_ring_ctrl), VIW_RING_SLOTS_OFFSET);
	CHECK_SIZE(sizeof(struct viw_db_page) <= VIW_DB_PAGE_SIZE,
		   "db page fits", sizeof(struct viw_db_page), VIW_DB_PAGE_SIZE);
	CHECK_SIZE(sizeof(struct viw_uresp_alloc_ctx) % 8 == 0 &&
		   sizeof(struct viw_uresp_create_cq) % 8 == 0 &&
		   sizeof(struct viw_uresp_create_qp) % 8 == 0 &&
		   sizeof(struct viw_uresp_create_srq) % 8 == 0,
		   "uresp sizes are multiples of 8", 0, 0);
}

static void check_u64_alignment(void)
{
	CHECK_ALIGNED(struct viw_sqe, wr_id);
	CHECK_ALIGNED(struct viw_sqe, raddr);
	CHECK_ALIGNED(struct viw_sqe, sge);
	CHECK_ALIGNED(struct viw_rqe, wr_id);
	CHECK_ALIGNED(struct viw_rqe, sge);
	CHECK_ALIGNED(struct viw_cqe, wr_id);
	CHECK_ALIGNED(struct viw_sge, addr);
	CHECK_ALIGNED(struct viw_uresp_alloc_ctx, db_key);
	CHECK_ALIGNED(struct viw_uresp_create_cq, ring_key);
	CHECK_ALIGNED(struct viw_uresp_create_cq, ring_size);
	CHECK_ALIGNED(struct viw_uresp_create_qp, sq_key);
	CHECK_ALIGNED(struct viw_uresp_create_qp, sq_size);
	CHECK_ALIGNED(struct viw_uresp_create_qp, rq_key);
	CHECK_ALIGNED(struct viw_uresp_create_qp, rq_size);
	CHECK_ALIGNED(struct viw_uresp_create_srq, ring_key);
	CHECK_ALIGNED(struct viw_uresp_create_srq, ring_size);
}

static void check_ctrl_lines(void)
{
	size_t prod = offsetof(struct viw_ring_ctrl, prod) / CACHELINE;
	size_t cons = offsetof(struct viw_ring_ctrl, cons) / CACHELINE;
	size_t arm = offsetof(struct viw_ring_ctrl, arm) / CACHELINE;

	CHECK_SIZE(prod != cons && prod != arm && cons != arm,
		   "prod, cons and arm in separate cache lines", 0, 0);
	LAYOUT_EQ("kflags next to arm",
		  offsetof(struct viw_ring_ctrl, kflags) / CACHELINE, arm);
}

/* The same header compiled as strict C99 must give the same layout. */
static void check_c99(void)
{
	struct viw_abi_layout l;

	viw_abi_c99_layout(&l);
	LAYOUT_EQ("c99 sqe", l.sqe, sizeof(struct viw_sqe));
	LAYOUT_EQ("c99 rqe", l.rqe, sizeof(struct viw_rqe));
	LAYOUT_EQ("c99 cqe", l.cqe, sizeof(struct viw_cqe));
	LAYOUT_EQ("c99 ring ctrl", l.ctrl, sizeof(struct viw_ring_ctrl));
	LAYOUT_EQ("c99 db page", l.db, sizeof(struct viw_db_page));
	LAYOUT_EQ("c99 uresp ctx", l.ctx, sizeof(struct viw_uresp_alloc_ctx));
	LAYOUT_EQ("c99 uresp cq", l.cq, sizeof(struct viw_uresp_create_cq));
	LAYOUT_EQ("c99 uresp qp", l.qp, sizeof(struct viw_uresp_create_qp));
	LAYOUT_EQ("c99 uresp srq", l.srq, sizeof(struct viw_uresp_create_srq));
	LAYOUT_EQ("c99 sqe.sge", l.sqe_sge, offsetof(struct viw_sqe, sge));
	LAYOUT_EQ("c99 rqe.sge", l.rqe_sge, offsetof(struct viw_rqe, sge));
	LAYOUT_EQ("c99 cqe.qp_id", l.cqe_qp_id, offsetof(struct viw_cqe, qp_id));
	LAYOUT_EQ("c99 ctrl.kflags", l.ctrl_kflags,
		  offsetof(struct viw_ring_ctrl, kflags));
	LAYOUT_EQ("c99 uresp qp.rq_size", l.qp_rq_size,
		  offsetof(struct viw_uresp_create_qp, rq_size));
}

int main(void)
{
	check_sizes();
	check_u64_alignment();
	check_ctrl_lines();
	check_c99();
	return tc_done("unit.abi_layout");
}
