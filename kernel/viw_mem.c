// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: memory regions and STags.
 *
 * An STag is a 24-bit index into the device's MR table and an 8-bit key
 * (viw.h); memory windows (viw_mw.c) take their STags from the same table.
 * The index part is handed out cyclically so that a freed STag is not
 * reused soon; the key part is random, so that a stale or guessed STag
 * whose index was reused still fails the check.
 *
 * An MR is referenced by its STag and by every part of the data path that
 * uses it: a segment being placed, a READ being answered, a WQE being
 * sent.  dereg_mr drops the STag at once, so no new lookup finds it, and
 * does not wait for the others: a remote peer controls how long they
 * last (a segment whose payload never comes, a zero window).  The last
 * put releases the pinned pages, from a work item because puts come from
 * softirq and under spinlocks.  A segment already being placed when
 * dereg_mr runs still completes into the pinned pages, as in siw.
 */
#include <linux/bvec.h>
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <rdma/ib_umem.h>

#include "viw_qp.h"
#include "viw_verbs.h"

#define VIW_STAG_INDEX_MAX	((1U << (32 - VIW_STAG_KEY_BITS)) - 1)

/* Releases MR memory after the last put; drained before a device goes. */
static struct workqueue_struct *viw_mem_wq;

bool viw_mr_covers(const struct viw_mr *mr, u64 addr, u64 len)
{
	u64 end = addr + len;

	return end >= addr && addr >= mr->iova &&
	       end - mr->iova <= mr->length;
}

/* Give @entry (an MR, or a tagged window) an STag index. */
int viw_stag_alloc(struct viw_device *vdev, void *entry, u32 *index)
{
	int rv;

	rv = xa_alloc_cyclic(&vdev->mr_xa, index, entry,
			     XA_LIMIT(1, VIW_STAG_INDEX_MAX),
			     &vdev->next_mr_index, GFP_KERNEL);
	return rv < 0 ? rv : 0;
}

/* The MR of @stag's index, under RCU; NULL for a window or nothing. */
static struct viw_mr *viw_mr_load(struct viw_device *vdev, u32 stag)
{
	void *entry = viw_stag_entry(vdev, stag);

	return xa_pointer_tag(entry) ? NULL : entry;
}

/*
 * The STag that names @mr now: a fast-register MR's last registration
 * (0 while invalid), every other MR's own.  Acquire pairs with the
 * release in viw_mr_fast_reg(): a lookup that matches sees the range.
 */
static u32 viw_mr_cur_stag(const struct viw_mr *mr)
{
	/* Pairs with smp_store_release() in viw_mr_fast_reg(). */
	return mr->fast ? smp_load_acquire(&mr->fr_stag) : mr->ibmr.lkey;
}

/*
 * A window is being bound to @mr: count it, unless dereg_mr or rereg
 * took the MR out of the table meanwhile.  The table's lock orders this
 * against their check of num_mw.
 */
bool viw_mr_hold_for_mw(struct viw_device *vdev, struct viw_mr *mr)
{
	bool held;

	xa_lock(&vdev->mr_xa);
	held = xa_load(&vdev->mr_xa, viw_stag_index(mr->ibmr.lkey)) == mr;
	if (held)
		atomic_inc(&mr->num_mw);
	xa_unlock(&vdev->mr_xa);
	return held;
}

static int viw_mr_add(struct viw_device *vdev, struct viw_mr *mr)
{
	u32 index;
	u32 stag;
	int rv;

	rv = viw_stag_alloc(vdev, mr, &index);
	if (rv)
		return rv;
	stag = (index << VIW_STAG_KEY_BITS) | get_random_u8();
	mr->ibmr.lkey = stag;
	mr->ibmr.rkey = stag;
	return 0;
}

static void viw_mr_free(struct viw_device *vdev, struct viw_mr *mr)
{
	unsigned long i;

	/* A pages MR holds its own reference on each page. */
	if (!mr->umem && !mr->fast && mr->pages)
		for (i = 0; i < mr->num_pages; i++)
			put_page(mr->pages[i]);
	kvfree(mr->pages);
	if (mr->umem)
		ib_umem_release(mr->umem);
	/* Lookups run under RCU. */
	kfree_rcu(mr, rcu);
	viw_obj_put(vdev, VIW_OBJ_MR);
}

