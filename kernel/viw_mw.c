// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: memory windows (RFC 5040 §2.1 and §6: an STag that names a range
 * of a memory region with rights of its own).
 *
 * A window's STag comes from the same table as the MRs' (viw_mem.c),
 * tagged so that a lookup tells the two apart.  Windows serve remote
 * access only: as an lkey they are invalid.  Both types are bound by a
 * VIW_OP_BIND_MW WQE that the transmit engine executes in send queue
 * order (type 1 through ibv_bind_mw, which the provider turns into such
 * a WQE).  Type 1 windows belong to the PD and are unbound by a bind of
 * length 0; type 2 windows belong to the QP that bound them, and only
 * Local Invalidate on that PD or a SEND with Invalidate on that QP's
 * stream free them (IBA 10.6.7, RFC 5040 §6.4).
 *
 * A bound window holds a reference on its MR and counts in the MR's
 * num_mw: an MR with bound windows can be neither deregistered nor
 * reregistered (viw_mem.c), so the range checked at bind time stays
 * inside the MR.  The ib_mw is freed by the core as soon as dealloc_mw
 * returns, while the receive engine may still look at the window under
 * RCU: the window state is therefore a separate object, freed after a
 * grace period.
 */
#include <linux/slab.h>

#include "viw_qp.h"
#include "viw_verbs.h"

/* The window state that lookups see: in mr_xa, tagged VIW_STAG_MW. */
struct viw_window {
	spinlock_t lock;		/* protects all below; lookups in softirq */
	struct ib_pd *pd;
	enum ib_mw_type type;
	u32 stag;			/* index and current key */
	bool dead;			/* dealloc_mw ran */
	struct viw_mr *mr;		/* referenced while bound, else NULL */
	u64 addr;
	u64 length;
	int access;			/* IB_ACCESS_REMOTE_* */
	u64 qp_uid;			/* type 2: the QP it is bound to */
	struct rcu_head rcu;
};

static struct viw_mw *to_viw_mw(struct ib_mw *mw)
{
	return container_of(mw, struct viw_mw, ibmw);
}

#define VIW_MW_ACCESS_MASK \
	(VIW_MW_REMOTE_READ | VIW_MW_REMOTE_WRITE | VIW_MW_REMOTE_ATOMIC)

static int viw_mw_ib_access(u32 access)
{
	int ib = 0;

	if (access & VIW_MW_REMOTE_READ)
		ib |= IB_ACCESS_REMOTE_READ;
	if (access & VIW_MW_REMOTE_WRITE)
		ib |= IB_ACCESS_REMOTE_WRITE;
	if (access & VIW_MW_REMOTE_ATOMIC)
		ib |= IB_ACCESS_REMOTE_ATOMIC;
	return ib;
}

/* The window that an STag's entry (viw_stag_entry()) is, or NULL. */
static struct viw_window *viw_window_of(void *entry)
{
	if (xa_pointer_tag(entry) != VIW_STAG_MW)
		return NULL;
	return xa_untag_pointer(entry);
}

/* The window of @stag's index, under RCU; NULL if it names none. */
static struct viw_window *viw_window_load(struct viw_device *vdev, u32 stag)
{
	return viw_window_of(viw_stag_entry(vdev, stag));
}

int viw_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibmw->device);
	struct viw_mw *mw = to_viw_mw(ibmw);
	struct viw_window *win;
	u32 index;
	int rv;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	if (!viw_obj_get(vdev, VIW_OBJ_MW))
		return -ENOMEM;
	win = kzalloc(sizeof(*win), GFP_KERNEL_ACCOUNT);
	if (!win) {
		rv = -ENOMEM;
		goto err_put;
	}
	spin_lock_init(&win->lock);
	win->pd = ibmw->pd;
	win->type = ibmw->type;
	rv = viw_stag_alloc(vdev, xa_tag_pointer(win, VIW_STAG_MW), &index);
	if (rv)
		goto err_free;
	win->stag = (index << VIW_STAG_KEY_BITS) | get_random_u8();
	ibmw->rkey = win->stag;
	mw->win = win;
	return 0;

