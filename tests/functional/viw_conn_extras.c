// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_conn_extras: private data in connect, accept and reject, and corner
 * cases of the send and receive queues (zero-length messages, the most
 * SGEs, inline data, solicited events), over rdma_cm connections between
 * two hosts.
 *
 *   viw_conn_extras -s BIND_ADDR [-p PORT] [-t SECS]    (server)
 *   viw_conn_extras -c SERVER_ADDR [-p PORT] [-t SECS]  (client)
 *
 * The client runs one scenario per connection, in this order, and names
 * it in its rdma_connect private data: 56 bytes, magic, scenario, an
 * argument and a known pattern.  The server checks that it sees exactly
 * those 56 bytes in every CONNECT_REQUEST.
 *
 *   accept-pdata  the server accepts with 32 bytes of a pattern; the
 *                 client finds them in ESTABLISHED.
 *   reject-pdata  the server rejects with 40 bytes of a pattern; the
 *                 client gets REJECTED (status shown as INFO, must be a
 *                 negative errno) carrying those bytes (MPA reply).
 *   zero-length   SEND with num_sge 0, SEND with one 0-byte SGE, RDMA
 *                 WRITE with num_sge 0 to the offered buffer, RDMA WRITE
 *                 with num_sge 0 and a bogus rkey and address, then an
 *                 8-byte SEND: all complete SUCCESS, the server gets
 *                 RECVs of 0, 0 and 8 bytes and its memory is untouched.
 *   max-sge       with the device's max_sge (ibv_query_device) as both
 *                 max_send_sge and max_recv_sge: a SEND gathered from
 *                 max_sge slices (100, 200, ... bytes) scattered into a
 *                 receive of max_sge differently sized slices; an RDMA
 *                 WRITE gathered from the same slices into one remote
 *                 buffer, checked by the server after the 8-byte SEND
 *                 behind it; then a SEND and a receive with max_sge + 1
 *                 SGEs must fail to post with EINVAL.
 *   inline        SENDs with IBV_SEND_INLINE of 64 bytes from unregistered
 *                 memory (lkey 0; one SGE, then two), the source cleared
 *                 as soon as ibv_post_send returned: the server receives
 *                 the original bytes.
 *   solicited     the server arms its CQ for solicited completions only;
 *                 the client sends 16 bytes without SOLICITED, waits for
 *                 its completion and 200 ms, then 16 bytes with it.  The
 *                 completion channel must deliver an event, and both
 *                 receives must be in the CQ by then, in order.  (Whether
 *                 the unsolicited one raised an event is not asserted.)
 *   bulk          64 KiB messages (tests/vm/guest/sec-mem-mtu.sh runs
 *                 them over a 64 KiB MTU): a SEND from one page-aligned
 *                 SGE into a one-SGE receive, a SEND gathered from six
 *                 SGEs into a two-SGE receive, RDMA WRITEs of
 *                 both into the offered buffer, RDMA READs of 64 KiB from
 *                 an aligned and an unaligned source (the server answers
 *                 them) into an aligned and an unaligned sink, then an
 *                 8-byte SEND.  The server checks every byte of its bulk
 *                 area, the client every byte it READ.  The first five
 *                 gather SGEs are 4098 bytes from the last byte of a page
 *                 (three page pieces each), the sixth takes the rest, so
 *                 that one FPDU of a large-MTU link is made of more than
 *                 14 page pieces (needs max_sge 6).  Then a READ of the
 *                 source into a cleared sink, a fenced WRITE of the sink
 *                 back over the source and a READ of it again: the last
 *                 READ must find the source's bytes, which it does only
 *                 if the fence held the WRITE until the first READ's data
 *                 arrived.
 *
 * Every posted WR is signaled; the completions must all be SUCCESS, in
 * posting order, with the expected opcode, byte_len (receives) and no
 * wc_flags, and no other completion may follow.
 *
 * One "PASS name" or "FAIL name: why" line per check, "INFO" lines for
 * context, and a final "N passed, N failed"; exit 0 only if all passed.
 * Every wait has a deadline, and the whole run is bounded by -t (client
 * 40 s, server 45 s by default; a watchdog ends the process 5 s later if
 * a call blocks).  The client retries its first connection for 5 s while
 * it is refused, so the server may start at the same time.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "viw_test.h"

#define XS_MAGIC		0x76697778	/* "viwx" */
#define XS_DEFAULT_PORT		"7520"
#define XS_CLIENT_SECS		40
#define XS_SERVER_SECS		45

#define XS_HELLO_LEN		56	/* connect private data */
#define XS_ACCEPT_LEN		32	/* accept private data */
#define XS_REJECT_LEN		40	/* reject private data */
#define XS_INLINE_LEN		64
#define XS_SIGNAL_LEN		8	/* the SEND behind a WRITE */
#define XS_SOLICIT_LEN		16
#define XS_MAX_SGE		32	/* a larger device max_sge is not tested */

/* Pattern seeds. */
#define XS_SEED_HELLO		0x10	/* + scenario */
#define XS_SEED_ACCEPT		0x41
#define XS_SEED_INLINE1		0x49
#define XS_SEED_INLINE2		0x4a
#define XS_SEED_REJECT		0x52
#define XS_SEED_UNSOL		0x53
#define XS_SEED_SOL		0x54
#define XS_SEED_SIGNAL		0x5a
#define XS_SEED_BULK1		0x61
#define XS_SEED_BULK2		0x62
#define XS_SEED_BULK_READ	0x63

/* The server's buffer (LOCAL_WRITE | REMOTE_WRITE), XS_S_FILL before each
 * connection. */
#define XS_SBUF_LEN		(768 * 1024)
#define XS_S_RECV		0		/* max-sge receive slices */
#define XS_S_RECV_LEN		(128 * 1024)
#define XS_S_TARGET		(128 * 1024)	/* offered to RDMA WRITE */
#define XS_S_TARGET_LEN		(64 * 1024)
#define XS_S_SLOTS		(192 * 1024)	/* one-SGE receives */
#define XS_SLOT_LEN		256
#define XS_SLOT_GAP		512
#define XS_WRITE_OFF		64		/* WRITEs land at target + 64 */
#define XS_S_FILL		0xee

/* bulk: the server's area, above the buffers the other scenarios use */
#define XS_BULK_LEN		(64 * 1024)
#define XS_B_BASE		(256 * 1024)
#define XS_B_RECV1		XS_B_BASE		/* one-SGE receive */
#define XS_B_RECV2		(XS_B_BASE + XS_BULK_LEN + 16)	/* two SGEs */
#define XS_B_RECV2_A		40000
#define XS_B_RECV2_GAP		48
#define XS_B_RECV2_B		30000
#define XS_B_TARGET		(XS_B_BASE + 192 * 1024)	/* offered */
#define XS_B_TARGET_LEN		(XS_SBUF_LEN - XS_B_TARGET)
#define XS_B_WRITE1		0			/* in the target */
#define XS_B_WRITE2		(XS_BULK_LEN + 100)
#define XS_B_READ		(192 * 1024)		/* READ source */
#define XS_B_READ_UNAL		7

/* The client's buffer. */
#define XS_CBUF_LEN		(512 * 1024)
#define XS_C_SLICES		0		/* max-sge gather slices */
#define XS_C_SMALL		(120 * 1024)	/* small SENDs */
#define XS_C_B_ALIGNED		(128 * 1024)	/* bulk: one-SGE source */
#define XS_C_B_GATHER		(192 * 1024)	/* six SGEs, see bulk_gather */
#define XS_B_SGES		6
#define XS_B_PIECE_LEN		4098		/* 1 + 4096 + 1 bytes */
#define XS_C_B_READ1		(320 * 1024)	/* aligned sink */
#define XS_C_B_READ2		(384 * 1024 + 3)	/* unaligned sink */

#define XS_QP_DEPTH		16
#define XS_RESOLVE_MS		2000
#define XS_EVENT_MS		3000
#define XS_CONNECT_MS		10000
#define XS_CQ_MS		5000
#define XS_EXTRA_MS		100
#define XS_NO_EVENT_MS		200
#define XS_SOLICIT_GAP_MS	200
#define XS_DISC_MS		10000
#define XS_RETRY_MS		5000

enum {
	XS_ACCEPT_PDATA,
	XS_REJECT_PDATA,
	XS_ZERO_LEN,
	XS_MAX_SGE_SC,
	XS_INLINE,
	XS_SOLICITED,
	XS_BULK,
	XS_NUM_SCENARIOS,
};

