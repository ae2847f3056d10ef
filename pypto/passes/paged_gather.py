"""ConvertTensorToTileOps' lowering of pl.paged_gather: a loop over the gathered rows that
reads each logical index and its block's physical block (scalar GM reads), then loads that
one pool row straight into its row of the on-chip accumulator (tile.gather_row: a window
of the accumulator and a DMA into it; the bulk data never goes through UB)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import (Assign, BinOp, Call, Const, For, IterArg, ScalarType,
                            TupleExpr, Var, Yield)
from pypto.ir.ops.indexing import paged_options


def lower(conv, s: Assign, call: Call) -> Var:
    """The statements of `s`'s paged gather go to conv.emit; returns its result tile."""
    span = s.span
    src, indices, table = (conv.expr(a) for a in call.args)
    block, size, most, space, col_off = paged_options(call.kwargs, span)
    idx = lambda n: Const(n, dt.INDEX, span)           # noqa: E731
    acc = conv.new(s.var.name, "tile.create", [TupleExpr([idx(most), idx(size)], span)],
                   {"dtype": src.type.dtype, "target_memory": space}, span, "acc")
    i = Var(conv.namer.fresh("i", "row"), ScalarType(dt.INDEX), span)
    cur = Var(conv.namer.fresh(s.var.name, "iter"), acc.type, span)
    body: list = []

    def bind(tag, value):
        v = Var(conv.namer.fresh(s.var.name, tag), value.type, span)
        body.append(Assign(v, value, span))
        return v

    def read(t, at):
        where = [idx(0), at] if len(t.type.shape) == 2 else [at]
        raw = bind("raw", Call("tensor.read", [t, TupleExpr(where, span)], {}, ScalarType(t.type.dtype),
                               {}, span))
        return bind("ix", Call("scalar.cast", [raw], {"dtype": dt.INDEX}, ScalarType(dt.INDEX), {}, span))

    logical = read(indices, i)
    blk = bind("blk", BinOp("//", logical, idx(block), dt.INDEX, span))
    phys_blk = read(table, blk)
    phys = bind("phys", BinOp("+", BinOp("*", phys_blk, idx(block), dt.INDEX, span),
                              BinOp("%", logical, idx(block), dt.INDEX, span), dt.INDEX, span))
    row = Call("tile.gather_row", [cur, src, TupleExpr([i, idx(0)], span), TupleExpr([phys, idx(col_off)], span),
                                   TupleExpr([idx(1), idx(size)], span)], {}, acc.type, {}, span)
    nxt = bind("row", row)
    body.append(Yield([nxt], span))
    out = Var(conv.namer.fresh(s.var.name, "tile"), acc.type, span)
    n = indices.type.shape[-1]
    conv.emit.append(For(i, idx(0), idx(n), idx(1), body, [IterArg(cur, acc)], [out], span=span))
    return out
