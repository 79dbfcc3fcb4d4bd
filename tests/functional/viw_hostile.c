// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_hostile: a process that attacks viw through the memory it shares
 * with the kernel (issue 12, lane 1).
 *
 *   viw_hostile local -d DEV [-s SEED] [-n ROUNDS]
 *	Unconnected objects: QPs in RESET and INIT, one with an RQ, one
 *	with an SRQ.
 *   viw_hostile serve -a ADDR [-p PORT] [-n CONNS] [-t SECS]
 *	The victim on the other host: accepts CONNS connections one after
 *	the other, each with an MR between canaries whose STag, address and
 *	length it sends in the accept's private data; when a connection
 *	ends it checks the canaries.
 *   viw_hostile connect -a ADDR [-p PORT] [-s SEED] [-n ROUNDS]
 *	The same objects as local, plus a QP connected to "serve".
 *
 * Each round runs in a child process of its own, seeded with SEED + i:
 *  1. crafted WQEs, written straight into the rings with VALID set, each
 *     with one defect: an opcode out of range, too many SGEs, inline data
 *     longer than the slot, the lkey of another PD or a random one, an
 *     address range wrapping 2^64, a 4 GiB length, a READ with two sinks,
 *     a remote access out of bounds or to a random STag.  The doorbell
 *     rings; each must end in an error completion (its status checked
 *     where the verbs define it) and its QP in ERROR.
 *  2. garbage: producer indices far ahead of and behind the consumer, a
 *     garbage CQ consumer index, arm and kflags words, then random bytes
 *     over every page of every mapping of the uverbs device (rings and
 *     the doorbell page); the doorbells ring and the CQ is polled.
 *  3. the canaries around every MR are checked, and the child exits,
 *     with or without destroying its objects (by seed).
 * The VM test (tests/vm/guest/hostile-process.sh) checks the kernel log,
 * the object counts and rmmod afterwards.
 *
 * Output as the other functional tests (viw_test.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/viw-abi.h>

#include "viw.h"
#include "viw_test.h"

#define HP_PAGE			4096
#define HP_BUF_PAGES		3
#define HP_MR_OFF		1000	/* MRs start and end inside a page */
#define HP_MR_LEN		6000
#define HP_CQE			64
#define HP_WR			16
#define HP_SGE			2
#define HP_INLINE		64
#define HP_ROUND_MS		20000
#define HP_EVENT_MS		5000
#define HP_WRID			0x4857000000000000ULL
#define HP_NAME_SIZE		64

/* Memory with an MR in its middle and canary bytes on either side. */
struct hp_buf {
	uint8_t *base;
	uint8_t *mr_addr;
	struct ibv_mr *mr;
};

/* What "serve" tells "connect" in the accept's private data (big-endian). */
struct hp_remote {
	uint32_t rkey;
	uint32_t len;
	uint64_t addr;
};

struct hp_round {
	unsigned int seed;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct hp_buf b1, b2;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp_rq;		/* INIT, own RQ */
	struct ibv_qp *qp_srq;		/* INIT, on the SRQ */
	struct ibv_qp *qp_reset;	/* never leaves RESET */
	struct ibv_qp *qp_conn;		/* connected (connect mode only) */
	struct rdma_cm_id *id;
	struct rdma_event_channel *ch;
	struct hp_remote remote;
};

static struct {
	const char *mode;
	const char *dev;
	const char *addr;
	const char *port;
	unsigned int seed;
	int rounds;
	int secs;
} hp_opt = { .port = "7700", .seed = 1, .rounds = 8, .secs = 300 };

/* ---- randomness (rand_r: the seed alone decides a round) ----------------- */

static unsigned int hp_rng;

static uint32_t hp_rand32(void)
{
	return ((uint32_t)rand_r(&hp_rng) << 16) ^ (uint32_t)rand_r(&hp_rng);
}

static uint64_t hp_rand64(void)
{
	return ((uint64_t)hp_rand32() << 32) | hp_rand32();
}

static void hp_fill_random(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rand_r(&hp_rng);
}

/* ---- canaries ------------------------------------------------------------- */

static uint8_t hp_canary(size_t i)
{
	return (uint8_t)(0xc3 ^ (i * 13));
}

static bool hp_in_mr(size_t i)
{
	return i >= HP_MR_OFF && i < HP_MR_OFF + HP_MR_LEN;
}

static int hp_buf_alloc(struct hp_buf *b, struct ibv_pd *pd, int access)
{
	size_t i;

	b->base = mmap(NULL, HP_BUF_PAGES * HP_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->base == MAP_FAILED)
		return -1;
	for (i = 0; i < HP_BUF_PAGES * HP_PAGE; i++)
		b->base[i] = hp_in_mr(i) ? 0x11 : hp_canary(i);
	b->mr_addr = b->base + HP_MR_OFF;
	b->mr = ibv_reg_mr(pd, b->mr_addr, HP_MR_LEN, access);
	return b->mr ? 0 : -1;
}

/* The first canary byte that changed, or -1. */
static long hp_canary_damage(const struct hp_buf *b)
{
	size_t i;

	for (i = 0; i < HP_BUF_PAGES * HP_PAGE; i++)
		if (!hp_in_mr(i) && b->base[i] != hp_canary(i))
			return (long)i;
	return -1;
}

static void hp_check_canaries(const struct hp_buf *b, const char *what)
{
	long at = hp_canary_damage(b);

	vt_check(at < 0, what, "canary byte at MR %+ld changed to 0x%02x",
		 at - HP_MR_OFF, at < 0 ? 0 : b->base[at]);
}

/* ---- objects -------------------------------------------------------------- */

#define HP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ)

static struct ibv_qp *hp_create_qp(struct hp_round *r, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->cq, .recv_cq = r->cq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = HP_WR, .max_recv_wr = srq ? 0 : HP_WR,
			 .max_send_sge = HP_SGE, .max_recv_sge = HP_SGE,
			 .max_inline_data = HP_INLINE },
	};

	return ibv_create_qp(r->pd, &attr);
}