static void viw_mr_free_work(struct work_struct *work)
{
	struct viw_mr *mr = container_of(work, struct viw_mr, free_work);

	viw_mr_free(to_viw_dev(mr->ibmr.device), mr);
}

int viw_mem_init(void)
{
	viw_mem_wq = alloc_workqueue("viw_mem", WQ_UNBOUND, 0);
	return viw_mem_wq ? 0 : -ENOMEM;
}

void viw_mem_exit(void)
{
	destroy_workqueue(viw_mem_wq);
}

/* Wait for the MRs whose last reference went to be released. */
void viw_mem_flush(void)
{
	flush_workqueue(viw_mem_wq);
}

static struct viw_mr *viw_mr_alloc(struct ib_pd *pd, int access)
{
	struct viw_device *vdev = to_viw_dev(pd->device);
	struct viw_mr *mr;

	if (!viw_obj_get(vdev, VIW_OBJ_MR))
		return ERR_PTR(-ENOMEM);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		viw_obj_put(vdev, VIW_OBJ_MR);
		return ERR_PTR(-ENOMEM);
	}
	mr->access = access;
	refcount_set(&mr->ref, 1);
	spin_lock_init(&mr->fr_lock);
	INIT_WORK(&mr->free_work, viw_mr_free_work);
	return mr;
}

/* The end of every registration: give @mr its STag, or free it. */
static struct ib_mr *viw_mr_publish(struct viw_device *vdev,
				    struct viw_mr *mr)
{
	int rv = viw_mr_add(vdev, mr);

	if (rv) {
		viw_mr_free(vdev, mr);
		return ERR_PTR(rv);
	}
	return &mr->ibmr;
}

