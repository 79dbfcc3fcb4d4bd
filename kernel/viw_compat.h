/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Differences between the kernels viw builds for (6.1 and 6.12).
 *
 * Kbuild probes the kernel headers and defines:
 *   VIW_CREATE_CQ_TAKES_ATTRS - ib_device_ops.create_cq takes the uverbs
 *	attribute bundle instead of the driver udata (Linux 6.10 and later).
 */
#ifndef VIW_COMPAT_H
#define VIW_COMPAT_H

#include <rdma/uverbs_ioctl.h>

#endif /* VIW_COMPAT_H */
