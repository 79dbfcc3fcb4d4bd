// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_modify_connect: one RC QP connected through modify_qp, the way
 * ibv_rc_pingpong does it, with its outcome checked
 * (tests/vm/guest/modify-connect-fail.sh; docs/semantics.md,
 * "Connections made by modify_qp").
 *
 * The QP gets one receive in INIT, goes to RTR with an address vector
 * (sgid index -g, dgid --dgid) and a destination QP (--dqpn N, or read
 * from --dqpn-file), to RTS with --timeout/--retry, and posts one SEND.
 *
 *   --expect ok    the SEND and the receive complete with success (the
 *                  peer runs this program too)
 *   --expect fail  the connection cannot be made: IBV_EVENT_QP_FATAL
 *                  arrives and the QP is in ERROR; every WR but the SEND,
 *                  the receive posted before and one of each posted after,
 *                  completes with IBV_WC_WR_FLUSH_ERR.  The SEND completes
 *                  with IBV_WC_RETRY_EXC_ERR if the QP failed after it was
 *                  posted, as on InfiniBand when nobody answers, and with
 *                  IBV_WC_WR_FLUSH_ERR if before: a refusal may come
 *                  before the post
 *   --expect timeout
 *                  as fail, for a peer that never answers: the QP fails
 *                  only when its bound passes, after the post, and the
 *                  SEND must complete with IBV_WC_RETRY_EXC_ERR
 *   --expect peer-gone --wait-file F
 *                  as ok, then a receive is posted and, once F exists
 *                  (the shell creates it when the peer has destroyed its
 *                  QP and the stream is closed), the QP is still in RTS,
 *                  its receive not flushed and no event raised, as on
 *                  InfiniBand; the next SEND then fails the QP:
 *                  IBV_EVENT_QP_FATAL, ERROR, the SEND RETRY_EXC_ERR and
 *                  the receive FLUSH_ERR
 *   --destroy-after MS, --exit-after MS
 *                  destroy everything (or exit without cleaning up) MS
 *                  milliseconds after RTR, while the connection is made
 *
 * Two more modes check that a process connects only its own QPs:
 *   --hold SECS    create a QP in INIT, publish its number (--qpn-file)
 *                  and keep it for SECS seconds (no -g/--dgid needed)
 *   --cm-connect HOST:PORT --dqpn N
 *                  rdma_connect() to an rdma_cm listener with no QP of
 *                  its own and qp_num N, another process's QP: refused
 *
 * Output: "PASS name" / "FAIL name: why" lines, "N passed, N failed".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_test.h"

#define BUF_SIZE 4096

struct opts {
	const char *dev;
	int gid_index;
	const char *dgid;
	long dqpn;
	const char *dqpn_file;
	const char *qpn_file;
	int timeout;
	int retry;
	const char *expect;
	int destroy_after;
	int exit_after;
	int secs;
	int hold;
	const char *cm_connect;
	const char *wait_file;
};

struct res {
	struct ibv_context *ctx;
	struct vt_ep ep;	/* no rdma_cm id: PD, CQ, MR and QP */
	char *buf;
};

static int setup(const struct opts *o, struct res *r)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	r->ctx = vt_open_device(o->dev);
	if (!r->ctx)
		return -1;
	r->buf = calloc(1, BUF_SIZE);
	r->ep.pd = ibv_alloc_pd(r->ctx);
	r->ep.cq = r->ep.pd ? ibv_create_cq(r->ctx, 16, NULL, NULL, 0) : NULL;
	r->ep.mr = r->ep.cq ? ibv_reg_mr(r->ep.pd, r->buf, BUF_SIZE,
					 IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!r->buf || !r->ep.mr)
		return -1;
	init.send_cq = r->ep.cq;
	init.recv_cq = r->ep.cq;
	r->ep.qp = ibv_create_qp(r->ep.pd, &init);
	return r->ep.qp ? 0 : -1;
}

static void teardown(struct res *r)
{
	vt_ep_close(&r->ep);
	if (r->ctx)
		ibv_close_device(r->ctx);
	free(r->buf);
}

static int post_recv(struct res *r, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = 64,
			       .lkey = r->ep.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(r->ep.qp, &wr, &bad);
}

static int post_send(struct res *r, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf + 2048, .length = 64,
			       .lkey = r->ep.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	return ibv_post_send(r->ep.qp, &wr, &bad);
}

/* The peer's QP number: given, or published by the peer in a file. */
static long peer_qpn(const struct opts *o)
{
	long long deadline = vt_deadline_in(o->secs * 1000);
	long n = -1;

	if (!o->dqpn_file)
		return o->dqpn;
	while (n < 0 && vt_now_ms() < deadline) {
		FILE *f = fopen(o->dqpn_file, "r");

		if (f) {
			if (fscanf(f, "%ld", &n) != 1)
				n = -1;
			fclose(f);
		}
		if (n < 0)
			usleep(20000);
	}
	return n;
}

