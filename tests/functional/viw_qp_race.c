// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_qp_race: lookups of a QP by its number while the QP is being
 * created or destroyed (issue 8, items 2 and 3).
 *
 *   viw_qp_race --mode MODE -c ADDR [-p PORT] [-t SECS]
 *
 * ADDR:PORT is an address of another viw host where nothing listens.  The
 * lookup is rdma_connect() on an id without a QP, with conn_param.qp_num
 * set: iw_cm then finds the QP through the driver's iw_get_qp, whoever
 * created it.  It returns EINVAL when no QP has that number, and 0 when
 * one was found (the attempt then ends in REJECTED, as nothing listens).
 *
 * Modes:
 *   create-fault  QP numbers are handed out in sequence, so the next one
 *                 is known.  create_qp is called (ibv_cmd_create_qp) with
 *                 its response in a userfaultfd page, so that the kernel's
 *                 copy of the response blocks; meanwhile another thread
 *                 looks the next number up.  The QP must not be found
 *                 then: once when the copy is then let through (the QP
 *                 must be found after create_qp returned), once when the
 *                 page is unmapped instead (create_qp fails with EFAULT;
 *                 a QP found then would be freed under iw_cm's reference).
 *   destroy-race  one thread creates and destroys QPs in a loop while
 *                 another looks up the current number: every destroy
 *                 returns (bounded), and the kernel log stays clean (the
 *                 script checks it and the object counts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/viw-abi.h>

#include "verbs_provider.h"
#include "viw_test.h"

#define QR_DEFAULT_PORT	"7530"
#define QR_EVENT_MS	10000
#define QR_HANG_MS	10000	/* a destroy_qp longer than this hangs */
#define QR_RACE_MS	8000

struct qr_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct viw_uresp_create_qp drv;
};

/* ep.id: route resolved, never connected; ep.pd and ep.cq outlive it. */
struct qr {
	struct sockaddr_storage dst;
	struct vt_ep ep;
	struct ibv_context *verbs;
};

static int qr_new_id(struct qr *r)
{
	if (vt_ep_route(&r->ep, &r->dst, NULL, 2000, 5000)) {
		vt_fail("setup", "%s", r->ep.why);
		return -1;
	}
	return 0;
}

static void qr_drop_id(struct qr *r)
{
	struct vt_ep id_only = { .ch = r->ep.ch, .id = r->ep.id };

	vt_ep_close(&id_only);
	r->ep.id = NULL;
	r->ep.ch = NULL;
}

/*
 * Look QP number @qpn up through iw_cm: 1 if found, 0 if not, -1 on an
 * unexpected error.  A found QP starts a connection attempt: wait for its
 * end (destroying an id in CONN_SENT is a BUG() in iw_cm) and start over
 * with a fresh id.
 */
static int qr_lookup_start(struct qr *r, uint32_t qpn)
{
	struct rdma_conn_param param = {
		.qp_num = qpn, .responder_resources = 1, .initiator_depth = 1,
	};

	if (!rdma_connect(r->ep.id, &param))
		return 1;
	if (errno == EINVAL)
		return 0;
	vt_info("rdma_connect(qp_num %u): %s", qpn, strerror(errno));
	return -1;
}

/* The end of a connection attempt that found QP @qpn; 1, or -1. */
static int qr_lookup_finish(struct qr *r, uint32_t qpn)
{
	struct rdma_cm_event *ev;

	if (vt_cm_get(r->ep.ch, vt_deadline_in(QR_EVENT_MS), &ev)) {
		vt_fail("lookup", "no event after a connect with QP %u", qpn);
		return -1;
	}
	rdma_ack_cm_event(ev);
	qr_drop_id(r);
	return qr_new_id(r) ? -1 : 1;
}

static int qr_lookup(struct qr *r, uint32_t qpn)
{
	int rv = qr_lookup_start(r, qpn);

	return rv == 1 ? qr_lookup_finish(r, qpn) : rv;
}

static struct ibv_qp *qr_create_qp(struct qr *r)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->ep.cq, .recv_cq = r->ep.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(r->ep.pd, &attr);
}

