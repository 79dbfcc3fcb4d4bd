/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Just enough of ar(5) and ELF64 (x86-64, little endian) to read the
 * initialised tables of relocatable objects and shared objects: symbols,
 * section contents and RELA relocations.  Every offset read from a file
 * is bounds-checked; a malformed file makes the functions return errors.
 */
#ifndef VIW_TEST_ELF_READER_H
#define VIW_TEST_ELF_READER_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct blob {
	const uint8_t *data;
	size_t size;
};

/* Reads a whole file; returns false (with errno) on failure. */
bool blob_read_file(const char *path, struct blob *b);
void blob_free(struct blob *b);

struct ar_iter {
	struct blob ar;
	size_t pos;
	struct blob longnames;
};

bool ar_open(struct ar_iter *it, const struct blob *ar);
/* Next member; name is copied into name_buf.  False at the end. */
bool ar_next(struct ar_iter *it, char *name_buf, size_t name_size,
	     struct blob *member);

struct elf_file {
	struct blob b;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	unsigned int shnum;
	const Elf64_Sym *syms;
	size_t nsyms;
	const char *strtab;
	size_t strtab_size;
};

bool elf_open(struct elf_file *f, const struct blob *b);
const char *elf_sym_name(const struct elf_file *f, const Elf64_Sym *s);
/* A defined symbol by name, or NULL. */
const Elf64_Sym *elf_find_defined(const struct elf_file *f, const char *name);
/* A defined function or object at (section, value), or NULL. */
const Elf64_Sym *elf_find_at(const struct elf_file *f, unsigned int shndx,
			     uint64_t value);
/* Bytes of a PROGBITS section, or NULL. */
const uint8_t *elf_section_data(const struct elf_file *f, unsigned int shndx,
				uint64_t *size);

/* What a 64-bit relocation in a table points to. */
struct elf_target {
	uint64_t offset;	/* of the relocated word, from the table */
	const Elf64_Sym *sym;	/* a named symbol, or NULL */
	unsigned int shndx;	/* else this section ... */
	int64_t addend;		/* ... at this offset */
};

/*
 * Calls fn for each R_X86_64_64 (ET_REL) or R_X86_64_RELATIVE (ET_DYN)
 * relocation inside [sym->st_value, +st_size).  Returns the number of
 * relocations, or -1 if the file is malformed.
 */
typedef void (*elf_reloc_fn_t)(const struct elf_target *t, void *arg);
int elf_walk_relocs(const struct elf_file *f, const Elf64_Sym *table,
		       elf_reloc_fn_t fn, void *arg);

#endif
