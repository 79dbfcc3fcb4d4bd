// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.ring: the ring protocol of kernel/viw_ring_proto.h, the kernel's half
 * against the provider's.
 *
 * Both halves are the code the module and libviw run: the kernel's consumer
 * of a work queue (viw_wq_fetch() and viw_wq_retire() in kernel/viw_wq.c,
 * viw_srq_take() in viw_srq.c) and its CQ producer (viw_cq_push() in
 * viw_cq.c) are the protocol calls those functions make, on the kernel's
 * own indices; the provider's side goes through providers/viw/viw_ring.h
 * as viw_post.c does.  The kernel's half is then fed what a hostile
 * process can write: indices far ahead or behind, garbage flags and arm
 * words, slots posted early, and indices that wrap at 2^32.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "viw_check.h"
#include "viw_ring.h"

static void *ring_mem(uint32_t slots, uint32_t slot_size)
{
	size_t size = viw_rp_ring_bytes(slots, slot_size);
	void *mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);

	if (!mem) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(mem, 0, size);
	return mem;
}

/* ---- The kernel's half, as kernel/viw_{wq,srq,cq}.c call it -------------- */

/* A work queue as the kernel holds it: its own indices, a copy per slot. */
struct kwq {
	struct viw_ring_ctrl *ctrl;
	uint32_t num_slots;
	uint32_t slot_size;
	uint32_t fetch;		/* next slot to copy */
	uint32_t done;		/* next slot to retire */
	uint8_t *shadow;
};

static void kwq_init(struct kwq *k, void *mem, uint32_t slots,
		     uint32_t slot_size, uint32_t start)
{
	k->ctrl = mem;
	k->num_slots = slots;
	k->slot_size = slot_size;
	k->fetch = start;
	k->done = start;
	k->shadow = calloc(slots, slot_size);
	if (!k->shadow)
		exit(2);
}

/* viw_wq_fetch(): the kernel's one copy of the next posted WQE, or NULL. */
static void *kwq_fetch(struct kwq *k)
{
	void *copy = k->shadow +
		     (size_t)(k->fetch & (k->num_slots - 1)) * k->slot_size;

	if (!viw_rp_room(k->fetch, k->done, k->num_slots))
		return NULL;
	if (!viw_rp_wqe_take(copy, viw_rp_slot(k->ctrl, k->num_slots,
					       k->slot_size, k->fetch),
			     k->slot_size))
		return NULL;
	k->fetch++;
	return copy;
}

/* viw_wq_retire(): the oldest WQE the kernel holds has completed. */
static void kwq_retire(struct kwq *k)
{
	k->done++;
	viw_rp_retire(k->ctrl, k->done);
}

/* An SRQ as viw_srq_take() drives it; returns 0, -1 when none is posted. */
struct ksrq {
	struct viw_ring_ctrl *ctrl;
	uint32_t num_slots;
	uint32_t fetch;
	uint32_t limit;
	uint32_t limit_events;
};

static int ksrq_take(struct ksrq *k, struct viw_rqe *rqe)
{
	void *slot = viw_rp_slot(k->ctrl, k->num_slots, sizeof(*rqe), k->fetch);

	if (!viw_rp_wqe_take(rqe, slot, sizeof(*rqe)))
		return -1;
	k->fetch++;
	viw_rp_retire(k->ctrl, k->fetch);
	if (viw_rp_srq_below_limit(k->ctrl, k->fetch, k->limit)) {
		k->limit = 0;
		k->limit_events++;
	}
	return 0;
}

/* A CQ as viw_cq_push() drives it. */
struct kcq {
	struct viw_ring_ctrl *ctrl;
	uint32_t num_slots;
	uint32_t prod;
	bool overflowed;
};

/* Returns 1 if the completion fires the event, 0 if not, -1 on overflow. */
static int kcq_push(struct kcq *k, const struct viw_cqe *cqe)
{
	if (k->overflowed ||
	    !viw_rp_cq_push(k->ctrl, k->num_slots, &k->prod, cqe)) {
		k->overflowed = true;
		viw_rp_kflags_add(k->ctrl, VIW_RING_KF_OVERFLOW);
		return -1;
	}
	return viw_rp_cq_take_arm(k->ctrl, cqe->flags & VIW_CQE_SOLICITED);
}

/* ---- The provider's half, as providers/viw/viw_post.c calls it ----------- */

static uint32_t payload(uint32_t seq)
{
	return seq * 2654435761u;
}

/* viw_sq_post_one() then viw_sq_publish() for one WR; false if full. */
static bool provider_post(struct viw_ring *ring, uint32_t seq)
{
	struct viw_sqe *sqe;

	if (viw_ring_full(ring))
		return false;
	sqe = viw_ring_slot(ring, ring->head);
	viw_rp_wqe_stage(&sqe->flags, VIW_WQE_SIGNALED);
	sqe->wr_id = seq;
	sqe->sge[0].length = payload(seq);
	sqe->sge[5].lkey = ~payload(seq);
	viw_rp_wqe_post(&sqe->flags, viw_rp_read_once(&sqe->flags));
	ring->head++;
	viw_ring_publish_prod(ring);
	return true;
}

