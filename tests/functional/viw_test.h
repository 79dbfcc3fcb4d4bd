/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw_test: what the librdmacm functional tests (viw_rdma_access,
 * viw_semantics, viw_conn_extras) share: the PASS/FAIL/INFO report, time
 * bounded by one run deadline, the watchdog, polling a CQ and waiting for
 * rdma_cm events with a deadline, and the option parsing of the two
 * client/server programs.  The VM harness reads their output, so its
 * format lives here once: "PASS name", "FAIL name: why", "INFO ..." and a
 * final "N passed, N failed".
 */
#ifndef VIW_TEST_H
#define VIW_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ---- report -------------------------------------------------------------- */

extern int vt_passed, vt_failed;

/*
 * Room for the detail of a vt_check() FAIL line, NUL included; longer
 * details are cut.  256 unless a program needs more (viw_semantics puts
 * whole event sequences there and sets 512).
 */
extern size_t vt_detail_size;

void vt_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vt_fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vt_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vt_check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- time ---------------------------------------------------------------- */

/* The end of the whole run (CLOCK_MONOTONIC ms); set by vt_start(). */
extern long long vt_run_deadline;

long long vt_now_ms(void);
long long vt_deadline_in(int ms);
int vt_ms_left(long long deadline);

/* ---- verbs and rdma_cm --------------------------------------------------- */

struct ibv_context *vt_open_device(const char *name);
const char *vt_qp_state_str(int state);
int vt_qp_state(struct ibv_qp *qp);
int vt_poll_cq_until(struct ibv_cq *cq, struct ibv_wc *wc, int n,
		     long long deadline);

int vt_getaddr(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss);
int vt_resolve(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss);

int vt_set_nonblock(int fd);
struct rdma_event_channel *vt_create_channel(char *why, size_t why_len);
int vt_route_client(struct sockaddr_storage *dst, void *ctx, int resolve_ms,
		    int event_ms, struct rdma_event_channel **ch,
		    struct rdma_cm_id **id, char *why, size_t why_len);
int vt_bind_listener(const char *host, const char *port,
		     struct rdma_event_channel **ch,
		     struct rdma_cm_id **listen);
int vt_cm_get(struct rdma_event_channel *ch, long long deadline,
	      struct rdma_cm_event **ev);
int vt_cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		 int ms, struct rdma_cm_event **ev, char *why, size_t why_len);

/* ---- main ---------------------------------------------------------------- */

/* A client/server program: its defaults and its two sides. */
struct vt_prog {
	const char *port;
	int client_secs;
	int server_secs;
	int (*run_client)(const char *host, const char *port);
	int (*run_server)(const char *host, const char *port);
};

int vt_main(int argc, char **argv, const struct vt_prog *prog);
void vt_start(int secs);
int vt_finish(void);

#endif /* VIW_TEST_H */