err_free:
	kfree(win);
err_put:
	viw_obj_put(vdev, VIW_OBJ_MW);
	return rv;
}

/* Take the MR away from a window; the caller releases it. */
static struct viw_mr *viw_window_unbind(struct viw_window *win)
{
	struct viw_mr *mr = win->mr;

	win->mr = NULL;
	win->length = 0;
	win->access = 0;
	return mr;
}

static void viw_window_release_mr(struct viw_mr *mr)
{
	if (!mr)
		return;
	atomic_dec(&mr->num_mw);
	viw_mr_put(mr);
}

/* Deallocating a window invalidates it, bound or not (IBA 10.6.7.2.3). */
int viw_dealloc_mw(struct ib_mw *ibmw)
{
	struct viw_device *vdev = to_viw_dev(ibmw->device);
	struct viw_window *win = to_viw_mw(ibmw)->win;
	unsigned long flags;
	struct viw_mr *mr;

	xa_erase(&vdev->mr_xa, viw_stag_index(win->stag));
	spin_lock_irqsave(&win->lock, flags);
	win->dead = true;
	mr = viw_window_unbind(win);
	spin_unlock_irqrestore(&win->lock, flags);
	viw_window_release_mr(mr);
	kfree_rcu(win, rcu);
	viw_obj_put(vdev, VIW_OBJ_MW);
	return 0;
}

/*
 * The MR a bind names: an MR of the QP's PD (not a window), registered
 * with MW_BIND, with local write if the window grants remote write or
 * atomics (IBA 10.6.7.2.2), and covering the range.  Returns it
 * referenced and counted in num_mw, or NULL.
 */
static struct viw_mr *viw_bind_get_mr(struct viw_qp *qp,
				      const struct viw_bind_mw *b, int access)
{
	struct viw_device *vdev = qp->vdev;
	int need = IB_ACCESS_MW_BIND;
	struct viw_term_cause cause;
	struct viw_mr *mr;

	if (access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC))
		need |= IB_ACCESS_LOCAL_WRITE;
	mr = viw_mr_get(vdev, qp->ibqp.pd, b->mr_lkey, need, b->addr, 0,
			&cause);
	if (!mr)
		return NULL;
	if (!mr->umem || !viw_mr_covers(mr, b->addr, b->length) ||
	    !viw_mr_hold_for_mw(vdev, mr)) {
		viw_mr_put(mr);
		return NULL;
	}
	return mr;
}

/* Install a bind under the window's lock.  Returns a CQE status. */
static u8 viw_window_set(struct viw_window *win, struct viw_qp *qp,
			 u32 stag, const struct viw_bind_mw *b,
			 struct viw_mr **mr, int access)
{
	struct viw_mr *old;

	if (win->dead || win->pd != qp->ibqp.pd)
		return VIW_CQE_MW_BIND_ERR;
	/* A bound type 2 window must be invalidated before a new bind. */
	if (win->type == IB_MW_TYPE_2 && win->mr)
		return VIW_CQE_MW_BIND_ERR;
	old = viw_window_unbind(win);
	win->stag = stag;
	if (*mr) {
		win->mr = *mr;
		win->addr = b->addr;
		win->length = b->length;
		win->access = access;
		win->qp_uid = qp->uid;
	}
	/* The caller releases what the window held before. */
	*mr = old;
	return VIW_CQE_SUCCESS;
}

/**
 * viw_mw_bind - execute a VIW_OP_BIND_MW WQE
 * @qp: the QP it was posted to (transmit engine context)
 * @sqe: the kernel's copy of the WQE
 *
 * Return: VIW_CQE_SUCCESS, or the status the WQE completes with.
 */