static int hp_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT };

	return qp ? ibv_modify_qp(qp, &attr, IBV_QP_STATE) : -1;
}

static int hp_create_objects(struct hp_round *r)
{
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = HP_WR, .max_sge = HP_SGE },
	};

	r->pd = ibv_alloc_pd(r->ctx);
	r->pd2 = ibv_alloc_pd(r->ctx);
	if (!r->pd || !r->pd2 || hp_buf_alloc(&r->b1, r->pd, HP_ACCESS) ||
	    hp_buf_alloc(&r->b2, r->pd2, HP_ACCESS))
		return -1;
	r->cq = ibv_create_cq(r->ctx, HP_CQE, NULL, NULL, 0);
	r->srq = r->cq ? ibv_create_srq(r->pd, &sattr) : NULL;
	if (!r->srq)
		return -1;
	r->qp_rq = hp_create_qp(r, NULL);
	r->qp_srq = hp_create_qp(r, r->srq);
	r->qp_reset = hp_create_qp(r, NULL);
	if (!r->qp_reset || hp_to_init(r->qp_rq) || hp_to_init(r->qp_srq))
		return -1;
	return 0;
}

/* Destroy what the round made; each destroy must succeed. */
static void hp_destroy_objects(struct hp_round *r)
{
	int bad = 0;

	if (r->qp_conn) {
		/* In ERROR already: the disconnect may fail, harmlessly. */
		rdma_disconnect(r->id);
		rdma_destroy_qp(r->id);
	}
	bad |= ibv_destroy_qp(r->qp_reset) | ibv_destroy_qp(r->qp_srq);
	bad |= ibv_destroy_qp(r->qp_rq) | ibv_destroy_srq(r->srq);
	bad |= ibv_destroy_cq(r->cq);
	bad |= ibv_dereg_mr(r->b1.mr) | ibv_dereg_mr(r->b2.mr);
	bad |= ibv_dealloc_pd(r->pd) | ibv_dealloc_pd(r->pd2);
	vt_check(!bad, "destroy", "a destroy or dereg failed");
	if (r->id)
		rdma_destroy_id(r->id);
}

