// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_peer: a raw TCP peer that speaks MPA (RFC 5044, RFC 6581), DDP
 * (RFC 5041) and RDMAP (RFC 5040) byte by byte, so that a test can put on
 * the wire exactly what it wants -- valid or not -- and see what comes
 * back.  It plays the remote side against a viw device (viw_target): a
 * client that sends the MPA request, or a server that answers one.
 *
 * The headers are built and parsed by the module's own codec,
 * kernel/viw_wire.c; anything the codec refuses to encode (a wrong QN, a
 * key that is not "MPA ID Req Frame", an oversized PD_Length) is patched
 * into the bytes afterwards.
 *
 * The steps run in order; each prints one line per notable event, in a
 * fixed format that shell tests grep (see the usage text).  Exit status:
 * 0 all steps passed, 3 an expectation failed, 2 a usage error, 124 the
 * overall timeout struck.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "viw_crc32c.h"
#include "viw_wire.h"

#define VP_EXIT_FAIL		3
#define VP_EXIT_USAGE		2
#define VP_EXIT_TIMEOUT		124

#define VP_MAX_STEPS		128
#define VP_MAX_KV		24
#define VP_MAX_CONNS		4096
#define VP_ULPDU_MAX		0xffffU
#define VP_FPDU_BUF		(VIW_MPA_LEN_SIZE + VP_ULPDU_MAX + 3 + \
				 VIW_MPA_CRC_SIZE)
#define VP_DEFAULT_MULPDU	1024
#define VP_DEFAULT_FILL		0xa5
#define VP_DEFAULT_IRD_ORD	16

/* Results of a bounded read. */
enum vp_rd {
	VP_RD_OK = 0,
	VP_RD_FIN,
	VP_RD_RST,
	VP_RD_TIMEOUT,
};

struct vp_kv {
	char *key;
	char *val;
};

struct vp_step;
struct vp_conn;

struct vp_step_def {
	const char *name;
	const char *keys;	/* allowed keys, "k1,k2"; NULL: none */
	int bare;		/* 1: takes "name:VALUE", 2: VALUE required */
	void (*run)(struct vp_conn *c, struct vp_step *s);
};

struct vp_step {
	const struct vp_step_def *def;
	char *text;		/* as given, for messages */
	char *bare;		/* the VALUE of name:VALUE */
	struct vp_kv kv[VP_MAX_KV];
	int nkv;
};

struct vp_conn {
	int fd;
	bool crc;		/* CRC in FPDUs, as negotiated */
	bool framed;		/* MPA exchange done: the stream is FPDUs */
	bool noread;
	bool gone;		/* we saw FIN or RST */
	u32 msn[4];		/* next MSN per untagged queue */
	struct viw_mpa_frame req;
	struct viw_mpa_frame rep;
	bool have_rreq;
	struct viw_read_req rreq;	/* the last Read Request received */
	u8 buf[VP_FPDU_BUF];
};

/* A received FPDU, decoded. */
struct vp_fpdu {
	u32 ulpdu_len;
	bool crc_bad;
	int hdr_rv;
	struct viw_ddp_hdr hdr;
	struct viw_term_cause cause;	/* why the header is bad */
	u32 payload_len;
	struct viw_read_req rr;
	struct viw_term term;
	struct viw_atomic_req areq;
	struct viw_atomic_resp aresp;
	int areq_rv;
	struct viw_imm imm;
	int imm_rv;
	const u8 *ulpdu;
};

static struct {
	bool v6;
	const char *host;
	const char *port;
	bool listen;
	int count;
	int timeout;
	const char *info;
	int rcvbuf;
	bool pattern;		/* -P: check tagged payloads */
} vp_opt = { .count = 1, .timeout = 30 };

static struct vp_step vp_steps[VP_MAX_STEPS];
static int vp_nsteps;
static int vp_conn_index = -1;	/* which connection, when -n > 1 */
static long long vp_end_ms;	/* the overall deadline */
static pid_t vp_children[VP_MAX_CONNS];
static int vp_nchildren;

/* ULP private data of the last MPA frame received, for @PD32.OFF. */
static u8 vp_rx_pd[VIW_MPA_MAX_PDATA];
static u32 vp_rx_pd_len;
static bool vp_have_rx_pd;

/* ---- output ---------------------------------------------------------------- */

static void vp_vout(const char *fmt, va_list ap)
{
	if (vp_conn_index >= 0)
		printf("[%d] ", vp_conn_index);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

static void __attribute__((format(printf, 1, 2))) vp_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_vout(fmt, ap);
	va_end(ap);
}

/* An expectation failed: say why and exit 3. */
static void __attribute__((format(printf, 1, 2), noreturn))
vp_fail(const char *fmt, ...)
{
	va_list ap;

	if (vp_conn_index >= 0)
		printf("[%d] ", vp_conn_index);
	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(VP_EXIT_FAIL);
}

static void __attribute__((format(printf, 1, 2), noreturn))
vp_usage_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "viw_peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (--help for the usage)\n");
	fflush(stdout);
	exit(VP_EXIT_USAGE);
}

/* ---- time ------------------------------------------------------------------ */

static long long vp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* @secs from now (0 or less: the overall deadline), never past it. */
static long long vp_deadline_secs(double secs)
{
	long long d;

	if (secs <= 0)
		return vp_end_ms;
	d = vp_now_ms() + (long long)(secs * 1000);
	return d < vp_end_ms ? d : vp_end_ms;
}

static void vp_sleep_ms(long long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void vp_on_alarm(int sig)
{
	static const char msg[] = "TIMEOUT overall timeout reached\n";
	int i;

	(void)sig;
	for (i = 0; i < vp_nchildren; i++)
		kill(vp_children[i], SIGKILL);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(VP_EXIT_TIMEOUT);
	_exit(VP_EXIT_TIMEOUT);
}

/* Arm SIGALRM for what is left of the overall timeout. */
static void vp_arm_alarm(void)
{
	long long left = vp_end_ms - vp_now_ms();

	signal(SIGALRM, vp_on_alarm);
	alarm(left > 0 ? (unsigned int)((left + 999) / 1000) : 1);
}

/* ---- step arguments ---------------------------------------------------------- */

static const char *vp_get(const struct vp_step *s, const char *key)
{
	int i;

	for (i = 0; i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key))
			return s->kv[i].val;
	return NULL;
}

static bool vp_has(const struct vp_step *s, const char *key)
{
	return vp_get(s, key) != NULL;
}

/*
 * The value of KEY in viw_target's info file ("STAG 0x.. ADDR 0x.. LEN n
 * QPN n", written once the connection is up), waiting for it to appear.
 */
static unsigned long long vp_info_value(const char *key)
{
	char word[64], val[64];
	FILE *f;

	if (!vp_opt.info)
		vp_usage_err("@%s needs -i INFO_FILE", key);
	for (;;) {
		f = fopen(vp_opt.info, "r");
		while (f && fscanf(f, "%63s %63s", word, val) == 2) {
			if (!strcmp(word, key)) {
				fclose(f);
				return strtoull(val, NULL, 0);
			}
		}
		if (f)
			fclose(f);
		vp_sleep_ms(50);
	}
}

/*
 * @PD16.OFF, @PD32.OFF, @PD64.OFF: the big-endian number at byte OFF of
 * the private data the last MPA frame received carried (after the RFC
 * 6581 words), e.g. an rkey and address a server put in its reply.
 */
static void vp_pd_ref(const struct vp_step *s, const char *key,
		      const char *name, unsigned int *bits, unsigned int *off)
{
	char end;

	if (sscanf(name, "PD%u.%u%c", bits, off, &end) != 2 ||
	    (*bits != 16 && *bits != 32 && *bits != 64))
		vp_usage_err("%s: %s=@%s: @PD16.OFF, @PD32.OFF or @PD64.OFF",
			     s->text, key, name);
}

static unsigned long long vp_pd_value(const struct vp_step *s,
				      const char *key, const char *name)
{
	unsigned int bits, off, i;
	unsigned long long v = 0;

	vp_pd_ref(s, key, name, &bits, &off);
	if (!vp_have_rx_pd)
		vp_fail("%s: %s=@%s: no MPA frame received yet", s->text, key,
			name);
	if (off > vp_rx_pd_len || bits / 8 > vp_rx_pd_len - off)
		vp_fail("%s: %s=@%s: the private data received has %u bytes",
			s->text, key, name, vp_rx_pd_len);
	for (i = 0; i < bits / 8; i++)
		v = v << 8 | vp_rx_pd[off + i];
	return v;
}

/*
 * A number: decimal, 0x hex, @KEY[+-N] from the info file, or
 * @PDn.OFF[+-N] from the private data received.
 */
static unsigned long long vp_parse_num(const struct vp_step *s,
				       const char *key, const char *v)
{
	unsigned long long base = 0, off;
	char name[32], *end;
	size_t n;

	if (v[0] == '@') {
		n = strcspn(v + 1, "+-");
		if (!n || n >= sizeof(name))
			vp_usage_err("%s: bad reference %s=%s", s->text, key, v);
		memcpy(name, v + 1, n);
		name[n] = '\0';
		base = strncmp(name, "PD", 2) ? vp_info_value(name) :
		       vp_pd_value(s, key, name);
		v += 1 + n;
		if (!*v)
			return base;
		off = strtoull(v + 1, &end, 0);
		if (*end)
			vp_usage_err("%s: bad offset in %s", s->text, key);
		return v[0] == '+' ? base + off : base - off;
	}
	errno = 0;
	base = strtoull(v, &end, 0);
	if (!*v || *end || errno)
		vp_usage_err("%s: %s=%s is not a number", s->text, key, v);
	return base;
}

static unsigned long long vp_num(const struct vp_step *s, const char *key,
				 unsigned long long def)
{
	const char *v = vp_get(s, key);

	return v ? vp_parse_num(s, key, v) : def;
}