u8 viw_mw_bind(struct viw_qp *qp, const struct viw_sqe *sqe)
{
	struct viw_bind_mw bind;
	struct viw_bind_mw *b = &bind;
	struct viw_mr *mr = NULL;
	struct viw_window *win;
	unsigned long flags;
	int access;
	u8 status;

	BUILD_BUG_ON(sizeof(bind) > sizeof(sqe->sge));
	memcpy(&bind, sqe->sge, sizeof(bind));
	if (b->access & ~VIW_MW_ACCESS_MASK)
		return VIW_CQE_MW_BIND_ERR;
	access = viw_mw_ib_access(b->access);
	if (b->length) {
		mr = viw_bind_get_mr(qp, b, access);
		if (!mr)
			return VIW_CQE_MW_BIND_ERR;
	}
	status = VIW_CQE_MW_BIND_ERR;
	rcu_read_lock();
	win = viw_window_load(qp->vdev, sqe->rkey);
	if (win) {
		spin_lock_irqsave(&win->lock, flags);
		status = viw_window_set(win, qp, sqe->rkey, b, &mr, access);
		spin_unlock_irqrestore(&win->lock, flags);
	}
	rcu_read_unlock();
	/* On success, what the window held before; else the MR not used. */
	viw_window_release_mr(mr);
	return status;
}

/*
 * Local Invalidate: type 2 windows (IBA 10.6.7.2.5) and fast-register
 * MRs (viw_mem.c) of the QP's PD only.
 */
u8 viw_mw_local_inv(struct viw_qp *qp, u32 stag)
{
	struct viw_mr *mr = NULL;
	struct viw_window *win;
	unsigned long flags;
	u8 status = VIW_CQE_LOC_QP_OP_ERR;

	rcu_read_lock();
	win = viw_window_load(qp->vdev, stag);
	if (!win) {
		rcu_read_unlock();
		return viw_mr_local_inv(qp, stag);
	}
	spin_lock_irqsave(&win->lock, flags);
	if (!win->dead && win->stag == stag && win->type == IB_MW_TYPE_2 &&
	    win->pd == qp->ibqp.pd && win->mr) {
		mr = viw_window_unbind(win);
		status = VIW_CQE_SUCCESS;
	}
	spin_unlock_irqrestore(&win->lock, flags);
	rcu_read_unlock();
	viw_window_release_mr(mr);
	return status;
}

static void viw_inv_cause(struct viw_term_cause *cause, u8 etype, u8 ecode)
{
	cause->layer = VIW_TERM_RDMAP;
	cause->etype = etype;
	cause->ecode = ecode;
}

/* Check a remote invalidation under the window's lock; 0 if allowed. */
static int viw_window_check_inv(struct viw_window *win, struct viw_qp *qp,
				u32 stag, struct viw_term_cause *cause)
{
	if (win->dead || win->stag != stag || !win->mr) {
		viw_inv_cause(cause, VIW_RDMAP_ET_REMOTE_PROT,
			      VIW_RDMAP_EC_INVALID_STAG);
		return -EINVAL;
	}
	if (win->type != IB_MW_TYPE_2) {
		viw_inv_cause(cause, VIW_RDMAP_ET_REMOTE_OP,
			      VIW_RDMAP_EC_CANNOT_INVALIDATE);
		return -EINVAL;
	}
	if (win->pd != qp->ibqp.pd || win->qp_uid != qp->uid) {
		viw_inv_cause(cause, VIW_RDMAP_ET_REMOTE_PROT,
			      VIW_RDMAP_EC_STAG_NOT_ASSOC);
		return -EINVAL;
	}
	return 0;
}

/**
 * viw_mw_remote_inv - the peer's SEND with Invalidate names @stag
 * @qp: the QP whose stream carried it
 * @stag: the STag to invalidate
 * @cause: set to the TERMINATE cause on failure
 *
 * Only a type 2 window bound through @qp, or a fast-register MR of its
 * PD (viw_mr_remote_inv()), can be invalidated: neither other MRs nor
 * type 1 windows may be invalidated remotely (RFC 5040 §6.10, IBA
 * 10.6.7.2.6).
 * Return: 0 or -EINVAL.
 */