/* Index the pinned pages so that the data path finds any byte in O(1). */
static int viw_mr_index_pages(struct viw_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	struct sg_page_iter iter;
	unsigned long i = 0;

	mr->num_pages = ib_umem_num_pages(umem);
	mr->pages = kvcalloc(mr->num_pages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (WARN_ON_ONCE(i >= mr->num_pages))
			return -EFAULT;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	mr->page_offset = ib_umem_offset(umem);
	return 0;
}

struct ib_mr *viw_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(pd->device);
	struct viw_mr *mr;
	int rv;

	if (!length || length > VIW_MAX_MR_SIZE || iova + length < iova)
		return ERR_PTR(-EINVAL);

	mr = viw_mr_alloc(pd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	mr->umem = ib_umem_get(pd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		rv = PTR_ERR(mr->umem);
		mr->umem = NULL;
		goto err_free;
	}
	rv = viw_mr_index_pages(mr);
	if (rv)
		goto err_free;
	mr->iova = iova;
	mr->length = length;
	return viw_mr_publish(vdev, mr);

err_free:
	viw_mr_free(vdev, mr);
	return ERR_PTR(rv);
}

/**
 * viw_reg_pages_mr - register kernel pages, zero-based (device memory)
 * @pd: the PD
 * @pages: the pages, in the order of their bytes
 * @offset: byte of @pages that is the MR's address 0
 * @length: bytes from there, within @pages; may be 0
 * @access: IB_ACCESS_* rights
 *
 * The MR takes a reference on every page it covers, so that its pages
 * stay as long as the data path may use them, also after their owner
 * freed them.
 *
 * Return: the MR, or an ERR_PTR.
 */
struct ib_mr *viw_reg_pages_mr(struct ib_pd *pd, struct page **pages,
			       u64 offset, u64 length, int access)
{
	struct viw_device *vdev = to_viw_dev(pd->device);
	u32 page_offset = offset & ~PAGE_MASK;
	struct viw_mr *mr;
	unsigned long i;

	mr = viw_mr_alloc(pd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	if (length)
		mr->num_pages = DIV_ROUND_UP(page_offset + length, PAGE_SIZE);
	/* At least one entry: a NULL array would make it a DMA MR. */
	mr->pages = kvcalloc(max(mr->num_pages, 1UL), sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT);
	if (!mr->pages) {
		mr->num_pages = 0;
		viw_mr_free(vdev, mr);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < mr->num_pages; i++) {
		mr->pages[i] = pages[(offset >> PAGE_SHIFT) + i];
		get_page(mr->pages[i]);
	}
	mr->page_offset = page_offset;
	mr->iova = 0;
	mr->length = length;
	mr->ibmr.iova = 0;
	mr->ibmr.length = length;
	return viw_mr_publish(vdev, mr);
}

/* Kernel consumers only: an STag that covers all kernel memory. */
struct ib_mr *viw_get_dma_mr(struct ib_pd *pd, int access)
{
	struct viw_device *vdev = to_viw_dev(pd->device);
	struct viw_mr *mr;

	mr = viw_mr_alloc(pd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->dma = true;
	mr->iova = 0;
	mr->length = U64_MAX;
	return viw_mr_publish(vdev, mr);
}

/*
 * Fast registration (IBA 10.6.3.3 and 10.7, RFC 5040's STag lifecycle):
 * alloc_mr makes an MR that is invalid until a REG_MR work request,
 * executed by the transmit engine in send queue order, gives it a range
 * and an STag; LOCAL_INV, or the peer's SEND with Invalidate, makes it
 * invalid again.  map_mr_sg fills the page list that the next REG_MR
 * takes; the one in use stays until then.
 *
 * The pages hold no references: the consumer owns them and may free
 * them once it has invalidated the MR.  So the data path holds fr_lock
 * over each copy and checks that the STag it looked up is still the
 * MR's (viw_fr_begin()), and an invalidation takes the same lock: a
 * segment being placed when the invalidation comes finishes its current
 * copy first, and its next copy is refused, like a new segment.
 */
struct ib_mr *viw_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			   u32 max_num_sg)
{
	struct viw_device *vdev = to_viw_dev(pd->device);
	struct viw_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > VIW_MAX_FR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = viw_mr_alloc(pd, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->fast = true;
	mr->max_pages = max_num_sg;
	/* The page list in use, then the one map_mr_sg fills. */
	mr->pages = kvcalloc(2 * max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		viw_mr_free(vdev, mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fr_map = mr->pages + max_num_sg;
	return viw_mr_publish(vdev, mr);
}

/* ib_sg_to_pages() calls this for each page: a direct-map address. */
static int viw_fr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct viw_mr *mr = to_viw_mr(ibmr);
	void *va = (void *)(unsigned long)addr;

	if (mr->fr_map_num >= mr->max_pages)
		return -ENOMEM;
	if (addr != (unsigned long)addr || !virt_addr_valid(va))
		return -EINVAL;
	mr->fr_map[mr->fr_map_num++] = virt_to_page(va);
	return 0;
}

int viw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset)
{
	struct viw_mr *mr = to_viw_mr(ibmr);
	unsigned long flags;
	int n;

	/* The page list indexes whole pages: viw_mr_locate(). */
	if (!mr->fast || ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	/* Against a REG_MR copying it; consumers map in any context. */
	spin_lock_irqsave(&mr->fr_lock, flags);
	mr->fr_map_num = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, viw_fr_set_page);
	spin_unlock_irqrestore(&mr->fr_lock, flags);
	return n;
}

#define VIW_FR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)

/* A fast-register MR of @qp's PD by the index of @stag; RCU held. */
static struct viw_mr *viw_fr_load(struct viw_qp *qp, u32 stag)
{
	struct viw_mr *mr = viw_mr_load(qp->vdev, stag);

	if (!mr || !mr->fast || mr->ibmr.pd != qp->ibqp.pd)
		return NULL;
	return mr;
}

/* Whether the registration @b fits the pages map_mr_sg gave @mr. */
static bool viw_fr_fits(const struct viw_mr *mr, const struct viw_bind_mw *b)
{
	u64 first = b->addr & ~PAGE_MASK;

	if (!b->length || b->access & ~VIW_FR_ACCESS)
		return false;
	return b->length <= (u64)mr->fr_map_num * PAGE_SIZE - first;
}

/*
 * Begin a copy into or out of the pages of @mr, found by @stag for the
 * range @addr, @len: false if a fast-register MR was invalidated or
 * registered anew without that range since the lookup.  Until
 * viw_fr_end(), no invalidation completes.
 */
static bool viw_fr_begin(struct viw_mr *mr, u32 stag, u64 addr, u64 len)
	__acquires(&mr->fr_lock)
{
	spin_lock_bh(&mr->fr_lock);
	return stag && mr->fr_stag == stag && viw_mr_covers(mr, addr, len);
}

static void viw_fr_end(struct viw_mr *mr)
	__releases(&mr->fr_lock)
{
	spin_unlock_bh(&mr->fr_lock);
}

/**
 * viw_mr_fast_reg - execute a VIW_OP_REG_MR WQE
 * @qp: the kernel QP it was posted to (transmit engine context)
 * @sqe: the kernel's copy of the WQE
 *
 * The MR must be invalid (IBA 10.7.2.5: registering a valid one fails).
 * A process cannot post one: its PDs have no fast-register MRs, and its
 * QPs are refused all the same.
 * Return: VIW_CQE_SUCCESS, or the status the WQE completes with.
 */
u8 viw_mr_fast_reg(struct viw_qp *qp, const struct viw_sqe *sqe)
{
	struct viw_bind_mw b;
	struct viw_mr *mr;
	u8 status = VIW_CQE_LOC_PROT_ERR;

	if (!viw_qp_is_kernel(qp))
		return VIW_CQE_LOC_QP_OP_ERR;
	memcpy(&b, sqe->sge, sizeof(b));
	rcu_read_lock();
	mr = viw_fr_load(qp, sqe->rkey);
	if (!mr)
		goto out;
	spin_lock_bh(&mr->fr_lock);
	if (!mr->fr_stag && viw_fr_fits(mr, &b)) {
		memcpy(mr->pages, mr->fr_map,
		       mr->fr_map_num * sizeof(*mr->pages));
		mr->num_pages = mr->fr_map_num;
		mr->iova = b.addr;
		mr->length = b.length;
		mr->page_offset = b.addr & ~PAGE_MASK;
		WRITE_ONCE(mr->access, b.access);
		/* Publishes the range to lookups (viw_mr_cur_stag()). */
		smp_store_release(&mr->fr_stag, sqe->rkey);
		status = VIW_CQE_SUCCESS;
	}
	spin_unlock_bh(&mr->fr_lock);
out:
	rcu_read_unlock();
	return status;
}

/*
 * Invalidate @mr if @stag is its STag now (any STag if @stag is 0).  A
 * copy that is using its pages on another CPU ends first; none begins
 * after (viw_fr_begin()).  Any context: from the receive engine in
 * softirq, the spin is one copy long.
 */
static bool viw_fr_invalidate(struct viw_mr *mr, u32 stag)
{
	bool done;

	spin_lock_bh(&mr->fr_lock);
	done = mr->fr_stag && (!stag || mr->fr_stag == stag);
	if (done)
		WRITE_ONCE(mr->fr_stag, 0);
	spin_unlock_bh(&mr->fr_lock);
	return done;
}

/* Local Invalidate of a fast-register MR of the QP's PD. */
u8 viw_mr_local_inv(struct viw_qp *qp, u32 stag)
{
	struct viw_mr *mr;
	bool done;

	rcu_read_lock();
	mr = viw_fr_load(qp, stag);
	done = mr && stag && viw_fr_invalidate(mr, stag);
	rcu_read_unlock();
	return done ? VIW_CQE_SUCCESS : VIW_CQE_LOC_QP_OP_ERR;
}

/**
 * viw_mr_remote_inv - the peer's SEND with Invalidate names an MR's STag
 * @qp: the QP whose stream carried it
 * @stag: the STag, which is no window's
 * @cause: set to the TERMINATE cause on failure
 *
 * RFC 5040 §6.10 leaves it to the RNIC which STags may be invalidated;
 * IBA 10.6.7.2.6 and 10.7.2.6 allow it for fast-register MRs of the QP's
 * PD only.  A registered MR (ibv_reg_mr, reg_user_mr, a DMA or a device
 * memory MR) cannot be invalidated, by the peer least of all.
 * Return: 0 or -EINVAL.
 */
int viw_mr_remote_inv(struct viw_qp *qp, u32 stag,
		      struct viw_term_cause *cause)
{
	struct viw_mr *mr;
	int rv = -EINVAL;

	cause->layer = VIW_TERM_RDMAP;
	rcu_read_lock();
	mr = viw_mr_load(qp->vdev, stag);
	if (!mr || viw_mr_cur_stag(mr) != stag || !stag) {
		cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
		cause->ecode = VIW_RDMAP_EC_INVALID_STAG;
	} else if (!mr->fast) {
		cause->etype = VIW_RDMAP_ET_REMOTE_OP;
		cause->ecode = VIW_RDMAP_EC_CANNOT_INVALIDATE;
	} else if (mr->ibmr.pd != qp->ibqp.pd) {
		cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
		cause->ecode = VIW_RDMAP_EC_STAG_NOT_ASSOC;
	} else if (viw_fr_invalidate(mr, stag)) {
		rv = 0;
	} else {
		cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
		cause->ecode = VIW_RDMAP_EC_INVALID_STAG;
	}
	rcu_read_unlock();
	return rv;
}

/*
 * Take @mr's STag out of the table, unless windows are bound to it
 * (IBA 10.6.7.2.4: deregistering such an MR fails).  A rereg that
 * replaced the MR took it out already.
 */
static int viw_mr_unpublish(struct viw_device *vdev, struct viw_mr *mr)
{
	u32 index = viw_stag_index(mr->ibmr.lkey);
	int rv = 0;

	xa_lock(&vdev->mr_xa);
	if (atomic_read(&mr->num_mw))
		rv = -EBUSY;
	else if (xa_load(&vdev->mr_xa, index) == mr)
		__xa_erase(&vdev->mr_xa, index);
	xa_unlock(&vdev->mr_xa);
	return rv;
}

int viw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibmr->device);
	struct viw_mr *mr = to_viw_mr(ibmr);
	int rv;

	/* Lookups fail from now on; users that hold it keep the memory. */
	rv = viw_mr_unpublish(vdev, mr);
	if (rv)
		return rv;
	/* A segment that still holds it places nothing more. */
	if (mr->fast)
		viw_fr_invalidate(mr, 0);
	if (refcount_dec_and_test(&mr->ref))
		viw_mr_free(vdev, mr);
	return 0;
}

/* Rights that need the pages pinned for writing (ib_access_writable). */
#define VIW_ACCESS_WRITABLE \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND)

/*
 * Change access or PD in place: the pages stay and so does the STag.
 * The core sets ibmr.pd itself once this returns.
 */
static int viw_mr_modify(struct viw_device *vdev, struct viw_mr *mr,
			 int access)
{
	int rv = 0;

	xa_lock(&vdev->mr_xa);
	if (atomic_read(&mr->num_mw))
		rv = -EBUSY;
	else
		WRITE_ONCE(mr->access, access);
	xa_unlock(&vdev->mr_xa);
	return rv;
}

/**
 * viw_rereg_user_mr - ibv_rereg_mr
 * @ibmr: the MR
 * @flags: IB_MR_REREG_* (the core checked them)
 * @start: new user address (IB_MR_REREG_TRANS)
 * @length: new length (IB_MR_REREG_TRANS)
 * @iova: new I/O virtual address (IB_MR_REREG_TRANS)
 * @access: new rights (IB_MR_REREG_ACCESS; the core checked them)
 * @pd: the PD the MR will belong to
 * @udata: driver data, none
 *
 * A new translation, or rights that need the pages pinned for writing
 * when they were not, make a new MR with new pages and a new STag: the
 * core then deregisters the old one, whose pages stay with any peer
 * that still holds them, as after dereg_mr.  Anything else is changed
 * in place.  An MR with bound windows is not changed (IBA 10.6.7.2.4).
 *
 * Return: NULL if changed in place, the new MR, or an ERR_PTR.
 */
struct ib_mr *viw_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *pd, struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibmr->device);
	struct viw_mr *mr = to_viw_mr(ibmr);
	struct ib_mr *new;
	int rv;

	if (!mr->umem || (udata && (udata->inlen || udata->outlen)))
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (!(access & VIW_ACCESS_WRITABLE) || mr->umem->writable)) {
		rv = viw_mr_modify(vdev, mr, access);
		return rv ? ERR_PTR(rv) : NULL;
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->length;
		iova = mr->iova;
	}
	new = viw_reg_user_mr(pd, start, length, iova, access, udata);
	if (IS_ERR(new))
		return new;
	/* The old STag goes now, so that no window is bound to it any more. */
	rv = viw_mr_unpublish(vdev, mr);
	if (rv) {
		viw_dereg_mr(new, udata);
		return ERR_PTR(rv);
	}
	return new;
}

