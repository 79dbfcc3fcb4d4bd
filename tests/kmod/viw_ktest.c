// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_ktest: a kernel consumer of viw's kernel verbs for the VM tests
 * (tests/vm/guest/kverbs.sh).  Commands are written to
 * /sys/kernel/debug/viw_ktest/ctl, and what they found is read back from
 * the same file:
 *
 *   run ADDR     kernel QPs connected to themselves over rdma_cm on the
 *                device of ADDR, port 7990:
 *                - a SEND and its receive through a CQ of each poll
 *                  context (direct, softirq, workqueue, unbound
 *                  workqueue), then ib_drain_qp on both ends;
 *                - a receive CQ of ib_create_cq whose comp_handler polls,
 *                  posts the next receive into the QP and re-arms from
 *                  inside the handler;
 *                - fast registration: a WRITE into a fast-register MR is
 *                  placed; after LOCAL_INV the next WRITE fails, with the
 *                  buffer untouched; a SEND with Invalidate invalidates,
 *                  the receiver sees IB_WC_WITH_INVALIDATE.
 *                One line "PASS name" or "FAIL name: why" per check.
 *   process ADDR as cifs's SMB Direct does in mount(2), rdma_connect in
 *                the writer's own context (every other command runs in a
 *                worker): a SEND through a kernel QP connected so, and the
 *                same connect with CAP_SYS_ADMIN dropped, which viw must
 *                refuse (-EINVAL from iw_cm, nothing reaches the listener).
 *   listen ADDR PORT   accept one connection (the raw peer), give it a
 *                fast-register MR over a zeroed page with remote write;
 *                the file then shows "STAG x ADDR x LEN n", and "PLACED n",
 *                the bytes of the page that are not 0.
 *   inv          LOCAL_INV that MR and wait for its completion.
 *   fill N       post N SENDs of KT_FILL bytes, so that a peer that does
 *                not read leaves viw's transmit engine blocked in the socket.
 *   recv         post a receive (for the peer's SEND with Invalidate);
 *                the file then shows "RECV_INV 1" once it completed so.
 *   poison       overwrite the MR's page with 0xdd, as a consumer that
 *                reuses its pages after the invalidation would.
 *   stop         tear the listener and its connection down.
 */
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define KT_PORT		7990
#define KT_TIMEOUT	(10 * HZ)
#define KT_DEPTH	16
#define KT_MSG		64
#define KT_LOOPS	32		/* messages through the handler test */
#define KT_OUT		4096

static struct dentry *kt_dir;
static DEFINE_MUTEX(kt_lock);
static char kt_out[KT_OUT];
static size_t kt_out_len;

static __printf(1, 2) void kt_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kt_out_len += vscnprintf(kt_out + kt_out_len, KT_OUT - kt_out_len,
				 fmt, ap);
	va_end(ap);
	if (kt_out_len < KT_OUT - 1)
		kt_out[kt_out_len++] = '\n';
	kt_out[kt_out_len] = '\0';
}

static int kt_checks_failed;

static void kt_check(bool ok, const char *name, const char *why)
{
	if (ok) {
		kt_say("PASS %s", name);
		return;
	}
	kt_say("FAIL %s: %s", name, why);
	pr_info("viw_ktest: FAIL %s: %s\n", name, why);
	kt_checks_failed++;
}

/* ---- one end of a connection ------------------------------------------- */

struct kt_end {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;		/* send and receive */
	bool raw_cq;			/* ib_create_cq, not ib_alloc_cq */
	struct ib_qp *qp;
	void *buf;			/* KT_DEPTH message slots, then a page */
	u64 dma;
	struct completion established;
	struct completion done;	/* a cqe's done ran */
	struct completion event;	/* a QP event came */
	enum ib_event_type qp_event;
	int done_count;
	struct ib_wc last_wc;
	struct ib_cqe cqe;
};

struct kt_conn {
	struct rdma_cm_id *listen;
	struct kt_end client, server;
	struct completion route, accepted;
	int cm_error;
	enum ib_poll_context ctx;
	/* a raw CQ with this handler serves the server's receives, if set */
	void (*raw_handler)(struct ib_cq *cq, void *ctx);
};

#define KT_BUF_SIZE	(KT_DEPTH * KT_MSG + 2 * PAGE_SIZE)

static void kt_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kt_end *end = container_of(wc->wr_cqe, struct kt_end, cqe);

	end->last_wc = *wc;
	end->done_count++;
	complete(&end->done);
}

