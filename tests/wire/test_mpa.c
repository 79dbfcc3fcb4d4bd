// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * wire.mpa: MPA request/reply frames and their negotiation.
 */
#include <errno.h>

#include "wire_test.h"

static const u8 key_req[] = "MPA ID Req Frame";
static const u8 key_rep[] = "MPA ID Rep Frame";

static struct viw_mpa_frame mk_frame(bool reply, u8 rev, bool enhanced)
{
	struct viw_mpa_frame f;

	memset(&f, 0, sizeof(f));
	f.reply = reply;
	f.revision = rev;
	f.enhanced = enhanced;
	return f;
}

static void check_same(const struct viw_mpa_frame *a,
		       const struct viw_mpa_frame *b)
{
	CHECK_EQ(a->reply, b->reply);
	CHECK_EQ(a->markers, b->markers);
	CHECK_EQ(a->crc, b->crc);
	CHECK_EQ(a->reject, b->reject);
	CHECK_EQ(a->enhanced, b->enhanced);
	CHECK_EQ(a->revision, b->revision);
	CHECK_EQ(a->pd_len, b->pd_len);
	CHECK_EQ(a->p2p, b->p2p);
	CHECK_EQ(a->rtr, b->rtr);
	CHECK_EQ(a->ird, b->ird);
	CHECK_EQ(a->ord, b->ord);
}

/* Encode, decode the header and the v2 words, compare. */
static void round_trip(struct viw_mpa_frame *f, u16 ulp_pd_len)
{
	u8 buf[VIW_MPA_HDR_LEN + VIW_MPA_V2_EXT_LEN];
	struct viw_mpa_frame d;
	int n = viw_mpa_encode(buf, sizeof(buf), f, ulp_pd_len);

	CHECK_EQ(n, f->enhanced ? 24 : 20);
	CHECK_EQ(f->pd_len, ulp_pd_len + (f->enhanced ? 4 : 0));
	CHECK(!memcmp(buf, f->reply ? key_rep : key_req, 16));
	CHECK_EQ(viw_mpa_decode_hdr(buf, (size_t)n, f->reply, &d), 0);
	if (d.enhanced)
		CHECK_EQ(viw_mpa_decode_v2(buf + 20, 4, &d), 0);
	check_same(f, &d);
}

static void test_round_trips(void)
{
	struct viw_mpa_frame f;
	int reply, rev, crc, rtr;

	for (reply = 0; reply < 2; reply++) {
		for (rev = 1; rev <= 2; rev++) {
			for (crc = 0; crc < 2; crc++) {
				f = mk_frame(reply, (u8)rev, false);
				f.crc = crc;
				round_trip(&f, 0);
				round_trip(&f, 100);
			}
		}
		/* v2 enhanced, with and without p2p, every RTR set */
		for (rtr = 0; rtr < 8; rtr++) {
			f = mk_frame(reply, 2, true);
			f.ird = 0x3fff;
			f.ord = (u16)(rtr * 3);
			f.p2p = rtr != 0;
			f.rtr = (u8)rtr;
			round_trip(&f, 7);
		}
		f = mk_frame(reply, 2, true);
		f.p2p = true;	/* P without RTR bits is legal on the wire */
		round_trip(&f, 0);
	}
	f = mk_frame(true, 1, false);
	f.reject = true;
	f.markers = true;	/* the encoder is no policy; see build_reply */
	round_trip(&f, 3);
}

/* Exact bytes of a siw-style request: rev 2, CRC, enhanced, P, W|R. */
static void test_known_bytes(void)
{
	static const u8 want[] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e', 0x50, 0x02, 0x00, 0x09,
		0x80, 0x10, 0xc0, 0x20,
	};
	struct viw_mpa_frame f = mk_frame(false, 2, true);
	u8 buf[64];

	f.crc = true;
	f.p2p = true;
	f.rtr = VIW_RTR_WRITE0 | VIW_RTR_READ0;
	f.ird = 16;
	f.ord = 32;
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 5), 24);
	CHECK(!memcmp(buf, want, sizeof(want)));

	f.rtr = VIW_RTR_SEND0;	/* zero-length SEND: 0x4000 in the IRD word */
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), 24);
	CHECK_EQ(buf[20], 0xc0);
	CHECK_EQ(buf[22], 0x00);
}