static const char *const xs_names[XS_NUM_SCENARIOS] = {
	[XS_ACCEPT_PDATA] = "accept-pdata",
	[XS_REJECT_PDATA] = "reject-pdata",
	[XS_ZERO_LEN] = "zero-length",
	[XS_MAX_SGE_SC] = "max-sge",
	[XS_INLINE] = "inline",
	[XS_SOLICITED] = "solicited",
	[XS_BULK] = "bulk",
};

/* Client -> server, in the rdma_connect private data (big endian). */
struct xs_hello {
	uint32_t magic;
	uint32_t scenario;
	uint32_t arg;		/* max-sge: the client's max_send_sge */
	uint8_t pat[XS_HELLO_LEN - 12];
};
_Static_assert(sizeof(struct xs_hello) == XS_HELLO_LEN, "hello size");
/* bulk's fence check: two sinks in the client's buffer */
_Static_assert(XS_B_READ + 2 * XS_BULK_LEN <= XS_CBUF_LEN, "fence sinks");

/* Server -> client, in the rdma_accept private data (big endian), except
 * in accept-pdata, which sends XS_ACCEPT_LEN bytes of a pattern. */
struct xs_offer {
	uint32_t magic;
	uint32_t scenario;
	uint64_t addr;		/* the server's WRITE target */
	uint32_t rkey;
	uint32_t len;
};

/* A completion a check expects: always SUCCESS. */
struct xs_want {
	const char *what;
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	int64_t byte_len;	/* -1: not checked (send completions) */
};

/* ---- patterns ------------------------------------------------------------ */

static uint8_t pat(unsigned int seed, size_t i)
{
	return (uint8_t)(i * 29 + seed * 71 + 3);
}

static void fill_pat(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* Byte @k of the max-sge message: not periodic in 256, so that a slice
 * placed at the wrong offset shows. */
static uint8_t msg_byte(size_t k)
{
	return (uint8_t)(k * 7 + (k >> 8) * 13 + 0x21);
}

/* Byte @k of bulk message @seed: not periodic within 64 KiB, so that a
 * page piece sent or placed at the wrong offset shows. */
static uint8_t bulk_byte(unsigned int seed, size_t k)
{
	return (uint8_t)(msg_byte(k) + seed * 17);
}

static void fill_bulk(uint8_t *p, size_t len, unsigned int seed, size_t k0)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = bulk_byte(seed, k0 + i);
}

/* bulk: SGE @i of the gathered message, each from the last byte of a
 * page, three pages apart. */
static uint32_t bulk_gather_len(int i)
{
	return i < XS_B_SGES - 1 ? XS_B_PIECE_LEN :
	       XS_BULK_LEN - (XS_B_SGES - 1) * XS_B_PIECE_LEN;
}

static uint32_t bulk_gather_off(int i)
{
	return XS_C_B_GATHER + (uint32_t)i * 3 * 4096 + 4095;
}

/* First offset where @got differs from @want, or -1. */
static long first_diff(const uint8_t *got, const uint8_t *want, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (got[i] != want[i])
			return (long)i;
	return -1;
}

static void check_bytes(const char *name, const uint8_t *got,
			const uint8_t *want, size_t len)
{
	long off = first_diff(got, want, len);

	vt_check(off < 0, name, "byte %ld of %zu is %#x, expected %#x", off,
		 len,
		 off < 0 ? 0 : got[off], off < 0 ? 0 : want[off]);
}

/* max-sge layout: the SEND's slice i is (i + 1) * 100 bytes at
 * send_off(i) of the client's buffer, 32 bytes apart. */
static uint32_t send_len(int i)
{
	return 100 * (uint32_t)(i + 1);
}

static uint32_t send_off(int i)
{
	uint32_t off = XS_C_SLICES;
	int j;

	for (j = 0; j < i; j++)
		off += send_len(j) + 32;
	return off;
}

static uint32_t msg_total(int n)
{
	uint32_t total = 0;
	int i;

	for (i = 0; i < n; i++)
		total += send_len(i);
	return total;
}

/* The receive's slice j of m: 150, 250, ... bytes, the last one takes the
 * rest of the @total-byte message and 64 bytes more; 48 bytes apart. */
static uint32_t recv_len(int j, int m, uint32_t total)
{
	uint32_t sum = 0;
	int k;

	if (j < m - 1)
		return 150 + 100 * (uint32_t)j;
	for (k = 0; k < m - 1; k++)
		sum += 150 + 100 * (uint32_t)k;
	return (total > sum ? total - sum : 0) + 64;
}

static uint32_t recv_off(int j, int m, uint32_t total)
{
	uint32_t off = XS_S_RECV + 16;
	int k;

	for (k = 0; k < j; k++)
		off += recv_len(k, m, total) + 48;
	return off;
}

static void make_hello(struct xs_hello *h, int sc, uint32_t arg)
{
	h->magic = htobe32(XS_MAGIC);
	h->scenario = htobe32(sc);
	h->arg = htobe32(arg);
	fill_pat(h->pat, sizeof(h->pat), XS_SEED_HELLO + sc);
}

/* ---- verbs and CM helpers ------------------------------------------------ */

/*
 * The @n completions of @want, in order: @have of them already in @wc,
 * the rest polled from @cq.  One check per completion ("SCENARIO: what");
 * true if all matched.
 */
static bool expect_wcs(int sc, struct ibv_cq *cq, const struct xs_want *want,
		       int n, struct ibv_wc *wc, int have)
{
	long long start = vt_now_ms();
	bool ok = true;
	char name[128];
	int got, i;

	got = have + vt_poll_cq_until(cq, wc + have, n - have,
				      vt_deadline_in(XS_CQ_MS));
	for (i = 0; i < n; i++) {
		const struct xs_want *w = &want[i];
		const struct ibv_wc *c = &wc[i];

		snprintf(name, sizeof(name), "%s: %s", xs_names[sc], w->what);
		if (i >= got) {
			vt_fail(name, "no completion within %lld ms (%d of %d "
				"arrived)", vt_now_ms() - start, got, n);
			ok = false;
		} else if (c->wr_id != w->wr_id) {
			vt_fail(name,
				"completion %d is for wr_id %llu (%s, %s): "
				"not in posting order", i,
				(unsigned long long)c->wr_id,
				vt_wc_opcode_name(c->opcode),
				ibv_wc_status_str(c->status));
			ok = false;
		} else if (c->status != IBV_WC_SUCCESS) {
			vt_fail(name, "status %s (%d), vendor_err %#x",
				ibv_wc_status_str(c->status), c->status,
				c->vendor_err);
			ok = false;
		} else if (c->opcode != w->opcode) {
			vt_fail(name, "opcode %s (%d), expected %s",
				vt_wc_opcode_name(c->opcode), c->opcode,
				vt_wc_opcode_name(w->opcode));
			ok = false;
		} else if (w->byte_len >= 0 &&
			   c->byte_len != (uint64_t)w->byte_len) {
			vt_fail(name, "byte_len %u, expected %lld", c->byte_len,
				(long long)w->byte_len);
			ok = false;
		} else if (c->wc_flags) {
			vt_fail(name, "wc_flags %#x, expected none",
				c->wc_flags);
			ok = false;
		} else {
			vt_pass("%s", name);
		}
	}
	return ok;
}

/* No completion arrives within XS_EXTRA_MS. */
static void expect_no_wc(int sc, const char *side, struct ibv_cq *cq)
{
	struct ibv_wc wc;
	char name[96];
	int got;

	usleep(XS_EXTRA_MS * 1000);
	got = ibv_poll_cq(cq, 1, &wc);
	snprintf(name, sizeof(name), "%s: %s no extra completion",
		 xs_names[sc], side);
	vt_check(got == 0, name, "wr_id %llu %s %s",
		 (unsigned long long)wc.wr_id,
		 got > 0 ? vt_wc_opcode_name(wc.opcode) : "poll error",
		 got > 0 ? ibv_wc_status_str(wc.status) : "");
}

/* ---- client -------------------------------------------------------------- */

struct xs_client {
	struct vt_ep ep;
	struct sockaddr_storage dst;
	uint8_t *buf;
	int max_sge;			/* the device's */
	struct ibv_qp_cap cap;		/* granted to the QP */
	/* The answer to rdma_connect: its event, status and private data. */
	enum rdma_cm_event_type event;
	int status;
	uint8_t pdata[256];
	unsigned int pdata_len;
	struct xs_offer peer;		/* host byte order */
	int sc;				/* the scenario being connected */
	bool first;			/* the run's first connection */
};

