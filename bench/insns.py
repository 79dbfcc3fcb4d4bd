#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""bench/insns's report: guest instructions per iteration, by driver.

usage: insns.py LOGDIR ITERS [--top N] [TEST:SIZE...]

LOGDIR holds what bench/insns-guest.sh left: MODULE-TEST-SIZE-N.tbs
(blocks run: "vaddr insns count") for N = ITERS // 6 and ITERS, and
MODULE.kallsyms.  Each block is charged to the kernel symbol it starts
in, and the two runs' difference, divided by the difference in
iterations, is a figure per iteration.  A latency test's iteration is
one round trip, in which each side posts once and places the other's
message once; a bandwidth test's is one message, which the client posts
and the server places.  TEST:SIZE are the tests the guest ran (default
ib_write_lat:64 ib_send_lat:64).
"""
import bisect
import collections
import os
import sys

TESTS = ("ib_write_lat:64", "ib_send_lat:64")
MODULES = ("siw", "viw", "base")
USER = "[user]"


class Symbols:
    """The text symbols of one kallsyms, to find a block's function."""

    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                field = line.split()
                if len(field) < 3 or field[1] not in "tTwW":
                    continue
                name = field[2]
                if len(field) > 3:
                    name += " " + field[3]
                syms.append((int(field[0], 16), name))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def name(self, addr):
        if addr < 0xffff800000000000:
            return USER
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "?"


def load(path, syms):
    """Instructions and blocks run, by symbol."""
    insns, blocks = collections.Counter(), collections.Counter()
    with open(path) as f:
        for line in f:
            vaddr, n, count = line.split()
            name = syms.name(int(vaddr, 16))
            insns[name] += int(n) * int(count)
            blocks[name] += int(count)
    return insns, blocks


def per_iteration(logdir, mod, test, iters):
    """Instructions and blocks per iteration of TEST:SIZE, by symbol."""
    syms = Symbols(os.path.join(logdir, mod + ".kallsyms"))
    small = iters // 6
    run = "%s-%s-%s" % (mod, test.replace(":", "-"), "%d.tbs")
    big_i, big_b = load(os.path.join(logdir, run % iters), syms)
    small_i, small_b = load(os.path.join(logdir, run % small), syms)
    span = iters - small
    names = set(big_i) | set(small_i)
    return ({n: (big_i[n] - small_i[n]) / span for n in names},
            {n: (big_b[n] - small_b[n]) / span for n in names})


def module_of(mod):
    return "siw" if mod == "siw" else "viw"


def in_driver(name, mod):
    return name.endswith("[%s]" % module_of(mod))


def total(counts, keep):
    return sum(v for k, v in counts.items() if keep(k))


def iteration(test):
    """What one iteration of TEST:SIZE is."""
    if test.split(":")[0].endswith("_lat"):
        return "one round trip: each side posts once and places the other's message once"
    return "one message: the client posts it, the server places it"


def report(logdir, iters, top, tests):
    mods = [m for m in MODULES
            if os.path.exists(os.path.join(logdir, m + ".kallsyms"))]
    out = ["Per iteration of perftest -R, the difference of runs of %d and %d "
           "iterations. Instructions the guest ran, and translation blocks "
           "entered, counted by QEMU (bench/tbcount.c)." % (iters, iters // 6), ""]
    for test in tests:
        got = {m: per_iteration(logdir, m, test, iters) for m in mods}
        name, size = test.split(":")
        out += ["%s %s B, per iteration (%s):" % (name, size, iteration(test)), "",
                "| per iteration | " + " | ".join(mods) + " |",
                "|---|" + "---|" * len(mods)]
        rows = (
            ("the driver's instructions", lambda m: total(got[m][0], lambda k: in_driver(k, m))),
            ("the driver's blocks", lambda m: total(got[m][1], lambda k: in_driver(k, m))),
            # Each step of a string move (rep movsb) is a block of its own.
            ("memcpy_erms blocks: bytes copied by memcpy(), TCP's included",
             lambda m: got[m][1].get("memcpy_erms", 0)),
            ("kernel instructions, all (the guest's other work mixes in)",
             lambda m: total(got[m][0], lambda k: k != USER)),
        )
        for label, fig in rows:
            out.append("| %s | %s |" % (label, " | ".join("%.0f" % fig(m) for m in mods)))
        out.append("")
        for m in mods:
            ins, blk = got[m]
            mine = sorted((k for k in ins if in_driver(k, m)), key=lambda k: -ins[k])
            out.append("%s's functions (instructions, blocks): %s" % (m, ", ".join(
                "%s %.0f/%.0f" % (k.split()[0], ins[k], blk[k]) for k in mine[:top]
                if ins[k] >= 0.5)))
            out.append("")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    top = 12
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    print(report(args[0], int(args[1]), top, args[2:] or TESTS))


if __name__ == "__main__":
    main()