static void test_pdata_limits(void)
{
	struct viw_mpa_frame f = mk_frame(false, 1, false), d;
	u8 buf[24];

	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 512), 20);
	CHECK_EQ(f.pd_len, 512);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);
	CHECK_EQ(d.pd_len, 512);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 513), -EMSGSIZE);

	f = mk_frame(false, 2, true);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 508), 24);
	CHECK_EQ(f.pd_len, 512);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 509), -EMSGSIZE);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0xffff), -EMSGSIZE);

	/* PD_Length 513 on the wire */
	f = mk_frame(false, 1, false);
	viw_mpa_encode(buf, sizeof(buf), &f, 0);
	buf[18] = 0x02;
	buf[19] = 0x01;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EPROTO);
	buf[18] = 0xff;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EPROTO);
}

static void test_bad_keys(void)
{
	struct viw_mpa_frame f = mk_frame(false, 1, false), d;
	u8 buf[24];
	int i;

	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), 20);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, true, &d), -EBADMSG);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 19, false, &d), -EBADMSG);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 0, false, &d), -EBADMSG);
	for (i = 0; i < 16; i++) {
		buf[i] ^= 0x20;
		CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EBADMSG);
		buf[i] ^= 0x20;
	}
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);

	f = mk_frame(true, 1, false);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), 20);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EBADMSG);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, true, &d), 0);
}

static void test_bad_revisions(void)
{
	static const u8 bad[] = { 0, 3, 4, 0x80, 0xff };
	struct viw_mpa_frame f = mk_frame(false, 1, false), d;
	u8 buf[24];
	size_t i;

	viw_mpa_encode(buf, sizeof(buf), &f, 0);
	for (i = 0; i < sizeof(bad); i++) {
		buf[17] = bad[i];
		CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EPROTO);
		f = mk_frame(false, bad[i], false);
		CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
	}
	/* enhanced needs revision 2 */
	f = mk_frame(false, 1, true);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
}

static void test_flags(void)
{
	struct viw_mpa_frame f = mk_frame(false, 1, false), d;
	u8 buf[24];

	viw_mpa_encode(buf, sizeof(buf), &f, 0);
	/* enhanced bit in revision 1, siw's GSO bit, reserved bits, R */
	buf[16] = 0x10 | 0x08 | 0x07 | 0x20;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);
	CHECK(!d.enhanced && !d.reject && !d.crc && !d.markers);

	buf[16] = 0x80 | 0x40;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);
	CHECK(d.markers && d.crc);

	/* enhanced with too little private data for the words */
	buf[16] = 0x10;
	buf[17] = 2;
	buf[19] = 3;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), -EPROTO);
	buf[19] = 4;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);
	CHECK(d.enhanced);
	/* revision 2 without the enhanced bit is a plain frame */
	buf[16] = 0;
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, false, &d), 0);
	CHECK(!d.enhanced);
}

static void test_v2_words(void)
{
	struct viw_mpa_frame d;
	u8 w[4] = { 0x7f, 0xff, 0xc0, 0x05 };	/* no P, but L/W/R bits */

	memset(&d, 0, sizeof(d));
	CHECK_EQ(viw_mpa_decode_v2(w, 3, &d), -EBADMSG);
	CHECK_EQ(viw_mpa_decode_v2(w, 0, &d), -EBADMSG);
	CHECK_EQ(viw_mpa_decode_v2(w, 4, &d), 0);
	CHECK(!d.p2p);
	CHECK_EQ(d.rtr, 0);
	CHECK_EQ(d.ird, 0x3fff);
	CHECK_EQ(d.ord, 5);
	w[0] = 0xc0;
	w[1] = 0x01;
	CHECK_EQ(viw_mpa_decode_v2(w, 4, &d), 0);
	CHECK(d.p2p);
	CHECK_EQ(d.rtr, VIW_RTR_SEND0 | VIW_RTR_WRITE0 | VIW_RTR_READ0);
	CHECK_EQ(d.ird, 1);
}

