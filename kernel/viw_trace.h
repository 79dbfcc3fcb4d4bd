/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: tracepoints, under events/viw/ in tracefs.
 *
 *   viw_qp_state	a QP changes state (old -> new)
 *   viw_cm_event	an event delivered to iw_cm, with its status
 *   viw_cm_close	an established connection is torn down: the CLOSE
 *			status, and whether the stream was reset
 *   viw_term_sent	a TERMINATE went out (layer, type, code)
 *   viw_term_rcvd	the peer's TERMINATE arrived
 *   viw_flush		a work queue was flushed (or discarded, to RESET)
 *   viw_doorbell	the process rang a QP's doorbell
 *
 * Every event names its device; QP events the QP number.  CM events name
 * the connection by a hash of its endpoint, not by a kernel address.
 * Device names
 * are copied into a fixed array rather than __string(), whose
 * __assign_str() changed arguments in Linux 6.10.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM viw

#if !defined(VIW_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define VIW_TRACE_H

#include <linux/hash.h>
#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>

#include "viw_qp.h"
#include "viw_cm.h"

TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);

#define viw_show_qp_state(s)					\
	__print_symbolic(s,					\
			 { IB_QPS_RESET, "RESET" },		\
			 { IB_QPS_INIT, "INIT" },		\
			 { IB_QPS_RTR, "RTR" },			\
			 { IB_QPS_RTS, "RTS" },			\
			 { IB_QPS_SQD, "SQD" },			\
			 { IB_QPS_SQE, "SQE" },			\
			 { IB_QPS_ERR, "ERR" })

TRACE_DEFINE_ENUM(IW_CM_EVENT_CONNECT_REQUEST);
TRACE_DEFINE_ENUM(IW_CM_EVENT_CONNECT_REPLY);
TRACE_DEFINE_ENUM(IW_CM_EVENT_ESTABLISHED);
TRACE_DEFINE_ENUM(IW_CM_EVENT_DISCONNECT);
TRACE_DEFINE_ENUM(IW_CM_EVENT_CLOSE);

#define viw_show_cm_event(e)					\
	__print_symbolic(e,					\
			 { IW_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST" }, \
			 { IW_CM_EVENT_CONNECT_REPLY, "CONNECT_REPLY" }, \
			 { IW_CM_EVENT_ESTABLISHED, "ESTABLISHED" }, \
			 { IW_CM_EVENT_DISCONNECT, "DISCONNECT" }, \
			 { IW_CM_EVENT_CLOSE, "CLOSE" })

#define viw_trace_dev(vdev) dev_name(&(vdev)->ibdev.dev)

TRACE_EVENT(viw_qp_state,
	TP_PROTO(struct viw_qp *qp, enum ib_qp_state from,
		 enum ib_qp_state to),
	TP_ARGS(qp, from, to),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(int, from)
		__field(int, to)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(qp->vdev),
			IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("dev=%s qpn=%u %s -> %s", __entry->dev, __entry->qpn,
		  viw_show_qp_state(__entry->from),
		  viw_show_qp_state(__entry->to))
);

TRACE_EVENT(viw_cm_event,
	TP_PROTO(struct viw_device *vdev, const struct viw_cep *cep,
		 enum iw_cm_event_type event, int status),
	TP_ARGS(vdev, cep, event, status),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, conn)
		__field(u32, qpn)
		__field(int, event)
		__field(int, status)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(vdev), IB_DEVICE_NAME_MAX);
		__entry->conn = hash_ptr(cep, 32);
		__entry->qpn = cep->qp ? cep->qp->ibqp.qp_num : 0;
		__entry->event = event;
		__entry->status = status;
	),
	TP_printk("dev=%s conn=%08x qpn=%u event=%s status=%d",
		  __entry->dev, __entry->conn, __entry->qpn,
		  viw_show_cm_event(__entry->event), __entry->status)
);

TRACE_EVENT(viw_cm_close,
	TP_PROTO(struct viw_device *vdev, const struct viw_cep *cep,
		 int status, bool reset),
	TP_ARGS(vdev, cep, status, reset),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, conn)
		__field(u32, qpn)
		__field(int, status)
		__field(bool, reset)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(vdev), IB_DEVICE_NAME_MAX);
		__entry->conn = hash_ptr(cep, 32);
		__entry->qpn = cep->qp ? cep->qp->ibqp.qp_num : 0;
		__entry->status = status;
		__entry->reset = reset;
	),
	TP_printk("dev=%s conn=%08x qpn=%u status=%d reset=%d",
		  __entry->dev, __entry->conn, __entry->qpn, __entry->status,
		  __entry->reset)
);

DECLARE_EVENT_CLASS(viw_term_class,
	TP_PROTO(struct viw_qp *qp, const struct viw_term_cause *cause),
	TP_ARGS(qp, cause),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(qp->vdev),
			IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->layer = cause->layer;
		__entry->etype = cause->etype;
		__entry->ecode = cause->ecode;
	),
	TP_printk("dev=%s qpn=%u layer=%u type=%u code=0x%02x", __entry->dev,
		  __entry->qpn, __entry->layer, __entry->etype, __entry->ecode)
);

DEFINE_EVENT(viw_term_class, viw_term_sent,
	TP_PROTO(struct viw_qp *qp, const struct viw_term_cause *cause),
	TP_ARGS(qp, cause));

DEFINE_EVENT(viw_term_class, viw_term_rcvd,
	TP_PROTO(struct viw_qp *qp, const struct viw_term_cause *cause),
	TP_ARGS(qp, cause));

TRACE_EVENT(viw_flush,
	TP_PROTO(struct viw_qp *qp, bool is_sq, bool discard, u32 count),
	TP_ARGS(qp, is_sq, discard, count),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(bool, is_sq)
		__field(bool, discard)
		__field(u32, count)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(qp->vdev),
			IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->is_sq = is_sq;
		__entry->discard = discard;
		__entry->count = count;
	),
	TP_printk("dev=%s qpn=%u queue=%s %s=%u", __entry->dev, __entry->qpn,
		  __entry->is_sq ? "sq" : "rq",
		  __entry->discard ? "discarded" : "flushed", __entry->count)
);

TRACE_EVENT(viw_doorbell,
	TP_PROTO(struct viw_qp *qp, bool is_sq),
	TP_ARGS(qp, is_sq),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(bool, is_sq)
	),
	TP_fast_assign(
		strscpy(__entry->dev, viw_trace_dev(qp->vdev),
			IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->is_sq = is_sq;
	),
	TP_printk("dev=%s qpn=%u queue=%s", __entry->dev, __entry->qpn,
		  __entry->is_sq ? "sq" : "rq")
);

#endif /* VIW_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE viw_trace
#include <trace/define_trace.h>
