#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# bench/postsplit's analysis.
#
#   postsplit.py parts TRACE     one run's ftrace text -> each part of a
#                                post over the run (the mean of its middle
#                                half), one line: n total parts...
#   postsplit.py report TSV      every run (bench/postsplit-guest.sh's
#                                split.tsv) -> the table, in Markdown
#
# A post of a user-space QP is one write() to the uverbs file (the
# doorbell).  On a plain veth the peer's TCP receive and RDMA placement
# run inside that call, in the sender's softirq, so the call holds the
# whole one-way trip.  The events (kprobes and tracepoints, filtered to
# the perftest processes) cut it in parts; each part is the time from the
# first of its start event to its end event within one call.
import statistics
import sys

# (part, start event, end event); "exit" and "entry" are write()'s.
PARTS = [
    ("enter", "entry", "post"),          # uverbs, up to the driver
    ("driver_tx", "post", "tcp_send"),   # the driver, up to TCP
    ("tcp_tx", "tcp_send", "xmit"),      # TCP and IP, to the veth
    ("wire", "xmit", "tcp_rcv"),         # veth, backlog, IP receive
    ("tcp_rx", "tcp_rcv", "rx"),         # the peer's TCP, to data_ready
    ("driver_rx", "rx", "rx_done"),      # the peer driver's placement
    ("rx_rest", "rx_done", "tcp_rcv_done"),
    ("tx_return", "tcp_rcv_done", "tcp_send_done"),
    ("driver_done", "tcp_send_done", "post_done"),  # completion, unwinding
    ("leave", "post_done", "exit"),      # uverbs, back to user space
]
NAMES = [p[0] for p in PARTS]
# kprobe event names (bench/postsplit-guest.sh) -> events
EVENTS = {
    "PS": "post", "PR": "post_done", "SE": "tcp_send", "SR": "tcp_send_done",
    "RE": "tcp_rcv", "RR": "tcp_rcv_done", "DE": "rx", "DR": "rx_done",
    "net_dev_start_xmit": "xmit",
}
# The last of these in a call counts; of the others, the first.
LAST = {"tcp_send_done"}


def calls(path):
    """Yield each post's events: {event: time in us}."""
    open_calls = {}
    for line in open(path, errors="replace"):
        if line.startswith("#"):
            continue
        head, sep, rest = line.partition(": ")
        fields = head.split()
        if not sep or len(fields) < 4:
            continue
        pid = fields[0].rsplit("-", 1)[-1]
        try:
            t = float(fields[-1]) * 1e6
        except ValueError:
            continue
        name = rest.replace("(", " ").replace(":", " ").split(None, 1)[0]
        if name == "sys_write":
            if "->" in rest:
                ev = open_calls.pop(pid, None)
                if ev is not None:
                    ev["exit"] = t
                    yield ev
            else:
                open_calls[pid] = {"entry": t}
            continue
        ev = open_calls.get(pid)
        key = EVENTS.get(name)
        if ev is None or key is None:
            continue
        if key in LAST or key not in ev:
            ev[key] = t


def iq_mean(values):
    """The mean of the middle half: robust as a median, and finer than the
    trace's microsecond steps."""
    v = sorted(values)
    q = len(v) // 4
    mid = v[q:len(v) - q] or v
    return sum(mid) / len(mid)


def parts(path):
    rows = []
    for ev in calls(path):
        if all(e in ev for _, a, b in PARTS for e in (a, b)):
            rows.append([ev["exit"] - ev["entry"]] +
                        [ev[b] - ev[a] for _, a, b in PARTS])
    if not rows:
        return "0" + " nan" * (len(PARTS) + 1)
    cols = zip(*rows)
    return "%d %s" % (len(rows), " ".join("%.2f" % iq_mean(c) for c in cols))


def report(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    # rep, module, test, typical, n, total, parts...
    mods = list(dict.fromkeys(r[1] for r in rows))
    tests = list(dict.fromkeys(r[2] for r in rows))
    cols = ["perftest typical", "write() total"] + NAMES
    print("Medians over the repetitions of each run's figure, in us: for "
          "the parts, the mean of the middle half of the run's posts; "
          "perftest's typical latency is measured with the probes on.")
    for test in tests:
        print()
        print("%s 64 B:" % test)
        print()
        print("| part | " + " | ".join(mods) + " |")
        print("|---" * (len(mods) + 1) + "|")
        for i, col in enumerate(cols):
            cells = []
            for m in mods:
                vals = [float(r[3 + (0 if i == 0 else i + 1)]) for r in rows
                        if r[1] == m and r[2] == test and r[4] != "0"]
                cells.append("%.2f" % statistics.median(vals)
                             if vals else "-")
            print("| %s | %s |" % (col, " | ".join(cells)))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("parts", "report"):
        sys.exit("usage: postsplit.py parts TRACE | report TSV")
    if sys.argv[1] == "parts":
        print(parts(sys.argv[2]))
    else:
        report(sys.argv[2])
