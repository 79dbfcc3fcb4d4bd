// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: debugfs, under /sys/kernel/debug/viw/.
 *
 *   mpa_revision, mpa_crc, mpa_p2p, mpa_rtr
 *	MPA preferences for new connections (what viw requests as the
 *	initiator and accepts as the responder).  Tests use them to cover
 *	MPA v1/v2, CRC on/off and the RFC 6581 RTR types.
 *   poll_idle_us
 *	How long each device's doorbell poller keeps polling after the
 *	last doorbell it saw before it sleeps (viw_poll.c); 0, the default:
 *	no polling, every post makes the doorbell system call.
 *   poll_shared_us
 *	How long a poller that has work keeps polling a CPU shared with
 *	another runnable task before it backs off (viw_poll.c); 0: never
 *	back off.
 *   ceps
 *	The number of live connection endpoints of all devices (listeners
 *	and endpoints that wait for an MPA request included), then a line
 *	for each.
 *   <device>/objects
 *	Live objects of a device (contexts, PDs, MRs, CQs, QPs, SRQs), so
 *	that tests can check that everything was released.
 *   <device>/counters
 *	High-water marks (not sums) for developers: the largest FPDU
 *	payload sent and the most bio_vec pieces (page pieces of buffers)
 *	one FPDU's payload was made of.  The device's counters are port
 *	counters ("rdma statistic show link DEV/1", viw_stats.c).
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "viw.h"
#include "viw_cm.h"

static struct dentry *viw_debugfs_root;

static int viw_objects_show(struct seq_file *m, void *unused)
{
	static const char * const names[VIW_OBJ_MAX] = {
		[VIW_OBJ_UCTX] = "ucontext",
		[VIW_OBJ_PD] = "pd",
		[VIW_OBJ_MR] = "mr",
		[VIW_OBJ_CQ] = "cq",
		[VIW_OBJ_QP] = "qp",
		[VIW_OBJ_SRQ] = "srq",
		[VIW_OBJ_MW] = "mw",
		[VIW_OBJ_DM] = "dm",
	};
	struct viw_device *vdev = m->private;
	int i;

	for (i = 0; i < VIW_OBJ_MAX; i++)
		seq_printf(m, "%s %d\n", names[i],
			   atomic_read(&vdev->obj_count[i]));
	seq_printf(m, "dm_bytes %lld\n",
		   (long long)atomic64_read(&vdev->dm_bytes));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(viw_objects);

static int viw_counters_show(struct seq_file *m, void *unused)
{
	static const char * const names[VIW_HWM_MAX] = {
		[VIW_HWM_TX_PAYLOAD] = "tx_max_fpdu_payload",
		[VIW_HWM_TX_PIECES] = "tx_max_fpdu_pieces",
	};
	struct viw_device *vdev = m->private;
	int i;

	for (i = 0; i < VIW_HWM_MAX; i++)
		seq_printf(m, "%s %lld\n", names[i],
			   (long long)atomic64_read(&vdev->hwm[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(viw_counters);

static int viw_ceps_show(struct seq_file *m, void *unused)
{
	viw_cm_show_ceps(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(viw_ceps);

void viw_debugfs_add_device(struct viw_device *vdev)
{
	if (!viw_debugfs_root)
		return;
	vdev->debugfs = debugfs_create_dir(dev_name(&vdev->ibdev.dev),
					   viw_debugfs_root);
	debugfs_create_file("objects", 0444, vdev->debugfs, vdev,
			    &viw_objects_fops);
	debugfs_create_file("counters", 0444, vdev->debugfs, vdev,
			    &viw_counters_fops);
}

void viw_debugfs_remove_device(struct viw_device *vdev)
{
	debugfs_remove_recursive(vdev->debugfs);
	vdev->debugfs = NULL;
}

void viw_debugfs_init(void)
{
	struct viw_mpa_prefs *prefs = viw_cm_prefs();

	viw_debugfs_root = debugfs_create_dir("viw", NULL);
	debugfs_create_u8("mpa_revision", 0644, viw_debugfs_root,
			  &prefs->revision);
	debugfs_create_bool("mpa_crc", 0644, viw_debugfs_root, &prefs->crc);
	debugfs_create_bool("mpa_p2p", 0644, viw_debugfs_root, &prefs->p2p);
	debugfs_create_u8("mpa_rtr", 0644, viw_debugfs_root, &prefs->rtr);
	debugfs_create_u32("poll_idle_us", 0644, viw_debugfs_root,
			   viw_poll_idle_knob());
	debugfs_create_u32("poll_shared_us", 0644, viw_debugfs_root,
			   viw_poll_shared_knob());
	debugfs_create_u32("bind_delay_ms", 0600, viw_debugfs_root,
			   viw_qp_bind_delay_knob());
	debugfs_create_u32("tx_short_delay_ms", 0600, viw_debugfs_root,
			   viw_tx_short_delay_knob());
	debugfs_create_bool("tx_spill_fail", 0600, viw_debugfs_root,
			    viw_tx_spill_fail_knob());
	debugfs_create_bool("tx_cut_next", 0600, viw_debugfs_root,
			    viw_tx_cut_next_knob());
	debugfs_create_u32("rx_send_done_delay_ms", 0600, viw_debugfs_root,
			   viw_rx_send_done_delay_knob());
	debugfs_create_u32("tx_run_hold_ms", 0600, viw_debugfs_root,
			   viw_tx_run_hold_knob());
	debugfs_create_file("ceps", 0444, viw_debugfs_root, NULL,
			    &viw_ceps_fops);
}

void viw_debugfs_exit(void)
{
	debugfs_remove_recursive(viw_debugfs_root);
	viw_debugfs_root = NULL;
}
