// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_dm: device memory (ibv_alloc_dm, ibv_memcpy_to_dm/from_dm,
 * ibv_reg_dm_mr) on one viw device (tests/vm/guest/dm.sh; docs/viw.4,
 * "Device memory").
 *
 *   viw_dm -d DEV [-g GID_INDEX]      every check below
 *   viw_dm -d DEV --exit-dirty        allocate, register, map, and exit
 *                                     without freeing anything (the
 *                                     shell then checks the counts)
 *
 * Checks:
 *   - max_dm_size is reported; a DM of an odd length takes a copy in and
 *     gives the same bytes back, and reads as zeros where nothing was
 *     written (fresh device memory holds no stale data)
 *   - copies with an unaligned offset or length, or past the end, are
 *     refused with EINVAL; so are allocations of 0 bytes, of more than
 *     max_dm_size, with an alignment above the page size or a comp_mask
 *   - ibv_reg_dm_mr refuses a range past the DM's end and a missing
 *     IBV_ACCESS_ZERO_BASED; a DM with an MR on it cannot be freed
 *   - the device's total is bounded: DMs of max_dm_size are refused with
 *     ENOMEM before 64 MiB, and after freeing them one is granted again
 *   - traffic between two RC QPs of this process, connected through
 *     modify_qp over GID GID_INDEX (default 1, the first IPv4 GID): a
 *     remote WRITE into a DM MR that starts 4 KiB into the DM (the data
 *     lands there, the bytes before stay zero), a remote READ from it
 *     after a memcpy_to_dm, and a SEND whose local SGE is the DM MR
 *     (address 0: zero-based)
 *
 * Output: "PASS name" / "FAIL name: why" lines, "N passed, N failed".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viw_test.h"

#define DM_ODD_LEN	10000		/* not a whole number of pages */
#define DM_LEN		(64 * 1024)
#define DM_MR_OFF	4096
#define DM_MR_LEN	(16 * 1024)
#define DM_XFER		(8 * 1024)
#define DM_TOTAL_CAP	(64ULL << 20)	/* more than any device may hold */
#define DM_CQ_MS	10000
#define DM_SECS		60

#define DM_ACCESS (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | \
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len,
			       uint32_t log_align)
{
	struct ibv_alloc_dm_attr attr = {
		.length = len,
		.log_align_req = log_align,
	};

	return ibv_alloc_dm(ctx, &attr);
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7);
}

/* Copy in, copy out, compare; the untouched tail reads as zeros. */
static void check_round_trip(struct ibv_context *ctx)
{
	uint8_t in[DM_ODD_LEN], out[DM_ODD_LEN];
	struct ibv_dm *dm = dm_alloc(ctx, DM_ODD_LEN, 3);
	int rv;

	if (!dm) {
		vt_fail("round trip", "ibv_alloc_dm(%d): %s", DM_ODD_LEN,
			strerror(errno));
		return;
	}
	fill(in, sizeof(in), 1);
	rv = ibv_memcpy_to_dm(dm, 0, in, DM_ODD_LEN - 400);
	if (!rv)
		rv = ibv_memcpy_from_dm(out, dm, 0, DM_ODD_LEN);
	vt_check(!rv && !memcmp(in, out, DM_ODD_LEN - 400) &&
		 vt_find_not(out + DM_ODD_LEN - 400, 400, 0) < 0,
		 "round trip", "rv %d, data %s", rv,
		 rv ? "-" : "differs or stale tail");
	rv = ibv_memcpy_from_dm(out, dm, 4, 4);
	vt_check(!rv && !memcmp(out, in + 4, 4), "copy at an offset",
		 "rv %d", rv);
	vt_check(ibv_memcpy_to_dm(dm, 1, in, 4) == EINVAL,
		 "unaligned offset refused", "accepted");
	vt_check(ibv_memcpy_from_dm(out, dm, 0, 3) == EINVAL,
		 "unaligned length refused", "accepted");
	vt_check(ibv_memcpy_to_dm(dm, DM_ODD_LEN - 4, in, 8) == EINVAL,
		 "copy past the end refused", "accepted");
	vt_check(ibv_memcpy_from_dm(out, dm, UINT64_MAX - 3, 4) == EINVAL,
		 "wrapping offset refused", "accepted");
	vt_check(!ibv_free_dm(dm), "free", "%s", strerror(errno));
}

/* An allocation that must fail, with @want as errno. */
static void check_refused(const char *name, struct ibv_context *ctx,
			  struct ibv_alloc_dm_attr *attr, int want)
{
	struct ibv_dm *dm = ibv_alloc_dm(ctx, attr);
	int err = errno;

	vt_check(!dm && err == want, name, "%s (want %s)",
		 dm ? "allocated" : strerror(err), strerror(want));
	if (dm)
		ibv_free_dm(dm);
}

