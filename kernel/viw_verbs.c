// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: user contexts, protection domains and the table of verbs.
 */
#include <linux/module.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "viw_qp.h"
#include "viw_verbs.h"
#include "viw_cm.h"

/*
 * While a process or a kernel consumer uses viw, "rmmod viw" must answer
 * "in use".  The core does not see to that: viw has disassociate_ucontext,
 * so that "rdma link delete" and the netdev going can take a device from
 * the processes that have it open, and with that op ib_uverbs holds no
 * module reference for an open device file (ib_uverbs_open); nor does
 * anything in the core hold one for a kernel consumer.  So viw holds its
 * own: one for each user context and one for each kernel PD.  Every
 * process needs a context, and every kernel consumer a PD, before it can
 * create anything else, and each lasts as long as its user does.  A user
 * PD needs none: its context holds one.
 *
 * Nothing waits for these references, so nothing can deadlock on them.
 * A context or kernel PD goes when its user frees it or when its device is
 * unregistered ("rdma link delete", netdev removal): ib_uverbs then
 * disassociates the context and calls viw_dealloc_ucontext(), and the
 * consumers' remove callbacks free their PDs.  viw_exit() runs only once
 * the count is zero, and from then on try_module_get() fails and so does
 * the verb.  viw_exit() still unregisters every device, which the core
 * fences against a dealloc verb running on it.
 */
static int viw_module_get(void)
{
	return try_module_get(THIS_MODULE) ? 0 : -ENODEV;
}

static int viw_alloc_ucontext(struct ib_ucontext *ibuctx,
			      struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibuctx->device);
	struct viw_ucontext *uctx = to_viw_uctx(ibuctx);
	struct viw_uresp_alloc_ctx uresp = {};
	struct viw_qmem db = {};
	u64 key;
	int rv;

	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	rv = viw_module_get();
	if (rv)
		return rv;
	if (!viw_obj_get(vdev, VIW_OBJ_UCTX)) {
		rv = -ENOMEM;
		goto err_module;
	}

	atomic64_set(&uctx->qmem_bytes, 0);
	rv = viw_qmem_alloc(&db, VIW_DB_PAGE_SIZE);
	if (rv)
		goto err_count;
	uctx->db = db.vaddr;
	/* Until the poller takes the context up, posts make the system call. */
	WRITE_ONCE(uctx->db->flags, VIW_DB_NEED_WAKEUP);

	/* From here on the entry owns the page and frees it last. */
	rv = viw_mmap_insert(ibuctx, &db, VIW_DB_PAGE_SIZE, &uctx->db_entry,
			     &key);
	if (rv)
		goto err_db;

	uresp.abi_version = VIW_ABI_VERSION;
	uresp.db_size = VIW_DB_PAGE_SIZE;
	uresp.db_key = key;
	uresp.sqe_size = sizeof(struct viw_sqe);
	uresp.rqe_size = sizeof(struct viw_rqe);
	uresp.cqe_size = sizeof(struct viw_cqe);
	uresp.max_sge = VIW_MAX_SGE;
	uresp.max_inline = VIW_MAX_INLINE;
	rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (rv)
		goto err_entry;
	viw_poll_add_uctx(vdev, uctx);
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(uctx->db_entry);
	goto err_count;
err_db:
	viw_qmem_free(&db);
err_count:
	viw_obj_put(vdev, VIW_OBJ_UCTX);
err_module:
	module_put(THIS_MODULE);
	return rv;
}

static void viw_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct viw_ucontext *uctx = to_viw_uctx(ibuctx);

	viw_poll_del_uctx(to_viw_dev(ibuctx->device), uctx);
	/* The entry frees the page once no mmap() can be using it. */
	rdma_user_mmap_entry_remove(uctx->db_entry);
	uctx->db = NULL;
	WARN_ON_ONCE(atomic64_read(&uctx->qmem_bytes));
	viw_obj_put(to_viw_dev(ibuctx->device), VIW_OBJ_UCTX);
	module_put(THIS_MODULE);
}

/*
 * The device is going away while the process still has it open (its netdev
 * was unregistered, or "rdma link delete").  The core destroys every object
 * of the context after this, through the usual destroy verbs, which stop
 * the engine.  There is nothing to stop here: the process's mappings of
 * queue memory hold their own page references and stay harmless, and the
 * doorbell system calls fail once the context is disassociated.  Having
 * this op is what lets unregistration proceed without waiting for the
 * process to exit; viw_dealloc_ucontext() then drops the context's module
 * reference, so the module unloads while the process still runs.
 */
