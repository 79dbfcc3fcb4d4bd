#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""
viw_verbs_ex: the extended verbs over a real connection (pyverbs).

    viw_verbs_ex.py DEVICE GID_INDEX

Two RC QPs of one device, connected through modify_qp to each other
(docs/semantics.md, "Connections made by modify_qp"), both made with
ibv_create_qp_ex on a parent domain and completing into ibv_create_cq_ex
CQs.  What rdma-core's own suite does not cover:

  batch     one wr_start .. wr_complete batch of a SEND from an SGE list,
            an inline SEND from a buffer list (its source overwritten as
            soon as wr_complete returned), an RDMA WRITE and a SEND with
            Invalidate of a type 2 window the receiver bound (only those
            can be invalidated: docs/semantics.md §9): four sender
            completions in order, three receives with the right bytes, the
            last with IBV_WC_WITH_INV and the STag (read_imm_data, as
            ibv_wc_read_invalidated_rkey reads it).
  dropped   an aborted batch, and a batch whose second WR has too many
            SGEs (wr_complete fails with EINVAL), deliver nothing: the next
            SEND is the receiver's first completion.
  read      wr_rdma_read of 128 bytes.
  imm       wr_send_imm and wr_rdma_write_imm (RFC 7306 Immediate Data,
            docs/semantics.md §12): IBV_WC_RECV and IBV_WC_RECV_RDMA_WITH_IMM
            with IBV_WC_WITH_IMM, read_imm_data, the payload placed, the
            WRITE's receive buffer left alone.
  bind      wr_bind_mw of a type 2 window with REMOTE_WRITE: a WRITE through
            its new rkey is placed; through another bound without remote
            rights, a WRITE is refused (not placed, both QPs end in ERROR);
            last, as it ends the connection.
  refused   send_ops_flags, wc_flags and CQ flags viw cannot honour fail
            with EOPNOTSUPP.

