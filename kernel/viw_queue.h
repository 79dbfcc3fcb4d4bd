/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: completion queues (viw_cq.c) and shared receive queues (viw_srq.c).
 */
#ifndef VIW_QUEUE_H
#define VIW_QUEUE_H

#include "viw.h"

struct viw_cq {
	struct ib_cq ibcq;
	struct viw_ring ring;
	spinlock_t lock;		/* serialises CQE producers */
	u32 prod;			/* next slot the kernel writes */
	bool overflowed;
	/*
	 * A kernel consumer's CQ (viw_kverbs.c) polls its ring under lock:
	 * cons is its next slot, wc_qp the QP of the CQE in each slot.
	 * wc_qp is NULL for a CQ in a process's memory.
	 */
	u32 cons;
	struct ib_qp **wc_qp;
	/*
	 * A kernel consumer's comp_handler and event_handler run from
	 * notify_task, with none of viw's locks held: the completions come
	 * under queue locks, and a handler may post into the QP at once.
	 * notify_due holds the VIW_CQ_DUE_* bits it is to deliver.
	 */
	struct tasklet_struct notify_task;
	unsigned long notify_due;
};

enum {
	VIW_CQ_DUE_COMP,
	VIW_CQ_DUE_ERR,
};

struct viw_srq {
	struct ib_srq ibsrq;
	struct viw_ring ring;
	spinlock_t lock;
	u32 fetch;			/* next slot the kernel takes */
	u32 limit;			/* SRQ limit, 0 when not armed */
	u32 max_sge;
	/* a kernel consumer's SRQ: its producer side (viw_kverbs.c) */
	spinlock_t post_lock;
	u32 prod;
};

static inline struct viw_cq *to_viw_cq(struct ib_cq *cq)
{
	return container_of(cq, struct viw_cq, ibcq);
}

static inline struct viw_srq *to_viw_srq(struct ib_srq *srq)
{
	return container_of(srq, struct viw_srq, ibsrq);
}

/* viw_cq.c */
struct viw_cqe_info {
	u64 wr_id;
	struct ib_qp *ibqp;	/* for a kernel CQ's ib_wc.qp */
	u32 qp_id;
	u32 byte_len;
	u32 inv_stag;
	u32 vendor_err;
	u8 opcode;		/* enum viw_cqe_opcode */
	u8 status;		/* enum viw_cqe_status */
	u32 flags;		/* enum viw_cqe_flags, without VALID */
};

int viw_cq_push(struct viw_cq *cq, const struct viw_cqe_info *info);
void viw_cq_sync(struct viw_cq *cq);

/* viw_srq.c */
int viw_srq_take(struct viw_srq *srq, struct viw_rqe *rqe);

#endif /* VIW_QUEUE_H */
