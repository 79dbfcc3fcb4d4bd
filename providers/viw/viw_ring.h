/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Ring helpers shared by the provider and the unit tests.
 *
 * A ring is what <rdma/viw-abi.h> describes: a control block followed by
 * a power-of-two number of slots.  Indices are free-running u32 counters
 * that wrap; the distance prod - cons is the number of slots in use and is
 * correct across the wrap as long as it never exceeds the slot count.
 *
 * Ownership of a slot moves with its VALID bit: the writer fills the slot
 * with VALID clear and then sets VALID with a release store, the reader
 * tests VALID with an acquire load before it reads the rest.  The control
 * block indices follow the same rule.  Nothing here trusts a value the
 * other side wrote: a bogus index only makes the ring look full.
 */
#ifndef VIW_RING_H
#define VIW_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/viw-abi.h>

struct viw_ring {
	struct viw_ring_ctrl *ctrl;
	uint8_t *slots;
	uint32_t num_slots;	/* power of two */
	uint32_t slot_size;
	uint32_t head;		/* this side's own index: prod or cons */
};

static inline bool viw_is_pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

/* Bytes a ring of @num_slots slots of @slot_size bytes needs at least. */
static inline uint64_t viw_ring_bytes(uint32_t num_slots, uint32_t slot_size)
{
	return VIW_RING_SLOTS_OFFSET + (uint64_t)num_slots * slot_size;
}

/*
 * Set up @ring over @size bytes at @mem.  Returns false if the geometry
 * the kernel reported cannot be right.
 */
static inline bool viw_ring_init(struct viw_ring *ring, void *mem,
				 uint64_t size, uint32_t num_slots,
				 uint32_t slot_size)
{
	if (!viw_is_pow2(num_slots) || !slot_size ||
	    viw_ring_bytes(num_slots, slot_size) > size)
		return false;
	ring->ctrl = mem;
	ring->slots = (uint8_t *)mem + VIW_RING_SLOTS_OFFSET;
	ring->num_slots = num_slots;
	ring->slot_size = slot_size;
	ring->head = 0;
	return true;
}

static inline void *viw_ring_slot(const struct viw_ring *ring, uint32_t idx)
{
	return ring->slots +
	       (size_t)(idx & (ring->num_slots - 1)) * ring->slot_size;
}

/* Slots in use between a producer and a consumer index. */
static inline uint32_t viw_ring_used(uint32_t prod, uint32_t cons)
{
	return prod - cons;
}

static inline uint32_t viw_load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void viw_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * Producer side (SQ, RQ, SRQ in the provider).  The consumer's index is
 * read with acquire so that its reads of the freed slots are complete
 * before the producer overwrites them.
 */
static inline uint32_t viw_ring_free_slots(const struct viw_ring *ring)
{
	uint32_t used = viw_ring_used(ring->head,
				      viw_load_acquire(&ring->ctrl->cons));

	/* A consumer index ahead of prod, or too far behind, is garbage. */
	if (used > ring->num_slots)
		return 0;
	return ring->num_slots - used;
}

static inline bool viw_ring_full(const struct viw_ring *ring)
{
	return viw_ring_free_slots(ring) == 0;
}

/* Make the slots produced so far visible through ctrl->prod. */
static inline void viw_ring_publish_prod(struct viw_ring *ring)
{
	viw_store_release(&ring->ctrl->prod, ring->head);
}

/* Tell the producer how far this consumer got. */
static inline void viw_ring_publish_cons(struct viw_ring *ring)
{
	viw_store_release(&ring->ctrl->cons, ring->head);
}

/* WQE flags (u16): hand a filled slot to the kernel. */
static inline void viw_wqe_publish(uint16_t *flags, uint16_t value)
{
	__atomic_store_n(flags, (uint16_t)(value | VIW_WQE_VALID),
			 __ATOMIC_RELEASE);
}

static inline bool viw_wqe_valid(const uint16_t *flags)
{
	return __atomic_load_n(flags, __ATOMIC_ACQUIRE) & VIW_WQE_VALID;
}

static inline void viw_wqe_release(uint16_t *flags)
{
	__atomic_store_n(flags, 0, __ATOMIC_RELEASE);
}

/* CQE flags (u32): the consumer side of the same handshake. */
static inline uint32_t viw_cqe_flags_acquire(const struct viw_cqe *cqe)
{
	return __atomic_load_n(&cqe->flags, __ATOMIC_ACQUIRE);
}

static inline void viw_cqe_publish(struct viw_cqe *cqe, uint32_t flags)
{
	__atomic_store_n(&cqe->flags, flags | VIW_CQE_VALID, __ATOMIC_RELEASE);
}

/* Give a consumed CQE slot back to the kernel. */
static inline void viw_cqe_release(struct viw_cqe *cqe)
{
	__atomic_store_n(&cqe->flags, 0, __ATOMIC_RELEASE);
}

/*
 * Arm a CQ.  The kernel disarms it (compare-and-exchange to 0) when it
 * raises the event, so the provider must set bits atomically: a plain
 * store could undo a disarm and lose the next notification.  The full
 * barrier also orders the arm before any later poll of the ring.
 */
static inline void viw_cq_arm(struct viw_ring_ctrl *ctrl, bool solicited)
{
	__atomic_fetch_or(&ctrl->arm,
			  solicited ? VIW_CQ_ARM_SOLICITED : VIW_CQ_ARM_NEXT,
			  __ATOMIC_SEQ_CST);
}

/*
 * Whether a completion with the given solicited bit fires the event for
 * an arm word.  This is the kernel's rule, kept here so that the tests can
 * state it: ARM_NEXT fires on any completion, ARM_SOLICITED only on a
 * solicited one (or on any one when ARM_NEXT is also set).
 */
static inline bool viw_cq_arm_fires(uint32_t arm, bool solicited)
{
	return (arm & VIW_CQ_ARM_NEXT) ||
	       (solicited && (arm & VIW_CQ_ARM_SOLICITED));
}

static inline uint32_t viw_ring_kflags(const struct viw_ring *ring)
{
	return viw_load_acquire(&ring->ctrl->kflags);
}

#endif /* VIW_RING_H */
