/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw ring protocol: how the kernel and the provider hand the slots of a
 * ring in queue memory to each other.  <rdma/viw-abi.h> has the layout,
 * docs/host-interface.md the prose; this is the code, written once.
 *
 * Plain C with no kernel dependency, like viw_wire.h: the module, the
 * provider (providers/viw/viw_ring.h) and the unit tests include this
 * file, so the host tests run the kernel's half of each rule against the
 * provider's.  The two sides differ only in how they access shared memory,
 * the shim below: smp_load_acquire(), READ_ONCE() and cmpxchg() in the
 * kernel; the __atomic builtins in user space, which give the C11 memory
 * model on the plain __u32 fields of the ABI structs.
 *
 * The rules:
 * - Indices are free-running __u32 counters that wrap at 2^32.  Slot i is
 *   at i & (num_slots - 1), num_slots a power of two, and prod - cons is
 *   the number of slots in use, right across the wrap.
 * - Each side keeps its own indices and the geometry fixed at creation.
 *   What the other side wrote (indices, flags, the arm word) is input: a
 *   bogus value can make a ring look full or empty to the reader, and is
 *   never used to address memory.
 * - A slot changes hands with the VALID bit of its flags word.  The writer
 *   fills the slot with VALID clear, then sets VALID with a release store;
 *   the reader acquires VALID before it reads the rest, and clears it.
 *
 * Work queues (SQ, RQ, SRQ): the provider produces, the kernel consumes.
 * A completion queue: the kernel produces, the provider consumes and arms.
 * Every name here starts with viw_rp_ ("ring protocol"); each function
 * says which side calls it.
 */
#ifndef VIW_RING_PROTO_H
#define VIW_RING_PROTO_H

#ifdef __KERNEL__
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/barrier.h>

/* Each acquire pairs with the other side's release of the same word. */
#define viw_rp_load_acquire(p)		smp_load_acquire(p)
/* Orders the writes before it, for the other side's acquire. */
#define viw_rp_store_release(p, v)	smp_store_release(p, v)
#define viw_rp_read_once(p)		READ_ONCE(*(p))
#define viw_rp_write_once(p, v)		WRITE_ONCE(*(p), v)
#define viw_rp_cmpxchg(p, old, new)	cmpxchg(p, old, new)
#define viw_rp_xchg(p, v)		xchg(p, v)
/* Orders the stores before it against the loads after it, too. */
#define viw_rp_mb()			smp_mb()
#else
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

#define viw_rp_load_acquire(p)		__atomic_load_n(p, __ATOMIC_ACQUIRE)
#define viw_rp_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#define viw_rp_read_once(p)		__atomic_load_n(p, __ATOMIC_RELAXED)
#define viw_rp_write_once(p, v)		__atomic_store_n(p, v, __ATOMIC_RELAXED)
/* Fully ordered, as the kernel's cmpxchg() and xchg() are. */
#define viw_rp_xchg(p, v)		__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST)
#define viw_rp_fetch_or(p, v)		__atomic_fetch_or(p, v, __ATOMIC_SEQ_CST)
#define viw_rp_mb()			__atomic_thread_fence(__ATOMIC_SEQ_CST)

static inline __u32 viw_rp_cmpxchg(__u32 *p, __u32 old, __u32 new)
{
	__atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	return old;
}
#endif

#include <rdma/viw-abi.h>

/* ---- Both sides: geometry and index arithmetic ---------------------------- */

static inline bool viw_rp_is_pow2(__u32 n)
{
	return n && !(n & (n - 1));
}

/* Bytes a ring of @num_slots slots of @slot_size bytes needs at least. */
static inline __u64 viw_rp_ring_bytes(__u32 num_slots, __u32 slot_size)
{
	return VIW_RING_SLOTS_OFFSET + (__u64)num_slots * slot_size;
}

/* Slot @index of the ring at @ring: the mask is the wrap. */
static inline void *viw_rp_slot(void *ring, __u32 num_slots, __u32 slot_size,
				__u32 index)
{
	return (__u8 *)ring + VIW_RING_SLOTS_OFFSET +
	       (size_t)(index & (num_slots - 1)) * slot_size;
}

/* Slots in use from @cons up to @prod, across the wrap. */
static inline __u32 viw_rp_used(__u32 prod, __u32 cons)
{
	return prod - cons;
}

/*
 * Slots that may still be filled at @prod while the oldest one in use is
 * at @cons.  A @cons ahead of @prod, or more than a ring behind, can only
 * be garbage: no room then, never more room than the ring has.  The
 * provider checks the kernel's cons with it; the kernel bounds what it
 * holds, [done, fetch), with it.
 */
static inline __u32 viw_rp_room(__u32 prod, __u32 cons, __u32 num_slots)
{
	__u32 used = viw_rp_used(prod, cons);

	return used > num_slots ? 0 : num_slots - used;
}

/* ---- Work queues: the provider produces ------------------------------------ */

