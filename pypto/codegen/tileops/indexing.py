"""Emitters of the indexing family: gathers (pto.tgather, by index or by mask pattern)."""
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
