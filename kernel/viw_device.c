// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw: device and port attributes, and the per-device object limits.
 */
#include <linux/etherdevice.h>
#include <rdma/ib_user_verbs.h>

#include "viw_verbs.h"

/* Take one object of a type against its device limit. */
bool viw_obj_get(struct viw_device *vdev, enum viw_obj_type type)
{
	static const int limits[VIW_OBJ_MAX] = {
		[VIW_OBJ_UCTX] = INT_MAX,
		[VIW_OBJ_PD] = VIW_MAX_PD,
		[VIW_OBJ_MR] = VIW_MAX_MR,
		[VIW_OBJ_CQ] = VIW_MAX_CQ,
		[VIW_OBJ_QP] = VIW_MAX_QP,
		[VIW_OBJ_SRQ] = VIW_MAX_SRQ,
		[VIW_OBJ_MW] = VIW_MAX_MW,
		[VIW_OBJ_DM] = VIW_MAX_DM,
	};

	return atomic_add_unless(&vdev->obj_count[type], 1, limits[type]);
}

void viw_obj_put(struct viw_device *vdev, enum viw_obj_type type)
{
	WARN_ON_ONCE(atomic_dec_return(&vdev->obj_count[type]) < 0);
}

/*
 * RFC 7306 atomics are performed with a 64-bit compare-and-exchange on
 * the target page (viw_mr_atomic), so they are atomic with respect to the
 * CPUs and every other device as well, not just to this one: GLOB.  Where
 * atomic64_t is emulated with locks (CONFIG_GENERIC_ATOMIC64), only
 * atomics of viw itself agree on that lock: HCA.
 */
static enum ib_atomic_cap viw_atomic_cap(void)
{
	return IS_ENABLED(CONFIG_GENERIC_ATOMIC64) ? IB_ATOMIC_HCA :
						     IB_ATOMIC_GLOB;
}

int viw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata)
{
	struct viw_device *vdev = to_viw_dev(ibdev);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 0;
	attr->sys_image_guid = vdev->ibdev.node_guid;
	attr->max_mr_size = VIW_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = VIW_VENDOR_ID;
	attr->vendor_part_id = 1;
	attr->hw_ver = VIW_ABI_VERSION;
	attr->max_qp = VIW_MAX_QP;
	attr->max_qp_wr = VIW_MAX_QP_WR;
	attr->max_send_sge = VIW_MAX_SGE;
	attr->max_recv_sge = VIW_MAX_SGE;
	attr->max_sge_rd = VIW_MAX_SGE_RD;
	attr->max_cq = VIW_MAX_CQ;
	attr->max_cqe = VIW_MAX_CQE;
	attr->max_mr = VIW_MAX_MR;
	attr->max_mw = VIW_MAX_MW;
	attr->max_dm_size = VIW_MAX_DM_SIZE;
	attr->device_cap_flags = IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS;
	attr->max_pd = VIW_MAX_PD;
	attr->max_qp_rd_atom = VIW_MAX_IRD;
	attr->max_qp_init_rd_atom = VIW_MAX_ORD;
	attr->max_res_rd_atom = VIW_MAX_QP * VIW_MAX_IRD;
	attr->max_srq = VIW_MAX_SRQ;
	attr->max_srq_wr = VIW_MAX_SRQ_WR;
	attr->max_srq_sge = VIW_MAX_SGE;
	attr->max_pkeys = 1;
	attr->atomic_cap = viw_atomic_cap();
	/*
	 * Fast registration (viw_alloc_mr): an MR's page list has at most
	 * this many pages.  The rw API and the ULPs size their MRs by it,
	 * and divide by it (rdma_rw_mr_factor).
	 */
	attr->max_fast_reg_page_list_len = VIW_MAX_FR_PAGES;
	/*
	 * IBK_ALLOW_USER_UNREG: "rdma link delete" may remove the device.
	 * No IBK_LOCAL_DMA_LKEY: every kernel PD gets a DMA MR of its own
	 * from the core (ib_alloc_pd calls viw_get_dma_mr), so that its
	 * local_dma_lkey names that PD and no other.
	 */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	return 0;
}

/*
 * The core's iWARP path (iw_query_port) has already filled in the port
 * state from the netdev (carrier and an IPv4 address) and the MTUs; only
 * the rest is ours.
 */
int viw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr)
{
	attr->gid_tbl_len = VIW_GID_TBL_LEN;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_UVERBS_PCF_CM_SUP | IB_UVERBS_PCF_DEVICE_MGMT_SUP;
	attr->max_msg_sz = SZ_2G;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_FDR;
	return 0;
}

int viw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index != 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

int viw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IWARP;
	immutable->gid_tbl_len = VIW_GID_TBL_LEN;
	immutable->pkey_tbl_len = 1;
	return 0;
}

void viw_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "viw-abi-%d", VIW_ABI_VERSION);
}

/*
 * "hca_type" names the device model, as it does for hardware drivers.  The
 * provider matches on it: viw devices are registered with
 * RDMA_DRIVER_UNKNOWN and named by the user, so neither the driver id nor
 * the name can identify them.
 */
static ssize_t hca_type_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", VIW_HCA_TYPE);
}
static DEVICE_ATTR_RO(hca_type);

static struct attribute *viw_dev_attrs[] = {
	&dev_attr_hca_type.attr,
	NULL
};

const struct attribute_group viw_attr_group = {
	.attrs = viw_dev_attrs,
};
