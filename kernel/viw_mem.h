/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: memory regions, memory windows and STags (viw_mem.c, viw_mw.c).
 */
#ifndef VIW_MEM_H
#define VIW_MEM_H

#include "viw.h"

struct viw_qp;

struct viw_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for a DMA or a pages MR */
	/*
	 * The pinned pages of umem; or, for an MR over kernel pages
	 * (device memory), those pages, each with a reference of the MR's.
	 * NULL for a DMA MR.
	 */
	struct page **pages;
	unsigned long num_pages;
	/*
	 * A DMA MR (get_dma_mr, a kernel PD's local_dma_lkey): its
	 * addresses are kernel virtual addresses in the direct map, which
	 * is what a virtual-DMA device (ib_uses_virt_dma) gets from the
	 * core's ib_dma_map_*().
	 */
	bool dma;
	/*
	 * A fast-register MR (alloc_mr): pages[] holds max_pages entries,
	 * num_pages of them given by the last REG_MR, in the direct map and
	 * without references (the kernel consumer owns them).  map_mr_sg
	 * fills fr_map[] (fr_map_num entries), which REG_MR copies: a
	 * consumer may map the next page list while the MR is still valid
	 * (iSER posts LOCAL_INV and REG_MR together).  It is valid while
	 * fr_stag, the STag its last REG_MR gave it, is not 0; lookups
	 * match that STag, not ibmr.lkey, which the consumer changes before
	 * it posts the REG_MR (ib_update_fast_reg_key).
	 *
	 * fr_lock orders the data path's use of the pages against
	 * invalidation: every copy into or out of them runs under it and
	 * checks fr_stag and the range first (viw_fr_begin()), and
	 * LOCAL_INV, the peer's SEND with Invalidate, REG_MR and dereg_mr
	 * change fr_stag under it.  Once an invalidation returns, nothing
	 * touches the pages, which the consumer may then free.  It is held
	 * for one copy of bytes that are already there, never across a
	 * wait for the peer.
	 */
	bool fast;
	u32 max_pages;
	u32 fr_stag;
	struct page **fr_map;
	u32 fr_map_num;
	spinlock_t fr_lock;
	u32 page_offset;		/* of iova within pages[0] */
	u64 iova;
	u64 length;
	int access;
	/*
	 * The STag's reference and the data path's.  The last put frees
	 * the memory: dereg_mr does not wait for a peer that holds it.
	 */
	refcount_t ref;
	atomic_t num_mw;		/* windows bound to it */
	struct work_struct free_work;
	struct rcu_head rcu;
};

struct viw_window;

/* A memory window (viw_mw.c); its state lives in the window object. */
struct viw_mw {
	struct ib_mw ibmw;
	struct viw_window *win;
};

static inline struct viw_mr *to_viw_mr(struct ib_mr *mr)
{
	return container_of(mr, struct viw_mr, ibmr);
}

/*
 * viw_mem.c: an STag is a 24-bit index into mr_xa and an 8-bit key.  The
 * entry is a struct viw_mr, or a struct viw_window tagged VIW_STAG_MW.
 */
#define VIW_STAG_KEY_BITS	8
#define VIW_STAG_MW		1

static inline u32 viw_stag_index(u32 stag)
{
	return stag >> VIW_STAG_KEY_BITS;
}

/* The entry of @stag's index, under RCU: an MR, a window, or NULL. */
static inline void *viw_stag_entry(struct viw_device *vdev, u32 stag)
{
	return xa_load(&vdev->mr_xa, viw_stag_index(stag));
}

int viw_stag_alloc(struct viw_device *vdev, void *entry, u32 *index);
bool viw_mr_covers(const struct viw_mr *mr, u64 addr, u64 len);
bool viw_mr_hold_for_mw(struct viw_device *vdev, struct viw_mr *mr);
u8 viw_mw_bind(struct viw_qp *qp, const struct viw_sqe *sqe);
u8 viw_mr_fast_reg(struct viw_qp *qp, const struct viw_sqe *sqe);
u8 viw_mr_local_inv(struct viw_qp *qp, u32 stag);
int viw_mr_remote_inv(struct viw_qp *qp, u32 stag,
		      struct viw_term_cause *cause);
u8 viw_mw_local_inv(struct viw_qp *qp, u32 stag);
int viw_mw_remote_inv(struct viw_qp *qp, u32 stag,
		      struct viw_term_cause *cause);
struct ib_mr *viw_reg_pages_mr(struct ib_pd *pd, struct page **pages,
			       u64 offset, u64 length, int access);
struct viw_mr *viw_mr_get_remote(struct viw_qp *qp, u32 stag, int access,
				 u64 addr, u32 len,
				 struct viw_term_cause *cause);
struct viw_mr *viw_mr_get_entry(void *entry, struct ib_pd *pd, u32 stag,
				int access, u64 addr, u32 len,
				struct viw_term_cause *cause);
struct viw_mr *viw_mr_get(struct viw_device *vdev, struct ib_pd *pd, u32 stag,
			  int access, u64 addr, u32 len,
			  struct viw_term_cause *cause);
void viw_mr_release(struct viw_mr *mr);

/*
 * Drop a data path reference; may be called in any context.  Inline: each
 * message sent or placed drops one or two.
 */
static inline void viw_mr_put(struct viw_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		viw_mr_release(mr);
}
int viw_mr_copy_out(struct viw_mr *mr, u32 stag, u64 addr, u32 len,
		    void *dst);
int viw_mr_bvec(const struct viw_mr *mr, u64 addr, u32 *len,
		struct bio_vec *bv, int max);
int viw_mr_place_skb(struct viw_mr *mr, u32 stag, u64 addr,
		     const struct sk_buff *skb, int skb_off, u32 len, u32 *crc);
int viw_mr_atomic(struct viw_mr *mr, u64 addr,
		  const struct viw_atomic_req *ar, u64 *orig);
int viw_mr_store_u64(struct viw_mr *mr, u32 stag, u64 addr, u64 val);

#endif /* VIW_MEM_H */
