// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Minimal ar(5) and ELF64 reader for the layout tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_reader.h"

#define AR_MAGIC "!<arch>\n"
#define AR_HDR_SIZE 60

bool blob_read_file(const char *path, struct blob *b)
{
	struct stat st;
	uint8_t *data;
	ssize_t n;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st))
		goto err_close;
	data = malloc(st.st_size + 1);
	if (!data)
		goto err_close;
	while (got < (size_t)st.st_size) {
		n = read(fd, data + got, st.st_size - got);
		if (n <= 0)
			goto err_free;
		got += n;
	}
	close(fd);
	b->data = data;
	b->size = got;
	return true;

err_free:
	free(data);
err_close:
	close(fd);
	if (!errno)
		errno = EIO;
	return false;
}

void blob_free(struct blob *b)
{
	free((void *)b->data);
	b->data = NULL;
}

static bool in_bounds(const struct blob *b, uint64_t off, uint64_t len)
{
	return off <= b->size && len <= b->size - off;
}

bool ar_open(struct ar_iter *it, const struct blob *ar)
{
	memset(it, 0, sizeof(*it));
	if (ar->size < 8 || memcmp(ar->data, AR_MAGIC, 8))
		return false;
	it->ar = *ar;
	it->pos = 8;
	return true;
}

/* GNU ar: "name/", "/123" into the "//" table, "/" the symbol index. */
static void ar_member_name(const struct ar_iter *it, const char *raw,
			   char *buf, size_t size)
{
	const char *name = raw;
	size_t len = 16, i;

	if (raw[0] == '/' && raw[1] >= '0' && raw[1] <= '9') {
		unsigned long off = strtoul(raw + 1, NULL, 10);

		if (off >= it->longnames.size) {
			snprintf(buf, size, "?");
			return;
		}
		name = (const char *)it->longnames.data + off;
		len = it->longnames.size - off;
	}
	for (i = 0; i < len && i + 1 < size; i++) {
		if (name[i] == '/' || name[i] == '\n' || name[i] == ' ')
			break;
		buf[i] = name[i];
	}
	buf[i] = '\0';
}

bool ar_next(struct ar_iter *it, char *name_buf, size_t name_size,
	     struct blob *member)
{
	while (in_bounds(&it->ar, it->pos, AR_HDR_SIZE)) {
		const char *hdr = (const char *)it->ar.data + it->pos;
		char size_str[11];
		unsigned long size;

		memcpy(size_str, hdr + 48, 10);
		size_str[10] = '\0';
		size = strtoul(size_str, NULL, 10);
		if (!in_bounds(&it->ar, it->pos + AR_HDR_SIZE, size))
			return false;
		member->data = it->ar.data + it->pos + AR_HDR_SIZE;
		member->size = size;
		it->pos += AR_HDR_SIZE + size + (size & 1);

		if (!memcmp(hdr, "// ", 3)) {
			it->longnames = *member;
			continue;
		}
		if (hdr[0] == '/' && (hdr[1] == ' ' || hdr[1] == 'S'))
			continue;	/* symbol index */
		ar_member_name(it, hdr, name_buf, name_size);
		return true;
	}
	return false;
}

static bool elf_header_ok(const struct blob *b)
{
	const Elf64_Ehdr *eh = (const void *)b->data;

	return in_bounds(b, 0, sizeof(*eh)) &&
	       !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
	       eh->e_ident[EI_CLASS] == ELFCLASS64 &&
	       eh->e_ident[EI_DATA] == ELFDATA2LSB &&
	       eh->e_machine == EM_X86_64 &&
	       (eh->e_type == ET_REL || eh->e_type == ET_DYN) &&
	       eh->e_shentsize == sizeof(Elf64_Shdr) &&
	       in_bounds(b, eh->e_shoff,
			 (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr));
}

static bool elf_load_symtab(struct elf_file *f)
{
	unsigned int i;

	for (i = 0; i < f->shnum; i++) {
		const Elf64_Shdr *s = &f->sh[i], *str;

		if (s->sh_type != SHT_SYMTAB)
			continue;
		if (s->sh_link >= f->shnum ||
		    !in_bounds(&f->b, s->sh_offset, s->sh_size))
			return false;
		str = &f->sh[s->sh_link];
		if (!in_bounds(&f->b, str->sh_offset, str->sh_size))
			return false;
		f->syms = (const void *)(f->b.data + s->sh_offset);
		f->nsyms = s->sh_size / sizeof(Elf64_Sym);
		f->strtab = (const char *)f->b.data + str->sh_offset;
		f->strtab_size = str->sh_size;
		return true;
	}
	return false;
}

