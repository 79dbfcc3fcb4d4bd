// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A table-driven CRC32c, written independently of the kernel's so that
 * the known-answer tests mean something.
 */
#include "wire_test.h"

static u32 wire_crc_table[256];

static void wire_crc_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		wire_crc_table[i] = c;
	}
}

u32 wire_crc32c(u32 state, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!wire_crc_table[1])
		wire_crc_init();
	for (; len; len--, p++)
		state = wire_crc_table[(state ^ *p) & 0xff] ^ (state >> 8);
	return state;
}

void wire_fpdu_seal(u8 *fpdu)
{
	u32 ulpdu = (u32)fpdu[0] << 8 | fpdu[1];
	u32 covered = viw_fpdu_len(ulpdu) - VIW_MPA_CRC_SIZE;
	u32 crc = wire_crc32c(VIW_CRC_INIT, fpdu, covered);

	viw_put_crc(fpdu + covered, viw_crc_final(crc));
}
