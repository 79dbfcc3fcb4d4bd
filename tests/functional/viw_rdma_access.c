// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_rdma_access: remote access enforcement of an iWARP RNIC, checked
 * over real rdma_cm connections between two hosts.
 *
 *   viw_rdma_access -s BIND_ADDR [-p PORT] [-t SECS]    (server)
 *   viw_rdma_access -c SERVER_ADDR [-p PORT] [-t SECS]  (client)
 *
 * The server registers a 64 KiB buffer "target" (REMOTE_WRITE|REMOTE_READ,
 * filled with 0xa5), a 4 KiB buffer "mr_local" (LOCAL_WRITE only, 0x3c) and
 * a "stale" MR that it deregisters at once, and hands the client their
 * addresses and rkeys in the rdma_accept private data.  The client runs one
 * scenario per connection, and names it in its rdma_connect private data:
 *
 *   s0  WRITE 4 KiB to target+0, READ it back, READ the last 8 bytes of
 *       target: all succeed, data matches; then a normal rdma_disconnect.
 *   s1  WRITE with an unregistered rkey, then READ 8 bytes of target.
 *   s2  READ with the stale (deregistered) rkey.
 *   s3  WRITE to mr_local (valid rkey, no REMOTE_WRITE), then READ.
 *   s4  READ of 8 bytes straddling the end of target (bounds).
 *   s5  RFC 7306 atomics on "atom" (REMOTE_ATOMIC|REMOTE_READ, 64-bit words
 *       of RA_ATOM_INIT): two FetchAdds on one word, a CmpSwap that swaps
 *       and one that does not, then a READ of the three words: all
 *       succeed with the opcode and byte_len of an atomic, each returns
 *       the original value, the READ and the server see exactly what the
 *       operations left; then a normal rdma_disconnect.
 *   s6  FetchAdd with an unregistered rkey.
 *   s7  FetchAdd on target (valid rkey, no REMOTE_ATOMIC).
 *   s8  FetchAdd on atom+4 (not 8-byte aligned).
 *   s9, s10  two connections at once, each posting RA_CONC_OPS FetchAdds
 *       of 1 on the same word of atom, in batches, alternating: every one
 *       succeeds, and the original values returned over both QPs are
 *       exactly RA_ATOM_INIT .. RA_ATOM_INIT + 2 * RA_CONC_OPS - 1, each
 *       once (no add was lost or applied twice, whichever QP's engine ran
 *       it); the server finds the sum.  Both end in a normal disconnect.
 *
 * In s1..s4 and s6..s8 every WR is signaled and a valid READ and WRITE trail the
 * violation.  The client asserts, strictly: a WRITE in front of the
 * violation completes with SUCCESS (it completes locally once sent), the
 * violating READ or the READ behind the violating WRITE completes with
 * REM_ACCESS_ERR (the TERMINATE reports a protection error: RDMAP remote
 * protection or DDP tagged buffer error, never REM_OP_ERR), every WR
 * behind it with WR_FLUSH_ERR, all in posting order and nothing more; the
 * QP is in ERR; RDMA_CM_EVENT_DISCONNECTED arrives within 10 s.
 *
 * The WRITEs in s1/s3 are 64 bytes, one FPDU: the peer cannot see the
 * violation before the WRITE has been handed to TCP.  An RNIC that
 * completes a sent WRITE only after some delay could still let the
 * TERMINATE fail the WRITE itself (wc0 REM_ACCESS_ERR, wc1 WR_FLUSH_ERR);
 * that is reported as a failure, since the WRITE was complete locally.
 *
 * The server asserts for each connection: it is established, it ends with
 * RDMA_CM_EVENT_DISCONNECTED, the QP is then in ERR, the server CQ stayed
 * empty, mr_local is untouched, target is untouched (s0: holds exactly
 * what the WRITE put there, and is restored afterwards) and so is atom
 * (s5: holds what the atomics left).  A refused atomic leaves the
 * client's result buffer untouched too.
 *
 * One "PASS name" or "FAIL name: why" line per check, "INFO" lines for
 * context, and a final "N passed, N failed"; exit 0 only if all passed.
 * Every wait has a deadline, and the whole run is bounded by -t (client
 * 80 s, server 85 s by default; a watchdog ends the process 5 s later if
 * a call blocks).  The server exits once all connections ended.  The
 * client retries its first connection for 5 s while it is refused, so the
 * server may start at the same time.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "viw_test.h"

#define RA_MAGIC		0x76697761	/* "viwa" */
#define RA_DEFAULT_PORT		"7479"
#define RA_CLIENT_SECS		80
#define RA_SERVER_SECS		85

#define RA_TARGET_LEN		(64 * 1024)
#define RA_ATOM_LEN		4096
#define RA_ATOM_INIT		0x0102030405060708ULL
#define RA_ATOM_SWAP		0xfedcba9876543210ULL
#define RA_LOCAL_LEN		4096
#define RA_STALE_LEN		4096
#define RA_TARGET_FILL		0xa5
#define RA_LOCAL_FILL		0x3c
#define RA_STALE_FILL		0x96
#define RA_JUNK_FILL		0x5a

#define RA_S0_LEN		4096	/* s0 writes target[0, 4096) */
#define RA_PROBE_OFF		32768	/* valid 8-byte READs read here */
#define RA_TRAIL_WRITE_OFF	8192	/* the trailing WRITE lands here */

/* The client's buffer. */
#define RA_CBUF_LEN		(32 * 1024)
#define RA_L_SRC		0	/* s0 pattern, WRITE source */
#define RA_L_BACK		4096	/* READ back of s0 */
#define RA_L_PROBE		8192	/* 8-byte READ sinks, 64 bytes apart */
#define RA_L_JUNK		12288	/* trailing WRITE source */
#define RA_L_ATOM		16384	/* atomic results, 64 bytes apart */
#define RA_L_CONC		20480	/* s9/s10 results, 8 bytes apart */

#define RA_CONC_WORD		4	/* the word of atom s9 and s10 add to */
#define RA_CONC_BATCH		8
#define RA_CONC_OPS		(25 * RA_CONC_BATCH)	/* per QP */

