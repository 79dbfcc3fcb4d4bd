// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_target: the viw side of the raw-peer tests.  An rdma_cm server (or
 * client) on a viw device that registers one MR, posts receives, and then
 * only watches: it prints each CM event, completion and async event as a
 * line, and at the end the QP state and whether the MR's bytes changed.
 * The peer is tests/tools/viw_peer, which speaks MPA/DDP/RDMAP byte by
 * byte; a shell test greps both outputs (tests/vm/README.md).
 *
 *   viw_target -s HOST PORT [options]   listen on HOST, accept one connection
 *   viw_target -c HOST PORT [options]   connect to a "viw_peer -l PORT"
 *
 * Lines: "CM EVENT name status S", "WC opcode O status S len L",
 * "ASYNC name", "INFO STAG 0x.. ADDR 0x.. LEN n QPN n", "DEREG rc R secs S",
 * "DISCONNECT rc R", "QPSTATE name", "MR CHANGED off..end" (byte offsets,
 * end exclusive, one line per changed run) or "MR UNCHANGED",
 * "RECVBUF i off..end 0xNN ..." (--show-recv), "EXIT rc".
 * Exit 0 unless a verb failed unexpectedly (1), or bad options (2).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_test.h"

#define TG_WR_SEND	1
#define TG_WR_WRITE	2
#define TG_WR_READ	3
#define TG_WR_RECV	100	/* + index of the receive buffer */
#define TG_MAX_RUNS	16

struct tg_opts {
	const char *host;
	const char *port;
	bool server;
	size_t mr_size;
	int recv;
	size_t recv_size;
	size_t send_len, write_len, read_len;
	bool do_send, do_write, do_read;
	bool imm;			/* SEND and WRITE with immediate data */
	uint32_t rstag;
	uint64_t rto;
	double dereg_after;		/* < 0: never */
	double disconnect_after;	/* < 0: never */
	double run;
	const char *info;
	bool until_disconnect;
	bool reject;
	int ird, ord;
	size_t pdata;			/* private data in connect/accept */
	int backlog;
	bool no_accept;			/* leave connection requests pending */
	double qp_error_after;		/* < 0: never */
	double qp_reset_after;		/* < 0: never */
	int mr_access;			/* IBV_ACCESS_REMOTE_* of the MR */
	bool show_recv;
};

struct tg {
	struct tg_opts o;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;		/* the one the peer targets */
	uint8_t *mem;
	struct ibv_mr *op_mr;		/* receive buffers, op source/sink */
	uint8_t *op_buf;
	size_t op_size;
	long long est_ms;		/* when ESTABLISHED came; 0: not yet */
	long long end_ms;
	bool dereg_done, disc_done, ops_done, info_done, err_done, reset_done;
	uint8_t pdata[256];
	bool failed;
};

/*
 * What the MR holds before anyone writes: bytes 0x00..0x7f only, so that
 * viw_peer's default fill (0xa5) differs from every byte.
 */
static uint8_t tg_pattern(size_t i)
{
	return (uint8_t)((i * 7 + 3) & 0x7f);
}

static void tg_verb_failed(struct tg *t, const char *what, int err)
{
	printf("FAIL %s: %s\n", what, strerror(err));
	t->failed = true;
}

/* ---- names ------------------------------------------------------------------ */

static const char *tg_cm_name(enum rdma_cm_event_type e)
{
	const char *s = rdma_event_str(e);

	return strncmp(s, "RDMA_CM_EVENT_", 14) ? s : s + 14;
}

