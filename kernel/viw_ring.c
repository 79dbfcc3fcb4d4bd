// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: queue memory shared with user space.
 *
 * Queue memory is a set of zeroed pages charged to the memory cgroup of the
 * process that creates the queue (VIW_QMEM_GFP), mapped contiguously for
 * the kernel with vmap() and into the process with vm_map_pages_zero().
 * Every user context may hold at most VIW_MAX_UCTX_QMEM bytes of queue
 * memory (rings and their kernel shadows), so that one process cannot take
 * what the device limits leave for all.
 *
 * Once a ring is exposed, its mmap entry owns the pages: they are freed in
 * viw_mmap_free(), when the last reference to the entry goes, and never
 * while viw_mmap() may still be inserting them into a process.  A mapping
 * takes a reference on each page, so a process that still maps a ring
 * after its object was destroyed keeps the pages, not the kernel's view of
 * them.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_verbs.h"

static void viw_qmem_free_pages(struct page **pages, unsigned int n)
{
	while (n--)
		__free_page(pages[n]);
	kvfree(pages);
}

/* Zeroed, page-aligned memory of @size bytes, charged to the caller. */
int viw_qmem_alloc(struct viw_qmem *qm, size_t size)
{
	unsigned int i, n = PAGE_ALIGN(size) >> PAGE_SHIFT;
	struct page **pages;

	pages = kvcalloc(n, sizeof(*pages), VIW_QMEM_GFP);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(VIW_QMEM_GFP | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	qm->vaddr = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!qm->vaddr)
		goto err;
	qm->pages = pages;
	qm->npages = n;
	return 0;

err:
	viw_qmem_free_pages(pages, i);
	return -ENOMEM;
}

void viw_qmem_free(struct viw_qmem *qm)
{
	if (!qm->vaddr)
		return;
	vunmap(qm->vaddr);
	viw_qmem_free_pages(qm->pages, qm->npages);
	qm->vaddr = NULL;
	qm->pages = NULL;
}

int viw_ring_alloc(struct viw_ring *ring, u32 num_slots, u32 slot_size)
{
	int rv;

	if (!is_power_of_2(num_slots))
		return -EINVAL;

	ring->num_slots = num_slots;
	ring->slot_size = slot_size;
	ring->size = PAGE_ALIGN(viw_rp_ring_bytes(num_slots, slot_size));
	rv = viw_qmem_alloc(&ring->qmem, ring->size);
	if (rv)
		return rv;
	ring->mem = ring->qmem.vaddr;
	ring->ctrl = ring->mem;
	ring->mmap_entry = NULL;
	ring->uctx = NULL;
	ring->extra = 0;
	return 0;
}

void viw_ring_free(struct viw_ring *ring)
{
	if (ring->uctx)
		atomic64_sub(ring->size + ring->extra, &ring->uctx->qmem_bytes);
	ring->uctx = NULL;
	if (ring->mmap_entry) {
		/* The entry owns the pages now and frees them last. */
		rdma_user_mmap_entry_remove(ring->mmap_entry);
		ring->mmap_entry = NULL;
	} else {
		viw_qmem_free(&ring->qmem);
	}
	ring->qmem.vaddr = NULL;
	ring->mem = NULL;
	ring->ctrl = NULL;
}

/**
 * viw_mmap_insert - make queue memory mappable by a user context
 * @uctx: the context
 * @qm: the memory; on success the new entry owns it
 * @size: bytes to map, page aligned
 * @entry: set to the entry
 * @key: set to the mmap offset the process must use
 */
int viw_mmap_insert(struct ib_ucontext *uctx, struct viw_qmem *qm,
		    size_t size, struct rdma_user_mmap_entry **entry, u64 *key)
{
	struct viw_mmap_entry *ment;
	int rv;

	ment = kzalloc(sizeof(*ment), GFP_KERNEL_ACCOUNT);
	if (!ment)
		return -ENOMEM;
	ment->qmem = *qm;
	rv = rdma_user_mmap_entry_insert(uctx, &ment->rdma_entry, size);
	if (rv) {
		kfree(ment);
		return rv;
	}
	*entry = &ment->rdma_entry;
	*key = rdma_user_mmap_get_offset(&ment->rdma_entry);
	return 0;
}

/* Charge @bytes of queue memory to @uctx; -ENOMEM beyond its cap. */
static int viw_uctx_charge(struct viw_ucontext *uctx, size_t bytes)
{
	if (atomic64_add_return(bytes, &uctx->qmem_bytes) > VIW_MAX_UCTX_QMEM) {
		atomic64_sub(bytes, &uctx->qmem_bytes);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Make @ring mappable by the process that owns @udata, and charge the
 * ring and its kernel shadow (ring->extra) to the process's context.
 */
int viw_ring_expose(struct viw_ring *ring, struct ib_udata *udata, u64 *key)
{
	struct viw_ucontext *uctx;
	int rv;

	uctx = rdma_udata_to_drv_context(udata, struct viw_ucontext, ibuctx);
	if (!uctx)
		return -EINVAL;
	rv = viw_uctx_charge(uctx, ring->size + ring->extra);
	if (rv)
		return rv;
	rv = viw_mmap_insert(&uctx->ibuctx, &ring->qmem, ring->size,
			     &ring->mmap_entry, key);
	if (rv) {
		atomic64_sub(ring->size + ring->extra, &uctx->qmem_bytes);
		return rv;
	}
	ring->uctx = uctx;
	return 0;
}

int viw_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct viw_qmem *qm;
	int rv;

	/* Checks that the length matches the entry exactly. */
	entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!entry)
		return -EINVAL;
	/* The reference keeps the pages until they are inserted. */
	qm = &to_viw_mmap_entry(entry)->qmem;
	/* As remap_vmalloc_range(): no growing by mremap, not in dumps. */
	viw_vma_set_flags(vma, VM_DONTEXPAND | VM_DONTDUMP);
	rv = vm_map_pages_zero(vma, qm->pages, qm->npages);
	rdma_user_mmap_entry_put(entry);
	return rv;
}

/* The last reference to the entry is gone: nobody can map it any more. */
void viw_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct viw_mmap_entry *ment = to_viw_mmap_entry(entry);

	viw_qmem_free(&ment->qmem);
	kfree(ment);
}
