/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The part of libibverbs' private provider interface that viw uses.
 *
 * libibverbs-dev installs the public <infiniband/verbs.h> but not the
 * header that describes the interface between libibverbs and its
 * providers.  That interface is versioned by the symbol set
 * IBVERBS_PRIVATE_34, which rdma-core v40 to v56 export, and every
 * structure below must keep the byte layout libibverbs was built with.
 * The unit test unit.provider_abi_layout checks these layouts against the
 * initialised tables in the static provider archives that libibverbs-dev
 * ships, and unit.provider_match checks struct verbs_device against
 * libibverbs itself at run time.
 *
 * Only what viw needs is declared here; add a declaration only together
 * with a caller, and keep the order of struct verbs_context_ops intact: it
 * is alphabetical in libibverbs, and the layout follows that order.
 */
#ifndef VIW_VERBS_PROVIDER_H
#define VIW_VERBS_PROVIDER_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

/* The private ABI this header describes. */
#define VERBS_PROVIDER_PABI 34

/*
 * A device that libibverbs found in sysfs.  Providers may only pass it
 * back to libibverbs (ibv_read_ibdev_sysfs_file()), so it stays opaque.
 */
struct verbs_sysfs_dev;
struct verbs_xrcd;

/*
 * An entry of a provider's match table.  libibverbs walks every
 * provider's table up to the end marker (kind == VERBS_MATCH_SENTINEL)
 * when it matches devices by driver id, so the table must exist even
 * when, as in viw, it holds only the end marker.
 */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

#define VERBS_MATCH_SENTINEL 0
struct verbs_device;

/* What a provider registers with libibverbs. */
struct verbs_device_ops {
	const char *name;