static void publish_qpn(const struct opts *o, uint32_t qpn)
{
	vt_publish_qpn(o->qpn_file, qpn);
}

static int to_rtr(const struct opts *o, struct res *r, uint32_t dqpn)
{
	union ibv_gid dgid;
	int rv;

	rv = vt_qp_to_init(r->ep.qp, IBV_ACCESS_REMOTE_WRITE);
	if (rv)
		return rv;
	if (post_recv(r, 1))
		return -1;
	if (vt_parse_gid(o->dgid, &dgid))
		return EINVAL;
	return vt_qp_to_rtr(r->ep.qp, o->gid_index, &dgid, dqpn);
}

static int to_rts(const struct opts *o, struct res *r)
{
	return vt_qp_to_rts(r->ep.qp, o->timeout, o->retry);
}

static int wait_async(struct res *r, int ms)
{
	return vt_qp_async_event(r->ctx, r->ep.qp, ms);
}

/* The IB attributes come back from query_qp as modify_qp set them. */
static void check_attrs(const struct opts *o, struct res *r, uint32_t dqpn)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	union ibv_gid dgid;
	int rv;

	vt_parse_gid(o->dgid, &dgid);
	rv = ibv_query_qp(r->ep.qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER, &init);
	vt_check(!rv && a.dest_qp_num == dqpn && a.rq_psn == 0x1234 &&
		 a.sq_psn == 0x4321 && a.path_mtu == IBV_MTU_1024 &&
		 a.timeout == o->timeout && a.retry_cnt == o->retry &&
		 a.rnr_retry == 7 && a.min_rnr_timer == 12 &&
		 a.ah_attr.is_global &&
		 a.ah_attr.grh.sgid_index == o->gid_index &&
		 !memcmp(&a.ah_attr.grh.dgid, &dgid, sizeof(dgid)),
		 "query_qp reports the IB attributes as set",
		 "rv %d dqpn %u psn %#x/%#x mtu %d timeout %u retry %u rnr %u/%u global %u sgid %u",
		 rv, a.dest_qp_num, a.rq_psn, a.sq_psn, a.path_mtu, a.timeout,
		 a.retry_cnt, a.rnr_retry, a.min_rnr_timer, a.ah_attr.is_global,
		 a.ah_attr.grh.sgid_index);
}

static void check_ok(const struct opts *o, struct res *r)
{
	struct ibv_wc wc[2];
	int n, i, ok = 1;

	n = vt_poll_cq_until(r->ep.cq, wc, 2, vt_deadline_in(o->secs * 1000));
	for (i = 0; i < n; i++)
		ok &= wc[i].status == IBV_WC_SUCCESS;
	/*
	 * The QP's state is not checked after this: the peer may be done
	 * and gone already, which ends this QP's connection too.
	 */
	vt_check(n == 2 && ok, "send and receive complete", "%d of 2, status %s",
		 n, n ? ibv_wc_status_str(wc[0].status) : "-");
}

static void check_fail(const struct opts *o, struct res *r)
{
	long long t0 = vt_now_ms();
	struct ibv_wc wc[4];
	/* none polled: a status no WR gets here */
	enum ibv_wc_status send_status = IBV_WC_GENERAL_ERR;
	int ev, n, i, flushed = 0;

	ev = wait_async(r, o->secs * 1000);
	vt_check(ev == IBV_EVENT_QP_FATAL, "async event QP_FATAL",
		 "got %d (%s)", ev, ev >= 0 ? ibv_event_type_str(ev) : "none");
	vt_info("event after %lld ms", vt_now_ms() - t0);
	vt_check(vt_qp_state(r->ep.qp) == IBV_QPS_ERR, "QP in ERROR", "state %s",
		 vt_qp_state_str(vt_qp_state(r->ep.qp)));
	/* WRs posted in ERROR complete too. */
	vt_check(!post_send(r, 12) && !post_recv(r, 2), "post in ERROR",
		 "%s", strerror(errno));
	n = vt_poll_cq_until(r->ep.cq, wc, 4, vt_deadline_in(5000));
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id == 11)
			send_status = wc[i].status;
		else
			flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
	}
	if (!strcmp(o->expect, "timeout"))
		vt_check(send_status == IBV_WC_RETRY_EXC_ERR,
			 "the SEND exceeds its retries (RETRY_EXC_ERR)",
			 "%s", vt_wc_status_name(send_status));
	else
		vt_check(send_status == IBV_WC_RETRY_EXC_ERR ||
			 send_status == IBV_WC_WR_FLUSH_ERR,
			 "the SEND exceeds its retries, or is flushed if posted after the failure",
			 "%s", vt_wc_status_name(send_status));
	vt_check(n == 4 && flushed == 3, "the other WRs flushed",
		 "%d completions, %d FLUSH_ERR of 3", n, flushed);
}