static const char *tg_async_name(enum ibv_event_type e)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ_ERR",
		[IBV_EVENT_QP_FATAL] = "QP_FATAL",
		[IBV_EVENT_QP_REQ_ERR] = "QP_REQ_ERR",
		[IBV_EVENT_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
		[IBV_EVENT_COMM_EST] = "COMM_EST",
		[IBV_EVENT_SQ_DRAINED] = "SQ_DRAINED",
		[IBV_EVENT_PATH_MIG] = "PATH_MIG",
		[IBV_EVENT_PATH_MIG_ERR] = "PATH_MIG_ERR",
		[IBV_EVENT_DEVICE_FATAL] = "DEVICE_FATAL",
		[IBV_EVENT_PORT_ACTIVE] = "PORT_ACTIVE",
		[IBV_EVENT_PORT_ERR] = "PORT_ERR",
		[IBV_EVENT_LID_CHANGE] = "LID_CHANGE",
		[IBV_EVENT_PKEY_CHANGE] = "PKEY_CHANGE",
		[IBV_EVENT_SM_CHANGE] = "SM_CHANGE",
		[IBV_EVENT_SRQ_ERR] = "SRQ_ERR",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ_LIMIT_REACHED",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "QP_LAST_WQE_REACHED",
		[IBV_EVENT_CLIENT_REREGISTER] = "CLIENT_REREGISTER",
		[IBV_EVENT_GID_CHANGE] = "GID_CHANGE",
		[IBV_EVENT_WQ_FATAL] = "WQ_FATAL",
	};

	return VT_NAME(names, e, "UNKNOWN");
}

/* The opcode from our own wr_id: right even for flushed completions. */
static const char *tg_wr_name(uint64_t wr_id)
{
	switch (wr_id) {
	case TG_WR_SEND:
		return "SEND";
	case TG_WR_WRITE:
		return "RDMA_WRITE";
	case TG_WR_READ:
		return "RDMA_READ";
	default:
		return wr_id >= TG_WR_RECV ? "RECV" : "UNKNOWN";
	}
}

/* ---- resources --------------------------------------------------------------- */

static uint8_t *tg_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1))
		return NULL;
	return p;
}

static int tg_reg_mrs(struct tg *t)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | t->o.mr_access;
	size_t i, ops = t->o.send_len;

	if (t->o.write_len > ops)
		ops = t->o.write_len;
	if (t->o.read_len > ops)
		ops = t->o.read_len;
	t->op_size = ops + (size_t)t->o.recv * t->o.recv_size;
	t->op_buf = tg_alloc(t->op_size);
	if (!t->op_buf)
		return -ENOMEM;
	for (i = 0; i < t->op_size; i++)
		t->op_buf[i] = 0x33;
	t->op_mr = ibv_reg_mr(t->pd, t->op_buf, t->op_size ? t->op_size : 1,
			      IBV_ACCESS_LOCAL_WRITE);
	if (!t->op_mr)
		return -errno;
	if (!t->o.mr_size)
		return 0;
	t->mem = tg_alloc(t->o.mr_size);
	if (!t->mem)
		return -ENOMEM;
	for (i = 0; i < t->o.mr_size; i++)
		t->mem[i] = tg_pattern(i);
	t->mr = ibv_reg_mr(t->pd, t->mem, t->o.mr_size, acc);
	return t->mr ? 0 : -errno;
}

static int tg_post_recvs(struct tg *t)
{
	size_t base = t->op_size - (size_t)t->o.recv * t->o.recv_size;
	int i;

	for (i = 0; i < t->o.recv; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(t->op_buf + base +
					    (size_t)i * t->o.recv_size),
			.length = (uint32_t)t->o.recv_size,
			.lkey = t->op_mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = TG_WR_RECV + i,
					  .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		int rv = ibv_post_recv(t->id->qp, &wr, &bad);

		if (rv)
			return -rv;
	}
	return 0;
}

