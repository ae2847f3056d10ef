"""Emitters of the cross-rank family (pypto.ir.ops.comm). A window tensor is a kernel
parameter like any other (this rank's copy); the ops name a region of it through a
partition view, and the tile library finds the peer's copy at the same offset of the
peer's window (pto_sim_comm.hpp).

    %r = pto.comm_rank -> i32                       %n = pto.comm_nranks -> i32
    pto.comm_notify ins(%cell, %peer, %value : P, i32, i32) {op = 0}
    pto.comm_wait ins(%cell, %expected : P, i32) {cmp = 1}
    pto.comm_tload ins(%region, %peer : P, i32) outs(%tile : T)
    pto.comm_tstore ins(%tile, %peer : T, i32) outs(%region : P) [{atomicType = ...}]
    pto.comm_barrier ins(%signal : P)
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.tileops import SCALAR_EMITTERS, emits
from pypto.codegen.values import _Scalar
from pypto.ir.nodes import AtomicType, Const, TupleExpr


def _items(x):
    return list(x.items) if isinstance(x, TupleExpr) else [x]


def _enum(v) -> int:
    return int(getattr(v, "value", v))


def _ctx(k, c, span) -> _Scalar:
    """The comm context: this rank's only one (a token the rank queries read no data from)."""
    k.tensor(c.args[0], span)
    return k.scalar(Const(0, dt.INT64, span), "i64", span)


def _query(what):
    def emit(k, c, span) -> _Scalar:
        r = _Scalar(k.tmp(), "i32")
        k.emit(f"{r.ssa} = pto.comm_{what} -> i32", span)
        return r
    return emit


def _cell(k, c, at: int, span):
    t = k.tensor(c.args[0], span)
    items = _items(c.args[at])
    return k.partition(t, items, [1] * len(items), span)


def _notify(k, c, span):
    cell, pty = _cell(k, c, 2, span)
    peer = k.scalar(c.args[1], "i32", span)
    value = k.scalar(c.args[3], "i32", span)
    k.emit(f"pto.comm_notify ins({cell}, {peer.ssa}, {value.ssa} : {pty}, i32, i32) "
           f"{{op = {_enum(c.kwargs['op'])}}}", span)


def _wait(k, c, span):
    cell, pty = _cell(k, c, 1, span)
    expected = k.scalar(c.args[2], "i32", span)
    k.emit(f"pto.comm_wait ins({cell}, {expected.ssa} : {pty}, i32) {{cmp = {_enum(c.kwargs['cmp'])}}}", span)


def _whole(k, x, span):
    t = k.tensor(x, span)
    shape = [d if isinstance(d, int) else k.dim_value(d) for d in t.param.type.shape]   # (W: at run time)
    return k.partition(t, [Const(0, dt.INDEX, span)] * len(shape), shape, span)


def _barrier(k, c, span):
    sig, pty = _whole(k, c.args[0], span)
    k.emit(f"pto.comm_barrier ins({sig} : {pty})", span)
    return k.tensor(c.args[0], span)


def remote_store(k, c, span):
    src = k.tile(c.args[0], span)
    t = k.tensor(c.args[1], span)
    shape = list(src.tile.valid_shape)
    if None in shape:
        shape = [src.valid[i] if d is None else d for i, d in enumerate(shape)]
    rank = len(t.param.type.shape)
    shape = [1] * (rank - len(shape)) + shape
    region, pty = k.partition(t, _items(c.args[3]), shape, span)
    peer = k.scalar(c.args[2], "i32", span)
    atomic = (" {atomicType = #pto<atomic_type atomic_add>}"
              if c.kwargs.get("atomic") is AtomicType.Add else "")
    k.emit(f"pto.comm_tstore ins({src.ssa}, {peer.ssa} : {src.ty}, i32) outs({region} : {pty}){atomic}", span)
    return t


@emits("comm.remote_load")
def remote_load(k, v, c, span):
    t = k.tensor(c.args[0], span)
    shape = [x.value for x in _items(c.args[3])]
    region, pty = k.partition(t, _items(c.args[2]), shape, span)
    peer = k.scalar(c.args[1], "i32", span)
    dst = k.alloc(v, span)
    k.emit(f"pto.comm_tload ins({region}, {peer.ssa} : {pty}, i32) outs({dst.ssa} : {dst.ty})", span)


SCALAR_EMITTERS["comm.get_comm_ctx"] = _ctx
SCALAR_EMITTERS["comm.rank"] = _query("rank")
SCALAR_EMITTERS["comm.nranks"] = _query("nranks")
SCALAR_EMITTERS["comm.notify"] = _notify
SCALAR_EMITTERS["comm.wait"] = _wait
# ops that write a window and give it back (`signal = pld.tensor.barrier(signal)`)
TENSOR_EFFECTS = {"comm.barrier": _barrier, "comm.remote_store": remote_store}
