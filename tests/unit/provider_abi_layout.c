// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * unit.provider_abi_layout: proves that providers/viw/verbs_provider.h
 * lays out libibverbs' private provider structures the way the installed
 * rdma-core does.
 *
 * Oracle: libibverbs-dev ships static archives of the rdma-core providers
 * (libsiw-rdmav34.a, librxe-rdmav34.a, ...), built from the same rdma-core
 * release as libibverbs.so.  Each holds its initialised verbs_context_ops
 * and verbs_device_ops tables, and every function pointer in them carries
 * a relocation whose offset is the offset of that op.  The data tables
 * below say, from each provider's source, which function it puts in which
 * op; the test finds each relocation, names its target, and compares its
 * offset with offsetof() on our header.  The table symbols' sizes give
 * sizeof() of both structs.  The match ABI range of a device table is
 * plain data and is compared by value.
 *
 * Two sizes come from code instead: siw's struct siw_device is exactly a
 * struct verbs_device and struct siw_mr exactly a struct verbs_mr
 * (providers/siw/siw.h), so the immediate siw passes to calloc() for them
 * is their size; objdump decodes it.
 *
 * Finally every op that libviw's own table sets (read the same way from
 * the built libviw-rdmav34.so) must be among the proven ones, or among
 * the few that unit.provider_ops proves against libibverbs at run time.
 *
 * Usage: unit_provider_abi_layout ARCHIVE_DIR LIBVIW_SO
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/erdma-abi.h>
#include <rdma/qedr-abi.h>
#include <rdma/siw-abi.h>

#include "elf_reader.h"
#include "verbs_provider.h"
#include "viw_check.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NUM_OPS (sizeof(struct verbs_context_ops) / sizeof(void *))
#define NO_CHECK UINT32_MAX

struct op_map {
	const char *func;	/* function the provider puts there */
	size_t offset;		/* offsetof() in our header */
	const char *op;
};

#define OP(fn, field) { fn, offsetof(struct verbs_context_ops, field), #field }

struct ops_table {
	const char *symbol;
	const struct op_map *ops;
	size_t n_ops;
};

#define TABLE(sym, map) { sym, map, ARRAY_SIZE(map) }

struct provider {
	const char *name;	/* verbs_provider_<name>, ops->name */
	const struct ops_table *tables;
	size_t n_tables;
	const char *match_table;
	const char *alloc_context;
	const char *alloc_device;
	const char *uninit_device;
	uint32_t abi_min, abi_max;	/* NO_CHECK: not compared */
};

/* providers/siw/siw.c */
static const struct op_map siw_ops[] = {
	OP("siw_alloc_pd", alloc_pd),
	OP("siw_async_event", async_event),
	OP("siw_create_cq", create_cq),
	OP("siw_create_qp", create_qp),
	OP("siw_create_srq", create_srq),
	OP("siw_free_pd", dealloc_pd),
	OP("siw_dereg_mr", dereg_mr),
	OP("siw_destroy_cq", destroy_cq),
	OP("siw_destroy_qp", destroy_qp),
	OP("siw_destroy_srq", destroy_srq),
	OP("siw_free_context", free_context),
	OP("siw_modify_qp", modify_qp),
	OP("siw_modify_srq", modify_srq),
	OP("siw_poll_cq", poll_cq),
	OP("siw_post_recv", post_recv),
	OP("siw_post_send", post_send),
	OP("siw_post_srq_recv", post_srq_recv),
	OP("siw_query_device", query_device_ex),
	OP("siw_query_port", query_port),
	OP("siw_query_qp", query_qp),
	OP("siw_reg_mr", reg_mr),
	OP("siw_notify_cq", req_notify_cq),
};

