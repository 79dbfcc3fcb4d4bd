// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: module entry, device life cycle and the rdma link type "viw".
 *
 * Devices are created with "rdma link add NAME type viw netdev DEV" and go
 * away with "rdma link delete NAME", when their netdev is unregistered, or
 * when the module is unloaded, which is refused while a process or a
 * kernel consumer uses viw (viw_verbs.c).  viw registers its devices with
 * RDMA_DRIVER_UNKNOWN, so it must never call ib_unregister_driver(): that
 * would also unregister every other out-of-tree device.  It keeps a list of
 * its own instead.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "viw.h"
#include "viw_cm.h"

MODULE_AUTHOR("The viw developers");
MODULE_DESCRIPTION("viw: software iWARP RNIC with a hardware-shaped host interface");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("viw");

/*
 * Every device viw ever registered, live or dead, each with a reference on
 * its struct device.  A dead device (dealloc_driver has run) stays listed
 * until viw_reap_devices() has fenced its unregistration: only then can no
 * core code call back into this module for it.
 */
static LIST_HEAD(viw_devices);
static DEFINE_MUTEX(viw_devices_lock);

/* Serialises newlink so that the duplicate checks hold until registration. */
static DEFINE_MUTEX(viw_newlink_lock);

static void viw_dealloc_driver(struct ib_device *ibdev)
{
	struct viw_device *vdev = to_viw_dev(ibdev);
	int i;

	/* MRs released by the data path's last put go in a work item. */
	viw_mem_flush();
	for (i = 0; i < VIW_OBJ_MAX; i++)
		WARN_ON_ONCE(atomic_read(&vdev->obj_count[i]));
	WARN_ON_ONCE(atomic64_read(&vdev->dm_bytes));
	viw_debugfs_remove_device(vdev);
	viw_poll_stop(vdev);
	viw_direct_free_device(vdev);
	xa_destroy(&vdev->qp_xa);
	xa_destroy(&vdev->mr_xa);

	mutex_lock(&viw_devices_lock);
	vdev->dead = true;
	mutex_unlock(&viw_devices_lock);
}

/*
 * The device's life cycle is the module's: the verbs come from
 * viw_verbs_ops, which ib_set_device_ops() merges with this.
 */
static const struct ib_device_ops viw_link_device_ops = {
	.dealloc_driver = viw_dealloc_driver,
};

static bool viw_netdev_supported(const struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER || ndev->type == ARPHRD_LOOPBACK;
}

static struct viw_device *viw_device_alloc(struct net_device *ndev)
{
	struct viw_device *vdev;
	int i;

	vdev = ib_alloc_device(viw_device, ibdev);
	if (!vdev)
		return NULL;
	if (viw_stats_init(vdev)) {
		ib_dealloc_device(&vdev->ibdev);
		return NULL;
	}

	vdev->netdev = ndev;
	spin_lock_init(&vdev->mac_lock);
	ether_addr_copy(vdev->mac, ndev->dev_addr);
	xa_init_flags(&vdev->qp_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&vdev->mr_xa, XA_FLAGS_ALLOC1);
	for (i = 0; i < VIW_OBJ_MAX; i++)
		atomic_set(&vdev->obj_count[i], 0);
	INIT_LIST_HEAD(&vdev->list);

	vdev->ibdev.node_type = RDMA_NODE_RNIC;
	/*
	 * Sit beside the netdev under its parent (a PCI NIC), as hardware
	 * RNICs do: /sys/class/infiniband/DEV/device/net/ then names the
	 * netdev, which is where rdma-core's tests look for it.  A veth has
	 * no parent, and the device stays a virtual one.
	 */
	vdev->ibdev.dev.parent = ndev->dev.parent;
	vdev->ibdev.phys_port_cnt = 1;
	vdev->ibdev.num_comp_vectors = 1;
	vdev->ibdev.local_dma_lkey = 0;
	/*
	 * The uverbs post commands, which the core leaves disabled, are
	 * viw's doorbells.
	 */
	vdev->ibdev.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				       BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				       BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV);
	/* iWARP devices derive the node GUID from the MAC address. */
	addrconf_addr_eui48((u8 *)&vdev->ibdev.node_guid, ndev->dev_addr);
	memcpy(vdev->ibdev.node_desc, "viw software iWARP RNIC",
	       sizeof("viw software iWARP RNIC"));
	ib_set_device_ops(&vdev->ibdev, &viw_verbs_ops);
	/* The driver's attributes of uverbs methods (device memory). */
	vdev->ibdev.driver_def = viw_uapi_defs;
	ib_set_device_ops(&vdev->ibdev, &viw_link_device_ops);
	return vdev;
}

