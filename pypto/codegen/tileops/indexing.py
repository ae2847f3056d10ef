"""Emitters of the indexing family: gathers and scatters (pto.tgather / pto.tscatter, by
index or by mask pattern), and scatter stores to GM (pto.mscatter)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir.nodes import Const, MemorySpace as M
from pypto.ir.ops.indexing import MGATHER_COALESCE, MGATHER_OOB, compare_options, mgather_mode


@emits("tile.gather")
def gather(k, v, c, span):
    src, idx, tmp = (k.tile(a, span) for a in c.args)
    k.op("tgather", [src, idx, tmp], k.alloc(v, span), span)


@emits("tile.gather_compare")
def gather_compare(k, v, c, span):
    """One tgather writes both results, the buffers of the values `dst, cdst = ...` bind
    (the kernel's `t[0]`, `t[1]`); the mode and offset ride after outs, as the reference
    writes them."""
    src, tmp = k.tile(c.args[0], span), k.tile(c.args[2], span)
    kv = k.scalar(c.args[1], src.tile.dtype.mlir, span)
    items = k.items_of(v)
    if sorted(items) != [0, 1]:
        fail("both results of pl.tile.gather_compare are bound: dst, cdst = ...", span)
    dst, cdst = (k.alloc(items[i], span) for i in (0, 1))
    mode, offset, _, _ = compare_options(c.op, c.kwargs, span)
    k.emit(f"pto.tgather ins({src.ssa}, {kv.ssa}, {tmp.ssa} : {src.ty}, {kv.ty}, {tmp.ty}) "
           f"outs({dst.ssa}, {cdst.ssa} : {dst.ty}, {cdst.ty}) "
           f"{{cmpMode = #pto<cmp {mode}>, offset = {offset} : i32}}", span)


@emits("tile.gatherb")
def gatherb(k, v, c, span):
    src, off = (k.tile(a, span) for a in c.args)
    k.op("tgatherb", [src, off], k.alloc(v, span), span)


@emits("tile.gather_mask")
def gather_mask(k, v, c, span):          # the pattern rides on the source operand
    src = k.tile(c.args[0], span)
    dst = k.alloc(v, span)
    pattern = c.kwargs["mask_pattern"].name
    k.emit(f"pto.tgather ins({src.ssa}, {{maskPattern = #pto.mask_pattern<{pattern}>}} : {src.ty}, "
           f'"row") outs({dst.ssa} : {dst.ty})', span)


@emits("tile.scatter")
def scatter(k, v, c, span):              # into the result: dst's data first, then the writes
    dst, src, idx = (k.tile(a, span) for a in c.args)
    out = k.alloc(v, span)
    if not k.same_buffer(out, dst):
        k.op("tmov", [dst], out, span)
    k.op("tscatter", [src, idx], out, span)


@emits("tile.scatter_mask")
def scatter_mask(k, v, c, span):         # zeros, src's columns at the marked ones
    src = k.tile(c.args[1], span)
    out = k.alloc(v, span)
    pattern = c.kwargs["mask_pattern"].name
    k.emit(f"pto.tscatter ins({src.ssa}, {{maskPattern = #pto.mask_pattern<{pattern}>}} : {src.ty}, "
           f'"row") outs({out.ssa} : {out.ty})', span)


@emits("tile.mgather")
def mgather(k, v, c, span):              # rows or elements of the whole tensor, by index
    mode = mgather_mode(c.kwargs, "coalesce", MGATHER_COALESCE, span)
    oob = mgather_mode(c.kwargs, "gather_oob", MGATHER_OOB, span)
    pview, pty = _whole(k, c.args[0], span)
    if v.type.memory_space is M.Mat:      # GM indices (and a GM scratch for elements)
        ins = [(pview, pty)] + [_whole(k, a, span) for a in c.args[1:]]
    else:
        idx = k.tile(c.args[1], span)
        if k.arch == "a2a3" and mode == 0 and idx.tile.shape[0] != 1:
            fail("mgather's row mode on a2a3 takes [1, R] indices", span,
                 f"load the indices as one row: [1, {idx.tile.shape[0]}]")
        ins = [(pview, pty), (idx.ssa, idx.ty)]
    dst = k.alloc(v, span)
    coalesce = {0: "row", 1: "elem"}[mode]
    attrs = f"coalesce = #pto<coalesce {coalesce}>"
    if oob:
        attrs += f", gatherOob = #pto<gather_oob {['undefined', 'clamp', 'wrap', 'zero'][oob]}>"
    k.emit(f"pto.mgather ins({', '.join(n for n, _ in ins)} : {', '.join(t for _, t in ins)}) "
           f"outs({dst.ssa} : {dst.ty}) {{{attrs}}}", span)


def _whole(k, tensor, span):
    """(partition, its type) of a whole GM tensor."""
    t = k.tensor(tensor, span)
    shape = list(t.param.type.shape)
    return k.partition(t, [Const(0, dt.INDEX, span) for _ in shape], shape, span)