static unsigned long long vp_num_req(const struct vp_step *s, const char *key)
{
	const char *v = vp_get(s, key);

	if (!v)
		vp_usage_err("%s: %s= is required", s->text, key);
	return vp_parse_num(s, key, v);
}

static bool vp_flag(const struct vp_step *s, const char *key, bool def)
{
	return vp_num(s, key, def) != 0;
}

static double vp_secs(const struct vp_step *s, const char *key, double def)
{
	const char *v = vp_get(s, key);
	char *end;
	double d;

	if (!v)
		return def;
	d = strtod(v, &end);
	if (*end || d < 0)
		vp_usage_err("%s: %s=%s is not a number of seconds", s->text,
			     key, v);
	return d;
}

static size_t vp_hex_decode(const struct vp_step *s, const char *hex, u8 *out,
			    size_t max)
{
	size_t n = 0;
	unsigned int b;

	while (*hex) {
		if (*hex == ' ' || *hex == '.' || *hex == '_') {
			hex++;
			continue;
		}
		if (n >= max || sscanf(hex, "%2x", &b) != 1 || !hex[1])
			vp_usage_err("%s: bad hex", s->text);
		out[n++] = (u8)b;
		hex += 2;
	}
	return n;
}

/* rtr=send|write|read -> enum viw_mpa_rtr bits (a list joined by '+'). */
static u8 vp_rtr_bits(const struct vp_step *s, const char *v)
{
	u8 bits = 0;
	char buf[64], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, "+", &save); tok;
	     tok = strtok_r(NULL, "+", &save)) {
		if (!strcmp(tok, "send"))
			bits |= VIW_RTR_SEND0;
		else if (!strcmp(tok, "write"))
			bits |= VIW_RTR_WRITE0;
		else if (!strcmp(tok, "read"))
			bits |= VIW_RTR_READ0;
		else if (strcmp(tok, "none"))
			vp_usage_err("%s: rtr=%s: send, write, read or none",
				     s->text, v);
	}
	return bits;
}

static const char *vp_rtr_str(u8 bits)
{
	static char buf[32];

	buf[0] = '\0';
	if (bits & VIW_RTR_SEND0)
		strcat(buf, "+send");
	if (bits & VIW_RTR_WRITE0)
		strcat(buf, "+write");
	if (bits & VIW_RTR_READ0)
		strcat(buf, "+read");
	return buf[0] ? buf + 1 : "none";
}

/* ---- socket I/O -------------------------------------------------------------- */

static void vp_need_fd(struct vp_conn *c, const struct vp_step *s)
{
	if (c->fd < 0)
		vp_fail("%s: the connection is already closed", s->text);
}

/* FIN or RST?  Called when recv() returned 0 or failed. */
static enum vp_rd vp_rd_end(struct vp_conn *c, ssize_t n)
{
	c->gone = true;
	if (n == 0)
		return VP_RD_FIN;
	return VP_RD_RST;
}

/* Read exactly @len bytes by @deadline. */
static enum vp_rd vp_read_full(struct vp_conn *c, u8 *buf, size_t len,
			       long long deadline)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		long long left = deadline - vp_now_ms();
		ssize_t n;

		if (left <= 0)
			return VP_RD_TIMEOUT;
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		n = recv(c->fd, buf + got, len - got, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return vp_rd_end(c, n);
		got += (size_t)n;
	}
	return VP_RD_OK;
}

static const char *vp_rd_str(enum vp_rd r)
{
	switch (r) {
	case VP_RD_FIN:
		return "CLOSED fin";
	case VP_RD_RST:
		return "CLOSED rst";
	case VP_RD_TIMEOUT:
		return "timeout";
	default:
		return "ok";
	}
}

/* Write everything; a failure is reported and leaves the rest undone. */
static int vp_write_all(struct vp_conn *c, const u8 *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(c->fd, buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			vp_out("SENDFAIL %s after %zu of %zu bytes",
			       strerror(errno), done, len);
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * With "noread" nothing is consumed: wait for the peer's FIN (POLLRDHUP)
 * or RST (POLLERR/POLLHUP) by polling only.
 */
static enum vp_rd vp_wait_end_noread(struct vp_conn *c, long long deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = c->fd,
				      .events = POLLRDHUP };
		long long left = deadline - vp_now_ms();
		int err = 0;
		socklen_t el = sizeof(err);

		if (left <= 0)
			return VP_RD_TIMEOUT;
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err || (pfd.revents & (POLLERR | POLLHUP)) ==
			   (POLLERR | POLLHUP))
			return vp_rd_end(c, -1);
		if (pfd.revents & (POLLRDHUP | POLLHUP))
			return vp_rd_end(c, 0);
		vp_sleep_ms(10);
	}
}

/* ---- FPDUs out ----------------------------------------------------------------- */

/*
 * Frame @ulpdu as an FPDU: ULPDU_Length, ULPDU, pad, CRC (RFC 5044
 * section 6).  The CRC covers length, ULPDU and pad; it is zero when CRC
 * is not in use.  @badcrc inverts it.  Only the first @wire bytes (0: all)
 * are sent.  Returns the FPDU length.
 */
static u32 vp_send_fpdu(struct vp_conn *c, const u8 *ulpdu, u32 len,
			bool badcrc, u32 wire)
{
	static u8 f[VP_FPDU_BUF];
	u32 pad = viw_mpa_pad(len), total = viw_fpdu_len(len), crc = 0;

	f[0] = (u8)(len >> 8);
	f[1] = (u8)len;
	memcpy(f + 2, ulpdu, len);
	memset(f + 2 + len, 0, pad);
	if (c->crc)
		crc = viw_crc_final(viw_crc32c_update(VIW_CRC_INIT, f,
						      2 + len + pad));
	if (badcrc)
		crc = ~crc;
	viw_put_crc(f + 2 + len + pad, crc);
	if (!wire || wire > total)
		wire = total;
	vp_write_all(c, f, wire);
	return total;
}

static void vp_put_be32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

static int vp_encode_hdr(const struct vp_step *s, u8 *buf,
			 const struct viw_ddp_hdr *hdr)
{
	int hl = viw_ddp_encode(buf, VIW_MAX_HDR_LEN, hdr);

	if (hl < 0)
		vp_usage_err("%s: header not encodable (%d)", s->text, hl);
	return hl;
}

/* What every data-carrying step shares: segmenting, fill, CRC, partial. */
struct vp_msg {
	struct viw_ddp_hdr hdr;	/* template; MO/TO advance per segment */
	u32 len;
	u32 mulpdu;
	u8 fill;
	bool badcrc;
	bool has_last;
	bool last;		/* L of the final segment, if has_last */
	bool has_qn;
	u32 qn;
	u32 partial;		/* 0: whole; else FPDU bytes to send */
	u32 segs;		/* 0: all; else only the first segs segments */
};

static void vp_msg_opts(const struct vp_step *s, struct vp_msg *m)
{
	const char *crc = vp_get(s, "crc");

	m->len = (u32)vp_num_req(s, "len");
	m->mulpdu = (u32)vp_num(s, "mulpdu", VP_DEFAULT_MULPDU);
	m->fill = (u8)vp_num(s, "fill", VP_DEFAULT_FILL);
	m->badcrc = crc && !strcmp(crc, "bad");
	if (crc && !m->badcrc && strcmp(crc, "good"))
		vp_usage_err("%s: crc=bad or crc=good", s->text);
	m->has_last = vp_has(s, "last");
	m->last = vp_flag(s, "last", true);
	m->has_qn = vp_has(s, "qn");
	m->qn = (u32)vp_num(s, "qn", 0);
	m->partial = (u32)vp_num(s, "partial", 0);
	m->segs = (u32)vp_num(s, "segs", 0);
}

/* One segment of @n payload bytes at message offset @off. */
static u32 vp_send_segment(struct vp_conn *c, const struct vp_step *s,
			   struct vp_msg *m, u32 off, u32 n, bool final)
{
	static u8 ulpdu[VP_ULPDU_MAX];
	struct viw_ddp_hdr h = m->hdr;
	int hl;

	h.last = final ? (m->has_last ? m->last : true) : false;
	if (h.tagged)
		h.to += off;
	else
		h.mo += off;
	hl = vp_encode_hdr(s, ulpdu, &h);
	if (!h.tagged && m->has_qn)
		vp_put_be32(ulpdu + 6, m->qn);
	if ((u32)hl + n > VP_ULPDU_MAX)
		vp_usage_err("%s: segment of %u bytes exceeds an FPDU", s->text,
			     hl + n);
	memset(ulpdu + hl, m->fill, n);
	return vp_send_fpdu(c, ulpdu, hl + n, m->badcrc,
			    final ? m->partial : 0);
}

/* Send the message in segments of at most mulpdu bytes; how many. */
static u32 vp_send_msg(struct vp_conn *c, const struct vp_step *s,
		       struct vp_msg *m)
{
	u32 hl = m->hdr.tagged ? VIW_DDP_TAGGED_HDR_LEN :
				 VIW_DDP_UNTAGGED_HDR_LEN;
	u32 seg, off = 0, segs = 0, n;

	/* partial=: one FPDU, cut short on the wire */
	seg = m->partial ? m->len : (m->mulpdu > hl ? m->mulpdu - hl : 1);
	do {
		n = m->len - off < seg ? m->len - off : seg;
		vp_send_segment(c, s, m, off, n, off + n == m->len);
		off += n;
		segs++;
	} while (off < m->len && (!m->segs || segs < m->segs));
	return segs;
}

/* ---- FPDUs in ------------------------------------------------------------------ */

/* Read one FPDU by @deadline and decode it into @f. */
static enum vp_rd vp_read_fpdu(struct vp_conn *c, long long deadline,
			       struct vp_fpdu *f)
{
	u32 len, rest, hl;
	enum vp_rd r;
	u8 *b = c->buf;

