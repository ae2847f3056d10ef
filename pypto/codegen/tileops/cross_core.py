"""Emitters of the cross-core family: the pipe of a Group's halves (the push is a
statement, emitted by the kernel codegen's `tpush`), and the pipes a hand-written core
group's members set up and use (pypto.ir.ops.cross_core)."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.pipes import PIPE_ARG
from pypto.codegen.tileops import SCALAR_EMITTERS, emits
from pypto.codegen.values import _Scalar
from pypto.ir.nodes import Assign, Call, FunctionType
from pypto.ir.ops import cross_core as xc
from pypto.ir.visit import walk


@emits("tile.tpop")
def tpop(k, v, c, span):
    k.tpop(v, c, span)


@emits("tile.aiv_shard", "tile.aic_gather")
def lane_crossing(k, v, c, span):        # ExpandMixedKernel made it a push and a pop
    fail(f"{c.op} reached a kernel of one core: it crosses between the cube and the vector cores "
         f"of a mixed kernel", span, "run the pass pipeline (ExpandMixedKernel)")


# ------------------------------------------------ the pipes of a hand-written core group
def _attrs(c, *keys) -> str:
    items = [f"{k} = {int(getattr(c.kwargs[k], 'value', c.kwargs[k]))}" for k in keys
             if c.kwargs.get(k) is not None]
    return f" {{{', '.join(items)}}}" if items else ""


def _with_id(attrs: str, c) -> str:
    pid = int(getattr(c.kwargs.get("id"), "value", c.kwargs.get("id")) or 0)
    return f"{attrs[:-1]}, id = {pid}}}" if attrs else f" {{id = {pid}}}"


def push(k, c, span):
    t = k.tile(c.args[0], span)
    side = xc.PUSH[c.op]
    ins, tys, attrs = k.pipe_operands(c, side == "vector")
    k.emit(f"pto.{c.op.split('.')[1]} ins({t.ssa}, {ins} : {t.ty}, {tys}){_with_id(attrs, c)}", span)


@emits(*xc.POP)
def pop(k, v, c, span):
    side = xc.POP[c.op][0]
    ins, tys, attrs = k.pipe_operands(c, side == "vector")
    # the valid part it receives: the annotation's run-time extents (its operands), if any
    valid = tuple(k.index(a, span) for a in c.args) if c.args else None
    dst = k.alloc(v, span, valid=valid)
    k.emit(f"pto.{c.op.split('.')[1]} ins({ins} : {tys}) outs({dst.ssa} : {dst.ty}){_with_id(attrs, c)}", span)


def free(k, c, span):
    """The slot of a popped tile is free: the pop's split and id (an id given here must agree)."""
    popped = next((s.value for s in walk(k.f.body) if isinstance(s, Assign) and s.var is c.args[0]
                   and isinstance(s.value, Call) and s.value.op in xc.POP), None)
    if popped is None:
        fail(f"{c.op} frees the slot of a tile a tpop gave; {c.args[0].name!r} is not one", span,
             "pass the tile pl.tpop_from_aiv / pl.tpop_from_aic returned")
    want, given = popped.kwargs.get("id") or 0, c.kwargs.get("id")
    if given is not None and int(getattr(given, "value", given)) != int(getattr(want, "value", want)):
        fail(f"{c.op}: id={given} but {c.args[0].name!r} came from pipe {want}", span)
    side = xc.FREE[c.op]
    ins, tys, attrs = k.pipe_operands(popped, side == "vector")
    name = "tfree_from_" + ("aiv" if side == "cube" else "aic")
    k.emit(f"pto.{name} ins({ins} : {tys}){_with_id(attrs, popped)}", span)


def initialize(k, c, span):
    k.pipe_used = True
    bufs = [k.scalar(a, "i32", span).ssa for a in c.args]
    while len(bufs) < 2:
        bufs.append(k.const(0, "i32"))
    attrs = _attrs(c, "dir_mask", "slot_size", "slot_num", "local_slot_num")
    k.emit(f"pto.{c.op.split('.')[1]} ins(%{PIPE_ARG}, {bufs[0]}, {bufs[1]} : i64, i32, i32)"
           f"{_with_id(attrs, c)}", span)


def reserve(k, c, span):
    space = "mat" if k.f.func_type is FunctionType.AIC else "vec"
    base = int(getattr(c.kwargs.get("base"), "value", c.kwargs.get("base", xc.AUTO)))
    where = "auto = true" if base == xc.AUTO else f"auto = false, base = {base}"
    r = k.tmp()
    k.emit(f'{r} = pto.reserve_buffer {{name = "{c.kwargs["name"]}", size = {int(c.kwargs["size"])}, '
           f'location = #pto.address_space<{space}>, {where}}} -> i32', span)
    return _Scalar(r, "i32")


def import_peer(k, c, span):
    peer = k.f.attrs.get("peers", {}).get(c.kwargs["peer_func"])
    if peer is None:
        fail(f"import_peer_buffer: peer_func={c.kwargs['peer_func']!r} is not the other member of this "
             f"function's core group", span, "name the group's other (AIC or AIV) function")
    r = k.tmp()
    k.emit(f'{r} = pto.import_reserved_buffer {{name = "{c.kwargs["name"]}", peer_func = "{peer}"}} -> i32',
           span)
    return _Scalar(r, "i32")


for _op in xc.PUSH:
    SCALAR_EMITTERS[_op] = push
for _op in xc.FREE:
    SCALAR_EMITTERS[_op] = free
for _op in xc.INIT:
    SCALAR_EMITTERS[_op] = initialize
SCALAR_EMITTERS["system.reserve_buffer"] = reserve
SCALAR_EMITTERS["system.import_peer_buffer"] = import_peer