/* ---- writing into the rings ---------------------------------------------- */

static struct viw_queue *hp_sq(struct ibv_qp *qp)
{
	return &to_viw_qp(qp)->sq;
}

/* Put @wqe in the next slot of @q with VALID set, as the provider would. */
static void hp_ring_put(struct viw_queue *q, const void *wqe, size_t size)
{
	uint8_t *slot = viw_ring_slot(&q->ring, q->ring.head);
	uint16_t flags;

	memcpy(&flags, (const uint8_t *)wqe + 8, sizeof(flags));
	memcpy(slot, wqe, size);
	__atomic_store_n((uint16_t *)(slot + 8), flags | VIW_WQE_VALID,
			 __ATOMIC_RELEASE);
	q->ring.head++;
	viw_ring_publish_prod(&q->ring);
}

static int hp_sq_doorbell(struct ibv_qp *qp)
{
	struct ibv_send_wr *bad;

	return ibv_cmd_post_send(qp, NULL, &bad);
}

static int hp_rq_doorbell(struct ibv_qp *qp)
{
	struct ibv_recv_wr *bad;

	return ibv_cmd_post_recv(qp, NULL, &bad);
}

/* ---- crafted send WQEs ---------------------------------------------------- */

enum hp_sq_kind {
	HP_SQ_OPCODE,
	HP_SQ_NUM_SGE,
	HP_SQ_INLINE,
	HP_SQ_FOREIGN_LKEY,
	HP_SQ_RANDOM_LKEY,
	HP_SQ_WRAP,
	HP_SQ_4G,
	HP_SQ_READ_SGES,
	HP_SQ_ATOMIC_LEN,
	HP_SQ_REMOTE_BOUNDS,	/* from here on: the peer finds the error */
	HP_SQ_REMOTE_WRAP,
	HP_SQ_REMOTE_STAG,
	HP_SQ_REMOTE_READ,
	HP_SQ_KINDS,
};

static const char *const hp_sq_names[] = {
	"opcode", "num-sge", "inline", "foreign-lkey", "random-lkey", "wrap",
	"4g", "read-sges", "atomic-len", "remote-bounds", "remote-wrap",
	"remote-stag", "remote-read",
};

/* An SGE naming the whole MR of @b. */
static struct viw_sge hp_sge(const struct hp_buf *b)
{
	return (struct viw_sge){ .addr = (uintptr_t)b->mr_addr,
				 .length = HP_MR_LEN, .lkey = b->mr->lkey };
}

/* A random lkey that is neither MR's. */
static uint32_t hp_random_lkey(const struct hp_round *r)
{
	uint32_t k;

	do {
		k = hp_rand32();
	} while (k == r->b1.mr->lkey || k == r->b2.mr->lkey);
	return k;
}

/* A remote address at or beyond one end of the peer's MR. */
static uint64_t hp_remote_oob(const struct hp_remote *rm, uint32_t len)
{
	if (hp_rand32() & 1)
		return rm->addr - 1 - hp_rand32() % 64;
	return rm->addr + rm->len - len + 1 + hp_rand32() % 64;
}

static void hp_craft_remote(struct hp_round *r, struct viw_sqe *s, int kind)
{
	uint32_t len = 1 + hp_rand32() % 256;

	s->opcode = VIW_OP_WRITE;
	s->num_sge = 1;
	s->sge[0].length = len;
	s->rkey = r->remote.rkey;
	s->raddr = hp_remote_oob(&r->remote, len);
	if (kind == HP_SQ_REMOTE_WRAP)
		s->raddr = UINT64_MAX - hp_rand32() % 128;
	else if (kind == HP_SQ_REMOTE_STAG)
		s->rkey = r->remote.rkey ^ (1 + hp_rand32() % 0xffffff);
	else if (kind == HP_SQ_REMOTE_READ)
		s->opcode = VIW_OP_READ;
}

