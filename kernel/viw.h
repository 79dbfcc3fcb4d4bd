/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: a software iWARP RNIC.  The device, its limits and counters, user
 * contexts and queue memory: what every part of the driver needs.  The
 * other headers, by who needs them (docs/architecture.md):
 *   viw_verbs.h	the verbs' prototypes, for the ops table (viw_verbs.c)
 *   viw_mem.h		memory regions, windows and STags
 *   viw_queue.h	completion queues and shared receive queues
 *   viw_qp.h		QPs and their work queues, the QP layer's interface
 *   viw_engine.h	the transmit and receive engines' own state
 *   viw_cm.h		connection endpoints
 */
#ifndef VIW_H
#define VIW_H

#include <linux/bvec.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/sizes.h>
#include <linux/workqueue.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/viw-abi.h>

#include "viw_compat.h"
#include "viw_ring_proto.h"
#include "viw_wire.h"

/* Device limits, reported by query_device and enforced on create. */
#define VIW_MAX_QP		4096
#define VIW_MAX_QP_WR		8192
#define VIW_MAX_CQ		8192
#define VIW_MAX_CQE		65536
#define VIW_MAX_PD		8192
#define VIW_MAX_MR		65536
#define VIW_MAX_MW		65536
#define VIW_MAX_SRQ		1024
#define VIW_MAX_SRQ_WR		8192
#define VIW_MAX_ORD		32
#define VIW_MAX_IRD		32
#define VIW_MAX_SGE_RD		1	/* a Read Response fills one sink */
#define VIW_MAX_MR_SIZE		(1ULL << 40)
/*
 * Device memory (viw_dm.c): kernel pages mapped into the process.  One
 * allocation is at most VIW_MAX_DM_SIZE (max_dm_size); all of a device's
 * together at most VIW_MAX_DM_TOTAL, in at most VIW_MAX_DM allocations.
 */
#define VIW_MAX_DM_SIZE		SZ_1M
#define VIW_MAX_DM_TOTAL	(32 * SZ_1M)
#define VIW_MAX_DM		1024
#define VIW_MAX_FR_PAGES	256	/* pages of a fast-register MR */
#define VIW_VENDOR_ID		0x766977	/* "viw" */
#define VIW_GID_TBL_LEN		16		/* layout: viw_gid.c */
/*
 * Queue memory (rings and their kernel shadows) one user context may hold:
 * a process cannot take more than this of what the device limits allow for
 * all its users.  Every byte is also charged to the process's memory cgroup.
 */
#define VIW_MAX_UCTX_QMEM	(256ULL << 20)
/*
 * Queue memory allocations: charged to the memory cgroup, and failing
 * with -ENOMEM at the cgroup's limit instead of calling its OOM killer.
 */
#define VIW_QMEM_GFP		(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

/* Object counts, kept per device for limits and for the tests. */
enum viw_obj_type {
	VIW_OBJ_UCTX,
	VIW_OBJ_PD,
	VIW_OBJ_MR,
	VIW_OBJ_CQ,
	VIW_OBJ_QP,
	VIW_OBJ_SRQ,
	VIW_OBJ_MW,
	VIW_OBJ_DM,
	VIW_OBJ_MAX
};

/*
 * Device counters (viw_stats.c), kept per CPU: the data path adds to them
 * without sharing a cache line between CPUs.  "rdma statistic" shows them.
 */
enum viw_counter {
	VIW_CNT_TX_FPDUS,
	VIW_CNT_TX_BYTES,		/* payload */
	VIW_CNT_RX_FPDUS,
	VIW_CNT_RX_BYTES,		/* payload placed */
	VIW_CNT_DOORBELLS,
	VIW_CNT_TERM_SENT,
	VIW_CNT_TERM_RCVD,
	VIW_CNT_FLUSHED_WQES,
	VIW_CNT_CONN_ESTABLISHED,	/* QPs that reached RTS */
	VIW_CNT_CONN_CLOSED,		/* of those, the ones disconnected */
	VIW_CNT_CONN_FAILED,		/* attempts that never reached RTS */
	VIW_CNT_MPA_REJECT_SENT,
	VIW_CNT_MPA_REJECT_RCVD,
	VIW_CNT_CRC_ERRORS,
	VIW_CNT_TCP_RETRANS_CLOSED,	/* of sockets already released */
	VIW_CNT_POLL_BACKOFFS,		/* poller yielded a shared CPU */
	VIW_CNT_ACKS_SENT,		/* viw acknowledgements */
	VIW_CNT_ACKS_RCVD,
	VIW_CNT_TX_CHAINED_RUNS,	/* kicked engines run by the kicker */
	VIW_CNT_TX_HANDOFFS,		/* doorbells that left it to a worker */
	VIW_CNT_TX_SPILLS,		/* short writes of a doorbell's run */
	VIW_CNT_MAX
};