static void check_bad_allocs(struct ibv_context *ctx, uint64_t max)
{
	struct ibv_alloc_dm_attr a = { .length = max + 1 };

	check_refused("more than max_dm_size refused", ctx, &a, EINVAL);
	a.length = 0;
	check_refused("0 bytes refused", ctx, &a, EINVAL);
	a.length = 64;
	a.log_align_req = 20;
	check_refused("alignment above a page refused", ctx, &a, EINVAL);
	a.log_align_req = 0;
	a.comp_mask = 1;
	check_refused("comp_mask refused", ctx, &a, EINVAL);
}

/* DMs of @max bytes until the device says no; then one after freeing. */
static void check_total_bound(struct ibv_context *ctx, uint64_t max)
{
	unsigned int n, cap = DM_TOTAL_CAP / max;
	struct ibv_dm **dms = calloc(cap + 1, sizeof(*dms));
	int err = 0;

	if (!dms)
		return;
	for (n = 0; n <= cap; n++) {
		dms[n] = dm_alloc(ctx, max, 0);
		if (!dms[n]) {
			err = errno;
			break;
		}
	}
	vt_check(n < cap && err == ENOMEM, "device total bounded",
		 "%u DMs of %llu bytes, then %s", n,
		 (unsigned long long)max, strerror(err));
	vt_info("the device granted %u DMs of %llu bytes", n,
		(unsigned long long)max);
	while (n--)
		ibv_free_dm(dms[n]);
	dms[0] = dm_alloc(ctx, max, 0);
	vt_check(dms[0], "budget returned on free", "%s", strerror(errno));
	if (dms[0])
		ibv_free_dm(dms[0]);
	free(dms);
}

static void check_registration(struct ibv_context *ctx, struct ibv_pd *pd,
			       struct ibv_dm *dm)
{
	struct ibv_mr *mr;

	mr = ibv_reg_dm_mr(pd, dm, DM_LEN - 8, 16, DM_ACCESS);
	vt_check(!mr, "MR past the DM's end refused", "registered");
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_dm_mr(pd, dm, DM_LEN + 4, 0, DM_ACCESS);
	vt_check(!mr, "MR offset past the end refused", "registered");
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE);
	vt_check(!mr, "MR without ZERO_BASED refused", "registered");
	if (mr)
		ibv_dereg_mr(mr);
}

/* ---- traffic between two QPs of this process ----------------------------- */

/* qp[i] completes on cq[i]: qp[0] sends, qp[1] is the target. */
struct dm_pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	union ibv_gid gid;
	int gid_index;
};

static int dm_qp_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* RTR towards @peer over our own GID (loopback), then RTS. */
static int dm_qp_connect(struct dm_pair *p, struct ibv_qp *qp,
			 struct ibv_qp *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qp_num,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = p->gid, .sgid_index = p->gid_index,
				 .hop_limit = 1 },
		},
	};
	int rv;

	rv = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rv)
		return rv;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int dm_pair_open(struct dm_pair *p, struct ibv_context *ctx,
			struct ibv_pd *pd)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	int i;

	if (ibv_query_gid(ctx, 1, p->gid_index, &p->gid))
		return -1;
	for (i = 0; i < 2; i++) {
		p->cq[i] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!p->cq[i])
			return -1;
		attr.send_cq = p->cq[i];
		attr.recv_cq = p->cq[i];
		p->qp[i] = ibv_create_qp(pd, &attr);
		if (!p->qp[i] || dm_qp_init(p->qp[i]))
			return -1;
	}
	if (dm_qp_connect(p, p->qp[0], p->qp[1]) ||
	    dm_qp_connect(p, p->qp[1], p->qp[0]))
		return -1;
	return 0;
}

static void dm_pair_close(struct dm_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (p->qp[i])
			ibv_destroy_qp(p->qp[i]);
		if (p->cq[i])
			ibv_destroy_cq(p->cq[i]);
	}
}

/* One signaled WR on qp[0]; its completion's status, or -1. */
static int dm_post(struct dm_pair *p, enum ibv_wr_opcode op,
		   struct ibv_sge *sge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.opcode = op,
		.sg_list = sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->qp[0], &wr, &bad))
		return -1;
	if (vt_poll_cq_until(p->cq[0], &wc, 1, vt_deadline_in(DM_CQ_MS)) != 1)
		return -1;
	return wc.status;
}