/* Fill @s: a valid SEND of the start of b1, then the defect @kind. */
static void hp_craft_sqe(struct hp_round *r, struct viw_sqe *s, int kind)
{
	memset(s, 0, sizeof(*s));
	s->wr_id = HP_WRID | (uint64_t)kind << 32 | hp_rand32();
	s->flags = VIW_WQE_SIGNALED;
	s->opcode = VIW_OP_SEND;
	s->num_sge = 1;
	s->sge[0] = hp_sge(&r->b1);
	s->sge[0].length = 64;
	switch (kind) {
	case HP_SQ_OPCODE:
		s->opcode = VIW_OP_MAX + 1 + hp_rand32() % (255 - VIW_OP_MAX);
		break;
	case HP_SQ_NUM_SGE:
		s->num_sge = HP_SGE + 1 + hp_rand32() % (255 - HP_SGE);
		break;
	case HP_SQ_INLINE:
		s->flags |= VIW_WQE_INLINE;
		s->inline_len = VIW_MAX_INLINE + 1 +
				(hp_rand32() & 1 ? hp_rand32() : hp_rand32() % 64);
		break;
	case HP_SQ_FOREIGN_LKEY:
		s->sge[0] = hp_sge(&r->b2);
		break;
	case HP_SQ_RANDOM_LKEY:
		s->sge[0].lkey = hp_random_lkey(r);
		s->sge[0].addr = hp_rand64();
		break;
	case HP_SQ_WRAP:
		s->sge[0].addr = UINT64_MAX - hp_rand32() % HP_PAGE;
		s->sge[0].length = HP_PAGE + hp_rand32() % HP_MR_LEN;
		break;
	case HP_SQ_4G:
		s->sge[0].length = UINT32_MAX - hp_rand32() % 16;
		break;
	case HP_SQ_READ_SGES:
		s->opcode = VIW_OP_READ;
		s->num_sge = 2;
		s->sge[1] = s->sge[0];
		break;
	case HP_SQ_ATOMIC_LEN:
		s->opcode = VIW_OP_ATOMIC_FETCH_ADD;
		s->sge[0].length = 9 + hp_rand32() % 64;
		break;
	default:
		hp_craft_remote(r, s, kind);
	}
}

/* The status a crafted SQE must complete with; -1: any error. */
static int hp_sq_expected(int kind)
{
	switch (kind) {
	case HP_SQ_OPCODE:
	case HP_SQ_NUM_SGE:
	case HP_SQ_INLINE:
	case HP_SQ_READ_SGES:
		return IBV_WC_LOC_QP_OP_ERR;
	case HP_SQ_FOREIGN_LKEY:
	case HP_SQ_RANDOM_LKEY:
	case HP_SQ_WRAP:
	case HP_SQ_4G:
		return IBV_WC_LOC_PROT_ERR;
	case HP_SQ_ATOMIC_LEN:
		return IBV_WC_LOC_LEN_ERR;
	default:
		return -1;
	}
}

/*
 * A WRITE completes when it is sent (RFC 5040 does not acknowledge it):
 * the peer's TERMINATE then takes the QP to ERROR.
 */
static bool hp_remote_write(int kind)
{
	return kind >= HP_SQ_REMOTE_BOUNDS && kind != HP_SQ_REMOTE_READ;
}

/* ---- completions ---------------------------------------------------------- */

/*
 * Poll until a completion with @wr_id arrived, or the deadline; the other
 * completions must all be errors.  Returns its status, or -1 if none.
 */
static int hp_wait_wc(struct hp_round *r, uint64_t wr_id, const char *name)
{
	long long end = vt_deadline_in(HP_EVENT_MS);
	struct ibv_wc wc;

	while (vt_poll_cq_until(r->cq, &wc, 1, end) == 1) {
		if (wc.wr_id == wr_id)
			return wc.status;
		if (wc.status == IBV_WC_SUCCESS && (wc.wr_id >> 48) ==
		    (HP_WRID >> 48))
			vt_fail(name, "crafted WQE 0x%llx completed SUCCESS",
				(unsigned long long)wc.wr_id);
	}
	return -1;
}

static bool hp_wait_state(struct ibv_qp *qp, int state)
{
	long long end = vt_deadline_in(HP_EVENT_MS);

	while (vt_qp_state(qp) != state) {
		if (vt_now_ms() >= end)
			return false;
		usleep(10000);
	}
	return true;
}