static void kt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kt_end *end = ctx;

	end->qp_event = ev->event;
	complete(&end->event);
}

static int kt_end_res(struct kt_conn *c, struct kt_end *end,
		      struct rdma_cm_id *id, bool server)
{
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = KT_DEPTH, .max_recv_wr = KT_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	int rv;

	end->id = id;
	end->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(end->pd)) {
		rv = PTR_ERR(end->pd);
		end->pd = NULL;
		return rv;
	}
	if (server && c->raw_handler) {
		struct ib_cq_init_attr ca = { .cqe = 2 * KT_DEPTH };

		end->cq = ib_create_cq(id->device, c->raw_handler, NULL, end,
				       &ca);
		end->raw_cq = true;
	} else {
		end->cq = ib_alloc_cq(id->device, end, 2 * KT_DEPTH, 0, c->ctx);
	}
	if (IS_ERR(end->cq)) {
		rv = PTR_ERR(end->cq);
		end->cq = NULL;
		return rv;
	}
	end->buf = kzalloc(KT_BUF_SIZE, GFP_KERNEL);
	if (!end->buf)
		return -ENOMEM;
	end->dma = ib_dma_map_single(id->device, end->buf, KT_BUF_SIZE,
				     DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(id->device, end->dma))
		return -ENOMEM;
	qa.send_cq = end->cq;
	qa.recv_cq = end->cq;
	qa.qp_context = end;
	qa.event_handler = kt_qp_event;
	rv = rdma_create_qp(id, end->pd, &qa);
	if (rv)
		return rv;
	end->qp = id->qp;
	return 0;
}

static void kt_end_free(struct kt_end *end)
{
	if (end->qp) {
		ib_drain_qp(end->qp);
		rdma_destroy_qp(end->id);
		end->qp = NULL;
	}
	if (end->buf) {
		if (end->dma)
			ib_dma_unmap_single(end->id->device, end->dma,
					    KT_BUF_SIZE, DMA_BIDIRECTIONAL);
		kfree(end->buf);
		end->buf = NULL;
	}
	if (end->cq) {
		if (end->raw_cq)
			ib_destroy_cq(end->cq);
		else
			ib_free_cq(end->cq);
		end->cq = NULL;
	}
	if (end->pd) {
		ib_dealloc_pd(end->pd);
		end->pd = NULL;
	}
}

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kt_conn *c = id->context;
	struct rdma_conn_param cp = {
		.responder_resources = 1, .initiator_depth = 1,
	};
	int rv;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rv = rdma_resolve_route(id, 2000);
		if (rv) {
			c->cm_error = rv;
			complete(&c->route);
		}
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		complete(&c->route);
		return 0;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (c->server.id) {
			/* one connection per test */
			return -EBUSY;
		}
		rv = kt_end_res(c, &c->server, id, true);
		if (!rv)
			rv = rdma_accept(id, &cp);
		if (rv) {
			c->cm_error = rv;
			complete(&c->accepted);
			kt_end_free(&c->server);
			c->server.id = NULL;
			/* non-zero: the CM destroys the id */
			return rv;
		}
		complete(&c->accepted);
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		complete(id == c->client.id ? &c->client.established :
					      &c->server.established);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		if (ev->status)
			c->cm_error = ev->status;
		else
			c->cm_error = -ECONNABORTED;
		complete(&c->route);
		complete(&c->accepted);
		complete(&c->client.established);
		complete(&c->server.established);
		return 0;
	}
}

static void kt_conn_init(struct kt_conn *c, enum ib_poll_context ctx)
{
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	init_completion(&c->route);
	init_completion(&c->accepted);
	init_completion(&c->client.established);
	init_completion(&c->server.established);
	init_completion(&c->client.done);
	init_completion(&c->server.done);
	init_completion(&c->client.event);
	init_completion(&c->server.event);
	c->client.cqe.done = kt_done;
	c->server.cqe.done = kt_done;
}

static int kt_listen(struct kt_conn *c, struct sockaddr_in *sin)
{
	int rv;

	c->listen = rdma_create_id(&init_net, kt_cm_handler, c, RDMA_PS_TCP,
				   IB_QPT_RC);
	if (IS_ERR(c->listen)) {
		rv = PTR_ERR(c->listen);
		c->listen = NULL;
		return rv;
	}
	rv = rdma_bind_addr(c->listen, (struct sockaddr *)sin);
	return rv ? rv : rdma_listen(c->listen, 1);
}

