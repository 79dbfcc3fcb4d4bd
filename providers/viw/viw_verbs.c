// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: the slow path.  Every verb here is a uverbs command; the
 * provider's part is to map the rings the kernel allocated for a CQ, QP
 * or SRQ, and to unmap them again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "viw.h"

struct viw_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct viw_uresp_create_cq drv;
};

struct viw_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct viw_uresp_create_qp drv;
};

struct viw_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct viw_uresp_create_srq drv;
};

/* libibverbs hands the kernel everything after the core response. */
_Static_assert(offsetof(struct viw_create_cq_resp, drv) ==
	       sizeof(struct ib_uverbs_create_cq_resp), "cq resp padding");
_Static_assert(offsetof(struct viw_create_qp_resp, drv) ==
	       sizeof(struct ib_uverbs_create_qp_resp), "qp resp padding");
_Static_assert(offsetof(struct viw_create_srq_resp, drv) ==
	       sizeof(struct ib_uverbs_create_srq_resp), "srq resp padding");

static struct verbs_context *viw_vctx(struct ibv_context *ctx)
{
	return &to_viw_ctx(ctx)->vctx;
}

static void viw_format_fw_ver(struct ibv_context *ctx, uint64_t raw,
			      char *buf, size_t size)
{
	struct verbs_device *vdev;

	vdev = viw_container_of(ctx->device, struct verbs_device, device);
	if (vdev->sysfs &&
	    ibv_read_ibdev_sysfs_file(buf, size, vdev->sysfs, "fw_ver") > 0)
		return;
	snprintf(buf, size, "%u.%u.%u", (unsigned int)(raw >> 32) & 0xffff,
		 (unsigned int)(raw >> 16) & 0xffff,
		 (unsigned int)raw & 0xffff);
}

int viw_query_device(struct ibv_context *ctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	int rv;

	rv = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				      &resp_size);
	if (rv)
		return rv;
	viw_format_fw_ver(ctx, resp.base.fw_ver, attr->orig_attr.fw_ver,
			  sizeof(attr->orig_attr.fw_ver));
	return 0;
}

int viw_query_port(struct ibv_context *ctx, uint8_t port,
		   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *viw_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct viw_pd *pd;
	int rv;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	rv = ibv_cmd_alloc_pd(ctx, &pd->ibv_pd, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (rv) {
		free(pd);
		errno = rv;
		return NULL;
	}
	return &pd->ibv_pd;
}

#define VIW_PARENT_DOMAIN_MASK \
	(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
	 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

/*
 * A parent domain is the PD it contains as far as the kernel knows: it
 * copies that PD's handle.  viw has no thread domains, and it allocates
 * no queue memory in the process (every ring is kernel memory, mapped),
 * so custom allocators are accepted but have nothing to allocate.
 */
struct ibv_pd *viw_alloc_parent_domain(struct ibv_context *ctx,
				       struct ibv_parent_domain_init_attr *attr)
{
	struct viw_pd *parent, *pd;

	if (!attr->pd || attr->pd->context != ctx ||
	    to_viw_pd(attr->pd)->protection_domain) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->td || (attr->comp_mask & ~VIW_PARENT_DOMAIN_MASK)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	pd = to_viw_pd(attr->pd);
	parent = calloc(1, sizeof(*parent));
	if (!parent)
		return NULL;
	parent->ibv_pd.context = ctx;
	parent->ibv_pd.handle = pd->ibv_pd.handle;
	parent->protection_domain = pd;
	__atomic_fetch_add(&pd->parent_domains, 1, __ATOMIC_RELAXED);
	return &parent->ibv_pd;
}

int viw_dealloc_pd(struct ibv_pd *ibpd)
{
	struct viw_pd *pd = to_viw_pd(ibpd);
	int rv;

	if (pd->protection_domain) {
		__atomic_fetch_sub(&pd->protection_domain->parent_domains, 1,
				   __ATOMIC_RELAXED);
		free(pd);
		return 0;
	}
	/* Its parent domains still use the handle. */
	if (__atomic_load_n(&pd->parent_domains, __ATOMIC_RELAXED))
		return EBUSY;
	rv = ibv_cmd_dealloc_pd(ibpd);
	if (rv)
		return rv;
	free(pd);
	return 0;
}

struct ibv_mr *viw_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  uint64_t hca_va, int access)
{
	struct ibv_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct verbs_mr *vmr;
	int rv;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	rv = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd,
			    sizeof(cmd), &resp, sizeof(resp));
	if (rv) {
		free(vmr);
		errno = rv;
		return NULL;
	}
	return &vmr->ibv_mr;
}

int viw_dereg_mr(struct verbs_mr *vmr)
{
	int rv;

	rv = ibv_cmd_dereg_mr(vmr);
	if (rv)
		return rv;
	free(vmr);
	return 0;
}

/*
 * The kernel makes a new MR, with new keys, when the translation
 * changes; ibv_cmd_rereg_mr takes the keys from its answer.
 */
int viw_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};
	int rv;

	rv = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
			      access, pd, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (rv)
		errno = rv;
	return rv;
}