/* PD, MR, CQ and a QP with the device's max_sge and 64 bytes inline. */
static int client_alloc(struct xs_client *c)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = XS_QP_DEPTH,
			.max_recv_wr = 4,
			.max_inline_data = XS_INLINE_LEN,
		},
	};
	struct ibv_device_attr dattr;
	int rv;

	rv = ibv_query_device(c->ep.id->verbs, &dattr);
	if (rv) {
		snprintf(c->ep.why, sizeof(c->ep.why), "ibv_query_device: %s",
			 strerror(rv));
		return -rv;
	}
	c->max_sge = dattr.max_sge;
	if (c->max_sge < 1 || c->max_sge > XS_MAX_SGE) {
		snprintf(c->ep.why, sizeof(c->ep.why), "device max_sge %d "
			 "outside 1..%d", c->max_sge, XS_MAX_SGE);
		return -EINVAL;
	}
	attr.cap.max_send_sge = c->max_sge;
	attr.cap.max_recv_sge = c->max_sge;
	rv = vt_ep_alloc(&c->ep, c->buf, XS_CBUF_LEN, 2 * XS_QP_DEPTH, &attr);
	if (!rv)
		c->cap = attr.cap;
	return rv;
}

/* Channel, id, address and route, resources. */
static int client_setup(struct xs_client *c)
{
	int rv;

	rv = vt_ep_route(&c->ep, &c->dst, c, XS_RESOLVE_MS, XS_EVENT_MS);
	if (rv)
		return rv;
	return client_alloc(c);
}

/*
 * rdma_connect with the hello of c->sc; the answering event in c->event.
 * A REJECTED without private data to the run's first connection counts
 * as refused (-ECONNREFUSED): the server may not be listening yet.
 */
static int client_connect_once(void *arg)
{
	struct xs_client *c = arg;
	int sc = c->sc;
	struct xs_hello hello;
	struct rdma_conn_param param = {
		.private_data = &hello,
		.private_data_len = sizeof(hello),
		.responder_resources = 1,
		.initiator_depth = 1,
	};
	struct rdma_cm_event *ev;
	long long start;
	int rv;

	rv = client_setup(c);
	if (rv)
		return rv;
	make_hello(&hello, sc, sc == XS_MAX_SGE_SC ? (uint32_t)c->max_sge : 0);
	if (rdma_connect(c->ep.id, &param)) {
		rv = -errno;
		snprintf(c->ep.why, sizeof(c->ep.why), "rdma_connect: %s",
			 strerror(errno));
		return rv;
	}
	start = vt_now_ms();
	rv = vt_cm_get(c->ep.ch, vt_deadline_in(XS_CONNECT_MS), &ev);
	if (rv) {
		snprintf(c->ep.why, sizeof(c->ep.why), "no answer to "
			 "rdma_connect within %lld ms: %s",
			 vt_now_ms() - start, strerror(-rv));
		return rv;
	}
	c->event = ev->event;
	c->status = ev->status;
	c->pdata_len = 0;
	if (ev->param.conn.private_data) {
		c->pdata_len = ev->param.conn.private_data_len;
		if (c->pdata_len > sizeof(c->pdata))
			c->pdata_len = sizeof(c->pdata);
		memcpy(c->pdata, ev->param.conn.private_data, c->pdata_len);
	}
	rdma_ack_cm_event(ev);
	if (c->first && c->event == RDMA_CM_EVENT_REJECTED && !c->pdata_len) {
		snprintf(c->ep.why, sizeof(c->ep.why), "REJECTED, status %d",
			 c->status);
		return -ECONNREFUSED;
	}
	return 0;
}

/* Connect for scenario @sc: true once rdma_connect was answered. */
static bool client_connect(struct xs_client *c, int sc, bool first)
{
	char name[64];

	snprintf(name, sizeof(name), "%s: connect", xs_names[sc]);
	c->sc = sc;
	c->first = first;
	return vt_ep_connect_retry(&c->ep, name, first, XS_RETRY_MS,
				   client_connect_once, c);
}

static int client_parse_offer(struct xs_client *c, int sc)
{
	struct xs_offer o;
	int rv;

	rv = vt_take_offer(c->pdata, c->pdata_len, &o, sizeof(o), XS_MAGIC, sc,
			   c->ep.why, sizeof(c->ep.why));
	if (rv)
		return rv;
	c->peer.addr = be64toh(o.addr);
	c->peer.rkey = be32toh(o.rkey);
	c->peer.len = be32toh(o.len);
	return 0;
}

/* The private data of the answer: @len bytes of pattern @seed. */
static void client_check_pdata(struct xs_client *c, const char *name,
			       unsigned int len, unsigned int seed)
{
	uint8_t want[XS_REJECT_LEN > XS_ACCEPT_LEN ? XS_REJECT_LEN :
		     XS_ACCEPT_LEN];

	if (c->pdata_len < len) {
		vt_fail(name, "private_data_len %u", c->pdata_len);
		return;
	}
	fill_pat(want, len, seed);
	check_bytes(name, c->pdata, want, len);
}

static void client_reject_pdata(struct xs_client *c)
{
	if (c->event != RDMA_CM_EVENT_REJECTED) {
		vt_fail("reject-pdata: client gets REJECTED",
			"got %s, status %d",
			rdma_event_str(c->event), c->status);
		return;
	}
	vt_pass("reject-pdata: client gets REJECTED");
	vt_info("reject-pdata: REJECTED status %d (%s), %u bytes of private "
		"data", c->status, c->status < 0 ? strerror(-c->status) : "-",
		c->pdata_len);
	vt_check(c->status < 0, "reject-pdata: REJECTED status is a negative "
		 "errno", "status %d", c->status);
	client_check_pdata(c, "reject-pdata: client sees the 40 bytes of "
			   "reject private data", XS_REJECT_LEN,
			   XS_SEED_REJECT);
}

static void client_accept_pdata(struct xs_client *c)
{
	vt_info("accept-pdata: %u bytes of accept private data", c->pdata_len);
	client_check_pdata(c, "accept-pdata: client sees the 32 bytes of "
			   "accept private data", XS_ACCEPT_LEN,
			   XS_SEED_ACCEPT);
}

static void set_sge(struct ibv_sge *sge, const struct xs_client *c,
		    uint32_t off, uint32_t len)
{
	sge->addr = (uintptr_t)(c->buf + off);
	sge->length = len;
	sge->lkey = c->ep.mr->lkey;
}

/*
 * @n signaled SENDs with wr_id 1..@n, for a scenario to change; *@sig
 * describes the 8-byte SEND that ends a scenario's WRs.
 */
static void client_init_wrs(struct xs_client *c, struct ibv_send_wr *wr,
			    int n, struct ibv_sge *sig)
{
	int i;

	memset(wr, 0, n * sizeof(*wr));
	for (i = 0; i < n; i++) {
		wr[i].wr_id = i + 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].opcode = IBV_WR_SEND;
	}
	fill_pat(c->buf + XS_C_SMALL, XS_SIGNAL_LEN, XS_SEED_SIGNAL);
	set_sge(sig, c, XS_C_SMALL, XS_SIGNAL_LEN);
}

