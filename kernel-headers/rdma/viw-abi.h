/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause */
/*
 * viw host interface: the contract between the viw kernel driver and the
 * rdma-core provider (libviw).
 *
 * viw is shaped like a hardware RNIC.  Every queue (SQ, RQ, SRQ, CQ) is a
 * ring of fixed-size slots in memory that the kernel allocates and maps into
 * the process.  A ring starts with a control block (struct viw_ring_ctrl)
 * and its slots follow at VIW_RING_SLOTS_OFFSET.  Ownership of a slot moves
 * between the two sides with the VALID bit of the slot's flags word, always
 * written with release and read with acquire ordering.  Indices are
 * free-running 32-bit counters; a ring holds a power-of-two number of slots
 * and slot i lives at i & (slots - 1).
 *
 * Each user context also maps one doorbell page (struct viw_db_page).
 *
 * The kernel treats everything in these mappings as hostile input: it copies
 * a WQE once before validating it, and never trusts an index it did not
 * write itself.  docs/host-interface.md describes the protocol in full.
 */
#ifndef VIW_ABI_H
#define VIW_ABI_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* Reported as the uverbs ABI version and in the alloc_ucontext response. */
#define VIW_ABI_VERSION 3

/* Value of the ibdev sysfs attribute "hca_type" that identifies viw. */
#define VIW_HCA_TYPE "viw"

#define VIW_MAX_SGE 6
#define VIW_MAX_INLINE (VIW_MAX_SGE * 16)

/* Size of one ring's control block area; slots start right after it. */
#define VIW_RING_SLOTS_OFFSET 256

#define VIW_SQE_SIZE 128
#define VIW_RQE_SIZE 128
#define VIW_CQE_SIZE 32
#define VIW_DB_PAGE_SIZE 4096

/*
 * Ring control block.  prod and cons sit in cache lines of their own
 * because different sides write them.
 *
 * SQ, RQ, SRQ: the provider writes prod, the kernel writes cons (the first
 * slot the kernel has not finished with) and kflags.
 * CQ: the kernel writes prod and kflags, the provider writes cons and sets
 * bits in arm with an atomic OR; the kernel clears arm with compare-and-swap
 * when it signals a completion event.
 */
struct viw_ring_ctrl {
	__u32 prod;
	__u32 rsvd0[15];
	__u32 cons;
	__u32 rsvd1[15];
	__u32 arm;		/* CQ only: enum viw_cq_arm bits */
	__u32 kflags;		/* enum viw_ring_kflags, written by the kernel */
	/*
	 * SQ, RQ, SRQ, written by the kernel: nonzero while the kernel takes
	 * new WQEs of this queue without a doorbell.  An RQ's or SRQ's
	 * receive engine takes a WQE when a message needs one, so theirs
	 * stays set.  An SQ's is set while its transmit engine runs or is
	 * queued to run; before the engine stops for want of WQEs it clears
	 * the word, issues a full barrier and looks at the slot at its fetch
	 * index once more, so a WQE published before the provider read the
	 * word as nonzero is always taken.
	 */
	__u32 no_doorbell;
	__u32 rsvd2[13];
};

enum viw_ring_kflags {
	/*
	 * The QP is in ERROR: every WQE posted from now on is flushed, and
	 * only a doorbell makes the kernel do it, so the provider rings one
	 * after each post while this is set.
	 */
	VIW_RING_KF_ERROR = 1 << 0,
	/* CQ only: the kernel found no free slot and lost a completion. */
	VIW_RING_KF_OVERFLOW = 1 << 1,
};

enum viw_cq_arm {
	VIW_CQ_ARM_NEXT = 1 << 0,	/* notify on the next completion */
	VIW_CQ_ARM_SOLICITED = 1 << 1,	/* notify on a solicited completion */
};

struct viw_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* flags of struct viw_sqe and struct viw_rqe */
enum viw_wqe_flags {
	VIW_WQE_VALID = 1 << 0,
	VIW_WQE_SIGNALED = 1 << 1,
	VIW_WQE_SOLICITED = 1 << 2,
	VIW_WQE_FENCE = 1 << 3,
	VIW_WQE_INLINE = 1 << 4,	/* sge[] holds inline_len bytes of data */
	/*
	 * Kernel QPs only: the second SQE of one work request (a READ with
	 * invalidate), which completes without a CQE of its own, even in
	 * error: the first SQE's is the work request's.
	 */
	VIW_WQE_QUIET = 1 << 5,
};

