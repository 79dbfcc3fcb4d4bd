// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: device memory.  viw's device memory is kernel memory that the
 * process maps (kernel/viw_dm.c): ibv_memcpy_to_dm() and
 * ibv_memcpy_from_dm() are plain copies on that mapping, with the offset
 * and length rules of hardware device memory (VIW_DM_ACCESS_ALIGN).  The
 * data path reaches it only through an MR, which is zero-based.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "viw.h"

struct viw_dm {
	struct verbs_dm vdm;
	void *map;
	size_t map_size;
	uint64_t length;
};

static struct viw_dm *to_viw_dm(struct ibv_dm *ibdm)
{
	return viw_container_of(ibdm, struct viw_dm, vdm.dm);
}

static bool viw_dm_range_ok(const struct viw_dm *dm, uint64_t offset,
			    size_t length)
{
	return !((offset | length) % VIW_DM_ACCESS_ALIGN) &&
	       offset <= dm->length && length <= dm->length - offset;
}

static int viw_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			    const void *host_addr, size_t length)
{
	struct viw_dm *dm = to_viw_dm(ibdm);

	if (!viw_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy((uint8_t *)dm->map + dm_offset, host_addr, length);
	return 0;
}

static int viw_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
			      uint64_t dm_offset, size_t length)
{
	struct viw_dm *dm = to_viw_dm(ibdm);

	if (!viw_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy(host_addr, (uint8_t *)dm->map + dm_offset, length);
	return 0;
}

/* Map the memory at the mmap offset that the kernel answered. */
static int viw_dm_map(struct viw_dm *dm, struct ibv_context *ctx, uint64_t key)
{
	size_t page = sysconf(_SC_PAGESIZE);

	dm->map_size = (dm->length + page - 1) & ~(page - 1);
	dm->map = mmap(NULL, dm->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ctx->cmd_fd, key);
	return dm->map == MAP_FAILED ? errno : 0;
}

struct ibv_dm *viw_alloc_dm(struct ibv_context *ctx,
			    struct ibv_alloc_dm_attr *attr)
{
	struct ibv_command_buffer link[VERBS_CMD_BUFS(1)];
	uint64_t key = 0;
	struct viw_dm *dm;
	int rv;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	/* The driver's attribute: where to map the memory. */
	verbs_cmd_init(link, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, 1);
	verbs_cmd_add_out(link, VIW_ATTR_ALLOC_DM_MMAP_KEY, &key, sizeof(key));
	rv = ibv_cmd_alloc_dm(ctx, attr, &dm->vdm, link);
	if (rv)
		goto err_free;
	/* The kernel bounded the length (max_dm_size). */
	dm->length = attr->length;
	rv = viw_dm_map(dm, ctx, key);
	if (rv)
		goto err_dm;
	dm->vdm.dm.memcpy_to_dm = viw_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = viw_memcpy_from_dm;
	return &dm->vdm.dm;

err_dm:
	ibv_cmd_free_dm(&dm->vdm);
err_free:
	free(dm);
	errno = rv;
	return NULL;
}

/* A DM with MRs on it stays, mapped, and the kernel says EBUSY. */
int viw_free_dm(struct ibv_dm *ibdm)
{
	struct viw_dm *dm = to_viw_dm(ibdm);
	int rv;

	rv = ibv_cmd_free_dm(&dm->vdm);
	if (rv)
		return rv;
	munmap(dm->map, dm->map_size);
	free(dm);
	return 0;
}

/* ibv_dereg_mr() frees it through viw_dereg_mr(), as any other MR. */
struct ibv_mr *viw_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			     uint64_t dm_offset, size_t length,
			     unsigned int access)
{
	struct viw_dm *dm = to_viw_dm(ibdm);
	struct verbs_mr *vmr;
	int rv;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	rv = ibv_cmd_reg_dm_mr(pd, &dm->vdm, dm_offset, length, access, vmr,
			       NULL);
	if (rv) {
		free(vmr);
		errno = rv;
		return NULL;
	}
	return &vmr->ibv_mr;
}