/* providers/rxe/rxe.c */
static const struct op_map rxe_ops[] = {
	OP("rxe_alloc_mw", alloc_mw),
	OP("rxe_alloc_pd", alloc_pd),
	OP("ibv_cmd_attach_mcast", attach_mcast),
	OP("rxe_bind_mw", bind_mw),
	OP("rxe_create_ah", create_ah),
	OP("rxe_create_cq", create_cq),
	OP("rxe_create_cq_ex", create_cq_ex),
	OP("rxe_create_qp", create_qp),
	OP("rxe_create_qp_ex", create_qp_ex),
	OP("rxe_create_srq", create_srq),
	OP("rxe_create_srq_ex", create_srq_ex),
	OP("rxe_dealloc_mw", dealloc_mw),
	OP("rxe_dealloc_pd", dealloc_pd),
	OP("rxe_dereg_mr", dereg_mr),
	OP("rxe_destroy_ah", destroy_ah),
	OP("rxe_destroy_cq", destroy_cq),
	OP("rxe_destroy_qp", destroy_qp),
	OP("rxe_destroy_srq", destroy_srq),
	OP("ibv_cmd_detach_mcast", detach_mcast),
	OP("rxe_free_context", free_context),
	OP("rxe_modify_qp", modify_qp),
	OP("rxe_modify_srq", modify_srq),
	OP("rxe_poll_cq", poll_cq),
	OP("rxe_post_recv", post_recv),
	OP("rxe_post_send", post_send),
	OP("rxe_post_srq_recv", post_srq_recv),
	OP("rxe_query_device", query_device_ex),
	OP("rxe_query_port", query_port),
	OP("rxe_query_qp", query_qp),
	OP("rxe_query_srq", query_srq),
	OP("rxe_reg_mr", reg_mr),
	OP("ibv_cmd_req_notify_cq", req_notify_cq),
	OP("rxe_resize_cq", resize_cq),
};

/* providers/cxgb4/dev.c: common ops, then the T4 fast path */
static const struct op_map c4iw_common_ops[] = {
	OP("c4iw_alloc_pd", alloc_pd),
	OP("c4iw_attach_mcast", attach_mcast),
	OP("c4iw_create_cq", create_cq),
	OP("c4iw_create_qp", create_qp),
	OP("c4iw_create_srq", create_srq),
	OP("c4iw_free_pd", dealloc_pd),
	OP("c4iw_dereg_mr", dereg_mr),
	OP("c4iw_destroy_cq", destroy_cq),
	OP("c4iw_destroy_qp", destroy_qp),
	OP("c4iw_destroy_srq", destroy_srq),
	OP("c4iw_detach_mcast", detach_mcast),
	OP("c4iw_free_context", free_context),
	OP("c4iw_modify_qp", modify_qp),
	OP("c4iw_modify_srq", modify_srq),
	OP("c4iw_post_srq_recv", post_srq_recv),
	OP("c4iw_query_device", query_device_ex),
	OP("c4iw_query_port", query_port),
	OP("c4iw_query_qp", query_qp),
	OP("c4iw_query_srq", query_srq),
	OP("c4iw_reg_mr", reg_mr),
	OP("c4iw_arm_cq", req_notify_cq),
};

static const struct op_map c4iw_t4_ops[] = {
	OP("c4iw_async_event", async_event),
	OP("c4iw_poll_cq", poll_cq),
	OP("c4iw_post_receive", post_recv),
	OP("c4iw_post_send", post_send),
	OP("c4iw_arm_cq", req_notify_cq),
};

/* providers/erdma/erdma.c */
static const struct op_map erdma_ops[] = {
	OP("erdma_alloc_pd", alloc_pd),
	OP("erdma_cq_event", cq_event),
	OP("erdma_create_cq", create_cq),
	OP("erdma_create_qp", create_qp),
	OP("erdma_free_pd", dealloc_pd),
	OP("erdma_dereg_mr", dereg_mr),
	OP("erdma_destroy_cq", destroy_cq),
	OP("erdma_destroy_qp", destroy_qp),
	OP("erdma_free_context", free_context),
	OP("erdma_modify_qp", modify_qp),
	OP("erdma_poll_cq", poll_cq),
	OP("erdma_post_recv", post_recv),
	OP("erdma_post_send", post_send),
	OP("erdma_query_device", query_device_ex),
	OP("erdma_query_port", query_port),
	OP("erdma_query_qp", query_qp),
	OP("erdma_reg_mr", reg_mr),
	OP("erdma_notify_cq", req_notify_cq),
};