/* Drop the devices whose unregistration has completed.  Sleeps. */
static void viw_reap_devices(bool all)
{
	struct viw_device *vdev;

	for (;;) {
		bool found = false;

		mutex_lock(&viw_devices_lock);
		list_for_each_entry(vdev, &viw_devices, list) {
			if (all || vdev->dead) {
				list_del_init(&vdev->list);
				found = true;
				break;
			}
		}
		mutex_unlock(&viw_devices_lock);
		if (!found)
			return;
		/*
		 * Unregisters a live device.  For one that another path is
		 * unregistering, this waits until that has finished: the
		 * core serialises unregistrations of a device.
		 */
		ib_unregister_device(&vdev->ibdev);
		/* After the last core callback, as late as vdev lives. */
		viw_stats_free(vdev);
		put_device(&vdev->ibdev.dev);
	}
}

/* Returns true if a live viw device already uses @ndev. */
static bool viw_netdev_taken(struct net_device *ndev)
{
	struct viw_device *vdev;
	bool found = false;

	mutex_lock(&viw_devices_lock);
	list_for_each_entry(vdev, &viw_devices, list) {
		if (!vdev->dead && vdev->netdev == ndev)
			found = true;
	}
	mutex_unlock(&viw_devices_lock);
	return found;
}

/*
 * rdma_link_ops.newlink gets no netlink extended ack (Linux 6.1 to 6.12),
 * so the rdma tool can only print strerror() of what this returns: each
 * reason has an errno of its own, and the kernel log says more.
 *   -EOPNOTSUPP	the netdev is not Ethernet ("Operation not supported")
 *   -EBUSY	the netdev has a viw device ("Device or resource busy")
 *   -EEXIST	the name is taken ("File exists")
 * The core itself answers -ENODEV when the netdev does not exist.
 */
static int viw_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct ib_device *other;
	struct viw_device *vdev;
	int rv;

	if (!viw_netdev_supported(ndev)) {
		pr_warn("%s: netdev type %u not supported (Ethernet only)\n",
			ndev->name, ndev->type);
		return -EOPNOTSUPP;
	}

	viw_reap_devices(false);
	mutex_lock(&viw_newlink_lock);
	if (viw_netdev_taken(ndev)) {
		pr_warn("%s already has a viw device\n", ndev->name);
		rv = -EBUSY;
		goto out_unlock;
	}
	other = ib_device_get_by_name(ibdev_name, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		pr_warn("an RDMA device named %s exists already\n",
			ibdev_name);
		rv = -EEXIST;
		goto out_unlock;
	}

	vdev = viw_device_alloc(ndev);
	if (!vdev) {
		rv = -ENOMEM;
		goto out_unlock;
	}
	rv = viw_poll_start(vdev);
	if (rv)
		goto out_dealloc;
	rv = ib_device_set_netdev(&vdev->ibdev, ndev, 1);
	if (rv)
		goto out_dealloc;
	rv = ib_register_device(&vdev->ibdev, ibdev_name, NULL);
	if (rv) {
		pr_warn("registering %s failed: %d\n", ibdev_name, rv);
		goto out_dealloc;
	}

	viw_debugfs_add_device(vdev);
	viw_direct_add_device(vdev);
	get_device(&vdev->ibdev.dev);
	mutex_lock(&viw_devices_lock);
	list_add_tail(&vdev->list, &viw_devices);
	mutex_unlock(&viw_devices_lock);
	mutex_unlock(&viw_newlink_lock);

	dev_info(&vdev->ibdev.dev, "viw device on %s (%pM)\n", ndev->name,
		 ndev->dev_addr);
	return 0;

