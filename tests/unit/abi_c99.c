// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Compiled as strict ISO C99 (-std=c99 -pedantic-errors): proves that
 * <rdma/viw-abi.h> stands alone and reports the layout this mode sees, so
 * that abi_layout.c can compare it with its own.
 */
#include <stddef.h>

#include <rdma/viw-abi.h>

#include "abi_c99.h"

void viw_abi_c99_layout(struct viw_abi_layout *l)
{
	l->sqe = sizeof(struct viw_sqe);
	l->rqe = sizeof(struct viw_rqe);
	l->cqe = sizeof(struct viw_cqe);
	l->ctrl = sizeof(struct viw_ring_ctrl);
	l->db = sizeof(struct viw_db_page);
	l->ctx = sizeof(struct viw_uresp_alloc_ctx);
	l->cq = sizeof(struct viw_uresp_create_cq);
	l->qp = sizeof(struct viw_uresp_create_qp);
	l->srq = sizeof(struct viw_uresp_create_srq);
	l->sqe_sge = offsetof(struct viw_sqe, sge);
	l->rqe_sge = offsetof(struct viw_rqe, sge);
	l->cqe_qp_id = offsetof(struct viw_cqe, qp_id);
	l->ctrl_kflags = offsetof(struct viw_ring_ctrl, kflags);
	l->qp_rq_size = offsetof(struct viw_uresp_create_qp, rq_size);
}