static bool kt_wait(struct completion *done)
{
	return wait_for_completion_timeout(done, KT_TIMEOUT) > 0;
}

/* Connect a QP of the device of @sin to a listener there. */
static int kt_connect(struct kt_conn *c, struct sockaddr_in *sin)
{
	struct rdma_conn_param cp = {
		.responder_resources = 1, .initiator_depth = 1,
	};
	struct rdma_cm_id *id;
	int rv;

	rv = kt_listen(c, sin);
	if (rv) {
		kt_say("listen: %d", rv);
		return rv;
	}
	id = rdma_create_id(&init_net, kt_cm_handler, c, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	c->client.id = id;
	rv = rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000);
	if (!rv && !kt_wait(&c->route))
		rv = -ETIMEDOUT;
	rv = rv ?: c->cm_error;
	if (rv) {
		kt_say("resolve: %d", rv);
		return rv;
	}
	rv = kt_end_res(c, &c->client, id, false);
	if (rv) {
		kt_say("client QP: %d", rv);
		return rv;
	}
	rv = rdma_connect(id, &cp);
	if (rv) {
		kt_say("rdma_connect: %d", rv);
		return rv;
	}
	if (!kt_wait(&c->accepted) || !kt_wait(&c->client.established) ||
	    !kt_wait(&c->server.established))
		return -ETIMEDOUT;
	return c->cm_error;
}

static void kt_conn_free(struct kt_conn *c)
{
	if (c->client.id)
		rdma_disconnect(c->client.id);
	kt_end_free(&c->client);
	kt_end_free(&c->server);
	if (c->client.id)
		rdma_destroy_id(c->client.id);
	if (c->server.id)
		rdma_destroy_id(c->server.id);
	if (c->listen)
		rdma_destroy_id(c->listen);
	c->client.id = NULL;
	c->server.id = NULL;
	c->listen = NULL;
}

/* ---- posting ---------------------------------------------------------- */

static int kt_post_recv(struct kt_end *end, int slot)
{
	struct ib_sge sge = {
		.addr = end->dma + slot * KT_MSG, .length = KT_MSG,
		.lkey = end->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &end->cqe, .sg_list = &sge, .num_sge = 1,
	};

	return ib_post_recv(end->qp, &wr, NULL);
}

static int kt_post_send(struct kt_end *end, int slot, u8 fill, u32 inv)
{
	struct ib_sge sge = {
		.addr = end->dma + slot * KT_MSG, .length = KT_MSG,
		.lkey = end->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &end->cqe, .sg_list = &sge, .num_sge = 1,
		.opcode = inv ? IB_WR_SEND_WITH_INV : IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = inv,
	};

	memset(end->buf + slot * KT_MSG, fill, KT_MSG);
	return ib_post_send(end->qp, &wr, NULL);
}

/*
 * Wait for @end's done count to reach @count; a direct CQ is polled
 * here, as its consumer would.
 */
static bool kt_wait_done(struct kt_end *end, int count)
{
	unsigned long end_time = jiffies + KT_TIMEOUT;

	while (end->done_count < count) {
		if (time_after(jiffies, end_time))
			return false;
		if (!end->raw_cq && end->cq->poll_ctx == IB_POLL_DIRECT)
			ib_process_cq_direct(end->cq, KT_DEPTH);
		wait_for_completion_timeout(&end->done, HZ / 20);
	}
	return true;
}

/* ---- item: a CQ of each poll context ----------------------------------- */

static const char *const kt_ctx_names[] = {
	[IB_POLL_DIRECT] = "direct",
	[IB_POLL_SOFTIRQ] = "softirq",
	[IB_POLL_WORKQUEUE] = "workqueue",
	[IB_POLL_UNBOUND_WORKQUEUE] = "unbound-workqueue",
};

/*
 * kt_send_once - connect on @port, one SEND through CQs of @ctx, drain
 * @name: the check's name
 */