#define RA_RD_DEPTH		4
#define RA_QP_DEPTH		16
#define RA_MAX_OPS		6

#define RA_RESOLVE_MS		2000
#define RA_EVENT_MS		3000
#define RA_CONNECT_MS		10000
#define RA_CQ_MS		5000
#define RA_QP_ERR_MS		2000
#define RA_DISC_MS		10000
#define RA_SERVER_CONN_MS	20000
#define RA_RETRY_MS		5000

enum {
	RA_S_VALID,
	RA_S_BAD_RKEY,
	RA_S_STALE_RKEY,
	RA_S_NO_RIGHTS,
	RA_S_BOUNDS,
	RA_S_ATOMIC,
	RA_S_ATOMIC_BAD_RKEY,
	RA_S_ATOMIC_NO_RIGHTS,
	RA_S_ATOMIC_UNALIGNED,
	RA_S_CONC_A,
	RA_S_CONC_B,
	RA_NUM_SCENARIOS,
};

static const char *const ra_scenario_names[RA_NUM_SCENARIOS] = {
	[RA_S_VALID] = "valid WRITE and READ",
	[RA_S_BAD_RKEY] = "WRITE with an unregistered rkey, then READ",
	[RA_S_STALE_RKEY] = "READ with a deregistered rkey",
	[RA_S_NO_RIGHTS] = "WRITE to an MR without REMOTE_WRITE, then READ",
	[RA_S_BOUNDS] = "READ across the end of the MR",
	[RA_S_ATOMIC] = "FetchAdd and CmpSwap, then READ",
	[RA_S_ATOMIC_BAD_RKEY] = "FetchAdd with an unregistered rkey",
	[RA_S_ATOMIC_NO_RIGHTS] = "FetchAdd on an MR without REMOTE_ATOMIC",
	[RA_S_ATOMIC_UNALIGNED] = "FetchAdd at an unaligned address",
	[RA_S_CONC_A] = "FetchAdds on one word from two QPs, QP a",
	[RA_S_CONC_B] = "FetchAdds on one word from two QPs, QP b",
};

/* The scenarios that end in a normal disconnect; the others in ERR. */
static bool ra_valid_scenario(int sc)
{
	return sc == RA_S_VALID || sc == RA_S_ATOMIC || sc == RA_S_CONC_A ||
	       sc == RA_S_CONC_B;
}

/* Client -> server, in the rdma_connect private data (big endian). */
struct ra_hello {
	uint32_t magic;
	uint32_t scenario;
};

/* Server -> client, in the rdma_accept private data (big endian). */
struct ra_offer {
	uint32_t magic;
	uint32_t scenario;
	uint64_t rw_addr;
	uint64_t local_addr;
	uint64_t stale_addr;
	uint32_t rw_rkey;
	uint32_t local_rkey;
	uint32_t stale_rkey;
	uint32_t atom_rkey;
	uint64_t atom_addr;
};

/* ---- helpers ------------------------------------------------------------- */

static void check_qp_err(const char *name, struct ibv_qp *qp, int ms)
{
	int state = vt_wait_qp_state(qp, IBV_QPS_ERR, ms);

	if (state < 0)
		vt_fail(name, "ibv_query_qp: %s", strerror(-state));
	else
		vt_check(state == IBV_QPS_ERR, name, "QP in %s, expected ERR",
			 vt_qp_state_str(state));
}

/* Byte pattern s0 writes: position dependent, so misplaced data shows. */
static uint8_t s0_byte(size_t i)
{
	return (uint8_t)(i * 13 + 7);
}

/* Offset of the first byte of @buf that differs from the s0 pattern. */
static long find_not_s0(const uint8_t *buf)
{
	size_t i;

	for (i = 0; i < RA_S0_LEN; i++)
		if (buf[i] != s0_byte(i))
			return (long)i;
	return -1;
}

/* ---- client -------------------------------------------------------------- */

struct ra_client {
	struct vt_ep ep;
	struct sockaddr_storage dst;
	uint8_t *buf;
	struct ra_offer peer;		/* host byte order */
	uint32_t bad_rkey;
	int sc;				/* the scenario being connected */
};

/* PD, MR, CQ and QP for the next connection. */
static int client_alloc(struct ra_client *c)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = RA_QP_DEPTH,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	return vt_ep_alloc(&c->ep, c->buf, RA_CBUF_LEN, 2 * RA_QP_DEPTH,
			   &attr);
}

static int client_parse_offer(struct ra_client *c, int sc,
			      const struct rdma_conn_param *conn)
{
	struct ra_offer o;
	int rv;

	rv = vt_take_offer(conn->private_data, conn->private_data_len, &o,
			   sizeof(o), RA_MAGIC, sc, c->ep.why,
			   sizeof(c->ep.why));
	if (rv)
		return rv;
	c->peer.magic = RA_MAGIC;
	c->peer.rw_addr = be64toh(o.rw_addr);
	c->peer.local_addr = be64toh(o.local_addr);
	c->peer.stale_addr = be64toh(o.stale_addr);
	c->peer.rw_rkey = be32toh(o.rw_rkey);
	c->peer.local_rkey = be32toh(o.local_rkey);
	c->peer.stale_rkey = be32toh(o.stale_rkey);
	c->peer.atom_rkey = be32toh(o.atom_rkey);
	c->peer.atom_addr = be64toh(o.atom_addr);
	return 0;
}

/* rdma_connect and wait for ESTABLISHED with the server's offer. */
static int client_connect_qp(struct ra_client *c, int sc)
{
	struct ra_hello hello = {
		.magic = htobe32(RA_MAGIC), .scenario = htobe32(sc),
	};
	struct rdma_conn_param param = {
		.private_data = &hello,
		.private_data_len = sizeof(hello),
		.responder_resources = RA_RD_DEPTH,
		.initiator_depth = RA_RD_DEPTH,
	};
	struct rdma_cm_event *ev;
	int rv;

	rv = vt_ep_connect(&c->ep, &param, RA_CONNECT_MS, &ev);
	if (rv)
		return rv;
	rv = client_parse_offer(c, sc, &ev->param.conn);
	rdma_ack_cm_event(ev);
	return rv;
}

