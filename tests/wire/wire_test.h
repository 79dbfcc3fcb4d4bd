/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The viw wire codec tests: the shared report (viw_check.h) and the
 * test-side CRC32c (the kernel uses crc32c(); the codec itself computes no
 * CRC).
 */
#ifndef VIW_WIRE_TEST_H
#define VIW_WIRE_TEST_H

#include <stdio.h>
#include <string.h>

#include "viw_check.h"
#include "viw_wire.h"

/* CRC32c update (reflected polynomial 0x82f63b78), state from VIW_CRC_INIT. */
u32 wire_crc32c(u32 state, const void *buf, size_t len);

/* Fills in the CRC trailer of the FPDU at @fpdu (ULPDU_Length first). */
void wire_fpdu_seal(u8 *fpdu);

#endif /* VIW_WIRE_TEST_H */