static void test_encode_errors(void)
{
	struct viw_mpa_frame f = mk_frame(false, 1, false);
	u8 buf[24];

	f.reject = true;	/* only a reply can reject */
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);

	f = mk_frame(false, 2, true);
	f.ird = 0x4000;
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
	f.ird = 0;
	f.ord = 0x4000;
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
	f.ord = 0;
	f.rtr = VIW_RTR_WRITE0;	/* RTR without P */
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
	f.p2p = true;
	f.rtr = 0x8;
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &f, 0), -EINVAL);
	f.rtr = VIW_RTR_READ0;
	CHECK_EQ(viw_mpa_encode(buf, 23, &f, 0), -ENOSPC);
	CHECK_EQ(viw_mpa_encode(buf, 24, &f, 0), 24);

	f = mk_frame(false, 1, false);
	CHECK_EQ(viw_mpa_encode(buf, 19, &f, 0), -ENOSPC);
	/* v2 fields of a plain frame are ignored, not refused */
	f.ird = 0xffff;
	f.rtr = 0xff;
	CHECK_EQ(viw_mpa_encode(buf, 20, &f, 0), 20);
}

static struct viw_mpa_prefs mk_prefs(bool crc, bool p2p)
{
	struct viw_mpa_prefs p = {
		.revision = 2, .crc = crc, .p2p = p2p,
		.rtr = VIW_RTR_WRITE0 | VIW_RTR_READ0 | VIW_RTR_SEND0,
	};

	return p;
}

static void test_crc_matrix(void)
{
	struct viw_mpa_frame req, rep;
	struct viw_mpa_prefs prefs;
	int rc, lc;

	for (rc = 0; rc < 2; rc++) {
		for (lc = 0; lc < 2; lc++) {
			req = mk_frame(false, 1, false);
			req.crc = rc;
			prefs = mk_prefs(lc, false);
			CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 1, 1, &rep),
				 0);
			CHECK_EQ(rep.crc, rc || lc);
			CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);
			CHECK_EQ(viw_mpa_crc_on(&req, &rep), rc || lc);
		}
	}
	/* initiator asked for CRC, reply dropped it */
	req = mk_frame(false, 1, false);
	req.crc = true;
	rep = mk_frame(true, 1, false);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	/* responder turns it on: fine, and then it is on */
	req.crc = false;
	rep.crc = true;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);
	CHECK(viw_mpa_crc_on(&req, &rep));
}

static void test_markers(void)
{
	struct viw_mpa_frame req = mk_frame(false, 2, true), rep;
	struct viw_mpa_prefs prefs = mk_prefs(true, true);

	req.markers = true;
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 4, 4, &rep), -EPROTO);
	req.markers = false;
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 4, 4, &rep), 0);
	CHECK(!rep.markers);
	rep.markers = true;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
}