/* providers/hns/hns_roce_u.c */
static const struct op_map hns_ops[] = {
	OP("hns_roce_u_alloc_mw", alloc_mw),
	OP("hns_roce_u_alloc_pd", alloc_pd),
	OP("hns_roce_u_bind_mw", bind_mw),
	OP("hns_roce_u_close_xrcd", close_xrcd),
	OP("hns_roce_u_cq_event", cq_event),
	OP("hns_roce_u_create_ah", create_ah),
	OP("hns_roce_u_create_cq", create_cq),
	OP("hns_roce_u_create_cq_ex", create_cq_ex),
	OP("hns_roce_u_create_qp", create_qp),
	OP("hns_roce_u_create_qp_ex", create_qp_ex),
	OP("hns_roce_u_create_srq", create_srq),
	OP("hns_roce_u_create_srq_ex", create_srq_ex),
	OP("hns_roce_u_dealloc_mw", dealloc_mw),
	OP("hns_roce_u_free_pd", dealloc_pd),
	OP("hns_roce_u_dereg_mr", dereg_mr),
	OP("hns_roce_u_destroy_ah", destroy_ah),
	OP("hns_roce_u_destroy_cq", destroy_cq),
	OP("hns_roce_u_destroy_srq", destroy_srq),
	OP("hns_roce_free_context", free_context),
	OP("hns_roce_u_get_srq_num", get_srq_num),
	OP("hns_roce_u_modify_cq", modify_cq),
	OP("hns_roce_u_modify_srq", modify_srq),
	OP("hns_roce_u_open_qp", open_qp),
	OP("hns_roce_u_open_xrcd", open_xrcd),
	OP("hns_roce_u_query_device", query_device_ex),
	OP("hns_roce_u_query_port", query_port),
	OP("hns_roce_u_query_qp", query_qp),
	OP("hns_roce_u_query_srq", query_srq),
	OP("hns_roce_u_reg_mr", reg_mr),
	OP("hns_roce_u_rereg_mr", rereg_mr),
};

/* providers/irdma/umain.c */
static const struct op_map irdma_ops[] = {
	OP("irdma_ualloc_mw", alloc_mw),
	OP("irdma_ualloc_pd", alloc_pd),
	OP("irdma_uattach_mcast", attach_mcast),
	OP("irdma_ubind_mw", bind_mw),
	OP("irdma_cq_event", cq_event),
	OP("irdma_ucreate_ah", create_ah),
	OP("irdma_ucreate_cq", create_cq),
	OP("irdma_ucreate_cq_ex", create_cq_ex),
	OP("irdma_ucreate_qp", create_qp),
	OP("irdma_udealloc_mw", dealloc_mw),
	OP("irdma_ufree_pd", dealloc_pd),
	OP("irdma_udereg_mr", dereg_mr),
	OP("irdma_udestroy_ah", destroy_ah),
	OP("irdma_udestroy_cq", destroy_cq),
	OP("irdma_udestroy_qp", destroy_qp),
	OP("irdma_udetach_mcast", detach_mcast),
	OP("irdma_ufree_context", free_context),
	OP("irdma_umodify_qp", modify_qp),
	OP("irdma_upoll_cq", poll_cq),
	OP("irdma_upost_recv", post_recv),
	OP("irdma_upost_send", post_send),
	OP("irdma_uquery_device_ex", query_device_ex),
	OP("irdma_uquery_port", query_port),
	OP("irdma_uquery_qp", query_qp),
	OP("irdma_ureg_mr", reg_mr),
	OP("irdma_uarm_cq", req_notify_cq),
	OP("irdma_uresize_cq", resize_cq),
};

/* providers/qedr/qelr_main.c: common ops, then the RoCE extras */
static const struct op_map qelr_ops[] = {
	OP("qelr_alloc_pd", alloc_pd),
	OP("qelr_async_event", async_event),
	OP("qelr_cq_event", cq_event),
	OP("qelr_create_cq", create_cq),
	OP("qelr_create_qp", create_qp),
	OP("qelr_create_srq", create_srq),
	OP("qelr_dealloc_pd", dealloc_pd),
	OP("qelr_dereg_mr", dereg_mr),
	OP("qelr_destroy_cq", destroy_cq),
	OP("qelr_destroy_qp", destroy_qp),
	OP("qelr_destroy_srq", destroy_srq),
	OP("qelr_free_context", free_context),
	OP("qelr_modify_qp", modify_qp),
	OP("qelr_modify_srq", modify_srq),
	OP("qelr_poll_cq", poll_cq),
	OP("qelr_post_recv", post_recv),
	OP("qelr_post_send", post_send),
	OP("qelr_post_srq_recv", post_srq_recv),
	OP("qelr_query_device", query_device_ex),
	OP("qelr_query_port", query_port),
	OP("qelr_query_qp", query_qp),
	OP("qelr_query_srq", query_srq),
	OP("qelr_reg_mr", reg_mr),
	OP("qelr_arm_cq", req_notify_cq),
};

