// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_verify: RDMA WRITE then READ-back of sequence-stamped patterns on
 * several QPs at once, every byte compared (issue 12, lanes 3 and 4:
 * tests/vm/guest/faults.sh, scripts/soak).
 *
 *   viw_verify -s HOST [-p PORT] [-t SECS]
 *   viw_verify -c HOST [-p PORT] [-t SECS] [-q QPS] [-n ROUNDS]
 *              [-d SECS] [--size BYTES] [--pieces K] [--wc-ms MS]
 *              [--event-ms MS]
 *
 * The server accepts any number of connections (up to VF_MAX_CONNS), gives
 * each its own MR and offers it in the accept private data; it prints
 * "ACCEPTED conn K" and "CLOSED conn K EVENT" lines and runs until -t or
 * SIGTERM.  The client connects -q QPs and, on each, round after round,
 * WRITEs a pattern stamped with the QP, the round and the word's offset to
 * the server's MR and READs it back into a poisoned buffer.  A round's
 * length and remote offset change from round to round.  It stops after -n
 * rounds per QP or -d seconds of traffic, whichever comes first.  With
 * --pieces K the WRITE goes as K WRITEs of consecutive pieces, each posted
 * by a call of its own, as a stream of small messages is (the transmit
 * engine's hand-off, docs/host-interface.md "Doorbells").
 *
 * What the client tells apart, one line each:
 *   DATAERR qp Q round R ...   a READ returned other bytes (FAIL)
 *   LOST qp Q: wc OP STATUS    an error completion: the connection is gone
 *   LOST qp Q: event EVENT     a CM event ended the connection
 *   EVENT qp Q EVENT           every CM event after ESTABLISHED
 *   FAIL hang ...              no completion or no CM event in time
 * A lost QP must then get its other completions (flushed) within --wc-ms
 * and a CM event (DISCONNECTED, DEVICE_REMOVAL, ...) within --event-ms.
 * Exit: 0 every round verified, 1 a FAIL (wrong data, a hang, a setup
 * failure), 3 no FAIL but a connection was lost (what a fault should
 * cause), 2 bad options.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_test.h"

#define VF_MAGIC	0x76657269	/* "veri" */
#define VF_MAX_QPS	32
#define VF_MAX_CONNS	64
#define VF_POISON	0xee
#define VF_ORD		4
#define VF_SEND_WR	8
#define VF_MAX_PIECES	(VF_SEND_WR - 1)	/* and the READ */

static struct {
	int qps;
	int rounds;
	int traffic_secs;
	uint32_t size;
	int pieces;
	int wc_ms;
	int event_ms;
} vf_opt = {
	.qps = 4, .traffic_secs = 20, .size = 65536, .pieces = 1,
	.wc_ms = 30000, .event_ms = 30000,
};

static volatile sig_atomic_t vf_stop;

static void vf_on_term(int sig)
{
	(void)sig;
	vf_stop = 1;
}

/* ---- server -------------------------------------------------------------- */

struct vf_conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct vf_server {
	struct vt_server s;
	struct vf_conn conn[VF_MAX_CONNS];
	int accepted;
	int closed;
};

static void vf_conn_free(struct vf_conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static struct vf_conn *vf_free_slot(struct vf_server *v)
{
	int i;

	for (i = 0; i < VF_MAX_CONNS; i++)
		if (!v->conn[i].id)
			return &v->conn[i];
	return NULL;
}

/*
 * A QP, an MR of @size bytes and the accept; 0, or -1 after a reject
 * (the caller then destroys the event's id once it acked the event).
 */
static int vf_accept(struct vf_server *v, struct vf_conn *c,
		     struct rdma_cm_event *ev, uint32_t size)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct vt_mr_offer offer = { 0 };
	struct rdma_conn_param p = { 0 };
	const char *step = "ibv_create_cq";

	c->id = ev->id;
	c->cq = ibv_create_cq(c->id->verbs, 8, NULL, NULL, 0);
	if (!c->cq)
		goto err;
	attr.send_cq = c->cq;
	attr.recv_cq = c->cq;
	step = "rdma_create_qp";
	if (rdma_create_qp(c->id, v->s.pd, &attr))
		goto err;
	step = "ibv_reg_mr";
	c->buf = vt_alloc_filled(size, 0);
	c->mr = c->buf ? ibv_reg_mr(v->s.pd, c->buf, size,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ) : NULL;
	if (!c->mr)
		goto err;
	offer.magic = htobe32(VF_MAGIC);
	offer.addr = htobe64((uintptr_t)c->buf);
	offer.rkey = htobe32(c->mr->rkey);
	offer.len = htobe32(size);
	p.private_data = &offer;
	p.private_data_len = sizeof(offer);
	p.responder_resources = ev->param.conn.initiator_depth;
	p.initiator_depth = ev->param.conn.responder_resources;
	if (p.responder_resources > 32)
		p.responder_resources = 32;
	if (p.initiator_depth > 32)
		p.initiator_depth = 32;
	step = "rdma_accept";
	c->id->context = c;
	if (rdma_accept(c->id, &p))
		goto err;
	return 0;
err:
	vt_info("server: %s: %s; rejecting", step, strerror(errno));
	rdma_reject(ev->id, NULL, 0);
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	c->id = NULL;
	vf_conn_free(c);
	return -1;
}

static bool vf_is_end(enum rdma_cm_event_type e)
{
	return e == RDMA_CM_EVENT_DISCONNECTED ||
	       e == RDMA_CM_EVENT_DEVICE_REMOVAL ||
	       e == RDMA_CM_EVENT_CONNECT_ERROR ||
	       e == RDMA_CM_EVENT_UNREACHABLE ||
	       e == RDMA_CM_EVENT_REJECTED ||
	       e == RDMA_CM_EVENT_ADDR_CHANGE ||
	       e == RDMA_CM_EVENT_TIMEWAIT_EXIT;
}

/* One event; true if the server cannot go on (its device is gone). */
static bool vf_server_handle(struct vf_server *v, struct rdma_cm_event *ev)
{
	struct vf_conn *c = ev->id->context;
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id;
	int failed;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		c = vf_free_slot(v);
		if (!c) {
			rdma_reject(ev->id, NULL, 0);
			rdma_ack_cm_event(ev);
			return false;
		}
		id = ev->id;
		failed = vf_accept(v, c, ev, vf_opt.size);
		/* an id is destroyed only once its events are acked */
		rdma_ack_cm_event(ev);
		if (failed)
			rdma_destroy_id(id);
		return false;
	}
	if (!c)
		return vt_stray_event(ev, false);
	rdma_ack_cm_event(ev);
	if (type == RDMA_CM_EVENT_ESTABLISHED) {
		printf("ACCEPTED conn %ld\n", (long)(c - v->conn));
		v->accepted++;
	} else if (vf_is_end(type)) {
		printf("CLOSED conn %ld %s\n", (long)(c - v->conn),
		       rdma_event_str(type));
		v->closed++;
		vf_conn_free(c);
	}
	return false;
}