static bool sqe_is(const struct viw_sqe *sqe, uint32_t seq)
{
	return sqe && sqe->wr_id == seq && sqe->sge[0].length == payload(seq) &&
	       sqe->sge[5].lkey == ~payload(seq);
}

/* viw_cq_pop(): the next CQE's wr_id, or -1 if none; frees its slot. */
static long long provider_poll(struct viw_ring *ring)
{
	struct viw_cqe *cqe = viw_ring_slot(ring, ring->head);
	long long wr_id;

	if (!(viw_rp_cqe_flags(cqe) & VIW_CQE_VALID))
		return -1;
	wr_id = (long long)cqe->wr_id;
	viw_rp_cqe_release(cqe);
	ring->head++;
	viw_ring_publish_cons(ring);
	return wr_id;
}

/* ---- Geometry ---------------------------------------------------------- */

static void test_init(void)
{
	struct viw_ring r;
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint64_t size = viw_rp_ring_bytes(8, VIW_SQE_SIZE);
	int before = tc_failures;

	CHECK(viw_ring_init(&r, mem, size, 8, VIW_SQE_SIZE), "8 slots");
	CHECK(!viw_ring_init(&r, mem, size - 1, 8, VIW_SQE_SIZE),
	      "accepted a mapping one byte short");
	CHECK(!viw_ring_init(&r, mem, size, 6, VIW_SQE_SIZE),
	      "accepted 6 slots");
	CHECK(!viw_ring_init(&r, mem, size, 0, VIW_SQE_SIZE),
	      "accepted 0 slots");
	CHECK(!viw_ring_init(&r, mem, size, 8, 0), "accepted 0-byte slots");
	CHECK(viw_rp_ring_bytes(0x80000000u, 0x80000000u) ==
	      VIW_RING_SLOTS_OFFSET + (1ull << 62), "ring size overflowed");
	CHECK(viw_rp_is_pow2(1) && viw_rp_is_pow2(1u << 31) &&
	      !viw_rp_is_pow2(0) && !viw_rp_is_pow2(3) &&
	      !viw_rp_is_pow2(UINT32_MAX), "is_pow2");
	free(mem);
	tc_report("ring init", before);
}

static void test_slots(void)
{
	struct viw_ring r;
	uint8_t *mem = ring_mem(16, VIW_CQE_SIZE);
	uint32_t i;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_rp_ring_bytes(16, VIW_CQE_SIZE), 16,
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

/* Free-running u32 indices across the 2^32 wrap, provider side. */
static void test_wrap(void)
{
	struct viw_ring r;
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint32_t start = UINT32_MAX - 3, i;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_rp_ring_bytes(8, VIW_SQE_SIZE), 8,
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
	CHECK(viw_rp_used(r.head, r.ctrl->cons) == 8, "used across wrap");

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
	r.ctrl->cons = r.head + 0x80000000u;
	CHECK(viw_ring_full(&r), "cons half the index space away");
	free(mem);
	tc_report("wraparound, full and empty", before);
}

/* ---- VALID handoff ----------------------------------------------------- */

static void test_valid(void)
{
	struct viw_sqe sqe = {}, copy;
	struct viw_cqe cqe = {};
	int before = tc_failures;

	CHECK(!viw_rp_wqe_posted(&sqe.flags), "fresh sqe valid");
	CHECK(!viw_rp_wqe_take(&copy, &sqe, sizeof(sqe)), "took a fresh sqe");
	viw_rp_wqe_stage(&sqe.flags, VIW_WQE_VALID | VIW_WQE_SIGNALED);
	CHECK(sqe.flags == VIW_WQE_SIGNALED, "staged 0x%x", sqe.flags);
	CHECK(!viw_rp_wqe_take(&copy, &sqe, sizeof(sqe)), "took a staged sqe");
	viw_rp_wqe_post(&sqe.flags, VIW_WQE_SIGNALED | VIW_WQE_INLINE);
	CHECK(viw_rp_wqe_posted(&sqe.flags), "posted sqe not valid");
	CHECK(sqe.flags == (VIW_WQE_VALID | VIW_WQE_SIGNALED | VIW_WQE_INLINE),
	      "flags 0x%x", sqe.flags);
	sqe.wr_id = 77;
	CHECK(viw_rp_wqe_take(&copy, &sqe, sizeof(sqe)), "posted sqe not taken");
	CHECK(copy.wr_id == 77 && copy.flags == (VIW_WQE_VALID |
	      VIW_WQE_SIGNALED | VIW_WQE_INLINE), "copy 0x%x", copy.flags);
	CHECK(sqe.flags == 0, "taken sqe keeps flags 0x%x", sqe.flags);

	CHECK(!(viw_rp_cqe_flags(&cqe) & VIW_CQE_VALID), "fresh cqe");
	viw_rp_cqe_publish(&cqe, VIW_CQE_INV);
	CHECK(viw_rp_cqe_flags(&cqe) == (VIW_CQE_VALID | VIW_CQE_INV),
	      "cqe flags 0x%x", cqe.flags);
	viw_rp_cqe_release(&cqe);
	CHECK(cqe.flags == 0, "released cqe 0x%x", cqe.flags);
	tc_report("VALID handoff", before);
}

/* ---- The kernel's WQ consumer against the provider's producer ---------- */

/* Post @n WRs from @seq on; returns how many went in. */
static uint32_t post_n(struct viw_ring *r, uint32_t seq, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!provider_post(r, seq + i))
			break;
	return i;
}