	memset(f, 0, sizeof(*f));
	r = vp_read_full(c, b, 2, deadline);
	if (r)
		return r;
	len = (u32)b[0] << 8 | b[1];
	rest = len + viw_mpa_pad(len) + VIW_MPA_CRC_SIZE;
	r = vp_read_full(c, b + 2, rest, deadline);
	if (r)
		return r;
	f->ulpdu_len = len;
	f->ulpdu = b + 2;
	if (c->crc) {
		u32 want = viw_crc_final(viw_crc32c_update(VIW_CRC_INIT, b,
					 2 + len + viw_mpa_pad(len)));

		f->crc_bad = want != viw_get_crc(b + 2 + len +
						 viw_mpa_pad(len));
	}
	f->hdr_rv = viw_ddp_decode(f->ulpdu, len, &f->hdr, &f->cause);
	if (f->hdr_rv)
		return VP_RD_OK;
	hl = viw_ddp_hdr_len(f->ulpdu);
	f->payload_len = len - hl;
	if (f->hdr.opcode == VIW_RDMAP_READ_REQ)
		viw_read_req_decode(f->ulpdu + VIW_DDP_UNTAGGED_HDR_LEN,
				    &f->rr);
	if (f->hdr.opcode == VIW_RDMAP_TERMINATE)
		viw_term_decode(f->ulpdu + VIW_DDP_UNTAGGED_HDR_LEN,
				len - VIW_DDP_UNTAGGED_HDR_LEN, &f->term);
	if (f->hdr.opcode == VIW_RDMAP_ATOMIC_REQ)
		f->areq_rv = viw_atomic_req_decode(f->ulpdu +
						   VIW_DDP_UNTAGGED_HDR_LEN,
						   &f->areq, &f->cause);
	if (f->hdr.opcode == VIW_RDMAP_ATOMIC_RESP)
		viw_atomic_resp_decode(f->ulpdu + VIW_DDP_UNTAGGED_HDR_LEN,
				       &f->aresp);
	if (f->hdr.opcode == VIW_RDMAP_IMM || f->hdr.opcode == VIW_RDMAP_IMM_SE)
		f->imm_rv = viw_imm_decode(f->ulpdu + VIW_DDP_UNTAGGED_HDR_LEN,
					   &f->imm, &f->cause);
	return VP_RD_OK;
}

static const char *const vp_op_names[] = {
	[VIW_RDMAP_WRITE] = "WRITE",
	[VIW_RDMAP_READ_REQ] = "READ_REQ",
	[VIW_RDMAP_READ_RESP] = "READ_RESP",
	[VIW_RDMAP_SEND] = "SEND",
	[VIW_RDMAP_SEND_INV] = "SEND_INV",
	[VIW_RDMAP_SEND_SE] = "SEND_SE",
	[VIW_RDMAP_SEND_SE_INV] = "SEND_SE_INV",
	[VIW_RDMAP_TERMINATE] = "TERMINATE",
	[VIW_RDMAP_IMM] = "IMM",
	[VIW_RDMAP_IMM_SE] = "IMM_SE",
	[VIW_RDMAP_ATOMIC_REQ] = "ATOMIC_REQ",
	[VIW_RDMAP_ATOMIC_RESP] = "ATOMIC_RESP",
};

/*
 * -P: the payload of a tagged FPDU must be viw_target's MR pattern,
 * (7 * k + 3) & 0x7f at MR offset k, taking the TO as that offset (so a
 * Read Request's sink_to is set to its source offset).  " pattern ok" or
 * " pattern bad at +N" (the first wrong byte) for the FPDU line.
 */
static const char *vp_pattern_check(const struct vp_fpdu *f)
{
	static char buf[48];
	const u8 *p = f->ulpdu + VIW_DDP_TAGGED_HDR_LEN;
	u32 i;

	if (!vp_opt.pattern || f->hdr_rv || !f->hdr.tagged)
		return "";
	for (i = 0; i < f->payload_len; i++)
		if (p[i] != (u8)(((f->hdr.to + i) * 7 + 3) & 0x7f))
			break;
	if (i == f->payload_len)
		return " pattern ok";
	snprintf(buf, sizeof(buf), " pattern bad at +%u", i);
	return buf;
}

/* One line per FPDU: "FPDU OPCODE fields... len N last L [badcrc]". */
static void vp_print_fpdu(struct vp_conn *c, const struct vp_fpdu *f)
{
	const struct viw_ddp_hdr *h = &f->hdr;
	const char *bad = f->crc_bad ? " badcrc" : "";

	if (f->hdr_rv) {
		vp_out("FPDU BAD ulpdu_len %u ctrl %02x %02x cause layer %u type %u code %u%s",
		       f->ulpdu_len, f->ulpdu_len > 0 ? f->ulpdu[0] : 0,
		       f->ulpdu_len > 1 ? f->ulpdu[1] : 0, f->cause.layer,
		       f->cause.etype, f->cause.ecode, bad);
		return;
	}
	switch (h->opcode) {
	case VIW_RDMAP_WRITE:
	case VIW_RDMAP_READ_RESP:
		vp_out("FPDU %s stag 0x%x to 0x%llx len %u last %d%s%s",
		       vp_op_names[h->opcode], h->stag,
		       (unsigned long long)h->to, f->payload_len, h->last, bad,
		       vp_pattern_check(f));
		break;
	case VIW_RDMAP_READ_REQ:
		vp_out("FPDU READ_REQ msn %u sink_stag 0x%x sink_to 0x%llx len %u src_stag 0x%x src_to 0x%llx%s",
		       h->msn, f->rr.sink_stag,
		       (unsigned long long)f->rr.sink_to, f->rr.size,
		       f->rr.src_stag, (unsigned long long)f->rr.src_to, bad);
		break;
	case VIW_RDMAP_TERMINATE:
		vp_out("FPDU TERMINATE msn %u layer %u type %u code %u%s",
		       h->msn, f->term.cause.layer, f->term.cause.etype,
		       f->term.cause.ecode, bad);
		break;
	case VIW_RDMAP_ATOMIC_REQ:
		vp_out("FPDU ATOMIC_REQ msn %u op %u%s id %u stag 0x%x to 0x%llx%s",
		       h->msn, f->areq.op, f->areq_rv ? " (bad)" : "",
		       f->areq.req_id, f->areq.stag,
		       (unsigned long long)f->areq.to, bad);
		break;
	case VIW_RDMAP_ATOMIC_RESP:
		vp_out("FPDU ATOMIC_RESP msn %u id %u orig 0x%llx%s", h->msn,
		       f->aresp.req_id, (unsigned long long)f->aresp.orig, bad);
		break;
	case VIW_RDMAP_IMM:
	case VIW_RDMAP_IMM_SE:
		vp_out("FPDU %s qn %u msn %u mo %u len %u last %d imm 0x%08x send %d%s%s",
		       vp_op_names[h->opcode], h->qn, h->msn, h->mo,
		       f->payload_len, h->last, f->imm.data, f->imm.send,
		       f->imm_rv ? " (bad)" : "", bad);
		break;
	default:
		vp_out("FPDU %s qn %u msn %u mo %u len %u last %d inv 0x%x%s",
		       vp_op_names[h->opcode], h->qn, h->msn, h->mo,
		       f->payload_len, h->last, h->inv_stag, bad);
		break;
	}
}

/* Remember what a later read-resp answers by default. */
static void vp_note_fpdu(struct vp_conn *c, const struct vp_fpdu *f)
{
	if (!f->hdr_rv && f->hdr.opcode == VIW_RDMAP_READ_REQ) {
		c->rreq = f->rr;
		c->have_rreq = true;
	}
}

/* Read and print FPDUs until @deadline, the end, or @max of them. */
static enum vp_rd vp_read_until(struct vp_conn *c, long long deadline,
				int max, int *seen, bool stop_at_term,
				struct vp_fpdu *f)
{
	enum vp_rd r;

	*seen = 0;
	while (max <= 0 || *seen < max) {
		r = vp_read_fpdu(c, deadline, f);
		if (r)
			return r;
		(*seen)++;
		vp_print_fpdu(c, f);
		vp_note_fpdu(c, f);
		if (stop_at_term && !f->hdr_rv &&
		    f->hdr.opcode == VIW_RDMAP_TERMINATE)
			return VP_RD_OK;
	}
	return VP_RD_OK;
}

/* Discard whatever arrives until @deadline or the end (before MPA). */
static enum vp_rd vp_drain_raw(struct vp_conn *c, long long deadline)
{
	size_t total = 0;
	enum vp_rd r;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		long long left = deadline - vp_now_ms();
		ssize_t n;

		if (left <= 0) {
			r = VP_RD_TIMEOUT;
			break;
		}
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		n = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			r = vp_rd_end(c, n);
			break;
		}
		total += (size_t)n;
	}
	if (total)
		vp_out("DATA %zu bytes", total);
	return r;
}

/* Wait for the end of the stream (FIN/RST) by @deadline, printing FPDUs. */
static enum vp_rd vp_wait_end(struct vp_conn *c, long long deadline)
{
	struct vp_fpdu f;
	int seen;

	if (c->gone)
		return VP_RD_FIN;
	if (c->noread)
		return vp_wait_end_noread(c, deadline);
	if (!c->framed)
		return vp_drain_raw(c, deadline);
	return vp_read_until(c, deadline, 0, &seen, false, &f);
}

/* ---- MPA ------------------------------------------------------------------------- */

/*
 * @n bytes of private data: "abc..z" repeated, or pdfill=B bytes; pdhead=
 * HEX replaces the first bytes (e.g. lengths the consumer checks).
 */
static void vp_fill_pd(const struct vp_step *s, u8 *p, u32 n)
{
	static u8 head[VIW_MPA_MAX_PDATA];
	const char *hex = vp_get(s, "pdhead");
	size_t hl = 0;
	u32 i;

	for (i = 0; i < n; i++)
		p[i] = (u8)('a' + i % 26);
	if (vp_has(s, "pdfill"))
		memset(p, (int)vp_num(s, "pdfill", 0), n);
	if (hex)
		hl = vp_hex_decode(s, hex, head, sizeof(head));
	if (hl > n)
		vp_usage_err("%s: pdhead is longer than pd=%u", s->text, n);
	memcpy(p, head, hl);
}

