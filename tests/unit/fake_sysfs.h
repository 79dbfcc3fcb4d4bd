/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A fake sysfs tree for running libibverbs' device discovery on a machine
 * without RDMA devices.
 *
 * libibverbs reads sysfs below $SYSFS_PATH; it asks RDMA netlink first and
 * only falls back to sysfs when netlink is unavailable, and it stat()s
 * /dev/infiniband/uverbsN.  The test program defines socket() and stat()
 * (it must be linked with exported symbols) so that RDMA netlink fails and
 * /dev/infiniband/ is looked up in the fake tree.
 */
#ifndef VIW_TEST_FAKE_SYSFS_H
#define VIW_TEST_FAKE_SYSFS_H

#include <stddef.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

struct fake_dev {
	const char *uverbs;	/* "uverbs0" */
	const char *ibdev;	/* the ibdev name, chosen by the "user" */
	const char *hca_type;	/* NULL: no hca_type attribute */
	unsigned int abi;	/* the uverbs ABI of the device's driver */
};

/*
 * Builds the tree in a new temporary directory, points SYSFS_PATH at it
 * and removes it at exit.  Call before the first libibverbs call.
 * Returns 0 or -1 (with a message on stderr).
 */
int fake_sysfs_create(const struct fake_dev *devs, size_t n);

#endif