/* Channel, id, address and route, resources, connection for c->sc. */
static int client_connect(void *arg)
{
	struct ra_client *c = arg;
	int rv;

	rv = vt_ep_route(&c->ep, &c->dst, c, RA_RESOLVE_MS, RA_EVENT_MS);
	if (rv)
		return rv;
	rv = client_alloc(c);
	return rv ? rv : client_connect_qp(c, c->sc);
}

/* Connect for scenario @sc: PASS or FAIL "s<sc> connect". */
static bool client_connect_retry(struct ra_client *c, int sc, bool first)
{
	char name[64];

	snprintf(name, sizeof(name), "s%d connect", sc);
	c->sc = sc;
	if (!vt_ep_connect_retry(&c->ep, name, first, RA_RETRY_MS,
				 client_connect, c))
		return false;
	vt_pass("%s", name);
	return true;
}

#define RA_OP(_what, _op, _loff, _len, _raddr, _rkey, _want) \
	((struct vt_op){ .what = (_what), .opcode = (_op), .loff = (_loff), \
			 .len = (_len), .raddr = (_raddr), .rkey = (_rkey), \
			 .want = (_want) })

/* An atomic on the 8 bytes at @raddr; its result goes to slot @slot. */
#define RA_ATOMIC(_what, _op, _slot, _raddr, _rkey, _want, _cmp_add, \
		  _swap, _orig) \
	((struct vt_op){ .what = (_what), .opcode = (_op), \
			 .loff = RA_L_ATOM + 64 * (_slot), .len = 8, \
			 .raddr = (_raddr), .rkey = (_rkey), .want = (_want), \
			 .compare_add = (_cmp_add), .swap = (_swap), \
			 .want_orig = (_orig) })

static int build_atomic_ops(const struct ra_offer *p, struct vt_op *ops)
{
	const uint64_t a = p->atom_addr;
	const uint32_t k = p->atom_rkey;
	int n = 0;

	ops[n++] = RA_ATOMIC("FetchAdd 5", IBV_WR_ATOMIC_FETCH_AND_ADD, 0, a,
			     k, IBV_WC_SUCCESS, 5, 0, RA_ATOM_INIT);
	ops[n++] = RA_ATOMIC("FetchAdd 7", IBV_WR_ATOMIC_FETCH_AND_ADD, 1, a,
			     k, IBV_WC_SUCCESS, 7, 0, RA_ATOM_INIT + 5);
	ops[n++] = RA_ATOMIC("CmpSwap equal", IBV_WR_ATOMIC_CMP_AND_SWP, 2,
			     a + 8, k, IBV_WC_SUCCESS, RA_ATOM_INIT,
			     RA_ATOM_SWAP, RA_ATOM_INIT);
	ops[n++] = RA_ATOMIC("CmpSwap unequal", IBV_WR_ATOMIC_CMP_AND_SWP, 3,
			     a + 16, k, IBV_WC_SUCCESS, RA_ATOM_INIT + 1,
			     RA_ATOM_SWAP, RA_ATOM_INIT);
	ops[n++] = RA_OP("READ 3 words", IBV_WR_RDMA_READ, RA_L_BACK, 24, a, k,
			 IBV_WC_SUCCESS);
	return n;
}

/* The valid READ and WRITE posted behind a violation: both flushed. */
static int add_trailers(const struct ra_offer *p, struct vt_op *ops, int n)
{
	ops[n++] = RA_OP("trailing READ", IBV_WR_RDMA_READ, RA_L_PROBE + 64, 8,
			 p->rw_addr + RA_PROBE_OFF, p->rw_rkey,
			 IBV_WC_WR_FLUSH_ERR);
	ops[n++] = RA_OP("trailing WRITE", IBV_WR_RDMA_WRITE, RA_L_JUNK, 8,
			 p->rw_addr + RA_TRAIL_WRITE_OFF, p->rw_rkey,
			 IBV_WC_WR_FLUSH_ERR);
	return n;
}

/* The WRs of scenario @sc, in posting order; how many. */
static int build_ops(const struct ra_client *c, int sc, struct vt_op *ops)
{
	const struct ra_offer *p = &c->peer;
	struct vt_op read_after = RA_OP("READ after it", IBV_WR_RDMA_READ,
					RA_L_PROBE, 8,
					p->rw_addr + RA_PROBE_OFF, p->rw_rkey,
					IBV_WC_REM_ACCESS_ERR);
	int n = 0;

	switch (sc) {
	case RA_S_VALID:
		ops[n++] = RA_OP("WRITE 4 KiB", IBV_WR_RDMA_WRITE, RA_L_SRC,
				 RA_S0_LEN, p->rw_addr, p->rw_rkey,
				 IBV_WC_SUCCESS);
		ops[n++] = RA_OP("READ 4 KiB back", IBV_WR_RDMA_READ,
				 RA_L_BACK, RA_S0_LEN, p->rw_addr, p->rw_rkey,
				 IBV_WC_SUCCESS);
		ops[n++] = RA_OP("READ last 8 bytes", IBV_WR_RDMA_READ,
				 RA_L_PROBE, 8,
				 p->rw_addr + RA_TARGET_LEN - 8, p->rw_rkey,
				 IBV_WC_SUCCESS);
		return n;
	case RA_S_BAD_RKEY:
		ops[n++] = RA_OP("WRITE unregistered rkey", IBV_WR_RDMA_WRITE,
				 RA_L_SRC, 64, p->rw_addr, c->bad_rkey,
				 IBV_WC_SUCCESS);
		ops[n++] = read_after;
		break;
	case RA_S_STALE_RKEY:
		ops[n++] = RA_OP("READ stale rkey", IBV_WR_RDMA_READ,
				 RA_L_PROBE, 8, p->stale_addr, p->stale_rkey,
				 IBV_WC_REM_ACCESS_ERR);
		break;
	case RA_S_NO_RIGHTS:
		ops[n++] = RA_OP("WRITE to mr_local", IBV_WR_RDMA_WRITE,
				 RA_L_SRC, 64, p->local_addr, p->local_rkey,
				 IBV_WC_SUCCESS);
		ops[n++] = read_after;
		break;
	case RA_S_BOUNDS:
		ops[n++] = RA_OP("READ 8 bytes at end-4", IBV_WR_RDMA_READ,
				 RA_L_PROBE, 8,
				 p->rw_addr + RA_TARGET_LEN - 4, p->rw_rkey,
				 IBV_WC_REM_ACCESS_ERR);
		break;
	case RA_S_ATOMIC:
		return build_atomic_ops(p, ops);
	case RA_S_ATOMIC_BAD_RKEY:
		ops[n++] = RA_ATOMIC("FetchAdd unregistered rkey",
				     IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
				     p->atom_addr, c->bad_rkey,
				     IBV_WC_REM_ACCESS_ERR, 1, 0, 0);
		break;
	case RA_S_ATOMIC_NO_RIGHTS:
		ops[n++] = RA_ATOMIC("FetchAdd on target",
				     IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
				     p->rw_addr, p->rw_rkey,
				     IBV_WC_REM_ACCESS_ERR, 1, 0, 0);
		break;
	case RA_S_ATOMIC_UNALIGNED:
		ops[n++] = RA_ATOMIC("FetchAdd at atom+4",
				     IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
				     p->atom_addr + 4, p->atom_rkey,
				     IBV_WC_REM_ACCESS_ERR, 1, 0, 0);
		break;
	}
	return add_trailers(p, ops, n);
}

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	default:
		return IBV_WC_RDMA_WRITE;
	}
}

