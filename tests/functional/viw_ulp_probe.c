// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_ulp_probe: one rdma_cm connection attempt, with the private data a
 * kernel ULP expects in its connect request, to a kernel service (nfsd's
 * or nvmet's RDMA listener).  It stands in for the ULP's own client where
 * that client cannot run in the test's topology.
 *
 *   viw_ulp_probe -c ADDR [-p PORT] [-t SECS] [-d HEX]
 *
 * -d gives the private data as hex bytes.  The attempt must end without
 * ESTABLISHED (the test sends what the service must refuse): "PASS" when
 * the first event after rdma_connect is REJECTED, CONNECT_ERROR or
 * UNREACHABLE; "FAIL" otherwise.  Exit 0 only on PASS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viw_test.h"

#define UP_MAX_PDATA	196

static int up_hex(const char *hex, uint8_t *buf, int max)
{
	int n = 0;

	while (hex[0] && hex[1] && n < max) {
		char byte[3] = { hex[0], hex[1], 0 };

		buf[n++] = (uint8_t)strtoul(byte, NULL, 16);
		hex += 2;
	}
	return hex[0] ? -1 : n;
}

static void up_connect(struct sockaddr_storage *dst, const uint8_t *pd,
		       int pdlen)
{
	struct rdma_conn_param param = {
		.private_data = pd, .private_data_len = pdlen,
		.responder_resources = 1, .initiator_depth = 1,
	};
	struct ibv_qp_init_attr qattr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct vt_ep ep = { 0 };
	struct rdma_cm_event *ev;
	int type;

	if (vt_ep_route(&ep, dst, NULL, 2000, 5000)) {
		vt_fail("route", "%s", ep.why);
		goto out;
	}
	if (vt_ep_alloc(&ep, NULL, 0, 8, &qattr)) {
		vt_fail("setup", "%s", ep.why);
		goto out;
	}
	vt_info("device %s", ibv_get_device_name(ep.id->verbs->device));
	if (rdma_connect(ep.id, &param)) {
		vt_fail("connect", "rdma_connect: %s", strerror(errno));
		goto out;
	}
	if (vt_cm_get(ep.ch, vt_deadline_in(20000), &ev)) {
		vt_fail("connect", "no event within 20 s");
		goto out;
	}
	type = ev->event;
	vt_info("event %s status %d", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	vt_check(type == RDMA_CM_EVENT_REJECTED ||
		 type == RDMA_CM_EVENT_CONNECT_ERROR ||
		 type == RDMA_CM_EVENT_UNREACHABLE,
		 "connection attempt refused", "got %s",
		 rdma_event_str(type));
	if (type == RDMA_CM_EVENT_ESTABLISHED)
		rdma_disconnect(ep.id);
out:
	vt_ep_close(&ep);
}

int main(int argc, char **argv)
{
	struct vt_args a = { .port = "20049", .secs = 40 };
	uint8_t pd[UP_MAX_PDATA];
	struct sockaddr_storage dst;
	int opt, pdlen = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = vt_next_opt(argc, argv, "d:", NULL, &a)) != -1) {
		if (opt != 'd')
			goto usage;
		pdlen = up_hex(optarg, pd, sizeof(pd));
		if (pdlen < 0)
			goto usage;
	}
	if (!a.addr || a.server || a.secs <= 0 || optind != argc)
		goto usage;
	vt_start(a.secs);
	if (vt_getaddr(a.addr, a.port, false, &dst))
		vt_fail("setup", "bad address %s", a.addr);
	else
		up_connect(&dst, pd, pdlen);
	return vt_finish();
usage:
	fprintf(stderr, "usage: %s -c ADDR [-p PORT] [-t SECS] [-d HEX]\n",
		argv[0]);
	return 2;
}
