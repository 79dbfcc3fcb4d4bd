/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Minimal test harness for the viw wire codec tests, plus the test-side
 * CRC32c (the kernel uses crc32c(); the codec itself computes no CRC).
 */
#ifndef VIW_WIRE_TEST_H
#define VIW_WIRE_TEST_H

#include <stdio.h>
#include <string.h>

#include "viw_wire.h"

extern int wire_failures;
extern int wire_checks;

#define CHECK(cond)							\
	do {								\
		wire_checks++;						\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
			wire_failures++;				\
		}							\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		wire_checks++;						\
		if (_a != _b) {						\
			fprintf(stderr,					\
				"%s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, _a, _b);	\
			wire_failures++;				\
		}							\
	} while (0)

#define RUN(fn)								\
	do {								\
		int _f = wire_failures;					\
		fn();							\
		printf("%-40s %s\n", #fn,				\
		       wire_failures == _f ? "ok" : "FAILED");		\
	} while (0)

/* Prints a summary; returns the process exit status. */
int wire_done(const char *suite);

/* CRC32c update (reflected polynomial 0x82f63b78), state from VIW_CRC_INIT. */
u32 wire_crc32c(u32 state, const void *buf, size_t len);

/* Fills in the CRC trailer of the FPDU at @fpdu (ULPDU_Length first). */
void wire_fpdu_seal(u8 *fpdu);

#endif /* VIW_WIRE_TEST_H */
