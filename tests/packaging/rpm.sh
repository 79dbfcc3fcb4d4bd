#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# packaging.rpm: build the Fedora/RHEL packages of redhat/viw.spec with
# Debian's rpm (rpmbuild -bb --nodeps: the build dependencies are Fedora
# package names) and lint them with rpmlint and redhat/viw.rpmlintrc, which
# must leave 0 errors.  Needs no root.
#
#   tests/packaging/rpm.sh SRC BUILD VERSION
#
# Work tree: BUILD/packaging/rpm (SOURCES, RPMS, rpmbuild.log).
set -uo pipefail
. "$(dirname "$0")/common.sh"

[ $# -eq 3 ] || { echo "usage: $0 SRC BUILD VERSION" >&2; exit 2; }
src=$1 version=$3
work=$2/packaging/rpm
spec=$src/redhat/viw.spec
need rpmbuild rpmlint rpm tar

spec_version=$(sed -nE 's/^Version:[[:space:]]*//p' "$spec")
[ "$spec_version" = "$version" ] ||
	fail "redhat/viw.spec has Version $spec_version, the project (CMakeLists.txt) $version"

rm -rf "$work"
mkdir -p "$work/SOURCES" || fail "cannot create $work"

step "Source0: viw-$version.tar.gz from the working tree"
copy_tree "$src" "$work/tree/viw-$version"
tar -C "$work/tree" -czf "$work/SOURCES/viw-$version.tar.gz" "viw-$version" ||
	fail "cannot make the source tarball"
rm -rf "$work/tree"

step "rpmbuild -bb --nodeps redhat/viw.spec"
if ! rpmbuild --define "_topdir $work" -bb --nodeps "$spec" >"$work/rpmbuild.log" 2>&1; then
	tail -n 40 "$work/rpmbuild.log"
	fail "rpmbuild failed (log: $work/rpmbuild.log)"
fi
mapfile -t rpms < <(find "$work/RPMS" -name '*.rpm' | sort)
[ ${#rpms[@]} -eq 2 ] || fail "expected 2 packages, rpmbuild wrote ${#rpms[@]}: ${rpms[*]}"
for r in "${rpms[@]}"; do
	echo "  ${r#"$work"/}"
done

# What each package must hold.
files_of() {
	local r
	r=$(find "$work/RPMS" -name "$1-$version-*.rpm" | head -n1)
	[ -n "$r" ] || fail "no package $1"
	rpm -qlp "$r"
}
provider=$(files_of ibverbs-provider-viw)
dkms=$(files_of viw-dkms)
expect() { # LIST PATTERN WHAT
	grep -qxE "$2" <<<"$1" || fail "$3"
}
expect "$provider" '/usr/lib(64)?/libibverbs/libviw-rdmav34\.so' "ibverbs-provider-viw lacks libibverbs/libviw-rdmav34.so"
expect "$provider" '/etc/libibverbs\.d/viw\.driver' "ibverbs-provider-viw lacks /etc/libibverbs.d/viw.driver"
expect "$provider" '/usr/share/man/man7/libviw\.7(\.gz)?' "ibverbs-provider-viw lacks the manual page libviw(7)"
expect "$dkms" '/usr/share/man/man4/viw\.4(\.gz)?' "viw-dkms lacks the manual page viw(4)"
for f in dkms.conf Kbuild kernel/Kbuild kernel/viw_main.c kernel-headers/rdma/viw-abi.h; do
	expect "$dkms" "/usr/src/viw-$version/${f//./\\.}" "viw-dkms lacks /usr/src/viw-$version/$f"
done

step "rpmlint -r redhat/viw.rpmlintrc"
rc=0
out=$(rpmlint -r "$src/redhat/viw.rpmlintrc" "$spec" "${rpms[@]}" 2>&1) || rc=$?
printf '%s\n' "$out" | grep -v '^[[:space:]]*$'
summary=$(grep -oE '[0-9]+ errors, [0-9]+ warnings' <<<"$out" | tail -n1)
[ -n "$summary" ] || fail "no summary line from rpmlint (exit $rc)"
grep -q '^0 errors,' <<<"$summary" || fail "rpmlint: $summary"
[ "$rc" = 0 ] || fail "rpmlint exited $rc"
step "PASS: rpmbuild and rpmlint ($summary)"
