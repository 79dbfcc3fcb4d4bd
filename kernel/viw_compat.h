/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Differences between the kernels viw builds for (6.1 and 6.12).
 *
 * Kbuild probes the kernel headers and defines:
 *   VIW_CREATE_CQ_TAKES_ATTRS - ib_device_ops.create_cq takes the uverbs
 *	attribute bundle instead of the driver udata (Linux 6.10 and later).
 *   VIW_HAVE_VM_FLAGS_SET - vm_area_struct flags are set with
 *	vm_flags_set() (Linux 6.3 and later, where vm_flags is read-only).
 *   VIW_HAVE_INET_FLAGS - an inet socket's flags are bits of inet_flags,
 *	set with inet_set_bit() (Linux 6.6 and later), not bitfields.
 */
#ifndef VIW_COMPAT_H
#define VIW_COMPAT_H

#include <linux/mm.h>
#include <net/inet_sock.h>
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

/*
 * IP_BIND_ADDRESS_NO_PORT: a bind to port 0 takes the address only, and
 * connect() chooses the port, one whose connection to the peer is free.
 * @sk is new and not yet shared.
 */
static inline void viw_sock_set_bind_address_no_port(struct sock *sk)
{
#ifdef VIW_HAVE_INET_FLAGS
	inet_set_bit(BIND_ADDRESS_NO_PORT, sk);
#else
	inet_sk(sk)->bind_address_no_port = 1;
#endif
}

#endif /* VIW_COMPAT_H */
