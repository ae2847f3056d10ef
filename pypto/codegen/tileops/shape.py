"""Emitters of the shape family: reshape (a view), transposes, concat, assemble."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits


@emits("tile.reshape")
def reshape(k, v, c, span):
    a = k.tile(c.args[0], span)
    if v.type.memory_space is not a.tile.memory_space:
        fail("reshape keeps a tile in its memory space", span)
    k.view(v, "pto.treshape", a, span)


@emits("tile.transpose", "tile.transpose_view")
def transpose(k, v, c, span):            # transpose_view: a copy here (ptoas's ttrans)
    a = k.tile(c.args[0], span)
    k.op("ttrans", [a], k.alloc(v, span), span)


@emits("tile.concat")
def concat(k, v, c, span):
    a, b = k.tile(c.args[0], span), k.tile(c.args[1], span)
    k.op("tconcat", [a, b], k.alloc(v, span), span)


@emits("tile.assemble")
def assemble(k, v, c, span):
    tgt, src = k.tile(c.args[0], span), k.tile(c.args[1], span)
    dst = k.alloc(v, span)
    if not k.same_buffer(dst, tgt):              # the target's data, then the insert
        k.op("tmov", [tgt], dst, span)
    r, col = (k.index_scalar(x, span) for x in c.args[2].items)
    k.op("tinsert", [src, r, col], dst, span)
