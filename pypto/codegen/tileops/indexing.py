"""Emitters of the indexing family: gathers and scatters (pto.tgather / pto.tscatter, by
index or by mask pattern), and scatter stores to GM (pto.mscatter)."""
from __future__ import annotations

from pypto.codegen.tileops import emits


@emits("tile.gather")
def gather(k, v, c, span):
    src, idx, tmp = (k.tile(a, span) for a in c.args)
    k.op("tgather", [src, idx, tmp], k.alloc(v, span), span)


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
