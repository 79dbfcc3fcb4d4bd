// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_match: which devices libviw claims, and the run-time half
 * of the provider ABI layout check.
 *
 * A fake sysfs (fake_sysfs.c) shows libibverbs devices named freely by
 * "users", with and without hca_type "viw", and one viw device whose
 * driver reports another uverbs ABI.  libviw must claim exactly the viw
 * devices of its ABI, whatever their names.
 *
 * The test also registers a provider of its own, built with
 * verbs_provider.h, for one more device.  libibverbs then fills in that
 * provider's struct verbs_device through its own layout, and the test
 * reads the fields back through ours: ops, refcount, the list link and
 * the sysfs pointer, none of which a static table can prove.  That
 * libibverbs calls our match_device at all proves its offset.
 *
 * Environment: RDMAV_DRIVERS=<build>/lib/libviw (set by ctest).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/viw-abi.h>

#include "fake_sysfs.h"
#include "verbs_provider.h"
#include "viw_check.h"

#define PROBE_HCA_TYPE "viw-test-probe"
#define CANARY 0xa5
#define CANARY_LEN 64

/* The test's own provider, claiming hca_type PROBE_HCA_TYPE. */
static struct verbs_sysfs_dev *probe_sysfs;
static unsigned char *probe_mem;
static unsigned int probe_matches;

static bool probe_match(struct verbs_sysfs_dev *sysfs_dev)
{
	char buf[64];

	if (ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev,
				      "hca_type") <= 0 ||
	    strcmp(buf, PROBE_HCA_TYPE))
		return false;
	probe_sysfs = sysfs_dev;
	probe_matches++;
	return true;
}

static struct verbs_device *probe_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	probe_mem = calloc(1, sizeof(struct verbs_device) + CANARY_LEN);
	if (!probe_mem)
		return NULL;
	memset(probe_mem + sizeof(struct verbs_device), CANARY, CANARY_LEN);
	return (struct verbs_device *)probe_mem;
}

static void probe_uninit(struct verbs_device *vdev)
{
	free(vdev);
}

static const struct verbs_device_ops probe_ops = {
	.name = "viw-test-probe",
	.match_min_abi_version = 0,
	.match_max_abi_version = 1000,
	.match_device = probe_match,
	.alloc_device = probe_alloc,
	.uninit_device = probe_uninit,
};

static struct ibv_device *find(struct ibv_device **list, const char *name)
{
	for (; list && *list; list++)
		if (!strcmp((*list)->name, name))
			return *list;
	return NULL;
}

static const struct verbs_device_ops *owner(struct ibv_device **list,
					    const char *name)
{
	struct ibv_device *dev = find(list, name);

	return dev ? ((struct verbs_device *)dev)->ops : NULL;
}

static bool canary_intact(void)
{
	size_t i;

	for (i = 0; i < CANARY_LEN; i++)
		if (probe_mem[sizeof(struct verbs_device) + i] != CANARY)
			return false;
	return true;
}

static void check_probe_layout(struct ibv_device **list)
{
	struct ibv_device *dev = find(list, "probe0");
	struct verbs_device *vdev = (struct verbs_device *)dev;
	char buf[64];

	tc_result(dev && probe_matches == 1 && (void *)dev == probe_mem,
		  "test provider claimed probe0 once",
		  "libibverbs did not call match_device/alloc_device as expected");
	if (!dev || (void *)dev != probe_mem)
		return;
	tc_result(vdev->ops == &probe_ops, "verbs_device.ops",
		  "libibverbs stored ops elsewhere");
	tc_result(vdev->refcount == 2, "verbs_device.refcount",
		  "not 1 (alloc) + 1 (device list hold)");
	tc_result(vdev->sysfs == probe_sysfs && probe_sysfs,
		  "verbs_device.sysfs", "not the device passed to match_device");
	tc_result(vdev->entry.next && vdev->entry.prev &&
		  vdev->entry.next->prev == &vdev->entry &&
		  vdev->entry.prev->next == &vdev->entry,
		  "verbs_device.entry", "not a linked list node");
	tc_result(vdev->core_support == 0 && canary_intact(),
		  "nothing written past verbs_device.entry/sysfs",
		  "core_support or the bytes after the struct changed");
	tc_result(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), vdev->sysfs,
					    "node_type") > 0 &&
		  dev->node_type == IBV_NODE_RNIC &&
		  dev->transport_type == IBV_TRANSPORT_IWARP,
		  "sysfs handle usable, device is an iWARP RNIC",
		  "wrong node or transport type");
}

static void check_viw_claims(struct ibv_device **list,
			     const struct verbs_device_ops *viw)
{
	tc_result(viw != NULL, "libibverbs loaded libviw from RDMAV_DRIVERS",
		  "verbs_provider_viw not found in a loaded libviw");
	if (!viw)
		return;
	tc_result(owner(list, "blue") == viw,
		  "viw claims a viw device named blue", "not claimed by libviw");
	tc_result(owner(list, "rnic-2") == viw,
		  "viw claims a viw device named rnic-2",
		  "not claimed by libviw");
	tc_result(!find(list, "viw0"),
		  "viw ignores a device named viw0 of another hca_type",
		  "someone claimed it (name matching?)");
	tc_result(!find(list, "nohca"),
		  "viw ignores a device without hca_type", "someone claimed it");
	tc_result(!find(list, "green"),
		  "viw refuses a viw device of another uverbs ABI",
		  "someone claimed it");
}

int main(void)
{
	static const struct fake_dev devs[] = {
		{ "uverbs0", "blue", VIW_HCA_TYPE, VIW_ABI_VERSION },
		{ "uverbs1", "viw0", "not-viw", VIW_ABI_VERSION },
		{ "uverbs2", "green", VIW_HCA_TYPE, VIW_ABI_VERSION + 1 },
		{ "uverbs3", "probe0", PROBE_HCA_TYPE, 1 },
		{ "uverbs4", "nohca", NULL, VIW_ABI_VERSION },
		{ "uverbs5", "rnic-2", VIW_HCA_TYPE, VIW_ABI_VERSION },
	};
	const char *drivers = getenv("RDMAV_DRIVERS");
	const struct verbs_device_ops *viw = NULL;
	struct ibv_device **list;
	char so[4096];
	void *h;
	int num;

	if (!drivers || drivers[0] != '/') {
		fprintf(stderr, "set RDMAV_DRIVERS=<build>/lib/libviw\n");
		return 2;
	}
	if (fake_sysfs_create(devs, ARRAY_SIZE(devs)))
		return 2;
	verbs_register_driver_34(&probe_ops);

	list = ibv_get_device_list(&num);
	tc_result(list && num == 3, "three devices claimed",
		  "expected blue, rnic-2 and probe0");

	snprintf(so, sizeof(so), "%s-rdmav34.so", drivers);
	h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		viw = dlsym(h, "verbs_provider_viw");
	check_viw_claims(list, viw);
	check_probe_layout(list);
	ibv_free_device_list(list);
	return tc_done("unit.provider_match");
}
