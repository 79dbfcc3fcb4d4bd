// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libviw: the doorbell system call.
 *
 * The doorbell is the uverbs post command with no work requests: the WQEs
 * are already in the mapped ring.  It goes to the kernel as a write() of
 * the command to the context's command file, the uverbs write ABI.
 * ibv_cmd_post_send() would send the same command through the ioctl
 * interface, which also parses an attribute bundle; the doorbell is on
 * the fast path, and the write is the shorter way into the same handler.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "viw.h"

/* Every post command has this shape; only the handle's meaning differs. */
struct viw_db_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_send cmd;	/* same layout as post_recv's */
};

_Static_assert(sizeof(struct ib_uverbs_post_send) ==
	       sizeof(struct ib_uverbs_post_recv), "post_recv layout");
_Static_assert(sizeof(struct ib_uverbs_post_send) ==
	       sizeof(struct ib_uverbs_post_srq_recv), "post_srq_recv layout");

static const struct {
	uint32_t command;
	uint32_t wqe_size;	/* the kernel refuses less, even for no WRs */
} viw_db_kinds[] = {
	[VIW_DB_SQ] = { IB_USER_VERBS_CMD_POST_SEND,
			sizeof(struct ib_uverbs_send_wr) },
	[VIW_DB_RQ] = { IB_USER_VERBS_CMD_POST_RECV,
			sizeof(struct ib_uverbs_recv_wr) },
	[VIW_DB_SRQ] = { IB_USER_VERBS_CMD_POST_SRQ_RECV,
			 sizeof(struct ib_uverbs_recv_wr) },
};

/*
 * viw_db_ring - ring the doorbell of one queue
 * @ctx: the context whose command file carries it
 * @kind: which post command
 * @handle: the uverbs handle of the QP or SRQ
 *
 * Return: 0 or an errno value.
 */
int viw_db_ring(struct ibv_context *ctx, enum viw_db_kind kind,
		uint32_t handle)
{
	struct ib_uverbs_post_send_resp resp = {};
	struct viw_db_cmd req = {
		.hdr = {
			.command = viw_db_kinds[kind].command,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)&resp,
			.qp_handle = handle,
			.wqe_size = viw_db_kinds[kind].wqe_size,
		},
	};
	ssize_t n = write(ctx->cmd_fd, &req, sizeof(req));

	if (n == (ssize_t)sizeof(req))
		return 0;
	return n < 0 ? errno : EIO;
}
