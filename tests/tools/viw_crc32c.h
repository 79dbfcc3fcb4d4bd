/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * CRC32c (Castagnoli), as MPA (RFC 5044 section 4.1) and iSCSI use it, for
 * the user-space test tools.  viw_crc32c_update() neither inverts its input
 * nor its output, like the kernel's crc32c(): start from VIW_CRC_INIT and
 * finish with viw_crc_final() (viw_wire.h).
 */
#ifndef VIW_CRC32C_H
#define VIW_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t viw_crc32c_update(uint32_t state, const void *buf, size_t len);

/* The whole CRC of @buf: initial value, update and final inversion. */
uint32_t viw_crc32c(const void *buf, size_t len);

#endif /* VIW_CRC32C_H */