/* The i-th completion against the i-th WR; true if it matches. */
static bool check_wc(int sc, int i, const struct vt_op *op,
		     const struct ibv_wc *wc, struct ibv_qp *qp)
{
	char name[96];

	snprintf(name, sizeof(name), "s%d wc%d %s -> %s", sc, i, op->what,
		 vt_wc_status_name(op->want));
	if (wc->wr_id != (uint64_t)i) {
		vt_fail(name, "completion %d is for wr_id %llu (%s): not in "
			"posting order", i, (unsigned long long)wc->wr_id,
			vt_wc_status_name(wc->status));
		return false;
	}
	if (wc->status != op->want) {
		vt_fail(name, "status %s (%d), vendor_err %#x",
			vt_wc_status_name(wc->status), wc->status,
			wc->vendor_err);
		return false;
	}
	if (wc->qp_num != qp->qp_num) {
		vt_fail(name, "qp_num %u, expected %u", wc->qp_num, qp->qp_num);
		return false;
	}
	if (wc->status == IBV_WC_SUCCESS &&
	    wc->opcode != wc_opcode_of(op->opcode)) {
		vt_fail(name, "opcode %d, expected %d", wc->opcode,
			wc_opcode_of(op->opcode));
		return false;
	}
	if (wc->status == IBV_WC_SUCCESS &&
	    (op->opcode == IBV_WR_RDMA_READ || vt_is_atomic(op->opcode)) &&
	    wc->byte_len != op->len) {
		vt_fail(name, "byte_len %u, expected %u", wc->byte_len,
			op->len);
		return false;
	}
	vt_pass("%s", name);
	return true;
}

/* The completions of @ops, in order, and no more; true if all match. */
static bool client_check_wcs(struct ra_client *c, int sc,
			     const struct vt_op *ops, int n)
{
	long long start = vt_now_ms();
	struct ibv_wc wc[RA_MAX_OPS + 1];
	bool ok = true;
	char name[96];
	int got, i;

	got = vt_poll_cq_until(c->ep.cq, wc, n, vt_deadline_in(RA_CQ_MS));
	for (i = 0; i < n; i++) {
		if (i < got) {
			ok &= check_wc(sc, i, &ops[i], &wc[i], c->ep.id->qp);
			continue;
		}
		ok = false;
		snprintf(name, sizeof(name), "s%d wc%d %s -> %s", sc, i,
			 ops[i].what, vt_wc_status_name(ops[i].want));
		vt_fail(name, "no completion within %lld ms (%d of %d arrived)",
			vt_now_ms() - start, got, n);
	}
	usleep(100000);
	got = ibv_poll_cq(c->ep.cq, 1, wc);
	snprintf(name, sizeof(name), "s%d no extra completion", sc);
	vt_check(got == 0, name, "wr_id %llu status %s",
		 (unsigned long long)wc[0].wr_id,
		 got > 0 ? vt_wc_status_name(wc[0].status) : "poll error");
	return ok && got == 0;
}

static void client_check_s0_data(struct ra_client *c)
{
	long off = find_not_s0(c->buf + RA_L_BACK);

	vt_check(off < 0, "s0 READ back returns the written 4 KiB",
		 "byte %ld is %#x, expected %#x", off,
		 off < 0 ? 0 : c->buf[RA_L_BACK + off],
		 off < 0 ? 0 : s0_byte(off));
	off = vt_find_not(c->buf + RA_L_PROBE, 8, RA_TARGET_FILL);
	vt_check(off < 0, "s0 READ of the last 8 bytes returns the fill",
		 "byte %ld is %#x, expected %#x", off,
		 off < 0 ? 0 : c->buf[RA_L_PROBE + off], RA_TARGET_FILL);
}

/* The 64-bit word at @p, which need not be aligned. */
static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Each atomic's result buffer: the original value if it succeeded, still
 * the fill (zero) if it was refused.
 */
static void client_check_atomic_results(struct ra_client *c, int sc,
					const struct vt_op *ops, int n)
{
	char name[96];
	uint64_t got;
	int i;

	for (i = 0; i < n; i++) {
		if (!vt_is_atomic(ops[i].opcode))
			continue;
		got = load_u64(c->buf + ops[i].loff);
		if (ops[i].want == IBV_WC_SUCCESS) {
			snprintf(name, sizeof(name),
				 "s%d %s returns the original value", sc,
				 ops[i].what);
			vt_check(got == ops[i].want_orig, name,
				 "%#llx, expected %#llx",
				 (unsigned long long)got,
				 (unsigned long long)ops[i].want_orig);
		} else {
			snprintf(name, sizeof(name),
				 "s%d %s leaves the result buffer alone", sc,
				 ops[i].what);
			vt_check(got == 0, name, "it holds %#llx",
				 (unsigned long long)got);
		}
	}
}

