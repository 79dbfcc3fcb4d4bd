/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * viw_check: the report of the host-only tests (tests/unit, tests/wire,
 * tests/tools), written once.  A check that fails prints a "FAIL ..." line
 * and is counted; a group of checks prints "PASS name" or "FAIL name";
 * tc_done() prints the totals and gives the exit code that ctest reads.
 */
#ifndef VIW_CHECK_H
#define VIW_CHECK_H

#include <stdbool.h>

/* Checks made, and how many of them failed. */
extern int tc_checks, tc_failures;

void tc_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tc_fail_at(const char *file, int line, const char *cond,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void tc_result(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void tc_report(const char *name, int before);
int tc_done(const char *suite);

/*
 * @cond holds.  The FAIL line names the place and the condition, then what
 * the optional printf arguments say.
 */
#define CHECK(cond, ...)						\
	do {								\
		tc_checks++;						\
		if (!(cond))						\
			tc_fail_at(__FILE__, __LINE__, "CHECK(" #cond ")", \
				   " " __VA_ARGS__);			\
	} while (0)

/* @a == @b as integers; the FAIL line shows both values. */
#define CHECK_EQ(a, b)							\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		tc_checks++;						\
		if (_a != _b)						\
			tc_fail_at(__FILE__, __LINE__,			\
				   "CHECK_EQ(" #a ", " #b ")",		\
				   ": %lld != %lld", _a, _b);		\
	} while (0)

/* Run the group of checks @fn(), then PASS or FAIL it by its name. */
#define RUN(fn)								\
	do {								\
		int _before = tc_failures;				\
		fn();							\
		tc_report(#fn, _before);				\
	} while (0)

#endif /* VIW_CHECK_H */
