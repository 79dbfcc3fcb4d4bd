// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_db: libviw's doorbell (viw_db.c) is a uverbs post command
 * with no work requests, written whole to the context's command file:
 * here a pipe, from which the test reads back what the kernel would get.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "viw.h"
#include "viw_check.h"

struct db_bytes {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_send cmd;
};

/* Ring into a pipe; *@len is all that came out, at most 64 bytes. */
static int ring_and_read(enum viw_db_kind kind, uint32_t handle,
			 struct db_bytes *got, ssize_t *len)
{
	struct ibv_context ctx = {};
	unsigned char buf[64];
	int fds[2], rv;

	*len = -1;
	if (pipe(fds))
		return errno;
	ctx.cmd_fd = fds[1];
	rv = viw_db_ring(&ctx, kind, handle);
	close(fds[1]);
	*len = read(fds[0], buf, sizeof(buf));
	close(fds[0]);
	if (*len > 0)
		memcpy(got, buf, (size_t)*len < sizeof(*got) ? (size_t)*len :
							       sizeof(*got));
	return rv;
}

static void check_kind(enum viw_db_kind kind, uint32_t command,
		       uint32_t wqe_size, const char *name)
{
	struct db_bytes got;
	int before = tc_failures;
	ssize_t len;
	int rv;

	memset(&got, 0xa5, sizeof(got));
	rv = ring_and_read(kind, 0x1234, &got, &len);
	CHECK(rv == 0, "rv %d", rv);
	CHECK(len == (ssize_t)sizeof(got), "wrote %zd bytes", len);
	CHECK(got.hdr.command == command, "command %u", got.hdr.command);
	CHECK(got.hdr.in_words * 4 == sizeof(got), "in_words %u",
	      got.hdr.in_words);
	CHECK(got.hdr.out_words * 4 == sizeof(struct ib_uverbs_post_send_resp),
	      "out_words %u", got.hdr.out_words);
	CHECK(got.cmd.qp_handle == 0x1234, "handle %#x", got.cmd.qp_handle);
	CHECK(got.cmd.wr_count == 0 && got.cmd.sge_count == 0,
	      "wr_count %u sge_count %u", got.cmd.wr_count, got.cmd.sge_count);
	CHECK(got.cmd.wqe_size == wqe_size, "wqe_size %u", got.cmd.wqe_size);
	CHECK(got.cmd.response != 0, "no response buffer");
	tc_report(name, before);
}

static void check_error(void)
{
	struct ibv_context ctx = { .cmd_fd = -1 };
	int before = tc_failures;
	int rv;

	rv = viw_db_ring(&ctx, VIW_DB_SQ, 1);
	CHECK(rv == EBADF, "rv %d", rv);
	tc_report("a failed write returns its errno", before);
}

int main(void)
{
	check_kind(VIW_DB_SQ, IB_USER_VERBS_CMD_POST_SEND,
		   sizeof(struct ib_uverbs_send_wr), "SQ doorbell: post_send");
	check_kind(VIW_DB_RQ, IB_USER_VERBS_CMD_POST_RECV,
		   sizeof(struct ib_uverbs_recv_wr), "RQ doorbell: post_recv");
	check_kind(VIW_DB_SRQ, IB_USER_VERBS_CMD_POST_SRQ_RECV,
		   sizeof(struct ib_uverbs_recv_wr),
		   "SRQ doorbell: post_srq_recv");
	check_error();
	return tc_done("unit.provider_db");
}
