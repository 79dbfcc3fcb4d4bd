// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_remote_err: on a modify_qp connection between two viw QPs, SENDs
 * and WRITEs complete on the responder's acknowledgement, so what the
 * responder refuses fails the requester's own WR, as on InfiniBand
 * (tests/vm/guest/remote-err.sh; docs/semantics.md section 13).
 *
 *   viw_remote_err -a DEV_A -b DEV_B [-g GID_INDEX] [-C | -D | -F | -H | -K | -L | -S KNOB | -T]
 *
 * One process, a QP on each device, new QPs for each scenario:
 *   acked        SENDs, WRITEs, a WRITE with immediate and a READ behind
 *                them, signaled and not: every WR completes with success,
 *                in order, and the data is placed before its completion
 *   bad_rkey     WRITE ok, WRITE to an rkey that does not exist, WRITE
 *                ok: SUCCESS, REM_ACCESS_ERR, WR_FLUSH_ERR; the first
 *                placed, the others not; both QPs end in ERROR
 *   no_access    a WRITE to an MR without remote write: REM_ACCESS_ERR
 *   foreign_recv a receive with the lkey of an MR of another PD is
 *                accepted when posted (the QP stays in RTS); the SEND
 *                that uses it fails REM_OP_ERR, the receive LOC_PROT_ERR,
 *                and nothing is placed (pyverbs' test_mr_rereg_pd)
 *   bad_recv     a SEND into a receive whose MR was deregistered after
 *                the post: the SEND REM_OP_ERR, the receive LOC_PROT_ERR
 *   restate      after bad_recv left both QPs in ERROR, a receive posted
 *                in ERROR is flushed, then both go through RESET and
 *                connect again (b first, as pyverbs' restate does): the
 *                flush's CQE went with the RESET, and a SEND and a WRITE
 *                complete with success
 *   reset_again  ROUNDS times: b's consumer ends a working connection
 *                (ERROR), and at once both QPs go through RESET and
 *                connect again; the end of the old stream, reported by
 *                the CM some time later, must not fail a QP that is back
 *                in INIT or RTR, and a SEND goes through each new one
 *   reset_connecting
 *                ROUNDS times, on new QPs: a (the side that connects when
 *                its GID is the smaller, as in the VM test) goes to RTS
 *                while b is still in INIT, so that its request waits at
 *                b; a is reset and connects again at once; then b goes to
 *                RTR and RTS.  The attempt a dropped must not fail its
 *                new one, b takes a's newest request, and a SEND goes
 *                through
 *   full_socket  on new QPs, b in RTS and a raw client from a's address
 *                on b's connection, with a small receive buffer.  b posts
 *                FULL_WRS WRITEs of its whole buffer in one call, far more
 *                than the socket holds, while the client reads nothing:
 *                the post returns within FULL_POST_MS (the doorbell's run
 *                leaves a full socket to the work item) and b stays in
 *                RTS.  The client then reads: every WRITE completes with
 *                success.  Then b posts as many again, to its idle engine,
 *                the client reading throughout: they complete too
 *   full_fin     the same, on new QPs, but the client, still reading
 *                nothing, sends a FIN while b's transmit work waits for
 *                room in the socket.  A FIN with WRs in flight fails b at
 *                once (no acknowledgements): QP_FATAL and ERROR within
 *                WAIT_MS, the WRITEs TCP took whole complete with
 *                success, the one being sent with RETRY_EXC_ERR and the
 *                rest are flushed.  The CM that handles the FIN must not
 *                wait for the transmit work, which waits for a reader
 *   taken_flush  on new QPs, b in RTS and a raw client on its connection.
 *                b posts two receives; the client sends the first FPDU
 *                of a SEND, not its last, and once its payload is placed
 *                in the first receive b's consumer moves b to ERROR.  Both
 *                receives are flushed with their own wr_ids, in order:
 *                the first was taken by the receive engine straight from
 *                the ring, and its completion comes from what the RQ kept
 *                of it (kernel/viw_wq.c)
 *
 *   peer_left    on new QPs, b in RTS with retries of 2147 ms (timeout
 *                16, retry_cnt 7) and a raw client that asked for
 *                acknowledgements on b's connection.  b posts two SENDs;
 *                the client acknowledges nothing, sends a FIN and reads
 *                up to b's.  b stays in RTS, nothing completed, no event:
 *                an InfiniBand requester keeps retrying a peer that
 *                stopped answering.  Once b's retries would end, b gets
 *                QP_FATAL, the first SEND fails with RETRY_EXC_ERR and
 *                the second is flushed.  Then, on new QPs, the FIN comes
 *                with nothing in flight: b stays in RTS past its
 *                connection bound (4 s after RTS), and two SENDs it posts
 *                then wait in the same way and fail the same way
 *
 * With -D, instead, two scenarios whose windows are a few instructions
 * wide, which the VM test widens with debugfs bind_delay_ms (each binding
 * of a connection waits that long):
 *   bind_race    RACE_ROUNDS times, on new QPs: a goes to RTS and posts
 *                a SEND, which waits in its ring for the connection,
 *                while a second thread rings a's SQ doorbell (an empty
 *                post command) without pause; then b goes to RTS.  A
 *                doorbell that comes while a's connection is being bound
 *                must find no stream or all of the new one: the SEND goes
 *                through (framed with another stream's MSN, it fails
 *                REM_INV_REQ_ERR at b)
 *   spoke        on new QPs, b (the acceptor) in RTS: a raw client from
 *                a's address sends b a request as a's QP, reads the
 *                reply, sends one byte (the start of an FPDU) while b
 *                binds the stream, and resets it.  A peer that sent
 *                something did not give the attempt up: b goes to ERROR
 *                at once, not at the end of its bound (4 s)
 *   abandoned    on new QPs, b (the acceptor) in RTS: a raw TCP client
 *                from a's address sends b a modify_qp MPA request that
 *                names a's QP, reads b's reply and resets the stream
 *                without sending anything, as a QP reset while connecting
 *                does.  b stays in RTS and waits for the peer's next
 *                attempt; a's QP then connects and a SEND goes through
 *   swapped      on new QPs, b in INIT: a goes to RTS, so that its request
 *                waits at b, and then a raw client sends b another
 *                request as a's QP.  b goes to RTS and takes the later
 *                one; the raw client reads the reply and resets the
 *                stream, as an attempt a dropped would.  b must not have
 *                refused a's own request: a connects and a SEND goes
 *                through
 *
 * With -F, only full_socket and full_fin, which the VM test runs again
 * with net.ipv4.tcp_notsent_lowat set in b's namespace: TCP then takes
 * part of a write and refuses the rest well before the send buffer is
 * full, so the doorbell's own write comes back short, and its run must
 * still leave the wait to the work item.
 *
 * With -C, two scenarios that the VM test runs with debugfs
 * tx_short_delay_ms at CUT_DELAY_MS and net.ipv4.tcp_notsent_lowat 16384 in
 * b's namespace, so that the doorbell's first write comes back short and
 * its run then waits, tx_lock held, before it looks at b's state:
 *   cut_term     on new QPs, a raw client that reads b's stream, into a
 *                receive buffer of FULL_RCVBUF, and checks every FPDU,
 *                as in full_socket.  b posts a WRITE of CUT_FIRST_LEN
 *                bytes and FULL_WRS - 1 of its whole buffer, signaled,
 *                in one call; CUT_SPOIL_MS in, the client sends a WRITE
 *                to an STag b does not have, and b leaves RTS (SQE, for
 *                its TERMINATE) while its run waits.  b's stream must go
 *                on to the end of the FPDU that TCP cut, then carry the
 *                TERMINATE and end (FIN): whole FPDUs, the WRITEs' in
 *                line, and the TERMINATE last.  b ends in ERROR; the
 *                WRITEs before the one TCP cut complete with success,
 *                and it and the rest are flushed.  A post that took less
 *                than CUT_MIN_MS missed the window: the scenario is made
 *                again on new QPs, up to CUT_TRIES in all
 *   cut_err      the same, but b's consumer moves b to ERROR in the
 *                window: the stream goes on to the end of the FPDU that
 *                was cut and ends with a FIN
 *
 * With -T, the same two with debugfs tx_spill_fail set as well, so that
 * the rest of the FPDU that TCP cut cannot be kept to finish it (as when
 * the poster's memory cgroup is at its limit):
 *   torn_term    b's stream must end with a reset, and carry no TERMINATE
 *                or other byte after the part of the FPDU that TCP took:
 *                the peer would read them as the rest of that FPDU.
 *                Every whole FPDU before it is one of b's WRITEs, in
 *                line.  b ends in ERROR, its completions as in cut_term
 *   torn_err     the same, b's consumer moving b to ERROR: a reset, not
 *                the FIN of cut_err
 *
 * With -K, with debugfs tx_spill_fail set and net.ipv4.tcp_notsent_lowat
 * 16384 in b's namespace, b's QP in a child process, the poster:
 *   killed_post  a raw client on b's connection reads nothing, with a
 *                small receive buffer.  The poster posts as in cut_term;
 *                TCP cuts the doorbell's write inside an FPDU, the rest
 *                cannot be kept, and the run waits for room in the
 *                system call.  KILL_HELD_MS in, the poster is killed
 *                there (SIGKILL), and the client reads from then on: b's
 *                stream must end with a reset, every whole FPDU one of
 *                b's WRITEs in line, and nothing after the part of the
 *                cut FPDU that TCP took, no TERMINATE either.  A try
 *                whose post returned, or whose cut fell between two
 *                FPDUs (the stream whole, ending with a FIN), missed: it
 *                is made again with a new poster, up to CUT_TRIES in all
 *
 * With -L, which the VM test runs with debugfs rx_send_done_delay_ms at
 * LAST_DELAY_MS (b's receive engine spins that long right after it
 * completed a SEND's receive):
 *   last_recv    after a first SEND, which waits until the stream is up,
 *                a sends one SEND into b's one receive; a thread of b's
 *                destroys b's QP the moment it polls that receive's
 *                completion, while b's engine still spins.  a's SEND must
 *                complete with success: b's destroy acknowledged what b
 *                had placed, completion or not.  Each round on new QPs.
 *                A round whose destroy did not start within the spin (as
 *                when the spin runs on b's consumer's CPU) missed the
 *                window; LAST_HITS rounds must hit it, in at most
 *                LAST_TRIES
 *
 * With -H, which the VM test runs with debugfs tx_run_hold_ms at
 * LAST_DELAY_MS (a doorbell's run keeps the engine that long after its
 * last write):
 *   busy_recv    after a first SEND, b posts a SEND into a's receive, from
 *                CPU 0; its run holds b's engine, its acknowledgement
 *                passed.  BUSY_A_AFTER_MS later a sends one SEND into b's
 *                receive, and b's consumer, on CPU 0, moves b to ERROR the
 *                moment that completes.  a's SEND must complete with
 *                success: b's ERROR waited for the run, then acknowledged
 *                what b had placed.  Rounds as in last_recv
 *
 * With -S KNOB, debugfs tx_cut_next armed before each post (the test arms
 * it itself, at the path KNOB: `ip netns exec` mounts a /sys of its own,
 * without debugfs): the doorbell's write then takes half of its
 * bytes and the rest comes back refused, as from a socket that filled up
 * meanwhile, so the run spills the rest of the FPDU:
 *   lone_cut     after a first SEND, which waits until the stream is up,
 *                a posts one signaled WRITE, and nothing after it.  No
 *                later post will write what was spilled: the run that
 *                cut must leave it to the work item.  The WRITE must
 *                land whole and complete with success (b acknowledges
 *                only what it placed), and the knob must read N again,
 *                so that the cut surely happened.  Then the same with a
 *                SEND into a receive b posted.  A post that a work
 *                item still queued sent instead missed the cut (the knob
 *                still reads Y): it is made again, up to LONE_TRIES
 *
 * Output: "PASS name" / "FAIL name: why" lines, "N passed, N failed".
 */
#define _GNU_SOURCE	/* pthread_setaffinity_np(), CPU_SET() */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs_provider.h"
#include "viw_test.h"

#define BUF_SIZE	(64 << 10)
#define MSG		1024
#define DST_OFF		(32 << 10)	/* where WRITEs and SENDs land */
#define FILL_A		0xa5
#define FILL_B		0x5b
#define WAIT_MS		10000
#define ROUNDS		12
#define RACE_ROUNDS	4
/* spoke: well within b's bound of 4 s, well past its reaction */
#define SPOKE_WAIT_MS	2000
/*
 * full_socket: WRITEs of the whole buffer in one post, and the bound on
 * that post when the peer reads nothing.  The doorbell's run never waits
 * for room (kernel/viw_tx.c), so the bound only catches a poster held up
 * on a peer that stopped reading.
 */
#define FULL_WRS	16
#define FULL_RCVBUF	4096
#define FULL_POST_MS	1000
#define FULL_FIN_WAIT_MS	300
/*
 * cut_term, cut_err: what the VM test sets debugfs tx_short_delay_ms to
 * (each short write of a doorbell's run waits that long before it looks
 * at the QP's state), when the spoiler takes b out of RTS within it, the
 * least a post that waited there takes, and the STag of the raw client's
 * bad WRITE, which names no MR of b's.
 */
#define CUT_DELAY_MS	300
#define CUT_SPOIL_MS	100
#define CUT_MIN_MS	(CUT_DELAY_MS - 50)
#define CUT_BAD_STAG	0x7fffff00
/*
 * cut_term, cut_err: a short WRITE ahead of the FULL_WRS.  viw sizes its
 * FPDUs to TCP's segments, so a write TCP cuts short mostly ends between
 * two of them; the short WRITE's FPDU, held back in TCP's last skb (the
 * write said more follows), shifts the skbs that the next write fills
 * against its FPDUs, and TCP then cuts one.
 */
#define CUT_FIRST_LEN	100
#define CUT_TRIES	5
/*
 * lone_cut: the receive b posts for the SEND, the pause before each post,
 * and the tries that may each find the post sent by a work item instead
 */
#define LONE_RECV_ID	0x10c
#define LONE_SETTLE_MS	50
#define LONE_TRIES	5
/* last_recv: debugfs rx_send_done_delay_ms as the VM test sets it */
#define LAST_DELAY_MS	300
#define LAST_HITS	3
#define LAST_TRIES	10
#define LAST_RECV_ID	41
/* busy_recv: how long after b's post a posts (b's run holds by then) */
#define BUSY_A_AFTER_MS	100
/*
 * peer_left: b's retries (4.096 us * 2^16 a try, 8 tries: 2147 ms), the
 * least time before b gives up (a timer tick less: it counts in ticks),
 * and how long after RTS b's connection bound has surely passed (its 4 s,
 * the least there is, viw_direct.c).
 */
#define PEER_LEFT_TIMEOUT	16
#define PEER_LEFT_RETRY		7
#define PEER_LEFT_MIN_MS	(2147 - 20)
#define PEER_LEFT_BOUND_MS	4500
/* The private data's flag for acknowledgements (kernel/viw_cm.h). */
#define PD_F_ACK		0x02
/* taken_flush: the two receives, and the payload of the SEND's first FPDU */
#define TAKEN_ID_1	0x5101
#define TAKEN_ID_2	0x5102
#define TAKEN_RECV	(8 << 10)
#define TAKEN_PAYLOAD	512
#define TAKEN_FILL	0x77
/*
 * A modify_qp connection's MPA request (RFC 5044, 7.1): the key, flags 0
 * (no markers, no CRC asked), revision 1, and viw's private data (the
 * marker "viwD", version 1, flags, reserved, source and destination QP),
 * which kernel/viw_cm.h defines.  The device listens on port 20886.
 */
#define DIRECT_PORT	20886
#define MPA_HDR_LEN	20
#define DIRECT_PD_LEN	16
#define MPA_F_REJECT	0x20

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;		/* the whole buffer, remote read/write */
	struct ibv_mr *ro_mr;		/* the same buffer, no remote write */
	struct ibv_qp *qp;
	uint8_t *buf;
	union ibv_gid gid;
};

static int side_open(struct side *s, const char *dev, int gid_index,
		     uint8_t fill)
{
	s->ctx = vt_open_device(dev);
	s->buf = vt_alloc_filled(BUF_SIZE, fill);
	if (!s->ctx || !s->buf || ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	s->mr = s->cq ? ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ) : NULL;
	s->ro_mr = s->mr ? ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
				      IBV_ACCESS_LOCAL_WRITE) : NULL;
	return s->ro_mr ? 0 : -1;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->ro_mr)
		ibv_dereg_mr(s->ro_mr);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
}