/*
 * Poll the SEND @send_id and the receive: the SEND exceeded its retries,
 * the receive is flushed.
 */
static void check_send_gave_up(struct res *r, uint64_t send_id)
{
	struct ibv_wc wc[2];
	bool retry_exc = false, flushed = false;
	int n, i;

	n = vt_poll_cq_until(r->ep.cq, wc, 2, vt_deadline_in(5000));
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id == send_id)
			retry_exc = wc[i].status == IBV_WC_RETRY_EXC_ERR;
		else
			flushed = wc[i].status == IBV_WC_WR_FLUSH_ERR;
	}
	vt_check(n == 2 && retry_exc && flushed,
		 "SEND exceeds its retries, receive flushed",
		 "%d completions: %s, %s", n,
		 n > 0 ? ibv_wc_status_str(wc[0].status) : "-",
		 n > 1 ? ibv_wc_status_str(wc[1].status) : "-");
}

/* Wait until @path exists; false if it did not within @ms. */
static bool wait_file(const char *path, int ms)
{
	long long deadline = vt_deadline_in(ms);

	while (access(path, F_OK)) {
		if (vt_ms_left(deadline) <= 0)
			return false;
		usleep(20000);
	}
	return true;
}

/*
 * The peer destroyed its QP after the exchange, as the tools do: this QP
 * learns of it only when it sends (docs/semantics.md, section 8).
 */
static void check_peer_gone(const struct opts *o, struct res *r)
{
	struct ibv_wc wc[2];
	int ev, n;

	check_ok(o, r);
	vt_check(!post_recv(r, 3), "post a receive", "%s", strerror(errno));
	if (!wait_file(o->wait_file, o->secs * 1000)) {
		vt_fail("the peer is gone", "no %s", o->wait_file);
		return;
	}
	vt_check(vt_qp_state(r->ep.qp) == IBV_QPS_RTS,
		 "QP still in RTS after the peer closed", "state %s",
		 vt_qp_state_str(vt_qp_state(r->ep.qp)));
	n = vt_poll_cq_until(r->ep.cq, wc, 1, vt_deadline_in(500));
	vt_check(n == 0, "the receive stays posted", "%d completion(s), %s", n,
		 n > 0 ? ibv_wc_status_str(wc[0].status) : "-");
	ev = wait_async(r, 200);
	vt_check(ev == -1, "no async event yet", "got %d", ev);

	vt_check(!post_send(r, 13), "post a SEND", "%s", strerror(errno));
	ev = wait_async(r, o->secs * 1000);
	vt_check(ev == IBV_EVENT_QP_FATAL, "the SEND raises QP_FATAL",
		 "got %d (%s)", ev, ev >= 0 ? ibv_event_type_str(ev) : "none");
	vt_check(vt_qp_state(r->ep.qp) == IBV_QPS_ERR, "QP in ERROR", "state %s",
		 vt_qp_state_str(vt_qp_state(r->ep.qp)));
	check_send_gave_up(r, 13);
}

static void hold(const struct opts *o)
{
	struct res r = {};

	if (setup(o, &r)) {
		vt_fail("setup", "%s", strerror(errno));
	} else {
		publish_qpn(o, r.ep.qp->qp_num);
		vt_pass("QP %u held", r.ep.qp->qp_num);
		fflush(stdout);
		sleep(o->hold);
	}
	teardown(&r);
}

/* rdma_connect() with another process's QP number must be refused. */
static void cm_connect_foreign(const struct opts *o)
{
	char host[256], why[256] = "";
	struct rdma_event_channel *ch = NULL;
	struct rdma_conn_param param = { .qp_num = o->dqpn,
					 .responder_resources = 1,
					 .initiator_depth = 1 };
	struct rdma_cm_id *id = NULL;
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	char *port;
	int rv;

	snprintf(host, sizeof(host), "%s", o->cm_connect);
	port = strrchr(host, ':');
	if (!port) {
		vt_fail("cm-connect", "HOST:PORT expected");
		return;
	}
	*port++ = 0;
	rv = vt_resolve(host, port, false, &dst);
	if (!rv)
		rv = vt_route_client(&dst, NULL, 5000, 10000, &ch, &id, why,
				     sizeof(why));
	if (rv) {
		vt_fail("route", "%s", why);
		goto out;
	}
	rv = rdma_connect(id, &param);
	if (rv) {
		vt_pass("rdma_connect with a foreign qp_num refused: %s",
			strerror(errno));
		goto out;
	}
	rv = vt_cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 10000, &ev, why,
			  sizeof(why));
	if (!rv)
		rdma_ack_cm_event(ev);
	vt_fail("rdma_connect with a foreign qp_num",
		"accepted (then %s)", rv ? why : "ESTABLISHED");