struct viw_counters {
	u64 val[VIW_CNT_MAX];
};

/* High-water marks (not sums), for developers: debugfs <device>/counters. */
enum viw_hwm {
	VIW_HWM_TX_PAYLOAD,		/* largest FPDU payload sent */
	VIW_HWM_TX_PIECES,		/* most payload pieces in an FPDU */
	VIW_HWM_MAX
};

struct viw_device {
	struct ib_device ibdev;
	struct net_device *netdev;	/* held by the core (ib_device_set_netdev) */
	spinlock_t mac_lock;
	u8 mac[ETH_ALEN];		/* the netdev's address: the GID */

	struct xarray qp_xa;		/* qp_num -> struct viw_qp */
	/* STag index -> MR or window (viw_mem.c) */
	struct xarray mr_xa;
	u32 next_qp_id;
	u32 next_mr_index;

	atomic_t obj_count[VIW_OBJ_MAX];
	atomic64_t dm_bytes;		/* device memory, VIW_MAX_DM_TOTAL */
	struct viw_counters __percpu *counters;
	atomic64_t hwm[VIW_HWM_MAX];

	struct dentry *debugfs;

	/* modify_qp connections: listener and waiting requests (viw_direct.c) */
	struct viw_direct_dev *direct;
	/* the doorbell poller (viw_poll.c) */
	struct viw_poller *poller;

	/* Module bookkeeping (viw_main.c). */
	struct list_head list;
	bool dead;			/* dealloc_driver has run */
};

/* Memory a process may map: pages, and the kernel's mapping of them. */
struct viw_qmem {
	void *vaddr;
	struct page **pages;
	unsigned int npages;
};

struct viw_ucontext;

/*
 * A queue in memory shared with the process: control block followed by
 * num_slots fixed-size slots (viw_ring.c).  Pages stay alive while a
 * process maps them even after the ring is freed.
 */
struct viw_ring {
	void *mem;
	struct viw_ring_ctrl *ctrl;
	u32 num_slots;			/* power of two */
	u32 slot_size;
	size_t size;			/* bytes, page aligned */
	struct viw_qmem qmem;		/* owned by mmap_entry once set */
	struct rdma_user_mmap_entry *mmap_entry;
	struct viw_ucontext *uctx;	/* charged with size + extra */
	size_t extra;			/* kernel memory that goes with it */
};

struct viw_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	struct viw_qmem qmem;		/* freed with the entry */
};

struct viw_ucontext {
	struct ib_ucontext ibuctx;
	struct viw_db_page *db;
	struct rdma_user_mmap_entry *db_entry;
	atomic64_t qmem_bytes;		/* queue memory, VIW_MAX_UCTX_QMEM */
	/* the poller's view of the doorbell page, under its lock */
	struct list_head poll_node;
	u32 poll_seq;			/* db->seq at its last look */
	bool poll_awake;		/* NEED_WAKEUP cleared */
	bool poll_dirty;		/* seq moved in this pass */
};

struct viw_pd {
	struct ib_pd ibpd;
	bool holds_module;	/* a kernel PD: a module reference */
};

static inline struct viw_device *to_viw_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct viw_device, ibdev);
}

static inline struct viw_ucontext *to_viw_uctx(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct viw_ucontext, ibuctx);
}

static inline struct viw_pd *to_viw_pd(struct ib_pd *pd)
{
	return container_of(pd, struct viw_pd, ibpd);
}

static inline struct viw_mmap_entry *
to_viw_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct viw_mmap_entry, rdma_entry);
}