static bool vf_any_conn(const struct vf_server *v)
{
	int i;

	for (i = 0; i < VF_MAX_CONNS; i++)
		if (v->conn[i].id)
			return true;
	return false;
}

/*
 * Until -t, SIGTERM, or the device is gone: then the connections' own
 * DEVICE_REMOVAL events, queued behind the listener's, are still taken
 * (for at most 10 s), so that each gets its CLOSED line.
 */
static void vf_serve(struct vf_server *v)
{
	long long gone_end = 0;
	struct rdma_cm_event *ev;

	while (!vf_stop && vt_ms_left(vt_run_deadline)) {
		int rv;

		if (gone_end && (!vf_any_conn(v) || vt_now_ms() > gone_end))
			break;
		rv = vt_server_event(v->s.ch, vt_deadline_in(200), &ev);
		if (rv == -ETIMEDOUT)
			continue;
		if (rv)
			break;
		if (vf_server_handle(v, ev) && !gone_end)
			gone_end = vt_now_ms() + 10000;
	}
}

static int run_server(const char *host, const char *port)
{
	struct vf_server v = { 0 };
	int i;

	if (!vt_server_open(&v.s, host, port) && !vt_server_listen(&v.s, 64))
		vf_serve(&v);
	for (i = 0; i < VF_MAX_CONNS; i++)
		vf_conn_free(&v.conn[i]);
	vt_server_close(&v.s);
	vt_pass("server: %d accepted, %d closed by an event", v.accepted,
		v.closed);
	return 0;
}

/* ---- client -------------------------------------------------------------- */

struct vf_qp {
	struct vt_ep ep;
	int index;
	uint8_t *buf;		/* the WRITE's source, then the READ's sink */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t rlen;
	uint32_t round;		/* rounds verified */
	uint32_t len, roff;	/* the round in flight */
	int posted;		/* its completions still due */
	long long due;		/* when they are late */
	bool lost;		/* error completion or end event seen */
	bool ended;		/* its CM end event seen */
	long long event_due;
	bool done;		/* closed */
};

