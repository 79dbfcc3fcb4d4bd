// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: device matching, contexts and the ops table.
 *
 * viw devices are registered with RDMA_DRIVER_UNKNOWN and named by the
 * user (rdma link add NAME type viw ...), so neither the driver id nor the
 * name identifies them.  The kernel exposes the ibdev sysfs attribute
 * hca_type = "viw" instead, and match_device claims exactly those devices.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/ib_user_ioctl_verbs.h>

#include "viw.h"

static void viw_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops viw_context_ops = {
	.alloc_dm = viw_alloc_dm,
	.alloc_mw = viw_alloc_mw,
	.alloc_parent_domain = viw_alloc_parent_domain,
	.alloc_pd = viw_alloc_pd,
	.bind_mw = viw_bind_mw,
	.create_cq = viw_create_cq,
	.create_cq_ex = viw_create_cq_ex,
	.create_qp = viw_create_qp,
	.create_qp_ex = viw_create_qp_ex,
	.create_srq = viw_create_srq,
	.dealloc_mw = viw_dealloc_mw,
	.dealloc_pd = viw_dealloc_pd,
	.dereg_mr = viw_dereg_mr,
	.destroy_cq = viw_destroy_cq,
	.destroy_qp = viw_destroy_qp,
	.destroy_srq = viw_destroy_srq,
	.free_context = viw_free_context,
	.free_dm = viw_free_dm,
	.modify_qp = viw_modify_qp,
	.modify_srq = viw_modify_srq,
	.poll_cq = viw_poll_cq,
	.post_recv = viw_post_recv,
	.post_send = viw_post_send,
	.post_srq_recv = viw_post_srq_recv,
	.query_device_ex = viw_query_device,
	.query_port = viw_query_port,
	.query_qp = viw_query_qp,
	.query_srq = viw_query_srq,
	.reg_dm_mr = viw_reg_dm_mr,
	.reg_mr = viw_reg_mr,
	.req_notify_cq = viw_req_notify_cq,
	.rereg_mr = viw_rereg_mr,
};

struct viw_alloc_ctx_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct viw_uresp_alloc_ctx drv;
};
_Static_assert(offsetof(struct viw_alloc_ctx_resp, drv) ==
	       sizeof(struct ib_uverbs_get_context_resp), "resp padding");

/* Accept only a kernel that speaks exactly our host interface. */
static int viw_check_ctx_resp(struct viw_context *ctx,
			      const struct viw_uresp_alloc_ctx *r)
{
	if (r->abi_version != VIW_ABI_VERSION) {
		verbs_err(&ctx->vctx, "kernel ABI %u, provider ABI %u\n",
			  r->abi_version, VIW_ABI_VERSION);
		return EPROTO;
	}
	if (r->sqe_size != sizeof(struct viw_sqe) ||
	    r->rqe_size != sizeof(struct viw_rqe) ||
	    r->cqe_size != sizeof(struct viw_cqe)) {
		verbs_err(&ctx->vctx, "slot sizes %u/%u/%u unexpected\n",
			  r->sqe_size, r->rqe_size, r->cqe_size);
		return EPROTO;
	}
	if (r->db_size < sizeof(struct viw_db_page) ||
	    r->max_sge > VIW_MAX_SGE || r->max_inline > VIW_MAX_INLINE) {
		verbs_err(&ctx->vctx, "bad limits: db %u sge %u inline %u\n",
			  r->db_size, r->max_sge, r->max_inline);
		return EPROTO;
	}
	return 0;
}

static int viw_map_doorbell(struct viw_context *ctx,
			    const struct viw_uresp_alloc_ctx *r)
{
	void *db;

	db = mmap(NULL, r->db_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		  ctx->vctx.context.cmd_fd, r->db_key);
	if (db == MAP_FAILED) {
		verbs_err(&ctx->vctx, "cannot map the doorbell page: %m\n");
		return errno;
	}
	ctx->db = db;
	ctx->db_size = r->db_size;
	return 0;
}

static struct verbs_context *viw_alloc_context(struct ibv_device *ibdev,
					       int cmd_fd, void *private_data)
{
	struct ibv_get_context cmd = {};
	struct viw_alloc_ctx_resp resp = {};
	struct viw_context *ctx;
	int rv;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, struct viw_context,
					   vctx, RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	rv = ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (rv)
		goto err_free;
	rv = viw_check_ctx_resp(ctx, &resp.drv);
	if (rv)
		goto err_free;
	rv = viw_map_doorbell(ctx, &resp.drv);
	if (rv)
		goto err_free;

	ctx->max_sge = resp.drv.max_sge;
	ctx->max_inline = resp.drv.max_inline;
	verbs_set_ops(&ctx->vctx, &viw_context_ops);
	return &ctx->vctx;

err_free:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = rv;
	return NULL;
}

static void viw_free_context(struct ibv_context *ibctx)
{
	struct viw_context *ctx = to_viw_ctx(ibctx);

	munmap(ctx->db, ctx->db_size);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static bool viw_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	char hca_type[32];

	if (ibv_read_ibdev_sysfs_file(hca_type, sizeof(hca_type), sysfs_dev,
				      "hca_type") <= 0)
		return false;
	return strcmp(hca_type, VIW_HCA_TYPE) == 0;
}

static struct verbs_device *viw_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct viw_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void viw_uninit_device(struct verbs_device *vdev)
{
	free(viw_container_of(vdev, struct viw_device, vdev));
}

/* Only the end marker: viw devices have no driver id or name to match. */
static const struct verbs_match_ent viw_match_table[] = {
	{ .kind = VERBS_MATCH_SENTINEL },
};

static const struct verbs_device_ops viw_dev_ops = {
	.name = "viw",
	.match_table = viw_match_table,
	.match_min_abi_version = VIW_ABI_VERSION,
	.match_max_abi_version = VIW_ABI_VERSION,
	.match_device = viw_match_device,
	.alloc_context = viw_alloc_context,
	.alloc_device = viw_alloc_device,
	.uninit_device = viw_uninit_device,
};

VERBS_PROVIDER_REGISTER(viw, viw_dev_ops)
