#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""sec-cm-peer: a raw TCP/MPA peer for tests/vm/guest/sec-cm.sh.

Sends exactly the bytes a connection-manager scenario needs (RFC 5044 MPA
frames with RFC 6581 words, RFC 5041/5040 untagged SEND and READ Request
FPDUs without CRC) and prints what it saw as "RESULT ..." lines:

  fin-early HOST PORT [--fin-delay S]
                          request + SEND + FIN in one write (or the FIN S
                          seconds later); then the reply and the end of
                          the stream
  request HOST PORT [--pd N] [--ird I] [--ord O]
                          one request; private data starts with its length,
                          IRD and ORD (be16 each); then what came back
                          (--pd -1: connect and send nothing)
  burst HOST PORT -n N    N connections sending requests at once, held
                          until viw closes them or --hold seconds pass
  read-stall HOST PORT    small receive buffer, request, then 16 READ
                          Requests for the rkey/address/length the server
                          put in its reply, and never reads again
  server PORT --mode M    answer one viw request: M = reject-ok (reject,
                          --len bytes of 0x5a), reject-big (reject, 300
                          bytes), reject-short (reply header announcing 100
                          bytes, 10 sent, then FIN)
"""
import argparse
import select
import socket
import struct
import sys
import time

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_REJECT = 0x20
F_ENHANCED = 0x10


def out(*args):
    print(*args, flush=True)


def mpa_frame(key, pd=b"", ird=0, ord_=0, flags=0, rev=2):
    """An MPA request or reply; v2 puts IRD/ORD before the private data."""
    body = pd
    if rev == 2:
        flags |= F_ENHANCED
        body = struct.pack(">HH", ird & 0x3fff, ord_ & 0x3fff) + pd
    return key + bytes([flags, rev]) + struct.pack(">H", len(body)) + body


def fpdu(ddp_rdmap_hdr, payload=b""):
    """MPA framing: length, ULPDU, pad to 4, CRC field (zero, unused)."""
    ulpdu = ddp_rdmap_hdr + payload
    data = struct.pack(">H", len(ulpdu)) + ulpdu
    data += b"\0" * (-len(data) % 4)
    return data + b"\0\0\0\0"


def untagged(opcode, qn, msn, payload=b""):
    # DDP: L=1, DV=1; RDMAP: RV=1 | opcode; inv STag, QN, MSN, MO
    hdr = bytes([0x41, 0x40 | opcode]) + struct.pack(">IIII", 0, qn, msn, 0)
    return fpdu(hdr, payload)


def read_request(msn, rkey, addr, length):
    body = struct.pack(">IQIIQ", 0x1234, 0, length, rkey, addr)
    return untagged(0x1, 1, msn, body)


def recv_exact(sock, n, timeout):
    sock.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_reply(sock, timeout=15):
    """('accept'|'reject', pd) or ('eof'|'reset'|'timeout'|'garbage', b'')."""
    try:
        hdr = recv_exact(sock, 20, timeout)
        if len(hdr) < 20:
            return "eof", b""
        if hdr[:16] != KEY_REP:
            return "garbage", b""
        body = recv_exact(sock, struct.unpack(">H", hdr[18:20])[0], timeout)
        if hdr[17] == 2 and hdr[16] & F_ENHANCED:
            body = body[4:]
        return ("reject" if hdr[16] & F_REJECT else "accept"), body
    except ConnectionResetError:
        return "reset", b""
    except socket.timeout:
        return "timeout", b""


def wait_end(sock, timeout):
    """Read until the stream ends: 'eof', 'reset' or 'timeout'."""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            sock.settimeout(max(0.1, end - time.monotonic()))
            if not sock.recv(65536):
                return "eof"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        pass
    return "timeout"


def connect(host, port, rcvbuf=0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(10)
    sock.connect((host, port))
    return sock


def cmd_fin_early(a):
    sock = connect(a.host, a.port)
    send = untagged(0x3, 0, 1, b"viw early fin!!!")
    sock.sendall(mpa_frame(KEY_REQ, ird=1, ord_=1) + send)
    time.sleep(a.fin_delay)
    sock.shutdown(socket.SHUT_WR)
    kind, _ = read_reply(sock)
    out("RESULT reply", kind)
    if kind == "accept":
        out("RESULT end", wait_end(sock, a.hold))


def pdata(n, ird, ord_):
    pd = struct.pack(">HHH", n, ird, ord_)
    return (pd + b"\x77" * n)[:n] if n >= 6 else pd


def cmd_request(a):
    sock = connect(a.host, a.port)
    if a.pd >= 0:       # --pd -1: a plain TCP connection that sends nothing
        sock.sendall(mpa_frame(KEY_REQ, pdata(a.pd, a.ird, a.ord), a.ird,
                               a.ord))
    kind, _ = read_reply(sock, a.hold)
    out("RESULT reply", kind)
    if kind == "accept":
        out("RESULT end", wait_end(sock, a.hold))


def cmd_burst(a):
    socks = [connect(a.host, a.port) for _ in range(a.n)]
    frame = mpa_frame(KEY_REQ, pdata(6, 1, 1), 1, 1)
    for s in socks:
        s.sendall(frame)
    out("RESULT sent", a.n)
    for s in socks:
        s.setblocking(False)
    open_socks = set(socks)
    end = time.monotonic() + a.hold
    while open_socks and time.monotonic() < end:
        ready, _, _ = select.select(list(open_socks), [], [], 0.5)
        for s in ready:
            try:
                while s.recv(4096):
                    pass
                open_socks.discard(s)    # EOF
            except BlockingIOError:
                pass
            except ConnectionResetError:
                open_socks.discard(s)
    out("RESULT still-open", len(open_socks))


def cmd_read_stall(a):
    sock = connect(a.host, a.port, rcvbuf=4096)
    sock.sendall(mpa_frame(KEY_REQ, ird=0, ord_=16))
    kind, pd = read_reply(sock)
    out("RESULT reply", kind, len(pd))
    if kind != "accept" or len(pd) < 16:
        return
    rkey, addr, length = struct.unpack(">IQI", pd[:16])
    sock.sendall(b"".join(read_request(i + 1, rkey, addr, length)
                          for i in range(16)))
    out("RESULT reads-sent 16")
    time.sleep(a.hold)      # never reads
    out("RESULT peer-done")


def cmd_server(a):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", a.port))
    lsock.listen(1)
    out("READY")
    lsock.settimeout(a.hold)
    sock, _ = lsock.accept()
    hdr = recv_exact(sock, 20, 10)
    recv_exact(sock, struct.unpack(">H", hdr[18:20])[0], 10)
    rev = hdr[17]
    if a.mode == "reject-ok":
        sock.sendall(mpa_frame(KEY_REP, b"\x5a" * a.len, flags=F_REJECT,
                               rev=rev))
    elif a.mode == "reject-big":
        sock.sendall(mpa_frame(KEY_REP, b"\x5a" * 300, flags=F_REJECT,
                               rev=rev))
    else:
        frame = mpa_frame(KEY_REP, b"\x5a" * 96, flags=F_REJECT, rev=rev)
        sock.sendall(frame[:30])
    sock.shutdown(socket.SHUT_WR)
    out("RESULT end", wait_end(sock, 10))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("fin-early", "request", "burst", "read-stall"):
        s = sub.add_parser(name)
        s.add_argument("host")
        s.add_argument("port", type=int)
        s.add_argument("--hold", type=float, default=15)
        s.add_argument("--pd", type=int, default=6)
        s.add_argument("--ird", type=int, default=1)
        s.add_argument("--ord", type=int, default=1)
        s.add_argument("-n", type=int, default=32)
        s.add_argument("--fin-delay", type=float, default=0)
    s = sub.add_parser("server")
    s.add_argument("port", type=int)
    s.add_argument("--mode", required=True)
    s.add_argument("--len", type=int, default=40)
    s.add_argument("--hold", type=float, default=20)
    a = p.parse_args()
    {"fin-early": cmd_fin_early, "request": cmd_request, "burst": cmd_burst,
     "read-stall": cmd_read_stall, "server": cmd_server}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