/* Posting order and the ring's bound, starting just before the wrap. */
static void test_wq_consumer(void)
{
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint32_t start = UINT32_MAX - 2, i;
	struct viw_ring r;
	struct kwq k;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_rp_ring_bytes(8, VIW_SQE_SIZE), 8,
		      VIW_SQE_SIZE);
	r.head = start;
	r.ctrl->prod = r.ctrl->cons = start;
	kwq_init(&k, mem, 8, VIW_SQE_SIZE, start);

	CHECK(!kwq_fetch(&k), "took from an empty ring");
	CHECK(post_n(&r, 0, 10) == 8, "provider posted past a full ring");
	for (i = 0; i < 8; i++)
		CHECK(sqe_is(kwq_fetch(&k), i), "WQE %u across the wrap", i);
	CHECK(!kwq_fetch(&k), "took a ninth WQE from 8 slots");
	CHECK(k.fetch == start + 8 && k.fetch == 5, "fetch %u", k.fetch);
	CHECK(!provider_post(&r, 8), "provider posted before cons moved");

	/* Each retirement frees exactly one slot, in order. */
	kwq_retire(&k);
	CHECK(r.ctrl->cons == start + 1, "cons %u", r.ctrl->cons);
	CHECK(provider_post(&r, 8), "retired slot not reusable");
	CHECK(!provider_post(&r, 9), "two slots for one retirement");
	CHECK(sqe_is(kwq_fetch(&k), 8), "reused slot");
	while (k.done != k.fetch)
		kwq_retire(&k);
	CHECK(r.ctrl->cons == k.fetch && viw_ring_free_slots(&r) == 8,
	      "cons %u fetch %u", r.ctrl->cons, k.fetch);
	free(k.shadow);
	free(mem);
	tc_report("WQ: kernel consumer, provider producer, wrap at 2^32", before);
}

/* The kernel never reads prod or cons of a WQ: garbage there changes nothing. */
static void test_wq_hostile_indices(void)
{
	static const uint32_t garbage[] = {
		0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
	};
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	struct viw_ring r;
	struct kwq k;
	uint32_t g, seq = 0;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_rp_ring_bytes(8, VIW_SQE_SIZE), 8,
		      VIW_SQE_SIZE);
	kwq_init(&k, mem, 8, VIW_SQE_SIZE, 0);
	for (g = 0; g < sizeof(garbage) / sizeof(garbage[0]); g++) {
		uint32_t far[] = { k.fetch + garbage[g], k.fetch - garbage[g] };
		int f;

		for (f = 0; f < 2; f++) {
			CHECK(provider_post(&r, seq), "post %u", seq);
			/* after the provider's own store of prod */
			r.ctrl->prod = far[f];
			r.ctrl->cons = ~far[f];
			CHECK(sqe_is(kwq_fetch(&k), seq), "prod 0x%x", far[f]);
			CHECK(!kwq_fetch(&k), "prod 0x%x: took an unposted slot",
			      far[f]);
			kwq_retire(&k);
			CHECK(r.ctrl->cons == k.done, "cons not the kernel's");
			seq++;
		}
	}
	free(k.shadow);
	free(mem);
	tc_report("WQ: kernel ignores garbage prod and cons", before);
}

static struct viw_sqe *raw_sqe(void *mem, uint32_t i)
{
	return viw_rp_slot(mem, 8, VIW_SQE_SIZE, i);
}

/* Flag words and early posts a process may write. */
static void test_wq_hostile_flags(void)
{
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	struct viw_sqe *copy;
	struct kwq k;
	uint32_t i;
	int before = tc_failures;

	kwq_init(&k, mem, 8, VIW_SQE_SIZE, 0);

	/* No VALID bit, however the rest looks: not posted. */
	raw_sqe(mem, 0)->flags = (uint16_t)~VIW_WQE_VALID;
	CHECK(!kwq_fetch(&k), "took flags 0x%x", (uint16_t)~VIW_WQE_VALID);
	CHECK(raw_sqe(mem, 0)->flags == (uint16_t)~VIW_WQE_VALID,
	      "kernel wrote an unposted slot");

	/* VALID past the kernel's index: it takes in order or not at all. */
	raw_sqe(mem, 1)->flags = VIW_WQE_VALID;
	CHECK(!kwq_fetch(&k), "took slot 1 before slot 0");

	/* Every bit set: posted; the copy keeps them for validation. */
	raw_sqe(mem, 0)->flags = 0xffff;
	raw_sqe(mem, 0)->wr_id = 100;
	copy = kwq_fetch(&k);
	CHECK(copy && copy->wr_id == 100 && copy->flags == 0xffff,
	      "flags 0xffff");
	CHECK(raw_sqe(mem, 0)->flags == 0, "VALID not cleared in the ring");

	/* Rewriting a taken slot does not reach the kernel's copy. */
	raw_sqe(mem, 0)->wr_id = 666;
	raw_sqe(mem, 0)->flags = VIW_WQE_VALID;
	CHECK(copy->wr_id == 100, "copy changed to %llu",
	      (unsigned long long)copy->wr_id);

	/* Posting all slots at once, ignoring cons: at most a ring's worth. */
	for (i = 0; i < 8; i++) {
		raw_sqe(mem, i)->wr_id = 200 + i;
		raw_sqe(mem, i)->flags = VIW_WQE_VALID;
	}
	for (i = 1; i < 8; i++)
		CHECK(kwq_fetch(&k) && k.fetch == i + 1, "slot %u", i);
	CHECK(raw_sqe(mem, 0)->flags == VIW_WQE_VALID, "slot 0 reposted");
	CHECK(!kwq_fetch(&k), "kernel holds %u of 8", k.fetch - k.done);
	kwq_retire(&k);
	copy = kwq_fetch(&k);
	CHECK(copy && copy->wr_id == 200 && k.fetch - k.done == 8,
	      "early repost not taken once its slot was retired");
	free(k.shadow);
	free(mem);
	tc_report("WQ: kernel against garbage flags and early posts", before);
}