out:
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
}

static int run(const struct opts *o)
{
	struct res r = {};
	long dqpn;
	int rv;

	if (setup(o, &r)) {
		vt_fail("setup", "%s", strerror(errno));
		teardown(&r);
		return vt_finish();
	}
	vt_check(vt_qp_state(r.ep.qp) == IBV_QPS_INIT, "new QP in INIT", "%s",
		 vt_qp_state_str(vt_qp_state(r.ep.qp)));
	publish_qpn(o, r.ep.qp->qp_num);
	dqpn = peer_qpn(o);
	vt_info("QP %u, peer %s QP %ld", r.ep.qp->qp_num, o->dgid, dqpn);
	rv = dqpn < 0 ? ETIMEDOUT : to_rtr(o, &r, dqpn);
	vt_check(!rv, "modify to RTR", "%s", strerror(rv));
	if (rv)
		goto out;
	if (o->exit_after >= 0) {
		usleep(o->exit_after * 1000);
		_exit(0);
	}
	if (o->destroy_after >= 0) {
		usleep(o->destroy_after * 1000);
		teardown(&r);
		vt_pass("destroyed while connecting");
		return vt_finish();
	}
	rv = to_rts(o, &r);
	/* A refusal may have come already: the QP is then in ERROR. */
	vt_check(!rv || vt_qp_state(r.ep.qp) == IBV_QPS_ERR, "modify to RTS",
		 "%s", strerror(rv));
	post_send(&r, 11);
	if (!strcmp(o->expect, "ok")) {
		check_attrs(o, &r, dqpn);
		check_ok(o, &r);
	} else if (!strcmp(o->expect, "peer-gone") && o->wait_file) {
		check_peer_gone(o, &r);
	} else
		check_fail(o, &r);
out:
	teardown(&r);
	return vt_finish();
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dgid", required_argument, NULL, 'D' },
		{ "dqpn", required_argument, NULL, 'q' },
		{ "dqpn-file", required_argument, NULL, 'Q' },
		{ "qpn-file", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' },
		{ "retry", required_argument, NULL, 'r' },
		{ "expect", required_argument, NULL, 'e' },
		{ "destroy-after", required_argument, NULL, 'X' },
		{ "exit-after", required_argument, NULL, 'E' },
		{ "secs", required_argument, NULL, 's' },
		{ "hold", required_argument, NULL, 'H' },
		{ "cm-connect", required_argument, NULL, 'C' },
		{ "wait-file", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .gid_index = 1, .dqpn = -1, .timeout = 14,
			  .retry = 7, .expect = "ok", .destroy_after = -1,
			  .exit_after = -1, .secs = 30 };
	int c;

	while ((c = getopt_long(argc, argv, "d:g:", lopts, NULL)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'g': o.gid_index = atoi(optarg); break;
		case 'D': o.dgid = optarg; break;
		case 'q': o.dqpn = atol(optarg); break;
		case 'Q': o.dqpn_file = optarg; break;
		case 'o': o.qpn_file = optarg; break;
		case 't': o.timeout = atoi(optarg); break;
		case 'r': o.retry = atoi(optarg); break;
		case 'e': o.expect = optarg; break;
		case 'X': o.destroy_after = atoi(optarg); break;
		case 'E': o.exit_after = atoi(optarg); break;
		case 's': o.secs = atoi(optarg); break;
		case 'H': o.hold = atoi(optarg); break;
		case 'C': o.cm_connect = optarg; break;
		case 'W': o.wait_file = optarg; break;
		default: return 2;
		}
	}
	if (o.hold && o.dev) {
		vt_start(o.hold + 10);
		hold(&o);
		return vt_finish();
	}
	if (o.cm_connect && o.dqpn >= 0) {
		vt_start(o.secs + 10);
		cm_connect_foreign(&o);
		return vt_finish();
	}
	if (!o.dev || !o.dgid || (o.dqpn < 0 && !o.dqpn_file)) {
		fprintf(stderr, "usage: %s -d DEV [-g GID_INDEX] --dgid ADDR (--dqpn N | --dqpn-file F) [--qpn-file F] [--timeout T] [--retry N] [--expect ok|fail|timeout|peer-gone --wait-file F] [--destroy-after MS | --exit-after MS] [--secs S]\n"
			"       %s -d DEV --hold SECS [--qpn-file F]\n"
			"       %s --cm-connect HOST:PORT --dqpn N\n",
			argv[0], argv[0], argv[0]);
		return 2;
	}
	vt_start(o.secs + 10);
	return run(&o);
}