/* The last data path reference is gone (viw_mr_put()): free it, later. */
void viw_mr_release(struct viw_mr *mr)
{
	queue_work(viw_mem_wq, &mr->free_work);
}

/*
 * A DMA MR's range must lie in the direct map, where virt_to_page() finds
 * its pages: a kernel consumer's bad address, or a peer's guess at one
 * through the rkey of a remotely accessible DMA MR, is refused instead of
 * touching memory that nobody gave the device.  The direct map is
 * contiguous, so its ends decide.
 */
static bool viw_dma_range_valid(u64 addr, u32 len)
{
	u64 last = addr + (len ? len - 1 : 0);

	if (addr != (unsigned long)addr || last != (unsigned long)last)
		return false;
	return virt_addr_valid((void *)(unsigned long)addr) &&
	       virt_addr_valid((void *)(unsigned long)last);
}

/*
 * The MR that @entry (of @stag's index, loaded under the RCU read lock
 * that the caller still holds) is, referenced, if @stag names it now and
 * it may be used as asked; else NULL with @cause set.  Inlined into both
 * lookups below: every placed segment and every sent WQE makes one.
 */
static __always_inline struct viw_mr *
viw_mr_ref_entry(void *entry, struct ib_pd *pd, u32 stag, int access,
		 u64 addr, u32 len, struct viw_term_cause *cause)
{
	/* A window's STag is no lkey, and serves viw_mr_get_remote() only. */
	struct viw_mr *mr = xa_pointer_tag(entry) ? NULL : entry;

	cause->layer = VIW_TERM_DDP;
	cause->etype = VIW_DDP_ET_TAGGED;
	if (!mr || viw_mr_cur_stag(mr) != stag ||
	    !refcount_inc_not_zero(&mr->ref)) {
		cause->ecode = VIW_DDP_EC_T_INVALID_STAG;
		return NULL;
	}

	if (mr->ibmr.pd != pd || (!mr->pages && !mr->dma)) {
		cause->ecode = VIW_DDP_EC_T_STAG_NOT_ASSOC;
	} else if ((READ_ONCE(mr->access) & access) != access) {
		cause->layer = VIW_TERM_RDMAP;
		cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
		cause->ecode = VIW_RDMAP_EC_ACCESS;
	} else if (!viw_mr_covers(mr, addr, len) ||
		   (mr->dma && !viw_dma_range_valid(addr, len))) {
		cause->ecode = VIW_DDP_EC_T_BASE_BOUNDS;
	} else {
		return mr;
	}
	viw_mr_put(mr);
	return NULL;
}