/* A process scribbling anywhere in its ring, at random. */
#define SCRIBBLE_ROUNDS 200000

static uint32_t rnd(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return *state >> 33;
}

/* Write something random into the ring; sometimes post a slot. */
static void scribble(void *mem, uint64_t *seed)
{
	struct viw_ring_ctrl *ctrl = mem;
	struct viw_sqe *sqe = raw_sqe(mem, rnd(seed));

	switch (rnd(seed) % 6) {
	case 0:
		ctrl->prod = rnd(seed);
		break;
	case 1:
		ctrl->cons = rnd(seed);
		break;
	case 2:
		sqe->flags = rnd(seed);
		break;
	case 3:
		sqe->wr_id = rnd(seed);
		break;
	default:
		sqe->flags |= VIW_WQE_VALID;
		break;
	}
}

static void test_wq_scribble(void)
{
	void *mem = ring_mem(8, VIW_SQE_SIZE);
	uint64_t seed = 1;
	uint32_t n, taken = 0, bad = 0;
	struct kwq k;
	int before = tc_failures;

	kwq_init(&k, mem, 8, VIW_SQE_SIZE, UINT32_MAX - 100);
	for (n = 0; n < SCRIBBLE_ROUNDS; n++) {
		struct viw_sqe want, *copy;

		scribble(mem, &seed);
		want = *raw_sqe(mem, k.fetch);
		copy = kwq_fetch(&k);
		if (copy) {
			taken++;
			/* only a posted slot, at the kernel's own index */
			bad += !(want.flags & VIW_WQE_VALID) ||
			       memcmp(copy, &want, sizeof(want)) ||
			       raw_sqe(mem, k.fetch - 1)->flags != 0;
		}
		bad += viw_rp_used(k.fetch, k.done) > 8;
		if (rnd(&seed) % 3 == 0 && k.done != k.fetch) {
			kwq_retire(&k);
			bad += k.ctrl->cons != k.done;
		}
	}
	CHECK(bad == 0, "%u violations in %u rounds", bad, n);
	CHECK(taken > SCRIBBLE_ROUNDS / 10, "only %u WQEs taken", taken);
	CHECK(k.fetch - (UINT32_MAX - 100) == taken, "indices wrapped wrong");
	free(k.shadow);
	free(mem);
	tc_report("WQ: kernel against a scribbling process", before);
}

/* ---- SRQ --------------------------------------------------------------- */

static void srq_post(void *mem, uint32_t i, uint64_t wr_id)
{
	struct viw_rqe *rqe = viw_rp_slot(mem, 8, VIW_RQE_SIZE, i);

	rqe->wr_id = wr_id;
	viw_rp_wqe_post(&rqe->flags, 0);
}

/*
 * The SRQ limit is the one rule that reads prod: a bogus prod can only
 * move the limit event, and the kernel still takes only posted slots.
 */
