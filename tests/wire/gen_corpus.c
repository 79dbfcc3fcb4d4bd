// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writes the seed corpus of fuzz_wire from the encoders, so the seeds
 * follow the codec: gen_corpus DIR
 */
#include <stdio.h>
#include <string.h>

#include "viw_wire.h"

static const char *dir;
static int failed;

static void emit(const char *name, const u8 *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		failed = 1;
	}
	if (f)
		fclose(f);
}

static void mpa_seed(const char *name, bool reply, u8 rev, bool enh,
		     bool crc, bool p2p, u8 rtr)
{
	struct viw_mpa_frame f = {
		.reply = reply, .revision = rev, .enhanced = enh, .crc = crc,
		.p2p = p2p, .rtr = rtr, .ird = 16, .ord = 8,
	};
	u8 buf[40];
	int n = viw_mpa_encode(buf, sizeof(buf), &f, 4);

	if (n < 0) {
		failed = 1;
		return;
	}
	memcpy(buf + n, "pdat", 4);
	buf[n + 4] = 0x7f;	/* prefs knobs for the negotiation check */
	emit(name, buf, (size_t)n + 5);
}

static void ddp_seed(u8 opcode, bool last)
{
	struct viw_ddp_hdr h = {
		.opcode = opcode, .last = last, .stag = 0x1234, .to = 0x1000,
		.msn = 1,
	};
	struct viw_read_req rr = { 0x10, 0x2000, 64, 0x20, 0x3000 };
	struct viw_term t = { .cause = { 1, 2, 3 }, .has_len = true };
	struct viw_atomic_req ar = {
		.op = VIW_ATOMIC_CMP_SWAP, .req_id = 7, .stag = 0x30,
		.to = 0x4000, .add_swap = 9, .add_swap_mask = ~0ULL,
		.compare = 5, .compare_mask = ~0ULL,
	};
	struct viw_atomic_resp resp = { .req_id = 7, .orig = 5 };
	/* a SEND with immediate may span segments, a plain one not */
	struct viw_imm imm = { .data = 0x11223344, .send = !last };
	char name[32];
	u8 buf[96];
	int n;

	h.tagged = opcode == VIW_RDMAP_WRITE || opcode == VIW_RDMAP_READ_RESP;
	if (opcode == VIW_RDMAP_READ_REQ)
		h.qn = VIW_QN_READ_REQ;
	if (opcode == VIW_RDMAP_TERMINATE)
		h.qn = VIW_QN_TERMINATE;
	if (opcode == VIW_RDMAP_ATOMIC_REQ)
		h.qn = VIW_QN_READ_REQ;
	if (opcode == VIW_RDMAP_ATOMIC_RESP)
		h.qn = VIW_QN_ATOMIC_RESP;
	if (opcode == VIW_RDMAP_ACK)
		h.qn = VIW_QN_ACK;
	h.inv_stag = opcode == VIW_RDMAP_SEND_INV ? 0x4321 : 0;
	n = viw_ddp_encode(buf, sizeof(buf), &h);
	if (n < 0) {
		failed = 1;
		return;
	}
	if (opcode == VIW_RDMAP_READ_REQ) {
		viw_read_req_encode(buf + n, &rr);
		n += VIW_RDMAP_READ_REQ_LEN;
	} else if (opcode == VIW_RDMAP_TERMINATE) {
		n += viw_term_encode(buf + n, sizeof(buf) - (size_t)n, &t);
	} else if (opcode == VIW_RDMAP_ATOMIC_REQ) {
		viw_atomic_req_encode(buf + n, &ar);
		n += VIW_RDMAP_ATOMIC_REQ_LEN;
	} else if (opcode == VIW_RDMAP_ATOMIC_RESP) {
		viw_atomic_resp_encode(buf + n, &resp);
		n += VIW_RDMAP_ATOMIC_RESP_LEN;
	} else if (opcode == VIW_RDMAP_ACK) {
		viw_ack_encode(buf + n, 3);
		n += VIW_RDMAP_ACK_LEN;
	} else if (opcode == VIW_RDMAP_IMM || opcode == VIW_RDMAP_IMM_SE) {
		viw_imm_encode(buf + n, &imm);
		n += VIW_RDMAP_IMM_LEN;
	} else {
		memcpy(buf + n, "data", 4);
		n += 4;
	}
	snprintf(name, sizeof(name), "ddp_op%u_%s", opcode, last ? "l" : "m");
	emit(name, buf, (size_t)n);
}

static void term_seed(const char *name, bool m, u8 d_opcode, bool r)
{
	struct viw_term t = {
		.cause = { VIW_TERM_DDP, VIW_DDP_ET_UNTAGGED, 2 },
		.has_len = m, .seg_len = 100, .has_rreq = r,
	};
	struct viw_ddp_hdr h = {
		.opcode = d_opcode, .last = true,
		.tagged = d_opcode == VIW_RDMAP_WRITE,
		.qn = d_opcode == VIW_RDMAP_READ_REQ ? 1 : 0,
	};
	u8 buf[64];
	int n;

	if (d_opcode != 0xff) {
		t.has_ddp_hdr = true;
		n = viw_ddp_encode(t.ddp_hdr, sizeof(t.ddp_hdr), &h);
		t.ddp_hdr_len = (u8)n;
	}
	n = viw_term_encode(buf, sizeof(buf), &t);
	if (n < 0) {
		failed = 1;
		return;
	}
	emit(name, buf, (size_t)n);
}

int main(int argc, char **argv)
{
	u8 op;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	mpa_seed("mpa_req_v1", false, 1, false, false, false, 0);
	mpa_seed("mpa_req_v2", false, 2, true, true, false, 0);
	mpa_seed("mpa_req_v2_p2p", false, 2, true, false, true,
		 VIW_RTR_WRITE0 | VIW_RTR_READ0 | VIW_RTR_SEND0);
	mpa_seed("mpa_rep_v1", true, 1, false, true, false, 0);
	mpa_seed("mpa_rep_v2_p2p", true, 2, true, true, true, VIW_RTR_READ0);
	for (op = 0; op <= VIW_RDMAP_OPCODE_MAX; op++) {
		ddp_seed(op, true);
		if (op <= VIW_RDMAP_IMM_SE && op != VIW_RDMAP_READ_REQ &&
		    op != VIW_RDMAP_TERMINATE)
			ddp_seed(op, false);
	}
	term_seed("term_bare", false, 0xff, false);
	term_seed("term_md_tagged", true, VIW_RDMAP_WRITE, false);
	term_seed("term_md_untagged", true, VIW_RDMAP_SEND, false);
	term_seed("term_mdr", true, VIW_RDMAP_READ_REQ, true);
	return failed;
}