/* PD, CQ, QP on @id's device, the MRs and the receives. */
static int tg_setup_qp(struct tg *t, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int rv;

	t->id = id;
	t->verbs = id->verbs;
	t->pd = ibv_alloc_pd(id->verbs);
	if (!t->pd)
		return tg_verb_failed(t, "ibv_alloc_pd", errno), -1;
	t->cq = ibv_create_cq(id->verbs, 256, NULL, NULL, 0);
	if (!t->cq)
		return tg_verb_failed(t, "ibv_create_cq", errno), -1;
	if (t->o.recv > 16)
		attr.cap.max_recv_wr = (uint32_t)t->o.recv;
	attr.send_cq = t->cq;
	attr.recv_cq = t->cq;
	if (rdma_create_qp(id, t->pd, &attr))
		return tg_verb_failed(t, "rdma_create_qp", errno), -1;
	rv = tg_reg_mrs(t);
	if (rv)
		return tg_verb_failed(t, "ibv_reg_mr", -rv), -1;
	rv = tg_post_recvs(t);
	if (rv)
		return tg_verb_failed(t, "ibv_post_recv", -rv), -1;
	if (vt_set_nonblock(id->verbs->async_fd))
		return tg_verb_failed(t, "fcntl async_fd", errno), -1;
	printf("QP created qpn %u\n", id->qp->qp_num);
	return 0;
}

/* Our private data is all 'T', so a test can tell it from the peer's. */
static struct rdma_conn_param tg_conn_param(struct tg *t)
{
	struct rdma_conn_param p = {
		.responder_resources = (uint8_t)t->o.ird,
		.initiator_depth = (uint8_t)t->o.ord,
		.private_data = t->pdata,
		.private_data_len = (uint8_t)t->o.pdata,
	};

	memset(t->pdata, 'T', sizeof(t->pdata));
	return p;
}

/* ---- after ESTABLISHED --------------------------------------------------------- */

/* "STAG .. ADDR .. LEN .. QPN .." into --info, atomically (rename). */
static void tg_write_info(struct tg *t)
{
	char tmp[4096];
	FILE *f;
	unsigned int stag = t->mr ? t->mr->rkey : 0;
	unsigned long long addr = (uintptr_t)t->mem;

	printf("INFO STAG 0x%x ADDR 0x%llx LEN %zu QPN %u\n", stag, addr,
	       t->o.mr_size, t->id->qp->qp_num);
	t->info_done = true;
	if (!t->o.info)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", t->o.info);
	f = fopen(tmp, "w");
	if (!f) {
		tg_verb_failed(t, "open --info file", errno);
		return;
	}
	fprintf(f, "STAG 0x%x ADDR 0x%llx LEN %zu QPN %u\n", stag, addr,
		t->o.mr_size, t->id->qp->qp_num);
	fclose(f);
	if (rename(tmp, t->o.info))
		tg_verb_failed(t, "rename --info file", errno);
}

static void tg_post_op(struct tg *t, uint64_t wr_id, enum ibv_wr_opcode op,
		       size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)t->op_buf,
			       .length = (uint32_t)len,
			       .lkey = t->op_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = len ? 1 : 0, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	int rv;

	wr.wr.rdma.rkey = t->o.rstag;
	wr.wr.rdma.remote_addr = t->o.rto;
	wr.imm_data = htonl(0x1234);
	rv = ibv_post_send(t->id->qp, &wr, &bad);
	printf("POST %s len %zu rc %d\n", tg_wr_name(wr_id), len, rv);
	if (rv)
		tg_verb_failed(t, "ibv_post_send", rv);
}

static void tg_do_ops(struct tg *t)
{
	t->ops_done = true;
	if (t->o.do_send)
		tg_post_op(t, TG_WR_SEND, t->o.imm ? IBV_WR_SEND_WITH_IMM :
			   IBV_WR_SEND, t->o.send_len);
	if (t->o.do_write)
		tg_post_op(t, TG_WR_WRITE, t->o.imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
			   IBV_WR_RDMA_WRITE, t->o.write_len);
	if (t->o.do_read)
		tg_post_op(t, TG_WR_READ, IBV_WR_RDMA_READ, t->o.read_len);
}

static void tg_established(struct tg *t)
{
	t->est_ms = vt_now_ms();
	if (!t->info_done)
		tg_write_info(t);
	if (!t->ops_done)
		tg_do_ops(t);
}

/* ---- events ------------------------------------------------------------------- */

/* End the run in 1 s, time for the flushes and async events to come. */
static void tg_end_soon(struct tg *t)
{
	long long end = vt_now_ms() + 1000;

	if (end < t->end_ms)
		t->end_ms = end;
}

