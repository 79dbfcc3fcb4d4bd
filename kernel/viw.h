/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: a software iWARP RNIC.  Core data structures shared by all parts of
 * the driver.
 */
#ifndef VIW_H
#define VIW_H

#include <linux/bvec.h>
#include <linux/completion.h>
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
#define VIW_MAX_FR_PAGES	256	/* reported only: see viw_query_device */
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

/* wq->status of an SQE the engine has taken and not finished */
#define VIW_WQE_PENDING		0xff

/* Object counts, kept per device for limits and for the tests. */
enum viw_obj_type {
	VIW_OBJ_UCTX,
	VIW_OBJ_PD,
	VIW_OBJ_MR,
	VIW_OBJ_CQ,
	VIW_OBJ_QP,
	VIW_OBJ_SRQ,
	VIW_OBJ_MW,
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
};

struct viw_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for a DMA MR */
	struct page **pages;		/* the pinned pages of umem */
	unsigned long num_pages;
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

struct viw_cq {
	struct ib_cq ibcq;
	struct viw_ring ring;
	spinlock_t lock;		/* serialises CQE producers */
	u32 prod;			/* next slot the kernel writes */
	bool overflowed;
};

struct viw_srq {
	struct ib_srq ibsrq;
	struct viw_ring ring;
	spinlock_t lock;
	u32 fetch;			/* next slot the kernel takes */
	u32 limit;			/* SRQ limit, 0 when not armed */
	u32 max_sge;
};

/*
 * A work queue of a QP: the ring shared with the process and a kernel
 * shadow of every WQE the kernel has taken from it.  The kernel reads a
 * WQE from the ring exactly once, into shadow, and validates the copy.
 * Slots [done, fetch) are owned by the kernel; ctrl->cons mirrors done.
 */
struct viw_wq {
	struct viw_ring ring;
	void *shadow;			/* num_slots kernel copies */
	u8 *status;			/* per slot: error found by validation */
	u32 fetch;			/* next slot to copy from the ring */
	u32 done;			/* next slot to complete */
	u32 next;			/* RQ: next slot for an incoming SEND */
	u32 max_sge;
	bool failed;			/* SQ: a WQE failed, flush the later */
	spinlock_t lock;
};

/*
 * An RDMA READ or atomic this QP sent and waits a response for.  For an
 * atomic, sink_stag/sink_to name the 8-byte local buffer for the
 * original value.
 */
struct viw_orq_entry {
	u32 sq_index;
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 got;			/* response bytes placed */
	bool internal;			/* the MPA RTR, not a WQE */
	bool atomic;
	u32 req_id;			/* atomic: the Request Identifier */
};

/*
 * An RDMA READ or atomic the peer asked for, to be answered by the TX
 * engine in arrival order.  An atomic is performed when its turn comes,
 * so that the READs before it read memory as it was before.
 */
struct viw_irq_entry {
	struct viw_read_req req;
	struct viw_mr *mr;		/* source or target, referenced */
	u32 sent;
	bool atomic;
	struct viw_atomic_req areq;
};

/*
 * bio_vecs of one FPDU: header, payload pieces, trailer.  A payload below
 * 64 KiB gathered from VIW_MAX_SGE SGEs spans at most 64 KiB / PAGE_SIZE
 * whole pages plus two partial pages per SGE.
 */
#define VIW_TX_MAX_PIECES	(SZ_64K / PAGE_SIZE + 2 * VIW_MAX_SGE)
#define VIW_TX_MAX_BVEC		(VIW_TX_MAX_PIECES + 2)

/* The WQE the transmit engine is sending. */
struct viw_tx_wqe {
	struct viw_sqe sqe;		/* copy of the shadow */
	u32 index;			/* SQ index */
	u32 len;			/* payload length */
	u32 sent;			/* payload bytes sent */
	struct viw_mr *mr[VIW_MAX_SGE];	/* referenced while sending */
	bool active;
};

enum viw_rx_stage {
	VIW_RX_HDR,
	VIW_RX_PAYLOAD,
	VIW_RX_TRAILER,
	VIW_RX_DEAD,			/* after an error: ignore the stream */
};

/* Receive engine state: where in the FPDU stream the QP is. */
struct viw_rx {
	enum viw_rx_stage stage;
	u8 hdr[VIW_MPA_LEN_SIZE + VIW_MAX_HDR_LEN];
	u32 hdr_got;
	u32 hdr_need;
	u8 trailer[3 + VIW_MPA_CRC_SIZE];
	u32 tr_got;
	u32 tr_need;
	u32 crc;			/* running CRC state */
	u32 ulpdu_len;
	u32 payload_len;
	u32 payload_got;
	struct viw_ddp_hdr ddp;

