/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The provider's view of a ring: where it is mapped, its geometry and the
 * provider's own index.  The protocol itself (index arithmetic, VALID
 * handoff, arming, memory ordering) is kernel/viw_ring_proto.h, which the
 * kernel compiles too; these helpers only apply it to struct viw_ring.
 */
#ifndef VIW_RING_H
#define VIW_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/viw-abi.h>

#include "../../kernel/viw_ring_proto.h"

struct viw_ring {
	struct viw_ring_ctrl *ctrl;	/* the mapping starts with it */
	uint32_t num_slots;		/* power of two */
	uint32_t slot_size;
	uint32_t head;		/* this side's own index: prod or cons */
};

/*
 * Set up @ring over @size bytes at @mem.  Returns false if the geometry
 * the kernel reported cannot be right.
 */
static inline bool viw_ring_init(struct viw_ring *ring, void *mem,
				 uint64_t size, uint32_t num_slots,
				 uint32_t slot_size)
{
	if (!viw_rp_is_pow2(num_slots) || !slot_size ||
	    viw_rp_ring_bytes(num_slots, slot_size) > size)
		return false;
	ring->ctrl = mem;
	ring->num_slots = num_slots;
	ring->slot_size = slot_size;
	ring->head = 0;
	return true;
}

static inline void *viw_ring_slot(const struct viw_ring *ring, uint32_t idx)
{
	return viw_rp_slot(ring->ctrl, ring->num_slots, ring->slot_size, idx);
}

/* Producer side (SQ, RQ, SRQ): free slots against the kernel's cons. */
static inline uint32_t viw_ring_free_slots(const struct viw_ring *ring)
{
	return viw_rp_wq_room(ring->ctrl, ring->head, ring->num_slots);
}

static inline bool viw_ring_full(const struct viw_ring *ring)
{
	return viw_ring_free_slots(ring) == 0;
}

/* Make the slots produced so far visible through ctrl->prod. */
static inline void viw_ring_publish_prod(struct viw_ring *ring)
{
	viw_rp_publish(&ring->ctrl->prod, ring->head);
}

/* Tell the producer how far this consumer got. */
static inline void viw_ring_publish_cons(struct viw_ring *ring)
{
	viw_rp_publish(&ring->ctrl->cons, ring->head);
}

static inline uint32_t viw_ring_kflags(const struct viw_ring *ring)
{
	return viw_rp_kflags(ring->ctrl);
}

#endif /* VIW_RING_H */