static void kt_send_once(struct sockaddr_in *sin, enum ib_poll_context ctx,
			 const char *name, u16 port)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	char why[96];
	bool ok;
	int rv;

	if (!c)
		return;
	sin->sin_port = htons(port);
	kt_conn_init(c, ctx);
	rv = kt_connect(c, sin);
	snprintf(why, sizeof(why), "connect: %d", rv);
	if (rv) {
		kt_check(false, name, why);
		goto out;
	}
	rv = kt_post_recv(&c->server, 0);
	if (!rv)
		rv = kt_post_send(&c->client, 1, 0x5c, 0);
	ok = !rv && kt_wait_done(&c->client, 1) && kt_wait_done(&c->server, 1);
	snprintf(why, sizeof(why), "post %d, completions %d/%d, status %d",
		 rv, c->client.done_count, c->server.done_count,
		 c->server.last_wc.status);
	ok = ok && c->client.last_wc.status == IB_WC_SUCCESS &&
	     c->server.last_wc.status == IB_WC_SUCCESS &&
	     c->server.last_wc.byte_len == KT_MSG &&
	     memchr_inv(c->server.buf, 0x5c, KT_MSG) == NULL;
	kt_check(ok, name, why);
	/* ib_drain_qp in kt_end_free() must return for every context. */
	rdma_disconnect(c->client.id);
	ib_drain_qp(c->client.qp);
	ib_drain_qp(c->server.qp);
	/* a drain that does not return fails the test by its timeout */
	kt_say("DRAINED %s", name);
out:
	sin->sin_port = htons(KT_PORT);
	kt_conn_free(c);
	kfree(c);
}

static void kt_poll_ctx(struct sockaddr_in *sin, enum ib_poll_context ctx)
{
	char name[64];

	snprintf(name, sizeof(name), "poll-%s", kt_ctx_names[ctx]);
	kt_send_once(sin, ctx, name, KT_PORT + 3 + ctx);
}

/* ---- item: rdma_connect in a process's own context --------------------- */

/*
 * cifs's SMB Direct calls rdma_connect inside mount(2), in the context of
 * the process that mounts, where nvme-rdma and the NFS client connect from
 * kernel threads.  viw lets a process name a kernel QP when it holds
 * CAP_SYS_ADMIN, and refuses it otherwise: that keeps a process that
 * reached iw_cm through rdma_ucm, and guessed a ULP's QP number, off that
 * QP.  Both run here in the writer's context; the refused one with
 * CAP_SYS_ADMIN dropped from its credentials.
 */
static void kt_refused_once(struct sockaddr_in *sin, const char *name,
			    u16 port)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	char why[64];
	int rv;

	if (!c)
		return;
	sin->sin_port = htons(port);
	kt_conn_init(c, IB_POLL_DIRECT);
	rv = kt_connect(c, sin);
	snprintf(why, sizeof(why), "connect: %d, want %d", rv, -EINVAL);
	kt_check(rv == -EINVAL && !completion_done(&c->accepted), name, why);
	sin->sin_port = htons(KT_PORT);
	kt_conn_free(c);
	kfree(c);
}

static void kt_in_process(struct sockaddr_in *sin)
{
	const struct cred *saved;
	struct cred *unprivileged;

	kt_checks_failed = 0;
	kt_send_once(sin, IB_POLL_DIRECT, "process-connect", KT_PORT + 8);
	unprivileged = prepare_creds();
	if (unprivileged) {
		cap_lower(unprivileged->cap_effective, CAP_SYS_ADMIN);
		saved = override_creds(unprivileged);
		kt_refused_once(sin, "process-unprivileged-refused",
				KT_PORT + 9);
		revert_creds(saved);
		put_cred(unprivileged);
	}
	kt_say("DONE %d failed", kt_checks_failed);
}

/* ---- item: a comp_handler that posts into its QP ---------------------- */

/*
 * Poll, repost each receive into the QP, re-arm: all inside the handler.
 * Other work requests' completions (ib_drain_qp's) go to their done.
 */
static void kt_repost_handler(struct ib_cq *cq, void *ctx)
{
	struct kt_end *end = ctx;
	struct ib_wc wc;

	do {
		while (ib_poll_cq(cq, 1, &wc) > 0) {
			if (wc.wr_cqe != &end->cqe) {
				wc.wr_cqe->done(cq, &wc);
				continue;
			}
			end->last_wc = wc;
			if (wc.status != IB_WC_SUCCESS)
				continue;
			end->done_count++;
			if (end->done_count + KT_DEPTH / 2 <= KT_LOOPS)
				kt_post_recv(end, end->done_count % KT_DEPTH);
			complete(&end->done);
		}
	} while (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
				  IB_CQ_REPORT_MISSED_EVENTS) > 0);
}

