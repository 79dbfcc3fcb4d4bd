// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_test: the helpers the librdmacm functional tests share; see
 * viw_test.h.
 */
#define _GNU_SOURCE
#include <errno.h>
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

/* Open the RDMA device called @name; NULL if there is none. */
struct ibv_context *vt_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
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

	if (state >= 0 && state < (int)(sizeof(names) / sizeof(names[0])) &&
	    names[state])
		return names[state];
	return state < 0 ? strerror(-state) : "?";
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
	struct rdma_cm_event *ev;
	int rv;

	*ch = vt_create_channel(why, why_len);
	if (!*ch)
		return -ENODEV;
	if (rdma_create_id(*ch, id, ctx, RDMA_PS_TCP)) {
		rv = -errno;
		snprintf(why, why_len, "rdma_create_id: %s", strerror(errno));
		return rv;
	}
	if (rdma_resolve_addr(*id, NULL, (struct sockaddr *)dst, resolve_ms)) {
		rv = -errno;
		snprintf(why, why_len, "rdma_resolve_addr: %s",
			 strerror(errno));
		return rv;
	}
	rv = vt_cm_expect(*ch, RDMA_CM_EVENT_ADDR_RESOLVED, event_ms, &ev, why,
			  why_len);
	if (rv)
		return rv;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(*id, resolve_ms)) {
		rv = -errno;
		snprintf(why, why_len, "rdma_resolve_route: %s",
			 strerror(errno));
		return rv;
	}
	rv = vt_cm_expect(*ch, RDMA_CM_EVENT_ROUTE_RESOLVED, event_ms, &ev, why,
			  why_len);
	if (rv)
		return rv;
	rdma_ack_cm_event(ev);
	return 0;
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
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		int ms;

		if (!rdma_get_cm_event(ch, ev))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		ms = vt_ms_left(deadline);
		if (!ms)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
			return -errno;
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

/* ---- main ---------------------------------------------------------------- */

/* The options as parsed: the side, its address and port, the run bound. */
struct vt_args {
	const char *addr;
	const char *port;
	bool server;
	int secs;
};

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
 * The options of a client/server program: -s BIND_ADDR or -c SERVER_ADDR,
 * [-p PORT] [-t SECS].  0, or 2 (the exit code) after printing the usage.
 */
static int vt_parse_args(int argc, char **argv, const struct vt_prog *def,
			 struct vt_args *args)
{
	int opt;

	*args = (struct vt_args){ .port = def->port };
	while ((opt = getopt(argc, argv, "s:c:p:t:h")) != -1) {
		switch (opt) {
		case 's':
		case 'c':
			if (args->addr)
				goto usage;
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
			goto usage;
		}
	}
	if (!args->addr || optind != argc || args->secs < 0)
		goto usage;
	if (!args->secs)
		args->secs = args->server ? def->server_secs :
					    def->client_secs;
	return 0;
usage:
	vt_usage(argv[0], def);
	return 2;
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
