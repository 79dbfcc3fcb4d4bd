// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: port counters, read through the RDMA core's statistics interface
 * ("rdma statistic show link DEV/1", /sys/class/infiniband/DEV/ports/1/
 * hw_counters).
 *
 * The data path adds to per-CPU counters (viw_count()); a read sums them.
 * Two counters are computed when read: the connections active now
 * (established minus closed) and the TCP retransmissions of viw's sockets
 * (those of the live sockets plus what closed sockets had).
 */
#include "viw_verbs.h"
#include "viw_cm.h"

enum viw_stat {
	VIW_STAT_TX_FPDUS,
	VIW_STAT_TX_BYTES,
	VIW_STAT_RX_FPDUS,
	VIW_STAT_RX_BYTES,
	VIW_STAT_DOORBELLS,
	VIW_STAT_TERM_SENT,
	VIW_STAT_TERM_RCVD,
	VIW_STAT_FLUSHED_WQES,
	VIW_STAT_CONN_ESTABLISHED,
	VIW_STAT_CONN_FAILED,
	VIW_STAT_CONN_ACTIVE,
	VIW_STAT_MPA_REJECT_SENT,
	VIW_STAT_MPA_REJECT_RCVD,
	VIW_STAT_CRC_ERRORS,
	VIW_STAT_TCP_RETRANS,
	VIW_STAT_POLL_BACKOFFS,
	VIW_STAT_ACKS_SENT,
	VIW_STAT_ACKS_RCVD,
	VIW_STAT_TX_CHAINED_RUNS,
	VIW_STAT_TX_HANDOFFS,
	VIW_STAT_TX_SPILLS,
	VIW_STAT_MAX
};

static const struct rdma_stat_desc viw_stat_descs[VIW_STAT_MAX] = {
	[VIW_STAT_TX_FPDUS].name = "tx_fpdus",
	[VIW_STAT_TX_BYTES].name = "tx_payload_bytes",
	[VIW_STAT_RX_FPDUS].name = "rx_fpdus",
	[VIW_STAT_RX_BYTES].name = "rx_payload_bytes",
	[VIW_STAT_DOORBELLS].name = "doorbells",
	[VIW_STAT_TERM_SENT].name = "terminates_sent",
	[VIW_STAT_TERM_RCVD].name = "terminates_received",
	[VIW_STAT_FLUSHED_WQES].name = "flushed_wqes",
	[VIW_STAT_CONN_ESTABLISHED].name = "connections_established",
	[VIW_STAT_CONN_FAILED].name = "connections_failed",
	[VIW_STAT_CONN_ACTIVE].name = "connections_active",
	[VIW_STAT_MPA_REJECT_SENT].name = "mpa_rejects_sent",
	[VIW_STAT_MPA_REJECT_RCVD].name = "mpa_rejects_received",
	[VIW_STAT_CRC_ERRORS].name = "crc_errors",
	[VIW_STAT_TCP_RETRANS].name = "tcp_retransmits",
	[VIW_STAT_POLL_BACKOFFS].name = "poll_backoffs",
	[VIW_STAT_ACKS_SENT].name = "acks_sent",
	[VIW_STAT_ACKS_RCVD].name = "acks_received",
	[VIW_STAT_TX_CHAINED_RUNS].name = "tx_chained_runs",
	[VIW_STAT_TX_HANDOFFS].name = "tx_handoffs",
	[VIW_STAT_TX_SPILLS].name = "tx_spills",
};

/* The counters that are plain sums, and where each one is kept. */
static const u8 viw_stat_counter[VIW_STAT_MAX] = {
	[VIW_STAT_TX_FPDUS] = VIW_CNT_TX_FPDUS,
	[VIW_STAT_TX_BYTES] = VIW_CNT_TX_BYTES,
	[VIW_STAT_RX_FPDUS] = VIW_CNT_RX_FPDUS,
	[VIW_STAT_RX_BYTES] = VIW_CNT_RX_BYTES,
	[VIW_STAT_DOORBELLS] = VIW_CNT_DOORBELLS,
	[VIW_STAT_TERM_SENT] = VIW_CNT_TERM_SENT,
	[VIW_STAT_TERM_RCVD] = VIW_CNT_TERM_RCVD,
	[VIW_STAT_FLUSHED_WQES] = VIW_CNT_FLUSHED_WQES,
	[VIW_STAT_CONN_ESTABLISHED] = VIW_CNT_CONN_ESTABLISHED,
	[VIW_STAT_CONN_FAILED] = VIW_CNT_CONN_FAILED,
	[VIW_STAT_MPA_REJECT_SENT] = VIW_CNT_MPA_REJECT_SENT,
	[VIW_STAT_MPA_REJECT_RCVD] = VIW_CNT_MPA_REJECT_RCVD,
	[VIW_STAT_CRC_ERRORS] = VIW_CNT_CRC_ERRORS,
	[VIW_STAT_POLL_BACKOFFS] = VIW_CNT_POLL_BACKOFFS,
	[VIW_STAT_ACKS_SENT] = VIW_CNT_ACKS_SENT,
	[VIW_STAT_ACKS_RCVD] = VIW_CNT_ACKS_RCVD,
	[VIW_STAT_TX_CHAINED_RUNS] = VIW_CNT_TX_CHAINED_RUNS,
	[VIW_STAT_TX_HANDOFFS] = VIW_CNT_TX_HANDOFFS,
	[VIW_STAT_TX_SPILLS] = VIW_CNT_TX_SPILLS,
};

int viw_stats_init(struct viw_device *vdev)
{
	int i;

	vdev->counters = alloc_percpu(struct viw_counters);
	if (!vdev->counters)
		return -ENOMEM;
	for (i = 0; i < VIW_HWM_MAX; i++)
		atomic64_set(&vdev->hwm[i], 0);
	return 0;
}

void viw_stats_free(struct viw_device *vdev)
{
	free_percpu(vdev->counters);
	vdev->counters = NULL;
}

static u64 viw_counter_read(struct viw_device *vdev, enum viw_counter c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(vdev->counters, cpu)->val[c]);
	return sum;
}

struct rdma_hw_stats *viw_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port)
{
	return rdma_alloc_hw_stats_struct(viw_stat_descs, VIW_STAT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static u64 viw_stat_value(struct viw_device *vdev, enum viw_stat s)
{
	u64 closed;

	switch (s) {
	case VIW_STAT_CONN_ACTIVE:
		/* Closed first: a connection counts as closed only once up. */
		closed = viw_counter_read(vdev, VIW_CNT_CONN_CLOSED);
		return viw_counter_read(vdev, VIW_CNT_CONN_ESTABLISHED) - closed;
	case VIW_STAT_TCP_RETRANS:
		return viw_counter_read(vdev, VIW_CNT_TCP_RETRANS_CLOSED) +
		       viw_cm_tcp_retrans(vdev);
	default:
		return viw_counter_read(vdev, viw_stat_counter[s]);
	}
}

int viw_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index)
{
	struct viw_device *vdev = to_viw_dev(ibdev);
	int i;

	if (WARN_ON_ONCE(stats->num_counters != VIW_STAT_MAX))
		return -EINVAL;
	for (i = 0; i < VIW_STAT_MAX; i++)
		stats->value[i] = viw_stat_value(vdev, i);
	return VIW_STAT_MAX;
}