enum viw_sq_opcode {
	VIW_OP_SEND = 0,
	VIW_OP_SEND_INV = 1,
	VIW_OP_WRITE = 2,
	VIW_OP_READ = 3,
	VIW_OP_ATOMIC_CMP_SWP = 4,
	VIW_OP_ATOMIC_FETCH_ADD = 5,
	VIW_OP_BIND_MW = 6,	/* bind: the window's new STag in rkey */
	VIW_OP_LOCAL_INV = 7,	/* invalidate the window named by inv_stag */
	VIW_OP_SEND_IMM = 8,	/* SEND with the immediate data in inv_stag */
	VIW_OP_WRITE_IMM = 9,	/* WRITE, then the immediate data in inv_stag */
	/*
	 * Kernel QPs only (fast registration): register the fast-register
	 * MR whose STag index is that of rkey, with rkey as its STag, over
	 * the pages the kernel mapped into it.  A struct viw_bind_mw in
	 * sge[] gives its address, length and IB access flags (mr_lkey 0).
	 */
	VIW_OP_REG_MR = 10,
	VIW_OP_MAX = VIW_OP_REG_MR,
};

/*
 * The operands of an atomic WQE, stored in place of sge[] (which is large
 * enough): one 8-byte local SGE for the original remote value, then the
 * operands.  num_sge is 1.  Not a union member of struct viw_sqe, so that
 * the header stays ISO C99.
 */
struct viw_sqe_atomic {
	struct viw_sge sge;
	__aligned_u64 compare_add;	/* CMP_SWP: compare; FETCH_ADD: add */
	__aligned_u64 swap;		/* CMP_SWP only */
};

/* Rights a VIW_OP_BIND_MW gives the window (struct viw_bind_mw.access). */
enum viw_mw_access {
	VIW_MW_REMOTE_READ = 1 << 0,
	VIW_MW_REMOTE_WRITE = 1 << 1,
	VIW_MW_REMOTE_ATOMIC = 1 << 2,
};

/*
 * VIW_OP_BIND_MW: bind the window whose STag index is that of sqe.rkey,
 * with sqe.rkey as its new STag, to [addr, addr + length) of the MR
 * mr_lkey.  A length of 0 unbinds it.  It is stored in the bytes of
 * sqe.sge[] (copied, not aliased: C99 has no anonymous unions).
 */
struct viw_bind_mw {
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 mr_lkey;
	__u32 access;		/* enum viw_mw_access */
};

/*
 * Send queue element.  For VIW_WQE_INLINE the data (at most
 * VIW_MAX_INLINE bytes) is stored in place of sge[] and inline_len gives
 * its length; an atomic WQE holds struct viw_sqe_atomic there, a bind
 * struct viw_bind_mw; otherwise num_sge entries of sge[] are used.
 */
struct viw_sqe {
	__aligned_u64 wr_id;
	__u16 flags;		/* enum viw_wqe_flags */
	__u8 opcode;		/* enum viw_sq_opcode */
	__u8 num_sge;
	/*
	 * SEND_INV, LOCAL_INV: the STag to invalidate.  SEND_IMM,
	 * WRITE_IMM: the immediate data, the four bytes of
	 * ibv_send_wr.imm_data as they are (network order).
	 */
	__u32 inv_stag;
	__aligned_u64 raddr;	/* WRITE(_IMM), READ, atomics: remote address */
	__u32 rkey;		/* remote STag; BIND_MW: the new one */
	__u32 inline_len;
	/* or a struct viw_sqe_atomic, or a struct viw_bind_mw */
	struct viw_sge sge[VIW_MAX_SGE];
};

/* Receive queue element, used by the RQ and the SRQ. */
struct viw_rqe {
	__aligned_u64 wr_id;
	__u16 flags;		/* enum viw_wqe_flags: only VALID */
	__u8 rsvd0;
	__u8 num_sge;
	__u32 rsvd1;
	struct viw_sge sge[VIW_MAX_SGE];
	__u32 rsvd2[4];
};

enum viw_cqe_flags {
	VIW_CQE_VALID = 1 << 0,
	VIW_CQE_INV = 1 << 1,		/* inv_stag holds an invalidated STag */
	VIW_CQE_SOLICITED = 1 << 2,
	VIW_CQE_IMM = 1 << 3,		/* inv_stag holds the immediate data */
};

