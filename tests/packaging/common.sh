# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
#
# Helpers for the packaging tests (debian.sh, rpm.sh), sourced on the host.

PKG_T0=$SECONDS

# step MSG...: a progress line with the seconds since the test started.
step() { printf '[%4ds] %s\n' $((SECONDS - PKG_T0)) "$*"; }

# fail MSG...: end the test.
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# copy_tree SRC DEST: the files of SRC's working tree that git knows about
# (tracked, or untracked but not ignored), as they are now, so that
# uncommitted changes are packaged too and build trees are not.  Without
# git, everything but build*/ directories.
copy_tree() {
	local src=$1 dest=$2
	mkdir -p "$dest"
	if git -c safe.directory="$src" -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$src" &&
			git -c safe.directory="$src" ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do
				[ -e "$f" ] && printf '%s\0' "$f" # tracked but deleted
			done |
			tar -cf - --null --no-recursion -T -) | tar -xf - -C "$dest"
	else
		tar -C "$src" --exclude='./build*' -cf - . | tar -xf - -C "$dest"
	fi || fail "cannot copy $src to $dest"
}

# need CMD...: each command must exist (scripts/install-deps installs them).
need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || fail "$c not found: run scripts/install-deps"
	done
}
