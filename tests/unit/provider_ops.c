// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_ops: what verbs_provider.h says about libibverbs that no
 * shipped provider archive can prove (unit.provider_abi_layout), proven
 * against the installed libibverbs at run time.
 *
 * - The offset of ops libviw sets that no archive sets (alloc_parent_domain,
 *   and the device memory ops alloc_dm, free_dm and reg_dm_mr).
 *   verbs_set_ops() copies such an op into a public field of struct
 *   verbs_context (<infiniband/verbs.h>), which ibv_alloc_parent_domain()
 *   calls.  A table with only that slot set must land in that field; a
 *   wrong offset in our header would leave it at libibverbs' stub.
 * - The VERBS_QP_EX bit: ibv_qp_to_qp_ex() must return the extended QP for
 *   a verbs_qp with it set, and NULL without it.
 *
 * The context is real (libibverbs allocates it) but has no device behind
 * it: its command fd is /dev/null and no command is ever sent.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/ib_user_ioctl_verbs.h>

#include "verbs_provider.h"
#include "viw_check.h"

struct probe_context {
	struct verbs_context vctx;
};

static void probe_uninit(struct verbs_device *vdev)
{
}

static const struct verbs_device_ops probe_dev_ops = {
	.name = "viw-test-ops",
	.uninit_device = probe_uninit,
};

static struct ibv_pd *marker_parent_domain(struct ibv_context *ctx,
					   struct ibv_parent_domain_init_attr *a)
{
	return NULL;
}

static struct ibv_dm *marker_alloc_dm(struct ibv_context *ctx,
				      struct ibv_alloc_dm_attr *attr)
{
	return NULL;
}

static int marker_free_dm(struct ibv_dm *dm)
{
	return 0;
}

static struct ibv_mr *marker_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
				       uint64_t offset, size_t length,
				       unsigned int access)
{
	return NULL;
}

/* The device memory ops, each set alone, in their public fields. */
static void check_dm_ops(struct probe_context *pc)
{
	struct verbs_context_ops ops;

	memset(&ops, 0, sizeof(ops));
	ops.alloc_dm = marker_alloc_dm;
	verbs_set_ops(&pc->vctx, &ops);
	tc_result(pc->vctx.alloc_dm == marker_alloc_dm,
		  "verbs_context_ops.alloc_dm at libibverbs' offset",
		  "set at another offset");

	memset(&ops, 0, sizeof(ops));
	ops.free_dm = marker_free_dm;
	verbs_set_ops(&pc->vctx, &ops);
	tc_result(pc->vctx.free_dm == marker_free_dm,
		  "verbs_context_ops.free_dm at libibverbs' offset",
		  "set at another offset");

	memset(&ops, 0, sizeof(ops));
	ops.reg_dm_mr = marker_reg_dm_mr;
	verbs_set_ops(&pc->vctx, &ops);
	tc_result(pc->vctx.reg_dm_mr == marker_reg_dm_mr,
		  "verbs_context_ops.reg_dm_mr at libibverbs' offset",
		  "set at another offset");
}

static struct ibv_qp *marker_create_qp_ex(struct ibv_context *ctx,
					  struct ibv_qp_init_attr_ex *attr)
{
	return NULL;
}

/* One op set alone must appear in the public field libibverbs calls. */
static void check_public_ops(struct verbs_device *vdev)
{
	struct verbs_context_ops ops;
	struct probe_context *pc;
	int fd = open("/dev/null", O_RDWR);

	pc = verbs_init_and_alloc_context(&vdev->device, fd,
					  struct probe_context, vctx,
					  RDMA_DRIVER_UNKNOWN);
	if (!pc) {
		tc_result(false, "libibverbs allocates a context",
			  "it did not");
		return;
	}
	tc_result(pc->vctx.alloc_parent_domain != marker_parent_domain &&
		  pc->vctx.create_qp_ex != marker_create_qp_ex,
		  "stubs before verbs_set_ops", "an op is set already");

	memset(&ops, 0, sizeof(ops));
	ops.alloc_parent_domain = marker_parent_domain;
	verbs_set_ops(&pc->vctx, &ops);
	tc_result(pc->vctx.alloc_parent_domain == marker_parent_domain,
		  "verbs_context_ops.alloc_parent_domain at libibverbs' offset",
		  "set at another offset");

	memset(&ops, 0, sizeof(ops));
	ops.create_qp_ex = marker_create_qp_ex;
	verbs_set_ops(&pc->vctx, &ops);
	tc_result(pc->vctx.create_qp_ex == marker_create_qp_ex,
		  "verbs_context_ops.create_qp_ex at libibverbs' offset",
		  "set at another offset");

	check_dm_ops(pc);
	verbs_uninit_context(&pc->vctx);
	free(pc);
}

static void check_qp_ex_bit(void)
{
	struct verbs_qp vqp;

	memset(&vqp, 0, sizeof(vqp));
	tc_result(ibv_qp_to_qp_ex(&vqp.qp) == NULL,
		  "ibv_qp_to_qp_ex: NULL for a plain QP", "not NULL");
	vqp.comp_mask = VERBS_QP_EX;
	tc_result(ibv_qp_to_qp_ex(&vqp.qp) == &vqp.qp_ex,
		  "ibv_qp_to_qp_ex: the QP with VERBS_QP_EX",
		  "another pointer");
}

int main(void)
{
	struct verbs_device *vdev = calloc(1, sizeof(*vdev));

	if (!vdev)
		return 1;
	vdev->ops = &probe_dev_ops;
	/* Ours: the context's hold and put never bring it to zero. */
	atomic_init(&vdev->refcount, 1);
	check_public_ops(vdev);
	check_qp_ex_bit();
	free(vdev);
	return tc_done("unit.provider_ops");
}