static void viw_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

/*
 * A PD without udata is a kernel consumer's (viw_kverbs.c has its post
 * and poll verbs).  The core gives it its local_dma_lkey from get_dma_mr:
 * viw has no device-wide one (viw_query_device).
 */
static int viw_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct viw_pd *pd = to_viw_pd(ibpd);
	int rv;

	/* A kernel PD holds the module (viw_module_get()), a user PD not. */
	pd->holds_module = !udata;
	if (pd->holds_module) {
		rv = viw_module_get();
		if (rv)
			return rv;
	}
	if (!viw_obj_get(to_viw_dev(ibpd->device), VIW_OBJ_PD)) {
		if (pd->holds_module)
			module_put(THIS_MODULE);
		return -ENOMEM;
	}
	return 0;
}

static int viw_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	viw_obj_put(to_viw_dev(ibpd->device), VIW_OBJ_PD);
	if (to_viw_pd(ibpd)->holds_module)
		module_put(THIS_MODULE);
	return 0;
}

/*
 * Every verb viw implements, in alphabetical order.  viw_main.c adds the
 * device's own dealloc_driver.
 */
const struct ib_device_ops viw_verbs_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VIW_ABI_VERSION,
	.device_group = &viw_attr_group,

	.alloc_dm = viw_alloc_dm,
	.alloc_hw_port_stats = viw_alloc_hw_port_stats,
	.alloc_mr = viw_alloc_mr,
	.alloc_mw = viw_alloc_mw,
	.alloc_pd = viw_alloc_pd,
	.alloc_ucontext = viw_alloc_ucontext,
	.create_cq = viw_create_cq,
	.create_qp = viw_create_qp,
	.create_srq = viw_create_srq,
	.dealloc_dm = viw_dealloc_dm,
	.dealloc_mw = viw_dealloc_mw,
	.dealloc_pd = viw_dealloc_pd,
	.dealloc_ucontext = viw_dealloc_ucontext,
	.dereg_mr = viw_dereg_mr,
	.disassociate_ucontext = viw_disassociate_ucontext,
	.destroy_cq = viw_destroy_cq,
	.destroy_qp = viw_destroy_qp,
	.destroy_srq = viw_destroy_srq,
	.fill_res_cq_entry = viw_fill_res_cq_entry,
	.fill_res_mr_entry = viw_fill_res_mr_entry,
	.fill_res_qp_entry = viw_fill_res_qp_entry,
	.get_dev_fw_str = viw_get_dev_fw_str,
	.get_dma_mr = viw_get_dma_mr,
	.get_hw_stats = viw_get_hw_stats,
	.get_port_immutable = viw_get_port_immutable,
	.iw_accept = viw_iw_accept,
	.iw_add_ref = viw_iw_add_ref,
	.iw_connect = viw_iw_connect,
	.iw_create_listen = viw_iw_create_listen,
	.iw_destroy_listen = viw_iw_destroy_listen,
	.iw_get_qp = viw_iw_get_qp,
	.iw_reject = viw_iw_reject,
	.iw_rem_ref = viw_iw_rem_ref,
	.map_mr_sg = viw_map_mr_sg,
	.mmap = viw_mmap,
	.mmap_free = viw_mmap_free,
	.modify_qp = viw_modify_qp,
	.modify_srq = viw_modify_srq,
	.poll_cq = viw_poll_cq,
	.post_recv = viw_post_recv,
	.post_send = viw_post_send,
	.post_srq_recv = viw_post_srq_recv,
	.query_device = viw_query_device,
	.query_gid = viw_query_gid,
	.query_pkey = viw_query_pkey,
	.query_port = viw_query_port,
	.query_qp = viw_query_qp,
	.query_srq = viw_query_srq,
	.reg_dm_mr = viw_reg_dm_mr,
	.reg_user_mr = viw_reg_user_mr,
	.req_notify_cq = viw_req_notify_cq,
	.rereg_user_mr = viw_rereg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_cq, viw_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, viw_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, viw_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, viw_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, viw_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, viw_ucontext, ibuctx),
};
