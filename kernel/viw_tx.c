// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the transmit engine.
 *
 * One work item per QP takes WQEs from the send queue, cuts them into
 * FPDUs of at most MULPDU bytes and writes them to the TCP socket, up to
 * 64 KiB in one write (struct viw_tx_batch): the FPDUs of one message,
 * and while more WQEs are posted, whole small messages too.  A
 * doorbell that finds the engine idle runs it in the caller's context
 * instead (viw_tx_doorbell()), as long as the socket has room, and then
 * runs the engines its own run kicked (struct viw_tx_chain); a stream of
 * small messages goes to the work item on another CPU (viw_tx_hand_off()).
 * RDMA READ requests from the peer are answered between WQEs.  The engine
 * copies each WQE once and checks every local STag it names before a byte
 * is sent; a bad WQE completes in error and takes the QP to ERROR.
 *
 * Sends block while the socket buffer is full.  Closing or aborting the
 * connection shuts the socket down, which ends any blocked send.
 */
#include <linux/bvec.h>
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "viw_engine.h"
#include "viw_trace.h"

/* FPDUs one run of the work item sends before it lets others run. */
#define VIW_TX_BUDGET		64

/* Doorbells after a first, none answered by the peer, that make a stream. */
#define VIW_TX_STREAK		2
/* A stream whose hand-offs do not batch tries one again this often. */
#define VIW_TX_PROBE		16

/*
 * Messages shorter than this stream on another CPU (viw_tx_hand_off()):
 * there the per-segment work that batching saves outweighs what running
 * on the caller's CPU gains.  Measured with ib_write_bw in the test VM: at
 * 4 KiB the hand-off doubled the rate, at 8 KiB it gained on a plain veth
 * and lost a tenth with receive steering, at 16 KiB and more it lost.
 */
#define VIW_TX_SMALL		SZ_8K

/* Layout of qp->eng->tx_buf, one page. */
#define VIW_TX_HDR_OFF		0
#define VIW_TX_TRAILER_OFF	128
#define VIW_TX_INLINE_OFF	192

static struct workqueue_struct *viw_tx_wq;

/*
 * The engine runs on the CPU that kicked it, at high priority, as a NIC's
 * transmit would: a READ request, an ACK that opened the window or a
 * doorbell that found the socket full kicks it from the softirq or process
 * whose cache holds the QP.  A worker of an unbound queue may wake on
 * another CPU, a cross-CPU wake-up each time; at normal priority a poller
 * spinning on the same CPU would hold it off for a time slice.  The budget
 * (VIW_TX_BUDGET) makes a long run give the CPU back.
 */
int viw_tx_init(void)
{
	viw_tx_wq = alloc_workqueue("viw_tx", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	return viw_tx_wq ? 0 : -ENOMEM;
}

void viw_tx_exit(void)
{
	destroy_workqueue(viw_tx_wq);
}

/*
 * Kicks that a doorbell's run causes, run in its own context.
 *
 * A doorbell's run writes to the socket in process context, and on a veth
 * or loopback path the softirq that delivers those segments runs on top
 * of it, up to the peer QP's receive engine.  A READ request delivered
 * there kicks the peer's engine to send the response; a response kicks
 * the requester's engine if a WQE waits for the ORQ.  Queued, the work
 * item would wake a worker, and the switch to it and back costs a READ
 * more than sending the response does.  The run that caused the kick is
 * about to return anyway: it notes the QP, with a reference, and once it
 * has let go of its own tx_lock (two are never held at once) it runs
 * each noted engine as a doorbell would (viw_tx_run_direct()), without
 * blocking in the socket, and queues the work item for what is left.
 *
 * Only doorbells own a context: their runs do not wait for the socket,
 * and one that must (viw_tx_wait_direct()) first hands what it noted to
 * the work items, so a noted engine waits for at most one run and never
 * for another QP's peer.  A work item's run may block on a peer that does
 * not read; its kicks are queued.
 *
 * One context per CPU.  A doorbell takes the one of the CPU it starts on,
 * if no other run holds it, and keeps it for its whole run, even if the
 * scheduler moves it to another CPU meanwhile: pinning the run to its CPU
 * (migrate_disable()) cost more than the kicks it kept local, whenever
 * the run was switched out.  A kick is noted only in the owner's own
 * context on the context's CPU (viw_tx_chain_note()), so only the owner
 * and the softirqs on top of it there touch the context, and
 * local_bh_disable() keeps those out.  Once moved, the owner's kicks go to
 * the work items.
 */
#define VIW_TX_CHAIN_QPS	8
#define VIW_TX_CHAIN_ROUNDS	4

struct viw_tx_chain {
	struct task_struct *owner;
	unsigned int nr;
	struct viw_qp *qp[VIW_TX_CHAIN_QPS];
};

static DEFINE_PER_CPU(struct viw_tx_chain, viw_tx_chain);

static bool viw_tx_chain_has(struct viw_tx_chain *chain, struct viw_qp *qp)
{
	unsigned int i;

	for (i = 0; i < chain->nr; i++)
		if (chain->qp[i] == qp)
			return true;
	return false;
}

/* Note @qp if the kick comes from the owner of this CPU's context. */
static bool viw_tx_chain_note(struct viw_qp *qp)
{
	struct viw_tx_chain *chain;
	bool noted = false;

	if (in_hardirq() || in_nmi())
		return false;
	local_bh_disable();
	chain = this_cpu_ptr(&viw_tx_chain);
	if (READ_ONCE(chain->owner) == current) {
		if (viw_tx_chain_has(chain, qp))
			noted = true;
		else if (chain->nr < VIW_TX_CHAIN_QPS &&
			 refcount_inc_not_zero(&qp->ref)) {
			chain->qp[chain->nr++] = qp;
			noted = true;
		}
	}
	local_bh_enable();
	return noted;
}

void viw_tx_kick(struct viw_qp *qp)
{
	if (!viw_tx_chain_note(qp))
		queue_work(viw_tx_wq, &qp->tx_work);
}

/*
 * Start collecting the kicks of a doorbell's run.  Returns the context if
 * the caller owns it now, or NULL if another task does (one that was
 * preempted in its run): that run's kicks then stay its own, and this
 * run's go to the work items.  Other CPUs read the owner when they look
 * for their own (viw_tx_chain_mine()).
 */
static struct viw_tx_chain *viw_tx_chain_begin(void)
{
	struct viw_tx_chain *chain;

	local_bh_disable();
	chain = this_cpu_ptr(&viw_tx_chain);
	/* Pairs with the release in viw_tx_chain_end(), maybe on another CPU. */
	if (smp_load_acquire(&chain->owner))
		chain = NULL;
	else
		WRITE_ONCE(chain->owner, current);
	local_bh_enable();
	return chain;
}

/*
 * Take the noted QPs out of the context, into @qps; returns how many.
 * The caller has BHs disabled: a softirq that kicks a QP on the
 * context's CPU notes it there (viw_tx_chain_note()).
 */
static unsigned int viw_tx_chain_take_bh_off(struct viw_tx_chain *chain,
					     struct viw_qp **qps)
{
	unsigned int nr = chain->nr;

	memcpy(qps, chain->qp, nr * sizeof(*qps));
	chain->nr = 0;
	return nr;
}

/* Leave @nr taken QPs to their work items. */
static void viw_tx_chain_queue(struct viw_qp **qps, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		queue_work(viw_tx_wq, &qps[i]->tx_work);
		viw_qp_put(qps[i]);
	}
}

/* The context the caller owns, on whichever CPU; NULL if none. */
static struct viw_tx_chain *viw_tx_chain_mine(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct viw_tx_chain *chain = per_cpu_ptr(&viw_tx_chain, cpu);

		if (READ_ONCE(chain->owner) == current)
			return chain;
	}
	return NULL;
}

/*
 * The owner is about to sleep: the work items run what it noted, so that
 * no engine waits for the owner's socket.  A rare path, which may look
 * through every CPU's context.
 */
static void viw_tx_chain_hand_over(void)
{
	struct viw_tx_chain *chain = viw_tx_chain_mine();
	struct viw_qp *qps[VIW_TX_CHAIN_QPS];
	unsigned int nr;

	if (!chain)
		return;
	local_bh_disable();
	nr = viw_tx_chain_take_bh_off(chain, qps);
	local_bh_enable();
	viw_tx_chain_queue(qps, nr);
}

static bool viw_tx_run_direct(struct viw_qp *qp);

/*
 * Run one noted engine here.  A QP that is not in RTS, before or after
 * the run, gets its work item, which sends a TERMINATE (viw_tx_terminate());
 * so does an engine with more to do.
 */
static void viw_tx_chain_run(struct viw_qp *qp)
{
	if (viw_qp_tx_open(qp) && viw_tx_run_direct(qp) &&
	    viw_qp_tx_open(qp)) {
		viw_count(qp->vdev, VIW_CNT_TX_CHAINED_RUNS, 1);
		return;
	}
	queue_work(viw_tx_wq, &qp->tx_work);
}

/*
 * Run the engines the owner's run kicked, for a few rounds, then leave the
 * rest to the work items.  The look that finds nothing noted gives the
 * context up at once, so that no kick is noted after it.  Out of line:
 * most doorbells kick nothing, and need no room for the QPs.
 */