static struct vf_qp vf_qp[VF_MAX_QPS];
static struct sockaddr_storage vf_dst;
static unsigned long long vf_bytes;
static int vf_lost, vf_data_errors, vf_hangs;

/* The stamp of word @w of QP @q's round @r. */
static uint64_t vf_stamp(int q, uint32_t r, uint32_t w)
{
	return ((uint64_t)q << 56) | ((uint64_t)(r & 0xffffff) << 32) |
	       (w * 2654435761u);
}

static int vf_connect_one(void *arg)
{
	struct vf_qp *q = arg;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = VF_SEND_WR, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param p = {
		.initiator_depth = VF_ORD, .responder_resources = VF_ORD,
	};
	struct rdma_cm_event *ev;
	struct vt_mr_offer o;
	int rv;

	rv = vt_ep_route(&q->ep, &vf_dst, q, 2000, 10000);
	if (!rv)
		rv = vt_ep_alloc(&q->ep, q->buf, 2 * (size_t)vf_opt.size, 16,
				 &attr);
	if (!rv)
		rv = vt_ep_connect(&q->ep, &p, 15000, &ev);
	if (rv)
		return rv;
	rv = vt_take_offer(ev->param.conn.private_data,
			   ev->param.conn.private_data_len, &o, sizeof(o),
			   VF_MAGIC, 0, q->ep.why, sizeof(q->ep.why));
	rdma_ack_cm_event(ev);
	if (rv)
		return rv;
	q->raddr = be64toh(o.addr);
	q->rkey = be32toh(o.rkey);
	q->rlen = be32toh(o.len);
	if (q->rlen < vf_opt.size) {
		snprintf(q->ep.why, sizeof(q->ep.why),
			 "the server's MR has %u bytes, fewer than --size %u",
			 q->rlen, vf_opt.size);
		return -EPROTO;
	}
	return 0;
}

/*
 * Post the round's WRITE as vf_opt.pieces WRITEs, one call each but the
 * last, which goes with the READ that reads it all back.  q->posted counts
 * what was posted, also when a call fails.
 */
static int vf_post_pieces(struct vf_qp *q, const struct vt_op *write,
			  const struct vt_op *read)
{
	uint32_t pieces = vf_opt.pieces, step, off = 0;
	struct vt_op ops[2];
	int rv;

	if (pieces > write->len)
		pieces = write->len;
	step = write->len / pieces;
	q->posted = 0;
	for (;;) {
		ops[0] = *write;
		ops[0].loff = write->loff + off;
		ops[0].raddr = write->raddr + off;
		ops[0].len = --pieces ? step : write->len - off;
		off += ops[0].len;
		if (!pieces)
			break;
		rv = vt_post_ops(q->ep.id->qp, q->buf, q->ep.mr->lkey, ops, 1);
		if (rv)
			return rv;
		q->posted++;
	}
	ops[1] = *read;
	rv = vt_post_ops(q->ep.id->qp, q->buf, q->ep.mr->lkey, ops, 2);
	if (!rv)
		q->posted += 2;
	return rv;
}

/* Post round q->round: WRITE the stamped source, READ it back. */
static int vf_post_round(struct vf_qp *q)
{
	uint32_t r = q->round, size = vf_opt.size, w;
	uint8_t *src = q->buf, *sink = q->buf + size;
	struct vt_op write, read;
	uint64_t v;

	/* lengths from size down by odd steps, offsets 0..63 */
	q->roff = (r * 7) % 64;
	q->len = size - q->roff - (r * 4093) % (size / 2 + 1);
	if (!q->len)
		q->len = 1;
	for (w = 0; w * 8 < q->len; w++) {
		v = htobe64(vf_stamp(q->index, r, w));
		memcpy(src + w * 8, &v,
		       q->len - w * 8 < 8 ? q->len - w * 8 : 8);
	}
	memset(sink, VF_POISON, q->len);
	write = (struct vt_op){ .what = "WRITE", .opcode = IBV_WR_RDMA_WRITE,
				.loff = 0, .len = q->len,
				.raddr = q->raddr + q->roff, .rkey = q->rkey };
	read = write;
	read.what = "READ";
	read.opcode = IBV_WR_RDMA_READ;
	read.loff = size;
	q->due = vt_now_ms() + vf_opt.wc_ms;
	return vf_post_pieces(q, &write, &read);
}

static void vf_mark_lost(struct vf_qp *q, const char *what)
{
	if (q->lost)
		return;
	printf("LOST qp %d: %s (round %u)\n", q->index, what, q->round);
	q->lost = true;
	vf_lost++;
	q->event_due = vt_now_ms() + vf_opt.event_ms;
}