int viw_mw_remote_inv(struct viw_qp *qp, u32 stag,
		      struct viw_term_cause *cause)
{
	struct viw_mr *mr = NULL;
	struct viw_window *win;
	unsigned long flags;
	int rv = -EINVAL;

	viw_inv_cause(cause, VIW_RDMAP_ET_REMOTE_OP,
		      VIW_RDMAP_EC_CANNOT_INVALIDATE);
	rcu_read_lock();
	win = viw_window_load(qp->vdev, stag);
	if (win) {
		spin_lock_irqsave(&win->lock, flags);
		rv = viw_window_check_inv(win, qp, stag, cause);
		if (!rv)
			mr = viw_window_unbind(win);
		spin_unlock_irqrestore(&win->lock, flags);
	} else {
		rv = viw_mr_remote_inv(qp, stag, cause);
	}
	rcu_read_unlock();
	viw_window_release_mr(mr);
	return rv;
}

/* Check a remote access through a window, under its lock. */
static struct viw_mr *viw_window_access(struct viw_window *win,
					struct viw_qp *qp, u32 stag,
					int access, u64 addr, u32 len,
					struct viw_term_cause *cause)
{
	u64 end = addr + len;

	if (win->dead || win->stag != stag || !win->mr) {
		cause->ecode = VIW_DDP_EC_T_INVALID_STAG;
	} else if (win->pd != qp->ibqp.pd ||
		   (win->type == IB_MW_TYPE_2 && win->qp_uid != qp->uid)) {
		cause->ecode = VIW_DDP_EC_T_STAG_NOT_ASSOC;
	} else if ((win->access & access) != access) {
		cause->layer = VIW_TERM_RDMAP;
		cause->etype = VIW_RDMAP_ET_REMOTE_PROT;
		cause->ecode = VIW_RDMAP_EC_ACCESS;
	} else if (end < addr || addr < win->addr ||
		   end - win->addr > win->length) {
		cause->ecode = VIW_DDP_EC_T_BASE_BOUNDS;
	} else {
		/* The window's own reference keeps it above zero. */
		refcount_inc(&win->mr->ref);
		return win->mr;
	}
	return NULL;
}

/**
 * viw_mr_get_remote - look up an STag that the peer named
 * @qp: the QP whose stream carried it
 * @stag: the STag
 * @access: the IB_ACCESS_REMOTE_* right needed
 * @addr: first byte
 * @len: number of bytes
 * @cause: set to the TERMINATE cause on failure
 *
 * Like viw_mr_get(), but @stag may also name a memory window, whose
 * range, rights and owner are checked instead of the MR's.
 * Return: the MR (beneath the window) with a reference, or NULL.
 */
struct viw_mr *viw_mr_get_remote(struct viw_qp *qp, u32 stag, int access,
				 u64 addr, u32 len,
				 struct viw_term_cause *cause)
{
	struct viw_window *win;
	struct viw_mr *mr;
	unsigned long flags;
	void *entry;

	/* One lookup of the index tells a window from an MR (viw_mem.h). */
	rcu_read_lock();
	entry = viw_stag_entry(qp->vdev, stag);
	win = viw_window_of(entry);
	if (win) {
		cause->layer = VIW_TERM_DDP;
		cause->etype = VIW_DDP_ET_TAGGED;
		spin_lock_irqsave(&win->lock, flags);
		mr = viw_window_access(win, qp, stag, access, addr, len, cause);
		spin_unlock_irqrestore(&win->lock, flags);
	} else {
		mr = viw_mr_get_entry(entry, qp->ibqp.pd, stag, access, addr,
				      len, cause);
	}
	rcu_read_unlock();
	return mr;
}