static noinline void viw_tx_chain_run_noted(struct viw_tx_chain *chain)
{
	struct viw_qp *qps[VIW_TX_CHAIN_QPS];
	unsigned int i, nr, round;

	for (round = 0; ; round++) {
		local_bh_disable();
		nr = viw_tx_chain_take_bh_off(chain, qps);
		if (!nr || round == VIW_TX_CHAIN_ROUNDS) {
			/* the take is done before the next owner notes */
			smp_store_release(&chain->owner, NULL);
		}
		local_bh_enable();
		if (round == VIW_TX_CHAIN_ROUNDS) {
			viw_tx_chain_queue(qps, nr);
			return;
		}
		if (!nr)
			return;
		for (i = 0; i < nr; i++) {
			viw_tx_chain_run(qps[i]);
			viw_qp_put(qps[i]);
		}
	}
}

/*
 * The owner's run is over, its tx_lock released: run what it kicked, or
 * give the context up at once if it kicked nothing, so that no kick is
 * noted after the look.  A lone doorbell pays that one look.
 */
static void viw_tx_chain_end(struct viw_tx_chain *chain)
{
	bool noted;

	if (!chain)
		return;
	local_bh_disable();
	noted = chain->nr;
	if (!noted) {
		/* the look is done before the next owner notes */
		smp_store_release(&chain->owner, NULL);
	}
	local_bh_enable();
	if (noted)
		viw_tx_chain_run_noted(chain);
}

static void viw_bvec_virt(struct bio_vec *bv, void *p, u32 len)
{
	bvec_set_page(bv, virt_to_page(p), len, offset_in_page(p));
}

static void viw_put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static u32 viw_crc_bvec(u32 crc, const struct bio_vec *bv, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		void *p = kmap_local_page(bv[i].bv_page);

		crc = crc32c(crc, p + bv[i].bv_offset, bv[i].bv_len);
		kunmap_local(p);
	}
	return crc;
}

/*
 * For tests, through debugfs tx_spill_fail (false, the default): every
 * spill's copy fails to be allocated, as when the poster's memory cgroup
 * is at its limit (tests/functional/viw_remote_err.c -T).
 */
static bool viw_tx_spill_fail;

bool *viw_tx_spill_fail_knob(void)
{
	return &viw_tx_spill_fail;
}

/*
 * The caller's context (viw_tx_doorbell()) must not wait for the peer to
 * read, and the stream must not stop halfway through an FPDU.  Each run
 * starts only when the socket has room for its batch with a margin
 * (viw_tx_room()), but TCP may still take part of a write and refuse the
 * rest: the skbs cost more than their bytes, and tcp_notsent_lowat
 * refuses a new skb while the bytes not yet sent exceed it, long before
 * the send buffer is full.  The rest is then copied out, for the work
 * item to write before anything else (viw_tx_write_spill()).  The WQEs
 * whose bytes it holds may complete, as their buffers are no longer read;
 * until it is written, every write of the run goes after it, and the run
 * stops at its next step (viw_tx_room()).  Returns false if the copy
 * cannot be allocated.
 */
static bool viw_tx_spill(struct viw_qp *qp, struct msghdr *msg)
{
	struct viw_engine *eng = qp->eng;
	size_t len = msg_data_left(msg);
	u8 *spill;

	if (READ_ONCE(viw_tx_spill_fail))
		return false;
	/* the poster's memory cgroup pays for it, as for its rings */
	spill = kvmalloc(eng->tx_spill_len + len,
			 GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!spill)
		return false;
	if (eng->tx_spill)
		memcpy(spill, eng->tx_spill, eng->tx_spill_len);
	/* The iterator's pieces are kernel pages: the copy cannot fall short. */
	if (WARN_ON_ONCE(copy_from_iter(spill + eng->tx_spill_len, len,
					&msg->msg_iter) != len)) {
		kvfree(spill);
		return false;
	}
	if (!eng->tx_spill)
		viw_count(qp->vdev, VIW_CNT_TX_SPILLS, 1);
	kvfree(eng->tx_spill);
	eng->tx_spill = spill;
	eng->tx_spill_len += len;
	return true;
}

/*
 * The rare case where the rest of a short write cannot be copied: retry it
 * once a tick, killably, until the QP leaves RTS.  Meanwhile the QP layer
 * must not wait for tx_lock (viw_qp_lock_tx_bounded()), as for the work
 * item's waits.
 */
static int viw_tx_wait_direct(struct viw_qp *qp)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	WRITE_ONCE(qp->tx_waiting_room, true);
	viw_tx_chain_hand_over();
	schedule_timeout_killable(1);
	return 0;
}

/*
 * The work item found the socket full: it waits in it from now on, with
 * tx_lock held, until the peer reads or the connection is aborted.  The
 * flag tells the QP layer not to wait for tx_lock meanwhile
 * (viw_qp_lock_tx_bounded()).
 */
static void viw_tx_wait_room(struct viw_qp *qp, struct msghdr *msg)
{
	WRITE_ONCE(qp->tx_waiting_room, true);
	msg->msg_flags &= ~MSG_DONTWAIT;
}

/*
 * For tests, through debugfs tx_short_delay_ms (0, the default: no wait):
 * how long a doorbell's run waits, tx_lock held, after TCP refused part of
 * its write and before it looks at the QP's state, so that a test can
 * take the QP out of RTS surely in that window
 * (tests/functional/viw_remote_err.c -C).  At most a second.
 */
static u32 viw_tx_short_delay_ms;

u32 *viw_tx_short_delay_knob(void)
{
	return &viw_tx_short_delay_ms;
}

/*
 * For tests, through debugfs tx_cut_next (false, the default): the next
 * write of a doorbell's run takes only the first half of its bytes, and
 * the rest comes back refused, as from a socket that filled up meanwhile;
 * the knob then reads false again.  A lone post can so leave a spill
 * that no later post writes (tests/functional/viw_remote_err.c -S): on a
 * veth, TCP refuses part of a write that passed viw_tx_room() only when
 * its memory accounting says no, which no test can bring about.
 */
static bool viw_tx_cut_next;

bool *viw_tx_cut_next_knob(void)
{
	return &viw_tx_cut_next;
}

/* sock_sendmsg(), but with tx_cut_next armed a doorbell's write is cut. */
static int viw_tx_sock_write(struct viw_qp *qp, struct msghdr *msg)
{
	size_t left = msg_data_left(msg);
	size_t cut = left - left / 2;
	int rv;

	if (likely(!READ_ONCE(viw_tx_cut_next)) || !qp->tx_direct ||
	    left < 2 || !xchg(&viw_tx_cut_next, false))
		return sock_sendmsg(qp->sock, msg);
	iov_iter_truncate(&msg->msg_iter, left / 2);
	rv = sock_sendmsg(qp->sock, msg);
	iov_iter_reexpand(&msg->msg_iter, msg_data_left(msg) + cut);
	return rv < 0 ? rv : -EAGAIN;
}

/*
 * Write all of @msg's iterator to the socket, waiting for room as needed.
 * Each write tries without waiting first, so that a wait is known.  In the
 * caller's context the rest of a short write is spilled (viw_tx_spill())
 * if @may_spill.  Nothing is written on a stream torn inside an FPDU
 * (viw_tx_cut()): an FPDU, ACK or TERMINATE would reach the peer as the
 * rest of the cut one.
 */
static int viw_tx_write(struct viw_qp *qp, struct msghdr *msg, bool may_spill)
{
	int rv = 0;

	if (qp->eng->tx_torn)
		return -ECONNABORTED;

	msg->msg_flags |= MSG_DONTWAIT;
	while (msg_data_left(msg)) {
		rv = viw_tx_sock_write(qp, msg);
		if (rv == -EAGAIN || rv == -EINTR || rv == -ERESTARTSYS) {
			rv = 0;
			/*
			 * The work item finishes its FPDUs even when the QP
			 * stopped meanwhile: a TERMINATE may follow them.
			 */
			if (!qp->tx_direct) {
				viw_tx_wait_room(qp, msg);
				continue;
			}
			viw_test_delay(&viw_tx_short_delay_ms);
			if (!viw_qp_tx_open(qp))
				return -ECONNABORTED;
			if (may_spill && viw_tx_spill(qp, msg))
				break;
			if (viw_tx_wait_direct(qp))
				return -EINTR;
			continue;
		}
		if (rv <= 0) {
			rv = rv ? rv : -EPIPE;
			break;
		}
		rv = 0;
	}
	WRITE_ONCE(qp->tx_waiting_room, false);
	return rv;
}

/*
 * Write what TCP refused a doorbell's run (viw_tx_spill()), before
 * anything else; with @wait false, only what the socket takes at once.
 * If the write stops short, what it wrote is dropped from the spill, so
 * that a retry, for a TERMINATE, goes on where it stopped.
 */
static int viw_tx_write_spill(struct viw_qp *qp, bool wait)
{
	struct viw_engine *eng = qp->eng;
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec kv = { .iov_base = eng->tx_spill, .iov_len = eng->tx_spill_len };
	size_t left;
	int rv;

	if (!eng->tx_spill || !qp->sock)
		return 0;
	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, kv.iov_len);
	if (wait) {
		rv = viw_tx_write(qp, &msg, false);
	} else {
		msg.msg_flags |= MSG_DONTWAIT;
		rv = sock_sendmsg(qp->sock, &msg);
		rv = rv < 0 && rv != -EAGAIN ? rv : 0;
	}
	left = msg_data_left(&msg);
	if (!left) {
		viw_engine_drop_spill(qp);
		return rv;
	}
	memmove(eng->tx_spill, eng->tx_spill + eng->tx_spill_len - left, left);
	eng->tx_spill_len = left;
	return rv ? rv : -EPIPE;
}

/*
 * Write @msg whole, after any spill.  A doorbell's run appends it to the
 * spill instead: nothing may overtake what TCP refused before.
 */
