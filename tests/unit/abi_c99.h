/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef VIW_TEST_ABI_C99_H
#define VIW_TEST_ABI_C99_H

#include <stddef.h>

/* Sizes and offsets of <rdma/viw-abi.h> as one compilation mode sees them. */
struct viw_abi_layout {
	size_t sqe, rqe, cqe, ctrl, db;
	size_t ctx, cq, qp, srq;
	size_t sqe_sge, rqe_sge, cqe_qp_id, ctrl_kflags, qp_rq_size;
};

void viw_abi_c99_layout(struct viw_abi_layout *l);

#endif
