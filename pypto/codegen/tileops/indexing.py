"""Emitters of the indexing family: gathers and scatters (pto.tgather / pto.tscatter, by
index or by mask pattern), and scatter stores to GM (pto.mscatter)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir.nodes import Const
from pypto.ir.ops.indexing import MGATHER_COALESCE, MGATHER_OOB, mgather_mode


@emits("tile.gather")
def gather(k, v, c, span):
    src, idx, tmp = (k.tile(a, span) for a in c.args)
    k.op("tgather", [src, idx, tmp], k.alloc(v, span), span)


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
    mem = k.tensor(c.args[0], span)
    idx = k.tile(c.args[1], span)
    mode = mgather_mode(c.kwargs, "coalesce", MGATHER_COALESCE, span)
    oob = mgather_mode(c.kwargs, "gather_oob", MGATHER_OOB, span)
    if k.arch == "a2a3" and mode == 0 and idx.tile.shape[0] != 1:
        fail("mgather's row mode on a2a3 takes [1, R] indices", span,
             f"load the indices as one row: [1, {idx.tile.shape[0]}]")
    shape = list(mem.param.type.shape)
    pview, pty = k.partition(mem, [Const(0, dt.INDEX, span) for _ in shape], shape, span)
    dst = k.alloc(v, span)
    coalesce = {0: "row", 1: "elem"}[mode]
    attrs = f"coalesce = #pto<coalesce {coalesce}>"
    if oob:
        attrs += f", gatherOob = #pto<gather_oob {['undefined', 'clamp', 'wrap', 'zero'][oob]}>"
    k.emit(f"pto.mgather ins({pview}, {idx.ssa} : {pty}, {idx.ty}) outs({dst.ssa} : {dst.ty}) "
           f"{{{attrs}}}", span)