/**
 * viw_mr_get_entry - viw_mr_get() of an entry already looked up
 * @entry: what viw_stag_entry() found for @stag, under the RCU read lock
 *	   that the caller still holds
 * @pd: the PD the STag must belong to
 * @stag: the STag (lkey or rkey)
 * @access: the IB_ACCESS_* rights needed
 * @addr: first byte that will be accessed
 * @len: number of bytes
 * @cause: set to the TERMINATE cause on failure
 *
 * A peer's STag may name an MR or a window: its caller looks the index up
 * once and tells the two apart (viw_mr_get_remote()).
 * Return: the MR with a reference, or NULL.
 */
struct viw_mr *viw_mr_get_entry(void *entry, struct ib_pd *pd, u32 stag,
				int access, u64 addr, u32 len,
				struct viw_term_cause *cause)
{
	return viw_mr_ref_entry(entry, pd, stag, access, addr, len, cause);
}

/**
 * viw_mr_get - look up an STag for the data path
 * @vdev: the device
 * @pd: the PD the STag must belong to
 * @stag: the STag (lkey or rkey)
 * @access: the IB_ACCESS_* rights needed
 * @addr: first byte that will be accessed
 * @len: number of bytes
 * @cause: set to the TERMINATE cause on failure
 *
 * Return: the MR with a reference, or NULL.
 */