/* The name of a case's second check, that its QP went to ERROR. */
static const char *hp_state_name(char *name)
{
	size_t len = strlen(name);

	snprintf(name + len, HP_NAME_SIZE - len, " -> ERR");
	return name;
}

/*
 * One crafted SQE on @qp: it must complete with its error, or (when the
 * defect is the peer's to find) take the QP to ERROR.
 */
static void hp_sq_attack(struct hp_round *r, struct ibv_qp *qp, int kind,
			 bool runs)
{
	int want = hp_sq_expected(kind), got;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct viw_sqe s;
	char name[HP_NAME_SIZE];

	hp_craft_sqe(r, &s, kind);
	snprintf(name, sizeof(name), "%s sq %s", runs ? "conn" : "init",
		 hp_sq_names[kind]);
	hp_ring_put(hp_sq(qp), &s, sizeof(s));
	if (hp_sq_doorbell(qp))
		vt_fail(name, "doorbell: %s", strerror(errno));
	/* In INIT the SQ waits; ERROR flushes it. */
	if (!runs && ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		vt_fail(name, "modify to ERROR: %s", strerror(errno));
	got = hp_wait_wc(r, s.wr_id, name);
	if (runs && want >= 0)
		vt_check(got == want, name, "status %d (%s), want %s", got,
			 got < 0 ? "none" : ibv_wc_status_str(got),
			 ibv_wc_status_str(want));
	else if (!hp_remote_write(kind))
		vt_check(got > 0, name, "status %d (%s), want an error", got,
			 got < 0 ? "none" : ibv_wc_status_str(got));
	vt_check(hp_wait_state(qp, IBV_QPS_ERR), hp_state_name(name),
		 "QP in %s, not ERR", vt_qp_state_str(vt_qp_state(qp)));
}

/* ---- crafted receive WQEs ------------------------------------------------- */

enum hp_rq_kind {
	HP_RQ_NUM_SGE,
	HP_RQ_FOREIGN_LKEY,
	HP_RQ_RANDOM_LKEY,
	HP_RQ_WRAP,
	HP_RQ_4G,
	HP_RQ_KINDS,
};

static const char *const hp_rq_names[] = {
	"num-sge", "foreign-lkey", "random-lkey", "wrap", "4g",
};

static void hp_craft_rqe(struct hp_round *r, struct viw_rqe *q, int kind)
{
	memset(q, 0, sizeof(*q));
	q->wr_id = HP_WRID | 1ULL << 47 | (uint64_t)kind << 32 | hp_rand32();
	q->num_sge = 1;
	q->sge[0] = hp_sge(&r->b1);
	switch (kind) {
	case HP_RQ_NUM_SGE:
		q->num_sge = HP_SGE + 1 + hp_rand32() % (255 - HP_SGE);
		break;
	case HP_RQ_FOREIGN_LKEY:
		q->sge[0] = hp_sge(&r->b2);
		break;
	case HP_RQ_RANDOM_LKEY:
		q->sge[0].lkey = hp_random_lkey(r);
		break;
	case HP_RQ_WRAP:
		q->sge[0].addr = UINT64_MAX - hp_rand32() % HP_PAGE;
		break;
	default:
		q->sge[0].length = UINT32_MAX - hp_rand32() % 16;
	}
}

/*
 * Valid receives, then one with a defect, on the RQ of a QP in INIT.  The
 * doorbell checks a WQE's shape: too many SGEs complete LOC_QP_OP_ERR and
 * the QP goes to ERROR (which flushes the good ones).  Keys and ranges are
 * checked when a SEND uses the receive (docs/semantics.md section 8): such
 * a WQE waits, and ERROR flushes it.  It must never complete SUCCESS.
 */
static void hp_rq_attack(struct hp_round *r, int kind)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->b1.mr_addr,
			       .length = 64, .lkey = r->b1.mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int good = (int)(hp_rand32() % 4), i, got, want;
	bool shape = kind == HP_RQ_NUM_SGE;
	struct viw_rqe q;
	char name[HP_NAME_SIZE];

	snprintf(name, sizeof(name), "init rq %s", hp_rq_names[kind]);
	for (i = 0; i < good; i++)
		if (ibv_post_recv(r->qp_rq, &wr, &bad))
			vt_fail(name, "valid post_recv: %s", strerror(errno));
	hp_craft_rqe(r, &q, kind);
	hp_ring_put(&to_viw_qp(r->qp_rq)->rq, &q, sizeof(q));
	if (hp_rq_doorbell(r->qp_rq))
		vt_fail(name, "doorbell: %s", strerror(errno));
	if (!shape && ibv_modify_qp(r->qp_rq, &attr, IBV_QP_STATE))
		vt_fail(name, "modify to ERROR: %s", strerror(errno));
	got = hp_wait_wc(r, q.wr_id, name);
	want = shape ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_WR_FLUSH_ERR;
	vt_check(got == want, name, "status %d (%s), want %s", got,
		 got < 0 ? "none" : ibv_wc_status_str(got),
		 ibv_wc_status_str(want));
	vt_check(hp_wait_state(r->qp_rq, IBV_QPS_ERR), hp_state_name(name),
		 "QP in %s, not ERR", vt_qp_state_str(vt_qp_state(r->qp_rq)));
}

