"""The vector half of a split Group (`pl.at(..., optimizations=[pl.split(mode)])`): two
AIVs each take half of every vector tile -- its rows for UP_DOWN, its columns for
LEFT_RIGHT -- the half given by their index in the core group. A helper of
ExpandMixedKernel.halves: it rewrites tile types, load/store windows and the pipe ops.

Only work that stays inside each half can be split: elementwise ops, and reductions or
broadcasts along the axis that is not halved. Anything else is refused at the user's line.
A tile one element wide along the halved axis (a broadcast row under UP_DOWN) is not
halved: each AIV holds all of it. A reshape may move the split to the other axis (a
[T, 1] column reshaped to a [1, T] row): elementwise work and a reshape back follow it.
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


# what may follow a reshape that moved the split: the computing elementwise ops
_ON_MOVED = _ELEMENTWISE - {"load", "store", "tpush", "tpop", "move"}


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
        # id(tile var) -> the axis its halves lie along, for tiles a reshape moved the split
        # to the other axis (a [T, 1] row-sum halved by rows, reshaped to [1, T]: by columns)
        self.moved: dict[int, int] = {}
        self.mode = SplitMode(split).name
        self.span = span
        self.sub = Call("tile.get_subblock_idx", [], {}, ScalarType(dt.INDEX), {}, span)

    def halved(self, t: TileType, span, ax: int | None = None) -> TileType | None:
        """The type of a half of a Vec tile (along `ax`, the split's axis by default); None
        when the tile is one element wide along the axis (each AIV keeps all of it)."""
        ax = self.axis if ax is None else ax
        if not isinstance(t, TileType) or t.memory_space is not M.Vec:
            return None
        n = t.shape[ax]
        if n == 1:
            return None
        if not isinstance(n, int) or n % 2:
            raise NotBuiltError(f"pl.split({self.mode}) halves every vector tile along dim {ax}; "
                                f"a tile of shape {list(t.shape)} has no equal halves", span,
                                "make that extent even, or drop pl.split")
        valid = t.valid
        if valid is not None:
            # known at run time, or a part of the box: each AIV's part of it is known with
            # its index (localize) -- max(min(valid - sub * half, half), 0)
            valid = tuple((None if x is None or x != n else n // 2) if i == ax else x
                          for i, x in enumerate(valid))
        shape = tuple(n // 2 if i == ax else x for i, x in enumerate(t.shape))
        return TileType(shape, t.dtype, t.memory_space, t.memref, valid, t.slot)

    def var(self, v: Var, subst: dict, ax: int | None = None) -> Var:
        """v, or its half along `ax` (recorded in subst for the uses that follow)."""
        t = self.halved(v.type, v.span, ax)
        if t is None:
            return v
        if ax is not None and ax != self.axis:
            self.moved[id(v)] = ax
        nv = Var(v.name, t, v.span)
        subst[id(v)] = nv
        return nv

    def check(self, c: Call, span) -> int | None:
        """Refuse an op that needs more than this AIV's half; the axis its result is halved
        along when its operands' halves lie along a moved axis (None: the split's)."""
        moved = {self.moved[id(a)] for a in c.args if id(a) in self.moved}
        if moved:
            name = c.op[len("tile."):] if c.op.startswith("tile.") else ""
            if name not in _ON_MOVED or len(moved) > 1 \
                    or any(isinstance(getattr(a, "type", None), TileType) and id(a) not in self.moved
                           and self.halved(a.type, span) is not None for a in c.args):
                raise NotBuiltError(f"{c.op} of a tile whose halves a reshape moved to dim {moved.pop()} "
                                    f"under pl.split({self.mode}): only elementwise work and a reshape "
                                    f"back follow such a reshape", span,
                                    "reshape the tile back before this op, or drop pl.split")
            return moved.pop()
        if not allowed(c.op, self.split):
            raise NotBuiltError(f"{c.op} in the vector half of a pl.split({self.mode}) kernel: each AIV "
                                f"holds half of every tile, and this op needs the whole of it", span,
                                "drop pl.split, or move this work to a kernel of its own")
        return None

    def reshape(self, src: Var, out: TileType, span) -> int | None:
        """The axis a reshape's result is halved along. Each AIV's half of a row-major tile
        halved by rows (or of a row vector halved by columns) is one contiguous half of its
        elements, so the result holds the same half of its own elements: by rows when it
        has an even number of rows, by columns when it is one row."""
        ax = self.moved.get(id(src), self.axis)
        st = src.type
        if self.halved(st, span, ax) is None:
            # each AIV holds all of the source: the result must be whole too
            if self.halved(out, span) is None:
                return None
            raise NotBuiltError(f"a reshape under pl.split({self.mode}) of a tile each AIV holds whole "
                                f"into one it would halve", span, "drop pl.split")
        contiguous = ax == 0 or st.shape[0] == 1
        rows, cols = (out.shape[0], out.shape[1]) if len(out.shape) == 2 else (None, None)
        if contiguous and isinstance(rows, int) and rows % 2 == 0:
            return 0
        if contiguous and rows == 1 and isinstance(cols, int) and cols % 2 == 0:
            return 1
        raise NotBuiltError(f"a reshape under pl.split({self.mode}) to shape {list(out.shape)}: each "
                            f"AIV's half of the source is not a half of the result along one axis", span,
                            "drop pl.split, or reshape to an even number of rows or to one row")

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

    def localize(self, extent, full: int, span, half: int | None = None):
        """This AIV's part of a valid extent along the halved axis, as the reference's
        SplitVectorKernel has it: max(min(extent - sub * half, half), 0); half is the
        box's middle unless given."""
        half = Const(full // 2 if half is None else half, dt.INDEX, span)
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

    def shape_arg(self, c: Call, t: TileType, at: int = 0) -> Call:
        """tile.create / tile.full (a reshape: at=1): the shape operand of the half."""
        args = list(c.args)
        args[at] = index_tuple(t.shape, c.span)
        return Call(c.op, args, dict(c.kwargs), t, dict(c.attrs), c.span)