/* Post a chain of @n WRs; a check named @what. */
static bool client_post(struct xs_client *c, int sc, struct ibv_send_wr *wr,
			int n, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	char name[128];
	int i, rv;

	for (i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	rv = ibv_post_send(c->ep.id->qp, wr, &bad);
	snprintf(name, sizeof(name), "%s: post %s", xs_names[sc], what);
	vt_check(!rv, name, "ibv_post_send: %s (bad_wr %lld)", strerror(rv),
		 bad ? (long long)bad->wr_id : -1LL);
	return !rv;
}

static void client_zero_len(struct xs_client *c)
{
	static const struct xs_want want[] = {
		{ "SEND num_sge 0 completes", 1, IBV_WC_SEND, -1 },
		{ "SEND with a 0-byte SGE completes", 2, IBV_WC_SEND, -1 },
		{ "WRITE num_sge 0 completes", 3, IBV_WC_RDMA_WRITE, -1 },
		{ "WRITE num_sge 0, bogus rkey completes", 4,
		  IBV_WC_RDMA_WRITE, -1 },
		{ "8-byte SEND behind them completes", 5, IBV_WC_SEND, -1 },
	};
	struct ibv_send_wr wr[5];
	struct ibv_wc wc[5];
	struct ibv_sge sge0, sig;

	client_init_wrs(c, wr, 5, &sig);
	set_sge(&sge0, c, XS_C_SMALL + 64, 0);
	wr[1].sg_list = &sge0;
	wr[1].num_sge = 1;
	wr[2].opcode = IBV_WR_RDMA_WRITE;
	wr[2].wr.rdma.remote_addr = c->peer.addr + XS_WRITE_OFF;
	wr[2].wr.rdma.rkey = c->peer.rkey;
	wr[3].opcode = IBV_WR_RDMA_WRITE;
	wr[3].wr.rdma.remote_addr = 0;
	wr[3].wr.rdma.rkey = ~c->peer.rkey;
	wr[4].sg_list = &sig;
	wr[4].num_sge = 1;
	if (!client_post(c, XS_ZERO_LEN, wr, 5, "5 WRs"))
		return;
	expect_wcs(XS_ZERO_LEN, c->ep.cq, want, 5, wc, 0);
	expect_no_wc(XS_ZERO_LEN, "client", c->ep.cq);
}

/* A post of one WR: EINVAL, with bad_wr on it (@bad_is_wr). */
static void check_refused(const char *name, int rv, bool bad_is_wr,
			  bool bad_set)
{
	vt_check(rv == EINVAL && bad_is_wr, name, "returned %d (%s), bad_wr %s",
		 rv, strerror(rv), bad_is_wr ? "the WR" :
		 bad_set ? "another WR" : "NULL");
}

/* A SEND and a receive with one SGE too many must not post. */
static void client_too_many_sges(struct xs_client *c)
{
	struct ibv_sge sge[XS_MAX_SGE + 1];
	struct ibv_send_wr swr = { 0 }, *sbad = NULL;
	struct ibv_recv_wr rwr = { 0 }, *rbad = NULL;
	int n = c->max_sge + 1, i, rv;

	for (i = 0; i < n; i++)
		set_sge(&sge[i], c, XS_C_SMALL + 16 * i, 8);
	swr.wr_id = 99;
	swr.sg_list = sge;
	swr.num_sge = n;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	rv = ibv_post_send(c->ep.id->qp, &swr, &sbad);
	check_refused("max-sge: SEND with max_send_sge + 1 SGEs fails with "
		      "EINVAL", rv, sbad == &swr, sbad != NULL);
	rwr.wr_id = 98;
	rwr.sg_list = sge;
	rwr.num_sge = n;
	rv = ibv_post_recv(c->ep.id->qp, &rwr, &rbad);
	check_refused("max-sge: receive with max_recv_sge + 1 SGEs fails "
		      "with EINVAL", rv, rbad == &rwr, rbad != NULL);
}

static void client_max_sge(struct xs_client *c)
{
	static const struct xs_want want[] = {
		{ "SEND with max_send_sge SGEs completes", 1, IBV_WC_SEND, -1 },
		{ "WRITE with max_send_sge SGEs completes", 2,
		  IBV_WC_RDMA_WRITE, -1 },
		{ "8-byte SEND behind them completes", 3, IBV_WC_SEND, -1 },
	};
	struct ibv_sge sge[XS_MAX_SGE], sig;
	struct ibv_send_wr wr[3];
	struct ibv_wc wc[3];
	int n = c->max_sge, i;
	uint32_t k = 0, b;

	vt_info("max-sge: device max_sge %d; QP granted max_send_sge %u "
		"max_recv_sge %u; message %u bytes", c->max_sge,
		c->cap.max_send_sge, c->cap.max_recv_sge, msg_total(n));
	vt_check(c->cap.max_send_sge >= (uint32_t)n &&
		 c->cap.max_recv_sge >= (uint32_t)n, "max-sge: QP granted "
		 "max_sge SGEs", "max_send_sge %u max_recv_sge %u, asked %d",
		 c->cap.max_send_sge, c->cap.max_recv_sge, n);
	memset(c->buf + XS_C_SLICES, 0, send_off(n));
	for (i = 0; i < n; i++) {
		for (b = 0; b < send_len(i); b++)
			c->buf[send_off(i) + b] = msg_byte(k++);
		set_sge(&sge[i], c, send_off(i), send_len(i));
	}
	client_init_wrs(c, wr, 3, &sig);
	for (i = 0; i < 2; i++) {
		wr[i].sg_list = sge;
		wr[i].num_sge = n;
	}
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].wr.rdma.remote_addr = c->peer.addr + XS_WRITE_OFF;
	wr[1].wr.rdma.rkey = c->peer.rkey;
	wr[2].sg_list = &sig;
	wr[2].num_sge = 1;
	if (!client_post(c, XS_MAX_SGE_SC, wr, 3, "SEND, WRITE, SEND"))
		return;
	if (expect_wcs(XS_MAX_SGE_SC, c->ep.cq, want, 3, wc, 0))
		client_too_many_sges(c);
	else
		vt_fail("max-sge: max_sge + 1 SGEs",
			"not tried: the WRs before "
			"did not all complete");
	expect_no_wc(XS_MAX_SGE_SC, "client", c->ep.cq);
}

static void client_inline(struct xs_client *c)
{
	static const struct xs_want want[] = {
		{ "inline SEND, one SGE, completes", 1, IBV_WC_SEND, -1 },
		{ "inline SEND, two SGEs, completes", 2, IBV_WC_SEND, -1 },
	};
	uint8_t *one = malloc(XS_INLINE_LEN), *two = malloc(XS_INLINE_LEN);
	uint8_t *three = malloc(XS_INLINE_LEN);
	uint8_t both[XS_INLINE_LEN];
	struct ibv_sge sge1, sge2[2];
	struct ibv_send_wr wr[2];
	struct ibv_wc wc[2];
	int i;

	if (!one || !two || !three) {
		vt_fail("inline: setup", "out of memory");
		goto out;
	}
	vt_info("inline: QP granted max_inline_data %u",
		c->cap.max_inline_data);
	vt_check(c->cap.max_inline_data >= XS_INLINE_LEN, "inline: QP granted "
		 "64 bytes of inline data", "max_inline_data %u",
		 c->cap.max_inline_data);
	/* Unregistered memory, lkey 0. */
	fill_pat(one, XS_INLINE_LEN, XS_SEED_INLINE1);
	fill_pat(both, XS_INLINE_LEN, XS_SEED_INLINE2);
	memcpy(two, both, 20);
	memcpy(three, both + 20, XS_INLINE_LEN - 20);
	sge1 = (struct ibv_sge){ .addr = (uintptr_t)one,
				 .length = XS_INLINE_LEN };
	sge2[0] = (struct ibv_sge){ .addr = (uintptr_t)two, .length = 20 };
	sge2[1] = (struct ibv_sge){ .addr = (uintptr_t)three,
				    .length = XS_INLINE_LEN - 20 };
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 2; i++) {
		wr[i].wr_id = i + 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	}
	wr[0].sg_list = &sge1;
	wr[0].num_sge = 1;
	wr[1].sg_list = sge2;
	wr[1].num_sge = 2;
	if (!client_post(c, XS_INLINE, wr, 2, "2 inline SENDs"))
		goto out;
	/* Inline data is copied at post time: the buffers are free again. */
	memset(one, 0, XS_INLINE_LEN);
	memset(two, 0, XS_INLINE_LEN);
	memset(three, 0, XS_INLINE_LEN);
	expect_wcs(XS_INLINE, c->ep.cq, want, 2, wc, 0);
	expect_no_wc(XS_INLINE, "client", c->ep.cq);
out:
	free(one);
	free(two);
	free(three);
}