/* ---- garbage -------------------------------------------------------------- */

/* Producer indices far ahead or behind, a garbage CQ consumer and words. */
static void hp_garbage_indices(struct hp_round *r)
{
	struct viw_ring_ctrl *c[] = {
		hp_sq(r->qp_srq)->ring.ctrl, to_viw_qp(r->qp_rq)->rq.ring.ctrl,
		to_viw_srq(r->srq)->q.ring.ctrl, hp_sq(r->qp_reset)->ring.ctrl,
	};
	struct viw_ring_ctrl *cq = to_viw_cq(r->cq)->q.ring.ctrl;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		c[i]->prod += hp_rand32() & 1 ? 0x80000000u + hp_rand32() % 99 :
						-(1 + hp_rand32() % 99);
		c[i]->cons = hp_rand32();
		c[i]->kflags = hp_rand32();
	}
	cq->cons = hp_rand32();
	cq->prod = hp_rand32();
	cq->arm = hp_rand32();
	cq->kflags = hp_rand32();
}

/* Random bytes over every page of every writable uverbs mapping. */
static int hp_scribble_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[8], path[256] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &start, &end,
			   perms, path) < 3 || !strstr(path, "uverbs"))
			continue;
		if (perms[1] != 'w')
			continue;
		hp_fill_random((uint8_t *)start, end - start);
		n++;
	}
	fclose(f);
	return n;
}

static void hp_ring_all(struct hp_round *r)
{
	struct ibv_qp *qps[] = { r->qp_rq, r->qp_srq, r->qp_reset, r->qp_conn };
	struct ibv_recv_wr *bad;
	size_t i;

	for (i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
		if (!qps[i])
			continue;
		hp_sq_doorbell(qps[i]);
		hp_rq_doorbell(qps[i]);
	}
	ibv_cmd_post_srq_recv(r->srq, NULL, &bad);
	ibv_req_notify_cq(r->cq, hp_rand32() & 1);
}

static void hp_garbage(struct hp_round *r)
{
	struct ibv_wc wc[HP_CQE];
	int maps;

	hp_garbage_indices(r);
	hp_ring_all(r);
	maps = hp_scribble_mappings();
	vt_check(maps >= 8, "scribble", "%d writable uverbs mappings, want "
		 "the doorbell page, a CQ, an SRQ, 3 SQs and 2 RQs", maps);
	hp_ring_all(r);
	/* The provider reads what it finds; its own garbage is its own. */
	ibv_poll_cq(r->cq, HP_CQE, wc);
	usleep(20000);
}

/* ---- rounds --------------------------------------------------------------- */

