"""The vector half of a split Group (`pl.at(..., optimizations=[pl.split(mode)])`): two
AIVs each take half of every vector tile -- its rows for UP_DOWN, its columns for
LEFT_RIGHT -- the half given by their index in the core group. A helper of
ExpandMixedKernel.halves: it rewrites tile types, load/store windows and the pipe ops.

Only work that stays inside each half can be split: elementwise ops, and reductions or
broadcasts along the axis that is not halved. Anything else is refused at the user's line.
A tile one element wide along the halved axis (a broadcast row under UP_DOWN) is not
halved: each AIV holds all of it.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import NotBuiltError
from pypto.ir.nodes import BinOp, Call, Const, MemorySpace as M, ScalarType, SplitMode, TileType, TupleExpr, Var
from pypto.passes.base import index_tuple

_ELEMENTWISE = set("""
    add sub mul div maximum minimum and_ or_ xor shl shr fmod rem
    adds subs muls divs maximums minimums ands ors xors shls shrs fmods rems lrelu
    abs neg exp log sqrt rsqrt recip relu sin cos not_
    cast cmp cmps sel sels load store create full move tpush tpop
""".split())


def axis(split: int) -> int:
    return 0 if SplitMode(split) is SplitMode.UP_DOWN else 1


# a hand-written group's pipe ops on the vector side (each AIV moves its half), and a
# valid part set on a half (its run-time extents localized: Halver.local_valid)
_PER_LANE = {"tile.tpush_to_aic", "tile.tpop_from_aic", "system.tfree_to_aic", "system.aiv_initialize_pipe",
             "system.reserve_buffer", "system.import_peer_buffer", "tile.set_validshape"}


def allowed(op: str, split: int) -> bool:
    """Ops that compute each half of a tile from the same half of their operands."""
    if op in _PER_LANE:
        return True
    name = op[len("tile."):] if op.startswith("tile.") else None
    if name is None:
        return False
    if name in _ELEMENTWISE:
        return True
    # row ops reduce or broadcast along a row: whole rows stay in one half under UP_DOWN
    return name.startswith("row_") if axis(split) == 0 else name.startswith("col_")


class Halver:
    """Tile types and windows of one AIV's half; `sub` is its index in the core group."""

    def __init__(self, split: int, span):
        self.split = split
        self.axis = axis(split)
        self.mode = SplitMode(split).name
        self.span = span
        self.sub = Call("tile.get_subblock_idx", [], {}, ScalarType(dt.INDEX), {}, span)

    def halved(self, t: TileType, span) -> TileType | None:
        """The type of a half of a Vec tile; None when the tile is one element wide along
        the axis (each AIV keeps all of it)."""
        if not isinstance(t, TileType) or t.memory_space is not M.Vec:
            return None
        n = t.shape[self.axis]
        if n == 1:
            return None
        if not isinstance(n, int) or n % 2:
            raise NotBuiltError(f"pl.split({self.mode}) halves every vector tile along dim {self.axis}; "
                                f"a tile of shape {list(t.shape)} has no equal halves", span,
                                "make that extent even, or drop pl.split")
        valid = t.valid
        if valid is not None:
            v = valid[self.axis]
            if v is None:              # known at run time: each AIV's part of it (localize)
                pass
            elif v != n:
                raise NotBuiltError(f"pl.split({self.mode}) of a tile whose valid part along dim "
                                    f"{self.axis} is not all of it", span, "drop pl.split")
            valid = tuple((None if x is None else n // 2) if i == self.axis else x for i, x in enumerate(valid))
        shape = tuple(n // 2 if i == self.axis else x for i, x in enumerate(t.shape))
        return TileType(shape, t.dtype, t.memory_space, t.memref, valid, t.slot)

    def var(self, v: Var, subst: dict) -> Var:
        """v, or its half (recorded in subst for the uses that follow)."""
        t = self.halved(v.type, v.span)
        if t is None:
            return v
        nv = Var(v.name, t, v.span)
        subst[id(v)] = nv
        return nv

    def check(self, c: Call, span) -> None:
        if not allowed(c.op, self.split):
            raise NotBuiltError(f"{c.op} in the vector half of a pl.split({self.mode}) kernel: each AIV "
                                f"holds half of every tile, and this op needs the whole of it", span,
                                "drop pl.split, or move this work to a kernel of its own")

    def window(self, c: Call, tile_type, offsets_at: int, shape_at: int | None) -> Call:
        """A load's or store's GM window moved to this AIV's half (and, for a load, its
        extent halved)."""
        full = tile_type.shape[self.axis] if isinstance(tile_type, TileType) else None
        if self.halved(tile_type, c.span) is None:
            return c
        if c.op == "tile.load" and len(c.args) > 3:
            raise NotBuiltError(f"pl.load(..., valid_shape=...) in the vector half of a "
                                f"pl.split({self.mode}) kernel", c.span, "drop pl.split")
        half = full // 2
        args = list(c.args)
        offs = list(args[offsets_at].items)
        offs[self.axis] = BinOp("+", offs[self.axis], BinOp("*", self.sub, Const(half, dt.INDEX, c.span),
                                                            dt.INDEX, c.span), dt.INDEX, c.span)
        args[offsets_at] = TupleExpr(offs, c.span)
        if shape_at is not None:
            shape = list(args[shape_at].items)
            shape[self.axis] = Const(half, dt.INDEX, c.span)
            args[shape_at] = TupleExpr(shape, c.span)
        return Call(c.op, args, dict(c.kwargs), c.type, dict(c.attrs), c.span)

    def localize(self, extent, full: int, span):
        """This AIV's part of a valid extent along the halved axis, as the reference's
        SplitVectorKernel has it: max(min(extent - sub * half, half), 0)."""
        half = Const(full // 2, dt.INDEX, span)
        mine = BinOp("-", extent, BinOp("*", self.sub, half, dt.INDEX, span), dt.INDEX, span)
        return BinOp("max", BinOp("min", mine, half, dt.INDEX, span), Const(0, dt.INDEX, span), dt.INDEX, span)

    def local_valid(self, c: Call, t: TileType, first: int) -> Call:
        """A pipe pop or a set_validshape whose valid extents (operands from `first` on) are
        known at run time: this AIV's part of them (constants: the halved type says it)."""
        at = first + self.axis
        if len(c.args) < at + 1 or isinstance(c.args[at], Const) or self.halved(t, c.span) is None:
            return c
        args = list(c.args)
        args[at] = self.localize(args[at], t.shape[self.axis], c.span)
        return Call(c.op, args, dict(c.kwargs), c.type, dict(c.attrs), c.span)

    def shape_arg(self, c: Call, t: TileType) -> Call:
        """tile.create / tile.full: the shape operand of the half."""
        args = list(c.args)
        args[0] = index_tuple(t.shape, c.span)
        return Call(c.op, args, dict(c.kwargs), t, dict(c.attrs), c.span)