	/* placement target of the current segment */
	struct viw_mr *mr;		/* tagged: referenced */
	u64 addr;
	/* untagged SEND: the receive WQE being filled */
	struct viw_rqe rqe;
	struct viw_mr *rqe_mr[VIW_MAX_SGE];
	bool rqe_active;
	bool rqe_from_srq;
	u32 rqe_index;			/* RQ index when not from the SRQ */
	u32 msg_len;			/* bytes of the message so far */

	u32 msn_send;			/* next expected MSN per queue */
	u32 msn_rreq;			/* Read and Atomic Requests */
	u32 msn_aresp;			/* Atomic Responses */
	/* TERMINATE body after its control word: M length, D and R headers */
	u8 term_body[2 + VIW_DDP_UNTAGGED_HDR_LEN + VIW_RDMAP_READ_REQ_LEN];
	/* why the segment being processed failed, for viw_qp_fail() */
	struct viw_term_cause cause;
};

/* What MPA negotiated for a connection (viw_qp_connect). */
struct viw_qp_conn {
	bool crc;
	u32 mulpdu;
	u8 ord;
	u8 ird;
	u8 rtr_expect;			/* passive p2p: RTR type (VIW_RTR_*) */
	u8 rtr_send;			/* active p2p: RTR type to send first */
};

struct viw_cep;
struct viw_direct_qp;

/*
 * Attributes of the InfiniBand transport that mean nothing over TCP.
 * modify_qp accepts them and query_qp reports them back as they were set;
 * the address vector and the destination QP number also say whom a
 * modify_qp connection goes to (viw_direct.c).
 */
struct viw_qp_ib_attrs {
	struct ib_global_route grh;	/* without sgid_attr */
	u8 ah_flags;
	u8 sl;
	u8 static_rate;
	u8 port_num;
	u8 path_mtu;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;		/* as set: the engine uses qp->ord */
	u8 max_dest_rd_atomic;		/* as set: the engine uses qp->ird */
	u32 dest_qp_num;
	u32 rq_psn;
	u32 sq_psn;
};

/*
 * Lock order, outermost first: a lock may be taken while one above it on
 * its line is held, never the other way round.
 *
 *   cep->lock (viw_cm.h) -> qp->state_lock -> qp->tx_lock -> socket lock
 *	viw_iw_accept(), viw_cep_reply_received() -> viw_qp_connect() ->
 *	viw_tx_send_rtr();
 *	viw_cep_close() -> viw_qp_conn_lost(), viw_qp_disconnect();
 *	viw_direct_lost() -> viw_qp_quiet_close(); the TX sends under tx_lock
 *   cep->lock -> qp->tx_lock	viw_cep_local_close(): viw_qp_llp_close()
 *   cep->lock -> socket lock	viw_cep_kick_rx(), releasing the socket
 *   accepted cep->lock -> its listener's cep->lock	(viw_cm.c)
 *   cep->lock -> dd->lock	viw_direct_request() (viw_direct.c)
 *   qp->state_lock -> sq/rq.lock -> cq->lock	the flush on entering ERROR
 *   qp->tx_lock -> sq.lock -> cq->lock	the TX takes and completes SQEs
 *   qp->state_lock, qp->tx_lock -> rd_lock	viw_rd_reset(), viw_orq_push()
 *   viw_newlink_lock -> viw_devices_lock	(viw_main.c)
 *   poller->lock -> qp->state_lock, qp->tx_lock	the poller's doorbells
 *
 * The spinlocks (rd_lock, the wq, srq, cq and window locks, mac_lock,
 * viw_cep_list_lock) are leaves: only cq->lock is ever taken beneath one.  The receive engine runs in softirq under the
 * socket's sk_callback_lock and takes only spinlocks; it reaches ERROR
 * through viw_qp_fail(), which defers to a work item.  The QP never takes
 * cep->lock: it tells the CEP what happened with viw_cep_post_event().
 */
struct viw_qp {
	struct ib_qp ibqp;
	struct viw_device *vdev;
	struct viw_ucontext *uctx;	/* the creator's context */
	u64 uid;			/* never reused, unlike qp_num */
	struct viw_cq *scq;
	struct viw_cq *rcq;
	struct viw_srq *srq;
	struct viw_wq sq;
	struct viw_wq rq;		/* unused when srq is set */