out_dealloc:
	viw_stats_free(vdev);
	ib_dealloc_device(&vdev->ibdev);
out_unlock:
	mutex_unlock(&viw_newlink_lock);
	return rv;
}

static struct rdma_link_ops viw_link_ops = {
	.type = "viw",
	.newlink = viw_newlink,
};

/* Find the live viw device on @ndev and take a registration reference. */
static struct viw_device *viw_device_get_by_netdev(struct net_device *ndev)
{
	struct viw_device *vdev, *found = NULL;

	mutex_lock(&viw_devices_lock);
	list_for_each_entry(vdev, &viw_devices, list) {
		if (!vdev->dead && vdev->netdev == ndev &&
		    ib_device_try_get(&vdev->ibdev)) {
			found = vdev;
			break;
		}
	}
	mutex_unlock(&viw_devices_lock);
	return found;
}

static void viw_port_event(struct viw_device *vdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &vdev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&event);
}

static int viw_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct viw_device *vdev;

	vdev = viw_device_get_by_netdev(ndev);
	if (!vdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_CHANGE:
		viw_port_event(vdev, netif_carrier_ok(ndev) ?
				     IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	case NETDEV_DOWN:
		viw_port_event(vdev, IB_EVENT_PORT_ERR);
		viw_device_link_down(vdev);
		break;
	case NETDEV_CHANGEADDR:
		spin_lock(&vdev->mac_lock);
		ether_addr_copy(vdev->mac, ndev->dev_addr);
		spin_unlock(&vdev->mac_lock);
		viw_port_event(vdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_UNREGISTER:
		/* Its namespace may be going: close the listener in it now. */
		viw_direct_remove_device(vdev);
		/* The core drops its netdev reference during unregistration. */
		ib_unregister_device_queued(&vdev->ibdev);
		break;
	default:
		break;
	}
	ib_device_put(&vdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block viw_netdev_nb = {
	.notifier_call = viw_netdev_event,
};

static int __init viw_init(void)
{
	int rv;

	BUILD_BUG_ON(sizeof(struct viw_sqe) != VIW_SQE_SIZE);
	BUILD_BUG_ON(sizeof(struct viw_sqe_atomic) >
		     sizeof(((struct viw_sqe *)0)->sge));
	BUILD_BUG_ON(sizeof(struct viw_rqe) != VIW_RQE_SIZE);
	BUILD_BUG_ON(sizeof(struct viw_cqe) != VIW_CQE_SIZE);
	BUILD_BUG_ON(sizeof(struct viw_ring_ctrl) > VIW_RING_SLOTS_OFFSET);
	BUILD_BUG_ON(sizeof(struct viw_db_page) > VIW_DB_PAGE_SIZE);

	rv = viw_cm_init();
	if (rv)
		return rv;
	rv = viw_mem_init();
	if (rv)
		goto err_cm;
	rv = viw_tx_init();
	if (rv)
		goto err_mem;
	rv = register_netdevice_notifier(&viw_netdev_nb);
	if (rv)
		goto err_tx;
	rv = viw_gid_init();
	if (rv)
		goto err_netdev;
	viw_debugfs_init();
	rdma_link_register(&viw_link_ops);
	pr_info("loaded, host interface ABI %d\n", VIW_ABI_VERSION);
	return 0;

err_netdev:
	unregister_netdevice_notifier(&viw_netdev_nb);
err_tx:
	viw_tx_exit();
err_mem:
	viw_mem_exit();
err_cm:
	viw_cm_exit();
	return rv;
}

static void __exit viw_exit(void)
{
	rdma_link_unregister(&viw_link_ops);
	viw_gid_exit();
	unregister_netdevice_notifier(&viw_netdev_nb);
	viw_reap_devices(true);
	viw_debugfs_exit();
	viw_tx_exit();
	viw_mem_exit();
	viw_cm_exit();
	pr_info("unloaded\n");
}

module_init(viw_init);
module_exit(viw_exit);