static void test_p2p_matrix(void)
{
	struct viw_mpa_frame req, rep;
	struct viw_mpa_prefs prefs = mk_prefs(false, true);
	static const u8 pick[8] = {
		0, VIW_RTR_SEND0, VIW_RTR_WRITE0, VIW_RTR_WRITE0,
		VIW_RTR_READ0, VIW_RTR_READ0, VIW_RTR_WRITE0, VIW_RTR_WRITE0,
	};
	int offered;

	for (offered = 0; offered < 8; offered++) {
		req = mk_frame(false, 2, true);
		req.p2p = true;
		req.rtr = (u8)offered;
		if (!offered) {
			/* P with nothing viw could send back */
			CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 2, 3, &rep),
				 -EPROTO);
			continue;
		}
		CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 2, 3, &rep), 0);
		CHECK(rep.p2p && rep.enhanced && rep.reply);
		CHECK_EQ(rep.rtr, pick[offered]);
		CHECK_EQ(rep.ird, 2);
		CHECK_EQ(rep.ord, 3);
		CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);
	}

	/* responder does not want p2p: P clear, no RTR, initiator accepts */
	req = mk_frame(false, 2, true);
	req.p2p = true;
	req.rtr = VIW_RTR_WRITE0;
	prefs = mk_prefs(false, false);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 2, 3, &rep), 0);
	CHECK(!rep.p2p);
	CHECK_EQ(rep.rtr, 0);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);

	/* request without P: no P in the reply whatever the prefs say */
	req.p2p = false;
	req.rtr = 0;
	prefs = mk_prefs(false, true);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 2, 3, &rep), 0);
	CHECK(!rep.p2p);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);

	/* bad replies */
	req.p2p = true;
	req.rtr = VIW_RTR_WRITE0 | VIW_RTR_READ0;
	rep = mk_frame(true, 2, true);
	rep.p2p = true;
	rep.rtr = VIW_RTR_WRITE0 | VIW_RTR_READ0;	/* two picks */
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	rep.rtr = VIW_RTR_SEND0;			/* not offered */
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	rep.rtr = 0;					/* none picked */
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	rep.rtr = VIW_RTR_READ0;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);
	req.p2p = false;				/* P not asked for */
	req.rtr = 0;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
}

static void test_revision_matrix(void)
{
	struct viw_mpa_frame req, rep;
	struct viw_mpa_prefs prefs = mk_prefs(false, true);

	/* rev 1 request: rev 1 reply, no enhanced data */
	req = mk_frame(false, 1, false);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), 0);
	CHECK_EQ(rep.revision, 1);
	CHECK(!rep.enhanced && !rep.p2p);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);

	/* rev 2 without the enhanced bit: rev 2 plain reply */
	req = mk_frame(false, 2, false);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), 0);
	CHECK_EQ(rep.revision, 2);
	CHECK(!rep.enhanced);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), 0);

	/* the reply follows the request, not prefs->revision */
	req = mk_frame(false, 2, true);
	prefs.revision = 1;
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), 0);
	CHECK_EQ(rep.revision, 2);
	CHECK(rep.enhanced);
	CHECK_EQ(rep.ird, 5);
	CHECK_EQ(rep.ord, 6);

	/* initiator sent rev 2, got rev 1: strict like siw */
	rep = mk_frame(true, 1, false);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	/* rev 2 reply without enhanced data to an enhanced request */
	rep = mk_frame(true, 2, false);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	/* rev 1 request, rev 2 reply */
	req = mk_frame(false, 1, false);
	rep = mk_frame(true, 2, true);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
	/* enhanced data nobody asked for */
	req = mk_frame(false, 2, false);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);

	/* malformed requests */
	req = mk_frame(false, 3, false);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), -EPROTO);
	req = mk_frame(false, 1, true);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), -EPROTO);
	req = mk_frame(true, 1, false);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 5, 6, &rep), -EINVAL);
	req = mk_frame(false, 2, true);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 0x4000, 6, &rep), -EINVAL);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 6, 0x4000, &rep), -EINVAL);
	/* a non-reply as reply */
	req = mk_frame(false, 1, false);
	rep = mk_frame(false, 1, false);
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -EPROTO);
}

static void test_reject(void)
{
	struct viw_mpa_frame req = mk_frame(false, 2, true), rep, d;
	u8 buf[24];

	req.crc = true;
	rep = mk_frame(true, 2, true);
	rep.reject = true;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -ECONNREFUSED);
	/* a reject wins over everything else that is wrong with it */
	rep = mk_frame(true, 1, false);
	rep.reject = true;
	rep.markers = true;
	CHECK_EQ(viw_mpa_check_reply(&req, &rep), -ECONNREFUSED);
	CHECK_EQ(viw_mpa_encode(buf, sizeof(buf), &rep, 0), 20);
	CHECK_EQ(buf[16], 0xa0);
	CHECK_EQ(viw_mpa_decode_hdr(buf, 20, true, &d), 0);
	CHECK(d.reject);
	CHECK_EQ(viw_mpa_check_reply(&req, &d), -ECONNREFUSED);
}