struct viw_mr *viw_mr_get(struct viw_device *vdev, struct ib_pd *pd, u32 stag,
			  int access, u64 addr, u32 len,
			  struct viw_term_cause *cause)
{
	struct viw_mr *mr;

	rcu_read_lock();
	mr = viw_mr_ref_entry(viw_stag_entry(vdev, stag), pd, stag, access,
			      addr, len, cause);
	rcu_read_unlock();
	return mr;
}

/*
 * Find the page and offset of MR byte @addr, which the caller has checked
 * to be inside the MR.  Returns the bytes that follow in the same page.
 * Inline: every placed or sent page piece looks it up.
 */
static inline u32 viw_mr_locate(const struct viw_mr *mr, u64 addr,
				struct page **page, u32 *offset)
{
	u64 off = addr - mr->iova + mr->page_offset;

	if (mr->dma) {
		*page = virt_to_page((void *)(unsigned long)addr);
		*offset = offset_in_page(addr);
		return PAGE_SIZE - *offset;
	}
	*page = mr->pages[off >> PAGE_SHIFT];
	*offset = off & ~PAGE_MASK;
	return PAGE_SIZE - *offset;
}

/**
 * viw_mr_bvec - describe MR memory as bio_vecs, one per page piece
 * @mr: a referenced user MR
 * @addr: first byte, inside the MR
 * @len: bytes, inside the MR; set to the bytes described
 * @bv: array to fill
 * @max: entries available in @bv
 *
 * Return: entries filled.  If @max runs out first, *@len is cut to what
 * they hold, and the caller must send no more than that.
 */