/*
 * Encode @fr with @pd bytes of private data into @buf (which holds
 * 20 + 4 + 65535).  What the codec refuses (too much private data,
 * IRD/ORD beyond 14 bits, RTR bits without P) is patched in afterwards,
 * so a test can send it anyway.  Returns the frame length.
 */
static u32 vp_mpa_build(const struct vp_step *s, u8 *buf,
			struct viw_mpa_frame *fr, u32 pd, u32 raw_ird,
			u32 raw_ord)
{
	u32 ext = fr->enhanced ? VIW_MPA_V2_EXT_LEN : 0;
	u8 rtr = fr->rtr;
	int hl;

	if (fr->rtr && !fr->p2p)
		fr->rtr = 0;
	hl = viw_mpa_encode(buf, VIW_MPA_HDR_LEN + VIW_MPA_V2_EXT_LEN, fr,
			    pd + ext <= VIW_MPA_MAX_PDATA ? (u16)pd : 0);
	if (hl < 0)
		vp_usage_err("%s: MPA frame not encodable (%d)", s->text, hl);
	buf[18] = (u8)((pd + ext) >> 8);
	buf[19] = (u8)(pd + ext);
	if (fr->enhanced) {
		/* P, SEND0 | IRD; WRITE0, READ0 | ORD (RFC 6581 section 3) */
		u16 ird = (raw_ird & 0x3fff) | (fr->p2p ? 0x8000 : 0) |
			  (rtr & VIW_RTR_SEND0 ? 0x4000 : 0);
		u16 ord = (raw_ord & 0x3fff) |
			  (rtr & VIW_RTR_WRITE0 ? 0x8000 : 0) |
			  (rtr & VIW_RTR_READ0 ? 0x4000 : 0);

		buf[20] = (u8)(ird >> 8);
		buf[21] = (u8)ird;
		buf[22] = (u8)(ord >> 8);
		buf[23] = (u8)ord;
	}
	fr->rtr = rtr;
	fr->pd_len = (u16)(pd + ext);
	vp_fill_pd(s, buf + VIW_MPA_HDR_LEN + ext, pd);
	if (vp_has(s, "pdlen")) {
		u32 v = (u32)vp_num(s, "pdlen", 0);

		buf[18] = (u8)(v >> 8);
		buf[19] = (u8)v;
	}
	return VIW_MPA_HDR_LEN + ext + pd;
}

/*
 * What a step says of any MPA request or reply @fr: the RTR type that
 * peer-to-peer needs, IRD and ORD (*@ird and *@ord as given, before they
 * are cut to the field), and the private data length, returned.
 */
static u32 vp_mpa_common(const struct vp_step *s, struct viw_mpa_frame *fr,
			 u32 *ird, u32 *ord)
{
	u32 pd;

	if (fr->p2p && !fr->rtr)
		fr->rtr = VIW_RTR_WRITE0;
	*ird = (u32)vp_num(s, "ird", VP_DEFAULT_IRD_ORD);
	*ord = (u32)vp_num(s, "ord", VP_DEFAULT_IRD_ORD);
	fr->ird = (u16)(*ird & VIW_MPA_MAX_IRD_ORD);
	fr->ord = (u16)(*ord & VIW_MPA_MAX_IRD_ORD);
	pd = (u32)vp_num(s, "pd", 0);
	if (pd > 0xffff)
		vp_usage_err("%s: pd=%u is more than 65535", s->text, pd);
	return pd;
}

static void vp_step_mpa_req(struct vp_conn *c, struct vp_step *s)
{
	static u8 buf[VIW_MPA_HDR_LEN + VIW_MPA_V2_EXT_LEN + 0xffff];
	struct viw_mpa_frame fr = {};
	u32 pd, len, ird, ord;
	u8 rev;

	vp_need_fd(c, s);
	fr.revision = (u8)vp_num(s, "rev", 2);
	fr.enhanced = vp_flag(s, "enhanced", fr.revision == 2);
	fr.crc = vp_flag(s, "crc", false);
	fr.markers = vp_flag(s, "markers", false);
	fr.rtr = vp_has(s, "rtr") ? vp_rtr_bits(s, vp_get(s, "rtr")) : 0;
	fr.p2p = vp_flag(s, "p2p", fr.rtr != 0);
	pd = vp_mpa_common(s, &fr, &ird, &ord);
	/* the codec refuses other revisions: encode as 1, patch them in */
	rev = fr.revision;
	if (rev != 1 && rev != 2) {
		fr.revision = 1;
		fr.enhanced = false;
	}
	len = vp_mpa_build(s, buf, &fr, pd, ird, ord);
	buf[17] = rev;
	fr.revision = rev;
	if (vp_flag(s, "badkey", false))
		buf[4] ^= 0x20;	/* "MPA id Req Frame" */
	c->req = fr;
	c->crc = fr.crc;
	vp_write_all(c, buf, len);
	vp_out("SENT MPA REQ rev %u crc %d markers %d pd %u ird %u ord %u p2p %d rtr %s",
	       fr.revision, fr.crc, fr.markers, pd, ird, ord, fr.p2p,
	       vp_rtr_str(fr.rtr));
}

static void vp_print_pdata(const u8 *p, u32 n)
{
	char line[2 * 512 + 1];
	u32 i;

	if (!n)
		return;
	for (i = 0; i < n && i < 512; i++)
		sprintf(line + 2 * i, "%02x", p[i]);
	vp_out("PDATA %u %s", n, line);
}

/*
 * Read an MPA frame (reply or request) into @fr; its ULP private data is
 * left in c->buf.  Fails the step on EOF, timeout or garbage.  Returns the
 * private data length (without the RFC 6581 words).
 */
static u32 vp_read_mpa(struct vp_conn *c, const struct vp_step *s,
		       bool reply, struct viw_mpa_frame *fr)
{
	const char *what = reply ? "reply" : "request";
	long long deadline = vp_deadline_secs(vp_secs(s, "secs", 0));
	u8 hdr[VIW_MPA_HDR_LEN];
	enum vp_rd r;
	u32 ext;
	int rv;

	vp_need_fd(c, s);
	r = vp_read_full(c, hdr, sizeof(hdr), deadline);
	if (r)
		vp_fail("no MPA %s: %s", what, vp_rd_str(r));
	rv = viw_mpa_decode_hdr(hdr, sizeof(hdr), reply, fr);
	if (rv == -EBADMSG)
		vp_fail("no MPA %s: garbage (key %.16s)", what, hdr);
	if (rv)
		vp_fail("MPA %s not valid: rev %u pd_length %u", what, hdr[17],
			(u32)hdr[18] << 8 | hdr[19]);
	r = vp_read_full(c, c->buf, fr->pd_len, deadline);
	if (r)
		vp_fail("MPA %s: private data cut short: %s", what,
			vp_rd_str(r));
	ext = fr->enhanced ? VIW_MPA_V2_EXT_LEN : 0;
	if (ext && viw_mpa_decode_v2(c->buf, fr->pd_len, fr))
		vp_fail("MPA %s: RFC 6581 words missing", what);
	vp_rx_pd_len = fr->pd_len - ext;
	if (vp_rx_pd_len > sizeof(vp_rx_pd))
		vp_rx_pd_len = sizeof(vp_rx_pd);
	memcpy(vp_rx_pd, c->buf + ext, vp_rx_pd_len);
	vp_have_rx_pd = true;
	return fr->pd_len - ext;
}

/* Compare an optional key against what was received. */
static void vp_expect_val(const struct vp_step *s, const char *key,
			  unsigned long long got)
{
	unsigned long long want;

	if (!vp_has(s, key))
		return;
	want = vp_num(s, key, 0);
	if (want != got)
		vp_fail("%s: %s is %llu, expected %llu", s->text, key, got,
			want);
}

/* The keys a step may expect of any MPA request or reply. */
static void vp_expect_mpa(const struct vp_step *s,
			  const struct viw_mpa_frame *f, u32 pd)
{
	vp_expect_val(s, "crc", f->crc);
	vp_expect_val(s, "rev", f->revision);
	vp_expect_val(s, "p2p", f->p2p);
	vp_expect_val(s, "pd", pd);
}

/*
 * Read an MPA reply or request into @f and print it ("REPLY ... reject N"
 * or "REQUEST ... markers N") with its private data; the private data's
 * length.
 */
static u32 vp_take_mpa(struct vp_conn *c, struct vp_step *s, bool reply,
		       struct viw_mpa_frame *f)
{
	u32 pd = vp_read_mpa(c, s, reply, f);
	u32 ext = f->enhanced ? VIW_MPA_V2_EXT_LEN : 0;

	vp_out("%s rev %u crc %d %s %d pd %u ird %u ord %u p2p %d rtr %s",
	       reply ? "REPLY" : "REQUEST", f->revision, f->crc,
	       reply ? "reject" : "markers", reply ? f->reject : f->markers,
	       pd, f->ird, f->ord, f->p2p, vp_rtr_str(f->rtr));
	vp_print_pdata(c->buf + ext, pd);
	return pd;
}

static void vp_step_expect_rep(struct vp_conn *c, struct vp_step *s)
{
	struct viw_mpa_frame *rep = &c->rep;
	u32 pd = vp_take_mpa(c, s, true, rep);

	c->crc = viw_mpa_crc_on(&c->req, rep);
	c->framed = !rep->reject;
	vp_expect_val(s, "reject", rep->reject);
	vp_expect_mpa(s, rep, pd);
	if (vp_has(s, "rtr") && vp_rtr_bits(s, vp_get(s, "rtr")) != rep->rtr)
		vp_fail("%s: rtr is %s", s->text, vp_rtr_str(rep->rtr));
}