static int hp_connect(struct hp_round *r)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = HP_WR, .max_recv_wr = HP_WR,
			 .max_send_sge = HP_SGE, .max_recv_sge = HP_SGE,
			 .max_inline_data = HP_INLINE },
	};
	struct rdma_conn_param param = {
		.initiator_depth = 4, .responder_resources = 4,
	};
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	char why[256];

	if (vt_resolve(hp_opt.addr, hp_opt.port, false, &dst) ||
	    vt_route_client(&dst, NULL, 2000, HP_EVENT_MS, &r->ch, &r->id,
			    why, sizeof(why))) {
		vt_fail("connect", "%s", why);
		return -1;
	}
	r->ctx = r->id->verbs;
	if (hp_create_objects(r))
		return -1;
	attr.send_cq = attr.recv_cq = r->cq;
	if (rdma_create_qp(r->id, r->pd, &attr) || rdma_connect(r->id, &param))
		return -1;
	r->qp_conn = r->id->qp;
	if (vt_cm_expect(r->ch, RDMA_CM_EVENT_ESTABLISHED, HP_EVENT_MS, &ev,
			 why, sizeof(why))) {
		vt_fail("connect", "%s", why);
		return -1;
	}
	if (ev->param.conn.private_data_len >= sizeof(r->remote)) {
		memcpy(&r->remote, ev->param.conn.private_data,
		       sizeof(r->remote));
		r->remote.rkey = ntohl(r->remote.rkey);
		r->remote.len = ntohl(r->remote.len);
		r->remote.addr = be64toh(r->remote.addr);
	}
	rdma_ack_cm_event(ev);
	return r->remote.len ? 0 : -1;
}

static void hp_round(unsigned int seed, bool connected)
{
	struct hp_round r = { .seed = seed };
	int sq_kinds = connected ? HP_SQ_KINDS : HP_SQ_REMOTE_BOUNDS;
	int rv;

	hp_rng = seed;
	if (connected) {
		rv = hp_connect(&r);
	} else {
		r.ctx = vt_open_device(hp_opt.dev);
		rv = r.ctx ? hp_create_objects(&r) : -1;
	}
	if (rv) {
		vt_fail("setup", "seed %u: %s", seed, strerror(errno));
		return;
	}
	vt_info("seed %u", seed);
	if (connected)
		hp_sq_attack(&r, r.qp_conn, (int)(seed % sq_kinds), true);
	hp_sq_attack(&r, r.qp_srq, (int)(hp_rand32() % HP_SQ_REMOTE_BOUNDS),
		     false);
	hp_rq_attack(&r, (int)(seed % HP_RQ_KINDS));
	hp_garbage(&r);
	hp_check_canaries(&r.b1, "canaries pd1");
	hp_check_canaries(&r.b2, "canaries pd2");
	if (hp_rand32() & 1)
		hp_destroy_objects(&r);
	else
		vt_info("seed %u: exit with every object alive", seed);
}