static void client_solicited(struct xs_client *c)
{
	static const struct xs_want want[] = {
		{ "unsolicited SEND completes", 1, IBV_WC_SEND, -1 },
		{ "solicited SEND completes", 2, IBV_WC_SEND, -1 },
	};
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	struct ibv_wc wc[2];

	fill_pat(c->buf + XS_C_SMALL, XS_SOLICIT_LEN, XS_SEED_UNSOL);
	fill_pat(c->buf + XS_C_SMALL + 64, XS_SOLICIT_LEN, XS_SEED_SOL);
	set_sge(&sge[0], c, XS_C_SMALL, XS_SOLICIT_LEN);
	set_sge(&sge[1], c, XS_C_SMALL + 64, XS_SOLICIT_LEN);
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].sg_list = &sge[0];
	wr[0].num_sge = 1;
	wr[1] = wr[0];
	wr[1].wr_id = 2;
	wr[1].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	wr[1].sg_list = &sge[1];
	if (!client_post(c, XS_SOLICITED, &wr[0], 1, "unsolicited SEND") ||
	    !expect_wcs(XS_SOLICITED, c->ep.cq, &want[0], 1, wc, 0))
		return;
	usleep(XS_SOLICIT_GAP_MS * 1000);
	if (!client_post(c, XS_SOLICITED, &wr[1], 1, "solicited SEND"))
		return;
	expect_wcs(XS_SOLICITED, c->ep.cq, &want[1], 1, wc, 0);
	expect_no_wc(XS_SOLICITED, "client", c->ep.cq);
}

/* The aligned and the gathered 64 KiB message in the client's buffer. */
static void client_bulk_fill(struct xs_client *c, struct ibv_sge *one,
			     struct ibv_sge *six)
{
	uint32_t k = 0;
	int i;

	fill_bulk(c->buf + XS_C_B_ALIGNED, XS_BULK_LEN, XS_SEED_BULK1, 0);
	set_sge(one, c, XS_C_B_ALIGNED, XS_BULK_LEN);
	for (i = 0; i < XS_B_SGES; i++) {
		fill_bulk(c->buf + bulk_gather_off(i), bulk_gather_len(i),
			  XS_SEED_BULK2, k);
		set_sge(&six[i], c, bulk_gather_off(i), bulk_gather_len(i));
		k += bulk_gather_len(i);
	}
}

static void client_bulk_read(struct ibv_send_wr *wr, struct ibv_sge *sge,
			     const struct xs_client *c, uint32_t sink,
			     uint32_t src)
{
	set_sge(sge, c, sink, XS_BULK_LEN);
	wr->opcode = IBV_WR_RDMA_READ;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->wr.rdma.remote_addr = c->peer.addr + src;
	wr->wr.rdma.rkey = c->peer.rkey;
}

/*
 * A READ of the whole offered area up to the end of the READ source, into
 * a cleared sink; a fenced WRITE of the sink's last 64 KiB back over the
 * source; a READ of the source again.  The fence holds the WRITE until
 * the first READ's data arrived, so it writes the source's own bytes back
 * and the last READ finds them.  Without it the WRITE would go out behind
 * the READ request, reach the peer while the long response still streams,
 * and carry the cleared sink.  The server's final check of its area sees
 * the same bytes either way.  The scenario's other buffers are done with,
 * so the sinks take the whole client buffer.
 */
static void client_bulk_fence(struct xs_client *c, uint8_t *want_rd)
{
	static const struct xs_want want[] = {
		{ "READ before the fence completes", 1, IBV_WC_RDMA_READ, -1 },
		{ "fenced WRITE completes", 2, IBV_WC_RDMA_WRITE, -1 },
		{ "READ behind it completes", 3, IBV_WC_RDMA_READ, -1 },
	};
	const uint32_t first = XS_B_READ + XS_BULK_LEN, again = first;
	struct ibv_sge rd[2], wsge;
	struct ibv_send_wr wr[3];
	struct ibv_wc wc[3];
	int i;

	memset(c->buf, 0x11, first);
	memset(c->buf + again, 0x22, XS_BULK_LEN);
	memset(wr, 0, sizeof(wr));
	client_bulk_read(&wr[0], &rd[0], c, 0, 0);
	rd[0].length = first;
	set_sge(&wsge, c, XS_B_READ, XS_BULK_LEN);
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].send_flags = IBV_SEND_FENCE;
	wr[1].sg_list = &wsge;
	wr[1].num_sge = 1;
	wr[1].wr.rdma.remote_addr = c->peer.addr + XS_B_READ;
	wr[1].wr.rdma.rkey = c->peer.rkey;
	client_bulk_read(&wr[2], &rd[1], c, again, XS_B_READ);
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = i + 1;
		wr[i].send_flags |= IBV_SEND_SIGNALED;
	}
	fill_bulk(want_rd, XS_BULK_LEN, XS_SEED_BULK_READ, 0);
	if (client_post(c, XS_BULK, wr, 3, "READ, fenced WRITE, READ") &&
	    expect_wcs(XS_BULK, c->ep.cq, want, 3, wc, 0))
		check_bytes("bulk: a fenced WRITE waits for the READ before it",
			    c->buf + again, want_rd, XS_BULK_LEN);
}

static void client_bulk(struct xs_client *c)
{
	static const struct xs_want want[] = {
		{ "aligned 64 KiB SEND completes", 1, IBV_WC_SEND, -1 },
		{ "gathered 64 KiB SEND completes", 2, IBV_WC_SEND, -1 },
		{ "aligned 64 KiB WRITE completes", 3, IBV_WC_RDMA_WRITE, -1 },
		{ "gathered 64 KiB WRITE completes", 4, IBV_WC_RDMA_WRITE, -1 },
		{ "aligned 64 KiB READ completes", 5, IBV_WC_RDMA_READ, -1 },
		{ "unaligned 64 KiB READ completes", 6, IBV_WC_RDMA_READ, -1 },
		{ "8-byte SEND behind them completes", 7, IBV_WC_SEND, -1 },
	};
	struct ibv_sge one, six[XS_B_SGES], rd[2], sig;
	uint8_t *want_rd = malloc(XS_BULK_LEN);
	struct ibv_send_wr wr[7];
	struct ibv_wc wc[7];
	int i;

	if (!want_rd) {
		vt_fail("bulk: setup", "out of memory");
		return;
	}
	client_bulk_fill(c, &one, six);
	client_init_wrs(c, wr, 7, &sig);
	wr[0].sg_list = &one;
	wr[0].num_sge = 1;
	wr[1].sg_list = six;
	wr[1].num_sge = XS_B_SGES;
	wr[2] = wr[0];
	wr[3] = wr[1];
	for (i = 2; i < 4; i++) {
		wr[i].wr_id = i + 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].wr.rdma.rkey = c->peer.rkey;
	}
	wr[2].wr.rdma.remote_addr = c->peer.addr + XS_B_WRITE1;
	wr[3].wr.rdma.remote_addr = c->peer.addr + XS_B_WRITE2;
	client_bulk_read(&wr[4], &rd[0], c, XS_C_B_READ1, XS_B_READ);
	client_bulk_read(&wr[5], &rd[1], c, XS_C_B_READ2,
			 XS_B_READ + XS_B_READ_UNAL);
	wr[6].sg_list = &sig;
	wr[6].num_sge = 1;
	if (c->cap.max_send_sge < XS_B_SGES) {
		vt_fail("bulk: setup", "max_send_sge %u < %d",
			c->cap.max_send_sge, XS_B_SGES);
	} else if (client_post(c, XS_BULK, wr, 7, "SENDs, WRITEs, READs") &&
		   expect_wcs(XS_BULK, c->ep.cq, want, 7, wc, 0)) {
		fill_bulk(want_rd, XS_BULK_LEN, XS_SEED_BULK_READ, 0);
		check_bytes("bulk: aligned READ sink holds the source",
			    c->buf + XS_C_B_READ1, want_rd, XS_BULK_LEN);
		fill_bulk(want_rd, XS_BULK_LEN, XS_SEED_BULK_READ,
			  XS_B_READ_UNAL);
		check_bytes("bulk: unaligned READ sink holds the source",
			    c->buf + XS_C_B_READ2, want_rd, XS_BULK_LEN);
		client_bulk_fence(c, want_rd);
	}
	expect_no_wc(XS_BULK, "client", c->ep.cq);
	free(want_rd);
}

static void client_wait_disconnected(struct xs_client *c, int sc)
{
	struct rdma_cm_event *ev;
	char name[64];
	int rv;

	snprintf(name, sizeof(name), "%s: client DISCONNECTED", xs_names[sc]);
	if (rdma_disconnect(c->ep.id)) {
		vt_fail(name, "rdma_disconnect: %s", strerror(errno));
		return;
	}
	rv = vt_cm_expect(c->ep.ch, RDMA_CM_EVENT_DISCONNECTED, XS_DISC_MS, &ev,
			  c->ep.why, sizeof(c->ep.why));
	if (rv) {
		vt_fail(name, "%s", c->ep.why);
		return;
	}
	rdma_ack_cm_event(ev);
	vt_pass("%s", name);
}