static int viw_tx_sendmsg(struct viw_qp *qp, struct msghdr *msg)
{
	int rv;

	if (qp->eng->tx_spill) {
		if (qp->tx_direct && viw_tx_spill(qp, msg))
			return 0;
		rv = viw_tx_write_spill(qp, true);
		if (rv)
			return rv;
	}
	return viw_tx_write(qp, msg, qp->tx_direct);
}

/**
 * viw_tx_write_owed - write a spill, as much as the socket takes at once
 * @qp: the QP, tx_lock held
 *
 * A spill may hold the rest of an FPDU (viw_tx_cut()), which must reach
 * the peer before a FIN does.  A torn stream can never end whole.
 * Return: true if nothing is owed: the stream is between two FPDUs.
 */
bool viw_tx_write_owed(struct viw_qp *qp)
{
	lockdep_assert_held(&qp->tx_lock);
	viw_tx_write_spill(qp, false);
	return !qp->eng->tx_spill && !qp->eng->tx_torn;
}

/*
 * Room in the socket for the batch not yet written and two of the largest
 * FPDUs: what the send buffer charges for a segment (sk_wmem_queued counts
 * the skb overhead too) stays below that, so a non-blocking write of the
 * batch goes in whole.
 */
static inline bool viw_tx_room(struct viw_qp *qp)
{
	struct sock *sk = qp->sock->sk;

	return !qp->eng->tx_spill && sk_stream_memory_free(sk) &&
	       sk_stream_wspace(sk) >= (int)qp->eng->tx_batch->bytes +
				       2 * (int)viw_fpdu_len(qp->mulpdu);
}

/* Release the MRs of the messages the batch held (viw_tx_hold_last()). */
static noinline void viw_tx_batch_put_mrs(struct viw_tx_batch *b)
{
	u32 i;

	for (i = 0; i < b->nr_mr; i++)
		viw_mr_put(b->mr[i]);
	b->nr_mr = 0;
}

/*
 * Empty the batch, and release the MRs of the messages it held.  Their
 * SQ indexes stay in held_index[] for viw_tx_write_batch() to complete.
 */
static void viw_tx_batch_clear(struct viw_tx_batch *b)
{
	if (unlikely(b->nr_mr))
		viw_tx_batch_put_mrs(b);
	b->held = 0;
	b->fpdus = 0;
	b->nbv = 0;
	b->bytes = 0;
	b->payload = 0;
}

/*
 * A doorbell's write stopped while TCP refused part of it: the QP left
 * RTS (-ECONNABORTED), or the poster got a fatal signal while no spill
 * could be allocated (-EINTR).  The run stops, and its WQE is flushed.
 * What follows in the stream, a TERMINATE or a FIN, must still come
 * between two FPDUs, or the peer reads it as the rest of the FPDU that
 * was cut.  So the rest of that FPDU is spilled, and written first
 * (viw_tx_work(), viw_tx_write_owed()); the FPDUs after it are dropped.
 * If even that copy cannot be allocated, the stream is torn: nothing more
 * is sent on it, and it ends with a reset (viw_qp_stream_whole()).
 */
static void viw_tx_cut(struct viw_qp *qp, const struct viw_tx_batch *b,
		       struct msghdr *msg)
{
	u32 done = b->bytes - msg_data_left(msg);
	u32 i = 0, start = 0;

	while (i < b->fpdus && b->end[i] <= done)
		start = b->end[i++];
	if (i == b->fpdus || start == done)
		return;
	iov_iter_truncate(&msg->msg_iter, b->end[i] - done);
	if (viw_tx_spill(qp, msg))
		return;
	qp->eng->tx_torn = true;
	ibdev_warn_ratelimited(qp->ibqp.device,
			       "QP %u: stream cut inside an FPDU, to be reset\n",
			       qp->ibqp.qp_num);
}

/* The batch is in the socket: complete the @held messages it held. */
static noinline void viw_tx_complete_held(struct viw_qp *qp, u32 held)
{
	u32 i;

	/* with acknowledgements, they complete on the peer's */
	if (READ_ONCE(qp->peer_ack))
		return;
	for (i = 0; i < held; i++)
		viw_sq_complete(qp, qp->eng->tx_batch->held_index[i],
				VIW_CQE_SUCCESS);
}

/*
 * Write the batch to the socket, whole; it is empty afterwards.  While
 * more of the message follows, or another WQE is posted already, the
 * write says MSG_MORE: TCP then fills its segments up instead of sending
 * one per WQE, which on a busy QP saves most of the per-packet work on
 * both hosts.  The run pushes at its end what the last write held back
 * (viw_tx_push()).
 */
static int viw_tx_write_batch(struct viw_qp *qp)
{
	struct viw_tx_batch *b = qp->eng->tx_batch;
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	u32 fpdus = b->fpdus, payload = b->payload, held = b->held;
	int rv;

	/* a guess: a wrong one costs only a push (viw_tx_push()) */
	qp->eng->tx_corked = qp->eng->tx_may_cork && !b->more &&
			     viw_sq_posted_hint(qp);
	if (b->more || qp->eng->tx_corked)
		msg.msg_flags |= MSG_MORE;
	/* The iterator's length is the sum of what bv[] describes. */
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, b->bv, b->nbv, b->bytes);
	rv = viw_tx_sendmsg(qp, &msg);
	if (rv == -ECONNABORTED || rv == -EINTR)
		viw_tx_cut(qp, b, &msg);
	viw_tx_batch_clear(b);
	if (rv)
		return rv;
	viw_count(qp->vdev, VIW_CNT_TX_FPDUS, fpdus);
	viw_count(qp->vdev, VIW_CNT_TX_BYTES, payload);
	/* After a failed write the QP fails, and the flush completes them. */
	if (unlikely(held))
		viw_tx_complete_held(qp, held);
	return 0;
}

/*
 * Every run ends with a flush, most of them of an empty batch: that look
 * is inline, and the msghdr (zeroed on the stack by the kernel's
 * INIT_STACK_ALL_ZERO) is built only for a batch to write.
 */
static inline int viw_tx_flush(struct viw_qp *qp)
{
	return qp->eng->tx_batch->fpdus ? viw_tx_write_batch(qp) : 0;
}

/* Does an FPDU of @npay pieces and @len bytes still fit in the batch? */
static bool viw_tx_batch_fits(const struct viw_tx_batch *b, int npay, u32 len)
{
	return b->fpdus < VIW_TX_BATCH_FPDUS &&
	       b->nbv + npay + 2 <= VIW_TX_BATCH_BVEC &&
	       b->bytes + len <= VIW_TX_BATCH_BYTES;
}

/**
 * viw_tx_fpdu - frame one DDP segment and add it to the batch
 * @qp: the QP, tx_lock held
 * @hdr_len: DDP/RDMAP header length, the header is at tx_buf + 2
 * @npay: number of payload pieces, already in qp->eng->tx_bv[1..npay]
 * @paylen: payload bytes, exactly what those pieces describe
 * @more: more FPDUs of the message follow at once, and until they are
 *	written the payload pieces stay valid (not the tx_buf's inline data)
 *
 * Only an FPDU with @more waits in the batch: any other is written at
 * once, with those before it, so that nothing waits once a message or
 * a control message is complete.
 */
static int viw_tx_fpdu(struct viw_qp *qp, u32 hdr_len, int npay, u32 paylen,
		       bool more)
{
	struct viw_tx_batch *b = qp->eng->tx_batch;
	u8 *hdr = qp->eng->tx_buf + VIW_TX_HDR_OFF;
	u8 *trailer = qp->eng->tx_buf + VIW_TX_TRAILER_OFF;
	u32 ulpdu = hdr_len + paylen;
	u32 pad = viw_mpa_pad(ulpdu);
	u32 len = viw_fpdu_len(ulpdu);
	struct page *page;
	int i, rv;

	if (WARN_ON_ONCE(npay > VIW_TX_MAX_PIECES))
		return -EINVAL;
	if (!viw_tx_batch_fits(b, npay, len)) {
		rv = viw_tx_flush(qp);
		if (rv)
			return rv;
	}
	/* Its payload copy is in tx_bounce, which the next FPDU reuses. */
	more = more && !qp->eng->tx_bounced &&
	       VIW_MPA_LEN_SIZE + hdr_len <= VIW_TX_SLOT_TRAILER;
	qp->eng->tx_bounced = false;
	if (more) {
		u8 *slot = b->slots + b->fpdus * VIW_TX_SLOT;

		/* up to the trailer, a constant: moves, not a string move */
		memcpy(slot + VIW_MPA_LEN_SIZE, hdr + VIW_MPA_LEN_SIZE,
		       VIW_TX_SLOT_TRAILER - VIW_MPA_LEN_SIZE);
		hdr = slot;
		trailer = slot + VIW_TX_SLOT_TRAILER;
	}
	viw_put_be16(hdr, ulpdu);
	memset(trailer, 0, pad + VIW_MPA_CRC_SIZE);
	if (qp->crc) {
		u32 crc = crc32c(VIW_CRC_INIT, hdr, VIW_MPA_LEN_SIZE + hdr_len);

		crc = viw_crc_bvec(crc, qp->eng->tx_bv + 1, npay);
		crc = crc32c(crc, trailer, pad);
		viw_put_crc(trailer + pad, viw_crc_final(crc));
	}

	/* header and trailer share a page: tx_buf's, or the batch's slots' */
	page = more ? b->slots_page : qp->eng->tx_buf_page;
	bvec_set_page(&b->bv[b->nbv++], page, VIW_MPA_LEN_SIZE + hdr_len,
		      offset_in_page(hdr));
	/* most FPDUs have a piece or two: no call to memcpy() for them */
	for (i = 1; i <= npay; i++)
		b->bv[b->nbv++] = qp->eng->tx_bv[i];
	bvec_set_page(&b->bv[b->nbv++], page, pad + VIW_MPA_CRC_SIZE,
		      offset_in_page(trailer));
	b->bytes += len;
	b->end[b->fpdus++] = b->bytes;
	b->payload += paylen;
	b->more = more;
	viw_count_max(qp->vdev, VIW_HWM_TX_PAYLOAD, paylen);
	viw_count_max(qp->vdev, VIW_HWM_TX_PIECES, npay);
	return more ? 0 : viw_tx_flush(qp);
}