struct ibv_mw *viw_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int rv;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	rv = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (rv) {
		free(mw);
		errno = rv;
		return NULL;
	}
	return mw;
}

int viw_dealloc_mw(struct ibv_mw *mw)
{
	int rv;

	rv = ibv_cmd_dealloc_mw(mw);
	if (rv)
		return rv;
	free(mw);
	return 0;
}

/*
 * Map a ring the kernel described by (key, size) with num_slots slots.
 * The kernel checks that the length matches its object exactly.
 */
static int viw_queue_map(struct ibv_context *ctx, struct viw_queue *q,
			 uint64_t key, uint64_t size, uint32_t num_slots,
			 uint32_t slot_size)
{
	void *map;

	if ((uint64_t)(size_t)size != size ||
	    viw_rp_ring_bytes(num_slots, slot_size) > size ||
	    !viw_rp_is_pow2(num_slots)) {
		verbs_err(viw_vctx(ctx), "bad ring: %u slots in %llu bytes\n",
			  num_slots, (unsigned long long)size);
		return EPROTO;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->cmd_fd, key);
	if (map == MAP_FAILED) {
		verbs_err(viw_vctx(ctx), "cannot map a ring: %m\n");
		return errno;
	}
	viw_ring_init(&q->ring, map, size, num_slots, slot_size);
	q->map = map;
	q->map_size = size;
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void viw_queue_unmap(struct viw_queue *q)
{
	if (!q->map)
		return;
	pthread_spin_destroy(&q->lock);
	munmap(q->map, q->map_size);
	q->map = NULL;
}

static struct viw_cq *viw_cq_create(struct ibv_context *ctx, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector)
{
	struct ibv_create_cq cmd = {};
	struct viw_create_cq_resp resp = {};
	struct viw_cq *cq;
	int rv;

	if (cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	rv = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->ibv_cq,
			       &cmd, sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (rv)
		goto err_free;
	rv = viw_queue_map(ctx, &cq->q, resp.drv.ring_key, resp.drv.ring_size,
			   resp.drv.num_cqe, sizeof(struct viw_cqe));
	if (rv)
		goto err_destroy;
	cq->id = resp.drv.cq_id;
	return cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->ibv_cq);
err_free:
	free(cq);
	errno = rv;
	return NULL;
}

struct ibv_cq *viw_create_cq(struct ibv_context *ctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct viw_cq *cq = viw_cq_create(ctx, cqe, channel, comp_vector);

	return cq ? &cq->ibv_cq : NULL;
}

/* What an extended CQ can do beyond a plain one; refused is EOPNOTSUPP. */
static int viw_check_cq_ex_attr(struct ibv_context *ctx,
				const struct ibv_cq_init_attr_ex *attr)
{
	/* No completion timestamps, VLANs, flow tags or tag matching. */
	if (attr->wc_flags & ~(uint64_t)VIW_CQ_EX_WC_FLAGS)
		return EOPNOTSUPP;
	if (attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
				IBV_CQ_INIT_ATTR_MASK_PD))
		return EOPNOTSUPP;
	/* The CQ is locked anyway; a single thread merely never contends. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ctx ||
	     !to_viw_pd(attr->parent_domain)->protection_domain))
		return EINVAL;
	return 0;
}

struct ibv_cq_ex *viw_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct viw_cq *cq;
	int rv;

	rv = viw_check_cq_ex_attr(ctx, attr);
	if (rv) {
		errno = rv;
		return NULL;
	}
	cq = viw_cq_create(ctx, attr->cqe, attr->channel, attr->comp_vector);
	if (!cq)
		return NULL;
	viw_cq_ex_init(cq);
	return &cq->ibv_cq_ex;
}

int viw_destroy_cq(struct ibv_cq *ibcq)
{
	struct viw_cq *cq = to_viw_cq(ibcq);
	int rv;

	rv = ibv_cmd_destroy_cq(ibcq);
	if (rv)
		return rv;
	viw_queue_unmap(&cq->q);
	free(cq);
	return 0;
}

static uint32_t viw_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static int viw_qp_map(struct ibv_context *ctx, struct viw_qp *qp,
		      const struct viw_uresp_create_qp *r, bool with_srq)
{
	int rv;

	if (with_srq != !r->num_rqe) {
		verbs_err(viw_vctx(ctx), "QP %u: %u RQ slots %s an SRQ\n",
			  r->qp_id, r->num_rqe, with_srq ? "with" : "without");
		return EPROTO;
	}
	rv = viw_queue_map(ctx, &qp->sq, r->sq_key, r->sq_size, r->num_sqe,
			   sizeof(struct viw_sqe));
	if (rv || with_srq)
		return rv;
	rv = viw_queue_map(ctx, &qp->rq, r->rq_key, r->rq_size, r->num_rqe,
			   sizeof(struct viw_rqe));
	if (rv)
		viw_queue_unmap(&qp->sq);
	qp->has_rq = !rv;
	return rv;
}

/* The limits the fast path enforces, from the caps the kernel granted. */
static void viw_qp_set_caps(struct viw_qp *qp, struct viw_context *ctx,
			    const struct ibv_qp_cap *cap, int sq_sig_all)
{
	qp->max_send_sge = viw_min(cap->max_send_sge, ctx->max_sge);
	qp->max_recv_sge = viw_min(cap->max_recv_sge, ctx->max_sge);
	qp->max_inline = viw_min(cap->max_inline_data, ctx->max_inline);
	qp->sq_sig_all = sq_sig_all;
}

/* Map the rings of a QP the kernel just made, or destroy it again. */
static int viw_qp_setup(struct ibv_context *ibctx, struct viw_qp *qp,
			const struct viw_uresp_create_qp *r, bool with_srq,
			const struct ibv_qp_cap *cap, int sq_sig_all)
{
	int rv;

	rv = viw_qp_map(ibctx, qp, r, with_srq);
	if (rv) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		return rv;
	}
	qp->id = r->qp_id;
	viw_qp_set_caps(qp, to_viw_ctx(ibctx), cap, sq_sig_all);
	return 0;
}

