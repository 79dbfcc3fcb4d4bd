/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw_test: the scaffolding of the functional tests (tests/functional),
 * so that each test file holds only its scenarios: the PASS/FAIL/INFO
 * report, time bounded by one run deadline, the watchdog, the options
 * -s/-c/-p/-t and main() of a client/server program, polling a CQ and
 * waiting for rdma_cm events with a deadline, an RC endpoint (struct
 * vt_ep: channel, id, PD, MR, CQ, QP; connect with a retry, close), a
 * listening server (struct vt_server), lists of signaled work requests
 * (struct vt_op) and the names of states, statuses and opcodes.  The VM
 * harness reads the programs' output, so its format lives here once:
 * "PASS name", "FAIL name: why", "INFO ..." and a final
 * "N passed, N failed".
 */
#ifndef VIW_TEST_H
#define VIW_TEST_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

const char *vt_name_of(const char *const *names, size_t n, int v,
		       const char *none);
/* @v's entry in the array @names, or @none if it has none. */
#define VT_NAME(names, v, none)						\
	vt_name_of(names, sizeof(names) / sizeof((names)[0]), (int)(v), none)

struct ibv_context *vt_open_device(const char *name);
const char *vt_qp_state_str(int state);
const char *vt_wc_status_name(enum ibv_wc_status s);
const char *vt_wc_opcode_name(enum ibv_wc_opcode op);
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
/* A listening server: its channel, id, device and PD. */
struct vt_server {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
};

int vt_server_open(struct vt_server *srv, const char *host, const char *port);
int vt_server_listen(struct vt_server *srv, int backlog);
void vt_server_close(struct vt_server *srv);
int vt_server_event(struct rdma_event_channel *ch, long long deadline,
		    struct rdma_cm_event **ev);
bool vt_stray_event(struct rdma_cm_event *ev, bool fail);

int vt_wait_readable(int fd, long long deadline);
int vt_wait_qp_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms);
int vt_wait_cq_event(struct ibv_comp_channel *cc, struct ibv_cq *cq,
		     long long deadline);
int vt_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
		 int n);

/* ---- connections made by modify_qp (docs/semantics.md §8) ---------------- */

int vt_parse_gid(const char *s, union ibv_gid *gid);
int vt_qp_to_init(struct ibv_qp *qp, int access);
int vt_qp_to_rtr(struct ibv_qp *qp, int sgid_index,
		 const union ibv_gid *dgid, uint32_t dqpn);
int vt_qp_to_rts(struct ibv_qp *qp, int timeout, int retry);
int vt_qp_async_event(struct ibv_context *ctx, struct ibv_qp *qp, int ms);
void vt_publish_qpn(const char *path, uint32_t qpn);

/* ---- buffers ------------------------------------------------------------- */

void *vt_alloc_filled(size_t len, uint8_t fill);
long vt_find_not(const uint8_t *buf, size_t len, uint8_t fill);
bool vt_all_set(const bool *done, int n);

/* ---- an RC endpoint through rdma_cm -------------------------------------- */

/*
 * What a client or an accepted connection holds.  Every member may be
 * NULL; vt_ep_close() frees what is set.  The PD and MR are the
 * endpoint's own (a server's connections use the server's PD and leave
 * them NULL); the completion channel, if set before vt_ep_qp(), is the
 * CQ's; @qp is one made with ibv_create_qp() rather than the id's.  A
 * failing call describes why in @why.
 */
struct vt_ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char why[256];
};

int vt_ep_route(struct vt_ep *ep, struct sockaddr_storage *dst, void *ctx,
		int resolve_ms, int event_ms);
int vt_ep_qp(struct vt_ep *ep, struct ibv_pd *pd, int cqe,
	     struct ibv_qp_init_attr *attr);
int vt_ep_alloc(struct vt_ep *ep, void *buf, size_t len, int cqe,
		struct ibv_qp_init_attr *attr);
/*
 * A server's accept private data that offers one MR: its head, then where
 * and how large, all big-endian.
 */
struct vt_mr_offer {
	uint32_t magic;
	uint32_t sc;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

int vt_take_offer(const void *pdata, unsigned int pdata_len, void *out,
		  size_t len, uint32_t magic, uint32_t sc, char *why,
		  size_t why_len);
int vt_ep_connect(struct vt_ep *ep, const struct rdma_conn_param *param,
		  int ms, struct rdma_cm_event **ev);
void vt_ep_close(struct vt_ep *ep);
bool vt_ep_connect_retry(struct vt_ep *ep, const char *name, bool first,
			 int retry_ms, int (*connect)(void *arg), void *arg);

/*
 * One signaled work request of a scenario and the completion status it
 * must get: its data at @loff of the poster's buffer; @raddr and @rkey the
 * remote side (for SEND_WITH_INV, @rkey is the one to invalidate).
 */
struct vt_op {
	const char *what;
	enum ibv_wr_opcode opcode;
	uint32_t loff;
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	enum ibv_wc_status want;
	/* atomics: operands, and the original value a success returns */
	uint64_t compare_add;
	uint64_t swap;
	uint64_t want_orig;
};

#define VT_MAX_OPS 16

bool vt_is_atomic(enum ibv_wr_opcode op);
int vt_post_ops(struct ibv_qp *qp, uint8_t *buf, uint32_t lkey,
		const struct vt_op *ops, int n);

/* ---- main ---------------------------------------------------------------- */

/* The common options: -s BIND_ADDR or -c SERVER_ADDR, -p PORT, -t SECS. */
struct vt_args {
	const char *addr;
	const char *port;
	bool server;
	int secs;
};

int vt_next_opt(int argc, char **argv, const char *more,
		const struct option *longopts, struct vt_args *args);

/* A client/server program: its defaults and its two sides. */
struct vt_prog {
	const char *port;
	int client_secs;
	int server_secs;
	int (*run_client)(const char *host, const char *port);
	int (*run_server)(const char *host, const char *port);
};

int vt_main(int argc, char **argv, const struct vt_prog *prog);

/*
 * run_server() of a program whose server is a @_type that @_listen sets
 * up, @_loop runs and @_close frees (after a failed @_listen too).
 */
#define VT_RUN_SERVER(_type, _listen, _loop, _close)			\
	static int run_server(const char *host, const char *port)	\
	{								\
		_type s = { 0 };					\
									\
		if (!_listen(&s, host, port))				\
			_loop(&s);					\
		_close(&s);						\
		return 0;						\
	}

/* main() of a client/server program. */
#define VT_MAIN(_port, _client_secs, _server_secs, _client, _server)	\
	int main(int argc, char **argv)					\
	{								\
		static const struct vt_prog prog = {			\
			.port = (_port),				\
			.client_secs = (_client_secs),			\
			.server_secs = (_server_secs),			\
			.run_client = (_client),			\
			.run_server = (_server),			\
		};							\
									\
		return vt_main(argc, argv, &prog);			\
	}
void vt_start(int secs);
int vt_finish(void);

#endif /* VIW_TEST_H */