static void client_scenario(struct xs_client *c, int sc, bool first)
{
	char name[64];

	vt_info("%s", xs_names[sc]);
	memset(c->buf, 0, XS_CBUF_LEN);
	if (!client_connect(c, sc, first))
		return;
	if (sc == XS_REJECT_PDATA) {
		client_reject_pdata(c);
		vt_ep_close(&c->ep);
		return;
	}
	snprintf(name, sizeof(name), "%s: client ESTABLISHED", xs_names[sc]);
	if (c->event != RDMA_CM_EVENT_ESTABLISHED) {
		vt_fail(name, "got %s, status %d", rdma_event_str(c->event),
			c->status);
		vt_ep_close(&c->ep);
		return;
	}
	vt_pass("%s", name);
	if (sc == XS_ACCEPT_PDATA) {
		client_accept_pdata(c);
	} else if (client_parse_offer(c, sc)) {
		vt_fail(name, "%s", c->ep.why);
	} else {
		switch (sc) {
		case XS_ZERO_LEN:
			client_zero_len(c);
			break;
		case XS_MAX_SGE_SC:
			client_max_sge(c);
			break;
		case XS_INLINE:
			client_inline(c);
			break;
		case XS_SOLICITED:
			client_solicited(c);
			break;
		case XS_BULK:
			client_bulk(c);
			break;
		}
	}
	client_wait_disconnected(c, sc);
	vt_ep_close(&c->ep);
}

static int run_client(const char *host, const char *port)
{
	struct xs_client c = { 0 };
	int sc;

	if (vt_resolve(host, port, false, &c.dst))
		return -1;
	c.buf = aligned_alloc(4096, XS_CBUF_LEN);
	if (!c.buf) {
		vt_fail("setup", "out of memory");
		return -1;
	}
	for (sc = 0; sc < XS_NUM_SCENARIOS; sc++) {
		if (!vt_ms_left(vt_run_deadline)) {
			vt_fail("run time", "%s and later not run: out of time",
				xs_names[sc]);
			break;
		}
		client_scenario(&c, sc, sc == 0);
	}
	free(c.buf);
	return 0;
}

/* ---- server -------------------------------------------------------------- */

struct xs_server {
	struct vt_server srv;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint8_t *want;			/* what buf should hold */
	int max_sge;			/* the device's */
	struct rdma_cm_event *pending;	/* a CONNECT_REQUEST that came early */
	bool done[XS_NUM_SCENARIOS];
};

struct xs_conn {
	struct vt_ep ep;
	int sc;
	uint32_t arg;
};

static int server_listen(struct xs_server *s, const char *host,
			 const char *port)
{
	struct ibv_device_attr dattr;
	int rv;

	if (vt_server_open(&s->srv, host, port))
		return -1;
	rv = ibv_query_device(s->srv.verbs, &dattr);
	if (rv) {
		vt_fail("setup", "ibv_query_device: %s", strerror(rv));
		return -1;
	}
	s->max_sge = dattr.max_sge;
	vt_info("max_sge %d", s->max_sge);
	if (s->max_sge < 1 || s->max_sge > XS_MAX_SGE) {
		vt_fail("setup", "device max_sge %d outside 1..%d", s->max_sge,
			XS_MAX_SGE);
		return -1;
	}
	s->buf = aligned_alloc(4096, XS_SBUF_LEN);
	s->want = malloc(XS_SBUF_LEN);
	if (!s->buf || !s->want) {
		vt_fail("setup", "out of memory");
		return -1;
	}
	s->mr = ibv_reg_mr(s->srv.pd, s->buf, XS_SBUF_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	if (!s->mr) {
		vt_fail("setup", "ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return vt_server_listen(&s->srv, 4);
}

static void server_close(struct xs_server *s)
{
	if (s->pending) {
		struct rdma_cm_id *id = s->pending->id;

		rdma_ack_cm_event(s->pending);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
	}
	if (s->mr)
		ibv_dereg_mr(s->mr);
	vt_server_close(&s->srv);
	free(s->buf);
	free(s->want);
}

static uint8_t *slot(uint8_t *base, int k)
{
	return base + XS_S_SLOTS + k * XS_SLOT_GAP;
}

/*
 * The next event of @conn must be @want.  A CONNECT_REQUEST that comes
 * meanwhile (the client may be faster than this server) is kept for
 * later.  0, or -errno with a description in conn->ep.why.
 */
static int server_wait_conn(struct xs_server *s, struct xs_conn *conn,
			    enum rdma_cm_event_type want, int ms)
{
	long long start = vt_now_ms(), deadline = vt_deadline_in(ms);
	struct rdma_cm_event *ev;
	int rv;

	for (;;) {
		rv = vt_cm_get(s->srv.ch, deadline, &ev);
		if (rv) {
			snprintf(conn->ep.why, sizeof(conn->ep.why),
				 "no %s within %lld ms: %s",
				 rdma_event_str(want), vt_now_ms() - start,
				 strerror(-rv));
			return rv;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !s->pending) {
			s->pending = ev;
			continue;
		}
		if (ev->id == conn->ep.id) {
			enum rdma_cm_event_type type = ev->event;
			int status = ev->status;

			rdma_ack_cm_event(ev);
			if (type == want)
				return 0;
			snprintf(conn->ep.why, sizeof(conn->ep.why),
				 "got %s (status %d), expected %s",
				 rdma_event_str(type), status,
				 rdma_event_str(want));
			return -EPROTO;
		}
		vt_info("server %s: ignoring %s", xs_names[conn->sc],
			rdma_event_str(ev->event));
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		} else {
			rdma_ack_cm_event(ev);
		}
	}
}

static int post_recv(struct xs_conn *conn, uint64_t wr_id,
		     struct ibv_sge *sge, int n)
{
	int rv = vt_post_recv(conn->ep.id->qp, wr_id, sge, n);

	if (rv)
		snprintf(conn->ep.why, sizeof(conn->ep.why), "ibv_post_recv "
			 "wr_id %llu, %d SGEs: %s", (unsigned long long)wr_id,
			 n, strerror(rv));
	return rv;
}

static int post_slot(struct xs_server *s, struct xs_conn *conn,
		     uint64_t wr_id, int k)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(s->buf, k),
		.length = XS_SLOT_LEN,
		.lkey = s->mr->lkey,
	};

	return post_recv(conn, wr_id, &sge, 1);
}

/* bulk: a one-SGE and a two-SGE receive of 64 KiB, then a slot. */
static int server_post_bulk_recvs(struct xs_server *s, struct xs_conn *conn)
{
	struct ibv_sge sge[2] = {
		{ (uintptr_t)(s->buf + XS_B_RECV1), XS_BULK_LEN, s->mr->lkey },
		{ (uintptr_t)(s->buf + XS_B_RECV2), XS_B_RECV2_A, s->mr->lkey },
	};
	int rv;

	rv = post_recv(conn, 1, sge, 1);
	if (rv)
		return rv;
	sge[0] = sge[1];
	sge[1].addr += XS_B_RECV2_A + XS_B_RECV2_GAP;
	sge[1].length = XS_B_RECV2_B;
	rv = post_recv(conn, 2, sge, 2);
	return rv ? rv : post_slot(s, conn, 3, 0);
}

/* The receives of scenario conn->sc, posted before rdma_accept. */
static int server_post_recvs(struct xs_server *s, struct xs_conn *conn)
{
	struct ibv_sge sge[XS_MAX_SGE];
	uint32_t total;
	int m = s->max_sge, j, rv = 0;

	switch (conn->sc) {
	case XS_ZERO_LEN:
		rv = post_recv(conn, 1, NULL, 0);
		if (!rv)
			rv = post_slot(s, conn, 2, 0);
		if (!rv)
			rv = post_slot(s, conn, 3, 1);
		break;
	case XS_MAX_SGE_SC:
		total = msg_total(conn->arg);
		for (j = 0; j < m; j++) {
			sge[j].addr = (uintptr_t)(s->buf +
						  recv_off(j, m, total));
			sge[j].length = recv_len(j, m, total);
			sge[j].lkey = s->mr->lkey;
		}
		rv = post_recv(conn, 1, sge, m);
		if (!rv)
			rv = post_slot(s, conn, 2, 0);
		break;
	case XS_INLINE:
	case XS_SOLICITED:
		rv = post_slot(s, conn, 1, 0);
		if (!rv)
			rv = post_slot(s, conn, 2, 1);
		break;
	case XS_BULK:
		rv = server_post_bulk_recvs(s, conn);
		break;
	}
	return rv;
}