static struct ibv_qp *new_qp(struct side *s)
{
	struct ibv_qp_init_attr init = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &init);

	if (qp && vt_qp_to_init(qp, IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* Fresh QPs on both sides, in INIT: whether both were created. */
static bool renew_qps(struct side *a, struct side *b)
{
	if (a->qp)
		ibv_destroy_qp(a->qp);
	if (b->qp)
		ibv_destroy_qp(b->qp);
	a->qp = new_qp(a);
	b->qp = new_qp(b);
	return a->qp && b->qp;
}

/* Fresh QPs on both sides, connected: a scenario may leave them in ERROR. */
static int connect_pair(struct side *a, struct side *b, int gid_index)
{
	if (!renew_qps(a, b) ||
	    vt_qp_to_rtr(a->qp, gid_index, &b->gid, b->qp->qp_num) ||
	    vt_qp_to_rtr(b->qp, gid_index, &a->gid, a->qp->qp_num) ||
	    vt_qp_to_rts(a->qp, 14, 7) || vt_qp_to_rts(b->qp, 14, 7))
		return -1;
	return 0;
}

/* A receive of @len bytes at @addr of @s's buffer, lkey of its MR. */
static int post_recv_at(struct side *s, uint64_t id, uint64_t addr,
			uint32_t len)
{
	struct ibv_sge sge = { .addr = addr, .length = len,
			       .lkey = s->mr->lkey };

	return vt_post_recv(s->qp, id, &sge, 1);
}

/* One WR of a scenario, from @from's buffer at offset 0. */
struct op {
	enum ibv_wr_opcode opcode;
	uint32_t rkey;
	uint64_t raddr;
	bool signaled;
};

static int post_ops(struct side *from, const struct op *ops, int n)
{
	struct ibv_send_wr wr[8] = {}, *bad;
	struct ibv_sge sge[8];
	int i;

	if (n > 8)
		return EINVAL;
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge) { (uintptr_t)from->buf + i * MSG, MSG,
					    from->mr->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = ops[i].opcode;
		wr[i].send_flags = ops[i].signaled ? IBV_SEND_SIGNALED : 0;
		wr[i].imm_data = htobe32(0x1234);
		wr[i].wr.rdma.remote_addr = ops[i].raddr;
		wr[i].wr.rdma.rkey = ops[i].rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	return ibv_post_send(from->qp, wr, &bad);
}

/*
 * Poll @n completions of @s and check that completion k has wr_id
 * @ids[k] and status @want[k].
 */
static void expect_wcs(const char *name, struct side *s, const uint64_t *ids,
		       const enum ibv_wc_status *want, int n)
{
	struct ibv_wc wc[16];
	int got = vt_poll_cq_until(s->cq, wc, n, vt_deadline_in(WAIT_MS)), k;

	if (got != n) {
		vt_fail(name, "%d of %d completions", got, n);
		return;
	}
	for (k = 0; k < n; k++) {
		if (wc[k].wr_id != ids[k] || wc[k].status != want[k]) {
			vt_fail(name, "completion %d: wr_id %llu %s, want %llu %s",
				k, (unsigned long long)wc[k].wr_id,
				vt_wc_status_name(wc[k].status),
				(unsigned long long)ids[k],
				vt_wc_status_name(want[k]));
			return;
		}
	}
	vt_pass("%s", name);
}

static uint64_t dst(struct side *to, int k)
{
	return (uintptr_t)to->buf + DST_OFF + k * MSG;
}

/* Whether message @k of @from (its fill) landed at @to's slot @k. */
static bool landed(struct side *to, int k, uint8_t fill)
{
	return vt_find_not(to->buf + DST_OFF + k * MSG, MSG, fill) < 0;
}

static void scenario_acked(struct side *a, struct side *b)
{
	const struct op ops[] = {
		{ IBV_WR_SEND, 0, 0, true },
		{ IBV_WR_RDMA_WRITE, b->mr->rkey, dst(b, 1), false },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, b->mr->rkey, dst(b, 2), true },
		{ IBV_WR_RDMA_WRITE, b->mr->rkey, dst(b, 3), true },
		{ IBV_WR_RDMA_READ, b->mr->rkey, dst(b, 4), true },
	};
	static const uint64_t ids[] = { 0, 2, 3, 4 };
	static const enum ibv_wc_status ok[4] = { IBV_WC_SUCCESS };
	static const uint64_t rids[] = { 10, 11 };
	struct ibv_wc wc[2];

	if (post_recv_at(b, 10, dst(b, 0), MSG) ||
	    post_recv_at(b, 11, dst(b, 7), MSG) || post_ops(a, ops, 5)) {
		vt_fail("acked", "post: %s", strerror(errno));
		return;
	}
	expect_wcs("acked: requester completions in order", a, ids, ok, 4);
	vt_check(landed(b, 0, FILL_A) && landed(b, 1, FILL_A) &&
		 landed(b, 2, FILL_A) && landed(b, 3, FILL_A),
		 "acked: data placed before the completions",
		 "a message is missing at the responder");
	vt_check(vt_find_not(a->buf + 4 * MSG, MSG, FILL_B) < 0,
		 "acked: READ data", "READ response not placed");
	vt_check(vt_poll_cq_until(b->cq, wc, 2, vt_deadline_in(WAIT_MS)) == 2 &&
		 wc[0].wr_id == rids[0] && wc[1].wr_id == rids[1] &&
		 wc[0].status == IBV_WC_SUCCESS &&
		 wc[1].status == IBV_WC_SUCCESS,
		 "acked: responder receives", "receives did not complete");
}

static void scenario_bad_rkey(struct side *a, struct side *b)
{
	const struct op ops[] = {
		{ IBV_WR_RDMA_WRITE, b->mr->rkey, dst(b, 0), true },
		{ IBV_WR_RDMA_WRITE, b->mr->rkey ^ 0x5500, dst(b, 1), true },
		{ IBV_WR_RDMA_WRITE, b->mr->rkey, dst(b, 2), true },
	};
	static const uint64_t ids[] = { 0, 1, 2 };
	static const enum ibv_wc_status want[] = {
		IBV_WC_SUCCESS, IBV_WC_REM_ACCESS_ERR, IBV_WC_WR_FLUSH_ERR,
	};

	if (post_ops(a, ops, 3)) {
		vt_fail("bad_rkey", "post: %s", strerror(errno));
		return;
	}
	expect_wcs("bad_rkey: the refused WRITE fails, not the one before",
		   a, ids, want, 3);
	vt_check(landed(b, 0, FILL_A) && landed(b, 1, FILL_B) &&
		 landed(b, 2, FILL_B), "bad_rkey: only the first placed",
		 "placement does not match the completions");
	vt_check(vt_wait_qp_state(a->qp, IBV_QPS_ERR, WAIT_MS) == IBV_QPS_ERR &&
		 vt_wait_qp_state(b->qp, IBV_QPS_ERR, WAIT_MS) == IBV_QPS_ERR,
		 "bad_rkey: both QPs in ERROR", "a QP is not in ERROR");
}

static void scenario_no_access(struct side *a, struct side *b)
{
	const struct op ops[] = {
		{ IBV_WR_RDMA_WRITE, b->ro_mr->rkey, dst(b, 0), true },
	};
	static const uint64_t ids[] = { 0 };
	static const enum ibv_wc_status want[] = { IBV_WC_REM_ACCESS_ERR };

	if (post_ops(a, ops, 1)) {
		vt_fail("no_access", "post: %s", strerror(errno));
		return;
	}
	expect_wcs("no_access: WRITE without remote write REM_ACCESS_ERR",
		   a, ids, want, 1);
}

/*
 * A receive's lkey counts when a SEND uses it, not when it is posted
 * (docs/semantics.md section 8), so that re-registering its MR with
 * another PD and back works as on other RNICs.
 */
static void scenario_foreign_recv(struct side *a, struct side *b)
{
	const struct op ops[] = { { IBV_WR_SEND, 0, 0, true } };
	static const uint64_t ids[] = { 0 }, rids[] = { 40 };
	static const enum ibv_wc_status want[] = { IBV_WC_REM_OP_ERR };
	static const enum ibv_wc_status rwant[] = { IBV_WC_LOC_PROT_ERR };
	struct ibv_pd *pd2 = ibv_alloc_pd(b->ctx);
	struct ibv_mr *mr2 = pd2 ? ibv_reg_mr(pd2, b->buf, BUF_SIZE,
					      IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_sge sge = { dst(b, 0), MSG, mr2 ? mr2->lkey : 0 };
	struct ibv_wc wc;

	if (!mr2 || vt_post_recv(b->qp, 40, &sge, 1)) {
		vt_fail("foreign_recv", "setup: %s", strerror(errno));
		goto out;
	}
	usleep(100000);
	vt_check(ibv_poll_cq(b->cq, 1, &wc) == 0 &&
		 vt_qp_state(b->qp) == IBV_QPS_RTS,
		 "foreign_recv: the receive is accepted when posted",
		 "QP in %s", vt_qp_state_str(vt_qp_state(b->qp)));
	if (post_ops(a, ops, 1)) {
		vt_fail("foreign_recv", "post: %s", strerror(errno));
		goto out;
	}
	expect_wcs("foreign_recv: SEND REM_OP_ERR", a, ids, want, 1);
	expect_wcs("foreign_recv: receive LOC_PROT_ERR", b, rids, rwant, 1);
	vt_check(landed(b, 0, FILL_B), "foreign_recv: nothing placed",
		 "the SEND's data reached the buffer");
out:
	if (mr2)
		ibv_dereg_mr(mr2);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

static void scenario_bad_recv(struct side *a, struct side *b)
{
	const struct op ops[] = { { IBV_WR_SEND, 0, 0, true } };
	static const uint64_t ids[] = { 0 }, rids[] = { 20 };
	static const enum ibv_wc_status want[] = { IBV_WC_REM_OP_ERR };
	static const enum ibv_wc_status rwant[] = { IBV_WC_LOC_PROT_ERR };
	struct ibv_mr *gone = ibv_reg_mr(b->pd, b->buf, BUF_SIZE,
					 IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)b->buf + DST_OFF, MSG,
			       gone ? gone->lkey : 0 };

	/*
	 * A receive valid when posted, whose MR is gone when the SEND comes
	 * (pyverbs' rereg tests do it with rereg_mr): found only then.
	 */
	if (!gone || vt_post_recv(b->qp, 20, &sge, 1) || ibv_dereg_mr(gone) ||
	    post_ops(a, ops, 1)) {
		vt_fail("bad_recv", "setup: %s", strerror(errno));
		return;
	}
	expect_wcs("bad_recv: SEND REM_OP_ERR", a, ids, want, 1);
	expect_wcs("bad_recv: receive LOC_PROT_ERR", b, rids, rwant, 1);
}

/* @s from INIT to RTR and RTS, towards @peer: NULL, or the step failed. */
static const char *to_rts(struct side *s, struct side *peer, int gid_index)
{
	if (vt_qp_to_rtr(s->qp, gid_index, &peer->gid, peer->qp->qp_num))
		return "RTR";
	return vt_qp_to_rts(s->qp, 14, 7) ? "RTS" : NULL;
}

/* RESET, then INIT, RTR and RTS again; on failure, which step failed. */
static const char *restate_one(struct side *s, struct side *peer,
			       int gid_index)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(s->qp, &attr, IBV_QP_STATE))
		return "RESET";
	if (vt_qp_to_init(s->qp, IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ))
		return "INIT";
	return to_rts(s, peer, gid_index);
}