	struct mutex state_lock;	/* serialises state transitions */
	enum ib_qp_state state;
	int access;			/* IB_ACCESS_REMOTE_* allowed */
	u32 max_inline;
	u8 ord;
	u8 ird;
	bool sq_sig_all;

	refcount_t ref;			/* iw_cm and the data path */
	atomic_t iw_handover;		/* refs iw_get_qp took for iw_add_ref */
	struct completion released;

	/* The connection, from RTS on (viw_qp_connect). */
	struct viw_cep *cep;		/* referenced */
	struct socket *sock;
	bool crc;			/* MPA CRC in use */
	u32 mulpdu;
	u8 rtr_expected;		/* passive p2p: RTR type still due */

	struct viw_qp_ib_attrs ib;
	/* Set at INIT->RTR with an address vector: modify_qp connects it. */
	struct viw_direct_qp *direct;
	bool direct_started;		/* viw_direct_start() was called */
	bool peer_closed;		/* its stream ended by a FIN, quietly */

	/* transmit engine */
	struct work_struct tx_work;
	struct mutex tx_lock;		/* serialises writes to the socket */
	bool tx_direct;			/* under tx_lock: caller's context */
	u8 *tx_buf;			/* a page: FPDU headers and trailers */
	struct bio_vec tx_bv[VIW_TX_MAX_BVEC];	/* the FPDU being sent */
	struct viw_tx_wqe tx;
	u32 tx_msn_send;
	u32 tx_msn_rreq;
	u32 tx_msn_term;
	u32 tx_msn_aresp;
	u32 tx_atomic_id;		/* Request Identifier of the next atomic */

	/* RDMA READs: outstanding (ORQ) and inbound (IRQ), under rd_lock */
	spinlock_t rd_lock;
	struct viw_orq_entry orq[VIW_MAX_ORD];
	u32 orq_head;
	u32 orq_tail;
	struct viw_irq_entry irq[VIW_MAX_IRD];
	u32 irq_head;
	u32 irq_tail;

	/* receive engine, run from the socket's data_ready */
	struct viw_rx rx;
	struct work_struct err_work;	/* error found in softirq context */
	struct viw_term term;		/* TERMINATE to send, if pending */
	bool term_pending;
	bool term_sent;
	/* the TERMINATE went out or cannot any more; ERROR was reached */
	struct completion term_done;
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

static inline struct viw_mr *to_viw_mr(struct ib_mr *mr)
{
	return container_of(mr, struct viw_mr, ibmr);
}

static inline struct viw_cq *to_viw_cq(struct ib_cq *cq)
{
	return container_of(cq, struct viw_cq, ibcq);
}

static inline struct viw_srq *to_viw_srq(struct ib_srq *srq)
{
	return container_of(srq, struct viw_srq, ibsrq);
}

static inline struct viw_qp *to_viw_qp(struct ib_qp *qp)
{
	return container_of(qp, struct viw_qp, ibqp);
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
struct rdma_hw_stats *viw_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port);
int viw_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index);

/* viw_res.c: driver details for "rdma resource show ... -dd" */
int viw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int viw_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int viw_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* viw_device.c */
bool viw_obj_get(struct viw_device *vdev, enum viw_obj_type type);
void viw_obj_put(struct viw_device *vdev, enum viw_obj_type type);
int viw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int viw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int viw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
int viw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable);
void viw_get_dev_fw_str(struct ib_device *ibdev, char *str);
extern const struct attribute_group viw_attr_group;

/* viw_gid.c */
int viw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid);
int viw_gid_init(void);
void viw_gid_exit(void);

/* viw_direct.c: connections made by modify_qp */
int viw_direct_add_device(struct viw_device *vdev);
void viw_direct_remove_device(struct viw_device *vdev);
int viw_direct_modify(struct viw_qp *qp, struct ib_qp_attr *attr, int mask);
void viw_direct_qp_error(struct viw_qp *qp);
void viw_direct_qp_destroy(struct viw_qp *qp);
void viw_direct_failed(struct viw_qp *qp, int status);
void viw_direct_lost(struct viw_qp *qp, bool graceful);
void viw_direct_send_after_close(struct viw_qp *qp);