int viw_mr_bvec(const struct viw_mr *mr, u64 addr, u32 *len,
		struct bio_vec *bv, int max)
{
	u32 left = *len;
	int n = 0;

	while (left && n < max) {
		struct page *page;
		u32 off, chunk;

		chunk = min(left, viw_mr_locate(mr, addr, &page, &off));
		bvec_set_page(&bv[n++], page, chunk, off);
		addr += chunk;
		left -= chunk;
	}
	*len -= left;
	return n;
}

/*
 * Copy @len bytes from @skb at @skb_off into MR memory at @addr and fold
 * them into the CRC.  The range was checked against the MR.  Inline in
 * both of viw_mr_place_skb()'s paths: the receive engine calls it for
 * every payload piece.
 */
static __always_inline int
viw_mr_copy_from_skb(const struct viw_mr *mr, u64 addr,
		     const struct sk_buff *skb, int skb_off, u32 len, u32 *crc)
{
	while (len) {
		struct page *page;
		u32 off, chunk;
		void *dst;
		int rv;

		chunk = min(len, viw_mr_locate(mr, addr, &page, &off));
		dst = kmap_local_page(page) + off;
		rv = skb_copy_bits(skb, skb_off, dst, chunk);
		if (!rv && crc)
			*crc = crc32c(*crc, dst, chunk);
		kunmap_local(dst);
		if (rv)
			return rv;
		addr += chunk;
		skb_off += chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * viw_mr_place_skb - place payload into MR memory
 * @mr: a referenced MR, found by @stag for a range that holds this one
 * @stag: the STag the segment or receive SGE named
 * @addr: first byte
 * @skb: the payload's skb
 * @skb_off: its offset there
 * @len: bytes
 * @crc: the CRC to fold them into, or NULL
 *
 * A fast-register MR may have been invalidated since the lookup; then
 * nothing is placed.
 * Return: 0, -ESTALE if the STag is no longer valid for the range, or
 * the skb's error.
 */
int viw_mr_place_skb(struct viw_mr *mr, u32 stag, u64 addr,
		     const struct sk_buff *skb, int skb_off, u32 len, u32 *crc)
{
	int rv = -ESTALE;

	if (!mr->fast)
		return viw_mr_copy_from_skb(mr, addr, skb, skb_off, len, crc);
	if (viw_fr_begin(mr, stag, addr, len))
		rv = viw_mr_copy_from_skb(mr, addr, skb, skb_off, len, crc);
	viw_fr_end(mr);
	return rv;
}

/*
 * The 8 bytes at MR address @addr as an atomic64_t in a local mapping, or
 * NULL if they are not naturally aligned in the page: the tagged offset
 * was checked, but an MR registered with an iova of another alignment
 * than its buffer could still place them across a page boundary.
 */
static atomic64_t *viw_mr_map_u64(const struct viw_mr *mr, u64 addr)
{
	struct page *page;
	u32 off;

	viw_mr_locate(mr, addr, &page, &off);
	if (off & (VIW_ATOMIC_SIZE - 1))
		return NULL;
	return kmap_local_page(page) + off;
}

/*
 * An RFC 7306 atomic operation on the 8 bytes at MR address @addr, which
 * the caller checked; *@orig is set to the value before.
 *
 * A compare-and-exchange loop on the page itself: atomic with respect to
 * every other viw QP and device and to the CPUs' own atomics on the same
 * memory (IB_ATOMIC_GLOB), where atomic64_t is the CPU's instruction.
 *
 * Return: 0, or -EINVAL if the target is not aligned in memory.
 */
static int viw_mr_atomic_now(const struct viw_mr *mr, u64 addr,
			     const struct viw_atomic_req *ar, u64 *orig)
{
	atomic64_t *p = viw_mr_map_u64(mr, addr);
	s64 old;

	if (!p)
		return -EINVAL;
	old = atomic64_read(p);
	while (!atomic64_try_cmpxchg(p, &old,
				     (s64)viw_atomic_apply(ar, (u64)old)))
		;
	kunmap_local(p);
	*orig = (u64)old;
	return 0;
}

/**
 * viw_mr_atomic - perform an RFC 7306 atomic operation on MR memory
 * @mr: a referenced MR whose range covered the 8 bytes at @addr when the
 *	request's STag was looked up
 * @addr: the target, 8-byte aligned
 * @ar: the operation, with its STag
 * @orig: set to the value before the operation
 *
 * Return: 0, or -EINVAL if the target is not aligned in memory or a
 * fast-register MR's STag was invalidated since.
 */
int viw_mr_atomic(struct viw_mr *mr, u64 addr,
		  const struct viw_atomic_req *ar, u64 *orig)
{
	int rv = -EINVAL;

	if (!mr->fast)
		return viw_mr_atomic_now(mr, addr, ar, orig);
	if (viw_fr_begin(mr, ar->stag, addr, VIW_ATOMIC_SIZE))
		rv = viw_mr_atomic_now(mr, addr, ar, orig);
	viw_fr_end(mr);
	return rv;
}

/* Store @val at MR address @addr, which the caller checked. */
static void viw_mr_store_now(const struct viw_mr *mr, u64 addr, u64 val)
{
	u8 bytes[VIW_ATOMIC_SIZE];
	u32 done = 0;

	memcpy(bytes, &val, sizeof(bytes));
	while (done < sizeof(bytes)) {
		struct page *page;
		u32 off, chunk;
		void *dst;

		chunk = min_t(u32, sizeof(bytes) - done,
			      viw_mr_locate(mr, addr + done, &page, &off));
		dst = kmap_local_page(page) + off;
		memcpy(dst, bytes + done, chunk);
		kunmap_local(dst);
		done += chunk;
	}
}

/**
 * viw_mr_copy_out - copy MR bytes that are about to be sent
 * @mr: a referenced fast-register MR, found by @stag for a range that
 *	holds this one
 * @stag: the STag or lkey that named it
 * @addr: first byte
 * @len: bytes
 * @dst: where to copy them
 *
 * The consumer may free a fast-register MR's pages once its invalidation
 * returns, while TCP would still read them: the transmit engine sends
 * this copy, taken under fr_lock, instead of the pages.
 * Return: 0, or -ESTALE if @stag no longer names @mr for the range.
 */
int viw_mr_copy_out(struct viw_mr *mr, u32 stag, u64 addr, u32 len,
		    void *dst)
{
	u32 done = 0;
	int rv = -ESTALE;

	if (viw_fr_begin(mr, stag, addr, len)) {
		while (done < len) {
			struct page *page;
			u32 off, chunk;
			void *src;

			chunk = min(len - done,
				    viw_mr_locate(mr, addr + done, &page, &off));
			src = kmap_local_page(page) + off;
			memcpy((u8 *)dst + done, src, chunk);
			kunmap_local(src);
			done += chunk;
		}
		rv = 0;
	}
	viw_fr_end(mr);
	return rv;
}

/*
 * Store @val at address @addr of @mr, which @stag found for those 8
 * bytes.  Return: 0, or -ESTALE if a fast-register MR's STag was
 * invalidated since.
 */
int viw_mr_store_u64(struct viw_mr *mr, u32 stag, u64 addr, u64 val)
{
	int rv = -ESTALE;

	if (!mr->fast) {
		viw_mr_store_now(mr, addr, val);
		return 0;
	}
	if (viw_fr_begin(mr, stag, addr, VIW_ATOMIC_SIZE)) {
		viw_mr_store_now(mr, addr, val);
		rv = 0;
	}
	viw_fr_end(mr);
	return rv;
}