/* Run one round in a child; returns whether it passed. */
static bool hp_fork_round(unsigned int seed, bool connected)
{
	long long end = vt_deadline_in(HP_ROUND_MS);
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		hp_round(seed, connected);
		fflush(stdout);
		_exit(vt_failed ? 1 : 0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (vt_now_ms() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			vt_fail("round", "seed %u hung", seed);
			return false;
		}
		usleep(20000);
	}
	if (WIFSIGNALED(status))
		vt_fail("round", "seed %u: killed by signal %d", seed,
			WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void hp_rounds(bool connected)
{
	int i, ok = 0;

	for (i = 0; i < hp_opt.rounds && vt_ms_left(vt_run_deadline); i++)
		ok += hp_fork_round(hp_opt.seed + i, connected);
	vt_check(ok == hp_opt.rounds, "rounds", "%d of %d rounds passed", ok,
		 hp_opt.rounds);
	printf("ROUNDS %d SEEDS %u..%u\n", ok, hp_opt.seed,
	       hp_opt.seed + hp_opt.rounds - 1);
}

/* ---- the victim ----------------------------------------------------------- */

struct hp_victim {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct hp_buf b;
};

static int hp_victim_accept(struct hp_victim *v, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = HP_WR, .max_recv_wr = HP_WR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct hp_remote rm;
	struct rdma_conn_param param = {
		.initiator_depth = 4, .responder_resources = 4,
		.private_data = &rm, .private_data_len = sizeof(rm),
	};

	v->id = id;
	v->pd = ibv_alloc_pd(id->verbs);
	v->cq = v->pd ? ibv_create_cq(id->verbs, HP_CQE, NULL, NULL, 0) : NULL;
	if (!v->cq || hp_buf_alloc(&v->b, v->pd, HP_ACCESS))
		return -1;
	attr.send_cq = attr.recv_cq = v->cq;
	if (rdma_create_qp(id, v->pd, &attr))
		return -1;
	rm = (struct hp_remote){ .rkey = htonl(v->b.mr->rkey),
				 .len = htonl(HP_MR_LEN),
				 .addr = htobe64((uintptr_t)v->b.mr_addr) };
	return rdma_accept(id, &param);
}

static void hp_victim_free(struct hp_victim *v)
{
	if (v->id && v->id->qp)
		rdma_destroy_qp(v->id);
	if (v->b.mr)
		ibv_dereg_mr(v->b.mr);
	if (v->b.base && v->b.base != MAP_FAILED)
		munmap(v->b.base, HP_BUF_PAGES * HP_PAGE);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->id)
		rdma_destroy_id(v->id);
	*v = (struct hp_victim){};
}

/* The connection ended: its canaries must be intact. */
static void hp_victim_done(struct hp_victim *v, int *conns)
{
	if (!v->id)
		return;
	hp_check_canaries(&v->b, "victim canaries");
	hp_victim_free(v);
	(*conns)++;
}

static void hp_serve(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct hp_victim v = {};
	struct rdma_cm_event *ev;
	int conns = 0;

	if (vt_bind_listener(hp_opt.addr, hp_opt.port, &ch, &listen))
		return;
	if (rdma_listen(listen, 8)) {
		vt_fail("listen", "%s", strerror(errno));
		return;
	}
	while (conns < hp_opt.rounds && !vt_cm_get(ch, vt_run_deadline, &ev)) {
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			hp_victim_done(&v, &conns);
			if (hp_victim_accept(&v, id))
				vt_fail("accept", "%s", strerror(errno));
		} else if (type == RDMA_CM_EVENT_DISCONNECTED && id == v.id) {
			hp_victim_done(&v, &conns);
		}
	}
	hp_victim_done(&v, &conns);
	printf("CONNECTIONS %d\n", conns);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ch);
}

/* ---- main ----------------------------------------------------------------- */

static int hp_parse(int argc, char **argv)
{
	int opt;

	if (argc < 2)
		return -1;
	hp_opt.mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "d:a:p:s:n:t:")) != -1) {
		switch (opt) {
		case 'd':
			hp_opt.dev = optarg;
			break;
		case 'a':
			hp_opt.addr = optarg;
			break;
		case 'p':
			hp_opt.port = optarg;
			break;
		case 's':
			hp_opt.seed = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			hp_opt.rounds = atoi(optarg);
			break;
		case 't':
			hp_opt.secs = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || hp_opt.rounds < 1 || hp_opt.secs < 1)
		return -1;
	if (!strcmp(hp_opt.mode, "local"))
		return hp_opt.dev ? 0 : -1;
	if (!strcmp(hp_opt.mode, "serve") || !strcmp(hp_opt.mode, "connect"))
		return hp_opt.addr ? 0 : -1;
	return -1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (hp_parse(argc, argv)) {
		fprintf(stderr, "usage: %s local -d DEV [-s SEED] [-n ROUNDS]\n"
			"       %s serve -a ADDR [-p PORT] [-n CONNS] [-t SECS]\n"
			"       %s connect -a ADDR [-p PORT] [-s SEED] "
			"[-n ROUNDS] [-t SECS]\n", argv[0], argv[0], argv[0]);
		return 2;
	}
	vt_start(hp_opt.secs);
	if (!strcmp(hp_opt.mode, "serve"))
		hp_serve();
	else
		hp_rounds(!strcmp(hp_opt.mode, "connect"));
	return vt_finish();
}