static const struct op_map qelr_roce_ops[] = {
	OP("qelr_close_xrcd", close_xrcd),
	OP("qelr_create_qp_ex", create_qp_ex),
	OP("qelr_create_srq_ex", create_srq_ex),
	OP("qelr_get_srq_num", get_srq_num),
	OP("qelr_open_xrcd", open_xrcd),
};

static const struct ops_table siw_tables[] = {
	TABLE("siw_context_ops", siw_ops),
};
static const struct ops_table rxe_tables[] = {
	TABLE("rxe_ctx_ops", rxe_ops),
};
static const struct ops_table c4iw_tables[] = {
	TABLE("c4iw_ctx_common_ops", c4iw_common_ops),
	TABLE("c4iw_ctx_t4_ops", c4iw_t4_ops),
};
static const struct ops_table erdma_tables[] = {
	TABLE("erdma_context_ops", erdma_ops),
};
static const struct ops_table hns_tables[] = {
	TABLE("hns_common_ops", hns_ops),
};
static const struct ops_table irdma_tables[] = {
	TABLE("irdma_uctx_ops", irdma_ops),
};
static const struct ops_table qelr_tables[] = {
	TABLE("qelr_ctx_ops", qelr_ops),
	TABLE("qelr_ctx_roce_ops", qelr_roce_ops),
};


#define PROVIDER(n, t, match, alloc_ctx, alloc_dev, uninit, min, max) \
	{ .name = n, .tables = t, .n_tables = ARRAY_SIZE(t),		\
	  .match_table = match, .alloc_context = alloc_ctx,		\
	  .alloc_device = alloc_dev, .uninit_device = uninit,		\
	  .abi_min = min, .abi_max = max }

static const struct provider providers[] = {
	PROVIDER("siw", siw_tables, "rnic_table", "siw_alloc_context",
		 "siw_device_alloc", "siw_device_free",
		 SIW_ABI_VERSION, SIW_ABI_VERSION),
	/* rxe accepts ABI 1 and 2 on 64-bit machines */
	PROVIDER("rxe", rxe_tables, "hca_table", "rxe_alloc_context",
		 "rxe_device_alloc", "rxe_uninit_device", 1, 2),
	PROVIDER("cxgb4", c4iw_tables, "hca_table", "c4iw_alloc_context",
		 "c4iw_device_alloc", "c4iw_uninit_device", 0, INT_MAX),
	PROVIDER("erdma", erdma_tables, "match_table", "erdma_alloc_context",
		 "erdma_device_alloc", "erdma_device_free",
		 0, ERDMA_ABI_VERSION),
	PROVIDER("hns", hns_tables, "hca_table", "hns_roce_alloc_context",
		 "hns_device_alloc", "hns_uninit_device", 0, INT_MAX),
	PROVIDER("irdma", irdma_tables, "hca_table", "irdma_ualloc_context",
		 "irdma_device_alloc", "irdma_uninit_device",
		 NO_CHECK, NO_CHECK),
	PROVIDER("qedr", qelr_tables, "hca_table", "qelr_alloc_context",
		 "qelr_device_alloc", "qelr_uninit_device",
		 QEDR_ABI_VERSION, QEDR_ABI_VERSION),
};

static bool op_proven[NUM_OPS];

/* Static builds prefix global provider symbols with "rdmacore<V>_<v>_". */
static const char *strip_static_prefix(const char *name)
{
	const char *p = name;

	if (strncmp(p, "rdmacore", 8))
		return name;
	p += 8;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '_')
		return name;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '_' ? p + 1 : name;
}

/* A loaded archive: its ELF members, each copied to aligned memory. */
struct archive {
	char path[PATH_MAX];
	struct elf_file *objs;
	size_t n_objs;
};