/* What the atomics of s5 left in the three words. */
static const uint64_t ra_atom_after[3] = {
	RA_ATOM_INIT + 12, RA_ATOM_SWAP, RA_ATOM_INIT,
};

static void client_check_atomic_data(struct ra_client *c)
{
	char name[96];
	uint64_t got;
	int i;

	for (i = 0; i < 3; i++) {
		got = load_u64(c->buf + RA_L_BACK + 8 * i);
		snprintf(name, sizeof(name), "s5 READ word %d after atomics", i);
		vt_check(got == ra_atom_after[i], name, "%#llx, expected %#llx",
			 (unsigned long long)got,
			 (unsigned long long)ra_atom_after[i]);
	}
}

static void client_wait_disconnected(struct ra_client *c, int sc)
{
	struct rdma_cm_event *ev;
	char name[64];
	int rv;

	snprintf(name, sizeof(name), "s%d DISCONNECTED", sc);
	rv = vt_cm_expect(c->ep.ch, RDMA_CM_EVENT_DISCONNECTED, RA_DISC_MS, &ev,
			  c->ep.why, sizeof(c->ep.why));
	if (rv) {
		vt_fail(name, "%s", c->ep.why);
		return;
	}
	if (!ra_valid_scenario(sc))
		vt_info("s%d DISCONNECTED status %d", sc, ev->status);
	rdma_ack_cm_event(ev);
	vt_pass("%s", name);
}

static void client_fill(struct ra_client *c)
{
	size_t i;

	memset(c->buf, 0, RA_CBUF_LEN);
	for (i = 0; i < RA_S0_LEN; i++)
		c->buf[RA_L_SRC + i] = s0_byte(i);
	memset(c->buf + RA_L_JUNK, RA_JUNK_FILL, 64);
}

/* A random rkey that is none of the server's. */
static uint32_t pick_bad_rkey(const struct ra_offer *p)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)(vt_now_ms() * 2654435761u) ^ (uint32_t)getpid();
	while (r == p->rw_rkey || r == p->local_rkey || r == p->stale_rkey ||
	       r == p->atom_rkey)
		r = r * 1103515245u + 12345u;
	return r;
}

static void client_scenario(struct ra_client *c, int sc, bool first)
{
	struct vt_op ops[RA_MAX_OPS];
	bool wcs_ok = false;
	char name[64];
	int n, rv;

	vt_info("s%d: %s", sc, ra_scenario_names[sc]);
	client_fill(c);
	if (!client_connect_retry(c, sc, first))
		return;
	if (sc == RA_S_BAD_RKEY || sc == RA_S_ATOMIC_BAD_RKEY) {
		c->bad_rkey = pick_bad_rkey(&c->peer);
		vt_info("s%d uses rkey %#x", sc, c->bad_rkey);
	}
	n = build_ops(c, sc, ops);
	rv = vt_post_ops(c->ep.id->qp, c->buf, c->ep.mr->lkey, ops, n);
	snprintf(name, sizeof(name), "s%d post %d WRs", sc, n);
	vt_check(!rv, name, "ibv_post_send: %s", strerror(rv));
	if (!rv)
		wcs_ok = client_check_wcs(c, sc, ops, n);
	if (wcs_ok)
		client_check_atomic_results(c, sc, ops, n);
	if (ra_valid_scenario(sc)) {
		if (wcs_ok && sc == RA_S_VALID)
			client_check_s0_data(c);
		else if (wcs_ok)
			client_check_atomic_data(c);
		else
			vt_fail("valid scenario data",
				"s%d not checked: the WRs did not succeed", sc);
		if (rdma_disconnect(c->ep.id))
			vt_fail("rdma_disconnect", "s%d: %s", sc,
				strerror(errno));
	} else {
		snprintf(name, sizeof(name), "s%d client QP in ERR", sc);
		check_qp_err(name, c->ep.id->qp, RA_QP_ERR_MS);
	}
	client_wait_disconnected(c, sc);
	vt_ep_close(&c->ep);
}

/* Post one batch of FetchAdd 1 on the shared word; results from @slot. */
static int conc_post(struct ra_client *c, int slot)
{
	struct vt_op ops[RA_CONC_BATCH];
	int i;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < RA_CONC_BATCH; i++) {
		ops[i].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		ops[i].loff = RA_L_CONC + 8 * (slot + i);
		ops[i].len = 8;
		ops[i].raddr = c->peer.atom_addr + 8 * RA_CONC_WORD;
		ops[i].rkey = c->peer.atom_rkey;
		ops[i].compare_add = 1;
	}
	return vt_post_ops(c->ep.id->qp, c->buf, c->ep.mr->lkey, ops,
			   RA_CONC_BATCH);
}