/* CQ (with a completion channel for solicited), QP, receives, accept. */
static int server_accept(struct xs_server *s, struct xs_conn *conn)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 8,
			.max_send_sge = s->max_sge,
			.max_recv_sge = s->max_sge,
		},
	};
	uint8_t accept_pat[XS_ACCEPT_LEN];
	struct xs_offer offer = {
		.magic = htobe32(XS_MAGIC),
		.scenario = htobe32(conn->sc),
		.addr = htobe64((uintptr_t)(s->buf + XS_S_TARGET)),
		.rkey = htobe32(s->mr->rkey),
		.len = htobe32(XS_S_TARGET_LEN),
	};
	struct rdma_conn_param param = {
		.private_data = &offer,
		.private_data_len = sizeof(offer),
		.responder_resources = 1,
		.initiator_depth = 1,
	};
	const char *step;
	int rv;

	if (conn->sc == XS_BULK) {
		offer.addr = htobe64((uintptr_t)(s->buf + XS_B_TARGET));
		offer.len = htobe32(XS_B_TARGET_LEN);
	}
	if (conn->sc == XS_SOLICITED) {
		step = "ibv_create_comp_channel";
		conn->ep.cc = ibv_create_comp_channel(s->srv.verbs);
		if (!conn->ep.cc)
			goto err;
		rv = vt_set_nonblock(conn->ep.cc->fd);
		if (rv) {
			errno = -rv;
			goto err;
		}
	}
	if (vt_ep_qp(&conn->ep, s->srv.pd, 16, &attr))
		return -1;
	if (server_post_recvs(s, conn))
		return -1;
	if (conn->sc == XS_SOLICITED) {
		step = "ibv_req_notify_cq(solicited_only)";
		rv = ibv_req_notify_cq(conn->ep.cq, 1);
		if (rv) {
			errno = rv;
			goto err;
		}
	}
	if (conn->sc == XS_ACCEPT_PDATA) {
		fill_pat(accept_pat, sizeof(accept_pat), XS_SEED_ACCEPT);
		param.private_data = accept_pat;
		param.private_data_len = sizeof(accept_pat);
	}
	step = "rdma_accept";
	if (rdma_accept(conn->ep.id, &param))
		goto err;
	return 0;
err:
	snprintf(conn->ep.why, sizeof(conn->ep.why), "%s: %s", step,
		 strerror(errno));
	return -1;
}

/* Compare a region of the buffer with what it should hold. */
static void server_check_region(struct xs_server *s, int sc, const char *what,
				size_t off, size_t len)
{
	char name[128];

	snprintf(name, sizeof(name), "%s: server %s", xs_names[sc], what);
	check_bytes(name, s->buf + off, s->want + off, len);
}

/* Receive slot @k holds @len bytes of pattern @seed and nothing else. */
static void server_check_slot(struct xs_server *s, int sc, const char *what,
			      int k, size_t len, unsigned int seed)
{
	fill_pat(slot(s->want, k), len, seed);
	server_check_region(s, sc, what, slot(s->buf, k) - s->buf,
			    XS_SLOT_LEN);
}

static void server_zero_len(struct xs_server *s, struct xs_conn *conn)
{
	static const struct xs_want want[] = {
		{ "server RECV (num_sge 0) of the num_sge 0 SEND: 0 bytes", 1,
		  IBV_WC_RECV, 0 },
		{ "server RECV of the 0-byte-SGE SEND: 0 bytes", 2,
		  IBV_WC_RECV, 0 },
		{ "server RECV of the 8-byte SEND", 3, IBV_WC_RECV,
		  XS_SIGNAL_LEN },
	};
	struct ibv_wc wc[3];

	if (!expect_wcs(XS_ZERO_LEN, conn->ep.cq, want, 3, wc, 0))
		return;
	server_check_region(s, XS_ZERO_LEN, "slot of the 0-byte SEND "
			    "unchanged", XS_S_SLOTS, XS_SLOT_LEN);
	server_check_slot(s, XS_ZERO_LEN, "slot of the 8-byte SEND holds it",
			  1, XS_SIGNAL_LEN, XS_SEED_SIGNAL);
	server_check_region(s, XS_ZERO_LEN, "WRITE target unchanged by the "
			    "0-byte WRITEs", XS_S_TARGET, XS_S_TARGET_LEN);
	expect_no_wc(XS_ZERO_LEN, "server", conn->ep.cq);
}

static void server_max_sge(struct xs_server *s, struct xs_conn *conn)
{
	int n = (int)conn->arg, m = s->max_sge, j;
	uint32_t total = msg_total(n), k = 0, b;
	struct xs_want want[] = {
		{ "server RECV with max_recv_sge SGEs gets the message", 1,
		  IBV_WC_RECV, total },
		{ "server RECV of the 8-byte SEND", 2, IBV_WC_RECV,
		  XS_SIGNAL_LEN },
	};
	struct ibv_wc wc[2];

	if (!expect_wcs(XS_MAX_SGE_SC, conn->ep.cq, want, 2, wc, 0))
		return;
	/* The message scattered over the m slices, then the fill. */
	for (j = 0; j < m; j++)
		for (b = 0; b < recv_len(j, m, total) && k < total; b++)
			s->want[recv_off(j, m, total) + b] = msg_byte(k++);
	server_check_region(s, XS_MAX_SGE_SC, "receive slices hold the "
			    "message, gaps untouched", XS_S_RECV,
			    XS_S_RECV_LEN);
	for (k = 0; k < total; k++)
		s->want[XS_S_TARGET + XS_WRITE_OFF + k] = msg_byte(k);
	server_check_region(s, XS_MAX_SGE_SC, "WRITE target holds the "
			    "gathered message, nothing around it",
			    XS_S_TARGET, XS_S_TARGET_LEN);
	server_check_slot(s, XS_MAX_SGE_SC, "slot of the 8-byte SEND holds it",
			  0, XS_SIGNAL_LEN, XS_SEED_SIGNAL);
	expect_no_wc(XS_MAX_SGE_SC, "server", conn->ep.cq);
}

static void server_inline(struct xs_server *s, struct xs_conn *conn)
{
	static const struct xs_want want[] = {
		{ "server RECV of the one-SGE inline SEND: 64 bytes", 1,
		  IBV_WC_RECV, XS_INLINE_LEN },
		{ "server RECV of the two-SGE inline SEND: 64 bytes", 2,
		  IBV_WC_RECV, XS_INLINE_LEN },
	};
	struct ibv_wc wc[2];

	if (!expect_wcs(XS_INLINE, conn->ep.cq, want, 2, wc, 0))
		return;
	server_check_slot(s, XS_INLINE, "one-SGE inline data arrived", 0,
			  XS_INLINE_LEN, XS_SEED_INLINE1);
	server_check_slot(s, XS_INLINE, "two-SGE inline data arrived", 1,
			  XS_INLINE_LEN, XS_SEED_INLINE2);
	expect_no_wc(XS_INLINE, "server", conn->ep.cq);
}

static void server_bulk(struct xs_server *s, struct xs_conn *conn)
{
	static const struct xs_want want[] = {
		{ "server RECV of the aligned SEND: 64 KiB", 1, IBV_WC_RECV,
		  XS_BULK_LEN },
		{ "server RECV of the gathered SEND: 64 KiB", 2, IBV_WC_RECV,
		  XS_BULK_LEN },
		{ "server RECV of the 8-byte SEND", 3, IBV_WC_RECV,
		  XS_SIGNAL_LEN },
	};
	uint8_t *t = s->want + XS_B_TARGET;
	struct ibv_wc wc[3];

	if (!expect_wcs(XS_BULK, conn->ep.cq, want, 3, wc, 0))
		return;
	fill_bulk(s->want + XS_B_RECV1, XS_BULK_LEN, XS_SEED_BULK1, 0);
	fill_bulk(s->want + XS_B_RECV2, XS_B_RECV2_A, XS_SEED_BULK2, 0);
	fill_bulk(s->want + XS_B_RECV2 + XS_B_RECV2_A + XS_B_RECV2_GAP,
		  XS_BULK_LEN - XS_B_RECV2_A, XS_SEED_BULK2, XS_B_RECV2_A);
	fill_bulk(t + XS_B_WRITE1, XS_BULK_LEN, XS_SEED_BULK1, 0);
	fill_bulk(t + XS_B_WRITE2, XS_BULK_LEN, XS_SEED_BULK2, 0);
	server_check_region(s, XS_BULK, "receives, WRITE targets and READ "
			    "source hold exactly what was sent", XS_B_BASE,
			    XS_SBUF_LEN - XS_B_BASE);
	server_check_slot(s, XS_BULK, "slot of the 8-byte SEND holds it", 0,
			  XS_SIGNAL_LEN, XS_SEED_SIGNAL);
	expect_no_wc(XS_BULK, "server", conn->ep.cq);
}

