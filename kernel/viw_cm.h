/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw: connection endpoints (iw_cm provider side of MPA connection setup).
 */
#ifndef VIW_CM_H
#define VIW_CM_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/workqueue.h>
#include <rdma/iw_cm.h>

#include "viw_wire.h"

enum viw_cep_state {
	VIW_CEP_IDLE,
	VIW_CEP_LISTENING,
	VIW_CEP_CONNECTING,	/* active: TCP connect in flight */
	VIW_CEP_MPA_REQ_SENT,	/* active: waiting for the MPA reply */
	VIW_CEP_MPA_REQ_WAIT,	/* passive: waiting for the MPA request */
	VIW_CEP_MPA_REQ_RCVD,	/* passive: CONNECT_REQUEST delivered */
	VIW_CEP_RTR_WAIT,	/* passive: accepted, waiting for the RTR */
	VIW_CEP_ESTABLISHED,
	VIW_CEP_CLOSING,	/* local close: FIN (to be) sent, waiting */
	VIW_CEP_CLOSED,
};

/* Work the endpoint's work item has to do, set from any context. */
enum viw_cep_event_bit {
	VIW_CEP_EV_CONNECTED,	/* TCP connect finished */
	VIW_CEP_EV_READABLE,	/* MPA bytes or a new connection to accept */
	VIW_CEP_EV_PEER_CLOSED,	/* FIN or RST from the peer */
	VIW_CEP_EV_TIMEOUT,	/* MPA exchange or close took too long */
	VIW_CEP_EV_CLOSE,	/* local graceful close (QP to CLOSING) */
	VIW_CEP_EV_ABORT,	/* local abort (QP to ERROR) */
	VIW_CEP_EV_RTR,		/* passive: the RTR message arrived */
	VIW_CEP_EV_TERMINATED,	/* the peer sent a TERMINATE */
};

struct viw_cep;
struct viw_qp;
struct viw_device;

/*
 * What the CEP of a modify_qp connection reports to its owner, the
 * modify_qp connection manager (viw_direct.c), as an iw_cm CEP reports to
 * iw_cm through its cm_id's event handler.  The owner sits above the CM:
 * the CM reaches it only through these.
 */
struct viw_cep_owner {
	/* An MPA request arrived on the owner's listener: cep->lock held. */
	void (*request)(struct viw_cep *cep);
	/* The acceptor's MPA reply arrived: 0 to go on, or a negative errno. */
	int (*check_reply)(struct viw_cep *cep);
	/* The connect attempt @cep for @qp failed. */
	void (*failed)(struct viw_cep *cep, struct viw_qp *qp, int status);
	/* The established connection @cep of @qp ended, by a FIN if @graceful. */
	void (*lost)(struct viw_cep *cep, struct viw_qp *qp, bool graceful);
	/* @qp let go of the connection: it has no stream any more. */
	void (*detached)(struct viw_qp *qp);
};

/*
 * modify_qp connections (viw_direct.c): the TCP port every device listens
 * on, and the private data of their MPA request and reply.
 */
#define VIW_DIRECT_PORT		20886
#define VIW_DIRECT_VERSION	1
/* flags: the sender speaks RFC 7306 Immediate Data as viw does */
#define VIW_DIRECT_F_IMM	0x01
/* ... and acknowledges what it placed, and completes on acknowledgements */
#define VIW_DIRECT_F_ACK	0x02

struct viw_direct_pdata {
	u8 magic[4];			/* "viwD" */
	u8 version;			/* VIW_DIRECT_VERSION */
	u8 flags;			/* VIW_DIRECT_F_* */
	__be16 reserved;		/* 0 */
	__be32 src_qpn;			/* the sender's QP */
	__be32 dst_qpn;			/* the receiver's QP */
} __packed;

struct viw_cep {
	struct kref ref;
	struct viw_device *vdev;
	/* State and everything below.  Lock order: see struct viw_qp. */
	struct mutex lock;
	enum viw_cep_state state;
	bool active;

	struct iw_cm_id *cm_id;		/* holds a cm_id reference */
	struct socket *sock;
	struct viw_qp *qp;		/* holds a QP reference */
	struct viw_cep *listener;	/* passive: holds a reference */
	struct list_head listen_entry;	/* on the cm_id's listener list */
	struct list_head cep_entry;	/* on viw_cep_list, until released */

	unsigned long events;		/* enum viw_cep_event_bit */
	struct work_struct work;
	struct delayed_work timer;
	struct delayed_work fin_retry;	/* CLOSING: try the FIN again */
	bool close_sent;		/* the CLOSE upcall was made */
	bool fin_pending;		/* CLOSING, the FIN is not sent yet */

	/* MPA exchange */
	struct viw_mpa_frame req;
	struct viw_mpa_frame rep;
	u8 mpa_buf[VIW_MPA_HDR_LEN + VIW_MPA_MAX_PDATA];
	u32 mpa_len;			/* bytes of mpa_buf filled */
	bool frame_done;		/* mpa_buf holds a whole, valid frame */
	u16 ird;
	u16 ord;

	/* modify_qp connection: its owner (viw_direct.c), else NULL */
	const struct viw_cep_owner *direct;
	struct list_head pend_entry;	/* passive: waiting for its QP */
	struct sockaddr_storage direct_peer;
	u32 direct_src;			/* QPNs of the request */
	u32 direct_dst;
	u64 direct_rx_mark;		/* bytes received before the reply */

	/* The socket's callbacks before viw took it over. */
	void (*sk_state_change)(struct sock *sk);
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_write_space)(struct sock *sk);
};

void viw_cep_get(struct viw_cep *cep);
void viw_cep_put(struct viw_cep *cep);
void viw_cep_post_event(struct viw_cep *cep, enum viw_cep_event_bit ev);

struct viw_mpa_prefs *viw_cm_prefs(void);
struct seq_file;
void viw_cm_show_ceps(struct seq_file *m);
u64 viw_cm_tcp_retrans(struct viw_device *vdev);
int viw_cm_init(void);
void viw_cm_exit(void);

int viw_iw_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param);
int viw_iw_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param);
int viw_iw_reject(struct iw_cm_id *cm_id, const void *pdata, u8 pdata_len);
int viw_iw_create_listen(struct iw_cm_id *cm_id, int backlog);
int viw_iw_destroy_listen(struct iw_cm_id *cm_id);

/* modify_qp connections: viw_cm.c's side */
struct viw_cep *viw_cep_direct_listen(struct viw_device *vdev,
				      struct socket *sock,
				      const struct viw_cep_owner *owner);
void viw_cep_direct_unlisten(struct viw_cep *lcep);
int viw_cep_direct_connect(struct viw_qp *qp,
			   const struct viw_cep_owner *owner,
			   struct socket *sock,
			   struct sockaddr_storage *laddr,
			   struct sockaddr_storage *raddr, int alen,
			   const void *pdata, u16 len, unsigned long timeout,
			   struct viw_cep **out);
const void *viw_cep_direct_pdata(struct viw_cep *cep, bool reply, u16 *len);
void viw_cep_direct_hold(struct viw_cep *cep, unsigned long timeout);
bool viw_cep_direct_waiting(struct viw_cep *cep);
bool viw_cep_direct_peer_silent(struct viw_cep *cep);
int viw_cep_direct_accept(struct viw_cep *cep, struct viw_qp *qp,
			  const void *pdata, u16 len);
void viw_cep_direct_reject(struct viw_cep *cep);

/* modify_qp connections: viw_direct.c's side */
void viw_direct_free_device(struct viw_device *vdev);

#endif /* VIW_CM_H */