static bool archive_load(struct archive *a, const char *dir, const char *name)
{
	struct blob ar, member;
	struct ar_iter it;
	char mname[256];

	snprintf(a->path, sizeof(a->path), "%s/lib%s-rdmav34.a", dir, name);
	a->objs = NULL;
	a->n_objs = 0;
	if (!blob_read_file(a->path, &ar) || !ar_open(&it, &ar))
		return false;
	while (ar_next(&it, mname, sizeof(mname), &member)) {
		uint8_t *copy = malloc(member.size);
		struct blob b = { copy, member.size };

		a->objs = realloc(a->objs, (a->n_objs + 1) * sizeof(*a->objs));
		if (!copy || !a->objs)
			return false;
		memcpy(copy, member.data, member.size);
		if (elf_open(&a->objs[a->n_objs], &b))
			a->n_objs++;
		else
			free(copy);
	}
	blob_free(&ar);
	return true;
}

static const Elf64_Sym *archive_find(const struct archive *a, const char *sym,
				     const struct elf_file **obj)
{
	size_t i;

	for (i = 0; i < a->n_objs; i++) {
		const Elf64_Sym *s = elf_find_defined(&a->objs[i], sym);

		if (s) {
			*obj = &a->objs[i];
			return s;
		}
	}
	return NULL;
}

/* The name of what a relocation points to: a function or object name. */
static const char *target_name(const struct elf_file *f,
			       const struct elf_target *t)
{
	const Elf64_Sym *s = t->sym;

	if (!s)
		s = elf_find_at(f, t->shndx, t->addend);
	if (!s)
		return NULL;
	return strip_static_prefix(elf_sym_name(f, s));
}

struct ops_walk {
	const char *where;
	const struct elf_file *obj;
	const struct ops_table *table;
	unsigned int *seen;	/* per entry of table->ops */
};

static void check_op_reloc(const struct elf_target *t, void *arg)
{
	struct ops_walk *w = arg;
	const char *fn = target_name(w->obj, t);
	size_t i;

	for (i = 0; fn && i < w->table->n_ops; i++) {
		const struct op_map *m = &w->table->ops[i];

		if (strcmp(m->func, fn))
			continue;
		w->seen[i]++;
		if (m->offset != t->offset) {
			tc_fail("%s: %s is .%s at offset %llu in libibverbs, "
				"at %zu in verbs_provider.h", w->where, fn,
				m->op, (unsigned long long)t->offset,
				m->offset);
			return;
		}
		op_proven[m->offset / sizeof(void *)] = true;
		return;
	}
	tc_fail("%s: offset %llu holds %s, which the test's table does not know",
		w->where, (unsigned long long)t->offset, fn ? fn : "?");
}

static void check_ops_table(const struct archive *a,
			    const struct ops_table *table)
{
	unsigned int seen[128] = {};
	struct ops_walk w = { table->symbol, NULL, table, seen };
	const Elf64_Sym *sym;
	size_t i;

	sym = archive_find(a, table->symbol, &w.obj);
	if (!sym) {
		tc_fail("%s: no table %s", a->path, table->symbol);
		return;
	}
	if (sym->st_size != sizeof(struct verbs_context_ops))
		tc_fail("%s: sizeof(struct verbs_context_ops) is %llu in "
			"libibverbs, %zu in verbs_provider.h", table->symbol,
			(unsigned long long)sym->st_size,
			sizeof(struct verbs_context_ops));
	if (elf_walk_relocs(w.obj, sym, check_op_reloc, &w) < 0)
		tc_fail("%s: malformed relocations", a->path);
	for (i = 0; i < table->n_ops; i++)
		if (seen[i] != 1)
			tc_fail("%s: .%s = %s found %u times, expected once",
				table->symbol, table->ops[i].op,
				table->ops[i].func, seen[i]);
}

struct dev_walk {
	const struct provider *p;
	const struct elf_file *obj;
	unsigned int seen;
};

static const char *string_at(const struct elf_file *f,
			     const struct elf_target *t)
{
	uint64_t size;
	const uint8_t *d;

	if (t->sym)
		return NULL;
	d = elf_section_data(f, t->shndx, &size);
	if (!d || t->addend < 0 || (uint64_t)t->addend >= size ||
	    !memchr(d + t->addend, 0, size - t->addend))
		return NULL;
	return (const char *)d + t->addend;
}

#define DEV_OFF(field) offsetof(struct verbs_device_ops, field)