/*
 * Send a zero-length message on its own: the MPA peer-to-peer RTR.
 * tx_lock held, by viw_qp_bind_stream().
 */
int viw_tx_send_rtr(struct viw_qp *qp, u8 rtr)
{
	struct viw_ddp_hdr h = { .last = true };
	int len, rv;

	lockdep_assert_held(&qp->tx_lock);
	switch (rtr) {
	case VIW_RTR_WRITE0:
		h.opcode = VIW_RDMAP_WRITE;
		h.tagged = true;
		break;
	case VIW_RTR_READ0:
		h.opcode = VIW_RDMAP_READ_REQ;
		h.qn = VIW_QN_READ_REQ;
		h.msn = qp->eng->tx_msn_rreq;
		break;
	default:
		h.opcode = VIW_RDMAP_SEND;
		h.qn = VIW_QN_SEND;
		h.msn = qp->eng->tx_msn_send;
		break;
	}

	len = viw_ddp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE, VIW_MAX_HDR_LEN,
			     &h);
	if (len > 0 && rtr == VIW_RTR_READ0) {
		struct viw_read_req rr = {};

		viw_read_req_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE + len, &rr);
		len += VIW_RDMAP_READ_REQ_LEN;
		if (!viw_orq_push_internal(qp))
			len = -ENOSPC;
	}
	rv = len < 0 ? len : viw_tx_fpdu(qp, len, 0, 0, false);
	if (!rv && rtr == VIW_RTR_READ0)
		qp->eng->tx_msn_rreq++;
	else if (!rv && rtr == VIW_RTR_SEND0)
		qp->eng->tx_msn_send++;
	return rv;
}

/*
 * Let go of the MRs of the WQE in tx: hand them to the batch @b, which
 * holds them until it is written (viw_tx_hold_last()), or without @b
 * release them.
 */
static void viw_tx_pass_mrs(struct viw_tx_wqe *tx, struct viw_tx_batch *b)
{
	int i;

	for (i = 0; i < tx->nr_mr; i++) {
		if (!tx->mr[i])
			continue;
		if (b)
			b->mr[b->nr_mr++] = tx->mr[i];
		else
			viw_mr_put(tx->mr[i]);
		tx->mr[i] = NULL;
	}
	tx->nr_mr = 0;
}

static void viw_tx_release_mrs(struct viw_tx_wqe *tx)
{
	viw_tx_pass_mrs(tx, NULL);
}

/* Forget the WQE in progress (the QP left RTS; flush completes it). */
void viw_tx_abort(struct viw_qp *qp)
{
	/* An unwritten batch may point into the MRs released here. */
	viw_tx_batch_clear(qp->eng->tx_batch);
	/* A spill is whole FPDUs' ends, which a TERMINATE may follow. */
	if (!qp->sock)
		viw_engine_drop_spill(qp);
	viw_tx_release_mrs(&qp->eng->tx);
	qp->eng->tx.active = false;
}

/*
 * A WQE being sent, bytes a doorbell's run left to the work item, or a
 * READ or atomic waiting for its response.
 */
bool viw_tx_busy(struct viw_qp *qp)
{
	return qp->eng->tx.active || qp->eng->tx_spill || viw_orq_busy(qp);
}

static bool viw_op_is_atomic(u8 opcode)
{
	return opcode == VIW_OP_ATOMIC_CMP_SWP ||
	       opcode == VIW_OP_ATOMIC_FETCH_ADD;
}

static struct viw_sqe_atomic *viw_tx_atomic(struct viw_tx_wqe *tx)
{
	return (struct viw_sqe_atomic *)tx->sqe.sge;
}

/*
 * An atomic WQE has one local SGE of exactly 8 bytes for the original
 * value.  Its remote target is the responder's to check.
 */
static u8 viw_tx_check_atomic(struct viw_qp *qp, struct viw_tx_wqe *tx)
{
	struct viw_sge *sge = &viw_tx_atomic(tx)->sge;
	struct viw_term_cause cause;

	if ((tx->sqe.flags & VIW_WQE_INLINE) || tx->sqe.num_sge != 1)
		return VIW_CQE_LOC_QP_OP_ERR;
	if (sge->length != VIW_ATOMIC_SIZE)
		return VIW_CQE_LOC_LEN_ERR;
	tx->nr_mr = 1;
	tx->mr[0] = viw_mr_get(qp->vdev, qp->ibqp.pd, sge->lkey,
			       IB_ACCESS_LOCAL_WRITE, sge->addr,
			       VIW_ATOMIC_SIZE, &cause);
	if (!tx->mr[0])
		return VIW_CQE_LOC_PROT_ERR;
	tx->len = 0;
	return VIW_CQE_SUCCESS;
}

/* A WQE whose message carries RFC 7306 Immediate Data. */
static bool viw_op_has_imm(u8 opcode)
{
	return opcode == VIW_OP_SEND_IMM || opcode == VIW_OP_WRITE_IMM;
}

/* A WQE that changes local state and sends nothing. */
static bool viw_tx_wqe_is_local(const struct viw_sqe *sqe)
{
	return sqe->opcode == VIW_OP_BIND_MW ||
	       sqe->opcode == VIW_OP_LOCAL_INV || sqe->opcode == VIW_OP_REG_MR;
}

static const char *viw_tx_local_op_name(u8 opcode)
{
	if (opcode == VIW_OP_BIND_MW)
		return "bind";
	return opcode == VIW_OP_REG_MR ? "fast register" : "local invalidate";
}

/*
 * Execute a bind, a fast registration or a Local Invalidate.  The engine
 * takes WQEs in order, so every WQE posted before it has gone to the
 * wire, and none after it has (IBA 10.6.7: binds and invalidations are ordered like other WRs).
 * A failure completes it in error and takes the QP to ERROR.  Returns
 * whether it succeeded.
 */
static bool viw_tx_local_op(struct viw_qp *qp)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	u8 status;

	if (tx->sqe.opcode == VIW_OP_BIND_MW)
		status = viw_mw_bind(qp, &tx->sqe);
	else if (tx->sqe.opcode == VIW_OP_REG_MR)
		status = viw_mr_fast_reg(qp, &tx->sqe);
	else
		status = viw_mw_local_inv(qp, tx->sqe.inv_stag);
	tx->active = false;
	viw_sq_complete(qp, tx->index, status);
	if (status != VIW_CQE_SUCCESS) {
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: %s WQE %u failed: status %u\n",
				       qp->ibqp.qp_num,
				       viw_tx_local_op_name(tx->sqe.opcode),
				       tx->index, status);
		viw_qp_fail(qp, NULL);
	}
	return status == VIW_CQE_SUCCESS;
}

/* Check the copied WQE; returns VIW_CQE_SUCCESS or its error status. */
static u8 viw_tx_check_wqe(struct viw_qp *qp, struct viw_tx_wqe *tx)
{
	struct viw_sqe *sqe = &tx->sqe;
	struct viw_term_cause cause;
	int access = 0;
	int i;

	if (sqe->opcode > VIW_OP_MAX)
		return VIW_CQE_LOC_QP_OP_ERR;
	/* Only a viw peer that agreed on it understands Immediate Data. */
	if (viw_op_has_imm(sqe->opcode) && !READ_ONCE(qp->peer_imm))
		return VIW_CQE_LOC_QP_OP_ERR;
	if (viw_op_is_atomic(sqe->opcode))
		return viw_tx_check_atomic(qp, tx);
	if (viw_tx_wqe_is_local(sqe)) {
		tx->len = 0;
		return sqe->flags & VIW_WQE_INLINE ? VIW_CQE_LOC_QP_OP_ERR :
						     VIW_CQE_SUCCESS;
	}
	if (sqe->flags & VIW_WQE_INLINE) {
		if (sqe->opcode == VIW_OP_READ ||
		    sqe->inline_len > VIW_MAX_INLINE)
			return VIW_CQE_LOC_QP_OP_ERR;
		tx->len = sqe->inline_len;
		return VIW_CQE_SUCCESS;
	}
	if (sqe->num_sge > qp->sq.max_sge ||
	    (sqe->opcode == VIW_OP_READ && sqe->num_sge > VIW_MAX_SGE_RD))
		return VIW_CQE_LOC_QP_OP_ERR;
	if (sqe->opcode == VIW_OP_READ)
		access = IB_ACCESS_LOCAL_WRITE;

	tx->len = 0;
	tx->nr_mr = sqe->num_sge;
	for (i = 0; i < sqe->num_sge; i++) {
		struct viw_sge *sge = &sqe->sge[i];

		if (!sge->length)
			continue;
		if (tx->len + sge->length < tx->len)
			return VIW_CQE_LOC_LEN_ERR;
		tx->mr[i] = viw_mr_get(qp->vdev, qp->ibqp.pd, sge->lkey, access,
				       sge->addr, sge->length, &cause);
		if (!tx->mr[i])
			return VIW_CQE_LOC_PROT_ERR;
		tx->len += sge->length;
	}
	return VIW_CQE_SUCCESS;
}