static void kt_handler_posts(struct sockaddr_in *sin)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	const char *name = "handler-posts";
	char why[96];
	int i, rv = 0;

	if (!c)
		return;
	kt_conn_init(c, IB_POLL_WORKQUEUE);
	c->raw_handler = kt_repost_handler;
	sin->sin_port = htons(KT_PORT + 1);
	rv = kt_connect(c, sin);
	sin->sin_port = htons(KT_PORT);
	snprintf(why, sizeof(why), "connect: %d", rv);
	if (rv) {
		kt_check(false, name, why);
		goto out;
	}
	for (i = 0; i < KT_DEPTH / 2 && !rv; i++)
		rv = kt_post_recv(&c->server, i);
	ib_req_notify_cq(c->server.cq, IB_CQ_NEXT_COMP);
	/* KT_LOOPS SENDs, never more outstanding than receives posted */
	for (i = 0; i < KT_LOOPS && !rv; i++) {
		rv = kt_post_send(&c->client, 0, 0x33, 0);
		if (!rv && !kt_wait_done(&c->client, i + 1))
			rv = -ETIMEDOUT;
		if (!rv && !kt_wait_done(&c->server, i + 1))
			rv = -ETIMEDOUT;
	}
	snprintf(why, sizeof(why),
		 "rv %d, %d of %d received through the handler, status %d",
		 rv, c->server.done_count, KT_LOOPS, c->server.last_wc.status);
	kt_check(!rv && c->server.done_count == KT_LOOPS, name, why);
	rdma_disconnect(c->client.id);
	ib_drain_qp(c->client.qp);
	ib_drain_qp(c->server.qp);
	/* a drain that does not return fails the test by its timeout */
	kt_say("DRAINED %s", name);
out:
	kt_conn_free(c);
	kfree(c);
}

/* ---- item: fast registration and invalidation ------------------------- */

/* The page after the message slots, as a fast-register MR of @end. */
static struct ib_mr *kt_fr_mr(struct kt_end *end, struct scatterlist *sg)
{
	struct ib_mr *mr = ib_alloc_mr(end->pd, IB_MR_TYPE_MEM_REG, 1);
	void *page = PTR_ALIGN(end->buf + KT_DEPTH * KT_MSG, PAGE_SIZE);
	int n;

	if (IS_ERR(mr))
		return mr;
	sg_init_table(sg, 1);
	sg_set_buf(sg, page, PAGE_SIZE);
	sg_dma_address(sg) = end->dma + (page - end->buf);
	sg_dma_len(sg) = PAGE_SIZE;
	n = ib_map_mr_sg(mr, sg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		ib_dereg_mr(mr);
		return ERR_PTR(n < 0 ? n : -EINVAL);
	}
	return mr;
}

static void *kt_fr_page(struct kt_end *end)
{
	return PTR_ALIGN(end->buf + KT_DEPTH * KT_MSG, PAGE_SIZE);
}