/* After scenario_bad_recv: the same QPs, reset and connected again. */
static void scenario_restate(struct side *a, struct side *b, int gid_index)
{
	const struct op ops[] = {
		{ IBV_WR_SEND, 0, 0, true },
		{ IBV_WR_RDMA_WRITE, b->mr->rkey, dst(b, 1), true },
	};
	static const uint64_t ids[] = { 0, 1 }, rids[] = { 30 };
	static const enum ibv_wc_status ok[2] = { IBV_WC_SUCCESS };

	struct ibv_sge sge = { (uintptr_t)a->buf + DST_OFF, MSG, a->mr->lkey };

	const char *step;

	/* a flushed receive: its CQE must go with the RESET */
	if (vt_wait_qp_state(a->qp, IBV_QPS_ERR, WAIT_MS) != IBV_QPS_ERR ||
	    vt_post_recv(a->qp, 99, &sge, 1)) {
		vt_fail("restate", "a in ERROR, and a receive posted: %s",
			strerror(errno));
		return;
	}
	step = restate_one(b, a, gid_index);
	if (step) {
		vt_fail("restate", "b: modify_qp to %s: %s", step,
			strerror(errno));
		return;
	}
	step = restate_one(a, b, gid_index);
	if (step) {
		vt_fail("restate", "a: modify_qp to %s: %s", step,
			strerror(errno));
		return;
	}
	memset(b->buf, FILL_B, BUF_SIZE);
	if (post_recv_at(b, 30, dst(b, 0), MSG) || post_ops(a, ops, 2)) {
		vt_fail("restate", "post: %s", strerror(errno));
		return;
	}
	expect_wcs("restate: SEND and WRITE after RESET and a new connection",
		   a, ids, ok, 2);
	expect_wcs("restate: the receive", b, rids, ok, 1);
	vt_check(landed(b, 0, FILL_A) && landed(b, 1, FILL_A),
		 "restate: data placed", "a message is missing");
}

/*
 * One SEND from a into a receive of b, which b posts now unless it did
 * before (@recv_posted).  Return: NULL if both complete with success,
 * else what went wrong.
 */
static const char *send_one(struct side *a, struct side *b, bool recv_posted)
{
	static const struct op send = { IBV_WR_SEND, 0, 0, true };
	struct ibv_wc wc;

	if ((!recv_posted && post_recv_at(b, 40, dst(b, 0), MSG)) ||
	    post_ops(a, &send, 1))
		return "posting the SEND or its receive failed";
	if (vt_poll_cq_until(a->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1)
		return "no SEND completion";
	if (wc.status != IBV_WC_SUCCESS)
		return vt_wc_status_name(wc.status);
	if (vt_poll_cq_until(b->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1)
		return "no receive completion";
	return wc.status == IBV_WC_SUCCESS ? NULL :
	       vt_wc_status_name(wc.status);
}

/* After scenario_restate: the same QPs, connected. */
static void scenario_reset_again(struct side *a, struct side *b,
				 int gid_index)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	const char *who = "", *step = NULL;
	int round;

	for (round = 1; round <= ROUNDS && !step; round++) {
		who = "b: modify_qp to";
		step = ibv_modify_qp(b->qp, &err, IBV_QP_STATE) ? "ERROR" :
		       restate_one(b, a, gid_index);
		if (!step) {
			who = "a: modify_qp to";
			step = restate_one(a, b, gid_index);
		}
		if (!step) {
			who = "SEND";
			step = send_one(a, b, false);
		}
	}
	vt_check(!step, "reset_again: each new connection works",
		 "round %d: %s %s (errno: %s)", round - 1, who, step,
		 strerror(errno));
}

/* On new QPs: a is reset while its first attempt waits at b. */
static void scenario_reset_connecting(struct side *a, struct side *b,
				      int gid_index)
{
	const char *who = "", *step = NULL;
	int round;

	for (round = 1; round <= ROUNDS && !step; round++) {
		who = "new QPs:";
		step = renew_qps(a, b) ? NULL : "ibv_create_qp";
		if (!step) {
			who = "a, first attempt: modify_qp to";
			step = to_rts(a, b, gid_index);
		}
		if (!step) {
			who = "a, reset and again: modify_qp to";
			step = restate_one(a, b, gid_index);
		}
		if (!step) {
			who = "b: modify_qp to";
			step = to_rts(b, a, gid_index);
		}
		if (!step) {
			who = "SEND";
			step = send_one(a, b, false);
		}
	}
	vt_check(!step, "reset_connecting: the new attempt connects",
		 "round %d: %s %s (errno: %s)", round - 1, who, step,
		 strerror(errno));
}

/* A thread that rings a QP's SQ doorbell until told to stop. */
struct doorbell_storm {
	struct ibv_qp *qp;
	pthread_t thread;
	atomic_bool stop;
	unsigned long rings;
	int err;			/* the first failed ring's errno */
};

static void *doorbell_storm_run(void *arg)
{
	struct doorbell_storm *st = arg;
	struct ibv_send_wr *bad;

	while (!atomic_load(&st->stop)) {
		/* The post command with no WR: the SQ doorbell alone. */
		int rv = ibv_cmd_post_send(st->qp, NULL, &bad);

		if (rv && !st->err)
			st->err = rv;
		st->rings++;
	}
	return NULL;
}

static int doorbell_storm_start(struct doorbell_storm *st, struct ibv_qp *qp)
{
	st->qp = qp;
	st->rings = 0;
	st->err = 0;
	atomic_store(&st->stop, false);
	return pthread_create(&st->thread, NULL, doorbell_storm_run, st);
}

static void doorbell_storm_stop(struct doorbell_storm *st)
{
	atomic_store(&st->stop, true);
	pthread_join(st->thread, NULL);
}

/* One round of bind_race on new QPs: NULL, or what went wrong. */
static const char *bind_race_round(struct side *a, struct side *b,
				   int gid_index, struct doorbell_storm *st)
{
	static const struct op send = { IBV_WR_SEND, 0, 0, true };
	const char *step = NULL, *b_step;
	struct ibv_wc wc;

	if (!renew_qps(a, b))
		return "ibv_create_qp";
	if (post_recv_at(b, 40, dst(b, 0), MSG))
		return "b: posting the receive";
	if (to_rts(a, b, gid_index))
		return "a: modify_qp to RTR or RTS";
	/* Not connected yet: the SEND waits in the ring. */
	if (post_ops(a, &send, 1))
		return "a: posting the SEND";
	if (doorbell_storm_start(st, a->qp))
		return "pthread_create";
	/* A stray FPDU fails b at once, and its modify_qp to RTS then. */
	b_step = to_rts(b, a, gid_index);
	if (vt_poll_cq_until(a->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1)
		step = "no SEND completion";
	else if (wc.status != IBV_WC_SUCCESS)
		step = vt_wc_status_name(wc.status);
	doorbell_storm_stop(st);
	if (step)
		return step;
	if (b_step)
		return "b: modify_qp to RTR or RTS";
	if (st->err)
		return "a doorbell failed";
	if (vt_poll_cq_until(b->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1)
		return "no receive completion";
	return wc.status == IBV_WC_SUCCESS ? NULL :
	       vt_wc_status_name(wc.status);
}

/* On new QPs: doorbells race the binding of a's connection. */
static void scenario_bind_race(struct side *a, struct side *b, int gid_index)
{
	struct doorbell_storm st = {};
	unsigned long rings = 0;
	const char *step = NULL;
	int round;

	for (round = 1; round <= RACE_ROUNDS && !step; round++) {
		step = bind_race_round(a, b, gid_index, &st);
		rings += st.rings;
	}
	vt_check(!step, "bind_race: a SEND waiting for the connection goes through",
		 "round %d: %s (%lu doorbells, errno %s)", round - 1, step,
		 rings, strerror(st.err ? st.err : errno));
	vt_info("bind_race: %lu doorbells in %d rounds", rings, round - 1);
}

/* @s's address, from its GID (IPv4-mapped or IPv6), port @port. */
static socklen_t side_addr(const struct side *s, uint16_t port,
			   struct sockaddr_storage *ss)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(s->gid.raw, v4mapped, sizeof(v4mapped))) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, s->gid.raw + 12, 4);
		return sizeof(*sin);
	}
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, s->gid.raw, 16);
	return sizeof(*sin6);
}

static int read_all(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

/*
 * A raw TCP client from @from's address asks @to, as @from's QP, for a
 * modify_qp connection, with private data flags @pd_flags: the stream in
 * *@fd, whose reads give up after WAIT_MS.  Return: NULL, or what went
 * wrong (nothing is left open then).
 */
static const char *raw_request_flags(struct side *from, struct side *to,
				     uint8_t pd_flags, int *fd)
{
	uint8_t req[MPA_HDR_LEN + DIRECT_PD_LEN] = "MPA ID Req Frame";
	uint32_t src = htobe32(from->qp->qp_num), dst = htobe32(to->qp->qp_num);
	struct sockaddr_storage laddr, raddr;
	socklen_t llen = side_addr(from, 0, &laddr);
	socklen_t rlen = side_addr(to, DIRECT_PORT, &raddr);
	struct timeval rcv_wait = { .tv_sec = WAIT_MS / 1000 };
	const char *why = NULL;

	req[16] = 0;				/* M, C, R: none */
	req[17] = 1;				/* revision */
	req[18] = 0;
	req[19] = DIRECT_PD_LEN;
	memcpy(req + 20, "viwD", 4);
	req[24] = 1;				/* version */
	req[25] = pd_flags;
	memcpy(req + 28, &src, 4);
	memcpy(req + 32, &dst, 4);

	*fd = socket(laddr.ss_family, SOCK_STREAM, 0);
	if (*fd < 0)
		return "socket";
	if (setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_wait,
		       sizeof(rcv_wait)))
		why = "SO_RCVTIMEO";
	else if (bind(*fd, (struct sockaddr *)&laddr, llen) ||
		 connect(*fd, (struct sockaddr *)&raddr, rlen))
		why = "bind or connect";
	else if (write(*fd, req, sizeof(req)) != (ssize_t)sizeof(req))
		why = "sending the MPA request";
	if (why) {
		close(*fd);
		*fd = -1;
	}
	return why;
}

/* The same, flags 0: no Immediate Data, no acknowledgements. */
static const char *raw_request(struct side *from, struct side *to, int *fd)
{
	return raw_request_flags(from, to, 0, fd);
}