static int qr_setup(struct qr *r, const char *addr, const char *port)
{
	if (vt_getaddr(addr, port, false, &r->dst)) {
		vt_fail("setup", "bad address %s", addr);
		return -1;
	}
	if (qr_new_id(r))
		return -1;
	r->verbs = r->ep.id->verbs;
	r->ep.pd = ibv_alloc_pd(r->verbs);
	r->ep.cq = r->ep.pd ? ibv_create_cq(r->verbs, 16, NULL, NULL, 0) :
			      NULL;
	if (!r->ep.cq) {
		vt_fail("setup", "PD/CQ: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void qr_teardown(struct qr *r)
{
	vt_ep_close(&r->ep);
}

/* ---- create-fault ---------------------------------------------------------- */

struct qr_fault {
	struct qr *r;
	int uffd;
	void *page;
	size_t page_size;
	uint32_t qpn;		/* the number the blocked create will get */
	bool fail;		/* unmap the page instead of filling it */
	int found;		/* lookup result while the create was blocked */
	bool faulted;
};

/* Wait for the create's fault, look its QP number up, then release it. */
static void *qr_fault_handler(void *arg)
{
	struct qr_fault *f = arg;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	struct uffd_msg msg;
	struct uffdio_range range = {
		.start = (uintptr_t)f->page, .len = f->page_size,
	};
	struct uffdio_zeropage zero = { .range = range };

	if (poll(&pfd, 1, QR_EVENT_MS) != 1 ||
	    read(f->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	f->faulted = true;
	/*
	 * A QP found here is held by iw_cm's connection attempt while
	 * create_qp goes on, and fails if @fail: let it go on before the
	 * attempt ends.
	 */
	f->found = qr_lookup_start(f->r, f->qpn);
	if (f->fail) {
		/* The copy retries on a missing page and fails. */
		munmap(f->page, f->page_size);
		ioctl(f->uffd, UFFDIO_WAKE, &range);
	} else {
		ioctl(f->uffd, UFFDIO_ZEROPAGE, &zero);
	}
	if (f->found == 1)
		f->found = qr_lookup_finish(f->r, f->qpn);
	return NULL;
}

static int qr_uffd_page(struct qr_fault *f)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	f->page_size = sysconf(_SC_PAGESIZE);
	f->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (f->uffd < 0 || ioctl(f->uffd, UFFDIO_API, &api)) {
		vt_fail("setup", "userfaultfd: %s", strerror(errno));
		return -1;
	}
	f->page = mmap(NULL, f->page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->page == MAP_FAILED) {
		vt_fail("setup", "mmap: %s", strerror(errno));
		return -1;
	}
	reg.range.start = (uintptr_t)f->page;
	reg.range.len = f->page_size;
	if (ioctl(f->uffd, UFFDIO_REGISTER, &reg)) {
		vt_fail("setup", "UFFDIO_REGISTER: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * One create_qp whose response copy blocks; returns create_qp's result
 * (0 or an errno) and fills *@qp on success.
 */
static int qr_blocked_create(struct qr *r, struct qr_fault *f,
			     struct ibv_qp *qp)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->ep.cq, .recv_cq = r->ep.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_create_qp cmd = {};
	pthread_t th;
	int rv;

	if (qr_uffd_page(f))
		return -1;
	f->r = r;
	pthread_create(&th, NULL, qr_fault_handler, f);
	rv = ibv_cmd_create_qp(r->ep.pd, qp, &attr, &cmd, sizeof(cmd), f->page,
			       sizeof(struct qr_create_qp_resp));
	pthread_join(th, NULL);
	close(f->uffd);
	if (!f->fail)
		munmap(f->page, f->page_size);
	return rv;
}

static void sc_create_fault(struct qr *r)
{
	struct ibv_qp *q0 = qr_create_qp(r);
	struct qr_fault f = { 0 };
	struct ibv_qp *qp;
	uint32_t next;
	int rv;

	if (!q0) {
		vt_fail("setup", "ibv_create_qp: %s", strerror(errno));
		return;
	}
	next = q0->qp_num + 1;
	vt_check(qr_lookup(r, q0->qp_num) == 1, "a lookup finds a live QP",
		 "QP %u not found", q0->qp_num);
	vt_check(qr_lookup(r, next) == 0, "no QP with the next number yet",
		 "QP %u found", next);

	/* 1: the response copy blocks, then succeeds. */
	qp = calloc(1, 4096);
	f.qpn = next;
	rv = qr_blocked_create(r, &f, qp);
	vt_check(f.faulted, "create_qp's response copy blocked",
		 "no fault on the response page");
	vt_check(f.found == 0, "QP not visible before create_qp returned",
		 "QP %u found by a lookup while create_qp was copying its "
		 "response (lookup %d)", next, f.found);
	vt_check(!rv && qp->qp_num == next, "create_qp succeeded",
		 "rv %d (%s), qp_num %u, expected %u", rv, strerror(rv),
		 rv ? 0 : qp->qp_num, next);
	if (!rv) {
		vt_check(qr_lookup(r, next) == 1,
			 "QP visible once create_qp returned",
			 "QP %u not found", next);
		ibv_cmd_destroy_qp(qp);
		next++;
	}
	free(qp);

	/* 2: the response copy fails: the QP must never have been seen. */
	memset(&f, 0, sizeof(f));
	qp = calloc(1, 4096);
	f.qpn = next;
	f.fail = true;
	rv = qr_blocked_create(r, &f, qp);
	vt_check(f.found == 0, "QP of a failing create_qp never visible",
		 "QP %u found by a lookup while its create_qp was failing "
		 "(lookup %d)", next, f.found);
	vt_check(rv == EFAULT, "create_qp failed with EFAULT", "rv %d (%s)",
		 rv, strerror(rv));
	if (!rv)
		ibv_cmd_destroy_qp(qp);
	free(qp);
	vt_check(qr_lookup(r, next) == 0, "failed QP's number not found",
		 "QP %u found after create_qp failed", next);
	ibv_destroy_qp(q0);
}

/* ---- destroy-race ------------------------------------------------------- */

struct qr_churn {
	struct qr *r;
	atomic_uint qpn;
	atomic_bool stop;
	long created;
	long long worst_ms;
	int error;
};

static void *qr_churn_thread(void *arg)
{
	struct qr_churn *c = arg;

	while (!atomic_load(&c->stop)) {
		struct ibv_qp *qp = qr_create_qp(c->r);
		long long t;

		if (!qp) {
			c->error = errno;
			break;
		}
		atomic_store(&c->qpn, qp->qp_num);
		c->created++;
		/* vary where in a lookup the destroy lands */
		for (volatile int i = rand() % 20000; i > 0; i--)
			;
		t = vt_now_ms();
		ibv_destroy_qp(qp);
		t = vt_now_ms() - t;
		if (t > c->worst_ms)
			c->worst_ms = t;
		if (t > QR_HANG_MS)
			break;
	}
	return NULL;
}

static void sc_destroy_race(struct qr *r)
{
	struct qr_churn c = { .r = r };
	long long end = vt_deadline_in(QR_RACE_MS);
	long lookups = 0, found = 0;
	pthread_t th;

	pthread_create(&th, NULL, qr_churn_thread, &c);
	while (vt_now_ms() < end && !c.error) {
		uint32_t qpn = atomic_load(&c.qpn);
		int rv;

		if (!qpn)
			continue;
		rv = qr_lookup(r, qpn);
		if (rv < 0)
			break;
		found += rv;
		lookups++;
	}
	atomic_store(&c.stop, true);
	pthread_join(th, NULL);
	vt_info("%ld QPs created and destroyed, %ld lookups, %ld found a QP, "
		"slowest destroy %lld ms", c.created, lookups, found,
		c.worst_ms);
	vt_check(!c.error, "create_qp in the loop", "%s", strerror(c.error));
	vt_check(c.worst_ms <= QR_HANG_MS, "every destroy_qp returned",
		 "a destroy_qp took %lld ms", c.worst_ms);
	vt_check(lookups > 0, "lookups raced the destroys", "none ran");
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ 0 },
	};
	struct vt_args a = { .port = QR_DEFAULT_PORT, .secs = 40 };
	const char *mode = NULL;
	struct qr r = { 0 };
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = vt_next_opt(argc, argv, "", opts, &a)) != -1) {
		if (opt != 'm')
			goto usage;
		mode = optarg;
	}
	if (!mode || !a.addr || a.server || a.secs <= 0 || optind != argc)
		goto usage;
	vt_start(a.secs);
	if (qr_setup(&r, a.addr, a.port))
		goto out;
	if (!strcmp(mode, "create-fault"))
		sc_create_fault(&r);
	else if (!strcmp(mode, "destroy-race"))
		sc_destroy_race(&r);
	else
		goto usage;
out:
	qr_teardown(&r);
	return vt_finish();
usage:
	fprintf(stderr, "usage: %s --mode create-fault|destroy-race -c ADDR "
		"[-p PORT] [-t SECS]\n", argv[0]);
	return 2;
}
