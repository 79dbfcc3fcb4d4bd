/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: the verbs, as the ops table (viw_verbs.c) names them.  Only the ops
 * table and the files that define them include this.
 */
#ifndef VIW_VERBS_H
#define VIW_VERBS_H

#include "viw.h"

/* viw_device.c */
int viw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int viw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int viw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
int viw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable);
void viw_get_dev_fw_str(struct ib_device *ibdev, char *str);

/* viw_stats.c */
struct rdma_hw_stats *viw_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port);
int viw_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index);

/* viw_res.c: driver details for "rdma resource show ... -dd" */
int viw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int viw_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int viw_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* viw_ring.c */
int viw_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void viw_mmap_free(struct rdma_user_mmap_entry *entry);

/* viw_mem.c, viw_mw.c */
struct ib_mr *viw_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
struct ib_mr *viw_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *viw_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			   u32 max_num_sg);
int viw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset);
int viw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *viw_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *pd, struct ib_udata *udata);
int viw_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int viw_dealloc_mw(struct ib_mw *ibmw);

/* viw_dm.c */
struct ib_dm *viw_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *ibuctx,
			   struct ib_dm_alloc_attr *attr,
			   struct uverbs_attr_bundle *attrs);
int viw_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *viw_reg_dm_mr(struct ib_pd *pd, struct ib_dm *ibdm,
			    struct ib_dm_mr_attr *attr,
			    struct uverbs_attr_bundle *attrs);

/* viw_cq.c */
#ifdef VIW_CREATE_CQ_TAKES_ATTRS
int viw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs);
#else
int viw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
#endif
int viw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int viw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int viw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* viw_srq.c */
int viw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		   struct ib_udata *udata);
int viw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int viw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int viw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int viw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);
/* viw_qp_verbs.c */
int viw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata);
int viw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int viw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr);
int viw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* viw_qp_verbs.c: the doorbells */
int viw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int viw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
void viw_iw_add_ref(struct ib_qp *ibqp);
void viw_iw_rem_ref(struct ib_qp *ibqp);
struct ib_qp *viw_iw_get_qp(struct ib_device *ibdev, int qpn);

#endif /* VIW_VERBS_H */