/* Read the accepting reply on raw stream @fd: NULL, or what went wrong. */
static const char *raw_read_reply(int fd)
{
	uint8_t rep[MPA_HDR_LEN + 256];
	uint16_t pd_len;

	if (read_all(fd, rep, MPA_HDR_LEN) ||
	    memcmp(rep, "MPA ID Rep Frame", 16))
		return "no MPA reply";
	if (rep[16] & MPA_F_REJECT)
		return "the request was rejected";
	pd_len = (uint16_t)(rep[18] << 8 | rep[19]);
	if (pd_len > sizeof(rep) - MPA_HDR_LEN ||
	    read_all(fd, rep + MPA_HDR_LEN, pd_len))
		return "the reply's private data";
	return NULL;
}

/* Reset raw stream @fd and close it: NULL, or what went wrong. */
static const char *raw_reset(int fd)
{
	struct linger reset = { .l_onoff = 1, .l_linger = 0 };
	const char *why = NULL;

	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)))
		why = "SO_LINGER";
	close(fd);
	return why;
}

/*
 * Read the accepting reply on raw stream @fd, then reset the stream
 * without sending anything more, as a QP reset while connecting does.
 * Return: NULL, or what went wrong.
 */
static const char *raw_drop_after_reply(int fd)
{
	const char *why = raw_read_reply(fd), *reset_why = raw_reset(fd);

	return why ? why : reset_why;
}

/* An attempt from @from's address to @to, dropped once @to accepted it. */
static const char *abandon_attempt(struct side *from, struct side *to)
{
	const char *why;
	int fd;

	why = raw_request(from, to, &fd);
	return why ? why : raw_drop_after_reply(fd);
}

/* Does b accept?  Only if its GID is the larger (viw_direct.c). */
static bool b_accepts(const struct side *a, const struct side *b,
		      const char *scenario)
{
	if (memcmp(a->gid.raw, b->gid.raw, sizeof(a->gid.raw)) < 0)
		return true;
	vt_info("%s: skipped, b's GID is the smaller", scenario);
	return false;
}

/*
 * New QPs on both sides, and @s (a or b) in RTS towards the other:
 * NULL, or the step that failed, with *@who naming the side.
 */
static const char *renew_qps_one_rts(struct side *a, struct side *b,
				     struct side *s, int gid_index,
				     const char **who)
{
	*who = "new QPs:";
	if (!renew_qps(a, b))
		return "ibv_create_qp";
	*who = s == a ? "a: modify_qp to" : "b: modify_qp to";
	return to_rts(s, s == a ? b : a, gid_index);
}

/*
 * New QPs, b in RTS, and a raw client from a's address whose request b
 * accepted (its reply read), in *@fd: NULL, or the step that failed,
 * with *@who naming the side.
 */
static const char *raw_accepted_flags(struct side *a, struct side *b,
				      int gid_index, uint8_t pd_flags, int *fd,
				      const char **who)
{
	const char *step = renew_qps_one_rts(a, b, b, gid_index, who);

	if (step)
		return step;
	*who = "raw client:";
	step = raw_request_flags(a, b, pd_flags, fd);
	return step ? step : raw_read_reply(*fd);
}

static const char *raw_accepted(struct side *a, struct side *b,
				int gid_index, int *fd, const char **who)
{
	return raw_accepted_flags(a, b, gid_index, 0, fd, who);
}

/* On new QPs: a request from a's address, dropped before anything else. */
static void scenario_abandoned(struct side *a, struct side *b, int gid_index)
{
	const char *who, *step;
	int state;

	if (!b_accepts(a, b, "abandoned"))
		return;
	step = renew_qps_one_rts(a, b, b, gid_index, &who);
	/* a receive posted before: it stays, for the next stream */
	if (!step && post_recv_at(b, 40, dst(b, 0), MSG)) {
		who = "b:";
		step = "posting a receive";
	}
	if (!step) {
		who = "raw client:";
		step = abandon_attempt(a, b);
	}
	if (step) {
		vt_fail("abandoned", "%s %s: %s", who, step, strerror(errno));
		return;
	}
	/* time for the reset to reach b and for b to act on it */
	usleep(300 * 1000);
	state = vt_qp_state(b->qp);
	vt_check(state == IBV_QPS_RTS, "abandoned: b stays in RTS",
		 "b is in %s", vt_qp_state_str(state));
	who = "a: modify_qp to";
	step = to_rts(a, b, gid_index);
	if (!step) {
		who = "SEND";
		step = send_one(a, b, true);
	}
	vt_check(!step,
		 "abandoned: the next attempt connects, the earlier receive takes its SEND",
		 "%s %s (errno: %s)", who, step, strerror(errno));
}

/* On new QPs: a request from a's address, one byte sent, then a reset. */
static void scenario_spoke(struct side *a, struct side *b, int gid_index)
{
	static const uint8_t byte;
	const char *who, *step, *reset_why;
	int fd = -1, state;

	if (!b_accepts(a, b, "spoke"))
		return;
	step = raw_accepted(a, b, gid_index, &fd, &who);
	if (!step && write(fd, &byte, 1) != 1)
		step = "sending a byte";
	if (fd >= 0) {
		reset_why = raw_reset(fd);
		step = step ? step : reset_why;
	}
	if (step) {
		vt_fail("spoke", "%s %s: %s", who, step, strerror(errno));
		return;
	}
	state = vt_wait_qp_state(b->qp, IBV_QPS_ERR, SPOKE_WAIT_MS);
	vt_check(state == IBV_QPS_ERR,
		 "spoke: a reset after the peer sent something fails b",
		 "b is in %s %d ms after the reset",
		 vt_qp_state_str(state), SPOKE_WAIT_MS);
}

/*
 * On new QPs: a's request reaches b, still in INIT, and then the request
 * of an attempt a drops, as when the requests of a QP reset while
 * connecting and of its new attempt are read in the other order.  b takes
 * the later one, the dropped attempt, and must not refuse a's.
 */
static void scenario_swapped(struct side *a, struct side *b, int gid_index)
{
	const char *who, *step;
	int fd = -1;

	if (!b_accepts(a, b, "swapped"))
		return;
	step = renew_qps_one_rts(a, b, a, gid_index, &who);
	/* time for b to read a's request, and then the raw one */
	if (!step) {
		usleep(300 * 1000);
		who = "raw client:";
		step = raw_request(a, b, &fd);
	}
	if (!step) {
		usleep(300 * 1000);
		who = "b: modify_qp to";
		step = to_rts(b, a, gid_index);
	}
	if (!step) {
		who = "raw client:";
		step = raw_drop_after_reply(fd);
	} else if (fd >= 0) {
		close(fd);
	}
	if (!step) {
		who = "SEND";
		step = send_one(a, b, false);
	}
	vt_check(!step, "swapped: a's attempt connects after b took the dropped one",
		 "%s %s (errno: %s)", who, step, strerror(errno));
}

/* The next async event of b's context for b's QP within @ms, or -1. */
static int b_qp_event(struct side *b, int ms)
{
	long long deadline = vt_deadline_in(ms);
	int type;

	do	/* -2: another QP's, from an earlier scenario */
		type = vt_qp_async_event(b->ctx, b->qp, vt_ms_left(deadline));
	while (type == -2);
	return type;
}

/*
 * FULL_WRS signaled WRITEs in one call: the first of @first_len bytes,
 * the others of @s's whole buffer.
 */
static int post_full_writes(struct side *s, uint32_t first_len)
{
	struct ibv_send_wr wr[FULL_WRS] = {}, *bad;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)s->buf, first_len, s->mr->lkey },
		{ (uintptr_t)s->buf, BUF_SIZE, s->mr->lkey },
	};
	int i;

	for (i = 0; i < FULL_WRS; i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i ? 1 : 0];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		/* the raw client places nothing: any address will do */
		wr[i].wr.rdma.remote_addr = 0;
		wr[i].wr.rdma.rkey = 1;
		wr[i].next = i + 1 < FULL_WRS ? &wr[i + 1] : NULL;
	}
	return ibv_post_send(s->qp, wr, &bad);
}

