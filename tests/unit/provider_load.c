// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_load: libibverbs loads libviw-rdmav34.so from
 * RDMAV_DRIVERS, without a symbol error, and libviw registers itself for
 * the private ABI this libibverbs speaks.
 *
 * libibverbs loads providers only when it finds a device no loaded
 * provider claims, so the test shows it one viw device in a fake sysfs
 * (fake_sysfs.c) and then calls ibv_get_device_list().  Its warnings are
 * captured: a provider with an unresolved symbol or a symbol version this
 * libibverbs lacks ("IBVERBS_PRIVATE_35") makes dlopen() fail and
 * libibverbs say "couldn't load driver".
 *
 * Environment: RDMAV_DRIVERS=<build>/lib/libviw (set by ctest).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/viw-abi.h>

#include "fake_sysfs.h"
#include "verbs_provider.h"
#include "viw_check.h"

#define PROVIDER_SUFFIX "-rdmav34.so"

/* ibv_get_device_list() with stderr captured into @log. */
static struct ibv_device **list_devices(int *num, char *log, size_t size)
{
	struct ibv_device **list;
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n = 0;

	fflush(stderr);
	if (tmp)
		dup2(fileno(tmp), STDERR_FILENO);
	list = ibv_get_device_list(num);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if (tmp) {
		rewind(tmp);
		n = fread(log, 1, size - 1, tmp);
		fclose(tmp);
	}
	log[n] = '\0';
	return list;
}

static const struct verbs_device_ops *loaded_provider(const char *so)
{
	void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return NULL;
	return dlsym(h, "verbs_provider_viw");
}

static void check_ops(const struct verbs_device_ops *ops)
{
	tc_result(ops && ops->name && !strcmp(ops->name, "viw"),
		  "verbs_provider_viw names viw", "wrong or missing name");
	tc_result(ops && ops->match_min_abi_version == VIW_ABI_VERSION &&
		  ops->match_max_abi_version == VIW_ABI_VERSION,
		  "provider accepts uverbs ABI VIW_ABI_VERSION", "wrong range");
	tc_result(ops && ops->match_device && ops->alloc_device &&
		  ops->uninit_device && ops->alloc_context,
		  "provider has match_device and the device callbacks",
		  "wrong callbacks");
	/*
	 * libibverbs walks every provider's table when it matches other
	 * drivers' devices by driver id: it must exist and hold only the
	 * end marker, so that match_device alone decides.
	 */
	tc_result(ops && ops->match_table &&
		  ops->match_table[0].kind == VERBS_MATCH_SENTINEL,
		  "match table holds only the end marker",
		  "missing or non-empty match table");
}

static void check_claimed(struct ibv_device **list,
			  const struct verbs_device_ops *ops)
{
	int found = 0;

	for (; list && *list; list++) {
		struct verbs_device *vdev = (struct verbs_device *)*list;

		if (!strcmp((*list)->name, "rnic7"))
			found = vdev->ops == ops;
	}
	tc_result(found, "libviw claims the viw device",
		  "device rnic7 missing or claimed by another provider");
}

int main(void)
{
	static const struct fake_dev devs[] = {
		{ "uverbs0", "rnic7", VIW_HCA_TYPE, VIW_ABI_VERSION },
	};
	const char *drivers = getenv("RDMAV_DRIVERS");
	const struct verbs_device_ops *ops;
	struct ibv_device **list;
	char so[4096], log[8192];
	int num;

	if (!drivers || drivers[0] != '/') {
		fprintf(stderr, "set RDMAV_DRIVERS=<build>/lib/libviw\n");
		return 2;
	}
	snprintf(so, sizeof(so), "%s%s", drivers, PROVIDER_SUFFIX);
	if (fake_sysfs_create(devs, 1))
		return 2;
	setenv("IBV_SHOW_WARNINGS", "1", 1);

	list = list_devices(&num, log, sizeof(log));
	if (log[0])
		printf("libibverbs said:\n%s", log);
	tc_result(!strstr(log, so), "libibverbs loaded the provider quietly",
		  "libibverbs warned about it (see above)");

	ops = loaded_provider(so);
	if (!ops && !dlopen(so, RTLD_NOW))
		printf("dlopen: %s\n", dlerror());
	tc_result(ops != NULL, "libviw is loaded and exports verbs_provider_viw",
		  "not loaded by libibverbs");
	tc_result(dlvsym(RTLD_DEFAULT, "verbs_register_driver_34",
			 "IBVERBS_PRIVATE_34") != NULL,
		  "libibverbs exports verbs_register_driver_34@IBVERBS_PRIVATE_34",
		  "it does not");
	check_ops(ops);
	check_claimed(list, ops);
	ibv_free_device_list(list);
	return tc_done("unit.provider_load");
}
