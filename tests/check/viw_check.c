// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * viw_check: the report of the host-only tests; see viw_check.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "viw_check.h"

int tc_checks, tc_failures;

static void tc_line(const char *word, const char *fmt, va_list ap)
{
	printf("%s ", word);
	vprintf(fmt, ap);
	printf("\n");
}

void tc_pass(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tc_line("PASS", fmt, ap);
	va_end(ap);
}

void tc_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tc_line("FAIL", fmt, ap);
	va_end(ap);
	tc_failures++;
}

/* FAIL file:line: the condition that did not hold, and why. */
void tc_fail_at(const char *file, int line, const char *cond,
		const char *fmt, ...)
{
	const char *base = strrchr(file, '/');
	va_list ap;

	printf("FAIL %s:%d: %s", base ? base + 1 : file, line, cond);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	tc_failures++;
}

/* PASS @name, or FAIL @name: why. */
void tc_result(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	tc_checks++;
	if (ok) {
		tc_pass("%s", name);
		return;
	}
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	tc_failures++;
}

/* PASS @name if no check failed since tc_failures was @before. */
void tc_report(const char *name, int before)
{
	printf("%s %s\n", tc_failures == before ? "PASS" : "FAIL", name);
}

/* The totals of @suite; the exit code: 0, or 1 if a check failed. */
int tc_done(const char *suite)
{
	printf("%s: %d checks, %d failed\n", suite, tc_checks, tc_failures);
	return tc_failures ? 1 : 0;
}