/* FULL_WRS completions of @s, all successful: NULL, or what went wrong. */
static const char *full_writes_done(struct side *s)
{
	struct ibv_wc wc[FULL_WRS];
	int i;

	if (vt_poll_cq_until(s->cq, wc, FULL_WRS,
			     vt_deadline_in(WAIT_MS)) != FULL_WRS)
		return "fewer completions than WRITEs";
	for (i = 0; i < FULL_WRS; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			return vt_wc_status_name(wc[i].status);
	return NULL;
}

/* The raw client's reader: takes the stream until it is shut down. */
/*
 * The raw client reads b's stream and checks it, RFC 5044 framing and
 * RFC 5041 tagged headers: every FPDU is one of b's WRITEs (STag 1), each
 * WRITE's tagged offsets run on from 0 without a gap to BUF_SIZE, and
 * every payload byte is b's fill.  A stream cut, doubled or reordered
 * anywhere (a doorbell's short write, kernel/viw_tx.c) fails it.
 */
#define DDP_TAGGED	0x80
#define DDP_LAST	0x40
#define TAGGED_HDR	14	/* DDP and RDMAP control, STag, TO */
#define MPA_TRAILER	4	/* the CRC, zero here */
#define RDMAP_TERMINATE	0x7

struct drain {
	pthread_t thread;
	int fd;
	bool term_ok;			/* a TERMINATE may end the WRITEs */
	uint32_t first_len;		/* of the first WRITE, if not BUF_SIZE */
	atomic_llong bytes;
	atomic_int writes;		/* whole WRITEs checked */
	uint64_t offset;		/* of the WRITE being read */
	char why[96];			/* the first thing wrong, or "" */
	atomic_bool bad;
	atomic_bool terminated;		/* a TERMINATE was read */
	atomic_bool eof;		/* the stream ended (FIN or reset) */
	int end_err;			/* 0 for a FIN, else read()'s errno */
	uint8_t acc[2 << 16];		/* bytes not yet checked */
	size_t have;
};

static void drain_bad(struct drain *d, const char *what, uint64_t at)
{
	snprintf(d->why, sizeof(d->why), "%s, at byte %llu of the stream",
		 what, (unsigned long long)at);
	atomic_store(&d->bad, true);
}

/*
 * Check the first @have bytes of the WRITE FPDU at @p, of ULPDU length
 * @ulpdu, as far as they go: a WRITE, in line, its payload b's fill.
 * False if wrong.
 */
static bool drain_write_part(struct drain *d, const uint8_t *p, size_t have,
			     uint32_t ulpdu, uint64_t at)
{
	bool whole = have >= 2 + (size_t)ulpdu;
	size_t i, end = whole ? 2 + (size_t)ulpdu : have;
	uint32_t stag;
	uint64_t to;

	if ((whole || have >= 4) &&
	    (ulpdu < TAGGED_HDR || !(p[2] & DDP_TAGGED) || (p[3] & 0x0f))) {
		drain_bad(d, "an FPDU that is not a WRITE", at);
		return false;
	}
	if (have >= 2 + TAGGED_HDR) {
		memcpy(&stag, p + 4, 4);
		memcpy(&to, p + 8, 8);
		if (be32toh(stag) != 1 || be64toh(to) != d->offset) {
			drain_bad(d, "a WRITE's STag or tagged offset out of line",
				  at);
			return false;
		}
	}
	for (i = 2 + TAGGED_HDR; i < end; i++) {
		if (p[i] != FILL_B) {
			drain_bad(d, "a payload byte that is not b's", at);
			return false;
		}
	}
	return true;
}

/* Check the whole FPDU at @p, of ULPDU length @ulpdu; false if wrong. */
static bool drain_fpdu(struct drain *d, const uint8_t *p, uint32_t ulpdu,
		       uint64_t at)
{
	uint32_t paylen;

	if (atomic_load(&d->terminated)) {
		drain_bad(d, "an FPDU after the TERMINATE", at);
		return false;
	}
	if (d->term_ok && !(p[2] & DDP_TAGGED) &&
	    (p[3] & 0x0f) == RDMAP_TERMINATE) {
		atomic_store(&d->terminated, true);
		return true;
	}
	if (!drain_write_part(d, p, 2 + ulpdu, ulpdu, at))
		return false;
	paylen = ulpdu - TAGGED_HDR;
	d->offset += paylen;
	if (p[2] & DDP_LAST) {
		if (d->offset != (atomic_load(&d->writes) || !d->first_len ?
				  BUF_SIZE : d->first_len)) {
			drain_bad(d, "a WRITE of the wrong length", at);
			return false;
		}
		d->offset = 0;
		atomic_fetch_add(&d->writes, 1);
	}
	return true;
}

/* Check the whole FPDUs in acc[], and keep the rest. */
static void drain_check(struct drain *d)
{
	uint64_t start = atomic_load(&d->bytes) - d->have;
	size_t off = 0;

	while (!atomic_load(&d->bad) && d->have - off >= 2) {
		uint32_t ulpdu = d->acc[off] << 8 | d->acc[off + 1];
		size_t len = (2 + ulpdu + 3) / 4 * 4 + MPA_TRAILER;

		if (d->have - off < len)
			break;
		if (!drain_fpdu(d, d->acc + off, ulpdu, start + off))
			return;
		off += len;
	}
	memmove(d->acc, d->acc + off, d->have - off);
	d->have -= off;
}

static void *drain_run(void *arg)
{
	struct drain *d = arg;
	ssize_t n;

	while ((n = read(d->fd, d->acc + d->have,
			 sizeof(d->acc) - d->have)) > 0) {
		atomic_fetch_add(&d->bytes, n);
		d->have += n;
		drain_check(d);
	}
	d->end_err = n < 0 ? errno : 0;
	atomic_store(&d->eof, true);
	return NULL;
}

/* Wait until the raw client checked @n WRITEs: NULL, or what went wrong. */
static const char *drain_wait(struct drain *d, int n)
{
	long long deadline = vt_deadline_in(WAIT_MS);

	while (!atomic_load(&d->bad) && atomic_load(&d->writes) < n &&
	       vt_now_ms() < deadline)
		usleep(10 * 1000);
	if (atomic_load(&d->bad))
		return d->why;
	return atomic_load(&d->writes) < n ? "fewer WRITEs than posted" : NULL;
}

/*
 * b's post of more than its socket holds: with the peer not reading, it
 * returns and the WRITEs wait; once the peer reads, they and the next
 * ones complete.  @fd is the raw client's stream, its reply read.
 */
static void full_socket_check(struct side *b, int fd)
{
	struct drain *d = calloc(1, sizeof(*d));
	long long t0, took;
	const char *step = NULL;
	int state;

	if (!d) {
		vt_fail("full_socket", "calloc");
		return;
	}
	d->fd = fd;
	t0 = vt_now_ms();
	if (post_full_writes(b, BUF_SIZE)) {
		vt_fail("full_socket", "b: ibv_post_send: %s", strerror(errno));
		free(d);
		return;
	}
	took = vt_now_ms() - t0;
	state = vt_qp_state(b->qp);
	vt_check(took < FULL_POST_MS && state == IBV_QPS_RTS,
		 "full_socket: a post to a peer that reads nothing returns",
		 "the post took %lld ms, b is in %s", took,
		 vt_qp_state_str(state));
	vt_info("full_socket: the post to a peer reading nothing took %lld ms",
		took);
	if (pthread_create(&d->thread, NULL, drain_run, d)) {
		vt_fail("full_socket", "pthread_create");
		free(d);
		return;
	}
	step = full_writes_done(b);
	vt_check(!step, "full_socket: the WRITEs complete once the peer reads",
		 "%s", step);
	/*
	 * The work item that sent them gives tx_lock back; then a post to
	 * the idle engine, which the doorbell's run starts in the caller's
	 * context.
	 */
	usleep(100 * 1000);
	if (!step && post_full_writes(b, BUF_SIZE))
		step = "ibv_post_send";
	if (!step)
		step = full_writes_done(b);
	vt_check(!step, "full_socket: a post of as many completes while the peer reads",
		 "%s", step);
	step = drain_wait(d, 2 * FULL_WRS);
	vt_check(!step, "full_socket: the peer reads every WRITE whole, in order",
		 "%s (%d WRITEs read)", step, atomic_load(&d->writes));
	vt_info("full_socket: the raw client read %lld bytes",
		(long long)atomic_load(&d->bytes));
	shutdown(fd, SHUT_RDWR);
	pthread_join(d->thread, NULL);
	free(d);
}

/*
 * Raw stream @fd receives into FULL_RCVBUF bytes from now on: b fills it
 * soon when the client does not read.  NULL, or what went wrong.
 */
static const char *raw_small_rcvbuf(int fd)
{
	int rcvbuf = FULL_RCVBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		return "SO_RCVBUF";
	return NULL;
}

/* A raw client on b's connection, as raw_accepted(), its buffer small. */
static const char *raw_accepted_small(struct side *a, struct side *b,
				      int gid_index, int *fd, const char **who)
{
	const char *step = raw_accepted(a, b, gid_index, fd, who);

	return step ? step : raw_small_rcvbuf(*fd);
}

/* On new QPs: b's WRITEs to a raw client that reads nothing, then reads. */
static void scenario_full_socket(struct side *a, struct side *b,
				 int gid_index)
{
	const char *who, *step;
	int fd = -1;

	if (!b_accepts(a, b, "full_socket"))
		return;
	step = raw_accepted_small(a, b, gid_index, &fd, &who);
	if (step) {
		if (fd >= 0)
			close(fd);
		vt_fail("full_socket", "%s %s: %s", who, step,
			strerror(errno));
		return;
	}
	full_socket_check(b, fd);
	raw_reset(fd);
}

/*
 * The WRITEs of full_fin: those TCP took whole complete with success, the
 * next with RETRY_EXC_ERR and the rest are flushed: NULL, or what differs.
 */
static const char *full_fin_wcs(struct side *b, char *why, size_t len)
{
	struct ibv_wc wc[FULL_WRS];
	int n, i = 0, sent;

	n = vt_poll_cq_until(b->cq, wc, FULL_WRS, vt_deadline_in(WAIT_MS));
	while (i < n && wc[i].status == IBV_WC_SUCCESS)
		i++;
	sent = i;
	if (i < n && wc[i].status == IBV_WC_RETRY_EXC_ERR)
		i++;
	while (i < n && wc[i].status == IBV_WC_WR_FLUSH_ERR)
		i++;
	if (n == FULL_WRS && i == n && sent < n)
		return NULL;
	snprintf(why, len, "%d of %d completions, %d successful, completion %d %s",
		 n, FULL_WRS, sent, i, i < n ? vt_wc_status_name(wc[i].status) : "-");
	return why;
}

/*
 * On new QPs: b's WRITEs fill its socket to a raw client that reads
 * nothing, so that its transmit work waits for room, and the client
 * sends a FIN (see top).
 */
static void scenario_full_fin(struct side *a, struct side *b, int gid_index)
{
	const char *who, *step;
	int fd = -1, ev;
	char why[128];

	if (!b_accepts(a, b, "full_fin"))
		return;
	step = raw_accepted_small(a, b, gid_index, &fd, &who);
	if (!step) {
		who = "b:";
		if (post_full_writes(b, BUF_SIZE))
			step = "ibv_post_send";
	}
	if (!step) {
		/* the work item takes over the full socket, and waits in it */
		usleep(FULL_FIN_WAIT_MS * 1000);
		who = "raw client:";
		if (shutdown(fd, SHUT_WR))
			step = "shutdown";
	}
	if (step) {
		vt_fail("full_fin", "%s %s: %s", who, step, strerror(errno));
	} else {
		ev = b_qp_event(b, WAIT_MS);
		vt_check(ev == IBV_EVENT_QP_FATAL &&
			 vt_qp_state(b->qp) == IBV_QPS_ERR,
			 "full_fin: a FIN while b's transmit waits for room fails b",
			 "async event %d, b in %s", ev,
			 vt_qp_state_str(vt_qp_state(b->qp)));
		step = full_fin_wcs(b, why, sizeof(why));
		vt_check(!step, "full_fin: the WRITE being sent exceeds its retries, the rest are flushed",
			 "%s", step);
	}
	if (fd >= 0)
		raw_reset(fd);
}

/*
 * A WRITE of four bytes to CUT_BAD_STAG, whole and last (RFC 5044
 * framing, no CRC asked; RFC 5041 tagged header, RFC 5040 WRITE): b must
 * refuse it with a TERMINATE.
 */
static int raw_write_bad_stag(int fd)
{
	const uint32_t ulpdu = TAGGED_HDR + 4;
	uint8_t fpdu[2 + TAGGED_HDR + 4 + MPA_TRAILER] = {};
	uint32_t stag = htobe32(CUT_BAD_STAG);

	fpdu[0] = ulpdu >> 8;
	fpdu[1] = ulpdu & 0xff;
	fpdu[2] = DDP_TAGGED | DDP_LAST | 0x01;	/* DV 1 */
	fpdu[3] = 0x40;				/* RDMAP: RV 1, WRITE */
	memcpy(fpdu + 4, &stag, 4);		/* TO 0, payload 0 */
	return write(fd, fpdu, sizeof(fpdu)) == (ssize_t)sizeof(fpdu) ? 0 : -1;
}

/* A cut scenario: how b leaves RTS, and whether the cut FPDU is torn. */
struct cut_kind {
	const char *name;
	bool by_peer;		/* the raw client's bad WRITE, else ERROR */
	bool torn;		/* debugfs tx_spill_fail is set (-T) */
};

/* How the cut scenarios take b out of RTS, CUT_SPOIL_MS into a post. */
struct spoiler {
	pthread_t thread;
	struct side *b;
	int fd;
	bool by_peer;		/* the raw client's bad WRITE, else ERROR */
	int rv;
};

static void *spoiler_run(void *arg)
{
	struct spoiler *sp = arg;
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

	usleep(CUT_SPOIL_MS * 1000);
	if (sp->by_peer)
		sp->rv = raw_write_bad_stag(sp->fd);
	else
		sp->rv = ibv_modify_qp(sp->b->qp, &err, IBV_QP_STATE);
	return NULL;
}

/* Wait until the raw client's stream ended: NULL, or what went wrong. */
static const char *drain_until_eof(struct drain *d)
{
	long long deadline = vt_deadline_in(WAIT_MS);

	while (!atomic_load(&d->eof) && vt_now_ms() < deadline)
		usleep(10 * 1000);
	return atomic_load(&d->eof) ? NULL : "the stream did not end";
}

/* Wait for the stream's end, checked up to it: NULL, or what went wrong. */
static const char *drain_end(struct drain *d)
{
	const char *step = drain_until_eof(d);

	if (!step && atomic_load(&d->bad))
		step = d->why;
	return step;
}

/*
 * A stream that ended inside an FPDU: what it ends with must be part of
 * one of b's WRITEs.  NULL, or what is wrong.
 */
static const char *drain_tail_write(struct drain *d)
{
	if (d->have >= 2 &&
	    !drain_write_part(d, d->acc, d->have, d->acc[0] << 8 | d->acc[1],
			      atomic_load(&d->bytes) - d->have))
		return d->why;
	return NULL;
}

/*
 * What b's stream ended with: NULL if as it must, or what went wrong.  A
 * torn stream ends anywhere, as a reset drops what b had not sent, but
 * with nothing after the part of the cut FPDU that TCP took.
 */
static const char *cut_stream_end(struct drain *d, const struct cut_kind *k)
{
	const char *step = drain_end(d);

	if (step)
		return step;
	if (k->torn) {
		step = drain_tail_write(d);
		if (step)
			return step;
		return d->end_err == ECONNRESET ? NULL :
		       d->end_err ? "the stream ended in an error, not a reset" :
				    "the stream ended with a FIN, not a reset";
	}
	if (d->have)
		return "the stream ended inside an FPDU";
	if (k->by_peer && !atomic_load(&d->terminated))
		return "no TERMINATE";
	return NULL;
}

/* "NAME: WHAT" in @buf, a vt_check() name. */
static const char *cut_name(char *buf, size_t len, const struct cut_kind *k,
			    const char *what)
{
	snprintf(buf, len, "%s: %s", k->name, what);
	return buf;
}

/* What cut_stream_end() checked, as a vt_check() name. */
static const char *cut_end_name(char *buf, size_t len,
				const struct cut_kind *k)
{
	if (k->torn)
		return cut_name(buf, len, k, "b's stream stops inside the FPDU TCP cut, with a reset and nothing after the cut");
	return cut_name(buf, len, k, k->by_peer ?
			"b's stream goes on to the FPDU's end, then its TERMINATE and FIN" :
			"b's stream goes on to the FPDU's end, then its FIN");
}

/*
 * The completions of a cut post, all FULL_WRS: those before the WRITE
 * that TCP cut with success, that one and the rest flushed.  NULL, or
 * what differs.
 */
static const char *cut_wcs(struct side *b, char *why, size_t len)
{
	struct ibv_wc wc[FULL_WRS];
	int n, i = 0;

	n = vt_poll_cq_until(b->cq, wc, FULL_WRS, vt_deadline_in(WAIT_MS));
	while (i < n && wc[i].status == IBV_WC_SUCCESS)
		i++;
	while (i < n && wc[i].status == IBV_WC_WR_FLUSH_ERR)
		i++;
	if (n == FULL_WRS && i == n && wc[n - 1].status != IBV_WC_SUCCESS)
		return NULL;
	snprintf(why, len, "%d of %d completions, completion %d %s", n,
		 FULL_WRS, i, i < n ? vt_wc_status_name(wc[i].status) : "-");
	return why;
}

/* cut_check() found nothing wrong, but the post missed the window. */
#define CUT_MISSED	1

/*
 * b's post, its doorbell's write cut short by TCP, and b leaving RTS
 * while the run waits in debugfs tx_short_delay_ms (see top).  @fd is
 * the raw client's stream, its reply read.  Returns 0 if checked, -1 if
 * it failed, CUT_MISSED if the post did not wait: TCP took the
 * doorbell's writes whole, or left them to the work item.
 */
static int cut_check(const struct cut_kind *k, struct side *b, int fd)
{
	struct drain *d = calloc(1, sizeof(*d));
	struct spoiler sp = { .b = b, .fd = fd, .by_peer = k->by_peer };
	const char *name = k->name;
	struct ibv_wc wc[FULL_WRS];
	const char *step;
	long long t0, took;
	int state, rv = -1;
	char why[96], what[160];

	if (!d) {
		vt_fail(name, "calloc");
		return -1;
	}
	d->fd = fd;
	d->term_ok = k->by_peer && !k->torn;
	d->first_len = CUT_FIRST_LEN;
	if (pthread_create(&d->thread, NULL, drain_run, d)) {
		vt_fail(name, "pthread_create");
		free(d);
		return -1;
	}
	if (pthread_create(&sp.thread, NULL, spoiler_run, &sp)) {
		vt_fail(name, "pthread_create");
		goto out;
	}
	t0 = vt_now_ms();
	step = post_full_writes(b, CUT_FIRST_LEN) ? "ibv_post_send" : NULL;
	took = vt_now_ms() - t0;
	pthread_join(sp.thread, NULL);
	if (!step && sp.rv)
		step = k->by_peer ? "the raw client's bad WRITE" :
				    "modify_qp to ERROR";
	if (step) {
		vt_fail(name, "%s: %s", step, strerror(errno));
		goto out;
	}
	if (took < CUT_MIN_MS) {
		vt_info("%s: the post took %lld ms, the window was missed", name,
			took);
		/* the next try's completions come into the same CQ */
		vt_poll_cq_until(b->cq, wc, FULL_WRS, vt_deadline_in(WAIT_MS));
		rv = CUT_MISSED;
		goto out;
	}
	step = cut_stream_end(d, k);
	vt_check(!step, cut_end_name(what, sizeof(what), k),
		 "%s (%lld bytes read, %d whole WRITEs)", step,
		 (long long)atomic_load(&d->bytes), atomic_load(&d->writes));
	state = vt_qp_state(b->qp);
	vt_check(state == IBV_QPS_ERR,
		 cut_name(what, sizeof(what), k, "b ends in ERROR"),
		 "b in %s", vt_qp_state_str(state));
	step = cut_wcs(b, why, sizeof(why));
	vt_check(!step, cut_name(what, sizeof(what), k,
				 "the WRITEs before the one cut complete with success, the rest are flushed"),
		 "%s", step);
	rv = 0;
out:
	shutdown(fd, SHUT_RDWR);
	pthread_join(d->thread, NULL);
	free(d);
	return rv;
}

/*
 * On new QPs each try: cut_term or cut_err, with a raw client that reads
 * all the while, into a small receive buffer: the window it offers is
 * what makes TCP hold back most of b's first write, and refuse the rest
 * of it.  A try whose post missed the window is made again, up to
 * CUT_TRIES in all.
 */
static void scenario_cut(struct side *a, struct side *b, int gid_index,
			 const struct cut_kind *k)
{
	const char *name = k->name;
	const char *who, *step;
	int fd, try, rv = CUT_MISSED;

	if (!b_accepts(a, b, name))
		return;
	for (try = 1; try <= CUT_TRIES && rv == CUT_MISSED; try++) {
		fd = -1;
		step = raw_accepted_small(a, b, gid_index, &fd, &who);
		if (step) {
			if (fd >= 0)
				close(fd);
			vt_fail(name, "%s %s: %s", who, step, strerror(errno));
			return;
		}
		rv = cut_check(k, b, fd);
		raw_reset(fd);
	}
	if (rv == CUT_MISSED)
		vt_fail(name, "no post of %d waited after a short write: is debugfs tx_short_delay_ms %d%s, and net.ipv4.tcp_notsent_lowat 16384 in b's namespace?",
			CUT_TRIES, CUT_DELAY_MS,
			k->torn ? " and tx_spill_fail Y" : "");
}

/*
 * killed_post: b's QP lives in a child process, the poster.  Its post's
 * doorbell write is cut short by TCP (tcp_notsent_lowat), the rest of the
 * cut FPDU cannot be kept (tx_spill_fail), and the raw client reads
 * nothing, so the run waits for room in the system call, once a tick.
 * KILL_HELD_MS in, the poster is killed there.  From then on the client
 * reads: the stream must end with a reset and carry nothing after the
 * part of the cut FPDU that TCP took, as in torn_term.  A cut that fell
 * between two FPDUs leaves the stream whole, with a TERMINATE and a FIN:
 * that try missed, as does a post that returned (no run waited).
 */
#define KILL_HELD_MS	500

/* What the poster tells the parent, and the parent the poster. */
struct killed_hello {
	uint32_t qpn;
	union ibv_gid gid;
};

/* Read @len bytes of pipe @fd within @ms: 0, or -1 (none, or an error). */
static int pipe_read_within(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -1;
	return read(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/*
 * The poster, in the child: b's QP in RTS towards a, its number and GID
 * to the parent, then, once told, the post.  It never returns.
 */
static void killed_poster(const char *dev_b, struct side *a, int gid_index,
			  int to_parent, int from_parent)
{
	struct side b = {};
	struct killed_hello hello = {};
	char go, posted = 'P';

	if (side_open(&b, dev_b, gid_index, FILL_B) || !(b.qp = new_qp(&b)) ||
	    to_rts(&b, a, gid_index))
		_exit(1);
	hello.qpn = b.qp->qp_num;
	hello.gid = b.gid;
	if (write(to_parent, &hello, sizeof(hello)) != sizeof(hello) ||
	    read(from_parent, &go, 1) != 1)
		_exit(1);
	if (post_full_writes(&b, CUT_FIRST_LEN))
		_exit(1);
	/* The post returned: no run waited.  The parent kills us. */
	if (write(to_parent, &posted, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

/* A poster child and the pipes to it. */
struct killed_child {
	pid_t pid;
	int from_child;
	int to_child;
};

static const char *killed_fork(struct killed_child *kc, const char *dev_b,
			       struct side *a, int gid_index)
{
	int up[2], down[2];

	if (pipe(up))
		return "pipe";
	if (pipe(down)) {
		close(up[0]);
		close(up[1]);
		return "pipe";
	}
	kc->pid = fork();
	if (kc->pid == 0) {
		close(up[0]);
		close(down[1]);
		killed_poster(dev_b, a, gid_index, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	kc->from_child = up[0];
	kc->to_child = down[1];
	return kc->pid < 0 ? "fork" : NULL;
}

static void killed_reap(struct killed_child *kc)
{
	if (kc->pid > 0) {
		kill(kc->pid, SIGKILL);
		waitpid(kc->pid, NULL, 0);
	}
	close(kc->from_child);
	close(kc->to_child);
}

/*
 * The raw client, from a's address, on the poster's connection, its reply
 * read and its receive buffer small: NULL, or the step that failed.
 */
static const char *killed_connect(struct killed_child *kc, struct side *a,
				  int *fd)
{
	struct killed_hello hello;
	struct ibv_qp b_qp = {};
	struct side b = { .qp = &b_qp };
	const char *step;

	if (pipe_read_within(kc->from_child, &hello, sizeof(hello), WAIT_MS))
		return "the poster's QP in RTS";
	b_qp.qp_num = hello.qpn;
	b.gid = hello.gid;
	if (!b_accepts(a, &b, "killed_post"))
		return "";
	step = raw_request(a, &b, fd);
	if (!step)
		step = raw_read_reply(*fd);
	return step ? step : raw_small_rcvbuf(*fd);
}

/*
 * What the stream ended with, once the poster was killed: 0 if a reset
 * after b's WRITEs only, -1 if wrong (@why says), CUT_MISSED if the cut
 * fell between two FPDUs (a whole stream, a FIN).
 */
static int killed_stream_end(struct drain *d, const char **why)
{
	*why = drain_end(d);
	if (*why)
		return -1;
	if (d->end_err == ECONNRESET) {
		*why = atomic_load(&d->terminated) ?
		       "a TERMINATE before the reset" : drain_tail_write(d);
		return *why ? -1 : 0;
	}
	if (d->end_err)
		*why = "the stream ended in an error, not a reset";
	else if (d->have)
		*why = "the stream ended with a FIN inside an FPDU";
	return *why ? -1 : CUT_MISSED;
}

/* One try of killed_post, on a new poster: 0, -1 or CUT_MISSED. */
static int killed_try(const char *dev_b, struct side *a, int gid_index)
{
	const char *name = "killed_post";
	struct killed_child kc = { .pid = -1 };
	struct drain *d = calloc(1, sizeof(*d));
	const char *step;
	char posted, go = 'G';
	int fd = -1, rv = -1;

	if (!d) {
		vt_fail(name, "calloc");
		return -1;
	}
	step = killed_fork(&kc, dev_b, a, gid_index);
	if (!step)
		step = killed_connect(&kc, a, &fd);
	if (!step && write(kc.to_child, &go, 1) != 1)
		step = "telling the poster to post";
	if (step) {
		if (*step)
			vt_fail(name, "%s: %s", step, strerror(errno));
		goto out;
	}
	if (!pipe_read_within(kc.from_child, &posted, 1, KILL_HELD_MS)) {
		vt_info("%s: the post returned, no run waited", name);
		rv = CUT_MISSED;
		goto out;
	}
	if (waitpid(kc.pid, NULL, WNOHANG)) {
		kc.pid = -1;
		vt_fail(name, "the poster ended before its post returned");
		goto out;
	}
	/* Held in the kernel KILL_HELD_MS: kill it there. */
	kill(kc.pid, SIGKILL);
	waitpid(kc.pid, NULL, 0);
	kc.pid = -1;
	d->fd = fd;
	d->term_ok = true;
	d->first_len = CUT_FIRST_LEN;
	if (pthread_create(&d->thread, NULL, drain_run, d)) {
		vt_fail(name, "pthread_create");
		goto out;
	}
	rv = killed_stream_end(d, &step);
	if (rv == CUT_MISSED)
		vt_info("%s: TCP cut the post's write between two FPDUs", name);
	else
		vt_check(!rv, "killed_post: a poster killed while its run waits for room, the rest of the cut FPDU not kept: b's stream is reset, with nothing after what TCP took",
			 "%s (%lld bytes read, %d whole WRITEs)", step,
			 (long long)atomic_load(&d->bytes),
			 atomic_load(&d->writes));
	shutdown(fd, SHUT_RDWR);
	pthread_join(d->thread, NULL);
out:
	if (fd >= 0)
		raw_reset(fd);
	killed_reap(&kc);
	free(d);
	return rv;
}

/*
 * killed_post (see killed_try()), up to CUT_TRIES tries.  b's QP is the
 * poster's: only there does its death end the context, and with it the
 * connection.  a's QP, in the parent, only names the raw client's side.
 */
static void scenario_killed(const char *dev_b, struct side *a, int gid_index)
{
	int try, rv = CUT_MISSED;

	a->qp = new_qp(a);
	if (!a->qp) {
		vt_fail("killed_post", "ibv_create_qp: %s", strerror(errno));
		return;
	}
	for (try = 1; try <= CUT_TRIES && rv == CUT_MISSED; try++)
		rv = killed_try(dev_b, a, gid_index);
	if (rv == CUT_MISSED)
		vt_fail("killed_post", "no post of %d was held in the kernel with its write cut inside an FPDU: is debugfs tx_spill_fail Y, and net.ipv4.tcp_notsent_lowat 16384 in b's namespace?",
			CUT_TRIES);
}

/*
 * The first FPDU of the raw client's first SEND, not its last (RFC 5044
 * framing, no CRC asked; RFC 5041 untagged header, RFC 5040 SEND):
 * TAKEN_PAYLOAD bytes of TAKEN_FILL at MO 0 of message 1 of queue 0.
 */
static int raw_send_first_fpdu(int fd)
{
	const uint32_t ulpdu = 18 + TAKEN_PAYLOAD;
	uint8_t fpdu[2 + 18 + TAKEN_PAYLOAD + 3 + 4] = {};
	uint32_t msn = htobe32(1);
	size_t len = 2 + ulpdu;

	fpdu[0] = ulpdu >> 8;
	fpdu[1] = ulpdu & 0xff;
	fpdu[2] = 0x01;			/* DDP: untagged, not last, DV 1 */
	fpdu[3] = 0x43;			/* RDMAP: RV 1, SEND */
	/* Invalidate STag 0, QN 0 (SEND), MSN 1, MO 0 */
	memcpy(fpdu + 2 + 10, &msn, 4);
	memset(fpdu + 2 + 18, TAKEN_FILL, TAKEN_PAYLOAD);
	len = (len + 3) / 4 * 4 + 4;	/* pad, then the unchecked CRC */
	return write(fd, fpdu, len) == (ssize_t)len ? 0 : -1;
}

/* Has b placed the first FPDU's payload in its first receive? */
static bool taken_placed(struct side *b, long long deadline)
{
	do {
		if (vt_find_not(b->buf + DST_OFF, TAKEN_PAYLOAD,
				TAKEN_FILL) < 0)
			return true;
		usleep(1000);
	} while (vt_ms_left(deadline) > 0);
	return false;
}

/* On new QPs: a receive a SEND has begun to fill, flushed (see top). */
static void scenario_taken_flush(struct side *a, struct side *b,
				 int gid_index)
{
	static const uint64_t ids[] = { TAKEN_ID_1, TAKEN_ID_2 };
	static const enum ibv_wc_status flushed[] = {
		IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR,
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	const char *who, *step;
	int fd = -1;

	if (!b_accepts(a, b, "taken_flush"))
		return;
	step = raw_accepted(a, b, gid_index, &fd, &who);
	if (!step) {
		who = "b:";
		/* After RTS: the receive engine takes them from the ring. */
		if (post_recv_at(b, TAKEN_ID_1, dst(b, 0), TAKEN_RECV) ||
		    post_recv_at(b, TAKEN_ID_2, dst(b, 8), TAKEN_RECV))
			step = "ibv_post_recv";
	}
	if (!step && raw_send_first_fpdu(fd)) {
		who = "raw client:";
		step = "sending the SEND's first FPDU";
	}
	if (!step && !taken_placed(b, vt_deadline_in(WAIT_MS))) {
		who = "b:";
		step = "the first FPDU's payload placed";
	}
	if (!step && ibv_modify_qp(b->qp, &err, IBV_QP_STATE)) {
		who = "b:";
		step = "modify_qp to ERROR";
	}
	if (step)
		vt_fail("taken_flush", "%s %s: %s", who, step, strerror(errno));
	else
		expect_wcs("taken_flush: a receive a SEND began to fill is flushed with its wr_id",
			   b, ids, flushed, 2);
	if (fd >= 0)
		raw_reset(fd);
}

/* debugfs tx_cut_next, which cuts a doorbell's next write (-S) */
static const char *cut_next_knob;

/* Arm debugfs tx_cut_next (@value 'Y'), or read it: 'Y', 'N' or 0 (error). */
static char cut_knob(char value)
{
	FILE *f = fopen(cut_next_knob, value ? "w" : "r");
	int c = 0;

	if (!f)
		return 0;
	if (value)
		c = fputc(value, f) == EOF ? 0 : value;
	else
		c = fgetc(f);
	if (fclose(f))
		c = 0;
	return c == EOF ? 0 : (char)c;
}

static const char LONE_MISSED[] = "missed";

/*
 * One signaled @opcode from a, of MSG bytes, with tx_cut_next armed, and
 * nothing posted after it (see top).  A SEND goes into a receive b posts
 * first.  Return: NULL if it went through whole, LONE_MISSED if it did
 * but its doorbell's write was not the one cut (a work item that was
 * still queued sent it), else what went wrong.
 */
static const char *lone_cut_one(struct side *a, struct side *b,
				enum ibv_wr_opcode opcode)
{
	const struct op op = { opcode, b->mr->rkey, dst(b, 1), true };
	struct ibv_wc wc;
	bool cut;

	memset(b->buf + DST_OFF + MSG, FILL_B, MSG);
	if (opcode == IBV_WR_SEND && post_recv_at(b, LONE_RECV_ID, dst(b, 1), MSG))
		return "b: ibv_post_recv failed";
	/* the last post's work items, if any, have run by then */
	usleep(LONE_SETTLE_MS * 1000);
	if (cut_knob('Y') != 'Y')
		return "cannot arm debugfs tx_cut_next";
	if (post_ops(a, &op, 1))
		return "a: ibv_post_send failed";
	if (vt_poll_cq_until(a->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1)
		return "no completion: the rest of the cut write never left";
	if (wc.status != IBV_WC_SUCCESS)
		return vt_wc_status_name(wc.status);
	cut = cut_knob(0) == 'N';
	if (!cut && cut_knob('N') != 'N')
		return "cannot disarm debugfs tx_cut_next";
	if (!landed(b, 1, FILL_A))
		return "the message is not whole at b";
	if (opcode == IBV_WR_SEND &&
	    (vt_poll_cq_until(b->cq, &wc, 1, vt_deadline_in(WAIT_MS)) != 1 ||
	     wc.wr_id != LONE_RECV_ID || wc.status != IBV_WC_SUCCESS))
		return "b's receive did not complete with success";
	return cut ? NULL : LONE_MISSED;
}

/* On new QPs: a lone post whose doorbell's write was cut (see top). */
static void scenario_lone_cut(struct side *a, struct side *b, int gid_index)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_SEND };
	static const char *const names[] = {
		"lone_cut: a lone WRITE whose doorbell's write was cut lands whole and completes",
		"lone_cut: a lone SEND whose doorbell's write was cut lands whole and completes",
	};
	const char *why;
	size_t i;
	int try;

	if (connect_pair(a, b, gid_index)) {
		vt_fail("lone_cut", "connect: %s", strerror(errno));
		return;
	}
	why = send_one(a, b, false);
	if (why) {
		vt_fail("lone_cut", "the first SEND: %s", why);
		return;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (try = 1; try <= LONE_TRIES; try++) {
			why = lone_cut_one(a, b, ops[i]);
			if (why != LONE_MISSED)
				break;
			vt_info("lone_cut: try %d: the work item sent the post, no cut", try);
		}
		if (why == LONE_MISSED)
			vt_fail(names[i], "no doorbell's write was cut in %d tries",
				LONE_TRIES);
		else if (why)
			vt_fail(names[i], "%s", why);
		else
			vt_pass("%s", names[i]);
	}
}

/* b's retries: PEER_LEFT_TIMEOUT and PEER_LEFT_RETRY, set in RTS. */
static int set_peer_left_retries(struct side *b)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.timeout = PEER_LEFT_TIMEOUT,
		.retry_cnt = PEER_LEFT_RETRY,
	};

	return ibv_modify_qp(b->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT);
}

/*
 * New QPs, b in RTS with PEER_LEFT_* retries, and a raw client that
 * asked for acknowledgements on b's connection, in *@fd: NULL, or the
 * step that failed, with *@who naming the side.
 */
static const char *peer_left_setup(struct side *a, struct side *b,
				   int gid_index, int *fd, const char **who)
{
	const char *step = raw_accepted_flags(a, b, gid_index, PD_F_ACK, fd,
					      who);

	if (step)
		return step;
	*who = "b:";
	return set_peer_left_retries(b) ? "modify_qp RTS to RTS" : NULL;
}

/*
 * The raw client's FIN, then all that b sends up to its own FIN, which
 * b's CM sends once it has acted on the client's: NULL, or what failed.
 */
static const char *raw_fin_and_drain(int fd)
{
	uint8_t buf[4096];
	ssize_t n;

	if (shutdown(fd, SHUT_WR))
		return "shutdown";
	do
		n = read(fd, buf, sizeof(buf));
	while (n > 0);
	return n ? "no FIN from b" : NULL;
}

/* b waits: in RTS, nothing completed, no event. */
static void check_b_waits(struct side *b, const char *name)
{
	struct ibv_wc wc;
	int state = vt_qp_state(b->qp);
	int n = ibv_poll_cq(b->cq, 1, &wc);
	int ev = b_qp_event(b, 0);

	vt_check(state == IBV_QPS_RTS && n == 0 && ev == -1, name,
		 "b in %s, %d completion(s) (%s), async event %d",
		 vt_qp_state_str(state), n,
		 n > 0 ? vt_wc_status_name(wc.status) : "-", ev);
}

/*
 * b's SENDs (wr_ids 0 and 1) fail with QP_FATAL once b's retries would
 * end: the oldest with RETRY_EXC_ERR, as InfiniBand reports the WR whose
 * retries ran out, and the other flushed.
 */
static void check_b_gives_up(struct side *b, long long since,
			     const char *name)
{
	static const uint64_t ids[] = { 0, 1 };
	static const enum ibv_wc_status failed[] = {
		IBV_WC_RETRY_EXC_ERR, IBV_WC_WR_FLUSH_ERR,
	};
	int ev = b_qp_event(b, WAIT_MS);
	long long took = vt_now_ms() - since;
	char wcs_name[160];

	vt_check(ev == IBV_EVENT_QP_FATAL && took >= PEER_LEFT_MIN_MS, name,
		 "async event %d after %lld ms, want QP_FATAL after %d ms or more",
		 ev, took, PEER_LEFT_MIN_MS);
	vt_info("%s: after %lld ms", name, took);
	snprintf(wcs_name, sizeof(wcs_name),
		 "%s: the first SEND exceeds its retries, the second is flushed",
		 name);
	expect_wcs(wcs_name, b, ids, failed, 2);
}

/* On new QPs: a SEND in flight when the peer leaves (see top). */
static void peer_left_in_flight(struct side *a, struct side *b,
				int gid_index)
{
	static const struct op send[] = {
		{ IBV_WR_SEND, 0, 0, true }, { IBV_WR_SEND, 0, 0, true },
	};
	const char *who, *step;
	long long t0 = 0;
	int fd = -1;

	step = peer_left_setup(a, b, gid_index, &fd, &who);
	if (!step && post_ops(b, send, 2)) {
		who = "b:";
		step = "ibv_post_send";
	}
	if (!step) {
		who = "raw client:";
		t0 = vt_now_ms();
		step = raw_fin_and_drain(fd);
	}
	if (step) {
		vt_fail("peer_left", "%s %s: %s", who, step, strerror(errno));
	} else {
		check_b_waits(b, "peer_left: a SEND the peer never acknowledged waits after its FIN");
		check_b_gives_up(b, t0, "peer_left: it fails when b's retries would end");
	}
	if (fd >= 0)
		close(fd);
}

/* On new QPs: a SEND posted after the peer left quietly (see top). */
static void peer_left_then_send(struct side *a, struct side *b,
				int gid_index)
{
	static const struct op send[] = {
		{ IBV_WR_SEND, 0, 0, true }, { IBV_WR_SEND, 0, 0, true },
	};
	const char *who, *step;
	long long t_rts, t_post = 0;
	int fd = -1, left;

	step = peer_left_setup(a, b, gid_index, &fd, &who);
	t_rts = vt_now_ms();
	if (!step) {
		who = "raw client:";
		step = raw_fin_and_drain(fd);
	}
	if (step) {
		vt_fail("peer_left_send", "%s %s: %s", who, step,
			strerror(errno));
		goto out;
	}
	check_b_waits(b, "peer_left_send: a FIN with nothing in flight leaves b in RTS");
	left = vt_ms_left(t_rts + PEER_LEFT_BOUND_MS);
	if (left > 0)
		usleep(left * 1000);
	check_b_waits(b, "peer_left_send: b's connection bound passing fails nothing");
	t_post = vt_now_ms();
	if (post_ops(b, send, 2)) {
		vt_fail("peer_left_send", "b: ibv_post_send: %s",
			strerror(errno));
		goto out;
	}
	check_b_waits(b, "peer_left_send: a SEND posted after the peer left waits");
	check_b_gives_up(b, t_post, "peer_left_send: it fails when b's retries would end");
out:
	if (fd >= 0)
		close(fd);
}

/* Both: a connection with acknowledgements whose peer left. */
static void scenario_peer_left(struct side *a, struct side *b, int gid_index)
{
	if (!b_accepts(a, b, "peer_left"))
		return;
	peer_left_in_flight(a, b, gid_index);
	peer_left_then_send(a, b, gid_index);
}

/*
 * Run the calling thread on @cpu only.  On a veth, b's receive engine
 * runs in the softirq on the CPU of a's post, so b's consumer must poll
 * on the other CPU to see the completion during the spin.
 */
static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * last_recv, busy_recv: b's consumer, which destroys b's QP, or moves it
 * to ERROR, at the completion of b's receive.
 */
struct destroyer {
	pthread_t thread;
	struct side *b;
	bool to_error;			/* ERROR, not destroy */
	enum ibv_wc_status status;	/* of the receive */
	long long start_ms;		/* when the destroy started */
	const char *why;		/* what went wrong, or NULL */
	atomic_bool polling;		/* on CPU 0, polling b's CQ */
};

/* Poll @s's CQ for the completion of WR @wr_id, skipping others. */
static bool poll_wr(struct side *s, uint64_t wr_id, struct ibv_wc *wc)
{
	long long deadline = vt_deadline_in(WAIT_MS);

	while (vt_poll_cq_until(s->cq, wc, 1, deadline) == 1)
		if (wc->wr_id == wr_id)
			return true;
	return false;
}

static void *destroyer_run(void *arg)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct destroyer *ds = arg;
	struct ibv_wc wc;

	if (pin_to_cpu(0)) {
		ds->why = "pinning b's consumer to CPU 0";
		atomic_store(&ds->polling, true);
		return NULL;
	}
	atomic_store(&ds->polling, true);
	if (!poll_wr(ds->b, LAST_RECV_ID, &wc)) {
		ds->why = "no receive completion";
		return NULL;
	}
	ds->status = wc.status;
	ds->start_ms = vt_now_ms();
	if (ds->to_error) {
		if (ibv_modify_qp(ds->b->qp, &err, IBV_QP_STATE))
			ds->why = "modify_qp to ERROR";
		return NULL;
	}
	if (ibv_destroy_qp(ds->b->qp)) {
		ds->why = "ibv_destroy_qp";
		return NULL;
	}
	ds->b->qp = NULL;
	return NULL;
}

/* b's consumer, started, polling on its CPU: NULL, or what went wrong. */
static const char *destroyer_start(struct destroyer *ds)
{
	if (pthread_create(&ds->thread, NULL, destroyer_run, ds))
		return "pthread_create";
	/* b's consumer must be on its CPU first, not behind a's spin */
	while (!atomic_load(&ds->polling))
		usleep(1000);
	return NULL;
}

/* a's SEND, WR 0, is in @wc: NULL if it succeeded, or what went wrong. */
static const char *a_send_status(const struct destroyer *ds, bool got,
				 const struct ibv_wc *wc, char *why, size_t len)
{
	if (ds->status != IBV_WC_SUCCESS)
		snprintf(why, len, "b's receive: %s",
			 vt_wc_status_name(ds->status));
	else if (!got)
		snprintf(why, len, "no completion of a's SEND");
	else if (wc->status != IBV_WC_SUCCESS)
		snprintf(why, len, "a's SEND: %s", vt_wc_status_name(wc->status));
	else
		return NULL;
	return why;
}

/* last_recv_round(): b's destroy came after the spin. */
static const char LAST_MISSED[] = "missed";

/*
 * A round's start, on new QPs: a first SEND, which waits until the stream
 * is up (a SEND posted before goes out from whichever CPU the connection
 * comes up on), then b's receive, and a's too if @recv_on_a, and b's
 * consumer polling.  NULL, or what went wrong.
 */
static const char *last_setup(struct side *a, struct side *b, int gid_index,
			      struct destroyer *ds, bool recv_on_a)
{
	if (connect_pair(a, b, gid_index))
		return "connecting the QPs failed";
	if (send_one(a, b, false))
		return "the first SEND failed";
	if (post_recv_at(b, LAST_RECV_ID, dst(b, 0), MSG) ||
	    (recv_on_a && post_recv_at(a, LAST_RECV_ID, dst(a, 0), MSG)))
		return "posting the receives failed";
	return destroyer_start(ds);
}

/*
 * One round of last_recv on new QPs: NULL, LAST_MISSED, or what went
 * wrong.  b's engine spins from the receive's completion, which comes
 * after the post, for LAST_DELAY_MS: a destroy that starts less than that
 * after the post surely came within the spin.
 */
static const char *last_recv_round(struct side *a, struct side *b,
				   int gid_index, char *why, size_t len)
{
	static const struct op send = { IBV_WR_SEND, 0, 0, true };
	struct destroyer ds = { .b = b };
	const char *step;
	long long posted;
	struct ibv_wc wc;
	bool got;

	step = last_setup(a, b, gid_index, &ds, false);
	if (step)
		return step;
	posted = vt_now_ms();
	if (post_ops(a, &send, 1)) {
		pthread_join(ds.thread, NULL);
		return "posting a's SEND failed";
	}
	got = poll_wr(a, 0, &wc);
	pthread_join(ds.thread, NULL);
	if (ds.why)
		return ds.why;
	vt_info("last_recv: b's destroy started %lld ms after the post%s",
		ds.start_ms - posted,
		ds.start_ms - posted >= LAST_DELAY_MS ?
		", past the spin: the window was missed" : "");
	if (ds.start_ms - posted >= LAST_DELAY_MS)
		return LAST_MISSED;
	return a_send_status(&ds, got, &wc, why, len);
}

/* busy_recv: b's SEND, posted from CPU 0 while a's consumer waits. */
struct b_poster {
	pthread_t thread;
	struct side *b;
	long long start_ms;
	atomic_bool started;
	int rv;
};

static void *b_poster_run(void *arg)
{
	static const struct op send = { IBV_WR_SEND, 0, 0, true };
	struct b_poster *bp = arg;

	bp->rv = pin_to_cpu(0);
	bp->start_ms = vt_now_ms();
	atomic_store(&bp->started, true);
	if (!bp->rv)
		bp->rv = post_ops(bp->b, &send, 1);
	return NULL;
}

/*
 * One round of busy_recv on new QPs: NULL, LAST_MISSED, or what went
 * wrong.  b's doorbell's run keeps b's engine LAST_DELAY_MS after its
 * write: b's ERROR that starts less than that after b's post surely came
 * while the run held it.
 */
static const char *busy_recv_round(struct side *a, struct side *b,
				   int gid_index, char *why, size_t len)
{
	static const struct op send = { IBV_WR_SEND, 0, 0, true };
	struct destroyer ds = { .b = b, .to_error = true };
	struct b_poster bp = { .b = b };
	const char *step;
	struct ibv_wc wc;
	bool got;

	step = last_setup(a, b, gid_index, &ds, true);
	if (step)
		return step;
	if (pthread_create(&bp.thread, NULL, b_poster_run, &bp)) {
		pthread_join(ds.thread, NULL);
		return "pthread_create";
	}
	while (!atomic_load(&bp.started))
		usleep(1000);
	usleep(BUSY_A_AFTER_MS * 1000);
	if (post_ops(a, &send, 1)) {
		pthread_join(bp.thread, NULL);
		pthread_join(ds.thread, NULL);
		return "posting a's SEND failed";
	}
	got = poll_wr(a, 0, &wc);
	pthread_join(bp.thread, NULL);
	pthread_join(ds.thread, NULL);
	if (bp.rv)
		return "b's SEND: posting it, or pinning its thread, failed";
	if (ds.why)
		return ds.why;
	vt_info("busy_recv: b's ERROR started %lld ms after b's post%s",
		ds.start_ms - bp.start_ms,
		ds.start_ms - bp.start_ms >= LAST_DELAY_MS ?
		", past the hold: the window was missed" : "");
	if (ds.start_ms - bp.start_ms >= LAST_DELAY_MS)
		return LAST_MISSED;
	return a_send_status(&ds, got, &wc, why, len);
}

typedef const char *last_round_fn(struct side *a, struct side *b,
				  int gid_index, char *why, size_t len);

/*
 * last_recv or busy_recv (@name, a vt_check() name; @knob, the debugfs
 * knob it needs): LAST_HITS rounds that hit the window must pass, in at
 * most LAST_TRIES.
 */
static void scenario_last(struct side *a, struct side *b, int gid_index,
			  last_round_fn *round_fn, const char *name,
			  const char *knob)
{
	const char *step = NULL;
	int round, hits = 0;
	char why[128];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || pin_to_cpu(1)) {
		vt_fail(name, "needs CPUs 0 and 1 (a's on 1, b's on 0): %s",
			strerror(errno));
		return;
	}
	for (round = 1; round <= LAST_TRIES && hits < LAST_HITS; round++) {
		step = round_fn(a, b, gid_index, why, sizeof(why));
		if (step == LAST_MISSED)
			continue;
		if (step)
			break;
		hits++;
	}
	if (step && step != LAST_MISSED)
		vt_fail(name, "round %d: %s", round, step);
	else
		vt_check(hits == LAST_HITS, name,
			 "%d of %d rounds hit the window: is debugfs %s %d?",
			 hits, round - 1, knob, LAST_DELAY_MS);
}

static void reset_bufs(struct side *a, struct side *b)
{
	memset(a->buf, FILL_A, BUF_SIZE);
	memset(b->buf, FILL_B, BUF_SIZE);
}

enum run_mode {
	RUN_ALL,
	RUN_DELAYED,	/* -D */
	RUN_FULL,	/* -F */
	RUN_CUT,	/* -C */
	RUN_TORN,	/* -T */
	RUN_LAST,	/* -L */
	RUN_HELD,	/* -H */
	RUN_KILLED,	/* -K */
	RUN_LONE_CUT,	/* -S KNOB */
};

static int run(const char *dev_a, const char *dev_b, int gid_index,
	       enum run_mode mode)
{
	void (*scenarios[])(struct side *, struct side *) = {
		scenario_acked, scenario_bad_rkey, scenario_no_access,
		scenario_foreign_recv, scenario_bad_recv,
	};
	struct side a = {}, b = {};
	size_t i;

	if (mode == RUN_KILLED) {
		if (side_open(&a, dev_a, gid_index, FILL_A))
			vt_fail("setup", "%s", strerror(errno));
		else
			scenario_killed(dev_b, &a, gid_index);
		goto out;
	}
	if (side_open(&a, dev_a, gid_index, FILL_A) ||
	    side_open(&b, dev_b, gid_index, FILL_B)) {
		vt_fail("setup", "%s", strerror(errno));
		goto out;
	}
	if (mode == RUN_DELAYED) {
		scenario_bind_race(&a, &b, gid_index);
		scenario_spoke(&a, &b, gid_index);
		goto out;
	}
	if (mode == RUN_CUT || mode == RUN_TORN) {
		bool torn = mode == RUN_TORN;
		const struct cut_kind term = {
			torn ? "torn_term" : "cut_term", true, torn
		};
		const struct cut_kind err = {
			torn ? "torn_err" : "cut_err", false, torn
		};

		reset_bufs(&a, &b);
		scenario_cut(&a, &b, gid_index, &term);
		scenario_cut(&a, &b, gid_index, &err);
		goto out;
	}
	if (mode == RUN_LAST) {
		reset_bufs(&a, &b);
		scenario_last(&a, &b, gid_index, last_recv_round,
			      "last_recv: b destroyed at its receive's completion, while its engine spins, acknowledges the SEND: it completes with success",
			      "rx_send_done_delay_ms");
		goto out;
	}
	if (mode == RUN_HELD) {
		reset_bufs(&a, &b);
		scenario_last(&a, &b, gid_index, busy_recv_round,
			      "busy_recv: b moved to ERROR at its receive's completion, while a run past its acknowledgement holds b's engine, acknowledges the SEND: it completes with success",
			      "tx_run_hold_ms");
		goto out;
	}
	if (mode == RUN_LONE_CUT) {
		reset_bufs(&a, &b);
		scenario_lone_cut(&a, &b, gid_index);
		goto out;
	}
	if (mode == RUN_FULL) {
		reset_bufs(&a, &b);
		scenario_full_socket(&a, &b, gid_index);
		scenario_full_fin(&a, &b, gid_index);
		goto out;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		reset_bufs(&a, &b);
		if (connect_pair(&a, &b, gid_index)) {
			vt_fail("connect", "%s", strerror(errno));
			break;
		}
		scenarios[i](&a, &b);
	}
	if (i == sizeof(scenarios) / sizeof(scenarios[0])) {
		scenario_restate(&a, &b, gid_index);
		scenario_reset_again(&a, &b, gid_index);
		scenario_reset_connecting(&a, &b, gid_index);
		scenario_abandoned(&a, &b, gid_index);
		scenario_swapped(&a, &b, gid_index);
		reset_bufs(&a, &b);
		scenario_full_socket(&a, &b, gid_index);
		scenario_full_fin(&a, &b, gid_index);
		reset_bufs(&a, &b);
		scenario_taken_flush(&a, &b, gid_index);
		scenario_peer_left(&a, &b, gid_index);
	}
out:
	side_close(&a);
	side_close(&b);
	return vt_finish();
}

int main(int argc, char **argv)
{
	const char *dev_a = NULL, *dev_b = NULL;
	enum run_mode mode = RUN_ALL;
	int gid_index = 1, c;

	while ((c = getopt(argc, argv, "a:b:g:CDFHKLS:T")) != -1) {
		switch (c) {
		case 'a':
			dev_a = optarg;
			break;
		case 'b':
			dev_b = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'D':
			mode = RUN_DELAYED;
			break;
		case 'F':
			mode = RUN_FULL;
			break;
		case 'C':
			mode = RUN_CUT;
			break;
		case 'T':
			mode = RUN_TORN;
			break;
		case 'K':
			mode = RUN_KILLED;
			break;
		case 'L':
			mode = RUN_LAST;
			break;
		case 'H':
			mode = RUN_HELD;
			break;
		case 'S':
			mode = RUN_LONE_CUT;
			cut_next_knob = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!dev_a || !dev_b) {
		fprintf(stderr,
			"usage: %s -a DEV_A -b DEV_B [-g GID] [-C | -D | -F | -H | -K | -L | -S | -T]\n",
			argv[0]);
		return 2;
	}
	/* a run the VM test kills still shows how far it came */
	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_start(120);
	return run(dev_a, dev_b, gid_index, mode);
}