/* Both ends through the wire, private data appended by the "caller". */
static void test_exchange(void)
{
	struct viw_mpa_prefs ini = mk_prefs(false, true);
	struct viw_mpa_prefs resp = mk_prefs(true, true);
	struct viw_mpa_frame req, rreq, rep, rrep;
	u8 wire[VIW_MPA_HDR_LEN + VIW_MPA_MAX_PDATA];
	int n;

	req = mk_frame(false, ini.revision, true);
	req.crc = ini.crc;
	req.p2p = ini.p2p;
	req.rtr = ini.rtr;
	req.ird = 8;
	req.ord = 4;
	n = viw_mpa_encode(wire, sizeof(wire), &req, 10);
	CHECK_EQ(n, 24);
	memcpy(wire + n, "0123456789", 10);

	CHECK_EQ(viw_mpa_decode_hdr(wire, 20, false, &rreq), 0);
	CHECK_EQ(rreq.pd_len, 14);
	CHECK_EQ(viw_mpa_decode_v2(wire + 20, rreq.pd_len, &rreq), 0);
	CHECK_EQ(rreq.ird, 8);
	CHECK_EQ(rreq.ord, 4);
	CHECK(!memcmp(wire + 24, "0123456789", 10));
	CHECK_EQ(viw_mpa_build_reply(&rreq, &resp, 4, 8, &rep), 0);
	n = viw_mpa_encode(wire, sizeof(wire), &rep, 0);
	CHECK_EQ(n, 24);

	CHECK_EQ(viw_mpa_decode_hdr(wire, (size_t)n, true, &rrep), 0);
	CHECK_EQ(viw_mpa_decode_v2(wire + 20, rrep.pd_len, &rrep), 0);
	CHECK_EQ(viw_mpa_check_reply(&req, &rrep), 0);
	CHECK(viw_mpa_crc_on(&req, &rrep));
	CHECK_EQ(rrep.rtr, VIW_RTR_WRITE0);
	CHECK_EQ(rrep.ird, 4);
	CHECK_EQ(rrep.ord, 8);
}

/* A request as siw sends it (rev 2, CRC, enhanced, GSO bit, P, W|R). */
static void test_siw_request(void)
{
	u8 wire[24];
	struct viw_mpa_frame req, rep;
	struct viw_mpa_prefs prefs = mk_prefs(false, true);

	memcpy(wire, key_req, 16);
	wire[16] = 0x40 | 0x10 | 0x08;
	wire[17] = 2;
	wire[18] = 0;
	wire[19] = 4;
	wire[20] = 0x80;
	wire[21] = 0x10;
	wire[22] = 0xc0;
	wire[23] = 0x10;
	CHECK_EQ(viw_mpa_decode_hdr(wire, 24, false, &req), 0);
	CHECK_EQ(viw_mpa_decode_v2(wire + 20, 4, &req), 0);
	CHECK(req.crc && req.enhanced && req.p2p);
	CHECK_EQ(req.rtr, VIW_RTR_WRITE0 | VIW_RTR_READ0);
	CHECK_EQ(viw_mpa_build_reply(&req, &prefs, 16, 16, &rep), 0);
	CHECK_EQ(rep.rtr, VIW_RTR_WRITE0);
	CHECK(rep.crc);
	CHECK_EQ(viw_mpa_encode(wire, sizeof(wire), &rep, 0), 24);
	CHECK(!memcmp(wire, key_rep, 16));
	CHECK_EQ(wire[16], 0x50);
	CHECK_EQ(wire[20], 0x80);
	CHECK_EQ(wire[22], 0x80);
}

int main(void)
{
	RUN(test_round_trips);
	RUN(test_known_bytes);
	RUN(test_pdata_limits);
	RUN(test_bad_keys);
	RUN(test_bad_revisions);
	RUN(test_flags);
	RUN(test_v2_words);
	RUN(test_encode_errors);
	RUN(test_crc_matrix);
	RUN(test_markers);
	RUN(test_p2p_matrix);
	RUN(test_revision_matrix);
	RUN(test_reject);
	RUN(test_exchange);
	RUN(test_siw_request);
	return tc_done("wire.mpa");
}