static inline void viw_count(struct viw_device *vdev, enum viw_counter c,
			     u64 n)
{
	this_cpu_add(vdev->counters->val[c], n);
}

/* Raise a high-water mark to @v. */
static inline void viw_count_max(struct viw_device *vdev, enum viw_hwm h,
				 s64 v)
{
	s64 old = atomic64_read(&vdev->hwm[h]);

	while (old < v && !atomic64_try_cmpxchg(&vdev->hwm[h], &old, v))
		;
}

/* viw_debugfs.c */
void viw_debugfs_init(void);
void viw_debugfs_exit(void);
void viw_debugfs_add_device(struct viw_device *vdev);
void viw_debugfs_remove_device(struct viw_device *vdev);

/* viw_stats.c */
int viw_stats_init(struct viw_device *vdev);
void viw_stats_free(struct viw_device *vdev);

/* viw_device.c */
bool viw_obj_get(struct viw_device *vdev, enum viw_obj_type type);
void viw_obj_put(struct viw_device *vdev, enum viw_obj_type type);
extern const struct attribute_group viw_attr_group;

/* viw_gid.c */
int viw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid);
int viw_gid_init(void);
void viw_gid_exit(void);

/* viw_direct.c: connections made by modify_qp */
int viw_direct_add_device(struct viw_device *vdev);
void viw_direct_remove_device(struct viw_device *vdev);

/* viw_poll.c: the doorbell poller */
int viw_poll_start(struct viw_device *vdev);
void viw_poll_stop(struct viw_device *vdev);
void viw_poll_add_uctx(struct viw_device *vdev, struct viw_ucontext *uctx);
void viw_poll_del_uctx(struct viw_device *vdev, struct viw_ucontext *uctx);
void viw_poll_doorbell(struct viw_device *vdev);
u32 *viw_poll_idle_knob(void);
u32 *viw_poll_shared_knob(void);

/* viw_qp.c, viw_tx.c, viw_rx.c: for tests */
u32 *viw_qp_bind_delay_knob(void);
u32 *viw_tx_short_delay_knob(void);
bool *viw_tx_spill_fail_knob(void);
bool *viw_tx_cut_next_knob(void);
u32 *viw_rx_send_done_delay_knob(void);
u32 *viw_tx_run_hold_knob(void);

/* Wait as long as a test's debugfs knob says (0: not at all), at most 1 s. */
static inline void viw_test_delay(const u32 *knob_ms)
{
	u32 ms = READ_ONCE(*knob_ms);

	if (ms)
		msleep(min(ms, 1000U));
}

/* The same where sleeping is not allowed: it spins, at most 500 ms. */
static inline void viw_test_delay_atomic(const u32 *knob_ms)
{
	u32 ms = READ_ONCE(*knob_ms);

	if (ms)
		mdelay(min(ms, 500U));
}

/* viw_ring.c */
int viw_qmem_alloc(struct viw_qmem *qm, size_t size);
void viw_qmem_free(struct viw_qmem *qm);
int viw_ring_alloc(struct viw_ring *ring, u32 num_slots, u32 slot_size);
void viw_ring_free(struct viw_ring *ring);
int viw_ring_expose(struct viw_ring *ring, struct ib_udata *udata,
		    u64 *key);
int viw_mmap_insert(struct ib_ucontext *uctx, struct viw_qmem *qm,
		    size_t size, struct rdma_user_mmap_entry **entry, u64 *key);

static inline void *viw_ring_slot(struct viw_ring *ring, u32 index)
{
	return viw_rp_slot(ring->mem, ring->num_slots, ring->slot_size, index);
}

/* viw_verbs.c */
extern const struct ib_device_ops viw_verbs_ops;

/* viw_dm.c: the driver's attributes of uverbs methods (ibdev.driver_def) */
extern const struct uapi_definition viw_uapi_defs[];

/* viw_mem.c */
int viw_mem_init(void);
void viw_mem_exit(void);
void viw_mem_flush(void);

/* viw_tx.c */
int viw_tx_init(void);
void viw_tx_exit(void);

/* viw_qp.c */
void viw_device_link_down(struct viw_device *vdev);

#endif /* VIW_H */
