// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tcp_pingpong: the latency floor of any transport over TCP.
 *
 * A message of SIZE bytes goes back and forth over one TCP connection.
 * Both sides spin on non-blocking recv() (and send()), as the RDMA latency
 * tests spin on memory or on the CQ, so that no sleep and no wake-up is in
 * the measured path.  The client times every round trip and prints
 *
 *	tcp_pingpong SIZE ITERS rtt_median_us RTT oneway_us ONEWAY mean_us MEAN
 *
 * where ONEWAY is half the median round trip and MEAN half the mean one.
 *
 *	tcp_pingpong -s [-p PORT] [-l SIZE] [-n ITERS] [-w WARMUP]
 *	tcp_pingpong -c HOST [-p PORT] [-l SIZE] [-n ITERS] [-w WARMUP]
 *
 * Both sides must be given the same SIZE, ITERS and WARMUP.  The server
 * serves one connection and exits.  Exit status 0 on success, 1 on an
 * error (the peer closed early, a system call failed), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct pp_opts {
	const char *host;	/* NULL: server */
	const char *port;
	size_t size;
	long iters;
	long warmup;
};

static void pp_usage(void)
{
	fprintf(stderr,
		"usage: tcp_pingpong -s | -c HOST [-p PORT] [-l SIZE] [-n ITERS] [-w WARMUP]\n");
	exit(2);
}

static long pp_number(const char *s, long min)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v < min)
		pp_usage();
	return v;
}

static void pp_parse(int argc, char **argv, struct pp_opts *o)
{
	int server = 0, c;

	*o = (struct pp_opts){ .port = "18600", .size = 64, .iters = 10000,
			       .warmup = 1000 };
	while ((c = getopt(argc, argv, "sc:p:l:n:w:")) != -1) {
		switch (c) {
		case 's':
			server = 1;
			break;
		case 'c':
			o->host = optarg;
			break;
		case 'p':
			o->port = optarg;
			break;
		case 'l':
			o->size = pp_number(optarg, 1);
			break;
		case 'n':
			o->iters = pp_number(optarg, 1);
			break;
		case 'w':
			o->warmup = pp_number(optarg, 0);
			break;
		default:
			pp_usage();
		}
	}
	if (optind != argc || server == !!o->host)
		pp_usage();
}

static int pp_fail(const char *what)
{
	perror(what);
	return -1;
}

/* A connected socket to HOST:PORT (client) or the one accepted (server). */
static int pp_connect(const struct pp_opts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = o->host ? 0 : AI_PASSIVE };
	struct addrinfo *ai;
	int fd, lfd, one = 1, rc;

	rc = getaddrinfo(o->host, o->port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "tcp_pingpong: %s: %s\n", o->port, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return pp_fail("socket");
	}
	if (o->host) {
		rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		if (rc)
			return pp_fail("connect");
	} else {
		lfd = fd;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(lfd, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		if (rc || listen(lfd, 1))
			return pp_fail("bind/listen");
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0)
			return pp_fail("accept");
	}
	/* Small messages must leave at once, not wait for Nagle. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		return pp_fail("setsockopt/fcntl");
	return fd;
}

/* Receive exactly len bytes, spinning while none are there. */
static int pp_recv_all(int fd, char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = recv(fd, buf, len, 0);
		if (n > 0) {
			buf += n;
			len -= n;
		} else if (n == 0) {
			fprintf(stderr, "tcp_pingpong: peer closed\n");
			return -1;
		} else if (errno != EAGAIN && errno != EINTR) {
			return pp_fail("recv");
		}
	}
	return 0;
}

/* Send exactly len bytes, spinning while the socket buffer is full. */
static int pp_send_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return pp_fail("send");
		}
	}
	return 0;
}

static double pp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int pp_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The server echoes every message; it times nothing. */
static int pp_serve(int fd, char *buf, const struct pp_opts *o)
{
	long i;

	for (i = 0; i < o->warmup + o->iters; i++)
		if (pp_recv_all(fd, buf, o->size) ||
		    pp_send_all(fd, buf, o->size))
			return -1;
	return 0;
}

static int pp_client(int fd, char *buf, const struct pp_opts *o)
{
	double *rtt, t0, sum = 0;
	long i;

	rtt = calloc(o->iters, sizeof(*rtt));
	if (!rtt)
		return pp_fail("calloc");
	for (i = -o->warmup; i < o->iters; i++) {
		t0 = pp_now_us();
		if (pp_send_all(fd, buf, o->size) ||
		    pp_recv_all(fd, buf, o->size)) {
			free(rtt);
			return -1;
		}
		if (i >= 0)
			rtt[i] = pp_now_us() - t0;
	}
	for (i = 0; i < o->iters; i++)
		sum += rtt[i];
	qsort(rtt, o->iters, sizeof(*rtt), pp_cmp_double);
	printf("tcp_pingpong %zu %ld rtt_median_us %.2f oneway_us %.2f mean_us %.2f\n",
	       o->size, o->iters, rtt[o->iters / 2], rtt[o->iters / 2] / 2,
	       sum / o->iters / 2);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	char *buf;
	int fd, rc;

	pp_parse(argc, argv, &o);
	buf = calloc(1, o.size);
	if (!buf)
		return 1;
	fd = pp_connect(&o);
	if (fd < 0) {
		free(buf);
		return 1;
	}
	rc = o.host ? pp_client(fd, buf, &o) : pp_serve(fd, buf, &o);
	close(fd);
	free(buf);
	return rc ? 1 : 0;
}