/* Take the next posted WQE.  Returns false if there is none. */
static bool viw_tx_start_wqe(struct viw_qp *qp)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	unsigned long flags;
	bool taken;
	u8 status;

	/* Most runs end on a look that finds none: it takes no lock. */
	if (!viw_sq_posted_hint(qp)) {
		qp->eng->tx_starved = true;
		return false;
	}
	spin_lock_irqsave(&qp->sq.lock, flags);
	tx->index = qp->sq.fetch;
	taken = viw_sq_take(qp, &tx->sqe);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	if (!taken) {
		qp->eng->tx_starved = true;
		return false;
	}

	tx->sent = 0;
	WRITE_ONCE(qp->eng->db_small, tx->len < VIW_TX_SMALL);
	WRITE_ONCE(qp->eng->tx_taken, qp->eng->tx_taken + 1);
	/* read by viw_tx_kick_orq() */
	WRITE_ONCE(tx->active, true);
	status = viw_tx_check_wqe(qp, tx);
	if (status != VIW_CQE_SUCCESS) {
		ibdev_info_ratelimited(qp->ibqp.device,
				       "QP %u: bad send WQE %u: status %u\n",
				       qp->ibqp.qp_num, tx->index, status);
		/* the messages before it go out, and complete, first */
		viw_tx_flush(qp);
		viw_tx_abort(qp);
		viw_sq_complete(qp, tx->index, status);
		viw_qp_fail(qp, NULL);
		return false;
	}
	return true;
}

/*
 * A fast-register MR's bytes go out as a copy in the engine's bounce
 * buffer, taken under the MR's fr_lock (viw_mr_copy_out()): once the
 * consumer's invalidation returns it may free the pages, while TCP would
 * still read them.  The FPDU is then written at once (tx_bounced), before
 * the buffer is used again.  Returns the pieces, or -ESTALE if the STag
 * was invalidated meanwhile.
 */
static int viw_tx_bounce(struct viw_qp *qp, struct viw_mr *mr, u32 stag,
			 u64 addr, u32 *len, struct bio_vec *bv, int max)
{
	struct viw_engine *eng = qp->eng;
	u32 want = min(*len, VIW_TX_BOUNCE_BYTES - eng->tx_bounce_used);
	u8 *dst = eng->tx_bounce + eng->tx_bounce_used;
	u32 done = 0;
	int n = 0, rv;

	/* Only a kernel QP can name a fast-register MR: same PD. */
	if (WARN_ON_ONCE(!eng->tx_bounce))
		return -ESTALE;
	rv = viw_mr_copy_out(mr, stag, addr, want, dst);
	if (rv)
		return rv;
	while (done < want && n < max) {
		u32 chunk = min_t(u32, want - done,
				  PAGE_SIZE - offset_in_page(dst + done));

		viw_bvec_virt(&bv[n++], dst + done, chunk);
		done += chunk;
	}
	*len = done;
	eng->tx_bounce_used += done;
	eng->tx_bounced = true;
	return n;
}

/* Pieces for @len bytes of @mr at @addr: its pages, or a bounced copy. */
static int viw_tx_mr_pieces(struct viw_qp *qp, struct viw_mr *mr, u32 stag,
			    u64 addr, u32 *len, struct bio_vec *bv, int max)
{
	if (mr->fast)
		return viw_tx_bounce(qp, mr, stag, addr, len, bv, max);
	return viw_mr_bvec(mr, addr, len, bv, max);
}

/*
 * Describe up to *@len payload bytes of the WQE from offset @off in
 * qp->eng->tx_bv[1..].  Returns the pieces, or -ESTALE if a fast-register
 * MR was invalidated under the WQE; *@len becomes the bytes they hold,
 * which is less only if the pieces ran out: the FPDU then carries less.
 */
static int viw_tx_payload(struct viw_qp *qp, u32 off, u32 *len)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	struct bio_vec *bv = qp->eng->tx_bv + 1;
	u32 left = *len;
	int i, n = 0, got;

	qp->eng->tx_bounce_used = 0;
	if (tx->sqe.flags & VIW_WQE_INLINE) {
		u8 *data = qp->eng->tx_buf + VIW_TX_INLINE_OFF;

		/*
		 * All of sge[], whatever inline_len says: a copy of constant
		 * size compiles to moves, not to a string move of one byte at
		 * a time.
		 */
		memcpy(data, tx->sqe.sge, sizeof(tx->sqe.sge));
		viw_bvec_virt(&bv[0], data + off, left);
		return left ? 1 : 0;
	}
	for (i = 0; i < tx->sqe.num_sge && left && n < VIW_TX_MAX_PIECES;
	     i++) {
		struct viw_sge *sge = &tx->sqe.sge[i];
		u32 chunk;

		if (off >= sge->length) {
			off -= sge->length;
			continue;
		}
		chunk = min(left, sge->length - off);
		got = viw_tx_mr_pieces(qp, tx->mr[i], sge->lkey, sge->addr + off,
				       &chunk, &bv[n], VIW_TX_MAX_PIECES - n);
		if (got < 0)
			return got;
		n += got;
		left -= chunk;
		off = 0;
	}
	*len -= left;
	return n;
}

static bool viw_tx_wqe_is_send(const struct viw_sqe *sqe)
{
	return sqe->opcode == VIW_OP_SEND || sqe->opcode == VIW_OP_SEND_INV ||
	       sqe->opcode == VIW_OP_SEND_IMM;
}

static bool viw_tx_wqe_is_write(const struct viw_sqe *sqe)
{
	return sqe->opcode == VIW_OP_WRITE || sqe->opcode == VIW_OP_WRITE_IMM;
}

/* The immediate data of a WQE as a number, from its bytes in inv_stag. */
static u32 viw_tx_imm_data(const struct viw_sqe *sqe)
{
	return be32_to_cpu((__force __be32)sqe->inv_stag);
}

/* Header bytes in front of each data segment's payload. */
static u32 viw_tx_hdr_len(const struct viw_sqe *sqe)
{
	if (viw_tx_wqe_is_write(sqe))
		return VIW_DDP_TAGGED_HDR_LEN;
	if (sqe->opcode == VIW_OP_SEND_IMM)
		return VIW_DDP_UNTAGGED_HDR_LEN + VIW_RDMAP_IMM_LEN;
	return VIW_DDP_UNTAGGED_HDR_LEN;
}

/*
 * Encode @h into tx_buf, with the Immediate Data header behind it for
 * Immediate Data messages.  Returns the header length or a negative errno.
 */
static int viw_tx_encode_hdr(struct viw_qp *qp, const struct viw_ddp_hdr *h,
			     const struct viw_imm *imm)
{
	u8 *p = qp->eng->tx_buf + VIW_MPA_LEN_SIZE;
	int len = viw_ddp_encode(p, VIW_MAX_HDR_LEN, h);

	if (len < 0 || (h->opcode != VIW_RDMAP_IMM &&
			h->opcode != VIW_RDMAP_IMM_SE))
		return len;
	viw_imm_encode(p + len, imm);
	return len + VIW_RDMAP_IMM_LEN;
}

static void viw_tx_build_hdr(struct viw_qp *qp, struct viw_ddp_hdr *h,
			     u32 paylen)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	struct viw_sqe *sqe = &tx->sqe;
	bool se = sqe->flags & VIW_WQE_SOLICITED;

	memset(h, 0, sizeof(*h));
	h->last = tx->sent + paylen == tx->len;
	if (viw_tx_wqe_is_write(sqe)) {
		h->opcode = VIW_RDMAP_WRITE;
		h->tagged = true;
		h->stag = sqe->rkey;
		h->to = sqe->raddr + tx->sent;
		return;
	}
	if (sqe->opcode == VIW_OP_SEND_INV) {
		h->opcode = se ? VIW_RDMAP_SEND_SE_INV : VIW_RDMAP_SEND_INV;
		h->inv_stag = sqe->inv_stag;
	} else if (sqe->opcode == VIW_OP_SEND_IMM) {
		h->opcode = se ? VIW_RDMAP_IMM_SE : VIW_RDMAP_IMM;
	} else {
		h->opcode = se ? VIW_RDMAP_SEND_SE : VIW_RDMAP_SEND;
	}
	h->qn = VIW_QN_SEND;
	h->msn = qp->eng->tx_msn_send;
	h->mo = tx->sent;
}

/*
 * The Immediate Data message that ends a WRITE with immediate, right
 * behind the WRITE's last segment (RFC 7306): the peer's receive WQE
 * completes with it, after the WRITE was placed.
 */
static int viw_tx_write_imm(struct viw_qp *qp)
{
	struct viw_sqe *sqe = &qp->eng->tx.sqe;
	struct viw_ddp_hdr h = {
		.opcode = sqe->flags & VIW_WQE_SOLICITED ? VIW_RDMAP_IMM_SE :
							   VIW_RDMAP_IMM,
		.last = true,
		.qn = VIW_QN_SEND,
		.msn = qp->eng->tx_msn_send,
	};
	struct viw_imm imm = { .data = viw_tx_imm_data(sqe) };
	int hlen, rv;

	hlen = viw_tx_encode_hdr(qp, &h, &imm);
	if (hlen < 0)
		return hlen;
	rv = viw_tx_fpdu(qp, hlen, 0, 0, false);
	if (!rv)
		qp->eng->tx_msn_send++;
	return rv;
}

/*
 * The WQE in tx is about to send its last message: count its messages,
 * one, or two for a WRITE with immediate (the WRITE and the Immediate
 * Data), as the peer counts what it places.  With acknowledgements, the
 * WQE waits for the count, registered before the peer can answer.
 */
