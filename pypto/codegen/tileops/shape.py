"""Emitters of the shape family: reshape and slice (views), transposes, concat, assemble."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto import dtype as dt
from pypto.ir.nodes import Const, MemorySpace as M


@emits("tile.reshape")
def reshape(k, v, c, span):
    a = k.tile(c.args[0], span)
    if v.type.memory_space is not a.tile.memory_space:
        fail("reshape keeps a tile in its memory space", span)
    k.view(v, "pto.treshape", a, span)


@emits("tile.slice")
def slice_(k, v, c, span):               # a view: pto.subview of the tile's bytes
    a = k.tile(c.args[0], span)
    if v.type.memory_space is not a.tile.memory_space:
        fail("a slice keeps a tile in its memory space", span)
    valid = None
    if v.type.valid is not None:          # a window of a partial tile: its valid part
        valid = tuple(k.const(x, "index") for x in v.type.valid)
    k.subview(v, a, c.args[2].items, span, valid=valid)


@emits("tile.set_validshape", "tile.reinterpret_view")
def retyped_view(k, v, c, span):         # the same bytes: a smaller valid part, another dtype
    a = k.tile(c.args[0], span)
    if c.op == "tile.set_validshape" and v.type.valid is not None and None in v.type.valid:
        # extents known at run time: a whole-tile window whose valid part they give
        zero = Const(0, dt.INDEX, span)
        k.subview(v, a, [zero, zero], span, valid=tuple(k.index(x, span) for x in c.args[1:3]))
        return
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
    if src.tile.memory_space is M.Acc:           # Acc into Mat: the move into the window
        if not k.same_buffer(dst, tgt):
            fail("assembling a matmul result into a Mat tile that is still read afterwards needs "
                 "a Mat -> Mat copy, which the hardware does not have", span,
                 "assemble into a Mat tile the kernel does not read again (reassign it: "
                 "x = pl.tile.assemble(x, acc, [r, c]))")
        window = _Window(c.args[1].type, dst.tile)
        k.subview(window, dst, c.args[2].items, span)
        k.op("tmov", [src], k.env[id(window)], span)
        return
    if not k.same_buffer(dst, tgt):              # the target's data, then the insert
        k.op("tmov", [tgt], dst, span)
    r, col = (k.index_scalar(x, span) for x in c.args[2].items)
    k.op("tinsert", [src, r, col], dst, span)


class _Window:
    """The part of a tile an Acc source is moved into: a var-like handle for subview."""
    name = "window"

    def __init__(self, src_type, dst):      # src's shape, the target's dtype (the move converts)
        from pypto.ir.nodes import TileType
        self.type = TileType(tuple(src_type.shape), dst.dtype, dst.memory_space)


@emits("tile.extract")
def extract(k, v, c, span):              # a copy of the window (pto.textract)
    src = k.tile(c.args[0], span)
    r, col = (k.index_scalar(x, span) for x in c.args[1:3])
    k.op("textract", [src, r, col], k.alloc(v, span), span,
         attrs="{transpose = true}" if c.kwargs.get("transpose") else "")
