// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: queue memory shared with user space.
 *
 * Rings come from vmalloc_user(): zeroed, page aligned and mappable with
 * remap_vmalloc_range().  A mapping takes a reference on each page, so a
 * process that still maps a ring after its object was destroyed keeps the
 * pages, not the kernel's view of them.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "viw.h"

int viw_ring_alloc(struct viw_ring *ring, u32 num_slots, u32 slot_size)
{
	if (!is_power_of_2(num_slots))
		return -EINVAL;

	ring->num_slots = num_slots;
	ring->slot_size = slot_size;
	ring->size = PAGE_ALIGN(VIW_RING_SLOTS_OFFSET +
				(size_t)num_slots * slot_size);
	ring->mem = vmalloc_user(ring->size);
	if (!ring->mem)
		return -ENOMEM;
	ring->ctrl = ring->mem;
	ring->mmap_entry = NULL;
	return 0;
}

void viw_ring_free(struct viw_ring *ring)
{
	if (ring->mmap_entry) {
		rdma_user_mmap_entry_remove(ring->mmap_entry);
		ring->mmap_entry = NULL;
	}
	vfree(ring->mem);
	ring->mem = NULL;
	ring->ctrl = NULL;
}

int viw_mmap_insert(struct ib_ucontext *uctx, void *vaddr, size_t size,
		    struct rdma_user_mmap_entry **entry, u64 *key)
{
	struct viw_mmap_entry *ment;
	int rv;

	ment = kzalloc(sizeof(*ment), GFP_KERNEL);
	if (!ment)
		return -ENOMEM;
	ment->vaddr = vaddr;
	rv = rdma_user_mmap_entry_insert(uctx, &ment->rdma_entry, size);
	if (rv) {
		kfree(ment);
		return rv;
	}
	*entry = &ment->rdma_entry;
	*key = rdma_user_mmap_get_offset(&ment->rdma_entry);
	return 0;
}

/* Make @ring mappable by the process that owns @udata. */
int viw_ring_expose(struct viw_ring *ring, struct ib_udata *udata, u64 *key)
{
	struct viw_ucontext *uctx;

	uctx = rdma_udata_to_drv_context(udata, struct viw_ucontext, ibuctx);
	if (!uctx)
		return -EINVAL;
	return viw_mmap_insert(&uctx->ibuctx, ring->mem, ring->size,
			       &ring->mmap_entry, key);
}

int viw_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	int rv;

	/* Checks that the length matches the entry exactly. */
	entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!entry)
		return -EINVAL;
	rv = remap_vmalloc_range(vma, to_viw_mmap_entry(entry)->vaddr, 0);
	rdma_user_mmap_entry_put(entry);
	return rv;
}

void viw_mmap_free(struct rdma_user_mmap_entry *entry)
{
	kfree(to_viw_mmap_entry(entry));
}