static void tg_connect_request(struct tg *t, struct rdma_cm_event *ev)
{
	struct rdma_conn_param p = tg_conn_param(t);	/* fills t->pdata */

	printf("CONNECT_REQUEST pdata %u ird %u ord %u\n",
	       ev->param.conn.private_data_len,
	       ev->param.conn.responder_resources,
	       ev->param.conn.initiator_depth);
	if (t->o.no_accept) {
		printf("PENDING connection request left unanswered\n");
		return;
	}
	if (t->id) {
		printf("REJECT extra connection: rc %d\n", rdma_reject(ev->id,
		       NULL, 0));
		return;
	}
	if (t->o.reject) {
		printf("REJECT rc %d\n", rdma_reject(ev->id, t->pdata,
		       (uint8_t)t->o.pdata));
		/* no event follows a reject: that is the end of it */
		if (t->o.until_disconnect)
			tg_end_soon(t);
		return;
	}
	if (tg_setup_qp(t, ev->id))
		return;
	if (rdma_accept(ev->id, &p))
		tg_verb_failed(t, "rdma_accept", errno);
}

static bool tg_is_end_event(enum rdma_cm_event_type e)
{
	return e == RDMA_CM_EVENT_DISCONNECTED ||
	       e == RDMA_CM_EVENT_REJECTED ||
	       e == RDMA_CM_EVENT_CONNECT_ERROR ||
	       e == RDMA_CM_EVENT_UNREACHABLE ||
	       e == RDMA_CM_EVENT_DEVICE_REMOVAL;
}

/* "CM PDATA len N HEX" (the first 64 bytes) for events that carry it. */
static void tg_print_cm_pdata(const struct rdma_cm_event *ev)
{
	const uint8_t *p = ev->param.conn.private_data;
	unsigned int i, n = ev->param.conn.private_data_len;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST &&
	    ev->event != RDMA_CM_EVENT_ESTABLISHED &&
	    ev->event != RDMA_CM_EVENT_REJECTED &&
	    ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE)
		return;
	if (!n || !p)
		return;
	printf("CM PDATA len %u ", n);
	for (i = 0; i < n && i < 64; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static void tg_cm_event(struct tg *t, struct rdma_cm_event *ev)
{
	printf("CM EVENT %s status %d\n", tg_cm_name(ev->event), ev->status);
	tg_print_cm_pdata(ev);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		tg_connect_request(t, ev);
	else if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		tg_established(t);
	if (tg_is_end_event(ev->event) && t->o.until_disconnect)
		tg_end_soon(t);
	rdma_ack_cm_event(ev);
}

static void tg_drain_cm(struct tg *t)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(t->ch, &ev))
		tg_cm_event(t, ev);
}

