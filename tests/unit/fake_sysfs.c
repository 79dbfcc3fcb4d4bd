// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fake sysfs for libibverbs' device discovery; see fake_sysfs.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_sysfs.h"

#define CDEV_DIR "/dev/infiniband/"

static char root[64];

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

static int make_dir(const char *fmt, const char *a, char *out, size_t size)
{
	snprintf(out, size, fmt, root, a);
	if (mkdir(out, 0755) && errno != EEXIST) {
		perror(out);
		return -1;
	}
	return 0;
}

static int fake_dev_add(const struct fake_dev *d)
{
	char dir[512], text[64];

	/* The uverbs class device: ibdev name, char dev, driver ABI. */
	if (make_dir("%s/class/infiniband_verbs/%s", d->uverbs, dir,
		     sizeof(dir)) ||
	    write_file(dir, "ibdev", d->ibdev) ||
	    write_file(dir, "dev", "231:192\n"))
		return -1;
	snprintf(text, sizeof(text), "%u\n", d->abi);
	if (write_file(dir, "abi_version", text))
		return -1;

	/* The ibdev: an RNIC, with or without hca_type. */
	if (make_dir("%s/class/infiniband/%s", d->ibdev, dir, sizeof(dir)) ||
	    write_file(dir, "node_type", "4: RNIC\n"))
		return -1;
	if (d->hca_type) {
		snprintf(text, sizeof(text), "%s\n", d->hca_type);
		if (write_file(dir, "hca_type", text))
			return -1;
	}

	/* The character device libibverbs checks for. */
	if (make_dir("%s/dev/%s", "infiniband", dir, sizeof(dir)))
		return -1;
	return write_file(dir, d->uverbs, "");
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	return remove(path);
}

static void fake_sysfs_remove(void)
{
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int fake_sysfs_create(const struct fake_dev *devs, size_t n)
{
	static const char *const dirs[] = {
		"class", "class/infiniband", "class/infiniband_verbs", "dev",
	};
	char dir[512];
	size_t i;

	snprintf(root, sizeof(root), "/tmp/viw-fake-sysfs-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return -1;
	}
	atexit(fake_sysfs_remove);
	for (i = 0; i < ARRAY_SIZE(dirs); i++)
		if (make_dir("%s/%s", dirs[i], dir, sizeof(dir)))
			return -1;
	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", root);
	if (write_file(dir, "abi_version", "6\n"))
		return -1;
	for (i = 0; i < n; i++)
		if (fake_dev_add(&devs[i]))
			return -1;
	return setenv("SYSFS_PATH", root, 1);
}

/* libibverbs must not find the real RDMA netlink (it would win). */
int socket(int domain, int type, int protocol)
{
	static int (*real_socket)(int, int, int);

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA && root[0]) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!real_socket)
		real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT,
							    "socket");
	return real_socket(domain, type, protocol);
}

/* /dev/infiniband/uverbsN exists in the fake tree only. */
int stat(const char *restrict path, struct stat *restrict st)
{
	static int (*real_stat)(const char *restrict, struct stat *restrict);
	char fake[512];

	if (!real_stat)
		real_stat = (int (*)(const char *restrict,
				     struct stat *restrict))dlsym(RTLD_NEXT,
								  "stat");
	if (root[0] && !strncmp(path, CDEV_DIR, strlen(CDEV_DIR))) {
		snprintf(fake, sizeof(fake), "%s/dev/infiniband/%s", root,
			 path + strlen(CDEV_DIR));
		path = fake;
	}
	return real_stat(path, st);
}