static void vp_step_expect_req(struct vp_conn *c, struct vp_step *s)
{
	struct viw_mpa_frame *req = &c->req;
	u32 pd = vp_take_mpa(c, s, false, req);

	c->crc = req->crc;
	vp_expect_mpa(s, req, pd);
}

static void vp_step_mpa_rep(struct vp_conn *c, struct vp_step *s)
{
	static u8 buf[VIW_MPA_HDR_LEN + VIW_MPA_V2_EXT_LEN + 0xffff];
	struct viw_mpa_frame fr = { .reply = true };
	u32 pd, len, ird, ord;
	u8 rev;

	vp_need_fd(c, s);
	if (vp_flag(s, "garbage", false)) {
		for (len = 0; len < VIW_MPA_HDR_LEN; len++)
			buf[len] = (u8)rand();
		vp_write_all(c, buf, VIW_MPA_HDR_LEN);
		vp_out("SENT MPA REP garbage %u bytes", VIW_MPA_HDR_LEN);
		return;
	}
	rev = (u8)vp_num(s, "rev", c->req.revision ? c->req.revision : 2);
	fr.revision = rev == 1 ? 1 : 2;
	fr.enhanced = vp_flag(s, "enhanced", rev == 2 &&
			      (c->req.enhanced || !c->req.revision));
	fr.crc = vp_flag(s, "crc", c->req.crc);
	fr.reject = vp_flag(s, "reject", false);
	fr.p2p = vp_flag(s, "p2p", c->req.p2p);
	fr.rtr = vp_has(s, "rtr") ? vp_rtr_bits(s, vp_get(s, "rtr")) :
		 fr.p2p ? viw_mpa_pick_rtr(c->req.rtr) : 0;
	pd = vp_mpa_common(s, &fr, &ird, &ord);
	len = vp_mpa_build(s, buf, &fr, pd, ird, ord);
	buf[17] = rev;
	fr.revision = rev;
	c->rep = fr;
	c->crc = viw_mpa_crc_on(&c->req, &fr);
	c->framed = !fr.reject;
	vp_write_all(c, buf, len);
	vp_out("SENT MPA REP rev %u crc %d reject %d pd %u ird %u ord %u p2p %d rtr %s",
	       rev, fr.crc, fr.reject, pd, ird, ord, fr.p2p,
	       vp_rtr_str(fr.rtr));
}

/* ---- data steps ------------------------------------------------------------------- */

static u32 vp_next_msn(struct vp_conn *c, const struct vp_step *s, int qn)
{
	u32 msn = (u32)vp_num(s, "msn", c->msn[qn]);

	c->msn[qn] = msn + 1;
	return msn;
}

static void vp_step_send(struct vp_conn *c, struct vp_step *s)
{
	struct vp_msg m = {};
	bool se, inv;
	u32 segs;

	vp_need_fd(c, s);
	vp_msg_opts(s, &m);
	se = vp_flag(s, "se", false);
	inv = vp_has(s, "inv");
	m.hdr.opcode = se ? (inv ? VIW_RDMAP_SEND_SE_INV : VIW_RDMAP_SEND_SE) :
			    (inv ? VIW_RDMAP_SEND_INV : VIW_RDMAP_SEND);
	m.hdr.inv_stag = (u32)vp_num(s, "inv", 0);
	m.hdr.qn = VIW_QN_SEND;
	m.hdr.msn = vp_next_msn(c, s, VIW_QN_SEND);
	m.hdr.mo = (u32)vp_num(s, "mo", 0);
	segs = vp_send_msg(c, s, &m);
	vp_out("SENT %s msn %u len %u segs %u%s", vp_op_names[m.hdr.opcode],
	       m.hdr.msn, m.len, segs, m.partial ? " partial" : "");
}

static void vp_send_tagged(struct vp_conn *c, struct vp_step *s, u8 opcode,
			   u32 stag, u64 to)
{
	struct vp_msg m = {};
	u32 segs;

	vp_need_fd(c, s);
	vp_msg_opts(s, &m);
	m.hdr.opcode = opcode;
	m.hdr.tagged = true;
	m.hdr.stag = stag;
	m.hdr.to = to;
	segs = vp_send_msg(c, s, &m);
	vp_out("SENT %s stag 0x%x to 0x%llx len %u segs %u", vp_op_names[opcode],
	       stag, (unsigned long long)to, m.len, segs);
	if (m.partial)
		vp_out("PARTIAL sent %u of %u FPDU bytes", m.partial,
		       viw_fpdu_len(VIW_DDP_TAGGED_HDR_LEN + m.len));
}

static void vp_step_write(struct vp_conn *c, struct vp_step *s)
{
	vp_send_tagged(c, s, VIW_RDMAP_WRITE, (u32)vp_num_req(s, "stag"),
		       vp_num_req(s, "to"));
}

/* A Read Response; by default to the last Read Request received. */
static void vp_step_read_resp(struct vp_conn *c, struct vp_step *s)
{
	char lenbuf[16];
	u32 stag = (u32)vp_num(s, "stag", c->rreq.sink_stag);
	u64 to = vp_num(s, "to", c->rreq.sink_to);

	if (!vp_has(s, "len")) {
		if (s->nkv >= VP_MAX_KV)
			vp_usage_err("%s: too many keys", s->text);
		snprintf(lenbuf, sizeof(lenbuf), "%u", c->rreq.size);
		s->kv[s->nkv].key = "len";
		s->kv[s->nkv++].val = strdup(lenbuf);
	}
	if (!c->have_rreq && !(vp_has(s, "stag") && vp_has(s, "to")))
		vp_fail("%s: no Read Request received to answer", s->text);
	vp_send_tagged(c, s, VIW_RDMAP_READ_RESP, stag, to);
}

static void vp_step_read_req(struct vp_conn *c, struct vp_step *s)
{
	u8 ulpdu[VIW_MAX_HDR_LEN];
	struct viw_ddp_hdr h = { .opcode = VIW_RDMAP_READ_REQ, .last = true,
				 .qn = VIW_QN_READ_REQ };
	struct viw_read_req rr;
	const char *crc = vp_get(s, "crc");
	int hl;

	vp_need_fd(c, s);
	rr.sink_stag = (u32)vp_num(s, "sink_stag", 0x1000);
	rr.sink_to = vp_num(s, "sink_to", 0);
	rr.size = (u32)vp_num_req(s, "len");
	rr.src_stag = (u32)vp_num_req(s, "src_stag");
	rr.src_to = vp_num(s, "src_to", 0);
	h.msn = vp_next_msn(c, s, VIW_QN_READ_REQ);
	hl = vp_encode_hdr(s, ulpdu, &h);
	viw_read_req_encode(ulpdu + hl, &rr);
	vp_send_fpdu(c, ulpdu, hl + VIW_RDMAP_READ_REQ_LEN,
		     crc && !strcmp(crc, "bad"), 0);
	vp_out("SENT READ_REQ msn %u sink_stag 0x%x sink_to 0x%llx len %u src_stag 0x%x src_to 0x%llx",
	       h.msn, rr.sink_stag, (unsigned long long)rr.sink_to, rr.size,
	       rr.src_stag, (unsigned long long)rr.src_to);
}

/*
 * An Atomic Request (RFC 7306): FetchAdd of add=N by default; op= sends
 * any Atomic Operation Code, valid or not.
 */
static void vp_step_atomic_req(struct vp_conn *c, struct vp_step *s)
{
	u8 ulpdu[VIW_MAX_HDR_LEN];
	struct viw_ddp_hdr h = { .opcode = VIW_RDMAP_ATOMIC_REQ, .last = true,
				 .qn = VIW_QN_READ_REQ };
	struct viw_atomic_req ar;
	int hl;

	vp_need_fd(c, s);
	ar.op = (u8)vp_num(s, "op", VIW_ATOMIC_FETCH_ADD);
	ar.req_id = (u32)vp_num(s, "id", 1);
	ar.stag = (u32)vp_num_req(s, "stag");
	ar.to = vp_num_req(s, "to");
	ar.add_swap = vp_num(s, "add", 1);
	ar.add_swap_mask = vp_num(s, "mask", 0);
	ar.compare = vp_num(s, "cmp", 0);
	ar.compare_mask = vp_num(s, "cmp_mask", 0);
	h.msn = vp_next_msn(c, s, VIW_QN_READ_REQ);
	hl = vp_encode_hdr(s, ulpdu, &h);
	viw_atomic_req_encode(ulpdu + hl, &ar);
	vp_send_fpdu(c, ulpdu, hl + VIW_RDMAP_ATOMIC_REQ_LEN, false, 0);
	vp_out("SENT ATOMIC_REQ msn %u op %u id %u stag 0x%x to 0x%llx",
	       h.msn, ar.op, ar.req_id, ar.stag, (unsigned long long)ar.to);
}

/* An Atomic Response, e.g. one that answers nothing viw asked. */
static void vp_step_atomic_resp(struct vp_conn *c, struct vp_step *s)
{
	u8 ulpdu[VIW_MAX_HDR_LEN];
	struct viw_ddp_hdr h = { .opcode = VIW_RDMAP_ATOMIC_RESP, .last = true,
				 .qn = VIW_QN_ATOMIC_RESP };
	struct viw_atomic_resp r;
	int hl;

	vp_need_fd(c, s);
	r.req_id = (u32)vp_num(s, "id", 0);
	r.orig = vp_num(s, "orig", 0);
	h.msn = vp_next_msn(c, s, VIW_QN_ATOMIC_RESP);
	hl = vp_encode_hdr(s, ulpdu, &h);
	viw_atomic_resp_encode(ulpdu + hl, &r);
	vp_send_fpdu(c, ulpdu, hl + VIW_RDMAP_ATOMIC_RESP_LEN, false, 0);
	vp_out("SENT ATOMIC_RESP msn %u id %u orig 0x%llx", h.msn, r.req_id,
	       (unsigned long long)r.orig);
}

