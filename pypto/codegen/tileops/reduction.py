"""Emitters of the reduction family: row/column reductions and arg-reductions, the
row/column expand forms and broadcasts."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir import ops


@emits(*(f"tile.{o}" for o in ops.ROW_REDUCE))
def row_reduce(k, v, c, span):
    if len(c.args) < 2:
        fail(f"{c.op} needs a scratch tile: {c.op.split('.')[1]}(t, tmp)", span,
             "pass tmp = pl.create_tile(shape_of_t, dtype=..., target_memory=pl.Mem.Vec)")
    a, tmp = k.tile(c.args[0], span), k.tile(c.args[1], span)
    k.op(ops.OPS[c.op].pto, [a, tmp], k.alloc(v, span), span)


@emits(*(f"tile.{o}" for o in ops.COL_REDUCE + ops.ARG_REDUCE))
def reduce_all_operands(k, v, c, span):
    ins = [k.tile(x, span) for x in c.args]
    k.op(ops.OPS[c.op].pto, ins, k.alloc(v, span), span)


@emits(*(f"tile.{o}" for o in ops.ROW_EXPAND + ops.COL_EXPAND))
def expand(k, v, c, span):                # (row_expand_add's optional scratch is passed on)
    ins = [k.tile(x, span) for x in c.args]
    k.op(ops.OPS[c.op].pto, ins, k.alloc(v, span), span)


@emits("tile.row_expand", "tile.col_expand")
def broadcast(k, v, c, span):            # the target only gives the shape: ins is the vector
    vec = k.tile(c.args[1], span)
    k.op(ops.OPS[c.op].pto, [vec], k.alloc(v, span), span)