/* WRITE into the DM MR, READ from it, SEND from it. */
static void check_traffic(struct dm_pair *p, struct ibv_pd *pd,
			  struct ibv_dm *dm, struct ibv_mr *dmr)
{
	static uint8_t buf[3 * DM_XFER], seen[DM_MR_OFF + DM_XFER];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .length = DM_XFER };
	struct ibv_wc wc;
	int st;

	if (!mr) {
		vt_fail("traffic", "ibv_reg_mr: %s", strerror(errno));
		return;
	}
	sge.lkey = mr->lkey;
	fill(buf, DM_XFER, 2);
	sge.addr = (uintptr_t)buf;
	st = dm_post(p, IBV_WR_RDMA_WRITE, &sge, 0, dmr->rkey);
	ibv_memcpy_from_dm(seen, dm, 0, sizeof(seen));
	vt_check(st == IBV_WC_SUCCESS && !memcmp(seen + DM_MR_OFF, buf,
						 DM_XFER) &&
		 vt_find_not(seen, DM_MR_OFF, 0) < 0,
		 "remote WRITE into a DM MR", "status %d, data %s", st,
		 st ? "-" : "not where it belongs");

	fill(buf + DM_XFER, DM_XFER, 3);
	ibv_memcpy_to_dm(dm, DM_MR_OFF, buf + DM_XFER, DM_XFER);
	sge.addr = (uintptr_t)(buf + 2 * DM_XFER);
	st = dm_post(p, IBV_WR_RDMA_READ, &sge, 0, dmr->rkey);
	vt_check(st == IBV_WC_SUCCESS &&
		 !memcmp(buf + 2 * DM_XFER, buf + DM_XFER, DM_XFER),
		 "remote READ from a DM MR", "status %d, data %s", st,
		 st ? "-" : "differs");

	/* A receive on qp[1] into buf, a SEND on qp[0] from the DM. */
	memset(buf, 0, DM_XFER);
	sge.addr = (uintptr_t)buf;
	vt_post_recv(p->qp[1], 7, &sge, 1);
	sge.addr = 0;
	sge.lkey = dmr->lkey;
	st = dm_post(p, IBV_WR_SEND, &sge, 0, 0);
	if (!st && vt_poll_cq_until(p->cq[1], &wc, 1,
				    vt_deadline_in(DM_CQ_MS)) != 1)
		st = -1;
	vt_check(st == IBV_WC_SUCCESS && wc.status == IBV_WC_SUCCESS &&
		 !memcmp(buf, buf + DM_XFER, DM_XFER),
		 "SEND from a DM MR (local SGE)", "status %d", st);
	ibv_dereg_mr(mr);
}

static void check_mr_and_traffic(struct ibv_context *ctx, int gid_index)
{
	struct dm_pair p = { .gid_index = gid_index };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_dm *dm = dm_alloc(ctx, DM_LEN, 0);
	struct ibv_mr *dmr = NULL;

	if (!pd || !dm) {
		vt_fail("DM MR", "PD or DM: %s", strerror(errno));
		goto out;
	}
	check_registration(ctx, pd, dm);
	dmr = ibv_reg_dm_mr(pd, dm, DM_MR_OFF, DM_MR_LEN, DM_ACCESS);
	vt_check(dmr && !dmr->addr, "ibv_reg_dm_mr", "%s",
		 dmr ? "address not 0" : strerror(errno));
	if (!dmr)
		goto out;
	vt_check(ibv_free_dm(dm) == EBUSY, "DM with an MR stays",
		 "not EBUSY");
	if (dm_pair_open(&p, ctx, pd))
		vt_fail("traffic", "two QPs over GID %d: %s", gid_index,
			strerror(errno));
	else
		check_traffic(&p, pd, dm, dmr);
	dm_pair_close(&p);
out:
	if (dmr)
		vt_check(!ibv_dereg_mr(dmr), "dereg DM MR", "failed");
	if (dm)
		vt_check(!ibv_free_dm(dm), "free DM after its MR", "failed");
	if (pd)
		ibv_dealloc_pd(pd);
}

/* Leave a DM, its MR and its mapping to process exit. */
static int exit_dirty(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_dm *dm = dm_alloc(ctx, DM_LEN, 0);
	uint8_t b[4] = { 1, 2, 3, 4 };

	vt_check(pd && dm && ibv_reg_dm_mr(pd, dm, 0, DM_LEN, DM_ACCESS) &&
		 !ibv_memcpy_to_dm(dm, 0, b, sizeof(b)), "exit-dirty setup",
		 "%s", strerror(errno));
	return vt_finish();
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "exit-dirty", no_argument, NULL, 'x' },
		{}
	};
	struct ibv_device_attr_ex attr;
	const char *dev = NULL;
	struct ibv_context *ctx;
	bool dirty = false;
	int gid_index = 1;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'x': dirty = true; break;
		default: return 2;
		}
	}
	if (!dev) {
		fprintf(stderr, "usage: %s -d DEV [-g GID_INDEX] [--exit-dirty]\n",
			argv[0]);
		return 2;
	}
	vt_start(DM_SECS);
	ctx = vt_open_device(dev);
	if (!ctx) {
		vt_fail("open", "no device %s", dev);
		return vt_finish();
	}
	if (dirty)
		return exit_dirty(ctx);
	if (ibv_query_device_ex(ctx, NULL, &attr) || !attr.max_dm_size) {
		vt_fail("max_dm_size", "not reported");
		return vt_finish();
	}
	vt_info("max_dm_size %llu", (unsigned long long)attr.max_dm_size);
	check_round_trip(ctx);
	check_bad_allocs(ctx, attr.max_dm_size);
	check_total_bound(ctx, attr.max_dm_size);
	check_mr_and_traffic(ctx, gid_index);
	ibv_close_device(ctx);
	return vt_finish();
}
