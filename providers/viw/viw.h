/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libviw: the rdma-core provider of viw, a software iWARP RNIC.
 */
#ifndef VIW_H
#define VIW_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/viw-abi.h>

#include "verbs_provider.h"
#include "viw_ring.h"

#define viw_container_of(ptr, type, member) \
	((type *)((uint8_t *)(ptr) - offsetof(type, member)))

struct viw_device {
	struct verbs_device vdev;
};

struct viw_context {
	struct verbs_context vctx;
	struct viw_db_page *db;		/* the doorbell page */
	size_t db_size;
	uint32_t max_sge;
	uint32_t max_inline;
};

/* A mapped ring and the lock that serialises this process's side of it. */
struct viw_queue {
	struct viw_ring ring;
	void *map;
	size_t map_size;
	pthread_spinlock_t lock;
};

/*
 * A protection domain, or a parent domain over one.  A parent domain has
 * no kernel object of its own: it carries its PD's handle, so every
 * command made on it acts on that PD.
 */
struct viw_pd {
	struct ibv_pd ibv_pd;
	struct viw_pd *protection_domain;	/* parent domain only */
	int parent_domains;	/* parent domains over this PD (atomic) */
};

/*
 * A CQ made by ibv_create_cq() or ibv_create_cq_ex(); both poll the same
 * ring.  The extended interface copies the CQE it reads into @cur and
 * gives the slot back at once, so its read_* accessors never touch the
 * ring.
 */
struct viw_cq {
	union {
		struct ibv_cq ibv_cq;
		struct ibv_cq_ex ibv_cq_ex;
	};
	struct viw_queue q;
	uint32_t id;
	struct ibv_wc cur;
};

/* A batch of the ibv_wr_*() interface, between wr_start and wr_complete. */
struct viw_wr_batch {
	struct ibv_send_wr wr;	/* the WR being built */
	uint32_t first;		/* SQ head at wr_start */
	uint64_t ops;		/* send_ops_flags of the QP */
	bool pending;		/* wr has its opcode but no data yet */
	int err;		/* first error of the batch, or 0 */
};

struct viw_srq {
	struct ibv_srq ibv_srq;
	struct viw_queue q;
	uint32_t id;
	uint32_t max_sge;
};

struct viw_qp {
	struct verbs_qp vqp;
	struct viw_queue sq;
	struct viw_queue rq;		/* unmapped when the QP uses an SRQ */
	uint32_t id;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	bool sq_sig_all;
	bool has_rq;
	struct viw_wr_batch batch;	/* QPs from ibv_create_qp_ex() */
};

static inline struct viw_context *to_viw_ctx(struct ibv_context *ctx)
{
	return viw_container_of(ctx, struct viw_context, vctx.context);
}

static inline struct viw_pd *to_viw_pd(struct ibv_pd *pd)
{
	return viw_container_of(pd, struct viw_pd, ibv_pd);
}

static inline struct viw_cq *to_viw_cq(struct ibv_cq *cq)
{
	return viw_container_of(cq, struct viw_cq, ibv_cq);
}

static inline struct viw_cq *cq_ex_to_viw_cq(struct ibv_cq_ex *cq)
{
	return viw_container_of(cq, struct viw_cq, ibv_cq_ex);
}

static inline struct viw_srq *to_viw_srq(struct ibv_srq *srq)
{
	return viw_container_of(srq, struct viw_srq, ibv_srq);
}

static inline struct viw_qp *to_viw_qp(struct ibv_qp *qp)
{
	return viw_container_of(qp, struct viw_qp, vqp.qp);
}

static inline struct viw_qp *qp_ex_to_viw_qp(struct ibv_qp_ex *qp)
{
	return viw_container_of(qp, struct viw_qp, vqp.qp_ex);
}

/* viw_verbs.c: the slow path, through uverbs commands */
int viw_query_device(struct ibv_context *ctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t attr_size);
int viw_query_port(struct ibv_context *ctx, uint8_t port,
		   struct ibv_port_attr *attr);
struct ibv_pd *viw_alloc_pd(struct ibv_context *ctx);
struct ibv_pd *viw_alloc_parent_domain(struct ibv_context *ctx,
				       struct ibv_parent_domain_init_attr *attr);
int viw_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *viw_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  uint64_t hca_va, int access);
int viw_dereg_mr(struct verbs_mr *vmr);
int viw_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		 void *addr, size_t length, int access);
struct ibv_mw *viw_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int viw_dealloc_mw(struct ibv_mw *mw);
struct ibv_cq *viw_create_cq(struct ibv_context *ctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *viw_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr);
int viw_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *viw_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *viw_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr);
int viw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int viw_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr);
int viw_destroy_qp(struct ibv_qp *qp);
struct ibv_srq *viw_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr);
int viw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		   int attr_mask);
int viw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int viw_destroy_srq(struct ibv_srq *srq);

/* viw_dm.c: device memory, mapped */
struct ibv_dm *viw_alloc_dm(struct ibv_context *ctx,
			    struct ibv_alloc_dm_attr *attr);
int viw_free_dm(struct ibv_dm *ibdm);
struct ibv_mr *viw_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			     uint64_t dm_offset, size_t length,
			     unsigned int access);

/* viw_post.c: the fast path, on the mapped rings */
int viw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int viw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
int viw_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind);
int viw_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int viw_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int viw_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* viw_post.c: the ring steps that viw_post_ex.c builds on */
int viw_sq_write(struct viw_qp *qp, const struct ibv_send_wr *wr);
bool viw_sq_publish(struct viw_context *ctx, struct viw_qp *qp,
		    uint32_t first);
int viw_sq_doorbell(struct ibv_qp *qp);

/* viw_db.c: the doorbell system call */
enum viw_db_kind { VIW_DB_SQ, VIW_DB_RQ, VIW_DB_SRQ };
int viw_db_ring(struct ibv_context *ctx, enum viw_db_kind kind,
		uint32_t handle);
bool viw_cq_pop(struct viw_cq *cq, struct ibv_wc *wc);
void viw_cq_clean(struct viw_cq *cq, uint32_t qpn);

/* viw_post_ex.c: ibv_wr_*() on an extended QP, ibv_cq_ex polling */
#define VIW_QP_EX_SEND_OPS \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_BIND_MW)
#define VIW_CQ_EX_WC_FLAGS IBV_WC_STANDARD_FLAGS
void viw_qp_ex_init(struct viw_qp *qp, uint64_t send_ops_flags);
void viw_cq_ex_init(struct viw_cq *cq);

#endif /* VIW_H */