/* viw_poll.c: the doorbell poller */
int viw_poll_start(struct viw_device *vdev);
void viw_poll_stop(struct viw_device *vdev);
void viw_poll_add_uctx(struct viw_device *vdev, struct viw_ucontext *uctx);
void viw_poll_del_uctx(struct viw_device *vdev, struct viw_ucontext *uctx);
void viw_poll_doorbell(struct viw_device *vdev);
u32 *viw_poll_idle_knob(void);

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
	return ring->mem + VIW_RING_SLOTS_OFFSET +
	       (size_t)(index & (ring->num_slots - 1)) * ring->slot_size;
}

/* viw_verbs.c */
extern const struct ib_device_ops viw_verbs_ops;
int viw_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void viw_mmap_free(struct rdma_user_mmap_entry *entry);

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

int viw_stag_alloc(struct viw_device *vdev, void *entry, u32 *index);
bool viw_stag_is_mr(struct viw_device *vdev, u32 stag);
bool viw_mr_covers(const struct viw_mr *mr, u64 addr, u64 len);
bool viw_mr_hold_for_mw(struct viw_device *vdev, struct viw_mr *mr);
int viw_mem_init(void);
void viw_mem_exit(void);
void viw_mem_flush(void);
struct ib_mr *viw_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
struct ib_mr *viw_get_dma_mr(struct ib_pd *pd, int access);
int viw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *viw_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *pd, struct ib_udata *udata);
int viw_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int viw_dealloc_mw(struct ib_mw *ibmw);
u8 viw_mw_bind(struct viw_qp *qp, const struct viw_sqe *sqe);
u8 viw_mw_local_inv(struct viw_qp *qp, u32 stag);
int viw_mw_remote_inv(struct viw_qp *qp, u32 stag,
		      struct viw_term_cause *cause);
struct viw_mr *viw_mr_get_remote(struct viw_qp *qp, u32 stag, int access,
				 u64 addr, u32 len,
				 struct viw_term_cause *cause);
int viw_check_sge(struct viw_device *vdev, struct ib_pd *pd,
		  const struct viw_sge *sge, int access);
struct viw_mr *viw_mr_get(struct viw_device *vdev, struct ib_pd *pd, u32 stag,
			  int access, u64 addr, u32 len,
			  struct viw_term_cause *cause);
void viw_mr_put(struct viw_mr *mr);
int viw_mr_bvec(const struct viw_mr *mr, u64 addr, u32 *len,
		struct bio_vec *bv, int max);
int viw_mr_copy_from_skb(const struct viw_mr *mr, u64 addr,
			 const struct sk_buff *skb, int skb_off, u32 len,
			 u32 *crc);
int viw_mr_atomic(const struct viw_mr *mr, u64 addr,
		  const struct viw_atomic_req *ar, u64 *orig);
void viw_mr_store_u64(const struct viw_mr *mr, u64 addr, u64 val);

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

struct viw_cqe_info {
	u64 wr_id;
	u32 qp_id;
	u32 byte_len;
	u32 inv_stag;
	u32 vendor_err;
	u8 opcode;		/* enum viw_cqe_opcode */
	u8 status;		/* enum viw_cqe_status */
	u32 flags;		/* enum viw_cqe_flags, without VALID */
};

int viw_cq_push(struct viw_cq *cq, const struct viw_cqe_info *info);

/* viw_srq.c */
int viw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		   struct ib_udata *udata);
int viw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int viw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int viw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int viw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);
int viw_srq_take(struct viw_srq *srq, struct viw_rqe *rqe);

/* viw_qp.c */
int viw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int viw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
int viw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata);
int viw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int viw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr);
int viw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
void viw_qp_enter_error(struct viw_qp *qp);
void viw_qp_conn_lost(struct viw_qp *qp);
void viw_qp_get(struct viw_qp *qp);
void viw_qp_put(struct viw_qp *qp);
struct viw_qp *viw_qp_lookup(struct viw_device *vdev, u32 qpn);
void viw_iw_add_ref(struct ib_qp *ibqp);
void viw_iw_rem_ref(struct ib_qp *ibqp);
struct ib_qp *viw_iw_get_qp(struct ib_device *ibdev, int qpn);
int viw_qp_connect(struct viw_qp *qp, struct viw_cep *cep,
		   struct socket *sock, const struct viw_qp_conn *conn);
void viw_qp_disconnect(struct viw_qp *qp);
bool viw_qp_llp_close(struct viw_qp *qp);
void viw_qp_fail(struct viw_qp *qp, const struct viw_term_cause *cause);
void viw_qp_terminated(struct viw_qp *qp, const struct viw_term_cause *cause);
bool viw_qp_term_sent(struct viw_qp *qp);
bool viw_qp_direct_error(struct viw_qp *qp);
void viw_qp_rtr_received(struct viw_qp *qp);
void viw_qp_event(struct viw_qp *qp, enum ib_event_type type);
bool viw_qp_quiet_close(struct viw_qp *qp);
void viw_device_link_down(struct viw_device *vdev);
void viw_qp_poll_doorbells(struct viw_device *vdev);

