// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_test: the scaffolding the functional tests share; see viw_test.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "viw_test.h"

int vt_passed, vt_failed;
size_t vt_detail_size = 256;
long long vt_run_deadline;

/* ---- report -------------------------------------------------------------- */

void vt_pass(const char *fmt, ...)
{
	va_list ap;

	printf("PASS ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	vt_passed++;
}

void vt_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	vt_failed++;
}

void vt_info(const char *fmt, ...)
{
	va_list ap;

	printf("INFO ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* PASS @name, or FAIL @name with the detail. */
void vt_check(bool ok, const char *name, const char *fmt, ...)
{
	char detail[512];
	size_t size = vt_detail_size;
	va_list ap;

	if (ok) {
		vt_pass("%s", name);
		return;
	}
	if (size > sizeof(detail))
		size = sizeof(detail);
	va_start(ap, fmt);
	vsnprintf(detail, size, fmt, ap);
	va_end(ap);
	vt_fail(name, "%s", detail);
}

/* ---- time ---------------------------------------------------------------- */

long long vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A deadline @ms from now, never past the end of the run. */
long long vt_deadline_in(int ms)
{
	long long d = vt_now_ms() + ms;

	return d < vt_run_deadline ? d : vt_run_deadline;
}

int vt_ms_left(long long deadline)
{
	long long left = deadline - vt_now_ms();

	return left > 0 ? (int)left : 0;
}

/* ---- verbs --------------------------------------------------------------- */

/* Entry @v of the @n @names, or @none if @v is outside or has none. */
const char *vt_name_of(const char *const *names, size_t n, int v,
		       const char *none)
{
	return v >= 0 && (size_t)v < n && names[v] ? names[v] : none;
}

/* The RDMA device called @name, opened; NULL if there is none. */
struct ibv_context *vt_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL), **d;
	struct ibv_context *ctx = NULL;

	for (d = list; d && *d && !ctx; d++)
		if (!strcmp(ibv_get_device_name(*d), name))
			ctx = ibv_open_device(*d);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* A QP state's name; a negative @state is -errno from vt_qp_state(). */
const char *vt_qp_state_str(int state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return state < 0 ? strerror(-state) : VT_NAME(names, state, "?");
}

/* A completion status without its IBV_WC_ prefix, "UNKNOWN" if none. */
const char *vt_wc_status_name(enum ibv_wc_status s)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "SUCCESS",
		[IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
		[IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
		[IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
		[IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
		[IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
		[IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR",
		[IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
		[IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
		[IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
		[IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
		[IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
		[IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
		[IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
		[IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
		[IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
		[IBV_WC_FATAL_ERR] = "FATAL_ERR",
		[IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
		[IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
	};

	return VT_NAME(names, s, "UNKNOWN");
}

/* A completion opcode without its IBV_WC_ prefix, "?" if none. */
const char *vt_wc_opcode_name(enum ibv_wc_opcode op)
{
	static const char *const names[] = {
		[IBV_WC_SEND] = "SEND",
		[IBV_WC_RDMA_WRITE] = "RDMA_WRITE",
		[IBV_WC_RDMA_READ] = "RDMA_READ",
		[IBV_WC_COMP_SWAP] = "COMP_SWAP",
		[IBV_WC_FETCH_ADD] = "FETCH_ADD",
		[IBV_WC_BIND_MW] = "BIND_MW",
		[IBV_WC_LOCAL_INV] = "LOCAL_INV",
		[IBV_WC_RECV] = "RECV",
		[IBV_WC_RECV_RDMA_WITH_IMM] = "RECV_RDMA_WITH_IMM",
	};

	return VT_NAME(names, op, "?");
}

/* The QP state from the kernel, or -errno. */
int vt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rv = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);

	return rv ? -rv : (int)attr.qp_state;
}

/*
 * Poll until @n completions arrived or @deadline passed; how many came
 * (no sleeping if @deadline is 0: one pass until the CQ is empty).  At
 * most 64 a call, so that one call never asks for a huge batch.
 */
int vt_poll_cq_until(struct ibv_cq *cq, struct ibv_wc *wc, int n,
		     long long deadline)
{
	int got = 0;

	while (got < n) {
		int rv = ibv_poll_cq(cq, n - got > 64 ? 64 : n - got,
				     wc + got);

		if (rv < 0)
			return got;
		got += rv;
		if (!rv) {
			if (vt_now_ms() >= deadline)
				break;
			usleep(1000);
		}
	}
	return got;
}

/*
 * After a non-blocking read of @fd failed (errno): wait until @fd is
 * readable or @deadline passed.  0 to read again, -ETIMEDOUT, or -errno
 * for a failure other than "nothing yet".
 */
int vt_wait_readable(int fd, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ms;

	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -errno;
	ms = vt_ms_left(deadline);
	if (!ms)
		return -ETIMEDOUT;
	if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* Poll the state until it is @want or @ms passed; the last state seen. */
int vt_wait_qp_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms)
{
	long long end = vt_deadline_in(ms);
	int state;

	for (;;) {
		state = vt_qp_state(qp);
		if (state == (int)want || state < 0 || vt_now_ms() >= end)
			return state;
		usleep(10000);
	}
}

/*
 * A completion event of @cq on its non-blocking channel @cc, waiting at
 * most until @deadline: 0, -ETIMEDOUT, -EPROTO for another CQ's event, or
 * -errno.
 */
int vt_wait_cq_event(struct ibv_comp_channel *cc, struct ibv_cq *cq,
		     long long deadline)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	for (;;) {
		int rv;

		if (!ibv_get_cq_event(cc, &ev_cq, &ev_ctx)) {
			ibv_ack_cq_events(ev_cq, 1);
			return ev_cq == cq ? 0 : -EPROTO;
		}
		rv = vt_wait_readable(cc->fd, deadline);
		if (rv)
			return rv;
	}
}

/* One receive of @n SGEs; ibv_post_recv()'s result. */
int vt_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
		 int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = n,
	}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

bool vt_is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/* The remote half of @op's work request. */
static void vt_op_remote(struct ibv_send_wr *wr, const struct vt_op *op)
{
	if (vt_is_atomic(op->opcode)) {
		wr->wr.atomic.remote_addr = op->raddr;
		wr->wr.atomic.rkey = op->rkey;
		wr->wr.atomic.compare_add = op->compare_add;
		wr->wr.atomic.swap = op->swap;
	} else if (op->opcode == IBV_WR_SEND_WITH_INV) {
		wr->num_sge = 0;
		wr->invalidate_rkey = op->rkey;
	} else {
		wr->wr.rdma.remote_addr = op->raddr;
		wr->wr.rdma.rkey = op->rkey;
	}
}

/*
 * Post @ops as one list of signaled WRs, wr_id = their index, so that all
 * are in the send queue before the peer can answer the first: a READ
 * behind a violating WRITE is then outstanding when the TERMINATE comes,
 * and takes its status.  ibv_post_send()'s result, or EINVAL for more than
 * VT_MAX_OPS.
 */
int vt_post_ops(struct ibv_qp *qp, uint8_t *buf, uint32_t lkey,
		const struct vt_op *ops, int n)
{
	struct ibv_send_wr wr[VT_MAX_OPS], *bad;
	struct ibv_sge sge[VT_MAX_OPS];
	int i;

	if (n < 1 || n > VT_MAX_OPS)
		return EINVAL;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)(buf + ops[i].loff),
			.length = ops[i].len,
			.lkey = lkey,
		};
		wr[i].wr_id = i;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = ops[i].opcode;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		vt_op_remote(&wr[i], &ops[i]);
	}
	return ibv_post_send(qp, wr, &bad);
}

/* ---- connections made by modify_qp -------------------------------------- */

/* An IPv4 address as its IPv4-mapped GID, or an IPv6 address. */
int vt_parse_gid(const char *s, union ibv_gid *gid)
{
	struct in_addr a4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, s, &a4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, gid->raw) == 1 ? 0 : -1;
}

int vt_qp_to_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT->RTR as ibv_rc_pingpong does it: this starts the connection. */
int vt_qp_to_rtr(struct ibv_qp *qp, int sgid_index,
		 const union ibv_gid *dgid, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn,
		.rq_psn = 0x1234,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = *dgid, .hop_limit = 1,
				 .sgid_index = sgid_index },
		},
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

int vt_qp_to_rts(struct ibv_qp *qp, int timeout, int retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = timeout,
		.retry_cnt = retry,
		.rnr_retry = 7,
		.sq_psn = 0x4321,
		.max_rd_atomic = 1,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * The next async event of @ctx, waiting at most @ms: its type, -1 if none
 * came, -2 if it is not about @qp.
 */
int vt_qp_async_event(struct ibv_context *ctx, struct ibv_qp *qp, int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	vt_set_nonblock(ctx->async_fd);
	if (poll(&p, 1, ms) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	if (ev.element.qp != qp)
		type = -2;
	ibv_ack_async_event(&ev);
	return type;
}

/*
 * Write @qpn to @path (if not NULL) for the peer's process or the shell:
 * through a rename, so that a reader never sees half a number.
 */
void vt_publish_qpn(const char *path, uint32_t qpn)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%u\n", qpn);
	fclose(f);
	rename(tmp, path);
}

/* ---- buffers ------------------------------------------------------------- */

/* @len bytes of @fill, page aligned; NULL if out of memory. */
void *vt_alloc_filled(size_t len, uint8_t fill)
{
	void *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (p)
		memset(p, fill, len);
	return p;
}

/* The offset of the first byte of @buf that is not @fill, or -1. */
long vt_find_not(const uint8_t *buf, size_t len, uint8_t fill)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != fill)
			return (long)i;
	return -1;
}

bool vt_all_set(const bool *done, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!done[i])
			return false;
	return true;
}

/* ---- addresses and rdma_cm ----------------------------------------------- */

/* getaddrinfo into @ss: 0, or the getaddrinfo error for gai_strerror(). */
int vt_getaddr(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0),
	};
	struct addrinfo *res;
	int rv = getaddrinfo(host, port, &hints, &res);

	if (rv)
		return rv;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* vt_getaddr(), a failure reported as FAIL setup; 0 or -1. */
int vt_resolve(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss)
{
	int rv = vt_getaddr(host, port, passive, ss);

	if (rv) {
		vt_fail("setup", "getaddrinfo %s port %s: %s", host, port,
			gai_strerror(rv));
		return -1;
	}
	return 0;
}

/* O_NONBLOCK on @fd, so that a wait on it can be bounded by poll(). */
int vt_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * A non-blocking event channel, or NULL with a description in @why.
 * Non-blocking so that every wait for an event can have a deadline.
 */
struct rdma_event_channel *vt_create_channel(char *why, size_t why_len)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	int rv;

	if (!ch) {
		snprintf(why, why_len, "rdma_create_event_channel: %s (no "
			 "RDMA device, or rdma_ucm not loaded?)",
			 strerror(errno));
		return NULL;
	}
	rv = vt_set_nonblock(ch->fd);
	if (rv) {
		snprintf(why, why_len, "fcntl O_NONBLOCK: %s", strerror(-rv));
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

/*
 * The end of a resolution that @call started (its result @rv): the event
 * @want within @ms.  0, or -errno with a description in @why.
 */
static int vt_resolved(struct rdma_event_channel *ch, int rv,
		       const char *call, enum rdma_cm_event_type want, int ms,
		       char *why, size_t why_len)
{
	struct rdma_cm_event *ev;

	if (rv) {
		rv = -errno;
		snprintf(why, why_len, "%s: %s", call, strerror(errno));
		return rv;
	}
	rv = vt_cm_expect(ch, want, ms, &ev, why, why_len);
	if (!rv)
		rdma_ack_cm_event(ev);
	return rv;
}

/*
 * A client's id, with a new non-blocking channel, resolved to @dst (address
 * and route, each resolution bounded by @resolve_ms and its event by
 * @event_ms).  *@ch and *@id are set as soon as they exist, for the caller
 * to destroy; @ctx is the id's context.  0, or -errno with a description
 * in @why.
 */
int vt_route_client(struct sockaddr_storage *dst, void *ctx, int resolve_ms,
		    int event_ms, struct rdma_event_channel **ch,
		    struct rdma_cm_id **id, char *why, size_t why_len)
{
	int rv;

	*ch = vt_create_channel(why, why_len);
	if (!*ch)
		return -ENODEV;
	if (rdma_create_id(*ch, id, ctx, RDMA_PS_TCP)) {
		rv = -errno;
		snprintf(why, why_len, "rdma_create_id: %s", strerror(errno));
		return rv;
	}
	rv = rdma_resolve_addr(*id, NULL, (struct sockaddr *)dst, resolve_ms);
	rv = vt_resolved(*ch, rv, "rdma_resolve_addr",
			 RDMA_CM_EVENT_ADDR_RESOLVED, event_ms, why, why_len);
	if (rv)
		return rv;
	rv = rdma_resolve_route(*id, resolve_ms);
	return vt_resolved(*ch, rv, "rdma_resolve_route",
			   RDMA_CM_EVENT_ROUTE_RESOLVED, event_ms, why, why_len);
}

/*
 * A listening server's id bound to @host:@port on a new non-blocking
 * channel, on an RDMA device; 0, or -1 after a FAIL setup line.  *@ch and
 * *@listen are set as soon as they exist, for the caller to destroy.  The
 * id has no context: accepted ids get theirs, other ids must have none.
 */
int vt_bind_listener(const char *host, const char *port,
		     struct rdma_event_channel **ch,
		     struct rdma_cm_id **listen)
{
	struct sockaddr_storage ss;
	char why[256];

	if (vt_resolve(host, port, true, &ss))
		return -1;
	*ch = vt_create_channel(why, sizeof(why));
	if (!*ch) {
		vt_fail("setup", "%s", why);
		return -1;
	}
	if (rdma_create_id(*ch, listen, NULL, RDMA_PS_TCP)) {
		vt_fail("setup", "rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_bind_addr(*listen, (struct sockaddr *)&ss)) {
		vt_fail("setup", "rdma_bind_addr %s: %s", host,
			strerror(errno));
		return -1;
	}
	if (!(*listen)->verbs) {
		vt_fail("setup", "%s is not the address of an RDMA device",
			host);
		return -1;
	}
	return 0;
}

/* The next CM event, waiting at most until @deadline; 0 or -errno. */
int vt_cm_get(struct rdma_event_channel *ch, long long deadline,
	      struct rdma_cm_event **ev)
{
	for (;;) {
		int rv;

		if (!rdma_get_cm_event(ch, ev))
			return 0;
		rv = vt_wait_readable(ch->fd, deadline);
		if (rv)
			return rv;
	}
}

/*
 * The next event must be @want.  Returns 0 with *@ev to ack, or -errno
 * with a description in @why: -ECONNREFUSED when the peer refused or
 * could not be reached (a client may retry that while its server starts),
 * -EPROTO for any other event.
 */
int vt_cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		 int ms, struct rdma_cm_event **ev, char *why, size_t why_len)
{
	long long start = vt_now_ms();
	int rv = vt_cm_get(ch, vt_deadline_in(ms), ev);

	if (rv) {
		snprintf(why, why_len, "no %s within %lld ms: %s",
			 rdma_event_str(want), vt_now_ms() - start,
			 strerror(-rv));
		return rv;
	}
	if ((*ev)->event == want)
		return 0;
	snprintf(why, why_len, "got %s (status %d), expected %s",
		 rdma_event_str((*ev)->event), (*ev)->status,
		 rdma_event_str(want));
	rv = (*ev)->event == RDMA_CM_EVENT_REJECTED ||
	     (*ev)->event == RDMA_CM_EVENT_CONNECT_ERROR ||
	     (*ev)->event == RDMA_CM_EVENT_UNREACHABLE ?
	     -ECONNREFUSED : -EPROTO;
	rdma_ack_cm_event(*ev);
	return rv;
}

/*
 * A server bound to @host:@port, on an RDMA device, with a PD: 0, or -1
 * after a FAIL setup line.  vt_server_close() frees what it made.
 */
int vt_server_open(struct vt_server *srv, const char *host, const char *port)
{
	if (vt_bind_listener(host, port, &srv->ch, &srv->listen))
		return -1;
	srv->verbs = srv->listen->verbs;
	vt_info("server on %s port %s, device %s", host, port,
		ibv_get_device_name(srv->verbs->device));
	srv->pd = ibv_alloc_pd(srv->verbs);
	if (!srv->pd) {
		vt_fail("setup", "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* rdma_listen, once the server is ready: 0, or -1 after FAIL setup. */
int vt_server_listen(struct vt_server *srv, int backlog)
{
	if (rdma_listen(srv->listen, backlog)) {
		vt_fail("setup", "rdma_listen: %s", strerror(errno));
		return -1;
	}
	vt_info("listening");
	return 0;
}

void vt_server_close(struct vt_server *srv)
{
	if (srv->pd)
		ibv_dealloc_pd(srv->pd);
	if (srv->listen)
		rdma_destroy_id(srv->listen);
	if (srv->ch)
		rdma_destroy_event_channel(srv->ch);
	memset(srv, 0, sizeof(*srv));
}

/*
 * A server's next event, waiting at most until @deadline: 0 with *@ev,
 * -ETIMEDOUT, or another -errno after a FAIL line.
 */
int vt_server_event(struct rdma_event_channel *ch, long long deadline,
		    struct rdma_cm_event **ev)
{
	int rv = vt_cm_get(ch, deadline, ev);

	if (rv && rv != -ETIMEDOUT)
		vt_fail("server events", "rdma_get_cm_event: %s",
			strerror(-rv));
	return rv;
}

/*
 * An event that no connection of a server claims: acked and reported, as
 * a FAIL if @fail, else as INFO.  True if the server cannot go on (its
 * device is gone).
 */
bool vt_stray_event(struct rdma_cm_event *ev, bool fail)
{
	enum rdma_cm_event_type type = ev->event;

	rdma_ack_cm_event(ev);
	if (fail)
		vt_fail("server events", "%s on the listening id",
			rdma_event_str(type));
	else
		vt_info("server: ignoring %s", rdma_event_str(type));
	return type == RDMA_CM_EVENT_DEVICE_REMOVAL;
}

/* ---- an RC endpoint ------------------------------------------------------ */

/* vt_route_client() into @ep. */
int vt_ep_route(struct vt_ep *ep, struct sockaddr_storage *dst, void *ctx,
		int resolve_ms, int event_ms)
{
	return vt_route_client(dst, ctx, resolve_ms, event_ms, &ep->ch,
			       &ep->id, ep->why, sizeof(ep->why));
}

/* A CQ of @cqe (on ep->cc if set) and ep->id's QP in @pd; 0 or -errno. */
int vt_ep_qp(struct vt_ep *ep, struct ibv_pd *pd, int cqe,
	     struct ibv_qp_init_attr *attr)
{
	struct ibv_context *verbs = ep->id->verbs;
	const char *step = "ibv_create_cq";
	int err;

	ep->cq = ibv_create_cq(verbs, cqe, NULL, ep->cc, 0);
	if (!ep->cq)
		goto err;
	attr->send_cq = ep->cq;
	attr->recv_cq = ep->cq;
	step = "rdma_create_qp";
	if (rdma_create_qp(ep->id, pd, attr))
		goto err;
	return 0;
err:
	err = errno;
	snprintf(ep->why, sizeof(ep->why), "%s on %s: %s", step,
		 ibv_get_device_name(verbs->device), strerror(err));
	return -err;
}

/*
 * A PD, an MR of @len bytes at @buf (LOCAL_WRITE; none if @buf is NULL),
 * then vt_ep_qp() in that PD.  0 or -errno.
 */
int vt_ep_alloc(struct vt_ep *ep, void *buf, size_t len, int cqe,
		struct ibv_qp_init_attr *attr)
{
	struct ibv_context *verbs = ep->id->verbs;
	const char *step = "ibv_alloc_pd";
	int err;

	ep->pd = ibv_alloc_pd(verbs);
	if (!ep->pd)
		goto err;
	step = "ibv_reg_mr";
	if (buf) {
		ep->mr = ibv_reg_mr(ep->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
		if (!ep->mr)
			goto err;
	}
	return vt_ep_qp(ep, ep->pd, cqe, attr);
err:
	err = errno;
	snprintf(ep->why, sizeof(ep->why), "%s on %s: %s", step,
		 ibv_get_device_name(verbs->device), strerror(err));
	return -err;
}

/*
 * The accept private data of a test's server, @pdata_len bytes at @pdata,
 * into the @len bytes of @out.  They start with two big-endian words, the
 * test's @magic and the scenario @sc.  0, or -EPROTO with a description in
 * @why.
 */
int vt_take_offer(const void *pdata, unsigned int pdata_len, void *out,
		  size_t len, uint32_t magic, uint32_t sc, char *why,
		  size_t why_len)
{
	uint32_t head[2];

	if (!pdata || pdata_len < len || len < sizeof(head)) {
		snprintf(why, why_len, "accept private data is %u bytes, "
			 "expected %zu", pdata_len, len);
		return -EPROTO;
	}
	memcpy(out, pdata, len);
	memcpy(head, out, sizeof(head));
	if (be32toh(head[0]) != magic || be32toh(head[1]) != sc) {
		snprintf(why, why_len, "accept private data: magic %#x "
			 "scenario %u", be32toh(head[0]), be32toh(head[1]));
		return -EPROTO;
	}
	return 0;
}

/*
 * rdma_connect with @param, and ESTABLISHED within @ms: 0 with *@ev to
 * ack, or -errno as vt_cm_expect() returns it.
 */
int vt_ep_connect(struct vt_ep *ep, const struct rdma_conn_param *param,
		  int ms, struct rdma_cm_event **ev)
{
	int rv;

	if (rdma_connect(ep->id, (struct rdma_conn_param *)param)) {
		rv = -errno;
		snprintf(ep->why, sizeof(ep->why), "rdma_connect: %s",
			 strerror(errno));
		return rv;
	}
	return vt_cm_expect(ep->ch, RDMA_CM_EVENT_ESTABLISHED, ms, ev, ep->why,
			    sizeof(ep->why));
}

/* Free what @ep holds, QP first; the pointers are cleared, @why kept. */
void vt_ep_close(struct vt_ep *ep)
{
	if (ep->id && ep->id->qp)
		rdma_destroy_qp(ep->id);
	if (ep->qp)
		ibv_destroy_qp(ep->qp);
	if (ep->cq)
		ibv_destroy_cq(ep->cq);
	if (ep->cc)
		ibv_destroy_comp_channel(ep->cc);
	if (ep->mr)
		ibv_dereg_mr(ep->mr);
	if (ep->pd)
		ibv_dealloc_pd(ep->pd);
	if (ep->id)
		rdma_destroy_id(ep->id);
	if (ep->ch)
		rdma_destroy_event_channel(ep->ch);
	ep->ch = NULL;
	ep->id = NULL;
	ep->pd = NULL;
	ep->mr = NULL;
	ep->cc = NULL;
	ep->cq = NULL;
	ep->qp = NULL;
}

/*
 * @connect(@arg) until it returns 0, or FAIL @name.  A failed try is
 * closed (vt_ep_close).  The first connection of a run is retried for
 * @retry_ms while it is refused (-ECONNREFUSED), in case the server is
 * not listening yet; the reason is in ep->why.
 */
bool vt_ep_connect_retry(struct vt_ep *ep, const char *name, bool first,
			 int retry_ms, int (*connect)(void *arg), void *arg)
{
	long long retry_end = vt_deadline_in(retry_ms);
	int rv;

	for (;;) {
		rv = connect(arg);
		if (!rv)
			return true;
		vt_ep_close(ep);
		if (!first || rv != -ECONNREFUSED || vt_now_ms() >= retry_end)
			break;
		vt_info("%s: %s; retrying", name, ep->why);
		usleep(200000);
	}
	vt_fail(name, "%s", ep->why);
	return false;
}

/* ---- main ---------------------------------------------------------------- */

static void vt_usage(const char *prog, const struct vt_prog *def)
{
	fprintf(stderr,
		"usage: %s -s BIND_ADDR [-p PORT] [-t SECS]   (server)\n"
		"       %s -c SERVER_ADDR [-p PORT] [-t SECS] (client)\n"
		"  -p PORT  TCP port (default %s)\n"
		"  -t SECS  bound on the whole run (default: client %d, "
		"server %d)\n", prog, prog, def->port, def->client_secs,
		def->server_secs);
}

/*
 * The next option of a test program: -s BIND_ADDR, -c SERVER_ADDR (only
 * one of them), -p PORT and -t SECS go into @args; any other, from @more
 * (getopt letters) or @longopts, is returned for the caller, with its
 * argument in optarg.  -1 at the end, '?' for one that is wrong.
 */
int vt_next_opt(int argc, char **argv, const char *more,
		const struct option *longopts, struct vt_args *args)
{
	char optstring[32];
	int opt;

	snprintf(optstring, sizeof(optstring), "s:c:p:t:%s", more);
	while ((opt = getopt_long(argc, argv, optstring, longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
		case 'c':
			if (args->addr)
				return '?';
			args->server = opt == 's';
			args->addr = optarg;
			break;
		case 'p':
			args->port = optarg;
			break;
		case 't':
			args->secs = atoi(optarg);
			break;
		default:
			return opt;
		}
	}
	return -1;
}

/*
 * The options of a client/server program: -s BIND_ADDR or -c SERVER_ADDR,
 * [-p PORT] [-t SECS].  0, or 2 (the exit code) after printing the usage.
 */
static int vt_parse_args(int argc, char **argv, const struct vt_prog *def,
			 struct vt_args *args)
{
	*args = (struct vt_args){ .port = def->port };
	if (vt_next_opt(argc, argv, "h", NULL, args) != -1 || !args->addr ||
	    optind != argc || args->secs < 0) {
		vt_usage(argv[0], def);
		return 2;
	}
	if (!args->secs)
		args->secs = args->server ? def->server_secs :
					    def->client_secs;
	return 0;
}

/* Last resort if a verb blocks past the run's deadline (teardown, say). */
static void vt_watchdog(int sig)
{
	static const char msg[] = "FAIL watchdog: still running 5 s after "
				  "the run's deadline, stuck in a call\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(1);
}

/* Bound the run to @secs; the watchdog ends it 5 s after that. */
void vt_start(int secs)
{
	vt_run_deadline = vt_now_ms() + secs * 1000LL;
	signal(SIGALRM, vt_watchdog);
	alarm(secs + 5);
}

/* The final "N passed, N failed" line; the exit code. */
int vt_finish(void)
{
	if (!vt_passed && !vt_failed)
		vt_fail("run", "no check ran");
	printf("%d passed, %d failed\n", vt_passed, vt_failed);
	return vt_failed ? 1 : 0;
}

/*
 * main() of a client/server program: parse the options, bound the run,
 * run the side asked for and report.  The exit code: 0 if all passed, 1
 * if a check failed, 2 on bad options.
 */
int vt_main(int argc, char **argv, const struct vt_prog *prog)
{
	struct vt_args args;
	int rv;

	/* Line buffered: the harness reads the lines as they come. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rv = vt_parse_args(argc, argv, prog, &args);
	if (rv)
		return rv;
	vt_start(args.secs);

	if (args.server)
		prog->run_server(args.addr, args.port);
	else
		prog->run_client(args.addr, args.port);
	return vt_finish();
}