static void vp_step_term(struct vp_conn *c, struct vp_step *s)
{
	u8 ulpdu[VIW_DDP_UNTAGGED_HDR_LEN + sizeof(struct viw_term)];
	struct viw_ddp_hdr h = { .opcode = VIW_RDMAP_TERMINATE, .last = true,
				 .qn = VIW_QN_TERMINATE };
	struct viw_term t = {};
	int hl, bl;

	vp_need_fd(c, s);
	t.cause.layer = (u8)vp_num(s, "layer", VIW_TERM_RDMAP);
	t.cause.etype = (u8)vp_num(s, "type", VIW_RDMAP_ET_REMOTE_OP);
	t.cause.ecode = (u8)vp_num(s, "code", VIW_RDMAP_EC_UNSPECIFIED);
	h.msn = vp_next_msn(c, s, VIW_QN_TERMINATE);
	hl = vp_encode_hdr(s, ulpdu, &h);
	bl = viw_term_encode(ulpdu + hl, sizeof(ulpdu) - hl, &t);
	if (bl < 0)
		vp_usage_err("%s: TERMINATE not encodable (%d)", s->text, bl);
	vp_send_fpdu(c, ulpdu, hl + bl, false, 0);
	vp_out("SENT TERMINATE msn %u layer %u type %u code %u", h.msn,
	       t.cause.layer, t.cause.etype, t.cause.ecode);
}

/* The RFC 6581 RTR: a zero-length SEND, WRITE or READ. */
static void vp_step_rtr(struct vp_conn *c, struct vp_step *s)
{
	u8 type = vp_has(s, "type") ? vp_rtr_bits(s, vp_get(s, "type")) :
		  c->rep.p2p ? c->rep.rtr : viw_mpa_pick_rtr(c->req.rtr);
	u8 ulpdu[VIW_MAX_HDR_LEN];
	struct viw_ddp_hdr h = { .last = true };
	struct viw_read_req rr = {};
	u32 len;

	vp_need_fd(c, s);
	if (!type)
		type = VIW_RTR_WRITE0;
	if (type & VIW_RTR_SEND0) {
		h.opcode = VIW_RDMAP_SEND;
		h.qn = VIW_QN_SEND;
		h.msn = vp_next_msn(c, s, VIW_QN_SEND);
	} else if (type & VIW_RTR_READ0) {
		h.opcode = VIW_RDMAP_READ_REQ;
		h.qn = VIW_QN_READ_REQ;
		h.msn = vp_next_msn(c, s, VIW_QN_READ_REQ);
	} else {
		h.opcode = VIW_RDMAP_WRITE;
		h.tagged = true;
	}
	len = (u32)vp_encode_hdr(s, ulpdu, &h);
	if (h.opcode == VIW_RDMAP_READ_REQ) {
		viw_read_req_encode(ulpdu + len, &rr);
		len += VIW_RDMAP_READ_REQ_LEN;
	}
	vp_send_fpdu(c, ulpdu, len, false, 0);
	vp_out("SENT RTR %s", vp_rtr_str(type));
}

static void vp_step_raw(struct vp_conn *c, struct vp_step *s)
{
	size_t n = vp_hex_decode(s, s->bare, c->buf, sizeof(c->buf));

	vp_need_fd(c, s);
	vp_write_all(c, c->buf, n);
	vp_out("SENT RAW %zu bytes", n);
}

static void vp_step_fpdu_raw(struct vp_conn *c, struct vp_step *s)
{
	static u8 ulpdu[VP_ULPDU_MAX];
	const char *hdr = vp_get(s, "hdr");
	const char *crc = vp_get(s, "crc");
	size_t hl = hdr ? vp_hex_decode(s, hdr, ulpdu, sizeof(ulpdu)) : 0;
	u32 n = (u32)vp_num(s, "len", 0);

	vp_need_fd(c, s);
	if (hl + n > VP_ULPDU_MAX)
		vp_usage_err("%s: ULPDU longer than 65535", s->text);
	memset(ulpdu + hl, (int)vp_num(s, "fill", VP_DEFAULT_FILL), n);
	vp_send_fpdu(c, ulpdu, (u32)(hl + n), crc && !strcmp(crc, "bad"),
		     (u32)vp_num(s, "partial", 0));
	vp_out("SENT FPDU-RAW ulpdu_len %zu", hl + n);
}

static void vp_step_garbage(struct vp_conn *c, struct vp_step *s)
{
	u32 n = (u32)vp_parse_num(s, "N", s->bare), i;

	vp_need_fd(c, s);
	if (n > sizeof(c->buf))
		vp_usage_err("%s: at most %zu bytes", s->text, sizeof(c->buf));
	for (i = 0; i < n; i++)
		c->buf[i] = (u8)rand();
	vp_write_all(c, c->buf, n);
	vp_out("SENT GARBAGE %u bytes", n);
}

/* ---- expectations ------------------------------------------------------------------ */

static void vp_step_expect_term(struct vp_conn *c, struct vp_step *s)
{
	long long deadline = vp_deadline_secs(vp_secs(s, "secs", 0));
	struct vp_fpdu f;
	enum vp_rd r;
	int seen;

	vp_need_fd(c, s);
	r = vp_read_until(c, deadline, 0, &seen, true, &f);
	if (r)
		vp_fail("no TERMINATE: %s", vp_rd_str(r));
	vp_out("TERMINATE layer %u type %u code %u", f.term.cause.layer,
	       f.term.cause.etype, f.term.cause.ecode);
	vp_expect_val(s, "layer", f.term.cause.layer);
	vp_expect_val(s, "type", f.term.cause.etype);
	vp_expect_val(s, "code", f.term.cause.ecode);
}

static void vp_step_expect_close(struct vp_conn *c, struct vp_step *s)
{
	long long deadline = vp_deadline_secs(vp_secs(s, "secs", 0));
	enum vp_rd r;

	vp_need_fd(c, s);
	r = vp_wait_end(c, deadline);
	if (r == VP_RD_TIMEOUT)
		vp_fail("still open after %g s", vp_secs(s, "secs", 0));
	vp_out("%s", vp_rd_str(r));
}

static void vp_step_expect_open(struct vp_conn *c, struct vp_step *s)
{
	double secs = vp_secs(s, "secs", 1);
	enum vp_rd r;

	vp_need_fd(c, s);
	r = vp_wait_end(c, vp_deadline_secs(secs));
	if (r != VP_RD_TIMEOUT) {
		vp_out("%s", vp_rd_str(r));
		vp_fail("connection ended within %g s", secs);
	}
	vp_out("OPEN after %g s", secs);
}

static void vp_step_read_fpdus(struct vp_conn *c, struct vp_step *s)
{
	long long deadline = vp_deadline_secs(vp_secs(s, "secs", 5));
	int count = (int)vp_num(s, "count", 0);
	struct vp_fpdu f;
	enum vp_rd r;
	int seen;

	vp_need_fd(c, s);
	if (!c->framed)
		vp_fail("%s: no MPA exchange yet", s->text);
	r = vp_read_until(c, deadline, count, &seen, false, &f);
	if (r == VP_RD_FIN || r == VP_RD_RST)
		vp_out("%s", vp_rd_str(r));
	vp_out("FPDUS %d", seen);
	if (count && seen < count)
		vp_fail("%s: %d FPDUs, expected %d", s->text, seen, count);
}

/* ---- socket control ----------------------------------------------------------------- */

static void vp_step_rcvbuf(struct vp_conn *c, struct vp_step *s)
{
	(void)c;
	(void)s;	/* applied to the socket before connect/listen */
}

static void vp_step_noread(struct vp_conn *c, struct vp_step *s)
{
	(void)s;
	c->noread = true;
	vp_out("NOREAD");
}

static void vp_step_sleep(struct vp_conn *c, struct vp_step *s)
{
	double secs = s->bare ? strtod(s->bare, NULL) : vp_secs(s, "secs", 1);

	(void)c;
	vp_sleep_ms((long long)(secs * 1000));
}

/* Wait until the -i file holds KEY: the test's go-ahead for the next step. */
static void vp_step_await(struct vp_conn *c, struct vp_step *s)
{
	(void)c;
	vp_info_value(s->bare);
	vp_out("AWAITED %s", s->bare);
}

static void vp_step_hold(struct vp_conn *c, struct vp_step *s)
{
	(void)c;
	(void)s;
	vp_out("HOLD");
	for (;;)
		pause();
}

/* TCP_CORK: hold the following steps' bytes back, to send them together. */
static void vp_step_cork(struct vp_conn *c, struct vp_step *s)
{
	int on = !strcmp(s->def->name, "cork");

	vp_need_fd(c, s);
	setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	vp_out("%s", on ? "CORK" : "UNCORK");
}

static void vp_step_fin(struct vp_conn *c, struct vp_step *s)
{
	vp_need_fd(c, s);
	shutdown(c->fd, SHUT_WR);
	vp_out("SENT FIN");
}

static void vp_step_rst(struct vp_conn *c, struct vp_step *s)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	vp_need_fd(c, s);
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c->fd);
	c->fd = -1;
	vp_out("SENT RST");
}

static void vp_step_close(struct vp_conn *c, struct vp_step *s)
{
	vp_need_fd(c, s);
	close(c->fd);
	c->fd = -1;
	vp_out("CLOSE");
}

/* ---- step table and usage ------------------------------------------------------------ */

#define VP_MSG_KEYS "len,mulpdu,fill,crc,last,qn,partial,segs"