static void server_solicited(struct xs_server *s, struct xs_conn *conn)
{
	static const struct xs_want want[] = {
		{ "server RECV of the unsolicited SEND", 1, IBV_WC_RECV,
		  XS_SOLICIT_LEN },
		{ "server RECV of the solicited SEND", 2, IBV_WC_RECV,
		  XS_SOLICIT_LEN },
	};
	long long start = vt_now_ms();
	struct ibv_wc wc[2];
	int got, rv;

	rv = vt_wait_cq_event(conn->ep.cc, conn->ep.cq,
			      vt_deadline_in(XS_CQ_MS));
	vt_check(!rv, "solicited: server completion channel delivers an event",
		 "none within %lld ms: %s", vt_now_ms() - start, strerror(-rv));
	if (rv)
		return;
	vt_info("solicited: event after %lld ms", vt_now_ms() - start);
	got = ibv_poll_cq(conn->ep.cq, 2, wc);
	vt_check(got == 2,
		 "solicited: both receives are in the CQ at the event",
		 "ibv_poll_cq right after the event returned %d", got);
	if (got < 0)
		got = 0;
	if (!expect_wcs(XS_SOLICITED, conn->ep.cq, want, 2, wc, got))
		return;
	server_check_slot(s, XS_SOLICITED, "unsolicited SEND's data arrived",
			  0, XS_SOLICIT_LEN, XS_SEED_UNSOL);
	server_check_slot(s, XS_SOLICITED, "solicited SEND's data arrived", 1,
			  XS_SOLICIT_LEN, XS_SEED_SOL);
	/* Nothing more is sent: a new arm must stay quiet. */
	rv = ibv_req_notify_cq(conn->ep.cq, 1);
	if (rv) {
		vt_fail("solicited: re-arm", "ibv_req_notify_cq: %s",
			strerror(rv));
		return;
	}
	rv = vt_wait_cq_event(conn->ep.cc, conn->ep.cq,
			      vt_deadline_in(XS_NO_EVENT_MS));
	vt_check(rv == -ETIMEDOUT, "solicited: no event after re-arming with "
		 "nothing new", "%s", rv ? strerror(-rv) : "an event came");
}

/* Connection of scenario @sc, from accept to DISCONNECTED. */
static void server_conn(struct xs_server *s, struct xs_conn *conn)
{
	int sc = conn->sc;
	char name[64];

	memset(s->buf, XS_S_FILL, XS_SBUF_LEN);
	memset(s->want, XS_S_FILL, XS_SBUF_LEN);
	if (sc == XS_BULK) {
		/* what the client READs, aligned and from offset 7 */
		fill_bulk(s->buf + XS_B_TARGET + XS_B_READ, XS_BULK_LEN + 64,
			  XS_SEED_BULK_READ, 0);
		memcpy(s->want + XS_B_TARGET + XS_B_READ,
		       s->buf + XS_B_TARGET + XS_B_READ, XS_BULK_LEN + 64);
	}
	snprintf(name, sizeof(name), "%s: server accept", xs_names[sc]);
	if (server_accept(s, conn)) {
		vt_fail(name, "%s", conn->ep.why);
		rdma_reject(conn->ep.id, NULL, 0);
		vt_ep_close(&conn->ep);
		return;
	}
	snprintf(name, sizeof(name), "%s: server ESTABLISHED", xs_names[sc]);
	if (server_wait_conn(s, conn, RDMA_CM_EVENT_ESTABLISHED,
			     XS_CONNECT_MS)) {
		vt_fail(name, "%s", conn->ep.why);
		vt_ep_close(&conn->ep);
		return;
	}
	vt_pass("%s", name);
	switch (sc) {
	case XS_ZERO_LEN:
		server_zero_len(s, conn);
		break;
	case XS_MAX_SGE_SC:
		server_max_sge(s, conn);
		break;
	case XS_INLINE:
		server_inline(s, conn);
		break;
	case XS_SOLICITED:
		server_solicited(s, conn);
		break;
	case XS_BULK:
		server_bulk(s, conn);
		break;
	}
	snprintf(name, sizeof(name), "%s: server DISCONNECTED", xs_names[sc]);
	if (server_wait_conn(s, conn, RDMA_CM_EVENT_DISCONNECTED,
			     XS_DISC_MS)) {
		vt_fail(name, "%s", conn->ep.why);
		rdma_disconnect(conn->ep.id);
	} else {
		vt_pass("%s", name);
	}
	vt_ep_close(&conn->ep);
}

static void server_request(struct xs_server *s, struct rdma_cm_event *ev)
{
	struct xs_conn conn = { .ep.id = ev->id };
	const struct rdma_conn_param *p = &ev->param.conn;
	struct xs_hello got, want;
	uint8_t rej[XS_REJECT_LEN];
	unsigned int len = 0;
	char name[96];
	int sc;

	memset(&got, 0, sizeof(got));
	if (p->private_data) {
		len = p->private_data_len;
		memcpy(&got, p->private_data,
		       len < sizeof(got) ? len : sizeof(got));
	}
	rdma_ack_cm_event(ev);
	sc = (int)be32toh(got.scenario);
	conn.arg = be32toh(got.arg);
	if (len < 12 || be32toh(got.magic) != XS_MAGIC || sc < 0 ||
	    sc >= XS_NUM_SCENARIOS || s->done[sc] ||
	    (sc == XS_MAX_SGE_SC && (conn.arg < 1 ||
				     conn.arg > XS_MAX_SGE)) ||
	    conn.ep.id->verbs != s->srv.verbs) {
		vt_fail("server connect request",
			"rejected: %u bytes, magic %#x "
			"scenario %d arg %u%s", len, be32toh(got.magic), sc,
			conn.arg, conn.ep.id->verbs != s->srv.verbs ?
			" on another device" : "");
		rdma_reject(conn.ep.id, NULL, 0);
		rdma_destroy_id(conn.ep.id);
		return;
	}
	conn.sc = sc;
	s->done[sc] = true;
	make_hello(&want, sc, conn.arg);
	snprintf(name, sizeof(name), "%s: server sees the 56 bytes of connect "
		 "private data", xs_names[sc]);
	if (len != XS_HELLO_LEN)
		vt_fail(name, "private_data_len %u", len);
	else
		check_bytes(name, (uint8_t *)&got, (uint8_t *)&want,
			    XS_HELLO_LEN);
	if (sc == XS_REJECT_PDATA) {
		fill_pat(rej, sizeof(rej), XS_SEED_REJECT);
		vt_check(!rdma_reject(conn.ep.id, rej, sizeof(rej)),
			 "reject-pdata: server rdma_reject with 40 bytes",
			 "%s", strerror(errno));
		rdma_destroy_id(conn.ep.id);
		return;
	}
	server_conn(s, &conn);
}

static void server_loop(struct xs_server *s)
{
	struct rdma_cm_event *ev;
	int i, rv;

	while (!vt_all_set(s->done, XS_NUM_SCENARIOS) &&
	       vt_ms_left(vt_run_deadline)) {
		if (s->pending) {
			ev = s->pending;
			s->pending = NULL;
		} else {
			rv = vt_server_event(s->srv.ch, vt_run_deadline, &ev);
			if (rv)
				break;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			server_request(s, ev);
		else if (vt_stray_event(ev, false))
			break;
	}
	for (i = 0; i < XS_NUM_SCENARIOS; i++)
		if (!s->done[i])
			vt_fail("server run time", "no connection for %s",
				xs_names[i]);
}

VT_RUN_SERVER(struct xs_server, server_listen, server_loop, server_close);

/* ---- main ---------------------------------------------------------------- */

VT_MAIN(XS_DEFAULT_PORT, XS_CLIENT_SECS, XS_SERVER_SECS, run_client,
	run_server);