/* A batch's completions: all there, successful FetchAdds of 8 bytes. */
static bool conc_reap(struct ra_client *c, const char *qp_name)
{
	struct ibv_wc wc[RA_CONC_BATCH];
	int got, i;

	got = vt_poll_cq_until(c->ep.cq, wc, RA_CONC_BATCH,
			       vt_deadline_in(RA_CQ_MS));
	for (i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_FETCH_ADD || wc[i].byte_len != 8)
			break;
	if (got == RA_CONC_BATCH && i == got)
		return true;
	vt_fail("s9/s10 FetchAdds complete", "QP %s: %d of %d completions, "
		"%s", qp_name, got, RA_CONC_BATCH,
		i < got ? vt_wc_status_name(wc[i].status) : "timed out");
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The originals returned over both QPs, sorted, must be INIT, INIT + 1,
 * ...: each add was applied once, atomically with the other QP's.
 */
static void conc_check_values(const uint8_t *buf)
{
	static uint64_t v[2 * RA_CONC_OPS];
	int i;

	for (i = 0; i < 2 * RA_CONC_OPS; i++)
		v[i] = load_u64(buf + RA_L_CONC + 8 * i);
	qsort(v, 2 * RA_CONC_OPS, sizeof(v[0]), cmp_u64);
	for (i = 0; i < 2 * RA_CONC_OPS; i++)
		if (v[i] != RA_ATOM_INIT + (uint64_t)i)
			break;
	vt_check(i == 2 * RA_CONC_OPS,
		 "s9/s10 each original value returned exactly once",
		 "sorted value %d is %#llx, expected %#llx", i,
		 i < 2 * RA_CONC_OPS ? (unsigned long long)v[i] : 0ULL,
		 (unsigned long long)(RA_ATOM_INIT + (uint64_t)i));
}

/* s9 and s10: two QPs adding to one word in alternating batches. */
static void client_concurrent(struct ra_client *a, struct ra_client *b)
{
	bool ok = true;
	int slot;

	vt_info("s9/s10: %d FetchAdds of 1 from each of two QPs",
		RA_CONC_OPS);
	client_fill(a);
	b->buf = a->buf;
	b->dst = a->dst;
	if (!client_connect_retry(a, RA_S_CONC_A, false))
		return;
	if (!client_connect_retry(b, RA_S_CONC_B, false)) {
		rdma_disconnect(a->ep.id);
		vt_ep_close(&a->ep);
		return;
	}
	for (slot = 0; ok && slot < RA_CONC_OPS; slot += RA_CONC_BATCH) {
		ok = !conc_post(a, slot) &&
		     !conc_post(b, RA_CONC_OPS + slot);
		if (!ok)
			vt_fail("s9/s10 post", "ibv_post_send failed");
		ok = ok && conc_reap(a, "a");
		ok = ok && conc_reap(b, "b");
	}
	if (ok)
		conc_check_values(a->buf);
	if (rdma_disconnect(a->ep.id) || rdma_disconnect(b->ep.id))
		vt_fail("rdma_disconnect", "s9/s10: %s", strerror(errno));
	client_wait_disconnected(a, RA_S_CONC_A);
	client_wait_disconnected(b, RA_S_CONC_B);
	vt_ep_close(&a->ep);
	vt_ep_close(&b->ep);
}

static int run_client(const char *host, const char *port)
{
	struct ra_client c = { 0 }, c2 = { 0 };
	int sc;

	if (vt_resolve(host, port, false, &c.dst))
		return -1;
	c.buf = aligned_alloc(4096, RA_CBUF_LEN);
	if (!c.buf) {
		vt_fail("setup", "out of memory");
		return -1;
	}
	for (sc = 0; sc < RA_NUM_SCENARIOS; sc++) {
		if (!vt_ms_left(vt_run_deadline)) {
			vt_fail("run time",
				"s%d and later not run: out of time", sc);
			break;
		}
		if (sc == RA_S_CONC_A) {
			client_concurrent(&c, &c2);
			sc++;
			continue;
		}
		client_scenario(&c, sc, sc == 0);
		if (sc == 0 && !c.peer.magic) {
			vt_fail("run", "s1..s%d not run: s0 never connected",
				RA_NUM_SCENARIOS - 1);
			break;
		}
	}
	free(c.buf);
	return 0;
}

/* ---- server -------------------------------------------------------------- */

struct ra_conn {
	struct vt_ep ep;
	int scenario;
	bool established;
	long long accepted;	/* when the request came */
	long long deadline;
};

struct ra_server {
	struct vt_server srv;
	uint8_t *target;
	uint8_t *local;
	uint8_t *stale;
	uint64_t *atom;
	struct ibv_mr *mr_rw;
	struct ibv_mr *mr_local;
	struct ibv_mr *mr_atom;
	uint32_t stale_rkey;
	struct ra_conn conn[RA_NUM_SCENARIOS];
	bool done[RA_NUM_SCENARIOS];
};

static void atom_fill(uint64_t *atom)
{
	size_t i;

	for (i = 0; i < RA_ATOM_LEN / 8; i++)
		atom[i] = RA_ATOM_INIT;
}

/* atom, with the rights s5 needs and nothing else remote but READ. */
static int server_setup_atom(struct ra_server *s)
{
	s->atom = aligned_alloc(4096, RA_ATOM_LEN);
	if (!s->atom) {
		vt_fail("setup", "out of memory");
		return -1;
	}
	atom_fill(s->atom);
	s->mr_atom = ibv_reg_mr(s->srv.pd, s->atom, RA_ATOM_LEN,
				IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->mr_atom) {
		vt_fail("setup", "ibv_reg_mr(REMOTE_ATOMIC): %s",
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * target, mr_local, atom and a stale rkey, registered before any
 * connection.
 */
static int server_setup_mrs(struct ra_server *s)
{
	int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *stale;

	s->target = vt_alloc_filled(RA_TARGET_LEN, RA_TARGET_FILL);
	s->local = vt_alloc_filled(RA_LOCAL_LEN, RA_LOCAL_FILL);
	s->stale = vt_alloc_filled(RA_STALE_LEN, RA_STALE_FILL);
	if (!s->target || !s->local || !s->stale) {
		vt_fail("setup", "out of memory");
		return -1;
	}
	s->mr_rw = ibv_reg_mr(s->srv.pd, s->target, RA_TARGET_LEN, remote);
	s->mr_local = ibv_reg_mr(s->srv.pd, s->local, RA_LOCAL_LEN,
				 IBV_ACCESS_LOCAL_WRITE);
	if (server_setup_atom(s))
		return -1;
	/* Registered last so that no later registration reuses its index. */
	stale = ibv_reg_mr(s->srv.pd, s->stale, RA_STALE_LEN, remote);
	if (!s->mr_rw || !s->mr_local || !stale) {
		vt_fail("setup", "ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	s->stale_rkey = stale->rkey;
	if (ibv_dereg_mr(stale)) {
		vt_fail("setup", "ibv_dereg_mr: %s", strerror(errno));
		return -1;
	}
	vt_info("mr_rw rkey %#x, mr_local rkey %#x, stale rkey %#x, "
		"mr_atom rkey %#x", s->mr_rw->rkey, s->mr_local->rkey,
		s->stale_rkey, s->mr_atom->rkey);
	return 0;
}

static int server_listen(struct ra_server *s, const char *host,
			 const char *port)
{
	if (vt_server_open(&s->srv, host, port) || server_setup_mrs(s))
		return -1;
	return vt_server_listen(&s->srv, RA_NUM_SCENARIOS);
}

static void server_close(struct ra_server *s)
{
	if (s->mr_rw)
		ibv_dereg_mr(s->mr_rw);
	if (s->mr_local)
		ibv_dereg_mr(s->mr_local);
	if (s->mr_atom)
		ibv_dereg_mr(s->mr_atom);
	vt_server_close(&s->srv);
	free(s->target);
	free(s->local);
	free(s->stale);
	free(s->atom);
}

static void server_offer(const struct ra_server *s, int sc,
			 struct ra_offer *o)
{
	memset(o, 0, sizeof(*o));
	o->magic = htobe32(RA_MAGIC);
	o->scenario = htobe32(sc);
	o->rw_addr = htobe64((uintptr_t)s->target);
	o->local_addr = htobe64((uintptr_t)s->local);
	o->stale_addr = htobe64((uintptr_t)s->stale);
	o->rw_rkey = htobe32(s->mr_rw->rkey);
	o->local_rkey = htobe32(s->mr_local->rkey);
	o->stale_rkey = htobe32(s->stale_rkey);
	o->atom_rkey = htobe32(s->mr_atom->rkey);
	o->atom_addr = htobe64((uintptr_t)s->atom);
}

static void conn_free(struct ra_conn *conn)
{
	vt_ep_close(&conn->ep);
	memset(conn, 0, sizeof(*conn));
}

/* QP and CQ for a connection request, and rdma_accept with the offer. */
static int server_accept(struct ra_server *s, struct ra_conn *conn)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ra_offer offer;
	struct rdma_conn_param param = {
		.private_data = &offer,
		.private_data_len = sizeof(offer),
		.responder_resources = RA_RD_DEPTH,
		.initiator_depth = RA_RD_DEPTH,
	};

	if (vt_ep_qp(&conn->ep, s->srv.pd, 16, &attr)) {
		vt_fail("server accept", "s%d %s", conn->scenario,
			conn->ep.why);
		return -1;
	}
	server_offer(s, conn->scenario, &offer);
	if (rdma_accept(conn->ep.id, &param)) {
		vt_fail("server accept", "s%d rdma_accept: %s",
			conn->scenario, strerror(errno));
		return -1;
	}
	return 0;
}

static void server_request(struct ra_server *s, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;
	struct rdma_cm_id *id = ev->id;
	struct ra_hello hello = { 0 };
	struct ra_conn *conn;
	int sc;

	if (p->private_data && p->private_data_len >= sizeof(hello))
		memcpy(&hello, p->private_data, sizeof(hello));
	rdma_ack_cm_event(ev);
	sc = (int)be32toh(hello.scenario);
	if (be32toh(hello.magic) != RA_MAGIC || sc < 0 ||
	    sc >= RA_NUM_SCENARIOS || s->conn[sc].ep.id ||
	    id->verbs != s->srv.verbs) {
		vt_fail("server connect request", "rejected: magic %#x "
			"scenario %d%s", be32toh(hello.magic), sc,
			id->verbs != s->srv.verbs ? " on another device" : "");
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	conn = &s->conn[sc];
	conn->ep.id = id;
	conn->scenario = sc;
	conn->accepted = vt_now_ms();
	conn->deadline = vt_deadline_in(RA_SERVER_CONN_MS);
	id->context = conn;
	vt_info("server s%d: connection request", sc);
	if (server_accept(s, conn)) {
		rdma_reject(id, NULL, 0);
		conn_free(conn);
		s->done[sc] = true;
	}
}

/*
 * target after connection @sc: s0 leaves its pattern in [0, 4096), the
 * others nothing.  Should s0 still be open (its DISCONNECTED not handled
 * yet), [0, 4096) is left to it.  Restored to the fill afterwards, so
 * that each connection starts from the fill whatever happened.
 */
static void server_check_target(struct ra_server *s, int sc)
{
	size_t start = 0;
	char name[96];
	long off;

	if (sc == RA_S_VALID) {
		off = find_not_s0(s->target);
		vt_check(off < 0, "server s0 target[0, 4096) holds the WRITE",
			 "byte %ld is %#x, expected %#x", off,
			 off < 0 ? 0 : s->target[off],
			 off < 0 ? 0 : s0_byte(off));
		memset(s->target, RA_TARGET_FILL, RA_S0_LEN);
		start = RA_S0_LEN;
		snprintf(name, sizeof(name), "server s0 rest of target "
			 "unchanged");
	} else {
		if (s->conn[RA_S_VALID].ep.id)
			start = RA_S0_LEN;
		snprintf(name, sizeof(name), "server s%d target unchanged",
			 sc);
	}
	off = vt_find_not(s->target + start, RA_TARGET_LEN - start,
			  RA_TARGET_FILL);
	if (off >= 0)
		off += start;
	vt_check(off < 0, name, "byte %ld is %#x", off,
		 off < 0 ? 0 : s->target[off]);
	memset(s->target + start, RA_TARGET_FILL, RA_TARGET_LEN - start);
}

/* Whether connection @other, not @sc itself, is still open. */
static bool other_open(const struct ra_server *s, int sc, int other)
{
	return other != sc && s->conn[other].ep.id;
}

/*
 * atom after connection @sc.  s5 leaves ra_atom_after[] in words 0..2;
 * s9 and s10 together add 2 * RA_CONC_OPS to word RA_CONC_WORD, checked
 * when the second of them ends; everything else stays RA_ATOM_INIT.  The
 * words of a scenario still open are left to it; the rest is restored,
 * so that each connection starts from the fill whatever happened.
 */
static void server_check_atom(struct ra_server *s, int sc)
{
	bool s5_busy = other_open(s, sc, RA_S_ATOMIC);
	bool conc_busy = other_open(s, sc, RA_S_CONC_A) ||
			 other_open(s, sc, RA_S_CONC_B);
	bool conc = sc == RA_S_CONC_A || sc == RA_S_CONC_B;
	uint64_t want = RA_ATOM_INIT + 2 * RA_CONC_OPS;
	char name[96];
	long bad = -1;
	size_t i;

	for (i = 0; sc == RA_S_ATOMIC && i < 3; i++) {
		snprintf(name, sizeof(name),
			 "server s5 atom word %zu after atomics", i);
		vt_check(s->atom[i] == ra_atom_after[i], name,
			 "%#llx, expected %#llx",
			 (unsigned long long)s->atom[i],
			 (unsigned long long)ra_atom_after[i]);
	}
	if (conc && !conc_busy)
		vt_check(s->atom[RA_CONC_WORD] == want,
			 "server s9/s10 shared word holds every add",
			 "%#llx, expected %#llx",
			 (unsigned long long)s->atom[RA_CONC_WORD],
			 (unsigned long long)want);
	for (i = 0; i < RA_ATOM_LEN / 8 && bad < 0; i++) {
		if (i < 3 && (sc == RA_S_ATOMIC || s5_busy))
			continue;
		if (i == RA_CONC_WORD && (conc || conc_busy))
			continue;
		if (s->atom[i] != RA_ATOM_INIT)
			bad = (long)i;
	}
	snprintf(name, sizeof(name), "server s%d atom otherwise unchanged",
		 sc);
	vt_check(bad < 0, name, "word %ld is %#llx", bad,
		 bad < 0 ? 0ULL : (unsigned long long)s->atom[bad]);
	for (i = 0; i < RA_ATOM_LEN / 8; i++) {
		if ((i < 3 && s5_busy) || (i == RA_CONC_WORD && conc_busy))
			continue;
		s->atom[i] = RA_ATOM_INIT;
	}
}

/* After DISCONNECTED: the QP, the CQ, mr_local, target and atom. */
static void server_check(struct ra_server *s, struct ra_conn *conn)
{
	int sc = conn->scenario;
	char name[96];
	struct ibv_wc wc;
	long off;
	int got;

	snprintf(name, sizeof(name), "server s%d QP in ERR", sc);
	check_qp_err(name, conn->ep.id->qp, RA_QP_ERR_MS);

	got = ibv_poll_cq(conn->ep.cq, 1, &wc);
	snprintf(name, sizeof(name), "server s%d no completions", sc);
	vt_check(got == 0, name, "wr_id %llu status %s",
		 (unsigned long long)wc.wr_id,
		 got > 0 ? vt_wc_status_name(wc.status) : "poll error");

	off = vt_find_not(s->local, RA_LOCAL_LEN, RA_LOCAL_FILL);
	snprintf(name, sizeof(name), "server s%d mr_local unchanged", sc);
	vt_check(off < 0, name, "byte %ld is %#x", off,
		 off < 0 ? 0 : s->local[off]);
	memset(s->local, RA_LOCAL_FILL, RA_LOCAL_LEN);

	server_check_target(s, sc);
	server_check_atom(s, sc);
}

/* An event on an accepted connection. */
static void server_conn_event(struct ra_server *s, struct ra_conn *conn,
			      struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	int sc = conn->scenario;
	char name[64];

	rdma_ack_cm_event(ev);
	snprintf(name, sizeof(name), "server s%d established", sc);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		conn->established = true;
		vt_pass("%s", name);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!conn->established)
			vt_fail(name, "DISCONNECTED before ESTABLISHED");
		vt_pass("server s%d DISCONNECTED", sc);
		if (!ra_valid_scenario(sc))
			vt_info("server s%d DISCONNECTED status %d", sc,
				status);
		server_check(s, conn);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		vt_fail(name, "%s, status %d", rdma_event_str(type), status);
		break;
	default:
		vt_info("server s%d: ignoring %s", sc, rdma_event_str(type));
		return;
	}
	conn_free(conn);
	s->done[sc] = true;
}

/* The earliest deadline: the run's or a connection's. */
static long long server_next_deadline(struct ra_server *s)
{
	long long d = vt_run_deadline;
	int i;

	for (i = 0; i < RA_NUM_SCENARIOS; i++)
		if (s->conn[i].ep.id && s->conn[i].deadline < d)
			d = s->conn[i].deadline;
	return d;
}

/* Give up on connections that did not end in time. */
static void server_expire(struct ra_server *s)
{
	long long now = vt_now_ms();
	char name[64];
	int i;

	for (i = 0; i < RA_NUM_SCENARIOS; i++) {
		struct ra_conn *conn = &s->conn[i];

		if (!conn->ep.id || conn->deadline > now)
			continue;
		snprintf(name, sizeof(name), "server s%d %s", i,
			 conn->established ? "DISCONNECTED" : "established");
		vt_fail(name, "not within %lld ms of the connection request",
			now - conn->accepted);
		rdma_disconnect(conn->ep.id);
		conn_free(conn);
		s->done[i] = true;
	}
}

static void server_loop(struct ra_server *s)
{
	struct rdma_cm_event *ev;
	int i, rv;

	while (!vt_all_set(s->done, RA_NUM_SCENARIOS) &&
	       vt_ms_left(vt_run_deadline)) {
		rv = vt_server_event(s->srv.ch, server_next_deadline(s), &ev);
		if (rv == -ETIMEDOUT) {
			server_expire(s);
			continue;
		}
		if (rv)
			break;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			server_request(s, ev);
		else if (ev->id != s->srv.listen && ev->id->context)
			server_conn_event(s, ev->id->context, ev);
		else if (vt_stray_event(ev, true))
			break;
	}
	for (i = 0; i < RA_NUM_SCENARIOS; i++) {
		if (s->conn[i].ep.id) {
			vt_fail("server run time", "s%d still connected", i);
			rdma_disconnect(s->conn[i].ep.id);
			conn_free(&s->conn[i]);
		} else if (!s->done[i]) {
			vt_fail("server run time", "no connection for s%d", i);
		}
	}
}

VT_RUN_SERVER(struct ra_server, server_listen, server_loop, server_close);

/* ---- main ---------------------------------------------------------------- */

VT_MAIN(RA_DEFAULT_PORT, RA_CLIENT_SECS, RA_SERVER_SECS, run_client,
	run_server);