static void test_srq_limit(void)
{
	void *mem = ring_mem(8, VIW_RQE_SIZE);
	struct ksrq k = { .ctrl = mem, .num_slots = 8, .fetch = UINT32_MAX };
	struct viw_rqe rqe;
	uint32_t i;
	int before = tc_failures;

	k.ctrl->cons = k.fetch;
	for (i = 0; i < 4; i++)
		srq_post(mem, k.fetch + i, 10 + i);
	k.ctrl->prod = k.fetch + 4;
	k.limit = 2;
	CHECK(ksrq_take(&k, &rqe) == 0 && rqe.wr_id == 10, "first RQE");
	CHECK(k.ctrl->cons == 0 && k.limit_events == 0, "3 left, limit 2");
	CHECK(ksrq_take(&k, &rqe) == 0 && rqe.wr_id == 11, "second RQE");
	CHECK(k.limit_events == 0, "2 left, limit 2: event");
	CHECK(ksrq_take(&k, &rqe) == 0 && rqe.wr_id == 12, "third RQE");
	CHECK(k.limit_events == 1 && k.limit == 0, "1 left: no limit event");

	/* prod far ahead, or behind fetch: no event; prod at fetch: one. */
	k.limit = 4;
	k.ctrl->prod = k.fetch + 0x80000000u;
	CHECK(ksrq_take(&k, &rqe) == 0 && rqe.wr_id == 13, "fourth RQE");
	CHECK(k.limit_events == 1, "event with prod far ahead");
	k.ctrl->prod = k.fetch - 1;
	CHECK(ksrq_take(&k, &rqe) == -1, "took an unposted RQE");
	CHECK(k.limit_events == 1, "event without a take");
	srq_post(mem, k.fetch, 14);
	CHECK(ksrq_take(&k, &rqe) == 0 && k.limit_events == 1,
	      "event with prod behind");
	srq_post(mem, k.fetch, 15);
	k.ctrl->prod = k.fetch + 1;
	CHECK(ksrq_take(&k, &rqe) == 0 && k.limit_events == 2,
	      "no event with prod at fetch");
	CHECK(k.ctrl->cons == k.fetch && k.fetch == 5, "cons %u fetch %u",
	      k.ctrl->cons, k.fetch);
	free(mem);
	tc_report("SRQ: take and limit against garbage prod", before);
}

/* ---- The kernel's CQ producer against the provider's consumer ---------- */

static struct viw_cqe cqe_for(uint32_t seq, uint32_t flags)
{
	struct viw_cqe c = {
		.wr_id = seq, .flags = flags, .byte_len = payload(seq),
		.qp_id = ~payload(seq), .status = seq % (VIW_CQE_STATUS_MAX + 1),
		.opcode = VIW_CQE_OP_RECV, .inv_stag = 3, .vendor_err = 4,
	};

	return c;
}

static void test_cq_producer(void)
{
	void *mem = ring_mem(4, VIW_CQE_SIZE);
	struct kcq k = { .ctrl = mem, .num_slots = 4, .prod = UINT32_MAX - 1 };
	struct viw_cqe c = cqe_for(7, VIW_CQE_SOLICITED | VIW_CQE_INV);
	struct viw_cqe *slot = viw_rp_slot(mem, 4, VIW_CQE_SIZE, k.prod);
	struct viw_ring r;
	uint32_t i;
	int before = tc_failures;

	viw_ring_init(&r, mem, viw_rp_ring_bytes(4, VIW_CQE_SIZE), 4,
		      VIW_CQE_SIZE);
	r.head = k.prod;

	CHECK(kcq_push(&k, &c) == 0, "unarmed CQ fired");
	CHECK(slot->wr_id == 7 && slot->byte_len == c.byte_len &&
	      slot->qp_id == c.qp_id && slot->status == c.status &&
	      slot->opcode == c.opcode && slot->inv_stag == 3 &&
	      slot->vendor_err == 4 && slot->flags == (VIW_CQE_VALID |
	      VIW_CQE_SOLICITED | VIW_CQE_INV), "CQE as written");
	CHECK(k.ctrl->prod == k.prod && k.prod == UINT32_MAX, "prod mirror");
	CHECK(provider_poll(&r) == 7 && provider_poll(&r) == -1, "poll");

	/* Across the wrap, the consumer keeping up. */
	for (i = 0; i < 10; i++) {
		c = cqe_for(100 + i, 0);
		CHECK(kcq_push(&k, &c) == 0, "push %u", i);
		CHECK(provider_poll(&r) == 100 + i, "poll %u", i);
	}
	CHECK(k.prod == 9 && r.head == 9 && k.ctrl->cons == 9, "prod %u",
	      k.prod);
	free(mem);
	tc_report("CQ: kernel producer, provider consumer, wrap at 2^32", before);
}

/* A consumer that stops consuming, or scribbles on the CQ, loses only its CQ. */
static void test_cq_hostile_consumer(void)
{
	void *mem = ring_mem(4, VIW_CQE_SIZE);
	struct kcq k = { .ctrl = mem, .num_slots = 4, .prod = 0 };
	struct viw_cqe c;
	uint32_t i;
	int before = tc_failures;

	k.ctrl->kflags = 0x100;		/* garbage the kernel keeps */
	for (i = 0; i < 4; i++) {
		c = cqe_for(i, 0);
		/* a consumer index far off changes nothing */
		k.ctrl->cons = 0x80000000u + i;
		k.ctrl->prod = ~i;
		CHECK(kcq_push(&k, &c) == 0, "push %u", i);
		CHECK(k.ctrl->prod == i + 1, "prod mirror %u", k.ctrl->prod);
	}
	/* A slot freed out of order is not the kernel's next one. */
	viw_rp_cqe_release(viw_rp_slot(mem, 4, VIW_CQE_SIZE, 2));
	c = cqe_for(4, 0);
	CHECK(kcq_push(&k, &c) == -1, "overwrote an unconsumed CQE");
	CHECK(k.ctrl->kflags == (0x100 | VIW_RING_KF_OVERFLOW),
	      "kflags 0x%x", k.ctrl->kflags);
	for (i = 0; i < 4; i++) {
		struct viw_cqe *s = viw_rp_slot(mem, 4, VIW_CQE_SIZE, i);

		CHECK(s->wr_id == i, "slot %u holds %llu", i,
		      (unsigned long long)s->wr_id);
	}
	/* Once overflowed, a freed slot does not bring the CQ back. */
	viw_rp_cqe_release(viw_rp_slot(mem, 4, VIW_CQE_SIZE, 0));
	CHECK(kcq_push(&k, &c) == -1 && k.prod == 4, "CQ came back");
	free(mem);
	tc_report("CQ: kernel against a hostile consumer", before);
}

