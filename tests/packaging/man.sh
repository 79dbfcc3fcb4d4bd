#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# packaging.man: the manual pages the packages install (docs/man) are lint
# clean, as the distributions check them, and carry the project's version:
#   mandoc -T lint -W all     no message at all (style included);
#   man --warnings            no groff warning (what lintian runs);
#   .TH                       the footer names "viw VERSION".
#
#   tests/packaging/man.sh SRC VERSION
set -uo pipefail
. "$(dirname "$0")/common.sh"

[ $# -eq 2 ] || { echo "usage: $0 SRC VERSION" >&2; exit 2; }
src=$1 version=$2
need mandoc man
pages=("$src/docs/man/viw.4" "$src/docs/man/libviw.7")

for page in "${pages[@]}"; do
	name=${page##*/}
	[ -f "$page" ] || fail "no manual page $page"
	out=$(mandoc -T lint -W all "$page" 2>&1)
	[ -z "$out" ] || { printf '%s\n' "$out"; fail "mandoc -T lint: $name is not clean"; }
	# As lintian's manpage check runs it: groff's own warnings on stderr.
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	[ -z "$out" ] || { printf '%s\n' "$out"; fail "man --warnings: $name has groff warnings"; }
	grep -qE "^\.TH [A-Z]+ [0-9] [0-9-]+ \"viw $version\"" "$page" ||
		fail "$name: .TH does not name viw $version"
	step "$name: mandoc -T lint and man --warnings clean, viw $version"
done
step "PASS: ${#pages[@]} manual pages"