/* Post a signaled REG_MR (@reg) or LOCAL_INV of @mr and wait for it. */
static int kt_local_op(struct kt_end *end, struct ib_mr *mr, bool reg)
{
	struct ib_reg_wr rwr = {
		.wr = { .wr_cqe = &end->cqe, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr, .key = mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ,
	};
	struct ib_send_wr inv = {
		.wr_cqe = &end->cqe, .opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED, .ex.invalidate_rkey = mr->rkey,
	};
	int before = end->done_count;
	int rv;

	rv = ib_post_send(end->qp, reg ? &rwr.wr : &inv, NULL);
	if (rv)
		return rv;
	if (!kt_wait_done(end, before + 1))
		return -ETIMEDOUT;
	return end->last_wc.status == IB_WC_SUCCESS ? 0 : -EIO;
}

/* An RDMA WRITE of KT_MSG bytes of @fill from @end to @rkey, @raddr. */
static int kt_write(struct kt_end *end, u32 rkey, u64 raddr, u8 fill)
{
	struct ib_sge sge = {
		.addr = end->dma, .length = KT_MSG,
		.lkey = end->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .wr_cqe = &end->cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr, .rkey = rkey,
	};
	int before = end->done_count;
	int rv;

	memset(end->buf, fill, KT_MSG);
	rv = ib_post_send(end->qp, &wr.wr, NULL);
	if (rv)
		return rv;
	if (!kt_wait_done(end, before + 1))
		return -ETIMEDOUT;
	return end->last_wc.status;
}

static void kt_fast_reg(struct sockaddr_in *sin)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	struct scatterlist sg;
	struct ib_mr *mr = NULL;
	char why[128];
	u8 *page;
	int rv, st;

	if (!c)
		return;
	kt_conn_init(c, IB_POLL_SOFTIRQ);
	sin->sin_port = htons(KT_PORT + 2);
	rv = kt_connect(c, sin);
	sin->sin_port = htons(KT_PORT);
	snprintf(why, sizeof(why), "connect: %d", rv);
	kt_check(!rv, "fastreg-connect", why);
	if (rv)
		goto out;
	page = kt_fr_page(&c->server);
	mr = kt_fr_mr(&c->server, &sg);
	if (IS_ERR(mr)) {
		kt_check(false, "fastreg-map", "alloc_mr/map_mr_sg failed");
		mr = NULL;
		goto out;
	}
	rv = kt_local_op(&c->server, mr, true);
	snprintf(why, sizeof(why), "REG_MR: %d", rv);
	kt_check(!rv, "fastreg-reg", why);
	st = kt_write(&c->client, mr->rkey, mr->iova, 0x11);
	snprintf(why, sizeof(why), "WRITE status %d", st);
	kt_check(!st && !memchr_inv(page, 0x11, KT_MSG), "fastreg-write", why);

	/* SEND with Invalidate of the MR: the receiver is told. */
	st = c->client.done_count;
	rv = kt_post_recv(&c->server, 0);
	if (!rv)
		rv = kt_post_send(&c->client, 1, 0x22, mr->rkey);
	rv = rv ?: !kt_wait_done(&c->server, c->server.done_count + 1);
	kt_wait_done(&c->client, st + 1);
	snprintf(why, sizeof(why), "rv %d status %d flags %#x inv %#x of %#x",
		 rv, c->server.last_wc.status, c->server.last_wc.wc_flags,
		 c->server.last_wc.ex.invalidate_rkey, mr->rkey);
	kt_check(!rv && c->server.last_wc.status == IB_WC_SUCCESS &&
		 (c->server.last_wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
		 c->server.last_wc.ex.invalidate_rkey == mr->rkey,
		 "fastreg-send-inv", why);

	/* registered again under a new key, then LOCAL_INV */
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	rv = kt_local_op(&c->server, mr, true);
	if (!rv)
		rv = kt_local_op(&c->server, mr, false);
	snprintf(why, sizeof(why), "REG_MR, LOCAL_INV: %d", rv);
	kt_check(!rv, "fastreg-local-inv", why);
	memset(page, 0, PAGE_SIZE);
	/*
	 * An iWARP WRITE completes once sent; the TERMINATE that refuses
	 * it comes after, and the client's QP fails with an event.
	 */
	st = kt_write(&c->client, mr->rkey, mr->iova, 0x44);
	rv = kt_wait(&c->client.event) ? c->client.qp_event : -ETIMEDOUT;
	snprintf(why, sizeof(why),
		 "WRITE after LOCAL_INV: status %d, client QP event %d, page %s",
		 st, rv, memchr_inv(page, 0, PAGE_SIZE) ? "written" : "untouched");
	kt_check(rv == IB_EVENT_QP_FATAL && !memchr_inv(page, 0, PAGE_SIZE),
		 "fastreg-write-after-inv", why);
out:
	if (c->client.id)
		rdma_disconnect(c->client.id);
	if (c->server.qp)
		ib_drain_qp(c->server.qp);
	if (mr)
		ib_dereg_mr(mr);
	kt_conn_free(c);
	kfree(c);
}

static void kt_run(struct sockaddr_in *sin)
{
	static const enum ib_poll_context ctxs[] = {
		IB_POLL_DIRECT, IB_POLL_SOFTIRQ, IB_POLL_WORKQUEUE,
		IB_POLL_UNBOUND_WORKQUEUE,
	};
	int i;

	kt_checks_failed = 0;
	for (i = 0; i < ARRAY_SIZE(ctxs); i++)
		kt_poll_ctx(sin, ctxs[i]);
	kt_handler_posts(sin);
	kt_fast_reg(sin);
	kt_say("DONE %d failed", kt_checks_failed);
}

/* ---- the raw peer's connection ---------------------------------------- */

static struct kt_conn *kt_peer;
static struct ib_mr *kt_peer_mr;
static struct scatterlist kt_peer_sg;

#define KT_FILL		SZ_64K
#define KT_POISON	0xdd

static void *kt_fill_buf;
static u64 kt_fill_dma;

static void kt_fill_free(struct ib_device *dev)
{
	if (!kt_fill_buf)
		return;
	ib_dma_unmap_single(dev, kt_fill_dma, KT_FILL, DMA_TO_DEVICE);
	kfree(kt_fill_buf);
	kt_fill_buf = NULL;
}

static void kt_peer_stop(void)
{
	if (!kt_peer)
		return;
	if (kt_peer->server.qp) {
		rdma_disconnect(kt_peer->server.id);
		ib_drain_qp(kt_peer->server.qp);
	}
	if (kt_peer->server.id)
		kt_fill_free(kt_peer->server.id->device);
	if (kt_peer_mr)
		ib_dereg_mr(kt_peer_mr);
	kt_peer_mr = NULL;
	kt_conn_free(kt_peer);
	kfree(kt_peer);
	kt_peer = NULL;
}

static int kt_peer_listen(struct sockaddr_in *sin)
{
	int rv;

	kt_peer_stop();
	kt_peer = kzalloc(sizeof(*kt_peer), GFP_KERNEL);
	if (!kt_peer)
		return -ENOMEM;
	kt_conn_init(kt_peer, IB_POLL_WORKQUEUE);
	rv = kt_listen(kt_peer, sin);
	kt_say("LISTEN %d", rv);
	return rv;
}

static unsigned long kt_nonzero(const u8 *p, unsigned long len)
{
	unsigned long i, n = 0;

	for (i = 0; i < len; i++)
		n += p[i] != 0;
	return n;
}

/* Once the peer is connected: the MR, registered. */
static void kt_peer_show(void)
{
	struct kt_end *end = &kt_peer->server;
	int rv;

	if (!completion_done(&kt_peer->accepted) || kt_peer->cm_error ||
	    !end->qp) {
		kt_say("WAITING cm %d", kt_peer->cm_error);
		return;
	}
	if (!kt_peer_mr) {
		struct ib_mr *mr = kt_fr_mr(end, &kt_peer_sg);

		if (IS_ERR(mr)) {
			kt_say("MR %ld", PTR_ERR(mr));
			return;
		}
		kt_peer_mr = mr;
		rv = kt_local_op(end, mr, true);
		kt_say("REG_MR %d", rv);
	}
	kt_say("STAG %#x ADDR %#llx LEN %lu", kt_peer_mr->rkey,
	       kt_peer_mr->iova, PAGE_SIZE);
	kt_say("PLACED %lu", kt_nonzero(kt_fr_page(end), PAGE_SIZE));
	kt_say("RECV_INV %d", end->last_wc.opcode == IB_WC_RECV &&
	       (end->last_wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
	       end->last_wc.ex.invalidate_rkey == kt_peer_mr->rkey);
}

/* @n SENDs of KT_FILL bytes from the peer connection's server QP. */
static void kt_peer_fill(int n)
{
	struct kt_end *end = &kt_peer->server;
	struct ib_device *dev;
	int i, rv = 0;

	if (!end->qp || n < 1 || n > KT_DEPTH / 2) {
		kt_say("FILL no QP or bad count");
		return;
	}
	dev = end->id->device;
	if (!kt_fill_buf) {
		kt_fill_buf = kzalloc(KT_FILL, GFP_KERNEL);
		if (!kt_fill_buf) {
			kt_say("FILL %d", -ENOMEM);
			return;
		}
		kt_fill_dma = ib_dma_map_single(dev, kt_fill_buf, KT_FILL,
						DMA_TO_DEVICE);
	}
	for (i = 0; i < n && !rv; i++) {
		struct ib_sge sge = {
			.addr = kt_fill_dma, .length = KT_FILL,
			.lkey = end->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_cqe = &end->cqe, .opcode = IB_WR_SEND,
			.sg_list = &sge, .num_sge = 1,
		};

		rv = ib_post_send(end->qp, &wr, NULL);
	}
	kt_say("FILL %d", rv);
}

static void kt_peer_inv(void)
{
	int rv;

	if (!kt_peer || !kt_peer_mr) {
		kt_say("INV no MR");
		return;
	}
	rv = kt_local_op(&kt_peer->server, kt_peer_mr, false);
	kt_say("INV %d", rv);
}

/* ---- debugfs ---------------------------------------------------------- */

static int kt_parse_addr(char *s, struct sockaddr_in *sin, u16 port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL) ? 0 :
								       -EINVAL;
}

/*
 * A command runs in a work item: viw lets only kernel threads connect a
 * kernel consumer's QP (viw_qp_owned_by_current()), as the ULPs do.
 */
struct kt_cmd {
	struct work_struct work;
	char cmd[80];
	int rv;
};

static int kt_do(char *cmd)
{
	struct sockaddr_in sin;
	char addr[40];
	unsigned int port;
	int rv = 0;

	if (sscanf(cmd, "process %39s", addr) == 1) {
		rv = kt_parse_addr(addr, &sin, KT_PORT);
		if (!rv)
			kt_in_process(&sin);
	} else if (sscanf(cmd, "run %39s", addr) == 1) {
		rv = kt_parse_addr(addr, &sin, KT_PORT);
		if (!rv)
			kt_run(&sin);
	} else if (sscanf(cmd, "listen %39s %u", addr, &port) == 2) {
		rv = kt_parse_addr(addr, &sin, port);
		if (!rv)
			rv = kt_peer_listen(&sin);
	} else if (!strncmp(cmd, "inv", 3)) {
		kt_peer_inv();
	} else if (sscanf(cmd, "fill %u", &port) == 1) {
		if (kt_peer)
			kt_peer_fill(port);
	} else if (!strncmp(cmd, "recv", 4)) {
		rv = kt_peer && kt_peer->server.qp ?
		     kt_post_recv(&kt_peer->server, 0) : -ENOTCONN;
	} else if (!strncmp(cmd, "poison", 6)) {
		if (kt_peer && kt_peer_mr)
			memset(kt_fr_page(&kt_peer->server), KT_POISON,
			       PAGE_SIZE);
	} else if (!strncmp(cmd, "stop", 4)) {
		kt_peer_stop();
	} else {
		rv = -EINVAL;
	}
	return rv;
}

static void kt_cmd_work(struct work_struct *work)
{
	struct kt_cmd *c = container_of(work, struct kt_cmd, work);

	c->rv = kt_do(c->cmd);
}

static ssize_t kt_ctl_write(struct file *f, const char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	struct kt_cmd c;

	if (len >= sizeof(c.cmd))
		return -EINVAL;
	if (copy_from_user(c.cmd, ubuf, len))
		return -EFAULT;
	c.cmd[len] = '\0';
	INIT_WORK_ONSTACK(&c.work, kt_cmd_work);
	mutex_lock(&kt_lock);
	kt_out_len = 0;
	kt_out[0] = '\0';
	/* "process" runs here, in the writer's context; the rest in a worker */
	if (!strncmp(c.cmd, "process ", 8)) {
		kt_cmd_work(&c.work);
	} else {
		queue_work(system_unbound_wq, &c.work);
		flush_work(&c.work);
	}
	mutex_unlock(&kt_lock);
	destroy_work_on_stack(&c.work);
	return c.rv ? c.rv : len;
}

static ssize_t kt_ctl_read(struct file *f, char __user *ubuf, size_t len,
			   loff_t *ppos)
{
	ssize_t rv;

	mutex_lock(&kt_lock);
	if (*ppos == 0 && kt_peer && !kt_out_len)
		kt_peer_show();
	rv = simple_read_from_buffer(ubuf, len, ppos, kt_out, kt_out_len);
	if (kt_peer && *ppos >= kt_out_len) {
		/* the peer's state is read anew each time */
		kt_out_len = 0;
		kt_out[0] = '\0';
	}
	mutex_unlock(&kt_lock);
	return rv;
}

static const struct file_operations kt_ctl_fops = {
	.owner = THIS_MODULE,
	.write = kt_ctl_write,
	.read = kt_ctl_read,
	.llseek = default_llseek,
};

static int __init kt_init(void)
{
	kt_dir = debugfs_create_dir("viw_ktest", NULL);
	debugfs_create_file("ctl", 0600, kt_dir, NULL, &kt_ctl_fops);
	return 0;
}

static void __exit kt_exit(void)
{
	debugfs_remove_recursive(kt_dir);
	mutex_lock(&kt_lock);
	kt_peer_stop();
	mutex_unlock(&kt_lock);
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_DESCRIPTION("viw kernel verbs tests");
MODULE_LICENSE("Dual BSD/GPL");