struct ibv_qp *viw_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_create_qp cmd = {};
	struct viw_create_qp_resp resp = {};
	struct viw_qp *qp;
	int rv;

	if (attr->qp_type != IBV_QPT_RC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	rv = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (!rv)
		rv = viw_qp_setup(pd->context, qp, &resp.drv,
				  attr->srq != NULL, &attr->cap,
				  attr->sq_sig_all);
	if (rv) {
		free(qp);
		errno = rv;
		return NULL;
	}
	return &qp->vqp.qp;
}

/*
 * What ibv_create_qp_ex() may ask beyond ibv_create_qp(): the ibv_wr_*()
 * functions for the opcodes viw's SQ carries, and no create flags.
 */
static int viw_check_qp_ex_attr(const struct ibv_qp_init_attr_ex *attr)
{
	if (attr->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~(uint64_t)VIW_QP_EX_SEND_OPS))
		return EOPNOTSUPP;
	return 0;
}

struct ibv_qp *viw_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_create_qp cmd = {};
	struct viw_create_qp_resp resp = {};
	struct ibv_qp_init_attr_ex cmd_attr;
	struct viw_qp *qp;
	int rv;

	rv = viw_check_qp_ex_attr(attr);
	if (rv) {
		errno = rv;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	/* libibverbs refuses the create-flags bit even when no flag is set. */
	cmd_attr = *attr;
	cmd_attr.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	rv = ibv_cmd_create_qp_ex(ctx, &qp->vqp, &cmd_attr, &cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (!rv) {
		attr->cap = cmd_attr.cap;
		rv = viw_qp_setup(ctx, qp, &resp.drv, attr->srq != NULL,
				  &attr->cap, attr->sq_sig_all);
	}
	if (rv) {
		free(qp);
		errno = rv;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		viw_qp_ex_init(qp, attr->send_ops_flags);
	return &qp->vqp.qp;
}

int viw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int rv;

	rv = ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
	if (rv || !(attr_mask & IBV_QP_STATE) || attr->qp_state != IBV_QPS_RESET)
		return rv;
	/* The kernel emptied the queues; the CQs drop what the QP left. */
	if (qp->recv_cq)
		viw_cq_clean(to_viw_cq(qp->recv_cq), qp->qp_num);
	if (qp->send_cq && qp->send_cq != qp->recv_cq)
		viw_cq_clean(to_viw_cq(qp->send_cq), qp->qp_num);
	return 0;
}

int viw_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int viw_destroy_qp(struct ibv_qp *ibqp)
{
	struct viw_qp *qp = to_viw_qp(ibqp);
	int rv;

	rv = ibv_cmd_destroy_qp(ibqp);
	if (rv)
		return rv;
	viw_queue_unmap(&qp->rq);
	viw_queue_unmap(&qp->sq);
	free(qp);
	return 0;
}

struct ibv_srq *viw_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct viw_context *ctx = to_viw_ctx(pd->context);
	struct ibv_create_srq cmd = {};
	struct viw_create_srq_resp resp = {};
	struct viw_srq *srq;
	int rv;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	rv = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (rv)
		goto err_free;
	rv = viw_queue_map(pd->context, &srq->q, resp.drv.ring_key,
			   resp.drv.ring_size, resp.drv.num_rqe,
			   sizeof(struct viw_rqe));
	if (rv)
		goto err_destroy;
	srq->id = resp.drv.srq_id;
	srq->max_sge = viw_min(attr->attr.max_sge, ctx->max_sge);
	return &srq->ibv_srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->ibv_srq);
err_free:
	free(srq);
	errno = rv;
	return NULL;
}

int viw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	/* The ring was sized at creation; growing it would need a remap. */
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

int viw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int viw_destroy_srq(struct ibv_srq *ibsrq)
{
	struct viw_srq *srq = to_viw_srq(ibsrq);
	int rv;

	rv = ibv_cmd_destroy_srq(ibsrq);
	if (rv)
		return rv;
	viw_queue_unmap(&srq->q);
	free(srq);
	return 0;
}
