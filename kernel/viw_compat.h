/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Differences between the kernels viw builds for (6.1 and 6.12).
 *
 * Kbuild probes the kernel headers and defines:
 *   VIW_CREATE_CQ_TAKES_ATTRS - ib_device_ops.create_cq takes the uverbs
 *	attribute bundle instead of the driver udata (Linux 6.10 and later).
 *   VIW_HAVE_VM_FLAGS_SET - vm_area_struct flags are set with
 *	vm_flags_set() (Linux 6.3 and later, where vm_flags is read-only).
 */
#ifndef VIW_COMPAT_H
#define VIW_COMPAT_H

#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>

static inline void viw_vma_set_flags(struct vm_area_struct *vma,
				     unsigned long flags)
{
#ifdef VIW_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* VIW_COMPAT_H */