static void viw_tx_count_msgs(struct viw_qp *qp)
{
	struct viw_engine *eng = qp->eng;
	u32 n = eng->tx.sqe.opcode == VIW_OP_WRITE_IMM ? 2 : 1;

	if (READ_ONCE(qp->peer_ack))
		viw_ack_wait(qp, eng->tx.index, eng->tx_msgs + n);
	WRITE_ONCE(eng->tx_msgs, eng->tx_msgs + n);
}

/* Has the receive engine placed a message since the last acknowledgement? */
static inline bool viw_tx_ack_due(struct viw_qp *qp)
{
	return READ_ONCE(qp->peer_ack) &&
	       READ_ONCE(qp->eng->rx.placed) != qp->eng->tx_ack_sent;
}

/*
 * Acknowledge the messages the receive engine placed since the last
 * acknowledgement, on a connection that agreed on them (tx_lock held).
 * The count is only ever of whole messages placed, so it may be sent at
 * any time.
 */
static int viw_tx_send_ack(struct viw_qp *qp)
{
	struct viw_engine *eng = qp->eng;
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_ACK,
		.last = true,
		.qn = VIW_QN_ACK,
		.msn = eng->tx_msn_ack,
	};
	u8 *p = eng->tx_buf + VIW_MPA_LEN_SIZE;
	u32 placed;
	int hlen, rv;

	if (!viw_tx_ack_due(qp))
		return 0;
	/* only grows: a count read after the look is as much, or more */
	placed = READ_ONCE(eng->rx.placed);
	hlen = viw_ddp_encode(p, VIW_MAX_HDR_LEN, &h);
	if (hlen < 0)
		return hlen;
	viw_ack_encode(p + hlen, placed);
	rv = viw_tx_fpdu(qp, hlen + VIW_RDMAP_ACK_LEN, 0, 0, false);
	if (rv)
		return rv;
	eng->tx_msn_ack++;
	/* read without tx_lock by the receive engine (viw_rx_data_ready()) */
	WRITE_ONCE(eng->tx_ack_sent, placed);
	viw_count(qp->vdev, VIW_CNT_ACKS_SENT, 1);
	return 0;
}

/**
 * viw_tx_last_ack - acknowledge what was placed, before the FIN
 * @qp: a connected QP, tx_lock held
 *
 * The peer's last WQEs complete on it, as they would on InfiniBand,
 * where the responder acknowledged them before its consumer closed.  It
 * is sent only if it fits in the socket at once: a peer that does not
 * read gets its WQEs flushed instead.
 */
void viw_tx_last_ack(struct viw_qp *qp)
{
	lockdep_assert_held(&qp->tx_lock);
	if (!READ_ONCE(qp->peer_ack) || !viw_tx_room(qp))
		return;
	qp->tx_direct = true;
	viw_tx_send_ack(qp);
	qp->tx_direct = false;
}

/*
 * May the last FPDU of the message in tx wait in the batch for the next
 * WQE's?  Inside a run, which writes the batch at its end, and while
 * another WQE is posted.  Written one by one, small messages went each
 * through the network stack, and the receiver's, as a packet of its own
 * whenever TCP's window was open (a sub-MSS tail aside, TCP sends at once
 * what it is given); batched, they share packets.  A WRITE with
 * immediate sends its Immediate Data right after, which writes the batch.
 */
static bool viw_tx_may_hold(struct viw_qp *qp)
{
	return qp->eng->tx_may_cork &&
	       qp->eng->tx.sqe.opcode != VIW_OP_WRITE_IMM &&
	       qp->eng->tx_batch->held < VIW_TX_BATCH_HELD &&
	       viw_sq_posted_hint(qp);
}

/*
 * The message in tx is whole in the batch: the batch keeps its MRs, and
 * completes it once it is written (viw_tx_write_batch()).
 */
static void viw_tx_hold_last(struct viw_qp *qp)
{
	struct viw_tx_batch *b = qp->eng->tx_batch;
	struct viw_tx_wqe *tx = &qp->eng->tx;

	viw_tx_pass_mrs(tx, b);
	b->held_index[b->held++] = tx->index;
	/* the message is whole: a write of the batch may push */
	b->more = false;
}

/* Send the next FPDU of a SEND or WRITE; completes the WQE after its last. */
static int viw_tx_data_fpdu(struct viw_qp *qp)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	u32 room = qp->mulpdu - viw_tx_hdr_len(&tx->sqe);
	u32 paylen = min(tx->len - tx->sent, room);
	struct viw_imm imm = { .data = viw_tx_imm_data(&tx->sqe), .send = true };
	struct viw_ddp_hdr h;
	bool hold;
	int n, hlen, rv;

	n = viw_tx_payload(qp, tx->sent, &paylen);
	if (n < 0)
		return n;
	if (WARN_ON_ONCE(!paylen && tx->sent != tx->len))
		return -EINVAL;
	viw_tx_build_hdr(qp, &h, paylen);
	hlen = viw_tx_encode_hdr(qp, &h, &imm);
	if (hlen < 0)
		return hlen;
	hold = h.last && viw_tx_may_hold(qp);
	if (h.last)
		viw_tx_count_msgs(qp);
	/* inline data is copied into tx_buf anew for each FPDU */
	rv = viw_tx_fpdu(qp, hlen, n, paylen,
			 (!h.last || hold) && !(tx->sqe.flags & VIW_WQE_INLINE));
	if (rv)
		return rv;
	tx->sent += paylen;
	if (!h.last)
		return 0;

	/* never held (viw_tx_may_hold()) */
	if (tx->sqe.opcode == VIW_OP_WRITE_IMM) {
		rv = viw_tx_write_imm(qp);
		if (rv)
			return rv;
	}
	if (viw_tx_wqe_is_send(&tx->sqe))
		qp->eng->tx_msn_send++;
	tx->active = false;
	/* viw_tx_fpdu() writes at once what may not wait */
	if (hold && qp->eng->tx_batch->fpdus) {
		viw_tx_hold_last(qp);
		return 0;
	}
	viw_tx_release_mrs(tx);
	/* With acknowledgements, the WQE completes on the peer's. */
	if (!READ_ONCE(qp->peer_ack))
		viw_sq_complete(qp, tx->index, VIW_CQE_SUCCESS);
	return 0;
}

/* Send the Read Request of a READ WQE; it completes with the response. */
static int viw_tx_read_req(struct viw_qp *qp)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	struct viw_sge *sge = &tx->sqe.sge[0];
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_READ_REQ,
		.last = true,
		.qn = VIW_QN_READ_REQ,
		.msn = qp->eng->tx_msn_rreq,
	};
	struct viw_read_req rr = {
		.sink_stag = tx->sqe.num_sge ? sge->lkey : 0,
		.sink_to = tx->sqe.num_sge ? sge->addr : 0,
		.size = tx->len,
		.src_stag = tx->sqe.rkey,
		.src_to = tx->sqe.raddr,
	};
	int hlen, rv;

	hlen = viw_ddp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE, VIW_MAX_HDR_LEN,
			      &h);
	if (hlen < 0)
		return hlen;
	viw_read_req_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE + hlen, &rr);
	if (!viw_orq_push(qp, tx->index, &rr))
		return -ENOSPC;
	rv = viw_tx_fpdu(qp, hlen + VIW_RDMAP_READ_REQ_LEN, 0, 0, false);
	if (rv)
		return rv;
	qp->eng->tx_msn_rreq++;
	viw_tx_release_mrs(tx);
	tx->active = false;
	return 0;
}

/* Send the Atomic Request of an atomic WQE; it completes with the response. */
static int viw_tx_atomic_req(struct viw_qp *qp)
{
	struct viw_tx_wqe *tx = &qp->eng->tx;
	struct viw_sqe_atomic *at = viw_tx_atomic(tx);
	bool cmp_swap = tx->sqe.opcode == VIW_OP_ATOMIC_CMP_SWP;
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_ATOMIC_REQ,
		.last = true,
		.qn = VIW_QN_READ_REQ,
		.msn = qp->eng->tx_msn_rreq,
	};
	struct viw_atomic_req ar = {
		.op = cmp_swap ? VIW_ATOMIC_CMP_SWAP : VIW_ATOMIC_FETCH_ADD,
		.req_id = qp->eng->tx_atomic_id,
		.stag = tx->sqe.rkey,
		.to = tx->sqe.raddr,
		.add_swap = cmp_swap ? at->swap : at->compare_add,
		.add_swap_mask = cmp_swap ? ~0ULL : 0,
		.compare = cmp_swap ? at->compare_add : 0,
		.compare_mask = cmp_swap ? ~0ULL : 0,
	};
	int hlen, rv;

	hlen = viw_ddp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE, VIW_MAX_HDR_LEN,
			      &h);
	if (hlen < 0)
		return hlen;
	viw_atomic_req_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE + hlen, &ar);
	if (!viw_orq_push_atomic(qp, tx->index, &at->sge, ar.req_id))
		return -ENOSPC;
	rv = viw_tx_fpdu(qp, hlen + VIW_RDMAP_ATOMIC_REQ_LEN, 0, 0, false);
	if (rv)
		return rv;
	qp->eng->tx_msn_rreq++;
	qp->eng->tx_atomic_id++;
	viw_tx_release_mrs(tx);
	tx->active = false;
	return 0;
}

/*
 * Perform the oldest inbound request, an atomic, and send its response.
 * Its IRQ slot is freed first, as for a READ's last segment.  An atomic
 * that cannot be performed (a target unaligned in memory) is refused like
 * one that was unaligned on the wire.
 */