/* ---- Arming ------------------------------------------------------------ */

static void test_arm_bits(void)
{
	struct viw_ring_ctrl ctrl = {};
	int before = tc_failures;

	CHECK(!viw_rp_cq_take_arm(&ctrl, false) &&
	      !viw_rp_cq_take_arm(&ctrl, true), "unarmed CQ fired");

	viw_rp_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == VIW_CQ_ARM_NEXT, "arm 0x%x", ctrl.arm);
	CHECK(viw_rp_cq_take_arm(&ctrl, false), "ARM_NEXT did not fire");
	CHECK(ctrl.arm == 0, "not disarmed");
	CHECK(!viw_rp_cq_take_arm(&ctrl, false), "fired twice for one arm");

	viw_rp_cq_arm(&ctrl, true);
	CHECK(ctrl.arm == VIW_CQ_ARM_SOLICITED, "arm 0x%x", ctrl.arm);
	CHECK(!viw_rp_cq_take_arm(&ctrl, false),
	      "ARM_SOLICITED fired on an unsolicited completion");
	CHECK(ctrl.arm == VIW_CQ_ARM_SOLICITED, "unsolicited CQE disarmed");
	CHECK(viw_rp_cq_take_arm(&ctrl, true), "solicited CQE did not fire");

	/* Arming accumulates: NEXT after SOLICITED covers both. */
	viw_rp_cq_arm(&ctrl, true);
	viw_rp_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == (VIW_CQ_ARM_NEXT | VIW_CQ_ARM_SOLICITED),
	      "arm 0x%x", ctrl.arm);
	CHECK(viw_rp_cq_take_arm(&ctrl, false), "NEXT|SOLICITED did not fire");
	CHECK(ctrl.arm == 0, "not fully disarmed");

	/* Re-arming an armed CQ is harmless and idempotent. */
	viw_rp_cq_arm(&ctrl, false);
	viw_rp_cq_arm(&ctrl, false);
	CHECK(ctrl.arm == VIW_CQ_ARM_NEXT, "arm 0x%x", ctrl.arm);

	/* Garbage arm words: the two bits decide, the rest is wiped. */
	ctrl.arm = 0xffffffff;
	CHECK(viw_rp_cq_take_arm(&ctrl, false) && ctrl.arm == 0,
	      "all bits: arm 0x%x", ctrl.arm);
	ctrl.arm = ~(uint32_t)(VIW_CQ_ARM_NEXT | VIW_CQ_ARM_SOLICITED);
	CHECK(!viw_rp_cq_take_arm(&ctrl, true) &&
	      ctrl.arm == ~(uint32_t)(VIW_CQ_ARM_NEXT | VIW_CQ_ARM_SOLICITED),
	      "no arm bits: fired or changed");
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
		if (viw_rp_cq_take_arm(&a->ctrl, n % 3 == 0))
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
		viw_rp_cq_arm(&a.ctrl, i & 1);
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

#define FLIP_ROUNDS 100000

static void *arm_flipper(void *arg)
{
	struct arm_race *a = arg;
	uint32_t n;

	for (n = 0; !__atomic_load_n(&a->done, __ATOMIC_ACQUIRE); n++)
		__atomic_store_n(&a->ctrl.arm, VIW_CQ_ARM_NEXT | (n & 6),
				 __ATOMIC_RELAXED);
	return NULL;
}

/*
 * A thread that keeps rewriting the arm word cannot keep the kernel in
 * its compare-and-exchange loop (alarm() catches a hang), and an arm
 * word that always asks for the event always gets it.
 */
