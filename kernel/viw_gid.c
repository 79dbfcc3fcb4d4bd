// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: the GID table.
 *
 * iWARP has no GIDs on the wire; the table exists for the consumers that
 * name a peer by GID (ibv_rc_pingpong -g, perftest -x, rdma-core's tests)
 * and connect through modify_qp (viw_direct.c).  Its layout is fixed so
 * that an index can be given on a command line:
 *
 *   0      the MAC address in the upper six bytes, zeros after it: what
 *          every iWARP driver reports and what rdma_cm looks the device up by
 *   1      the netdev's first IPv4 address (its primary), IPv4-mapped
 *          (::ffff:a.b.c.d); zero while it has none
 *   2..15  its IPv6 addresses in the kernel's order (global scope before
 *          link-local), then its further IPv4 addresses
 *
 * The table is computed from the netdev's addresses on every query.  An
 * address notifier raises IB_EVENT_GID_CHANGE so that ib_core's GID cache,
 * which answers ibv_query_gid and resolves sgid_index, queries it again.
 */
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>

#include "viw.h"

struct viw_gid_walk {
	union ib_gid *tbl;
	int n;
};

static void viw_gid_add(struct viw_gid_walk *w, const union ib_gid *gid)
{
	if (w->n < VIW_GID_TBL_LEN)
		w->tbl[w->n] = *gid;
	w->n++;
}

static void viw_gid_v4(union ib_gid *gid, __be32 addr)
{
	ipv6_addr_set_v4mapped(addr, (struct in6_addr *)gid->raw);
}

/* IPv4 addresses after the first; RCU held. */
static void viw_gid_more_v4(struct viw_gid_walk *w, struct in_device *in_dev)
{
	const struct in_ifaddr *ifa;
	union ib_gid gid;
	bool first = true;

	in_dev_for_each_ifa_rcu(ifa, in_dev) {
		if (first) {
			first = false;
			continue;
		}
		viw_gid_v4(&gid, ifa->ifa_local);
		viw_gid_add(w, &gid);
	}
}

/* Fill @tbl (VIW_GID_TBL_LEN entries) with the current table. */
static void viw_gid_table(struct viw_device *vdev, union ib_gid *tbl)
{
	struct net_device *ndev = vdev->netdev;
	struct viw_gid_walk w = { .tbl = tbl, .n = 2 };
	const struct in_ifaddr *ifa;
	struct inet6_dev *in6_dev;
	struct in_device *in_dev;

	memset(tbl, 0, VIW_GID_TBL_LEN * sizeof(*tbl));
	spin_lock(&vdev->mac_lock);
	memcpy(tbl[0].raw, vdev->mac, ETH_ALEN);
	spin_unlock(&vdev->mac_lock);

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(ndev);
	if (in_dev) {
		ifa = rcu_dereference(in_dev->ifa_list);
		if (ifa)
			viw_gid_v4(&tbl[1], ifa->ifa_local);
	}
	in6_dev = __in6_dev_get(ndev);
	if (in6_dev) {
		const struct inet6_ifaddr *ifp;

		read_lock_bh(&in6_dev->lock);
		list_for_each_entry(ifp, &in6_dev->addr_list, if_list)
			viw_gid_add(&w, (const union ib_gid *)&ifp->addr);
		read_unlock_bh(&in6_dev->lock);
	}
	if (in_dev)
		viw_gid_more_v4(&w, in_dev);
	rcu_read_unlock();
}

int viw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid)
{
	union ib_gid *tbl;

	if (index < 0 || index >= VIW_GID_TBL_LEN)
		return -EINVAL;
	tbl = kmalloc_array(VIW_GID_TBL_LEN, sizeof(*tbl), GFP_KERNEL);
	if (!tbl)
		return -ENOMEM;
	viw_gid_table(to_viw_dev(ibdev), tbl);
	*gid = tbl[index];
	kfree(tbl);
	return 0;
}

/* An address of @ndev came or went: tell ib_core's GID cache. */
static void viw_gid_changed(struct net_device *ndev)
{
	struct ib_device *ibdev;
	struct ib_event event = {
		.event = IB_EVENT_GID_CHANGE,
		.element.port_num = 1,
	};

	/* RCU lookup, no sleeping: the IPv6 chain is atomic. */
	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return;
	if (ibdev->ops.query_gid == viw_query_gid) {
		event.device = ibdev;
		ib_dispatch_event(&event);
	}
	ib_device_put(ibdev);
}

static int viw_inetaddr_event(struct notifier_block *nb, unsigned long event,
			      void *arg)
{
	const struct in_ifaddr *ifa = arg;

	if (event == NETDEV_UP || event == NETDEV_DOWN)
		viw_gid_changed(ifa->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int viw_inet6addr_event(struct notifier_block *nb, unsigned long event,
			       void *arg)
{
	const struct inet6_ifaddr *ifp = arg;

	if (event == NETDEV_UP || event == NETDEV_DOWN)
		viw_gid_changed(ifp->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block viw_inetaddr_nb = {
	.notifier_call = viw_inetaddr_event,
};

static struct notifier_block viw_inet6addr_nb = {
	.notifier_call = viw_inet6addr_event,
};

int viw_gid_init(void)
{
	int rv;

	rv = register_inetaddr_notifier(&viw_inetaddr_nb);
	if (rv)
		return rv;
	rv = register_inet6addr_notifier(&viw_inet6addr_nb);
	if (rv)
		unregister_inetaddr_notifier(&viw_inetaddr_nb);
	return rv;
}

void viw_gid_exit(void)
{
	unregister_inet6addr_notifier(&viw_inet6addr_nb);
	unregister_inetaddr_notifier(&viw_inetaddr_nb);
}
