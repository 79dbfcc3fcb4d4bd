// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: device memory (ibv_alloc_dm, ibv_reg_dm_mr).
 *
 * A software RNIC has no memory on a card, so its "device memory" is
 * zeroed kernel pages that the device owns and the process maps: the
 * provider's ibv_memcpy_to_dm() and ibv_memcpy_from_dm() are plain copies
 * on that mapping.  An MR over it (viw_reg_pages_mr) is zero-based, as the
 * verbs require, and serves local SGEs and remote READ and WRITE like any
 * other MR.
 *
 * The core's UVERBS_METHOD_DM_ALLOC carries no driver data, so the mmap
 * offset goes back to the provider in a driver attribute of that method
 * (VIW_ATTR_ALLOC_DM_MMAP_KEY), added through the device's uapi
 * definitions (viw_dm_uapi_defs).
 *
 * Limits: an allocation is at most VIW_MAX_DM_SIZE bytes, a device holds
 * at most VIW_MAX_DM allocations and VIW_MAX_DM_TOTAL bytes in all, and
 * every page is charged to the memory cgroup of the allocating process.
 * The device's budget is charged in whole pages for the life of the DM
 * object.  The pages themselves are reference counted: the mmap entry,
 * each mapping and each DM MR (the data path may hold one briefly after
 * dereg_mr) keep what they use, so freeing the DM never pulls memory from
 * under a user of it.
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

/* Names the uapi objects below (uverbs_named_ioctl.h). */
#define UVERBS_MODULE_NAME viw
#include <rdma/uverbs_named_ioctl.h>

#include "viw_mem.h"
#include "viw_verbs.h"

struct viw_dm {
	struct ib_dm ibdm;
	struct rdma_user_mmap_entry *entry;	/* owns the pages */
	struct page **pages;			/* the entry's, for reg_dm_mr */
	size_t size;				/* whole pages, charged */
};

static inline struct viw_dm *to_viw_dm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct viw_dm, ibdm);
}

/* Take @size bytes of the device's budget, and one DM object. */
static int viw_dm_charge(struct viw_device *vdev, size_t size)
{
	if (!viw_obj_get(vdev, VIW_OBJ_DM))
		return -ENOMEM;
	if (atomic64_add_return(size, &vdev->dm_bytes) > VIW_MAX_DM_TOTAL) {
		atomic64_sub(size, &vdev->dm_bytes);
		viw_obj_put(vdev, VIW_OBJ_DM);
		return -ENOMEM;
	}
	return 0;
}

static void viw_dm_uncharge(struct viw_device *vdev, size_t size)
{
	WARN_ON_ONCE(atomic64_sub_return(size, &vdev->dm_bytes) < 0);
	viw_obj_put(vdev, VIW_OBJ_DM);
}

/* The memory and its mmap entry; answers the entry's key to the provider. */
static int viw_dm_expose(struct viw_dm *dm, struct ib_ucontext *ibuctx,
			 struct uverbs_attr_bundle *attrs)
{
	struct viw_qmem mem = {};
	u64 key;
	int rv;

	rv = viw_qmem_alloc(&mem, dm->size);
	if (rv)
		return rv;
	/* From here on the entry owns the pages and frees them last. */
	rv = viw_mmap_insert(ibuctx, &mem, dm->size, &dm->entry, &key);
	if (rv) {
		viw_qmem_free(&mem);
		return rv;
	}
	dm->pages = to_viw_mmap_entry(dm->entry)->qmem.pages;
	rv = uverbs_copy_to(attrs, VIW_ATTR_ALLOC_DM_MMAP_KEY, &key,
			    sizeof(key));
	if (rv)
		rdma_user_mmap_entry_remove(dm->entry);
	return rv;
}

struct ib_dm *viw_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *ibuctx,
			   struct ib_dm_alloc_attr *attr,
			   struct uverbs_attr_bundle *attrs)
{
	struct viw_device *vdev = to_viw_dev(ibdev);
	struct viw_dm *dm;
	int rv;

	/* The pages are page aligned: so is any address of the DM's. */
	if (!attr->length || attr->length > VIW_MAX_DM_SIZE ||
	    attr->alignment > PAGE_SHIFT || attr->flags)
		return ERR_PTR(-EINVAL);
	dm = kzalloc(sizeof(*dm), GFP_KERNEL_ACCOUNT);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	dm->size = PAGE_ALIGN(attr->length);
	rv = viw_dm_charge(vdev, dm->size);
	if (rv)
		goto err_free;
	rv = viw_dm_expose(dm, ibuctx, attrs);
	if (rv)
		goto err_uncharge;
	return &dm->ibdm;

err_uncharge:
	viw_dm_uncharge(vdev, dm->size);
err_free:
	kfree(dm);
	return ERR_PTR(rv);
}

/*
 * The core frees a DM only once no MR is registered on it.  A mapping
 * the process still has keeps its pages, as the MRs that the data path
 * still holds keep theirs.
 */
int viw_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct viw_dm *dm = to_viw_dm(ibdm);

	rdma_user_mmap_entry_remove(dm->entry);
	viw_dm_uncharge(to_viw_dev(ibdm->device), dm->size);
	kfree(dm);
	return 0;
}

/**
 * viw_reg_dm_mr - ibv_reg_dm_mr: an MR over part of a DM
 * @pd: the PD
 * @ibdm: the DM
 * @attr: offset and length in the DM, and the rights
 * @attrs: the command's attributes (none of the driver's)
 *
 * The core checked the range against the DM's length already; it is
 * checked again here because the pages are indexed by it.
 *
 * Return: the MR, zero-based, or an ERR_PTR.
 */
struct ib_mr *viw_reg_dm_mr(struct ib_pd *pd, struct ib_dm *ibdm,
			    struct ib_dm_mr_attr *attr,
			    struct uverbs_attr_bundle *attrs)
{
	struct viw_dm *dm = to_viw_dm(ibdm);

	if (!(attr->access_flags & IB_ZERO_BASED) ||
	    attr->offset > ibdm->length ||
	    attr->length > ibdm->length - attr->offset)
		return ERR_PTR(-EINVAL);
	return viw_reg_pages_mr(pd, dm->pages, attr->offset, attr->length,
				attr->access_flags);
}

ADD_UVERBS_ATTRIBUTES_SIMPLE(
	viw_dm_alloc_attrs, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	UVERBS_ATTR_PTR_OUT(VIW_ATTR_ALLOC_DM_MMAP_KEY,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

/* The driver's additions to the uverbs methods (ib_device.driver_def). */
const struct uapi_definition viw_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &viw_dm_alloc_attrs),
	{}
};