	/* Range of the uverbs ABI version (sysfs abi_version) accepted. */
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	/* viw's table is empty and match_device decides. */
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	/* Called for every device when set; returns true to claim it. */
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* Two-pointer list link as used inside libibverbs. */
struct verbs_list_link {
	struct verbs_list_link *next;
	struct verbs_list_link *prev;
};

/*
 * The provider allocates this (usually embedded first in its own device
 * struct) in alloc_device; libibverbs fills in everything but the
 * provider's own trailing fields.
 */
struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct verbs_list_link entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* Register a provider; the name carries the private ABI version. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * Defines a constructor that registers @ops when the shared object is
 * loaded, and the global symbol verbs_provider_<name> that names the ops
 * (rdma-core exports the same symbol from every provider).
 */
#define VERBS_PROVIDER_REGISTER(name, ops)				\
	extern const struct verbs_device_ops verbs_provider_##name	\
		__attribute__((alias(#ops), visibility("default")));	\
	static void __attribute__((constructor))			\
	name##_register_provider(void)					\
	{								\
		verbs_register_driver_34(&ops);				\
	}

/*
 * Every op a provider can implement, in libibverbs' (alphabetical) order.
 * Ops viw does not implement are kept as untyped slots: only their
 * position matters, and libibverbs fills the NULL ones with stubs that
 * fail with EOPNOTSUPP.
 */
typedef void (*verbs_unused_op)(void);

struct verbs_mr;

struct verbs_context_ops {
	verbs_unused_op advise_mr;
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	verbs_unused_op alloc_null_mr;
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	verbs_unused_op alloc_td;
	verbs_unused_op async_event;
	verbs_unused_op attach_counters_point_flow;
	verbs_unused_op attach_mcast;
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	verbs_unused_op close_xrcd;
	verbs_unused_op cq_event;
	verbs_unused_op create_ah;
	verbs_unused_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	verbs_unused_op create_flow;
	verbs_unused_op create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	verbs_unused_op create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	verbs_unused_op create_srq_ex;
	verbs_unused_op create_wq;
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	verbs_unused_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	verbs_unused_op destroy_ah;
	verbs_unused_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	verbs_unused_op destroy_flow;
	verbs_unused_op destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	verbs_unused_op destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	verbs_unused_op destroy_wq;
	verbs_unused_op detach_mcast;
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	verbs_unused_op get_srq_num;
	verbs_unused_op import_dm;
	verbs_unused_op import_mr;
	verbs_unused_op import_pd;
	verbs_unused_op modify_cq;
	verbs_unused_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	verbs_unused_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	verbs_unused_op modify_wq;
	verbs_unused_op open_qp;
	verbs_unused_op open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	verbs_unused_op post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	verbs_unused_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	verbs_unused_op query_qp_data_in_order;
	verbs_unused_op query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	verbs_unused_op read_counters;
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	verbs_unused_op reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	verbs_unused_op resize_cq;
	verbs_unused_op set_ece;
	verbs_unused_op unimport_dm;
	verbs_unused_op unimport_mr;
	verbs_unused_op unimport_pd;
};

/* libibverbs reads mr_type and access in ibv_dereg_mr(). */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;		/* libibverbs' enum ibv_mr_type */
	int access;
};

/* Device memory: libibverbs keeps the kernel's handle next to the DM. */
struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

/*
 * ibv_qp_to_qp_ex() reads comp_mask behind any struct ibv_qp, so a QP
 * must be a zero-initialised struct verbs_qp even if it never uses the
 * extended interface.  It returns &qp_ex when VERBS_QP_EX is set, which
 * the provider does for a QP with the ibv_wr_*() functions.
 */
enum {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

/*
 * Commands of the write() interface: the uverbs header followed by the
 * kernel's request structure.  A provider with driver data appends it
 * after the whole struct; libibverbs takes everything past
 * sizeof(struct ibv_<cmd>) as driver data.
 */
#define VERBS_WRITE_CMD(name, kabi)					\
	struct ibv_##name {						\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct kabi core_payload;				\
	};								\
	_Static_assert(offsetof(struct ibv_##name, core_payload) ==	\
		       sizeof(struct ib_uverbs_cmd_hdr) &&		\
		       sizeof(struct ibv_##name) ==			\
		       sizeof(struct ib_uverbs_cmd_hdr) +		\
		       sizeof(struct kabi),				\
		       "padding in struct ibv_" #name)

VERBS_WRITE_CMD(alloc_mw, ib_uverbs_alloc_mw);
VERBS_WRITE_CMD(alloc_pd, ib_uverbs_alloc_pd);
VERBS_WRITE_CMD(create_cq, ib_uverbs_create_cq);
VERBS_WRITE_CMD(create_qp, ib_uverbs_create_qp);
VERBS_WRITE_CMD(create_srq, ib_uverbs_create_srq);
VERBS_WRITE_CMD(get_context, ib_uverbs_get_context);
VERBS_WRITE_CMD(modify_qp, ib_uverbs_modify_qp);
VERBS_WRITE_CMD(modify_srq, ib_uverbs_modify_srq);
VERBS_WRITE_CMD(query_port, ib_uverbs_query_port);
VERBS_WRITE_CMD(query_qp, ib_uverbs_query_qp);
VERBS_WRITE_CMD(query_srq, ib_uverbs_query_srq);
VERBS_WRITE_CMD(reg_mr, ib_uverbs_reg_mr);
VERBS_WRITE_CMD(rereg_mr, ib_uverbs_rereg_mr);

/*
 * Context setup.  alloc_size bytes are allocated and zeroed; the struct
 * verbs_context sits at byte offset (uintptr_t)context_offset.  Ownership
 * of cmd_fd passes to libibverbs, also on failure.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
#define verbs_init_and_alloc_context(ibdev, cmd_fd, type, member,	\
				     driver_id)				\
	((type *)_verbs_init_and_alloc_context(				\
		ibdev, cmd_fd, sizeof(type),				\
		(struct verbs_context *)(uintptr_t)offsetof(type, member), \
		driver_id))
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/*
 * The ibv_cmd_* helpers return 0 or a positive errno value.  The command
 * and response buffers may be followed by provider data; their sizes
 * include it.
 */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/*
 * Commands of the ioctl() interface take a chain of command buffers: a
 * provider that adds driver attributes to a command passes the buffer
 * that holds them as @link, and libibverbs appends them to the core's.
 * Each buffer is a header followed by room for its attributes
 * (VERBS_CMD_BUFS); every buffer of a chain names the same method.
 */
struct ibv_command_buffer {
	struct ibv_command_buffer *next;
	struct ib_uverbs_attr *next_attr;	/* the next one to fill */
	struct ib_uverbs_attr *last_attr;	/* end of the room */
	uint8_t uhw_in_idx;
	uint8_t uhw_out_idx;
	uint8_t uhw_in_headroom_dwords;
	uint8_t uhw_out_headroom_dwords;
	uint8_t buffer_error:1;
	uint8_t fallback_require_ex:1;
	uint8_t fallback_ioctl_only:1;
	struct ib_uverbs_ioctl_hdr hdr;		/* ends in the attributes */
};

/* Elements of an array of command buffers with room for @n attributes. */
#define VERBS_CMD_BUFS(n)						\
	((2 * sizeof(struct ibv_command_buffer) +			\
	  (n) * sizeof(struct ib_uverbs_attr) - 1) /			\
	 sizeof(struct ibv_command_buffer))

/* Start @cmd, the first of VERBS_CMD_BUFS(@n) elements, for a link. */
static inline void verbs_cmd_init(struct ibv_command_buffer *cmd,
				  uint16_t object_id, uint16_t method_id,
				  unsigned int n)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.object_id = object_id;
	cmd->hdr.method_id = method_id;
	cmd->uhw_in_idx = 0xff;		/* no UHW */
	cmd->uhw_out_idx = 0xff;
	cmd->next_attr = cmd->hdr.attrs;
	cmd->last_attr = cmd->hdr.attrs + n;
}

/* Add a mandatory output attribute: the kernel writes @len bytes at @data. */
static inline bool verbs_cmd_add_out(struct ibv_command_buffer *cmd,
				     uint16_t attr_id, void *data,
				     uint16_t len)
{
	struct ib_uverbs_attr *attr = cmd->next_attr;

	if (attr >= cmd->last_attr)
		return false;
	memset(attr, 0, sizeof(*attr));
	attr->attr_id = attr_id;
	attr->flags = UVERBS_ATTR_F_MANDATORY;
	attr->len = len;
	attr->data = (uintptr_t)data;
	cmd->next_attr++;
	return true;
}

int ibv_cmd_alloc_dm(struct ibv_context *ctx,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
/* Fills in the MR as ibv_cmd_reg_mr does, with addr NULL (zero-based). */
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);

/*
 * The uverbs post commands.  viw uses them with an empty list (wr ==
 * NULL) as its doorbell: the kernel then calls the driver with no work
 * request, which tells it to process the mapped ring.
 */
int ibv_cmd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/* Reads ibdev sysfs file fnfmt of sysfs_dev; returns its length or -1. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Logging through libibverbs: VERBS_LOG_LEVEL selects the level and
 * VERBS_LOG_FILE the file (see libibverbs' documentation).
 */
enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define verbs_log(vctx, level, fmt, ...)				\
	do {								\
		int verbs_log_errno_ = errno;				\
									\
		__verbs_log(vctx, level, "%s: %s:%d: " fmt,		\
			    (vctx)->context.device->name, __func__,	\
			    __LINE__, ##__VA_ARGS__);			\
		errno = verbs_log_errno_;				\
	} while (0)
#define verbs_err(vctx, fmt, ...)					\
	verbs_log(vctx, VERBS_LOG_ERR, fmt, ##__VA_ARGS__)
#define verbs_debug(vctx, fmt, ...)					\
	verbs_log(vctx, VERBS_LOG_DEBUG, fmt, ##__VA_ARGS__)

#endif /* VIW_VERBS_PROVIDER_H */