/*
 * The QP's state as the engines see it, without state_lock: predicates on
 * one READ_ONCE of the state, inline so that the engines need not call up
 * into viw_qp.c for them.
 */

/* Connected, or in one of the states a connection leaves behind. */
static inline bool viw_qp_state_connected(enum ib_qp_state state)
{
	return state == IB_QPS_RTS || state == IB_QPS_SQD ||
	       state == IB_QPS_SQE;
}

/*
 * RX takes nothing while the consumer has the QP back (RESET, INIT, RTR),
 * except for a modify_qp connection, which may come up in RTR: an RTR QP
 * receives (viw_direct.c).
 */
static inline bool viw_qp_rx_open(struct viw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state == IB_QPS_RTR && READ_ONCE(qp->direct))
		return true;
	return viw_qp_state_connected(state) || state == IB_QPS_ERR;
}

/*
 * The transmit engine sends in RTS, and a modify_qp connection's QP also in
 * RTR.  iWARP has no RTR (RDMAC verbs go from IDLE to RTS), and the tools
 * that connect through modify_qp expect an RTR QP to answer READs, as an
 * InfiniBand responder does, and perftest's iWARP credit SENDs to leave a
 * receiver it never moves to RTS (viw_direct.c).
 */
static inline bool viw_qp_tx_open(struct viw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state == IB_QPS_RTR && READ_ONCE(qp->direct))
		return true;
	return state == IB_QPS_RTS;
}

/* viw_tx.c */
int viw_tx_init(void);
void viw_tx_exit(void);
void viw_tx_qp_init(struct viw_qp *qp);
void viw_tx_kick(struct viw_qp *qp);
bool viw_tx_direct(struct viw_qp *qp);
void viw_tx_abort(struct viw_qp *qp);
int viw_tx_send_rtr(struct viw_qp *qp, u8 rtr);

/* viw_rx.c */
void viw_rx_data_ready(struct sock *sk);
void viw_rx_reset(struct viw_qp *qp);

/* viw_read.c */
bool viw_orq_busy(struct viw_qp *qp);
bool viw_orq_full(struct viw_qp *qp);
bool viw_orq_push(struct viw_qp *qp, u32 sq_index,
		  const struct viw_read_req *rr);
bool viw_orq_push_internal(struct viw_qp *qp);
bool viw_orq_push_atomic(struct viw_qp *qp, u32 sq_index,
			 const struct viw_sge *sink, u32 req_id);
bool viw_orq_atomic_done(struct viw_qp *qp, u32 *sq_index);
struct viw_orq_entry *viw_orq_peek(struct viw_qp *qp);
bool viw_orq_progress(struct viw_qp *qp, u32 n, bool last,
		      struct viw_orq_entry *done);
bool viw_irq_push(struct viw_qp *qp, const struct viw_irq_entry *ent);
struct viw_irq_entry *viw_irq_peek(struct viw_qp *qp);
struct viw_mr *viw_irq_pop(struct viw_qp *qp);
void viw_rd_reset(struct viw_qp *qp);

/* viw_wq.c: work queue processing */
int viw_wq_init(struct viw_wq *wq, u32 num_slots, u32 slot_size, u32 max_sge);
void viw_wq_free(struct viw_wq *wq);
void viw_sq_flush(struct viw_qp *qp);
void viw_rq_flush(struct viw_qp *qp);
void viw_sq_discard(struct viw_qp *qp);
void viw_rq_discard(struct viw_qp *qp);
void viw_wq_set_kflags(struct viw_wq *wq, u32 kflags);
struct viw_sqe *viw_sq_take(struct viw_qp *qp);
void viw_sq_complete(struct viw_qp *qp, u32 index, u8 status);
void viw_sq_fail_oldest(struct viw_qp *qp, u8 status);
bool viw_sq_idle(struct viw_qp *qp);
int viw_rq_take(struct viw_qp *qp, struct viw_rqe *rqe, u32 *index);
int viw_rq_take_all(struct viw_qp *qp);
void viw_rq_complete(struct viw_qp *qp, u32 index,
		     const struct viw_cqe_info *info);

#endif /* VIW_H */
