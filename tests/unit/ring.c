// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.ring: the ring logic of providers/viw/viw_ring.h.
 *
 * The provider side is exercised through the helpers libviw uses; the
 * kernel side is emulated here following the protocol of viw-abi.h (and
 * the kernel driver): it consumes WQEs up to ctrl->prod, clears VALID and
 * advances ctrl->cons; it produces a CQE only into a slot whose VALID bit
 * the provider has cleared, and disarms the CQ with a compare-and-exchange
 * when it raises an event.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_ring.h"
#include "viw_check.h"

static void *ring_mem(uint32_t slots, uint32_t slot_size)
{
	size_t size = viw_ring_bytes(slots, slot_size);
	void *mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);

	if (!mem) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(mem, 0, size);
	return mem;
}

static void test_init(void)
{
	struct viw_ring r;
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint64_t size = viw_ring_bytes(8, VIW_SQE_SIZE);
	int before = tc_failures;

	CHECK(viw_ring_init(&r, mem, size, 8, VIW_SQE_SIZE), "8 slots");
	CHECK(!viw_ring_init(&r, mem, size - 1, 8, VIW_SQE_SIZE),
	      "accepted a mapping one byte short");
	CHECK(!viw_ring_init(&r, mem, size, 6, VIW_SQE_SIZE),
	      "accepted 6 slots");
	CHECK(!viw_ring_init(&r, mem, size, 0, VIW_SQE_SIZE),
	      "accepted 0 slots");
	CHECK(!viw_ring_init(&r, mem, size, 8, 0), "accepted 0-byte slots");
	CHECK(viw_ring_bytes(0x80000000u, 0x80000000u) ==
	      VIW_RING_SLOTS_OFFSET + (1ull << 62), "ring size overflowed");
	free(mem);
	tc_report("ring init", before);
}

static void test_slots(void)
{
	struct viw_ring r;
	uint8_t *mem = ring_mem(16, VIW_CQE_SIZE);
	uint32_t i;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_ring_bytes(16, VIW_CQE_SIZE), 16,
		      VIW_CQE_SIZE);
	CHECK((uint8_t *)r.ctrl == mem, "ctrl at the start");
	CHECK(viw_ring_slot(&r, 0) == mem + VIW_RING_SLOTS_OFFSET,
	      "slot 0 at VIW_RING_SLOTS_OFFSET");
	for (i = 0; i < 64; i++)
		CHECK(viw_ring_slot(&r, i) == mem + VIW_RING_SLOTS_OFFSET +
		      (i % 16) * VIW_CQE_SIZE, "slot %u", i);
	CHECK(viw_ring_slot(&r, UINT32_MAX) == viw_ring_slot(&r, 15),
	      "slot UINT32_MAX");
	free(mem);
	tc_report("slot addressing", before);
}

/* Free-running u32 indices across the 2^32 wrap. */
static void test_wrap(void)
{
	struct viw_ring r;
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint32_t start = UINT32_MAX - 3, i;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_ring_bytes(8, VIW_SQE_SIZE), 8,
		      VIW_SQE_SIZE);
	r.head = start;
	r.ctrl->cons = start;
	CHECK(viw_ring_free_slots(&r) == 8, "empty ring has 8 free");
	for (i = 0; i < 8; i++) {
		CHECK(!viw_ring_full(&r), "full after %u", i);
		r.head++;
	}
	CHECK(r.head == 4, "head wrapped to %u", r.head);
	CHECK(viw_ring_full(&r), "8 of 8 not full");
	CHECK(viw_ring_used(r.head, r.ctrl->cons) == 8, "used across wrap");

	r.ctrl->cons = start + 5;	/* consumer wraps too */
	CHECK(r.ctrl->cons == 1, "cons wrapped");
	CHECK(viw_ring_free_slots(&r) == 5, "5 free, got %u",
	      viw_ring_free_slots(&r));
	r.ctrl->cons = r.head;
	CHECK(viw_ring_free_slots(&r) == 8, "drained ring");

	/* Garbage from the other side makes the ring full, never larger. */
	r.ctrl->cons = r.head + 1;
	CHECK(viw_ring_full(&r), "cons ahead of prod");
	r.ctrl->cons = r.head - 9;
	CHECK(viw_ring_full(&r), "cons more than a ring behind");
	free(mem);
	tc_report("wraparound, full and empty", before);
}