static void test_arm_flipper(void)
{
	struct arm_race a = {};
	uint32_t i, fired = 0;
	pthread_t t;
	int before = tc_failures;

	a.ctrl.arm = VIW_CQ_ARM_NEXT;
	pthread_create(&t, NULL, arm_flipper, &a);
	for (i = 0; i < FLIP_ROUNDS; i++) {
		/* wait for the flipper to re-arm what we disarmed */
		while (!__atomic_load_n(&a.ctrl.arm, __ATOMIC_RELAXED))
			sched_yield();
		fired += viw_rp_cq_take_arm(&a.ctrl, false);
	}
	__atomic_store_n(&a.done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(fired == FLIP_ROUNDS, "%u events for %u armed completions",
	      fired, FLIP_ROUNDS);
	tc_report("CQ arm word flipped by the process", before);
}

/* ---- Both halves on two threads ----------------------------------------- */

#define STRESS_SLOTS 16
#define STRESS_COUNT (1u << 21)
#define STRESS_START (UINT32_MAX - 1000)	/* cross the wrap early */

struct stress {
	struct viw_ring ring;	/* the provider's */
	struct kwq kwq;		/* the kernel's, SQ test */
	struct kcq kcq;		/* the kernel's, CQ test */
	uint32_t errors;
};

/* Both threads of a stress test count errors. */
static void stress_error(struct stress *s)
{
	__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
}

/*
 * The kernel's SQ: take what is posted, retire it.  Retiring lags behind
 * fetching, as when WQEs are on the wire.
 */
static void *sq_kernel(void *arg)
{
	struct stress *s = arg;
	struct kwq *k = &s->kwq;
	uint32_t seq = 0;

	while (k->done - STRESS_START < STRESS_COUNT) {
		struct viw_sqe *sqe = kwq_fetch(k);

		if (sqe) {
			if (!sqe_is(sqe, seq))
				stress_error(s);
			seq++;
		}
		if (k->done != k->fetch &&
		    (!sqe || viw_rp_used(k->fetch, k->done) > seq % 5))
			kwq_retire(k);
		else if (!sqe)
			sched_yield();
	}
	return NULL;
}

/* The provider's SQ, in random batches. */
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
			if (viw_rp_wqe_posted(&sqe->flags))
				stress_error(s);	/* overwrote a live WQE */
			viw_rp_wqe_stage(&sqe->flags, VIW_WQE_SIGNALED);
			sqe->wr_id = seq;
			sqe->sge[0].length = payload(seq);
			sqe->sge[5].lkey = ~payload(seq);
			viw_rp_wqe_post(&sqe->flags, VIW_WQE_SIGNALED);
			ring->head++;
		}
		viw_ring_publish_prod(ring);
	}
}

static void test_sq_stress(void)
{
	struct stress s = {};
	void *mem = ring_mem(STRESS_SLOTS, VIW_SQE_SIZE);
	pthread_t t;
	int before = tc_failures;

	viw_ring_init(&s.ring, mem, viw_rp_ring_bytes(STRESS_SLOTS,
						      VIW_SQE_SIZE),
		      STRESS_SLOTS, VIW_SQE_SIZE);
	s.ring.head = STRESS_START;
	s.ring.ctrl->prod = STRESS_START;
	s.ring.ctrl->cons = STRESS_START;
	kwq_init(&s.kwq, mem, STRESS_SLOTS, VIW_SQE_SIZE, STRESS_START);

	pthread_create(&t, NULL, sq_kernel, &s);
	sq_provider(&s);
	pthread_join(t, NULL);
	CHECK(s.errors == 0, "%u bad WQEs", s.errors);
	CHECK(s.ring.ctrl->cons == s.ring.head, "cons %u head %u",
	      s.ring.ctrl->cons, s.ring.head);
	free(s.kwq.shadow);
	free(mem);
	tc_report("SQ kernel/provider stress", before);
}

/* The kernel's CQ: push when there is room, as completions arrive. */
static void *cq_kernel(void *arg)
{
	struct stress *s = arg;
	uint32_t seq = 0;

	while (seq < STRESS_COUNT) {
		struct viw_cqe c = cqe_for(seq, seq & 1 ? VIW_CQE_SOLICITED : 0);

		/* Only a full ring fails: check before pushing. */
		if (viw_rp_cqe_flags(viw_rp_slot(s->kcq.ctrl, STRESS_SLOTS,
						 VIW_CQE_SIZE, s->kcq.prod)) &
		    VIW_CQE_VALID) {
			sched_yield();
			continue;
		}
		if (kcq_push(&s->kcq, &c) < 0)
			stress_error(s);
		seq++;
	}
	return NULL;
}

/* The provider's CQ, as in viw_poll_cq(). */
static void cq_provider(struct stress *s)
{
	struct viw_ring *ring = &s->ring;
	uint32_t seq = 0;

	while (seq < STRESS_COUNT) {
		struct viw_cqe *cqe = viw_ring_slot(ring, ring->head);
		uint32_t flags = viw_rp_cqe_flags(cqe);
		struct viw_cqe want = cqe_for(seq, 0);

		if (!(flags & VIW_CQE_VALID)) {
			sched_yield();
			continue;
		}
		if (cqe->wr_id != seq || cqe->byte_len != want.byte_len ||
		    cqe->qp_id != want.qp_id || cqe->status != want.status ||
		    !!(flags & VIW_CQE_SOLICITED) != (seq & 1))
			stress_error(s);
		viw_rp_cqe_release(cqe);
		ring->head++;
		seq++;
		viw_ring_publish_cons(ring);
	}
}

