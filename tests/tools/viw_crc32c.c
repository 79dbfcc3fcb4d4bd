// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Table-driven CRC32c, one byte at a time: the reflected Castagnoli
 * polynomial 0x1EDC6F41 (0x82F63B78 bit-reversed).  Speed does not matter
 * to a test peer; being obviously right does (tests/tools/test_crc32c.c
 * checks it against RFC 3720's vectors).
 */
#include <stdbool.h>

#include "viw_crc32c.h"

#define VIW_CRC32C_POLY_REV	0x82f63b78U

static uint32_t viw_crc32c_table[256];
static bool viw_crc32c_ready;

static void viw_crc32c_init(void)
{
	uint32_t i, bit, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (bit = 0; bit < 8; bit++)
			c = c & 1 ? (c >> 1) ^ VIW_CRC32C_POLY_REV : c >> 1;
		viw_crc32c_table[i] = c;
	}
	viw_crc32c_ready = true;
}

uint32_t viw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!viw_crc32c_ready)
		viw_crc32c_init();
	while (len--)
		state = viw_crc32c_table[(state ^ *p++) & 0xff] ^ (state >> 8);
	return state;
}

uint32_t viw_crc32c(const void *buf, size_t len)
{
	return ~viw_crc32c_update(0xffffffffU, buf, len);
}