static int viw_tx_atomic_resp(struct viw_qp *qp, struct viw_irq_entry *ent)
{
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_ATOMIC_RESP,
		.last = true,
		.qn = VIW_QN_ATOMIC_RESP,
		.msn = qp->eng->tx_msn_aresp,
	};
	struct viw_atomic_resp resp = { .req_id = ent->areq.req_id };
	struct viw_atomic_req ar = ent->areq;
	struct viw_term_cause cause = {
		VIW_TERM_RDMAP, VIW_RDMAP_ET_REMOTE_PROT,
		VIW_RDMAP_EC_BASE_BOUNDS,
	};
	struct viw_mr *mr;
	int hlen, rv;

	hlen = viw_ddp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE, VIW_MAX_HDR_LEN,
			      &h);
	if (hlen < 0)
		return hlen;
	mr = viw_irq_pop(qp);
	rv = viw_mr_atomic(mr, ar.to, &ar, &resp.orig);
	viw_mr_put(mr);
	if (rv) {
		viw_qp_fail(qp, &cause);
		return 0;
	}
	viw_atomic_resp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE + hlen, &resp);
	rv = viw_tx_fpdu(qp, hlen + VIW_RDMAP_ATOMIC_RESP_LEN, 0, 0, false);
	if (rv)
		return rv;
	qp->eng->tx_msn_aresp++;
	return 1;
}

/*
 * Send the next FPDU of the oldest inbound READ, or answer the oldest
 * atomic.  Returns 1 if sent.
 */
static int viw_tx_read_resp(struct viw_qp *qp)
{
	struct viw_irq_entry *ent = viw_irq_peek(qp);
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_READ_RESP,
		.tagged = true,
	};
	u32 room = qp->mulpdu - VIW_DDP_TAGGED_HDR_LEN;
	struct viw_mr *mr;
	u32 paylen;
	int n = 0, hlen, rv;

	if (!ent)
		return 0;
	if (ent->atomic)
		return viw_tx_atomic_resp(qp, ent);
	paylen = min(ent->req.size - ent->sent, room);
	/* paylen shrinks to what the pieces hold, if they run out */
	qp->eng->tx_bounce_used = 0;
	if (paylen)
		n = viw_tx_mr_pieces(qp, ent->mr, ent->req.src_stag,
				     ent->req.src_to + ent->sent, &paylen,
				     qp->eng->tx_bv + 1, VIW_TX_MAX_PIECES);
	if (n < 0)
		return n;
	if (WARN_ON_ONCE(!paylen && ent->sent != ent->req.size))
		return -EINVAL;
	h.last = ent->sent + paylen == ent->req.size;
	h.stag = ent->req.sink_stag;
	h.to = ent->req.sink_to + ent->sent;
	hlen = viw_ddp_encode(qp->eng->tx_buf + VIW_MPA_LEN_SIZE, VIW_MAX_HDR_LEN,
			      &h);
	if (hlen < 0)
		return hlen;
	/*
	 * The peer may receive the last segment and send its next READ
	 * before sendmsg returns here: free the IRQ slot first.  The source
	 * MR stays referenced until the data is in the socket.
	 */
	mr = h.last ? viw_irq_pop(qp) : NULL;
	rv = viw_tx_fpdu(qp, hlen, n, paylen, !h.last);
	if (mr)
		viw_mr_put(mr);
	if (rv)
		return rv;
	/* after the last segment the slot may belong to a new READ */
	if (!h.last)
		ent->sent += paylen;
	return 1;
}

/* May the WQE in tx go on the wire now?  FENCE and ORD can hold it. */
static inline bool viw_tx_wqe_may_go(struct viw_qp *qp)
{
	struct viw_sqe *sqe = &qp->eng->tx.sqe;

	if ((sqe->flags & VIW_WQE_FENCE) && viw_orq_busy(qp))
		return false;
	if ((sqe->opcode == VIW_OP_READ || viw_op_is_atomic(sqe->opcode)) &&
	    viw_orq_full(qp))
		return false;
	return true;
}

/*
 * A held WQE waits for a response to free the ORQ, and the receive engine
 * then kicks this one only if a WQE is taken (viw_tx_kick_orq()).  The
 * full barrier pairs with the one there: either the second look here sees
 * the ORQ freed, or the receive engine sees tx.active and kicks.
 */
static bool viw_tx_wqe_ready(struct viw_qp *qp)
{
	if (viw_tx_wqe_may_go(qp))
		return true;
	/* Orders tx.active, set when the WQE was taken, before the ORQ. */
	smp_mb();
	return viw_tx_wqe_may_go(qp);
}

/**
 * viw_tx_kick_orq - a READ or atomic response freed an ORQ slot
 * @qp: the QP, from the receive engine
 *
 * Only a WQE the engine took can wait for the ORQ (viw_tx_wqe_ready());
 * posted WQEs have their doorbells.  Without one the engine is not woken,
 * which saves a READ requester a context switch per READ.
 */
void viw_tx_kick_orq(struct viw_qp *qp)
{
	/* Pairs with viw_tx_wqe_ready(); orders the ORQ's update before. */
	smp_mb();
	if (READ_ONCE(qp->eng->tx.active))
		viw_tx_kick(qp);
}

/* One step of the engine: returns 1 if it sent, 0 if idle, or an error. */
static int viw_tx_step(struct viw_qp *qp)
{
	int rv;

	if (!viw_qp_tx_open(qp) || !qp->sock)
		return 0;
	/* A stream torn inside an FPDU takes no WQE more: the QP fails. */
	if (qp->eng->tx_torn)
		return -ECONNABORTED;
	/* RFC 6581, 3: a responder sends nothing before the RTR arrived. */
	if (READ_ONCE(qp->rtr_expected))
		return 0;
	/*
	 * Most runs end on a step that finds nothing to do: it looks before
	 * it asks the socket for room.  A spill is something to do: the room
	 * check below hands it to the work item (viw_tx_spill()).
	 */
	if (!qp->eng->tx.active && !qp->eng->tx_spill &&
	    !viw_tx_ack_due(qp) && !viw_irq_waiting(qp) &&
	    !viw_sq_posted_hint(qp)) {
		qp->eng->tx_starved = true;
		return 0;
	}
	/* Before anything is taken: the work item goes on from here. */
	if (qp->tx_direct && !viw_tx_room(qp))
		return -EAGAIN;
	/*
	 * Answer the peer's READs and acknowledge, between our messages.  The
	 * looks are inline: most steps find neither to do.
	 */
	if (!qp->eng->tx.active) {
		rv = viw_tx_ack_due(qp) ? viw_tx_send_ack(qp) : 0;
		if (rv)
			return rv;
		rv = viw_irq_waiting(qp) ? viw_tx_read_resp(qp) : 0;
		if (rv)
			return rv;
		if (!viw_tx_start_wqe(qp))
			return 0;
	}
	if (!viw_tx_wqe_ready(qp))
		return 0;
	/* After a failure, nothing more goes out: the QP goes to ERROR. */
	if (viw_tx_wqe_is_local(&qp->eng->tx.sqe)) {
		/* every WQE before it on the wire (viw_tx_local_op()) */
		rv = viw_tx_flush(qp);
		if (rv)
			return rv;
		return viw_tx_local_op(qp) ? 1 : 0;
	}
	if (qp->eng->tx.sqe.opcode == VIW_OP_READ)
		rv = viw_tx_read_req(qp);
	else if (viw_op_is_atomic(qp->eng->tx.sqe.opcode))
		rv = viw_tx_atomic_req(qp);
	else
		rv = viw_tx_data_fpdu(qp);
	return rv ? rv : 1;
}

/* Send the QP's pending TERMINATE (tx_lock held). */
static int viw_tx_send_term(struct viw_qp *qp)
{
	struct viw_ddp_hdr h = {
		.opcode = VIW_RDMAP_TERMINATE,
		.last = true,
		.qn = VIW_QN_TERMINATE,
		.msn = qp->eng->tx_msn_term,
	};
	u8 *p = qp->eng->tx_buf + VIW_MPA_LEN_SIZE;
	int hlen, blen;

	hlen = viw_ddp_encode(p, VIW_MAX_HDR_LEN, &h);
	if (hlen < 0)
		return hlen;
	blen = viw_term_encode(p + hlen, VIW_TX_TRAILER_OFF - VIW_MPA_LEN_SIZE -
				   hlen, &qp->term);
	if (blen < 0)
		return blen;
	qp->eng->tx_msn_term++;
	return viw_tx_fpdu(qp, hlen + blen, 0, 0, false);
}

/*
 * The READs and atomics the peer sent before the segment that failed were
 * valid, and are answered in the order they came (RFC 5040, 5.5): before
 * the TERMINATE, which answers the segment after them.  Between our own
 * messages only, as in viw_tx_step(); mid-message the TERMINATE cuts the
 * message and the READs go unanswered.  A peer that stops reading is
 * bounded by the error work's wait for the TERMINATE.
 */
static int viw_tx_answer_reads(struct viw_qp *qp)
{
	int rv;

	if (qp->eng->tx.active)
		return 0;
	do {
		rv = viw_tx_read_resp(qp);
	} while (rv > 0);
	return rv;
}

/*
 * The error work has stopped the QP (SQE) and waits for its TERMINATE:
 * send it, between two FPDUs, and wake the error work.  A torn stream
 * gets none (viw_tx_write()).  Nothing else is sent after it.  The send
 * may block on a peer that does not read; the error work then gives up
 * waiting and aborts the connection, which ends the send.
 */