static void test_cq_stress(void)
{
	struct stress s = {};
	void *mem = ring_mem(STRESS_SLOTS, VIW_CQE_SIZE);
	pthread_t t;
	int before = tc_failures;

	viw_ring_init(&s.ring, mem, viw_rp_ring_bytes(STRESS_SLOTS,
						      VIW_CQE_SIZE),
		      STRESS_SLOTS, VIW_CQE_SIZE);
	s.ring.head = STRESS_START;
	s.kcq.ctrl = mem;
	s.kcq.num_slots = STRESS_SLOTS;
	s.kcq.prod = STRESS_START;

	pthread_create(&t, NULL, cq_kernel, &s);
	cq_provider(&s);
	pthread_join(t, NULL);
	CHECK(s.errors == 0, "%u bad CQEs", s.errors);
	CHECK(!s.kcq.overflowed, "CQ overflowed");
	CHECK(s.ring.ctrl->cons == s.ring.ctrl->prod, "cons %u prod %u",
	      s.ring.ctrl->cons, s.ring.ctrl->prod);
	free(mem);
	tc_report("CQ kernel/provider stress", before);
}

/* ---- A CQ's event against its consumer's arm and poll ------------------- */

#define EVENT_ROUNDS 3000000
#define EVENT_SECONDS 4

struct cq_event_race {
	struct viw_ring ring;	/* the provider's */
	struct kcq kcq;		/* the kernel's */
	uint32_t consumed;	/* CQEs the consumer took */
	uint32_t events;	/* events the kernel raised */
	uint32_t pushed;	/* CQEs the kernel pushed, their events raised */
	uint32_t done;
};

/*
 * The kernel completes one WR at a time, the next as soon as the consumer
 * took the last: its push then meets the consumer's arm and poll.
 */
static void *event_kernel(void *arg)
{
	struct cq_event_race *r = arg;
	uint32_t seq;

	for (seq = 0; !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); seq++) {
		struct viw_cqe c = cqe_for(seq, 0);

		if (kcq_push(&r->kcq, &c) > 0)
			__atomic_fetch_add(&r->events, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&r->pushed, seq + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&r->consumed, __ATOMIC_ACQUIRE) == seq &&
		       !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			;
	}
	return NULL;
}

/*
 * The consumer armed, polled and found nothing: it sleeps until an event.
 * Returns false if the kernel pushed the CQE it waits for and raised no
 * event since @seen: then nothing would ever wake it.
 */
static bool event_wait(struct cq_event_race *r, uint32_t *seen)
{
	for (;;) {
		if (__atomic_load_n(&r->events, __ATOMIC_ACQUIRE) != *seen)
			break;
		/* The kernel counts the event before it says pushed. */
		if (__atomic_load_n(&r->pushed, __ATOMIC_ACQUIRE) > r->consumed &&
		    __atomic_load_n(&r->events, __ATOMIC_ACQUIRE) == *seen)
			return false;
	}
	*seen = __atomic_load_n(&r->events, __ATOMIC_ACQUIRE);
	return true;
}

/* A consumer that polls a while before it arms, as many applications do. */
static bool event_poll_first(struct cq_event_race *r, uint32_t spins)
{
	while (spins--)
		if (provider_poll(&r->ring) >= 0)
			return true;
	return false;
}

/*
 * An event-driven consumer arms the CQ, polls it, and sleeps only if it
 * found nothing.  A completion published before the arm is found by the
 * poll; one after it raises the event.  If the kernel read the arm word
 * before its CQE was visible to the poll, the consumer would sleep with a
 * completion in the ring and no event to come: a lost wakeup, which hangs
 * the application.  The check needs no timeout: the kernel says when it
 * has pushed a CQE and whether it raised the event.
 */
static void test_cq_event_race(void)
{
	struct cq_event_race r = {};
	void *mem = ring_mem(4, VIW_CQE_SIZE);
	time_t end = time(NULL) + EVENT_SECONDS;
	uint32_t seen = 0;
	bool lost = false;
	pthread_t t;
	int before = tc_failures;

	viw_ring_init(&r.ring, mem, viw_rp_ring_bytes(4, VIW_CQE_SIZE), 4,
		      VIW_CQE_SIZE);
	r.kcq.ctrl = mem;
	r.kcq.num_slots = 4;

	pthread_create(&t, NULL, event_kernel, &r);
	while (r.consumed < EVENT_ROUNDS && !lost &&
	       (r.consumed % 4096 || time(NULL) < end)) {
		if (!event_poll_first(&r, payload(r.consumed) >> 26)) {
			viw_rp_cq_arm(r.ring.ctrl, false);
			if (provider_poll(&r.ring) < 0) {
				lost = !event_wait(&r, &seen);
				continue;
			}
		}
		__atomic_store_n(&r.consumed, r.consumed + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&r.done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(!lost, "a completion without its event, after %u completions",
	      r.consumed);
	free(mem);
	tc_report("CQ event against arm and poll", before);
}

int main(void)
{
	/* Line by line, so that what ran before an alarm is in the log. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);	/* a lost wakeup must fail, not hang */
	test_init();
	test_slots();
	test_wrap();
	test_valid();
	test_wq_consumer();
	test_wq_hostile_indices();
	test_wq_hostile_flags();
	test_wq_scribble();
	test_srq_limit();
	test_cq_producer();
	test_cq_hostile_consumer();
	test_arm_bits();
	test_arm_race();
	test_arm_flipper();
	test_sq_stress();
	test_cq_stress();
	test_cq_event_race();
	return tc_done("unit.ring");
}