/* The flags word of a WQE, where it changes hands. */
static inline __u16 *viw_rp_wqe_flags(void *wqe)
{
	return (__u16 *)((__u8 *)wqe + offsetof(struct viw_sqe, flags));
}

/* Both WQE formats change hands at the same place. */
_Static_assert(offsetof(struct viw_rqe, flags) ==
	       offsetof(struct viw_sqe, flags), "WQE flags offsets differ");

/* Provider: start filling a slot it owns; VALID stays clear. */
static inline void viw_rp_wqe_stage(__u16 *flags, __u16 value)
{
	viw_rp_write_once(flags, (__u16)(value & ~VIW_WQE_VALID));
}

/*
 * Provider: hand a filled WQE to the kernel.  The release store publishes
 * every field written before it.
 */
static inline void viw_rp_wqe_post(__u16 *flags, __u16 value)
{
	viw_rp_store_release(flags, (__u16)(value | VIW_WQE_VALID));
}

/*
 * Provider: slots free at @prod.  Acquiring cons pairs with the kernel's
 * release in viw_rp_retire(): its reads of the freed slots are complete
 * before the provider overwrites them.
 */
static inline __u32 viw_rp_wq_room(const struct viw_ring_ctrl *ctrl,
				   __u32 prod, __u32 num_slots)
{
	return viw_rp_room(prod, viw_rp_load_acquire(&ctrl->cons), num_slots);
}

/* Make an index visible: prod of a WQ, cons of a CQ (the provider's). */
static inline void viw_rp_publish(__u32 *index, __u32 value)
{
	viw_rp_store_release(index, value);
}

/* ---- Work queues: the kernel consumes -------------------------------------- */

/* Whether the WQE is posted.  Pairs with viw_rp_wqe_post(). */
static inline bool viw_rp_wqe_posted(const __u16 *flags)
{
	return viw_rp_load_acquire(flags) & VIW_WQE_VALID;
}

/*
 * Kernel: copy the WQE in slot @wqe into @copy, once, if it is posted.
 * From then on the kernel reads only its copy, so a process rewriting the
 * slot changes nothing.  VALID is cleared so that the slot is not taken
 * again when the kernel's index comes round; the provider may refill it
 * only once cons has passed it (viw_rp_retire()), which orders these
 * reads before its writes.  Returns false if the slot is not posted.
 */
static inline bool viw_rp_wqe_take(void *copy, void *wqe, __u32 size)
{
	__u16 *flags = viw_rp_wqe_flags(wqe);

	if (!viw_rp_wqe_posted(flags))
		return false;
	memcpy(copy, wqe, size);
	viw_rp_write_once(flags, 0);
	return true;
}

/*
 * Kernel: give the slots before @cons back to the provider.  Done before
 * the completion is written, so that a consumer that has seen it may post
 * into the slot at once.
 */
static inline void viw_rp_retire(struct viw_ring_ctrl *ctrl, __u32 cons)
{
	viw_rp_store_release(&ctrl->cons, cons);
}

/*
 * Kernel: whether an SRQ whose next slot is @fetch has fallen below its
 * armed @limit (0: not armed).  The one place the kernel reads prod: a
 * bogus prod only raises the limit event early, like a spurious event,
 * or not at all, and that hurts only the process that wrote it.
 */
static inline bool viw_rp_srq_below_limit(const struct viw_ring_ctrl *ctrl,
					  __u32 fetch, __u32 limit)
{
	return limit &&
	       viw_rp_used(viw_rp_read_once(&ctrl->prod), fetch) < limit;
}

/* ---- no_doorbell: the kernel takes new WQEs by itself --------------------- */

/* Kernel: whether new WQEs of the queue are taken without a doorbell. */
static inline void viw_rp_no_doorbell_set(struct viw_ring_ctrl *ctrl, bool on)
{
	viw_rp_write_once(&ctrl->no_doorbell, on ? 1 : 0);
}

/*
 * Provider, after publishing WQEs and a full barrier: the kernel will take
 * them without a doorbell.  The kernel never reads the word.
 */
static inline bool viw_rp_no_doorbell(const struct viw_ring_ctrl *ctrl)
{
	return viw_rp_read_once(&ctrl->no_doorbell) != 0;
}

/* ---- kflags: the kernel writes, the provider reads ------------------------- */

static inline void viw_rp_kflags_set(struct viw_ring_ctrl *ctrl, __u32 kflags)
{
	viw_rp_write_once(&ctrl->kflags, kflags);
}

/* Kernel: add @bits to kflags.  Caller serialises the ring's writers. */
static inline void viw_rp_kflags_add(struct viw_ring_ctrl *ctrl, __u32 bits)
{
	viw_rp_write_once(&ctrl->kflags, viw_rp_read_once(&ctrl->kflags) | bits);
}

/* Provider: the kernel's flags for this ring. */
static inline __u32 viw_rp_kflags(const struct viw_ring_ctrl *ctrl)
{
	return viw_rp_load_acquire(&ctrl->kflags);
}

/* ---- Completion queue: the kernel produces --------------------------------- */