/* Compare the READ's sink with the WRITE's source of the round. */
static void vf_verify_round(struct vf_qp *q)
{
	uint8_t *src = q->buf, *sink = q->buf + vf_opt.size;
	uint32_t i;

	if (!memcmp(src, sink, q->len)) {
		q->round++;
		vf_bytes += q->len;
		return;
	}
	for (i = 0; i < q->len && src[i] == sink[i]; i++)
		;
	printf("DATAERR qp %d round %u offset %u of %u: got %#x want %#x\n",
	       q->index, q->round, i, q->len, sink[i], src[i]);
	vt_fail("data", "qp %d round %u: READ returned other bytes at %u",
		q->index, q->round, i);
	vf_data_errors++;
	q->lost = true;		/* stop using it, without a LOST line */
	q->ended = true;
}

static void vf_take_wc(struct vf_qp *q, const struct ibv_wc *wc)
{
	char what[96];

	q->posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		snprintf(what, sizeof(what), "wc %s %s",
			 wc->wr_id ? "READ" : "WRITE",
			 vt_wc_status_name(wc->status));
		vf_mark_lost(q, what);
		return;
	}
	if (!q->posted && !q->lost)
		vf_verify_round(q);
}

static void vf_poll_events(struct vf_qp *q)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	char what[64];

	while (!rdma_get_cm_event(q->ep.ch, &ev)) {
		type = ev->event;
		rdma_ack_cm_event(ev);
		printf("EVENT qp %d %s\n", q->index, rdma_event_str(type));
		if (!vf_is_end(type))
			continue;
		snprintf(what, sizeof(what), "event %s", rdma_event_str(type));
		vf_mark_lost(q, what);
		q->ended = true;
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			/* the removal waits for the id: free it now */
			vt_ep_close(&q->ep);
			q->posted = 0;
			q->done = true;
			return;
		}
	}
}

/* Bounded waits: completions within --wc-ms, an event within --event-ms. */
static void vf_check_late(struct vf_qp *q, long long now)
{
	if (q->posted && now > q->due) {
		vt_fail("hang", "qp %d round %u: %d completions missing after "
			"%d ms%s", q->index, q->round, q->posted,
			vf_opt.wc_ms, q->lost ? " (flush)" : "");
		vf_hangs++;
		q->posted = 0;
		q->lost = true;
		q->ended = true;
	}
	if (q->lost && !q->ended && now > q->event_due) {
		vt_fail("hang", "qp %d: connection lost but no CM event "
			"within %d ms", q->index, vf_opt.event_ms);
		vf_hangs++;
		q->ended = true;
	}
}

/* One pass over QP @q; true while it still needs the loop. */
static bool vf_step(struct vf_qp *q, bool more)
{
	struct ibv_wc wc[8];
	int i, n;

	if (q->done)
		return false;
	vf_poll_events(q);
	if (q->done)
		return false;
	n = ibv_poll_cq(q->ep.cq, 8, wc);
	for (i = 0; i < n; i++)
		vf_take_wc(q, &wc[i]);
	vf_check_late(q, vt_now_ms());
	if (!q->posted && !q->lost && more &&
	    (!vf_opt.rounds || q->round < (uint32_t)vf_opt.rounds)) {
		int rv = vf_post_round(q);

		if (rv)
			vf_mark_lost(q, rv == ENOMEM ? "post: queue full" :
				     "post refused");
	}
	if (q->posted || (q->lost && !q->ended))
		return true;
	if (q->lost || !more ||
	    (vf_opt.rounds && q->round >= (uint32_t)vf_opt.rounds)) {
		vt_ep_close(&q->ep);
		q->done = true;
		return false;
	}
	return true;
}

static void vf_traffic(void)
{
	long long traffic_end = vt_deadline_in(vf_opt.traffic_secs * 1000);
	long long next_report = vt_now_ms() + 5000;
	bool busy = true;
	int i;

	while (busy) {
		bool more = !vf_stop && vt_now_ms() < traffic_end;

		busy = false;
		for (i = 0; i < vf_opt.qps; i++)
			busy |= vf_step(&vf_qp[i], more);
		if (vt_now_ms() >= next_report) {
			printf("PROGRESS bytes %llu lost %d\n", vf_bytes,
			       vf_lost);
			next_report += 5000;
		}
		if (busy)
			usleep(200);
	}
}