bool elf_open(struct elf_file *f, const struct blob *b)
{
	memset(f, 0, sizeof(*f));
	if (!elf_header_ok(b) || ((uintptr_t)b->data & 7))
		return false;
	f->b = *b;
	f->eh = (const void *)b->data;
	f->sh = (const void *)(b->data + f->eh->e_shoff);
	f->shnum = f->eh->e_shnum;
	return elf_load_symtab(f);
}

const char *elf_sym_name(const struct elf_file *f, const Elf64_Sym *s)
{
	if (s->st_name >= f->strtab_size)
		return "?";
	return f->strtab + s->st_name;
}

const Elf64_Sym *elf_find_defined(const struct elf_file *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nsyms; i++) {
		const Elf64_Sym *s = &f->syms[i];

		if (s->st_shndx != SHN_UNDEF && s->st_shndx < f->shnum &&
		    !strcmp(elf_sym_name(f, s), name))
			return s;
	}
	return NULL;
}

const Elf64_Sym *elf_find_at(const struct elf_file *f, unsigned int shndx,
			     uint64_t value)
{
	size_t i;

	for (i = 0; i < f->nsyms; i++) {
		const Elf64_Sym *s = &f->syms[i];
		int type = ELF64_ST_TYPE(s->st_info);

		if ((type == STT_FUNC || type == STT_OBJECT) &&
		    (shndx == SHN_UNDEF || s->st_shndx == shndx) &&
		    s->st_value == value)
			return s;
	}
	return NULL;
}

const uint8_t *elf_section_data(const struct elf_file *f, unsigned int shndx,
				uint64_t *size)
{
	const Elf64_Shdr *s;

	if (shndx >= f->shnum)
		return NULL;
	s = &f->sh[shndx];
	if (s->sh_type != SHT_PROGBITS ||
	    !in_bounds(&f->b, s->sh_offset, s->sh_size))
		return NULL;
	*size = s->sh_size;
	return f->b.data + s->sh_offset;
}

/* One relocation entry of a table, turned into an elf_target. */
static bool elf_target_of(const struct elf_file *f, const Elf64_Rela *r,
			  const Elf64_Sym *table, struct elf_target *t)
{
	uint64_t type = ELF64_R_TYPE(r->r_info);
	uint64_t symi = ELF64_R_SYM(r->r_info);

	if (r->r_offset < table->st_value ||
	    r->r_offset >= table->st_value + table->st_size)
		return false;
	memset(t, 0, sizeof(*t));
	t->offset = r->r_offset - table->st_value;
	t->addend = r->r_addend;
	if (f->eh->e_type == ET_DYN) {
		/* Local targets of a shared object: vaddr in the addend. */
		t->shndx = SHN_UNDEF;
		return type == R_X86_64_RELATIVE;
	}
	if (type != R_X86_64_64 || symi >= f->nsyms)
		return false;
	if (ELF64_ST_TYPE(f->syms[symi].st_info) == STT_SECTION)
		t->shndx = f->syms[symi].st_shndx;
	else
		t->sym = &f->syms[symi];
	return true;
}

static bool rela_applies(const struct elf_file *f, const Elf64_Shdr *s,
			 const Elf64_Sym *table)
{
	if (s->sh_type != SHT_RELA)
		return false;
	/* Relocatable: per-section tables; shared: the dynamic ones. */
	if (f->eh->e_type == ET_REL)
		return s->sh_info == table->st_shndx;
	return !(s->sh_flags & SHF_INFO_LINK);
}

int elf_walk_relocs(const struct elf_file *f, const Elf64_Sym *table,
		       elf_reloc_fn_t fn, void *arg)
{
	unsigned int i;
	int count = 0;

	for (i = 0; i < f->shnum; i++) {
		const Elf64_Shdr *s = &f->sh[i];
		const Elf64_Rela *r;
		size_t n, j;

		if (!rela_applies(f, s, table))
			continue;
		if (!in_bounds(&f->b, s->sh_offset, s->sh_size))
			return -1;
		r = (const void *)(f->b.data + s->sh_offset);
		n = s->sh_size / sizeof(*r);
		for (j = 0; j < n; j++) {
			struct elf_target t;

			if (!elf_target_of(f, &r[j], table, &t))
				continue;
			fn(&t, arg);
			count++;
		}
	}
	return count;
}
