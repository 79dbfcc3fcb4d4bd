// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tools.crc32c: the test peer's CRC32c against the test vectors of
 * RFC 3720 appendix B.4 (which lists the CRC bytes in the order they are
 * sent, i.e. little-endian, as MPA stores them too), the common "123456789"
 * check value, and incremental updates against one-shot.
 */
#include <string.h>

#include "viw_check.h"
#include "viw_crc32c.h"
#include "viw_wire.h"

static void check(const char *name, const uint8_t *buf, size_t len,
		  const uint8_t want[4])
{
	uint8_t got[4];

	viw_put_crc(got, viw_crc32c(buf, len));
	tc_result(!memcmp(got, want, 4), name,
		  "got %02x %02x %02x %02x, want %02x %02x %02x %02x", got[0],
		  got[1], got[2], got[3], want[0], want[1], want[2], want[3]);
}

/* RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU. */
static const uint8_t viw_iscsi_read[48] = {
	0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
	0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void check_incremental(void)
{
	uint8_t buf[100], want[4], got[4];
	uint32_t s = VIW_CRC_INIT;
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	viw_put_crc(want, viw_crc32c(buf, sizeof(buf)));
	for (i = 0; i < sizeof(buf); i += 13)
		s = viw_crc32c_update(s, buf + i,
				      sizeof(buf) - i < 13 ? sizeof(buf) - i : 13);
	viw_put_crc(got, viw_crc_final(s));
	tc_result(!memcmp(got, want, 4), "incremental", "differs from one-shot");
}

int main(void)
{
	static const uint8_t v_zero[4] = { 0xaa, 0x36, 0x91, 0x8a };
	static const uint8_t v_ones[4] = { 0x43, 0xab, 0xa8, 0x62 };
	static const uint8_t v_inc[4] = { 0x4e, 0x79, 0xdd, 0x46 };
	static const uint8_t v_dec[4] = { 0x5c, 0xdb, 0x3f, 0x11 };
	static const uint8_t v_read[4] = { 0x56, 0x3a, 0x96, 0xd9 };
	static const uint8_t v_check[4] = { 0x83, 0x92, 0x06, 0xe3 };
	uint8_t buf[32];
	int i;

	memset(buf, 0, sizeof(buf));
	check("rfc3720 32 bytes of zeroes", buf, 32, v_zero);
	memset(buf, 0xff, sizeof(buf));
	check("rfc3720 32 bytes of ones", buf, 32, v_ones);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	check("rfc3720 32 incrementing bytes", buf, 32, v_inc);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	check("rfc3720 32 decrementing bytes", buf, 32, v_dec);
	check("rfc3720 iscsi read pdu", viw_iscsi_read, 48, v_read);
	check("check value 123456789", (const uint8_t *)"123456789", 9, v_check);
	check_incremental();
	return tc_done("tools.crc32c");
}
