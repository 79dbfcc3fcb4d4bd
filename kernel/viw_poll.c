// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the doorbell poller, one kernel thread per device.
 *
 * While traffic flows the thread watches the doorbell sequence of every
 * user context of its device, and when one moved it rings that context's
 * doorbells itself (viw_qp_poll_doorbells()), so that posts make no system
 * call.  After an idle spell (debugfs poll_idle_us, 0: never poll) it sets
 * VIW_DB_NEED_WAKEUP in every context and sleeps, and the next doorbell
 * system call wakes it.  This is io_uring's SQPOLL protocol, as
 * docs/host-interface.md describes it:
 *
 *   provider: publish prod, bump seq; full barrier; read flags
 *   poller:   set NEED_WAKEUP; full barrier; read seq; sleep if unchanged
 *
 * so either the poller sees the new sequence or the provider sees the
 * flag and makes the system call.
 *
 * The poller stands where the system call stands: above the QP layer,
 * which decides what a doorbell does.  The doorbell page is the process's
 * to write; the poller only compares its sequence with the last value it
 * saw, and what it does on a change is what a system call would do.
 *
 * Lock order: poller->lock -> what a doorbell takes (qp->state_lock,
 * qp->tx_lock, ...).  Nothing takes poller->lock under those.
 */
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/stat.h>
#include <linux/wait.h>

#include "viw_qp.h"

/*
 * Busy-poll window after the last doorbell, in microseconds; 0, the
 * default, never polls.  Polling pays only where the thread has a CPU of
 * its own: measured on two CPUs, each taken by a process spinning on its
 * CQ, a poller that shares a CPU with one of them waits for its time slice
 * and a 64-byte send took 8 ms instead of 30 us.  10000 (10 ms) bridges
 * the gaps of a busy application (a batch of completions, a round trip).
 */
static u32 viw_poll_idle_us;

/*
 * How long a poller with work may share its CPU with another runnable
 * task before it backs off (viw_poll_should_back_off()), in microseconds.
 * 1 ms: long enough to ride out a kworker or softirq thread that runs
 * briefly beside it, short enough that a process spinning on its CQ on
 * the same CPU loses at most that before its posts take the system call.
 */
static u32 viw_poll_shared_us = 1000;

struct viw_poller {
	struct viw_device *vdev;
	struct task_struct *task;
	struct mutex lock;		/* the list of contexts */
	struct list_head uctxs;
	wait_queue_head_t wait;
	bool asleep;			/* NEED_WAKEUP is set everywhere */
	bool kick;			/* a doorbell came while asleep */
	bool backing_off;		/* yields its CPU for a while */
	u64 shared_since;		/* local_clock() when found shared */
};

u32 *viw_poll_idle_knob(void)
{
	return &viw_poll_idle_us;
}

u32 *viw_poll_shared_knob(void)
{
	return &viw_poll_shared_us;
}

static u32 viw_poll_seq(struct viw_ucontext *uctx)
{
	/* Pairs with the provider's release increment of seq after prod. */
	return smp_load_acquire(&uctx->db->seq);
}

/* Note what moved since the last pass; returns whether anything did. */
static bool viw_poll_scan_seqs(struct viw_poller *p)
{
	struct viw_ucontext *uctx;
	bool moved = false;

	list_for_each_entry(uctx, &p->uctxs, poll_node) {
		u32 seq = viw_poll_seq(uctx);

		if (seq == uctx->poll_seq && uctx->poll_awake)
			continue;
		if (!uctx->poll_awake) {
			/* Its posts stop making system calls from here on. */
			WRITE_ONCE(uctx->db->flags, 0);
			uctx->poll_awake = true;
			/*
			 * Orders the flag before the look at seq: a post
			 * that saw the flag clear is seen by this pass or
			 * a later one.
			 */
			smp_mb();
			seq = viw_poll_seq(uctx);
		}
		uctx->poll_seq = seq;
		uctx->poll_dirty = true;
		moved = true;
	}
	return moved;
}

/* One pass over the device.  Returns whether a doorbell moved. */
static bool viw_poll_pass(struct viw_poller *p)
{
	struct viw_ucontext *uctx;
	bool moved;

	mutex_lock(&p->lock);
	moved = viw_poll_scan_seqs(p);
	if (moved) {
		viw_qp_poll_doorbells(p->vdev);
		list_for_each_entry(uctx, &p->uctxs, poll_node)
			uctx->poll_dirty = false;
	}
	mutex_unlock(&p->lock);
	return moved;
}

/*
 * Set NEED_WAKEUP everywhere and take a last look.  Returns true if the
 * poller may sleep: no sequence moved after the flags were set.
 */
static bool viw_poll_may_sleep(struct viw_poller *p)
{
	struct viw_ucontext *uctx;
	bool quiet = true;

	mutex_lock(&p->lock);
	list_for_each_entry(uctx, &p->uctxs, poll_node) {
		WRITE_ONCE(uctx->db->flags, VIW_DB_NEED_WAKEUP);
		uctx->poll_awake = false;
	}
	WRITE_ONCE(p->asleep, true);
	/* Pairs with the provider's barrier between seq and flags. */
	smp_mb();
	list_for_each_entry(uctx, &p->uctxs, poll_node)
		if (viw_poll_seq(uctx) != uctx->poll_seq)
			quiet = false;
	if (!quiet)
		WRITE_ONCE(p->asleep, false);
	mutex_unlock(&p->lock);
	return quiet;
}

static bool viw_poll_woken(struct viw_poller *p)
{
	return READ_ONCE(p->kick) || kthread_should_stop();
}

static void viw_poll_sleep(struct viw_poller *p)
{
	wait_event_interruptible(p->wait, viw_poll_woken(p));
	WRITE_ONCE(p->kick, false);
	WRITE_ONCE(p->asleep, false);
}