static void check_dev_reloc(const struct elf_target *t, void *arg)
{
	struct dev_walk *w = arg;
	const char *want, *field, *got;

	if (t->offset == DEV_OFF(name)) {
		got = string_at(w->obj, t);
		want = w->p->name;
		field = "name";
	} else {
		got = target_name(w->obj, t);
		if (t->offset == DEV_OFF(match_table))
			want = w->p->match_table, field = "match_table";
		else if (t->offset == DEV_OFF(alloc_context))
			want = w->p->alloc_context, field = "alloc_context";
		else if (t->offset == DEV_OFF(alloc_device))
			want = w->p->alloc_device, field = "alloc_device";
		else if (t->offset == DEV_OFF(uninit_device))
			want = w->p->uninit_device, field = "uninit_device";
		else
			want = NULL, field = "?";
	}
	if (!want || !got || strcmp(want, got)) {
		tc_fail("verbs_provider_%s: offset %llu holds %s; "
			"verbs_provider.h has .%s (%s) there", w->p->name,
			(unsigned long long)t->offset, got ? got : "?", field,
			want ? want : "nothing the test expects");
		return;
	}
	w->seen++;
}

static uint32_t read_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void check_dev_abi_range(const struct provider *p,
				const struct elf_file *obj,
				const Elf64_Sym *sym)
{
	const uint8_t *d;
	uint64_t size;
	uint32_t min, max;

	if (p->abi_min == NO_CHECK)
		return;
	d = elf_section_data(obj, sym->st_shndx, &size);
	if (!d || sym->st_value + sizeof(struct verbs_device_ops) > size) {
		tc_fail("verbs_provider_%s: no data", p->name);
		return;
	}
	d += sym->st_value;
	min = read_u32(d + DEV_OFF(match_min_abi_version));
	max = read_u32(d + DEV_OFF(match_max_abi_version));
	if (min != p->abi_min || max != p->abi_max)
		tc_fail("verbs_provider_%s: ABI range read as %u..%u at the "
			"offsets of match_{min,max}_abi_version, expected %u..%u",
			p->name, min, max, p->abi_min, p->abi_max);
}

static void check_dev_ops(const struct archive *a, const struct provider *p)
{
	struct dev_walk w = { p, NULL, 0 };
	const Elf64_Sym *sym;
	char name[64];

	snprintf(name, sizeof(name), "verbs_provider_%s", p->name);
	sym = archive_find(a, name, &w.obj);
	if (!sym) {
		tc_fail("%s: no %s", a->path, name);
		return;
	}
	if (sym->st_size != sizeof(struct verbs_device_ops))
		tc_fail("%s: sizeof(struct verbs_device_ops) is %llu in "
			"libibverbs, %zu in verbs_provider.h", name,
			(unsigned long long)sym->st_size,
			sizeof(struct verbs_device_ops));
	if (elf_walk_relocs(w.obj, sym, check_dev_reloc, &w) < 0)
		tc_fail("%s: malformed relocations", a->path);
	if (w.seen != 5)
		tc_fail("%s: %u of name, match_table, alloc_context, "
			"alloc_device and uninit_device found", name, w.seen);
	check_dev_abi_range(p, w.obj, sym);
}

static void check_provider(const char *dir, const struct provider *p)
{
	struct archive a;
	int before = tc_failures;
	size_t i;

	if (!archive_load(&a, dir, p->name)) {
		tc_fail("cannot read %s: %s (libibverbs-dev ships it)", a.path,
			strerror(errno));
		return;
	}
	for (i = 0; i < p->n_tables; i++)
		check_ops_table(&a, &p->tables[i]);
	check_dev_ops(&a, p);
	if (tc_failures == before)
		printf("PASS %s: %zu ops table(s) and verbs_device_ops\n",
		       p->name, p->n_tables);
	for (i = 0; i < a.n_objs; i++)
		free((void *)a.objs[i].b.data);
	free(a.objs);
}

/*
 * The size siw passes to calloc() in @func, decoded by objdump: the last
 * "mov $imm,%esi" before the call.  Returns 0 if it cannot be found.
 */