enum viw_cqe_opcode {
	VIW_CQE_OP_SEND = 0,
	VIW_CQE_OP_WRITE = 1,
	VIW_CQE_OP_READ = 2,
	VIW_CQE_OP_RECV = 3,
	VIW_CQE_OP_COMP_SWAP = 4,
	VIW_CQE_OP_FETCH_ADD = 5,
	VIW_CQE_OP_BIND_MW = 6,
	VIW_CQE_OP_LOCAL_INV = 7,
	VIW_CQE_OP_RECV_RDMA_IMM = 8,	/* the peer's WRITE with immediate */
	VIW_CQE_OP_REG_MR = 9,		/* kernel QPs only */
};

enum viw_cqe_status {
	VIW_CQE_SUCCESS = 0,
	VIW_CQE_LOC_LEN_ERR = 1,
	VIW_CQE_LOC_QP_OP_ERR = 2,
	VIW_CQE_LOC_PROT_ERR = 3,
	VIW_CQE_WR_FLUSH_ERR = 4,
	VIW_CQE_BAD_RESP_ERR = 5,
	VIW_CQE_LOC_ACCESS_ERR = 6,
	VIW_CQE_REM_INV_REQ_ERR = 7,
	VIW_CQE_REM_ACCESS_ERR = 8,
	VIW_CQE_REM_OP_ERR = 9,
	VIW_CQE_GENERAL_ERR = 10,
	VIW_CQE_MW_BIND_ERR = 11,
	VIW_CQE_RETRY_EXC_ERR = 12,	/* modify_qp connections: peer silent */
	VIW_CQE_STATUS_MAX = VIW_CQE_RETRY_EXC_ERR,
};

struct viw_cqe {
	__aligned_u64 wr_id;
	__u32 flags;		/* enum viw_cqe_flags */
	__u8 opcode;		/* enum viw_cqe_opcode */
	__u8 status;		/* enum viw_cqe_status */
	__u16 rsvd0;
	__u32 byte_len;
	__u32 qp_id;
	/*
	 * With VIW_CQE_INV the invalidated STag; with VIW_CQE_IMM the
	 * immediate data, its four bytes in network order (ibv_wc.imm_data).
	 */
	__u32 inv_stag;
	__u32 vendor_err;	/* TERMINATE layer/type/code, or 0 */
};

enum viw_db_flags {
	/*
	 * The kernel engine is not polling this context: after publishing
	 * WQEs the provider must make the doorbell system call.
	 */
	VIW_DB_NEED_WAKEUP = 1 << 0,
};

/* The doorbell page, one per user context. */
struct viw_db_page {
	__u32 flags;		/* enum viw_db_flags, written by the kernel */
	__u32 rsvd0[15];
	__u32 seq;		/* bumped by the provider after each post */
	__u32 rsvd1[15];
};

/* Driver data of the uverbs commands. */

struct viw_uresp_alloc_ctx {
	__u32 abi_version;
	__u32 db_size;
	__aligned_u64 db_key;	/* mmap offset of the doorbell page */
	__u32 sqe_size;
	__u32 rqe_size;
	__u32 cqe_size;
	__u32 max_sge;
	__u32 max_inline;
	__u32 rsvd;
};

struct viw_uresp_create_cq {
	__u32 cq_id;
	__u32 num_cqe;		/* slots in the ring, a power of two */
	__aligned_u64 ring_key;
	__aligned_u64 ring_size;
};

struct viw_uresp_create_qp {
	__u32 qp_id;
	__u32 num_sqe;		/* slots, a power of two */
	__u32 num_rqe;		/* slots, 0 when the QP uses an SRQ */
	__u32 rsvd;
	__aligned_u64 sq_key;
	__aligned_u64 sq_size;
	__aligned_u64 rq_key;
	__aligned_u64 rq_size;
};

struct viw_uresp_create_srq {
	__u32 srq_id;
	__u32 num_rqe;
	__aligned_u64 ring_key;
	__aligned_u64 ring_size;
};

/*
 * Device memory (ibv_alloc_dm).  The device's memory is kernel pages that
 * the process maps: UVERBS_METHOD_DM_ALLOC answers, besides the core's
 * handle, the mmap offset of the memory in this driver attribute (a
 * __u64).  The mapping is the length rounded up to whole pages.
 */
enum viw_dm_alloc_attrs {
	VIW_ATTR_ALLOC_DM_MMAP_KEY = (1U << UVERBS_ID_NS_SHIFT),
};

/*
 * ibv_memcpy_to_dm() and ibv_memcpy_from_dm() take offsets and lengths
 * in multiples of this, as on the hardware that has device memory.
 */
#define VIW_DM_ACCESS_ALIGN 4

#endif /* VIW_ABI_H */