static int run_client(const char *host, const char *port)
{
	char name[32];
	int i, verified = 0;

	if (vt_resolve(host, port, false, &vf_dst))
		return 0;
	for (i = 0; i < vf_opt.qps; i++) {
		struct vf_qp *q = &vf_qp[i];

		q->index = i;
		q->buf = vt_alloc_filled(2 * (size_t)vf_opt.size, 0);
		snprintf(name, sizeof(name), "connect qp %d", i);
		if (!q->buf || !vt_ep_connect_retry(&q->ep, name, !i, 10000,
						    vf_connect_one, q))
			q->done = true;
	}
	vt_info("%d QPs, %u bytes each, rounds %d, traffic %d s", vf_opt.qps,
		vf_opt.size, vf_opt.rounds, vf_opt.traffic_secs);
	vf_traffic();
	for (i = 0; i < vf_opt.qps; i++) {
		vt_ep_close(&vf_qp[i].ep);
		free(vf_qp[i].buf);
		verified += vf_qp[i].round;
	}
	printf("SUMMARY qps %d rounds %d bytes %llu lost %d data_errors %d "
	       "hangs %d\n", vf_opt.qps, verified, vf_bytes, vf_lost,
	       vf_data_errors, vf_hangs);
	vt_check(!vf_data_errors, "data", "%d rounds returned other bytes",
		 vf_data_errors);
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static const struct option vf_longopts[] = {
	{ "size", required_argument, NULL, 'S' },
	{ "pieces", required_argument, NULL, 'P' },
	{ "wc-ms", required_argument, NULL, 'W' },
	{ "event-ms", required_argument, NULL, 'E' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 }
};

static int vf_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -s HOST [-p PORT] [-t SECS] [--size BYTES]\n"
		"       %s -c HOST [-p PORT] [-t SECS] [-q QPS] [-n ROUNDS] "
		"[-d SECS]\n"
		"          [--size BYTES] [--pieces K] [--wc-ms MS] "
		"[--event-ms MS]\n"
		"  -q QPS        connections, 1..%d (4)\n"
		"  -n ROUNDS     rounds per QP, 0 = until -d (0)\n"
		"  -d SECS       seconds of traffic (20); -t bounds the run "
		"(-d + 60)\n"
		"  --size BYTES  buffer per QP, 64..16777216 (65536)\n"
		"  --pieces K    the WRITE as K posts, 1..%d (1)\n"
		"  --wc-ms MS    a completion is late after MS (30000)\n"
		"  --event-ms MS after a loss, the CM event is late after MS "
		"(30000)\n"
		"exit: 0 all verified, 1 a FAIL, 3 a connection lost, 2 usage\n",
		prog, prog, VF_MAX_QPS, VF_MAX_PIECES);
	return 2;
}

static int vf_parse(int argc, char **argv, struct vt_args *args)
{
	int opt;

	*args = (struct vt_args){ .port = "7472" };
	while ((opt = vt_next_opt(argc, argv, "q:n:d:h", vf_longopts,
				  args)) != -1) {
		switch (opt) {
		case 'q':
			vf_opt.qps = atoi(optarg);
			break;
		case 'n':
			vf_opt.rounds = atoi(optarg);
			break;
		case 'd':
			vf_opt.traffic_secs = atoi(optarg);
			break;
		case 'S':
			vf_opt.size = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			vf_opt.pieces = atoi(optarg);
			break;
		case 'W':
			vf_opt.wc_ms = atoi(optarg);
			break;
		case 'E':
			vf_opt.event_ms = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	if (!args->addr || optind != argc || vf_opt.qps < 1 ||
	    vf_opt.qps > VF_MAX_QPS || vf_opt.rounds < 0 ||
	    vf_opt.traffic_secs < 1 || vf_opt.size < 64 ||
	    vf_opt.size > 16777216 || vf_opt.pieces < 1 ||
	    vf_opt.pieces > VF_MAX_PIECES || vf_opt.wc_ms < 1 ||
	    vf_opt.event_ms < 1 || args->secs < 0)
		return -1;
	if (!args->secs)
		args->secs = args->server ? 600 : vf_opt.traffic_secs + 60;
	return 0;
}

int main(int argc, char **argv)
{
	struct vt_args args;
	int rv;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vf_parse(argc, argv, &args))
		return vf_usage(argv[0]);
	signal(SIGTERM, vf_on_term);
	signal(SIGINT, vf_on_term);
	vt_start(args.secs);
	if (args.server)
		run_server(args.addr, args.port);
	else
		run_client(args.addr, args.port);
	rv = vt_finish();
	return rv ? rv : vf_lost ? 3 : 0;
}