/* Hand a filled CQE to the consumer: publishes every field before it. */
static inline void viw_rp_cqe_publish(struct viw_cqe *cqe, __u32 flags)
{
	viw_rp_store_release(&cqe->flags, flags | VIW_CQE_VALID);
}

/*
 * Kernel: write @cqe (its flags without VALID) into the CQ slot at *@prod
 * if the consumer has freed it, and advance *@prod.  The kernel keeps its
 * own producer index; ctrl->prod only mirrors it for the process.
 * Returns false if the slot still holds a CQE: the CQ has overflowed.
 */
static inline bool viw_rp_cq_push(struct viw_ring_ctrl *ctrl, __u32 num_slots,
				  __u32 *prod, const struct viw_cqe *cqe)
{
	struct viw_cqe *slot = viw_rp_slot(ctrl, num_slots, sizeof(*slot),
					   *prod);

	/*
	 * Acquire pairs with the consumer's release store that frees the
	 * slot: its reads of the old CQE are done before we overwrite it.
	 */
	if (viw_rp_load_acquire(&slot->flags) & VIW_CQE_VALID)
		return false;
	slot->wr_id = cqe->wr_id;
	slot->opcode = cqe->opcode;
	slot->status = cqe->status;
	slot->byte_len = cqe->byte_len;
	slot->qp_id = cqe->qp_id;
	slot->inv_stag = cqe->inv_stag;
	slot->vendor_err = cqe->vendor_err;
	viw_rp_cqe_publish(slot, cqe->flags);
	(*prod)++;
	viw_rp_write_once(&ctrl->prod, *prod);
	return true;
}

/*
 * Whether a completion with the given solicited bit fires the event for
 * arm word @arm: ARM_NEXT on any completion, ARM_SOLICITED only on a
 * solicited one.
 */
static inline bool viw_rp_cq_arm_fires(__u32 arm, bool solicited)
{
	return (arm & VIW_CQ_ARM_NEXT) ||
	       (solicited && (arm & VIW_CQ_ARM_SOLICITED));
}

/*
 * Tries of the compare-and-exchange in viw_rp_cq_take_arm().  The arm word
 * is in memory the process can write at any time and the kernel holds a
 * spinlock here, so a thread that keeps flipping it must not keep the
 * kernel looping.
 */
#define VIW_RP_ARM_TRIES	8

/*
 * Kernel, after viw_rp_cq_push(): disarm the CQ and return true if the
 * consumer asked to be told about this completion.  The consumer may
 * re-arm concurrently, hence the compare-and-exchange.  If the word keeps
 * changing, disarm it anyway and report the event: a spurious event is
 * harmless (the consumer polls and may find nothing new), a lost one would
 * leave it asleep.
 *
 * The consumer arms, then polls, and sleeps if it found nothing; the
 * kernel publishes the CQE, then reads the arm word.  Each side writes one
 * word and reads the other's, so each needs a full barrier in between,
 * or both reads may miss both writes (a CPU may let a load pass its own
 * earlier store): the consumer would sleep with the CQE in the ring and
 * no event to come.  The provider's arm is a fully ordered fetch-or; here
 * it is the barrier below.  unit.ring's "CQ event against arm and poll"
 * lost an event within a second without it.
 */
static inline bool viw_rp_cq_take_arm(struct viw_ring_ctrl *ctrl,
				      bool solicited)
{
	__u32 old;
	int tries;

	viw_rp_mb();
	old = viw_rp_read_once(&ctrl->arm);

	for (tries = 0; tries < VIW_RP_ARM_TRIES; tries++) {
		__u32 seen;

		if (!viw_rp_cq_arm_fires(old, solicited))
			return false;
		seen = viw_rp_cmpxchg(&ctrl->arm, old, 0);
		if (seen == old)
			return true;
		old = seen;
	}
	viw_rp_xchg(&ctrl->arm, 0);
	return true;
}

/* ---- Completion queue: the provider consumes ------------------------------- */

/* The CQE's flags; its other fields may be read if VALID is set. */
static inline __u32 viw_rp_cqe_flags(const struct viw_cqe *cqe)
{
	return viw_rp_load_acquire(&cqe->flags);
}

/* Give a consumed CQE's slot back to the kernel (viw_rp_cq_push()). */
static inline void viw_rp_cqe_release(struct viw_cqe *cqe)
{
	viw_rp_store_release(&cqe->flags, 0);
}

#ifndef __KERNEL__
/*
 * Provider: arm the CQ.  The kernel disarms it with a compare-and-exchange
 * when it raises the event, so bits are set atomically: a plain store
 * could undo a disarm and lose the next event.  The full barrier also
 * orders the arm before any later poll of the ring.  (The kernel has no
 * CQ consumer of its own, so its shim has no fetch-or.)
 */
static inline void viw_rp_cq_arm(struct viw_ring_ctrl *ctrl, bool solicited)
{
	viw_rp_fetch_or(&ctrl->arm,
			solicited ? VIW_CQ_ARM_SOLICITED : VIW_CQ_ARM_NEXT);
}
#endif

#endif /* VIW_RING_PROTO_H */
