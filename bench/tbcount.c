// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A QEMU TCG plugin for bench/insns: counts how often the guest runs each
 * translation block, and writes the counts on the guest's request.
 *
 * Under TCG the guest's time goes to the blocks it runs, so a block's
 * count times its instructions says where a test's work went, with none
 * of the noise of a clock on a shared host.  A count is taken when a
 * block is entered (a block left early, on a fault or an interrupt,
 * still counts whole), and two vCPUs running one block at the same
 * moment may lose an increment: the counts are exact to a few in ten
 * thousand.
 *
 * Loaded as "-plugin tbcount.so,dir=DIR".  The guest asks by renaming a
 * file with a name in it to DIR/tbcount.ctl; the plugin then writes each
 * block run since the last request to DIR/NAME.tbs ("vaddr insns count"
 * in hex, decimal, decimal), resets the counts, and creates
 * DIR/NAME.done.  The plugin API's declarations below are those of QEMU
 * 7.2 (API version 1), which Debian 12 ships; QEMU installs no header.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info,
			       int argc, char **argv);

/* One translation of a block; a block translated again gets another. */
struct block {
	uint64_t vaddr;
	uint64_t count;
	uint32_t insns;
};

#define CHUNK_BLOCKS 65536
#define MAX_CHUNKS 4096

/* Chunks are never moved or freed: the generated code holds &count. */
static struct block *chunks[MAX_CHUNKS];
static unsigned int nr_blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[512];

static struct block *new_block(void)
{
	struct block *b = NULL;
	unsigned int c;

	pthread_mutex_lock(&blocks_lock);
	c = nr_blocks / CHUNK_BLOCKS;
	if (c < MAX_CHUNKS && !chunks[c])
		chunks[c] = calloc(CHUNK_BLOCKS, sizeof(struct block));
	if (c < MAX_CHUNKS && chunks[c]) {
		b = &chunks[c][nr_blocks % CHUNK_BLOCKS];
		nr_blocks++;
	}
	pthread_mutex_unlock(&blocks_lock);
	return b;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = new_block();

	(void)id;

	/* Out of chunks, the block goes uncounted. */
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &b->count, 1);
}

static void write_counts(const char *name)
{
	char path[1024];
	unsigned int i, n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tbs", dir, name);
	f = fopen(path, "w");
	pthread_mutex_lock(&blocks_lock);
	n = nr_blocks;
	pthread_mutex_unlock(&blocks_lock);
	for (i = 0; i < n; i++) {
		struct block *b = &chunks[i / CHUNK_BLOCKS][i % CHUNK_BLOCKS];
		uint64_t count = __atomic_exchange_n(&b->count, 0,
						     __ATOMIC_RELAXED);

		if (count && f)
			fprintf(f, "%llx %u %llu\n",
				(unsigned long long)b->vaddr, b->insns,
				(unsigned long long)count);
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/%s.done", dir, name);
	f = fopen(path, "w");
	if (f)
		fclose(f);
}

/* A name of letters, digits, '.', '_' and '-' only: it becomes a path. */
static bool name_ok(const char *name)
{
	if (!*name)
		return false;
	for (; *name; name++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *name))
			return false;
	return true;
}

static void *watch_requests(void *arg)
{
	char path[1024], name[128];

	(void)arg;
	snprintf(path, sizeof(path), "%s/tbcount.ctl", dir);
	for (;;) {
		FILE *f;
		int got;

		usleep(20000);
		f = fopen(path, "r");
		if (!f)
			continue;
		got = fscanf(f, "%127s", name);
		fclose(f);
		unlink(path);
		if (got == 1 && name_ok(name))
			write_counts(name);
	}
	return NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info,
			       int argc, char **argv)
{
	pthread_t watcher;

	(void)info;
	if (argc != 1 || strncmp(argv[0], "dir=", 4) || !argv[0][4])
		return -1;
	snprintf(dir, sizeof(dir), "%s", argv[0] + 4);
	if (pthread_create(&watcher, NULL, watch_requests, NULL))
		return -1;
	pthread_detach(watcher);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