static void test_valid(void)
{
	struct viw_sqe sqe = {};
	struct viw_cqe cqe = {};
	int before = tc_failures;

	CHECK(!viw_wqe_valid(&sqe.flags), "fresh sqe valid");
	viw_wqe_publish(&sqe.flags, VIW_WQE_SIGNALED | VIW_WQE_INLINE);
	CHECK(viw_wqe_valid(&sqe.flags), "published sqe not valid");
	CHECK(sqe.flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED | VIW_WQE_INLINE),
	      "flags 0x%x", sqe.flags);
	viw_wqe_release(&sqe.flags);
	CHECK(!viw_wqe_valid(&sqe.flags), "released sqe valid");

	CHECK(!(viw_cqe_flags_acquire(&cqe) & VIW_CQE_VALID), "fresh cqe");
	viw_cqe_publish(&cqe, VIW_CQE_INV);
	CHECK(viw_cqe_flags_acquire(&cqe) == (VIW_CQE_VALID | VIW_CQE_INV),
	      "cqe flags 0x%x", cqe.flags);
	viw_cqe_release(&cqe);
	CHECK(cqe.flags == 0, "released cqe 0x%x", cqe.flags);
	tc_report("VALID handoff", before);
}

/* The kernel's disarm: take the arm word if it fires, else leave it. */
static bool kernel_take_arm(struct viw_ring_ctrl *ctrl, bool solicited)
{
	uint32_t old = __atomic_load_n(&ctrl->arm, __ATOMIC_RELAXED);

	while (viw_cq_arm_fires(old, solicited)) {
		if (__atomic_compare_exchange_n(&ctrl->arm, &old, 0, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static void test_arm_bits(void)
{
	struct viw_ring_ctrl ctrl = {};
	int before = tc_failures;

	CHECK(!kernel_take_arm(&ctrl, false) && !kernel_take_arm(&ctrl, true),
	      "unarmed CQ fired");

	viw_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == VIW_CQ_ARM_NEXT, "arm 0x%x", ctrl.arm);
	CHECK(kernel_take_arm(&ctrl, false), "ARM_NEXT did not fire");
	CHECK(ctrl.arm == 0, "not disarmed");
	CHECK(!kernel_take_arm(&ctrl, false), "fired twice for one arm");

	viw_cq_arm(&ctrl, true);
	CHECK(ctrl.arm == VIW_CQ_ARM_SOLICITED, "arm 0x%x", ctrl.arm);
	CHECK(!kernel_take_arm(&ctrl, false),
	      "ARM_SOLICITED fired on an unsolicited completion");
	CHECK(ctrl.arm == VIW_CQ_ARM_SOLICITED, "unsolicited CQE disarmed");
	CHECK(kernel_take_arm(&ctrl, true), "solicited CQE did not fire");

	/* Arming accumulates: NEXT after SOLICITED covers both. */
	viw_cq_arm(&ctrl, true);
	viw_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == (VIW_CQ_ARM_NEXT | VIW_CQ_ARM_SOLICITED),
	      "arm 0x%x", ctrl.arm);
	CHECK(kernel_take_arm(&ctrl, false), "NEXT|SOLICITED did not fire");
	CHECK(ctrl.arm == 0, "not fully disarmed");

	/* Re-arming an armed CQ is harmless and idempotent. */
	viw_cq_arm(&ctrl, false);
	viw_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == VIW_CQ_ARM_NEXT, "arm 0x%x", ctrl.arm);
	tc_report("CQ arm bits", before);
}

#define ARM_ROUNDS 200000

struct arm_race {
	struct viw_ring_ctrl ctrl;
	uint32_t fired;		/* events the kernel raised */
	uint32_t done;
};

static void *arm_kernel(void *arg)
{
	struct arm_race *a = arg;
	uint32_t n;

	/* A stream of completions, every third one solicited. */
	for (n = 0; !__atomic_load_n(&a->done, __ATOMIC_ACQUIRE); n++) {
		if (kernel_take_arm(&a->ctrl, n % 3 == 0))
			__atomic_fetch_add(&a->fired, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * Every arm must produce exactly one event: the provider arms, waits for
 * the event, and arms again, while the kernel thread keeps completing.
 */
static void test_arm_race(void)
{
	struct arm_race a = {};
	pthread_t t;
	uint32_t i;
	int before = tc_failures;

	pthread_create(&t, NULL, arm_kernel, &a);
	for (i = 0; i < ARM_ROUNDS; i++) {
		viw_cq_arm(&a.ctrl, i & 1);
		while (__atomic_load_n(&a.fired, __ATOMIC_ACQUIRE) == i)
			sched_yield();
		if (__atomic_load_n(&a.fired, __ATOMIC_ACQUIRE) != i + 1)
			break;
	}
	__atomic_store_n(&a.done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(a.fired == ARM_ROUNDS && i == ARM_ROUNDS,
	      "%u arms, %u events", i, a.fired);
	tc_report("CQ arm race", before);
}

#define STRESS_SLOTS 16
#define STRESS_COUNT (1u << 21)
#define STRESS_START (UINT32_MAX - 1000)	/* cross the wrap early */

struct stress {
	struct viw_ring ring;
	uint32_t errors;
};

/* Both threads of a stress test count errors. */
static void stress_error(struct stress *s)
{
	__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
}

static uint32_t payload(uint32_t seq)
{
	return seq * 2654435761u;
}

/* Kernel side of an SQ: consume up to prod, check, free the slot. */
static void *sq_kernel(void *arg)
{
	struct stress *s = arg;
	struct viw_ring_ctrl *ctrl = s->ring.ctrl;
	uint32_t cons = STRESS_START, seq = 0;

	while (seq < STRESS_COUNT) {
		uint32_t prod = viw_load_acquire(&ctrl->prod);

		if (prod == cons) {
			sched_yield();
			continue;
		}
		for (; cons != prod; cons++, seq++) {
			struct viw_sqe *sqe = viw_ring_slot(&s->ring, cons);

			if (!viw_wqe_valid(&sqe->flags) ||
			    sqe->wr_id != seq ||
			    sqe->sge[0].length != payload(seq) ||
			    sqe->sge[5].lkey != ~payload(seq))
				stress_error(s);
			viw_wqe_release(&sqe->flags);
			viw_store_release(&ctrl->cons, cons + 1);
		}
	}
	return NULL;
}

/* Provider side of an SQ, as in viw_sq_post_one(), in random batches. */
static void sq_provider(struct stress *s)
{
	struct viw_ring *ring = &s->ring;
	uint32_t seq = 0;

	while (seq < STRESS_COUNT) {
		uint32_t batch = 1 + (seq * 7919u) % 5;

		for (; batch && seq < STRESS_COUNT; batch--, seq++) {
			struct viw_sqe *sqe;

			while (viw_ring_full(ring))
				sched_yield();
			sqe = viw_ring_slot(ring, ring->head);
			if (viw_wqe_valid(&sqe->flags))
				stress_error(s);	/* overwrote a live WQE */
			sqe->wr_id = seq;
			sqe->sge[0].length = payload(seq);
			sqe->sge[5].lkey = ~payload(seq);
			viw_wqe_publish(&sqe->flags, VIW_WQE_SIGNALED);
			ring->head++;
		}
		viw_ring_publish_prod(ring);
	}
}

/*
 * Run @provider in this thread against @kernel in another on a ring of
 * STRESS_SLOTS slots of @slot_size whose indices start at STRESS_START;
 * the ring's memory, for the caller to check and free.
 */
static void *stress_run(struct stress *s, uint32_t slot_size,
			void *(*kernel)(void *),
			void (*provider)(struct stress *))
{
	void *mem = ring_mem(STRESS_SLOTS, slot_size);
	pthread_t t;

	viw_ring_init(&s->ring, mem, viw_ring_bytes(STRESS_SLOTS, slot_size),
		      STRESS_SLOTS, slot_size);
	s->ring.head = STRESS_START;
	s->ring.ctrl->prod = STRESS_START;
	s->ring.ctrl->cons = STRESS_START;
	pthread_create(&t, NULL, kernel, s);
	provider(s);
	pthread_join(t, NULL);
	return mem;
}

static void test_sq_stress(void)
{
	struct stress s = {};
	int before = tc_failures;
	void *mem = stress_run(&s, VIW_SQE_SIZE, sq_kernel, sq_provider);

	CHECK(s.errors == 0, "%u bad WQEs", s.errors);
	CHECK(s.ring.ctrl->cons == s.ring.head, "cons %u head %u",
	      s.ring.ctrl->cons, s.ring.head);
	free(mem);
	tc_report("SQ producer/consumer stress", before);
}

/* Kernel side of a CQ: a slot is free once the provider cleared VALID. */
static void *cq_kernel(void *arg)
{
	struct stress *s = arg;
	uint32_t prod = STRESS_START, seq;

	for (seq = 0; seq < STRESS_COUNT; seq++, prod++) {
		struct viw_cqe *cqe = viw_ring_slot(&s->ring, prod);

		while (viw_cqe_flags_acquire(cqe) & VIW_CQE_VALID)
			sched_yield();
		cqe->wr_id = seq;
		cqe->byte_len = payload(seq);
		cqe->qp_id = ~payload(seq);
		cqe->status = seq % (VIW_CQE_STATUS_MAX + 1);
		viw_cqe_publish(cqe, seq & 1 ? VIW_CQE_SOLICITED : 0);
		viw_store_release(&s->ring.ctrl->prod, prod + 1);
	}
	return NULL;
}

/* Provider side of a CQ, as in viw_poll_cq(). */
static void cq_provider(struct stress *s)
{
	struct viw_ring *ring = &s->ring;
	uint32_t seq = 0;

	while (seq < STRESS_COUNT) {
		struct viw_cqe *cqe = viw_ring_slot(ring, ring->head);
		uint32_t flags = viw_cqe_flags_acquire(cqe);

		if (!(flags & VIW_CQE_VALID)) {
			sched_yield();
			continue;
		}
		if (cqe->wr_id != seq || cqe->byte_len != payload(seq) ||
		    cqe->qp_id != ~payload(seq) ||
		    cqe->status != seq % (VIW_CQE_STATUS_MAX + 1) ||
		    !!(flags & VIW_CQE_SOLICITED) != (seq & 1))
			stress_error(s);
		viw_cqe_release(cqe);
		ring->head++;
		seq++;
		viw_ring_publish_cons(ring);
	}
}

static void test_cq_stress(void)
{
	struct stress s = {};
	int before = tc_failures;
	void *mem = stress_run(&s, VIW_CQE_SIZE, cq_kernel, cq_provider);

	CHECK(s.errors == 0, "%u bad CQEs", s.errors);
	CHECK(s.ring.ctrl->cons == s.ring.ctrl->prod, "cons %u prod %u",
	      s.ring.ctrl->cons, s.ring.ctrl->prod);
	free(mem);
	tc_report("CQ producer/consumer stress", before);
}

int main(void)
{
	alarm(120);	/* a lost wakeup must fail, not hang */
	test_init();
	test_slots();
	test_wrap();
	test_valid();
	test_arm_bits();
	test_arm_race();
	test_sq_stress();
	test_cq_stress();
	return tc_done("unit.ring");
}