/*
 * Another task is runnable on the poller's CPU: most likely the very
 * process whose CQ the poller would fill, spinning on it.  Polling then
 * takes the CPU that process needs (see viw_poll_idle_us), so hand the
 * doorbells back to the system call and stay off the CPU for 2 ms.
 * The doorbell system call does not wake a poller that backs off: waking
 * it on every post would cost a context switch each, more than polling
 * saves.  The poller looks again after VIW_POLL_BACKOFF.
 */
#define VIW_POLL_BACKOFF msecs_to_jiffies(2)

static bool viw_poll_cpu_shared(void)
{
	return !single_task_running();
}

static void viw_poll_back_off(struct viw_poller *p)
{
	if (!viw_poll_may_sleep(p)) {
		/* A doorbell moved meanwhile: take it, then look again. */
		return;
	}
	WRITE_ONCE(p->backing_off, true);
	viw_count(p->vdev, VIW_CNT_POLL_BACKOFFS, 1);
	schedule_timeout_interruptible(VIW_POLL_BACKOFF);
	WRITE_ONCE(p->backing_off, false);
	WRITE_ONCE(p->kick, false);
	WRITE_ONCE(p->asleep, false);
}

/*
 * Whether to back off now: the CPU has been shared without a break for
 * viw_poll_shared_us, or for VIW_POLL_IDLE_SPIN_NS (if shorter) by a
 * poller that found nothing to do meanwhile.  An idle spin only steals
 * from whoever else runs there (the other device's poller, the process
 * waiting on its CQ); a poller with work drives traffic, but only in its
 * own time slices.  viw_poll_shared_us = 0 never backs off.
 */
#define VIW_POLL_IDLE_SPIN_NS (100 * NSEC_PER_USEC)

static bool viw_poll_should_back_off(struct viw_poller *p, u64 last_move,
				     u64 now)
{
	u64 limit = (u64)READ_ONCE(viw_poll_shared_us) * NSEC_PER_USEC;

	if (!limit || !viw_poll_cpu_shared()) {
		p->shared_since = 0;
		return false;
	}
	if (!p->shared_since)
		p->shared_since = now;
	if (now - last_move >= VIW_POLL_IDLE_SPIN_NS)
		limit = min_t(u64, limit, VIW_POLL_IDLE_SPIN_NS);
	return now - p->shared_since >= limit;
}

static int viw_poll_thread(void *data)
{
	struct viw_poller *p = data;
	u64 last = local_clock();

	while (!kthread_should_stop()) {
		u64 idle_ns = (u64)READ_ONCE(viw_poll_idle_us) * NSEC_PER_USEC;
		bool moved = viw_poll_pass(p);
		u64 now = local_clock();

		if (moved) {
			last = now;
		} else if (now - last >= idle_ns && viw_poll_may_sleep(p)) {
			viw_poll_sleep(p);
			last = local_clock();
			p->shared_since = 0;
			continue;
		}
		if (viw_poll_should_back_off(p, last, now)) {
			viw_poll_back_off(p);
			p->shared_since = 0;
		}
		cond_resched();
	}
	return 0;
}

/*
 * The doorbell system call of a context on @vdev: it did the doorbell's
 * work itself, and wakes the poller for what follows.
 */
void viw_poll_doorbell(struct viw_device *vdev)
{
	struct viw_poller *p = vdev->poller;

	if (!p || !READ_ONCE(p->asleep) || !READ_ONCE(viw_poll_idle_us) ||
	    READ_ONCE(p->backing_off))
		return;
	if (!READ_ONCE(p->kick)) {
		WRITE_ONCE(p->kick, true);
		wake_up(&p->wait);
	}
}

/* A new context: NEED_WAKEUP stays set until the poller takes it up. */
void viw_poll_add_uctx(struct viw_device *vdev, struct viw_ucontext *uctx)
{
	struct viw_poller *p = vdev->poller;

	WRITE_ONCE(uctx->db->flags, VIW_DB_NEED_WAKEUP);
	uctx->poll_awake = false;
	uctx->poll_dirty = false;
	uctx->poll_seq = 0;
	mutex_lock(&p->lock);
	list_add_tail(&uctx->poll_node, &p->uctxs);
	mutex_unlock(&p->lock);
}

/* Before the doorbell page goes: the poller no longer looks at it. */
void viw_poll_del_uctx(struct viw_device *vdev, struct viw_ucontext *uctx)
{
	struct viw_poller *p = vdev->poller;

	mutex_lock(&p->lock);
	list_del(&uctx->poll_node);
	mutex_unlock(&p->lock);
}

int viw_poll_start(struct viw_device *vdev)
{
	struct viw_poller *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct task_struct *task;

	if (!p)
		return -ENOMEM;
	p->vdev = vdev;
	mutex_init(&p->lock);
	INIT_LIST_HEAD(&p->uctxs);
	init_waitqueue_head(&p->wait);
	/* Nothing to poll yet: start asleep, the first doorbell wakes it. */
	p->asleep = true;
	task = kthread_create(viw_poll_thread, p, "viw_poll/%s",
			      vdev->netdev->name);
	if (IS_ERR(task)) {
		kfree(p);
		return PTR_ERR(task);
	}
	p->task = task;
	vdev->poller = p;
	wake_up_process(task);
	return 0;
}

/* The device's last context is gone. */
void viw_poll_stop(struct viw_device *vdev)
{
	struct viw_poller *p = vdev->poller;

	if (!p)
		return;
	WARN_ON_ONCE(!list_empty(&p->uctxs));
	kthread_stop(p->task);
	vdev->poller = NULL;
	kfree(p);
}