static void viw_tx_terminate(struct viw_qp *qp)
{
	if (READ_ONCE(qp->state) != IB_QPS_SQE ||
	    completion_done(&qp->term_done))
		return;
	if (qp->term_pending && qp->sock && !viw_tx_answer_reads(qp) &&
	    !viw_tx_send_ack(qp) && !viw_tx_send_term(qp)) {
		WRITE_ONCE(qp->term_sent, true);
		viw_count(qp->vdev, VIW_CNT_TERM_SENT, 1);
		trace_viw_term_sent(qp, &qp->term.cause);
	}
	complete_all(&qp->term_done);
}

/*
 * The engine stops (@rv <= 0): new SQEs need a doorbell again.  If it
 * stopped for want of WQEs, it looks at the ring once more behind a full
 * barrier, which pairs with the provider's between publishing a WQE and
 * reading no_doorbell: a WQE published meanwhile is either taken here or
 * followed by a doorbell.  Other stops (an error, a READ or fence to wait for, no
 * connection yet) leave it to the doorbells.  Returns 1 if the engine
 * must go on, else @rv.
 *
 * The look is made without sq.lock first: a slot at fetch that is not
 * posted needs no more (viw_sq_posted_hint()), and so a lone post's run
 * ends without taking the lock, whose release enables IRQs again.  Only
 * a slot that looks posted is looked at again under the lock, room and
 * all.
 */
static int viw_tx_stop(struct viw_qp *qp, int rv)
{
	viw_sq_set_busy(qp, false);
	if (rv || !qp->eng->tx_starved)
		return rv;
	/* Pairs with the provider's barrier between publishing and reading. */
	smp_mb();
	if (!viw_sq_posted_hint(qp) || !viw_sq_has_posted(qp))
		return 0;
	viw_sq_set_busy(qp, true);
	return 1;
}

/*
 * The last write held its tail back for a WQE that did not follow in this
 * run (a fence, a full ORQ, the budget): send it now.  Setting TCP_NODELAY
 * again is the kernel's way to push a socket's pending segments.
 */
static void viw_tx_push(struct viw_qp *qp)
{
	if (!qp->eng->tx_corked)
		return;
	qp->eng->tx_corked = false;
	if (qp->sock)
		tcp_sock_set_nodelay(qp->sock->sk);
}

/*
 * Up to VIW_TX_BUDGET steps, tx_lock held.  Returns what the last step
 * returned: more to do (> 0), idle (0) or an error.  New SQEs need no
 * doorbell (struct viw_ring_ctrl, no_doorbell) while more is to do or the
 * caller hands a full socket to the work item (-EAGAIN in the caller's
 * context), as the engine then runs again by itself.
 */
static int viw_tx_run(struct viw_qp *qp)
{
	int budget = VIW_TX_BUDGET;
	int rv = 0, flushed;

	qp->eng->tx_starved = false;
	viw_sq_set_busy(qp, true);
	qp->eng->tx_may_cork = true;
	while (budget--) {
		rv = viw_tx_step(qp);
		if (rv <= 0)
			break;
	}
	/* What the steps framed goes out before tx_lock is released. */
	flushed = viw_tx_flush(qp);
	if (flushed)
		rv = flushed;
	qp->eng->tx_may_cork = false;
	viw_tx_push(qp);
	if (!viw_qp_tx_open(qp) && qp->eng->tx.active)
		viw_tx_abort(qp);
	if (rv > 0 || (rv == -EAGAIN && qp->tx_direct))
		return rv;
	return viw_tx_stop(qp, rv);
}

/* After a run, tx_lock released: an error takes the QP to ERROR. */
static void viw_tx_check_error(struct viw_qp *qp, int rv)
{
	if (rv >= 0 || !viw_qp_tx_open(qp))
		return;
	ibdev_info_ratelimited(qp->ibqp.device,
			       "QP %u: transmit failed: %d\n",
			       qp->ibqp.qp_num, rv);
	viw_qp_fail(qp, NULL);
}

static void viw_tx_work(struct work_struct *work)
{
	struct viw_qp *qp = container_of(work, struct viw_qp, tx_work);
	int rv;

	mutex_lock(&qp->tx_lock);
	/* A doorbell's run left it, and handed the engine over. */
	rv = viw_tx_write_spill(qp, true);
	viw_tx_terminate(qp);
	if (!rv)
		rv = viw_tx_run(qp);
	mutex_unlock(&qp->tx_lock);

	if (rv > 0)
		viw_tx_kick(qp);
	else
		viw_tx_check_error(qp, rv);
}

/*
 * For tests, through debugfs tx_run_hold_ms (0, the default: no wait):
 * how long a doorbell's run keeps tx_lock after its last write, so that a
 * test can have a message placed, and the QP leave RTS, surely while a
 * run that has passed its acknowledgement holds the engine
 * (tests/functional/viw_remote_err.c -H).  At most a second.
 */
static u32 viw_tx_run_hold_ms;

u32 *viw_tx_run_hold_knob(void)
{
	return &viw_tx_run_hold_ms;
}

/* A doorbell's run, without chaining: true if the engine has nothing left. */
static bool viw_tx_run_direct(struct viw_qp *qp)
{
	int rv;

	if (work_pending(&qp->tx_work) || !mutex_trylock(&qp->tx_lock))
		return false;
	qp->tx_direct = true;
	rv = viw_tx_run(qp);
	qp->tx_direct = false;
	viw_test_delay(&viw_tx_run_hold_ms);
	mutex_unlock(&qp->tx_lock);

	if (rv == -EAGAIN || rv > 0)
		return false;
	viw_tx_check_error(qp, rv);
	return true;
}

/*
 * Does the application post small messages faster than its peer answers,
 * and does handing them off pay?  A doorbell that comes within a tick of
 * the last one, with no segment of the peer's own messages (its
 * acknowledgements aside) received in between, extends a streak; a
 * ping-pong, a READ or anything else that waits for the peer between
 * posts never streams.  From VIW_TX_STREAK doorbells on, the QP streams if
 * the last WQE the engine took was short (VIW_TX_SMALL) and the engine
 * took more than one WQE since the last doorbell: a hand-off let the
 * application post more without one.  An application that waits for each
 * completion (one WR in flight) posts one WQE a doorbell whoever sends it,
 * and the hand-off would only add a wake-up: it is tried again every
 * VIW_TX_PROBE doorbells of the streak.  Unlocked: two threads ringing at
 * once may lose an update, and the guess is then only less good.
 */
static bool viw_tx_streams(struct viw_qp *qp)
{
	struct viw_engine *eng = qp->eng;
	u32 answers = READ_ONCE(eng->rx.answers);
	u32 taken = READ_ONCE(eng->tx_taken);
	u32 streak = READ_ONCE(eng->db_streak) + 1;
	unsigned long now = jiffies;
	bool batched;

	if (answers != READ_ONCE(eng->db_answers) ||
	    time_after(now, READ_ONCE(eng->db_time) + 1))
		streak = 0;
	batched = taken - READ_ONCE(eng->db_taken) > 1;
	WRITE_ONCE(eng->db_answers, answers);
	WRITE_ONCE(eng->db_taken, taken);
	WRITE_ONCE(eng->db_time, now);
	WRITE_ONCE(eng->db_streak, streak);
	if (streak < VIW_TX_STREAK || !READ_ONCE(eng->db_small))
		return false;
	return batched || (streak - VIW_TX_STREAK) % VIW_TX_PROBE == 0;
}

/*
 * Leave a streaming QP's engine to its work item on another CPU.  The
 * application goes on posting meanwhile, with no system call, as the SQ
 * says no_doorbell before the work is queued, and each run of the engine
 * finds several WQEs to write together (viw_tx_flush()).  In the caller's
 * context each post would cost a system call and a segment of its own,
 * and the caller's CPU would carry all of the sending.  Setting
 * no_doorbell outside tx_lock is safe: the queued run comes after it, and
 * whatever it last wrote there, that run writes again.  Returns false on
 * a machine with one CPU.
 */
static bool viw_tx_hand_off(struct viw_qp *qp)
{
	unsigned int self = raw_smp_processor_id();
	unsigned int cpu = cpumask_next(self, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	if (cpu >= nr_cpu_ids || cpu == self)
		return false;
	viw_sq_set_busy(qp, true);
	queue_work_on(cpu, viw_tx_wq, &qp->tx_work);
	viw_count(qp->vdev, VIW_CNT_TX_HANDOFFS, 1);
	return true;
}

/**
 * viw_tx_doorbell - start the transmit engine for a doorbell
 * @qp: the QP, in process context
 * @may_hand_off: a system call, not the poller (which has a CPU for it)
 *
 * A streaming QP's engine runs on another CPU (viw_tx_hand_off()).
 * Otherwise an idle engine runs in the caller's context, which never
 * blocks in the socket (viw_tx_sendmsg()), and then the engines its run
 * kicked (struct viw_tx_chain).  If the work item is queued or another
 * thread holds tx_lock, that one sends what was posted; if the socket is
 * full or the budget spent, the work item goes on.
 */
void viw_tx_doorbell(struct viw_qp *qp, bool may_hand_off)
{
	struct viw_tx_chain *chain;
	bool done;

	if (may_hand_off && viw_tx_streams(qp) && viw_tx_hand_off(qp))
		return;
	chain = viw_tx_chain_begin();
	done = viw_tx_run_direct(qp);
	viw_tx_chain_end(chain);
	if (!done)
		viw_tx_kick(qp);
}

void viw_tx_qp_init(struct viw_qp *qp)
{
	INIT_WORK(&qp->tx_work, viw_tx_work);
	mutex_init(&qp->tx_lock);
	init_completion(&qp->term_done);
}
