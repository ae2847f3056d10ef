"""Emitters of the sort family: pto.tsort32 and both forms of pto.tmrgsort."""
from __future__ import annotations

from pypto.codegen.tileops import emits


@emits("tile.sort32")
def sort32(k, v, c, span):
    src, idx = (k.tile(a, span) for a in c.args)
    k.op("tsort32", [src, idx], k.alloc(v, span), span)


@emits("tile.mrgsort_format1")
def mrgsort_format1(k, v, c, span):      # the run length is an i32 operand (a constant or not)
    src = k.tile(c.args[0], span)
    block = k.scalar(c.args[1], "i32", span)
    dst = k.alloc(v, span)
    k.emit(f"pto.tmrgsort ins({src.ssa}, {block.ssa} : {src.ty}, i32) outs({dst.ssa} : {dst.ty})", span)


@emits("tile.mrgsort_2way", "tile.mrgsort_3way", "tile.mrgsort_4way")
def mrgsort_ways(k, v, c, span):
    """The lists, then the scratch tile with the exhausted flag; the result and the
    hardware's per-list status vector (which the kernel does not read)."""
    *srcs, tmp = (k.tile(a, span) for a in c.args)
    dst = k.alloc(v, span)
    status = k.tmp()
    k.emit(f"{status} = arith.constant dense<0> : vector<4xi16>", span)
    flag = "true" if c.kwargs.get("exhausted") else "false"
    names = ", ".join(s.ssa for s in srcs)
    types = ", ".join(s.ty for s in srcs)
    k.emit(f"pto.tmrgsort ins({names}, {tmp.ssa} {{exhausted = {flag}}} : {types}, {tmp.ty}) "
           f"outs({dst.ssa}, {status} : {dst.ty}, vector<4xi16>)", span)