static const struct vp_step_def vp_defs[] = {
	{ "mpa-req",
	  "rev,crc,markers,badkey,pd,pdlen,pdfill,pdhead,ird,ord,p2p,rtr,enhanced",
	  0, vp_step_mpa_req },
	{ "expect-rep", "reject,crc,rev,p2p,rtr,pd,secs", 0, vp_step_expect_rep },
	{ "expect-req", "crc,rev,p2p,pd,secs", 0, vp_step_expect_req },
	{ "mpa-rep",
	  "reject,crc,rev,pd,pdlen,pdfill,pdhead,garbage,ird,ord,p2p,rtr,enhanced",
	  0, vp_step_mpa_rep },
	{ "rtr", "type,msn", 0, vp_step_rtr },
	{ "send", VP_MSG_KEYS ",msn,mo,se,inv", 0, vp_step_send },
	{ "write", VP_MSG_KEYS ",stag,to", 0, vp_step_write },
	{ "read-resp", VP_MSG_KEYS ",stag,to", 0, vp_step_read_resp },
	{ "read-req", "sink_stag,sink_to,len,src_stag,src_to,msn,crc", 0,
	  vp_step_read_req },
	{ "atomic-req", "op,id,stag,to,add,mask,cmp,cmp_mask,msn", 0,
	  vp_step_atomic_req },
	{ "atomic-resp", "id,orig,msn", 0, vp_step_atomic_resp },
	{ "term", "layer,type,code,msn", 0, vp_step_term },
	{ "raw", NULL, 2, vp_step_raw },
	{ "fpdu-raw", "hdr,len,fill,crc,partial", 0, vp_step_fpdu_raw },
	{ "garbage", NULL, 2, vp_step_garbage },
	{ "expect-term", "layer,type,code,secs", 0, vp_step_expect_term },
	{ "expect-close", "secs", 0, vp_step_expect_close },
	{ "expect-open", "secs", 0, vp_step_expect_open },
	{ "read-fpdus", "secs,count", 0, vp_step_read_fpdus },
	{ "rcvbuf", NULL, 2, vp_step_rcvbuf },
	{ "noread", NULL, 0, vp_step_noread },
	{ "sleep", "secs", 1, vp_step_sleep },
	{ "hold", NULL, 0, vp_step_hold },
	{ "await", NULL, 2, vp_step_await },
	{ "cork", NULL, 0, vp_step_cork },
	{ "uncork", NULL, 0, vp_step_cork },
	{ "fin", NULL, 0, vp_step_fin },
	{ "rst", NULL, 0, vp_step_rst },
	{ "close", NULL, 0, vp_step_close },
};

static const char vp_usage_text[] =
"usage: viw_peer [-6] (-c HOST:PORT | -l PORT) [-n COUNT] [-t TIMEOUT_S]\n"
"                [-i INFO_FILE] [-P] STEP...\n"
"A raw TCP peer speaking MPA/DDP/RDMAP byte by byte, for viw's tests.\n"
"  -c HOST:PORT  connect ([v6addr]:port for IPv6); -l PORT listen, accept one\n"
"  -6            IPv6    -n COUNT  COUNT connections in parallel, same steps\n"
"                (lines are then prefixed \"[i] \")\n"
"  -t SECS       overall timeout, default 30; then exit 124\n"
"  -i FILE       viw_target's --info file: a number may be @STAG, @ADDR,\n"
"                @LEN or @QPN, optionally +N or -N (waits for the file)\n"
"  -P            check the payload of received WRITE/READ_RESP FPDUs against\n"
"                viw_target's MR pattern ((7*k+3)&0x7f at offset k), taking\n"
"                the TO as k (so give read-req sink_to=<source offset>):\n"
"                \" pattern ok\" or \" pattern bad at +N\" ends the FPDU line\n"
"Numbers are decimal or 0x hex; also @PD16.OFF, @PD32.OFF, @PD64.OFF: the\n"
"big-endian number at byte OFF of the private data of the last MPA frame\n"
"received (after the RFC 6581 words), optionally +N or -N (exit 3 if it is\n"
"shorter), e.g. read-req:src_stag=@PD32.0,src_to=@PD64.4,len=@PD32.12.\n"
"Each STEP is name[:key=val,...]; every step with keys also takes repeat=N\n"
"(run it N times; MSNs still count up)\n"
"  mpa-req[:rev=1|2,crc=0|1,markers=0|1,badkey=0|1,pd=N,pdlen=N,pdfill=B,\n"
"          pdhead=HEX,ird=N,ord=N,p2p=0|1,rtr=send|write|read(+...),\n"
"          enhanced=0|1]\n"
"        send an MPA request (rev 2 with RFC 6581 words by default; crc 0;\n"
"        ird/ord 16, their low 14 bits on the wire;\n"
"        pd = N bytes of private data, \"abc..z\" or pdfill=B bytes, the\n"
"        first ones replaced by pdhead=HEX; pdlen overrides PD_Length, so\n"
"        pd=6,pdlen=100 announces 100 bytes and sends 10 with the RFC 6581\n"
"        words; rtr implies p2p=1)                -> SENT MPA REQ ...\n"
"  expect-rep[:reject=,crc=,rev=,p2p=,rtr=,pd=,secs=]  read the reply ->\n"
"        REPLY rev R crc C reject J pd N ird I ord O p2p P rtr X\n"
"        (+ PDATA N HEX); exit 3 on none/EOF/garbage or a given key differs\n"
"  expect-req[:crc=,rev=,p2p=,pd=,secs=]  (server) read the request ->\n"
"        REQUEST rev R crc C markers M pd N ird I ord O p2p P rtr X\n"
"  mpa-rep[:reject=0|1,crc=,rev=,pd=N,pdlen=N,pdfill=B,pdhead=HEX,garbage=1,\n"
"          ird=,ord=,p2p=,rtr=,enhanced=]  (server) answer; defaults follow\n"
"        the request; pd, pdlen, pdfill, pdhead as for mpa-req\n"
"  rtr[:type=send|write|read]  the RFC 6581 RTR (default: the negotiated one)\n"
"  send:len=N[,msn=M,mo=O,last=0|1,se=0|1,inv=STAG,qn=Q,fill=B,mulpdu=U,\n"
"       crc=bad,partial=P,segs=K]  untagged SEND (qn 0) in FPDUs of at most\n"
"       U bytes of DDP segment (default 1024); MO and L set right unless\n"
"       overridden (last= is L of the final segment; MSN counts from 1);\n"
"       segs=K sends only the first K segments (the rest never comes)\n"
"  write:stag=S,to=T,len=N[,partial=P,fill=B,mulpdu=U,crc=bad,last=0|1,segs=K]\n"
"       tagged RDMA WRITE; partial=P sends the message as ONE FPDU and only\n"
"       its first P bytes (counted from the MPA length field; the tagged\n"
"       header ends at byte 16), then goes on with the next step\n"
"  read-resp[:stag=,to=,len=,...]  a Read Response, by default answering\n"
"       the last READ_REQ received (same keys as write)\n"
"  read-req:len=N,src_stag=S[,src_to=,sink_stag=(0x1000),sink_to=,msn=,crc=bad]\n"
"  term[:layer=L,type=T,code=C,msn=]  a TERMINATE (default 0/2/0xff)\n"
"  raw:HEX  raw bytes    garbage:N  N random bytes\n"
"  fpdu-raw:hdr=HEX[,len=N,fill=B,crc=bad,partial=P]  HEX plus N fill bytes\n"
"  atomic-req:stag=S,to=T[,op=0,add=1,mask=,cmp=,cmp_mask=,id=1,msn=]\n"
"  atomic-resp:[id=0,orig=0,msn=]       an Atomic Response (RFC 7306)\n"
"       as one ULPDU, with correct MPA length, pad and CRC\n"
"  expect-term[:layer=,type=,code=,secs=]  read FPDUs until a TERMINATE ->\n"
"       TERMINATE layer L type T code C; exit 3 on EOF/timeout/mismatch\n"
"  expect-close[:secs=S]  wait for FIN/RST -> CLOSED fin | CLOSED rst\n"
"       (before an MPA exchange, bytes that come are dropped: DATA N bytes)\n"
"  expect-open[:secs=S]   still open after S s (default 1) -> OPEN after S s\n"
"  read-fpdus[:secs=S,count=N]  print FPDUs for S s (default 5), until EOF\n"
"       or N of them (fewer than N: exit 3) -> FPDU ... lines, FPDUS n\n"
"  rcvbuf:BYTES  SO_RCVBUF, applied before connect/listen wherever it stands\n"
"  noread  never read the socket again   sleep:SECS   hold (until killed)\n"
"  await:KEY  wait until the -i file holds KEY (a test's go-ahead)\n"
"  fin (shutdown write)   rst (SO_LINGER 0 close)   close\n"
"  cork / uncork  TCP_CORK on/off: send what lies between in as few\n"
"       segments as possible (e.g. cork mpa-req send:len=8 fin)\n"
"CRC is on in FPDUs if the MPA exchange negotiated it.  Received FPDUs:\n"
"  FPDU WRITE|READ_RESP stag S to T len N last L\n"
"  FPDU SEND|SEND_SE|SEND_INV|SEND_SE_INV qn Q msn M mo O len N last L inv S\n"
"  FPDU READ_REQ msn M sink_stag S sink_to T len N src_stag S src_to T\n"
"  FPDU TERMINATE msn M layer L type T code C\n"
"  FPDU IMM|IMM_SE qn Q msn M mo O len N last L imm 0xDATA send S\n"
"  FPDU BAD ... (header the codec refuses); \" badcrc\" appended on CRC errors\n"
"Exit: 0 all steps passed, 3 expectation failed, 2 usage, 124 timeout.\n";