static unsigned long siw_calloc_size(const char *dir, const char *func)
{
	char cmd[PATH_MAX + 64], line[512], hdr[128];
	unsigned long size = 0, found = 0;
	bool in_func = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d -r --no-show-raw-insn %s/libsiw-rdmav34.a "
		 "2>/dev/null", dir);
	snprintf(hdr, sizeof(hdr), "<%s>:", func);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *imm;

		if (strstr(line, hdr))
			in_func = true;
		else if (!in_func)
			continue;
		else if (line[0] == '\n')
			break;
		imm = strstr(line, "mov    $0x");
		if (imm && strstr(line, ",%esi"))
			size = strtoul(imm + 8, NULL, 16);
		if (strstr(line, "calloc") && !found)
			found = size;
	}
	pclose(p);
	return found;
}

static void check_size_from_code(const char *dir, const char *func,
				 const char *type, size_t ours)
{
	unsigned long theirs = siw_calloc_size(dir, func);

	if (!theirs) {
		printf("SKIP sizeof(%s): cannot decode %s with objdump\n",
		       type, func);
		return;
	}
	if (theirs != ours) {
		tc_fail("sizeof(%s) is %lu in libibverbs (%s), %zu in "
			"verbs_provider.h", type, theirs, func, ours);
		return;
	}
	printf("PASS sizeof(%s) == %zu (from %s)\n", type, ours, func);
}

/*
 * Ops that no shipped archive sets but libviw does.  unit.provider_ops
 * proves their offsets against libibverbs at run time instead.
 */
static const size_t proven_at_run_time[] = {
	offsetof(struct verbs_context_ops, alloc_dm),
	offsetof(struct verbs_context_ops, alloc_parent_domain),
	offsetof(struct verbs_context_ops, free_dm),
	offsetof(struct verbs_context_ops, reg_dm_mr),
};

static void add_run_time_proofs(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(proven_at_run_time); i++)
		op_proven[proven_at_run_time[i] / sizeof(void *)] = true;
}

struct viw_walk {
	const struct elf_file *so;
	unsigned int n;
};

static void check_viw_op(const struct elf_target *t, void *arg)
{
	struct viw_walk *w = arg;
	const Elf64_Sym *s = elf_find_at(w->so, SHN_UNDEF, t->addend);
	const char *fn = s ? elf_sym_name(w->so, s) : "?";
	size_t i = t->offset / sizeof(void *);

	w->n++;
	if (i >= NUM_OPS || !op_proven[i])
		tc_fail("libviw sets op #%zu (%s) whose offset no provider "
			"proves", i, fn);
}

/* Every op libviw sets must sit at an offset proven above. */
static void check_viw_coverage(const char *so_path)
{
	struct viw_walk w = { NULL, 0 };
	struct elf_file so;
	struct blob b;
	const Elf64_Sym *sym;
	int before = tc_failures;

	if (!blob_read_file(so_path, &b) || !elf_open(&so, &b)) {
		tc_fail("cannot read %s", so_path);
		return;
	}
	w.so = &so;
	sym = elf_find_defined(&so, "viw_context_ops");
	if (!sym || sym->st_size != sizeof(struct verbs_context_ops)) {
		tc_fail("%s: no viw_context_ops of the right size", so_path);
	} else {
		elf_walk_relocs(&so, sym, check_viw_op, &w);
		if (tc_failures == before)
			printf("PASS all %u ops libviw sets are proven\n",
			       w.n);
	}
	blob_free(&b);
}

static void report_unproven(void)
{
	size_t i, n = 0;

	for (i = 0; i < NUM_OPS; i++)
		n += op_proven[i];
	printf("INFO %zu of %zu verbs_context_ops offsets proven; "
	       "verbs_device_ops.static_providers, .match_device and "
	       ".import_context are set by no shipped provider "
	       "(unit.provider_match checks match_device at run time; "
	       "unit.provider_ops the ops in proven_at_run_time[])\n",
	       n, NUM_OPS);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ARCHIVE_DIR LIBVIW_SO\n", argv[0]);
		return 2;
	}
	for (i = 0; i < ARRAY_SIZE(providers); i++)
		check_provider(argv[1], &providers[i]);
	check_size_from_code(argv[1], "siw_device_alloc",
			     "struct verbs_device", sizeof(struct verbs_device));
	check_size_from_code(argv[1], "siw_reg_mr", "struct verbs_mr",
			     sizeof(struct verbs_mr));
	add_run_time_proofs();
	check_viw_coverage(argv[2]);
	report_unproven();
	return tc_done("unit.provider_abi_layout");
}