Prints PASS/FAIL lines and "N passed, N failed"; exit status 1 on failure.
"""
import errno
import socket
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.base import inc_rkey
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.pd import PD, ParentDomain, ParentDomainInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import DataBuffer, QPAttr, QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE, RecvWR, SendWR

PORT = 1
MR_SIZE = 4096
SEND_OPS = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_INV |
            e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_READ |
            e.IBV_QP_EX_WITH_SEND_WITH_IMM |
            e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | e.IBV_QP_EX_WITH_BIND_MW)
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_MW_BIND)
TIMEOUT = 5.0

passed = 0
failed = 0


def check(ok, name, why=''):
    global passed, failed
    if ok:
        passed += 1
        print(f'PASS {name}', flush=True)
    else:
        failed += 1
        print(f'FAIL {name}: {why}', flush=True)


class Side:
    """A QP with its parent domain, extended CQ and MR."""

    def __init__(self, ctx):
        self.pd = PD(ctx)
        self.parent = ParentDomain(ctx, attr=ParentDomainInitAttr(pd=self.pd))
        cia = CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS,
                           parent_domain=self.parent,
                           comp_mask=e.IBV_CQ_INIT_ATTR_MASK_PD)
        self.cq = CQEX(ctx, cia)
        self.mr = MR(self.parent, MR_SIZE, ACCESS)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2,
                    max_recv_sge=1, max_inline_data=64)
        qia = QPInitAttrEx(cap=cap, qp_type=e.IBV_QPT_RC, scq=self.cq,
                           rcq=self.cq, pd=self.parent,
                           send_ops_flags=SEND_OPS,
                           comp_mask=e.IBV_QP_INIT_ATTR_PD |
                           e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
        init = QPAttr(port_num=PORT)
        init.qp_access_flags = ACCESS
        self.qp = QPEx(ctx, qia, init)

    def connect(self, ctx, gid_index, peer_qpn):
        attr = QPAttr(port_num=PORT)
        attr.path_mtu = e.IBV_MTU_1024
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        gr = GlobalRoute(dgid=ctx.query_gid(PORT, gid_index),
                         sgid_index=gid_index)
        attr.ah_attr = AHAttr(port_num=PORT, is_global=1, gr=gr)
        attr.dest_qp_num = peer_qpn
        self.qp.to_rts(attr)

    def post_recv(self, wr_id, offset, length=256):
        sge = SGE(self.mr.buf + offset, length, self.mr.lkey)
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[sge]))

    def sge(self, offset, length):
        return SGE(self.mr.buf + offset, length, self.mr.lkey)


def poll(cq, n):
    """Up to n completions within TIMEOUT, as dicts."""
    wcs = []
    deadline = time.monotonic() + TIMEOUT
    while len(wcs) < n and time.monotonic() < deadline:
        if cq.start_poll(PollCqAttr()) != 0:
            time.sleep(0.001)
            continue
        while True:
            wcs.append({'wr_id': cq.wr_id, 'status': cq.status,
                        'opcode': cq.read_opcode(),
                        'byte_len': cq.read_byte_len(),
                        'wc_flags': cq.read_wc_flags(),
                        'imm': cq.read_imm_data()})
            if len(wcs) == n or cq.poll_next() != 0:
                break
        cq.end_poll()
    return wcs


def no_completion(cq, ms=200):
    time.sleep(ms / 1000)
    if cq.start_poll(PollCqAttr()) != 0:
        return True
    cq.end_poll()
    return False


def signaled(qp, wr_id):
    qp.wr_id = wr_id
    qp.wr_flags = e.IBV_SEND_SIGNALED


def bind_window(s):
    """A type 2 window over s.mr, bound on s.qp; its rkey."""
    s.mw = MW(s.pd, e.IBV_MW_TYPE_2)
    wr = SendWR(opcode=e.IBV_WR_BIND_MW)
    wr.set_bind_wr(s.mw, MWBindInfo(s.mr, s.mr.buf, MR_SIZE,
                                    e.IBV_ACCESS_REMOTE_WRITE))
    s.qp.post_send(wr)
    got = poll(s.cq, 1)
    check(len(got) == 1 and got[0]['status'] == e.IBV_WC_SUCCESS and
          got[0]['opcode'] == e.IBV_WC_BIND_MW,
          'batch: the receiver binds a type 2 window', repr(got))
    return wr.rkey


def test_batch(c, s):
    mw_rkey = bind_window(s)
    c.mr.write(bytes(range(256)) * 4, 1024)
    s.mr.write(b'\0' * MR_SIZE, MR_SIZE)
    for i in range(3):
        s.post_recv(100 + i, 256 * i)
    inline = b'inline-batch'
    c.mr.write(inline, len(inline), 3000)
    qp = c.qp
    qp.wr_start()
    signaled(qp, 1)
    qp.wr_send()
    qp.wr_set_sge_list(2, [c.sge(0, 10), c.sge(100, 20)])
    signaled(qp, 2)
    qp.wr_send()
    qp.wr_set_inline_data_list(2, [DataBuffer(c.mr.buf + 3000, 7),
                                   DataBuffer(c.mr.buf + 3007, 5)])
    signaled(qp, 3)
    qp.wr_rdma_write(s.mr.rkey, s.mr.buf + 2048)
    qp.wr_set_sge(c.sge(200, 64))
    signaled(qp, 4)
    qp.wr_send_inv(mw_rkey)
    qp.wr_set_sge(c.sge(300, 8))
    qp.wr_complete()
    # Inline data was copied at post time.
    c.mr.write(b'X' * len(inline), len(inline), 3000)

    got = poll(c.cq, 4)
    want = [(1, e.IBV_WC_SEND), (2, e.IBV_WC_SEND), (3, e.IBV_WC_RDMA_WRITE),
            (4, e.IBV_WC_SEND)]
    check([(w['wr_id'], w['opcode']) for w in got] == want and
          all(w['status'] == e.IBV_WC_SUCCESS for w in got),
          'batch: four sender completions in order', repr(got))
    got = poll(s.cq, 3)
    src = c.mr.read(1024, 0)
    check([(w['wr_id'], w['byte_len'], w['status']) for w in got] ==
          [(100, 30, 0), (101, 12, 0), (102, 8, 0)],
          'batch: three receives', repr(got))
    check(s.mr.read(30, 0) == src[0:10] + src[100:120],
          'batch: SEND gathered from an SGE list')
    check(s.mr.read(12, 256) == inline, 'batch: inline SEND from a list')
    check(s.mr.read(64, 2048) == src[200:264], 'batch: RDMA WRITE')
    check(s.mr.read(8, 512) == src[300:308], 'batch: SEND with Invalidate')
    inv = got[2] if len(got) == 3 else {}
    check(inv.get('wc_flags', 0) & e.IBV_WC_WITH_INV and
          inv.get('imm') == mw_rkey and
          not got[0]['wc_flags'] & e.IBV_WC_WITH_INV,
          'batch: IBV_WC_WITH_INV and the STag on that receive only',
          repr(inv))


def test_dropped(c, s):
    s.post_recv(200, 0)
    qp = c.qp
    qp.wr_start()
    signaled(qp, 10)
    qp.wr_send()
    qp.wr_set_sge(c.sge(0, 16))
    qp.wr_abort()
    qp.wr_start()
    signaled(qp, 11)
    qp.wr_send()
    qp.wr_set_sge(c.sge(0, 16))
    signaled(qp, 12)
    qp.wr_send()
    qp.wr_set_sge_list(7, [c.sge(0, 1)] * 7)
    try:
        qp.wr_complete()
        rv = 0
    except PyverbsRDMAError as ex:
        rv = ex.error_code
    check(rv == errno.EINVAL, 'dropped: bad WR fails wr_complete', f'rv {rv}')
    check(no_completion(c.cq) and no_completion(s.cq, 0),
          'dropped: aborted and failed batches deliver nothing')
    qp.wr_start()
    signaled(qp, 13)
    qp.wr_send()
    qp.wr_set_sge(c.sge(0, 5))
    qp.wr_complete()
    got_c, got_s = poll(c.cq, 1), poll(s.cq, 1)
    check([w['wr_id'] for w in got_c] == [13] and
          [(w['wr_id'], w['byte_len']) for w in got_s] == [(200, 5)],
          'dropped: the next SEND is the first to arrive',
          f'{got_c!r} {got_s!r}')


def test_read(c, s):
    pattern = bytes((7 * i) & 0xff for i in range(128))
    s.mr.write(pattern, len(pattern), 1024)
    c.mr.write(b'\0' * 128, 128, 1024)
    qp = c.qp
    qp.wr_start()
    signaled(qp, 20)
    qp.wr_rdma_read(s.mr.rkey, s.mr.buf + 1024)
    qp.wr_set_sge(c.sge(1024, 128))
    qp.wr_complete()
    got = poll(c.cq, 1)
    check([(w['wr_id'], w['opcode'], w['status'], w['byte_len'])
           for w in got] == [(20, e.IBV_WC_RDMA_READ, 0, 128)] and
          c.mr.read(128, 1024) == pattern, 'read: wr_rdma_read', repr(got))


def test_imm(c, s):
    # As rdma-core's own tests do: the value in, ntohl() of read_imm_data.
    c.mr.write(bytes(range(100)), 100, 0)
    s.mr.write(b'\xee' * MR_SIZE, MR_SIZE)
    s.post_recv(300, 0)
    s.post_recv(301, 512)
    qp = c.qp
    qp.wr_start()
    signaled(qp, 30)
    qp.wr_send_imm(0x01020304)
    qp.wr_set_sge(c.sge(0, 40))
    signaled(qp, 31)
    qp.wr_rdma_write_imm(s.mr.rkey, s.mr.buf + 2048, 0xa0b0c0d0)
    qp.wr_set_sge(c.sge(40, 60))
    qp.wr_complete()
    got_c = poll(c.cq, 2)
    check([(w['wr_id'], w['opcode'], w['status']) for w in got_c] ==
          [(30, e.IBV_WC_SEND, 0), (31, e.IBV_WC_RDMA_WRITE, 0)],
          'imm: sender completions', repr(got_c))
    got = poll(s.cq, 2)
    want = [(300, e.IBV_WC_RECV, 40, 0x01020304),
            (301, e.IBV_WC_RECV_RDMA_WITH_IMM, 60, 0xa0b0c0d0)]
    check([(w['wr_id'], w['opcode'], w['byte_len'], socket.ntohl(w['imm']))
           for w in got] == want and
          all(w['wc_flags'] & e.IBV_WC_WITH_IMM and w['status'] == 0
              for w in got), 'imm: receives with IBV_WC_WITH_IMM', repr(got))
    src = c.mr.read(100, 0)
    check(s.mr.read(40, 0) == src[0:40] and s.mr.read(60, 2048) == src[40:100]
          and s.mr.read(256, 512) == b'\xee' * 256,
          'imm: payload placed, the WRITE\'s receive buffer untouched')


def wr_bind(s, mw, wr_id, access):
    """Bind type 2 window mw with wr_bind_mw; its new rkey, completions."""
    rkey = inc_rkey(mw.rkey)
    qp = s.qp
    qp.wr_start()
    signaled(qp, wr_id)
    qp.wr_bind_mw(mw, rkey, MWBindInfo(s.mr, s.mr.buf, MR_SIZE, access))
    qp.wr_complete()
    return rkey, poll(s.cq, 1)


def wr_write(c, rkey, addr, wr_id):
    qp = c.qp
    qp.wr_start()
    signaled(qp, wr_id)
    qp.wr_rdma_write(rkey, addr)
    qp.wr_set_sge(c.sge(0, 16))
    qp.wr_complete()


def test_bind(c, s):
    s.mw2 = MW(s.pd, e.IBV_MW_TYPE_2)
    s.mw3 = MW(s.pd, e.IBV_MW_TYPE_2)
    key, got = wr_bind(s, s.mw2, 40, e.IBV_ACCESS_REMOTE_WRITE)
    check([(w['wr_id'], w['opcode'], w['status']) for w in got] ==
          [(40, e.IBV_WC_BIND_MW, 0)], 'bind: wr_bind_mw completes',
          repr(got))
    c.mr.write(b'W' * 16, 16, 0)
    s.mr.write(b'\0' * 16, 16, 3072)
    wr_write(c, key, s.mr.buf + 3072, 41)
    got = poll(c.cq, 1)
    deadline = time.monotonic() + TIMEOUT
    while s.mr.read(16, 3072) != b'W' * 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    check(s.mr.read(16, 3072) == b'W' * 16 and len(got) == 1 and
          got[0]['status'] == 0, 'bind: a WRITE through the window is placed',
          repr(got))
    # Another window, bound without remote rights: a WRITE through it fails.
    key2, got = wr_bind(s, s.mw3, 42, e.IBV_ACCESS_LOCAL_WRITE)
    check(len(got) == 1 and got[0]['status'] == 0,
          'bind: a window without remote rights', repr(got))
    c.mr.write(b'X' * 16, 16, 0)
    wr_write(c, key2, s.mr.buf + 3072, 43)
    poll(c.cq, 1)
    deadline = time.monotonic() + TIMEOUT
    while (c.qp.query(e.IBV_QP_STATE)[0].qp_state != e.IBV_QPS_ERR or
           s.qp.query(e.IBV_QP_STATE)[0].qp_state != e.IBV_QPS_ERR) and \
            time.monotonic() < deadline:
        time.sleep(0.01)
    check(s.mr.read(16, 3072) == b'W' * 16 and
          c.qp.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR and
          s.qp.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR,
          'bind: a WRITE without the rights is not placed, both QPs in ERROR')


def refused(make):
    try:
        make().close()
    except PyverbsRDMAError as ex:
        return ex.error_code == errno.EOPNOTSUPP
    return False


def test_refused(ctx, side):
    def qp_with(ops):
        cap = QPCap(max_send_wr=4, max_recv_wr=4)
        qia = QPInitAttrEx(cap=cap, qp_type=e.IBV_QPT_RC, scq=side.cq,
                           rcq=side.cq, pd=side.pd, send_ops_flags=ops,
                           comp_mask=e.IBV_QP_INIT_ATTR_PD |
                           e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
        return lambda: QPEx(ctx, qia)

    def cq_with(wc_flags, flags=0):
        mask = e.IBV_CQ_INIT_ATTR_MASK_FLAGS if flags else 0
        return lambda: CQEX(ctx, CqInitAttrEx(cqe=8, wc_flags=wc_flags,
                                              comp_mask=mask, flags=flags))

    for name, ops in (('atomic write', e.IBV_QP_EX_WITH_ATOMIC_WRITE),
                      ('local invalidate', e.IBV_QP_EX_WITH_LOCAL_INV)):
        check(refused(qp_with(SEND_OPS | ops)),
              f'refused: send_ops_flags with {name}')
    check(refused(cq_with(e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)),
          'refused: completion timestamps')
    check(refused(cq_with(0, e.IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)),
          'refused: IGNORE_OVERRUN')


def main():
    dev, gid_index = sys.argv[1], int(sys.argv[2])
    with Context(name=dev) as ctx:
        c, s = Side(ctx), Side(ctx)
        c.connect(ctx, gid_index, s.qp.qp_num)
        s.connect(ctx, gid_index, c.qp.qp_num)
        test_batch(c, s)
        test_dropped(c, s)
        test_read(c, s)
        test_imm(c, s)
        test_refused(ctx, c)
        test_bind(c, s)
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