static bool vp_key_ok(const char *keys, const char *key)
{
	size_t n = strlen(key);
	const char *p = keys;

	while (p && *p) {
		if (!strncmp(p, key, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

static const struct vp_step_def *vp_find_def(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(vp_defs) / sizeof(vp_defs[0]); i++)
		if (!strcmp(vp_defs[i].name, name))
			return &vp_defs[i];
	return NULL;
}

static void vp_parse_kvs(struct vp_step *s, char *args)
{
	char *tok, *save, *eq;

	for (tok = strtok_r(args, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq)
			vp_usage_err("%s: \"%s\" is not key=value", s->text, tok);
		*eq = '\0';
		if (strcmp(tok, "repeat") && !vp_key_ok(s->def->keys, tok))
			vp_usage_err("%s: unknown key %s", s->text, tok);
		if (s->nkv >= VP_MAX_KV)
			vp_usage_err("%s: too many keys", s->text);
		s->kv[s->nkv].key = tok;
		s->kv[s->nkv++].val = eq + 1;
	}
}

static void vp_parse_step(const char *arg)
{
	struct vp_step *s;
	char *name, *colon;

	if (vp_nsteps >= VP_MAX_STEPS)
		vp_usage_err("more than %d steps", VP_MAX_STEPS);
	s = &vp_steps[vp_nsteps++];
	s->text = strdup(arg);
	name = strdup(arg);
	colon = strchr(name, ':');
	if (colon)
		*colon++ = '\0';
	s->def = vp_find_def(name);
	if (!s->def)
		vp_usage_err("unknown step %s", name);
	if (s->def->bare == 2 && (!colon || !*colon))
		vp_usage_err("%s needs a value (%s:VALUE)", name, name);
	if (!colon)
		return;
	if (s->def->bare && !strchr(colon, '=')) {
		s->bare = colon;
		return;
	}
	if (!s->def->keys)
		vp_usage_err("%s takes no arguments", name);
	vp_parse_kvs(s, colon);
}

/* Check that every number parses now, before anything is sent. */
static void vp_check_steps(void)
{
	int i, k;

	for (i = 0; i < vp_nsteps; i++) {
		struct vp_step *s = &vp_steps[i];

		for (k = 0; k < s->nkv; k++) {
			const char *key = s->kv[k].key, *v = s->kv[k].val;
			unsigned int bits, off;
			char name[32];

			/* @PD...: the syntax now, the value when received */
			if (!strncmp(v, "@PD", 3)) {
				snprintf(name, sizeof(name), "%.*s",
					 (int)strcspn(v + 1, "+-"), v + 1);
				vp_pd_ref(s, key, name, &bits, &off);
			}
			if (v[0] == '@' || !strcmp(key, "rtr") ||
			    !strcmp(key, "hdr") || !strcmp(key, "crc") ||
			    !strcmp(key, "pdhead") ||
			    (s->def->run == vp_step_rtr && !strcmp(key, "type")))
				continue;
			if (!strcmp(key, "secs"))
				vp_secs(s, "secs", 0);
			else
				vp_parse_num(s, key, v);
		}
		if (s->def->run == vp_step_rcvbuf)
			vp_opt.rcvbuf = (int)vp_parse_num(s, "BYTES", s->bare);
		if (s->def->run == vp_step_rtr && vp_has(s, "type"))
			vp_rtr_bits(s, vp_get(s, "type"));
		if ((s->def->run == vp_step_raw) ||
		    (s->def->run == vp_step_fpdu_raw && vp_has(s, "hdr"))) {
			static u8 tmp[VP_ULPDU_MAX];

			vp_hex_decode(s, s->bare ? s->bare : vp_get(s, "hdr"),
				      tmp, sizeof(tmp));
		}
		if (vp_has(s, "pdhead")) {
			static u8 tmp[VIW_MPA_MAX_PDATA];

			if (vp_hex_decode(s, vp_get(s, "pdhead"), tmp,
					  sizeof(tmp)) > vp_num(s, "pd", 0))
				vp_usage_err("%s: pdhead is longer than pd",
					     s->text);
		}
	}
}

static void vp_parse_args(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt, i;

	while ((opt = getopt_long(argc, argv, "+6c:l:n:t:i:Ph", lopts,
				  NULL)) != -1) {
		switch (opt) {
		case '6':
			vp_opt.v6 = true;
			break;
		case 'c':
			vp_opt.host = optarg;
			break;
		case 'l':
			vp_opt.listen = true;
			vp_opt.port = optarg;
			break;
		case 'n':
			vp_opt.count = (int)strtol(optarg, &end, 0);
			if (*end || vp_opt.count < 1 ||
			    vp_opt.count > VP_MAX_CONNS)
				vp_usage_err("-n %s: 1..%d", optarg,
					     VP_MAX_CONNS);
			break;
		case 't':
			vp_opt.timeout = (int)strtol(optarg, &end, 0);
			if (*end || vp_opt.timeout < 1)
				vp_usage_err("-t %s: seconds", optarg);
			break;
		case 'i':
			vp_opt.info = optarg;
			break;
		case 'P':
			vp_opt.pattern = true;
			break;
		case 'h':
			fputs(vp_usage_text, stdout);
			exit(0);
		default:
			vp_usage_err("bad option");
		}
	}
	if (!!vp_opt.host == vp_opt.listen)
		vp_usage_err("give exactly one of -c HOST:PORT and -l PORT");
	for (i = optind; i < argc; i++)
		vp_parse_step(argv[i]);
	vp_check_steps();
}

/* ---- connections ------------------------------------------------------------------- */

/* Split HOST:PORT or [HOST]:PORT. */
static void vp_split_hostport(const char *arg, char **host, char **port)
{
	char *h = strdup(arg), *p;

	if (h[0] == '[') {
		p = strchr(h, ']');
		if (!p || p[1] != ':')
			vp_usage_err("-c %s: [HOST]:PORT", arg);
		*p = '\0';
		*host = h + 1;
		*port = p + 2;
		return;
	}
	p = strrchr(h, ':');
	if (!p)
		vp_usage_err("-c %s: HOST:PORT", arg);
	*p = '\0';
	*host = h;
	*port = p + 1;
}

static void vp_apply_rcvbuf(int fd)
{
	int v;
	socklen_t l = sizeof(v);

	if (!vp_opt.rcvbuf)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &vp_opt.rcvbuf,
		   sizeof(vp_opt.rcvbuf));
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l);
	vp_out("RCVBUF %d (kernel reports %d)", vp_opt.rcvbuf, v);
}

static void vp_print_addr(const char *what, const struct sockaddr *sa)
{
	char h[INET6_ADDRSTRLEN] = "?", p[16] = "?";

	getnameinfo(sa, sa->sa_family == AF_INET6 ?
		    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
		    h, sizeof(h), p, sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
	vp_out("%s %s port %s", what, h, p);
}

static int vp_connect(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *res;
	char *host, *port;
	int fd, rv;

	vp_split_hostport(vp_opt.host, &host, &port);
	hints.ai_family = vp_opt.v6 ? AF_INET6 : AF_INET;
	rv = getaddrinfo(host, port, &hints, &res);
	if (rv)
		vp_usage_err("-c %s: %s", vp_opt.host, gai_strerror(rv));
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		vp_fail("socket: %s", strerror(errno));
	vp_apply_rcvbuf(fd);
	if (connect(fd, res->ai_addr, res->ai_addrlen))
		vp_fail("connect %s: %s", vp_opt.host, strerror(errno));
	freeaddrinfo(res);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	vp_print_addr("CONNECTED local", (struct sockaddr *)&ss);
	return fd;
}

static int vp_listen(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	int one = 1, fd;
	long port = strtol(vp_opt.port, NULL, 10);

	if (port <= 0 || port > 65535)
		vp_usage_err("-l %s: a port", vp_opt.port);
	fd = socket(vp_opt.v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		vp_fail("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	vp_apply_rcvbuf(fd);
	a6.sin6_port = htons((u16)port);
	a4.sin_port = htons((u16)port);
	if (vp_opt.v6 ? bind(fd, (struct sockaddr *)&a6, sizeof(a6)) :
			bind(fd, (struct sockaddr *)&a4, sizeof(a4)))
		vp_fail("bind port %ld: %s", port, strerror(errno));
	if (listen(fd, vp_opt.count > 128 ? vp_opt.count : 128))
		vp_fail("listen: %s", strerror(errno));
	vp_out("LISTENING port %ld", port);
	return fd;
}

static int vp_accept(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	do {
		fd = accept(lfd, (struct sockaddr *)&ss, &sl);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		vp_fail("accept: %s", strerror(errno));
	vp_print_addr("ACCEPTED from", (struct sockaddr *)&ss);
	return fd;
}

/* Run all steps on connection @fd; exits with the result. */
static void __attribute__((noreturn)) vp_run(int fd)
{
	static struct vp_conn c;
	int i;

	c.fd = fd;
	/* RFC 5041 5.1: MSN from 1 */
	c.msn[0] = c.msn[1] = c.msn[2] = c.msn[3] = 1;
	for (i = 0; i < vp_nsteps; i++) {
		struct vp_step *s = &vp_steps[i];
		unsigned long long n = vp_num(s, "repeat", 1);

		while (n--)
			s->def->run(&c, s);
	}
	vp_out("DONE");
	exit(0);
}

/* The exit code of the whole run: the first connection that did not pass. */
static int vp_wait_children(void)
{
	int i, st, rc = 0, code;

	for (i = 0; i < vp_nchildren; i++) {
		while (waitpid(vp_children[i], &st, 0) < 0 && errno == EINTR)
			;
		code = WIFEXITED(st) ? WEXITSTATUS(st) : VP_EXIT_FAIL;
		if (!rc && code)
			rc = code;
	}
	return rc;
}

static void vp_spawn(int fd, int index)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		vp_fail("fork: %s", strerror(errno));
	if (!pid) {
		vp_nchildren = 0;
		vp_conn_index = index;
		vp_arm_alarm();
		vp_run(fd >= 0 ? fd : vp_connect());
	}
	vp_children[vp_nchildren++] = pid;
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	int lfd = -1, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned int)(time(NULL) ^ getpid()));
	vp_parse_args(argc, argv);
	vp_end_ms = vp_now_ms() + vp_opt.timeout * 1000LL;
	vp_arm_alarm();
	signal(SIGPIPE, SIG_IGN);

	if (vp_opt.listen)
		lfd = vp_listen();
	if (vp_opt.count == 1)
		vp_run(lfd >= 0 ? vp_accept(lfd) : vp_connect());
	for (i = 0; i < vp_opt.count; i++)
		vp_spawn(lfd >= 0 ? vp_accept(lfd) : -1, i);
	return vp_wait_children();
}