static void tg_drain_async(struct tg *t)
{
	struct ibv_async_event ev;

	if (!t->verbs)
		return;
	while (!ibv_get_async_event(t->verbs, &ev)) {
		printf("ASYNC %s\n", tg_async_name(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

/* "fill 0xNN" if every byte is NN, else "mixed". */
static void tg_print_data(const char *what, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 1; i < len && p[i] == p[0]; i++)
		;
	if (!len)
		printf("%s DATA len 0\n", what);
	else if (i == len)
		printf("%s DATA len %zu fill 0x%02x\n", what, len, p[0]);
	else
		printf("%s DATA len %zu mixed\n", what, len);
}

static void tg_wc(struct tg *t, const struct ibv_wc *wc)
{
	size_t base = t->op_size - (size_t)t->o.recv * t->o.recv_size;

	printf("WC opcode %s status %s len %u\n", tg_wr_name(wc->wr_id),
	       vt_wc_status_name(wc->status), wc->byte_len);
	if (wc->status != IBV_WC_SUCCESS)
		return;
	if (wc->wr_id >= TG_WR_RECV)
		tg_print_data("RECV", t->op_buf + base + (wc->wr_id -
			      TG_WR_RECV) * t->o.recv_size,
			      wc->byte_len < t->o.recv_size ? wc->byte_len :
			      t->o.recv_size);
	else if (wc->wr_id == TG_WR_READ)
		tg_print_data("READ", t->op_buf, t->o.read_len);
}

static void tg_drain_cq(struct tg *t)
{
	struct ibv_wc wc[16];
	int n, i;

	if (!t->cq)
		return;
	while ((n = ibv_poll_cq(t->cq, 16, wc)) > 0)
		for (i = 0; i < n; i++)
			tg_wc(t, &wc[i]);
}

/* ---- timed actions -------------------------------------------------------------- */

static bool tg_due(const struct tg *t, double after)
{
	return after >= 0 && t->est_ms &&
	       vt_now_ms() >= t->est_ms + (long long)(after * 1000);
}

static void tg_modify(struct tg *t, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int rv = ibv_modify_qp(t->id->qp, &attr, IBV_QP_STATE);

	printf("MODIFY %s rc %d\n", vt_qp_state_str(state), rv);
}

static void tg_timers(struct tg *t)
{
	if (!t->err_done && tg_due(t, t->o.qp_error_after)) {
		t->err_done = true;
		tg_modify(t, IBV_QPS_ERR);
	}
	if (!t->reset_done && tg_due(t, t->o.qp_reset_after)) {
		t->reset_done = true;
		tg_modify(t, IBV_QPS_RESET);
	}
	if (!t->dereg_done && tg_due(t, t->o.dereg_after) && t->mr) {
		long long t0 = vt_now_ms();
		int rv;

		t->dereg_done = true;
		printf("DEREG begin\n");
		fflush(stdout);
		rv = ibv_dereg_mr(t->mr);
		printf("DEREG rc %d secs %.1f\n", rv,
		       (vt_now_ms() - t0) / 1000.0);
		if (!rv)
			t->mr = NULL;
	}
	if (!t->disc_done && tg_due(t, t->o.disconnect_after)) {
		int rv;

		t->disc_done = true;
		rv = rdma_disconnect(t->id);
		printf("DISCONNECT rc %d%s%s\n", rv, rv ? " errno " : "",
		       rv ? strerror(errno) : "");
	}
}

/* Watch everything until the end of the run. */
static void tg_loop(struct tg *t)
{
	while (vt_now_ms() < t->end_ms) {
		struct pollfd pfd[2] = {
			{ .fd = t->ch->fd, .events = POLLIN },
			{ .fd = t->verbs ? t->verbs->async_fd : -1,
			  .events = POLLIN },
		};

		poll(pfd, 2, 5);
		tg_drain_cm(t);
		tg_drain_async(t);
		tg_drain_cq(t);
		tg_timers(t);
	}
}

/* ---- the end ------------------------------------------------------------------ */

static void tg_report_mr(const struct tg *t)
{
	size_t i = 0, start;
	int runs = 0;

	if (!t->mem)
		return;
	while (i < t->o.mr_size) {
		if (t->mem[i] == tg_pattern(i)) {
			i++;
			continue;
		}
		start = i;
		while (i < t->o.mr_size && t->mem[i] != tg_pattern(i))
			i++;
		if (runs++ < TG_MAX_RUNS)
			printf("MR CHANGED %zu..%zu\n", start, i);
	}
	if (!runs)
		printf("MR UNCHANGED\n");
	else if (runs > TG_MAX_RUNS)
		printf("MR CHANGED %d runs in all\n", runs);
}

/* "RECVBUF i off..end 0xNN ...": runs of equal bytes in receive buffer i. */
static void tg_report_recv(const struct tg *t)
{
	size_t base = t->op_size - (size_t)t->o.recv * t->o.recv_size;
	size_t i, start;
	int r, runs;

	for (r = 0; t->o.show_recv && r < t->o.recv; r++) {
		const uint8_t *p = t->op_buf + base + (size_t)r * t->o.recv_size;

		printf("RECVBUF %d", r);
		for (i = 0, runs = 0; i < t->o.recv_size && runs < TG_MAX_RUNS;
		     runs++) {
			for (start = i; i < t->o.recv_size && p[i] == p[start];)
				i++;
			printf(" %zu..%zu 0x%02x", start, i, p[start]);
		}
		printf("%s\n", i < t->o.recv_size ? " ..." : "");
	}
}

static void tg_teardown(struct tg *t)
{
	if (t->id && t->id->qp) {
		printf("QPSTATE %s\n", vt_qp_state_str(vt_qp_state(t->id->qp)));
		rdma_destroy_qp(t->id);
	}
	tg_report_mr(t);
	tg_report_recv(t);
	fflush(stdout);
	if (t->mr)
		ibv_dereg_mr(t->mr);
	if (t->op_mr)
		ibv_dereg_mr(t->op_mr);
	if (t->cq)
		ibv_destroy_cq(t->cq);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->id)
		rdma_destroy_id(t->id);
	if (t->listen)
		rdma_destroy_id(t->listen);
	if (t->ch)
		rdma_destroy_event_channel(t->ch);
	free(t->mem);
	free(t->op_buf);
}

static int tg_server(struct tg *t)
{
	if (vt_bind_listener(t->o.host, t->o.port, &t->ch, &t->listen))
		return -1;
	if (rdma_listen(t->listen, t->o.backlog)) {
		tg_verb_failed(t, "rdma_listen", errno);
		return -1;
	}
	t->verbs = t->listen->verbs;
	if (vt_set_nonblock(t->verbs->async_fd)) {
		tg_verb_failed(t, "fcntl async_fd", errno);
		return -1;
	}
	printf("LISTENING %s port %s\n", t->o.host, t->o.port);
	return 0;
}

static int tg_client(struct tg *t)
{
	struct rdma_conn_param p = tg_conn_param(t);
	struct sockaddr_storage dst;
	struct rdma_cm_id *id = NULL;
	char why[256];

	if (vt_resolve(t->o.host, t->o.port, false, &dst))
		return -1;
	if (vt_route_client(&dst, NULL, 2000, 10000, &t->ch, &id, why,
			    sizeof(why))) {
		printf("FAIL resolve: %s\n", why);
		t->id = id;
		t->failed = true;
		return -1;
	}
	if (tg_setup_qp(t, id))
		return -1;
	if (rdma_connect(id, &p)) {
		tg_verb_failed(t, "rdma_connect", errno);
		return -1;
	}
	printf("CONNECTING %s port %s\n", t->o.host, t->o.port);
	return 0;
}

/* ---- options ------------------------------------------------------------------ */

static void tg_usage(void)
{
	fputs("usage: viw_target (-s HOST | -c HOST) PORT [options]\n"
	      "  -s HOST PORT  listen on HOST (a viw device's address), accept one\n"
	      "  -c HOST PORT  connect to HOST (e.g. viw_peer -l PORT)\n"
	      "  --mr-size N        register one MR of N bytes, remote read+write,\n"
	      "                     filled with bytes (7*i+3)&0x7f\n"
	      "  --recv N           post N receives of --recv-size bytes (4096)\n"
	      "  --send LEN | --write LEN | --read LEN\n"
	      "                     post one such op once ESTABLISHED (WRITE/READ\n"
	      "                     go to --rstag (0x1234) / --rto (0))\n"
	      "  --imm              the SEND and WRITE carry immediate data\n"
	      "  --dereg-after S    ibv_dereg_mr S s after ESTABLISHED\n"
	      "  --disconnect-after S  rdma_disconnect S s after ESTABLISHED\n"
	      "  --run S            total time (default 10), then tear down\n"
	      "  --until-disconnect end 1 s after DISCONNECTED/REJECTED/errors\n"
	      "  --info FILE        write \"STAG 0x.. ADDR 0x.. LEN n QPN n\" once\n"
	      "                     ESTABLISHED (for viw_peer -i FILE)\n"
	      "  --ird N --ord N    conn params (default 16)\n"
	      "  --reject           server: rdma_reject the request\n"
	      "  --no-accept        server: leave every request unanswered\n"
	      "  --mr-access rw|rwa|r|w|none  the MR's remote rights (default\n"
	      "                     rw; a: REMOTE_ATOMIC)\n"
	      "  --show-recv        at the end, print each receive buffer as runs\n"
	      "                     of equal bytes: RECVBUF i off..end 0xNN ...\n"
	      "  --backlog N        rdma_listen backlog (default 8); a server\n"
	      "                     accepts one connection and rejects the others\n"
	      "  --pdata N          N bytes of private data ('T') in connect/accept\n"
	      "  --qp-error-after S / --qp-reset-after S  ibv_modify_qp to ERR or\n"
	      "                     RESET S s after ESTABLISHED (\"MODIFY ERR rc R\")\n"
	      "Timed actions run in the order error, reset, dereg, disconnect.\n"
	      "Prints CM EVENT name status S (+ CM PDATA len N HEX), WC opcode O status S len L, ASYNC name,\n"
	      "RECV/READ DATA len L fill 0xNN|mixed, DEREG rc R secs S, DISCONNECT rc R,\n"
	      "QPSTATE name, MR CHANGED off..end (end exclusive) | MR UNCHANGED, EXIT rc\n",
	      stderr);
	exit(2);
}

enum {
	TG_O_MR = 256, TG_O_RECV, TG_O_RECV_SIZE, TG_O_SEND, TG_O_WRITE,
	TG_O_READ, TG_O_RSTAG, TG_O_RTO, TG_O_DEREG, TG_O_DISC, TG_O_RUN,
	TG_O_INFO, TG_O_UNTIL, TG_O_REJECT, TG_O_IRD, TG_O_ORD, TG_O_PDATA,
	TG_O_QPERR, TG_O_QPRESET, TG_O_BACKLOG, TG_O_NOACCEPT,
	TG_O_MR_ACCESS, TG_O_SHOW_RECV, TG_O_IMM,
};

static const struct option tg_lopts[] = {
	{ "mr-size", required_argument, NULL, TG_O_MR },
	{ "recv", required_argument, NULL, TG_O_RECV },
	{ "recv-size", required_argument, NULL, TG_O_RECV_SIZE },
	{ "send", required_argument, NULL, TG_O_SEND },
	{ "write", required_argument, NULL, TG_O_WRITE },
	{ "imm", no_argument, NULL, TG_O_IMM },
	{ "read", required_argument, NULL, TG_O_READ },
	{ "rstag", required_argument, NULL, TG_O_RSTAG },
	{ "rto", required_argument, NULL, TG_O_RTO },
	{ "dereg-after", required_argument, NULL, TG_O_DEREG },
	{ "disconnect-after", required_argument, NULL, TG_O_DISC },
	{ "run", required_argument, NULL, TG_O_RUN },
	{ "info", required_argument, NULL, TG_O_INFO },
	{ "until-disconnect", no_argument, NULL, TG_O_UNTIL },
	{ "reject", no_argument, NULL, TG_O_REJECT },
	{ "ird", required_argument, NULL, TG_O_IRD },
	{ "ord", required_argument, NULL, TG_O_ORD },
	{ "pdata", required_argument, NULL, TG_O_PDATA },
	{ "qp-error-after", required_argument, NULL, TG_O_QPERR },
	{ "qp-reset-after", required_argument, NULL, TG_O_QPRESET },
	{ "backlog", required_argument, NULL, TG_O_BACKLOG },
	{ "no-accept", no_argument, NULL, TG_O_NOACCEPT },
	{ "mr-access", required_argument, NULL, TG_O_MR_ACCESS },
	{ "show-recv", no_argument, NULL, TG_O_SHOW_RECV },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static unsigned long long tg_num(const char *v)
{
	char *end;
	unsigned long long n = strtoull(v, &end, 0);

	if (!*v || *end)
		tg_usage();
	return n;
}

static double tg_secs(const char *v)
{
	char *end;
	double d = strtod(v, &end);

	if (!*v || *end || d < 0)
		tg_usage();
	return d;
}

static int tg_access(const char *v)
{
	if (!strcmp(v, "rw"))
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (!strcmp(v, "rwa"))
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_ATOMIC;
	if (!strcmp(v, "r"))
		return IBV_ACCESS_REMOTE_READ;
	if (!strcmp(v, "w"))
		return IBV_ACCESS_REMOTE_WRITE;
	if (strcmp(v, "none"))
		tg_usage();
	return 0;
}

static void tg_opt(struct tg_opts *o, int opt, const char *v)
{
	switch (opt) {
	case 's':
	case 'c':
		if (o->host)
			tg_usage();
		o->host = v;
		o->server = opt == 's';
		break;
	case TG_O_MR:
		o->mr_size = tg_num(v);
		break;
	case TG_O_RECV:
		o->recv = (int)tg_num(v);
		break;
	case TG_O_RECV_SIZE:
		o->recv_size = tg_num(v);
		break;
	case TG_O_SEND:
		o->send_len = tg_num(v);
		o->do_send = true;
		break;
	case TG_O_WRITE:
		o->write_len = tg_num(v);
		o->do_write = true;
		break;
	case TG_O_READ:
		o->read_len = tg_num(v);
		o->do_read = true;
		break;
	case TG_O_IMM:
		o->imm = true;
		break;
	case TG_O_RSTAG:
		o->rstag = (uint32_t)tg_num(v);
		break;
	case TG_O_RTO:
		o->rto = tg_num(v);
		break;
	case TG_O_DEREG:
		o->dereg_after = tg_secs(v);
		break;
	case TG_O_DISC:
		o->disconnect_after = tg_secs(v);
		break;
	case TG_O_RUN:
		o->run = tg_secs(v);
		break;
	case TG_O_INFO:
		o->info = v;
		break;
	case TG_O_UNTIL:
		o->until_disconnect = true;
		break;
	case TG_O_REJECT:
		o->reject = true;
		break;
	case TG_O_IRD:
		o->ird = (int)tg_num(v);
		break;
	case TG_O_ORD:
		o->ord = (int)tg_num(v);
		break;
	case TG_O_PDATA:
		o->pdata = tg_num(v);
		if (o->pdata > 255)
			tg_usage();
		break;
	case TG_O_QPERR:
		o->qp_error_after = tg_secs(v);
		break;
	case TG_O_BACKLOG:
		o->backlog = (int)tg_num(v);
		break;
	case TG_O_NOACCEPT:
		o->no_accept = true;
		break;
	case TG_O_QPRESET:
		o->qp_reset_after = tg_secs(v);
		break;
	case TG_O_MR_ACCESS:
		o->mr_access = tg_access(v);
		break;
	case TG_O_SHOW_RECV:
		o->show_recv = true;
		break;
	default:
		tg_usage();
	}
}

static void tg_parse(int argc, char **argv, struct tg_opts *o)
{
	int opt;

	*o = (struct tg_opts){ .recv_size = 4096, .rstag = 0x1234,
			       .dereg_after = -1, .disconnect_after = -1,
			       .run = 10, .ird = 16, .ord = 16,
			       .qp_error_after = -1, .qp_reset_after = -1,
			       .backlog = 8,
			       .mr_access = IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE };
	while ((opt = getopt_long(argc, argv, "s:c:h", tg_lopts, NULL)) != -1)
		tg_opt(o, opt, optarg);
	if (!o->host || optind != argc - 1)
		tg_usage();
	o->port = argv[optind];
}

int main(int argc, char **argv)
{
	static struct tg t;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tg_parse(argc, argv, &t.o);
	vt_start((int)t.o.run + 1);
	t.end_ms = vt_now_ms() + (long long)(t.o.run * 1000);
	if (!(t.o.server ? tg_server(&t) : tg_client(&t)))
		tg_loop(&t);
	tg_teardown(&t);
	rc = t.failed ? 1 : 0;
	printf("EXIT %d\n", rc);
	return rc;
}
