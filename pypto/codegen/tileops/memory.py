"""Emitters of the memory family: tiles made, filled, moved, padded, ramped."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir import ops
from pypto.codegen.tile_types import fractal_box
from pypto.ir.nodes import Const, MemorySpace as M, PadValue, TileType

MOVE_PATHS = {"a2a3": {(M.Mat, M.Left), (M.Mat, M.Right), (M.Mat, M.Bias), (M.Acc, M.Mat),
                      (M.Vec, M.Vec)}}
MOVE_PATHS["a5"] = MOVE_PATHS["a2a3"] | {(M.Acc, M.Vec), (M.Vec, M.Mat), (M.Mat, M.LeftScale), (M.Mat, M.RightScale)}


@emits("tile.load")
def load(k, v, c, span):
    k.load(v, c, span)


@emits("tile.create")
def create(k, v, c, span):
    k.alloc(v, span)


@emits("tile.full")
def full(k, v, c, span):                 # every element set to `value`
    d = v.type.dtype
    value = c.kwargs["value"]
    s = k.scalar(Const(float(value) if d.is_float else int(value), d, span), d.mlir, span)
    k.op("texpands", [s], k.alloc(v, span), span)


@emits("tile.move")
def move(k, v, c, span):
    src = k.tile(c.args[0], span)
    dst_space = v.type.memory_space
    if (src.tile.memory_space, dst_space) not in MOVE_PATHS[k.arch]:
        fail(f"no {src.tile.memory_space.name} -> {dst_space.name if dst_space else None} "
             f"data path on {k.arch}", span,
             "a2a3 moves Mat->Left/Right, Acc->Mat and Vec->Vec; go through GM otherwise")
    k.op("tmov", [src], k.alloc(v, span), span,
         attrs="{transpose = true}" if c.kwargs.get("transpose") else "")


@emits("tile.fillpad", "tile.fillpad_inplace", "tile.fillpad_expand")
def fillpad(k, v, c, span):              # the pad value rides on the result's tile_buf type
    a = k.tile(c.args[0], span)
    pad = c.kwargs.get("pad_value", PadValue.zero)
    k.op(ops.OPS[c.op].pto, [a], k.alloc(v, span, pad=pad.value), span)


@emits("tile.ci")
def ci(k, v, c, span):
    start = k.scalar(c.args[0], v.type.dtype.mlir, span)
    desc = "true" if c.kwargs.get("descending") else "false"
    k.op("tci", [start], k.alloc(v, span), span, attr_first=f"{{descending = {desc}}}")


@emits("tile.tri")
def tri(k, v, c, span):
    diag = k.scalar(c.args[0], "i32", span)
    upper = "true" if c.kwargs.get("upper") else "false"
    k.op("ttri", [diag], k.alloc(v, span), span, attr_first=f"{{upper = {upper}}}")


@emits("tile.random")
def random(k, v, c, span):               # pto.trandom: the seeds; the shape is the result's
    if k.arch != "a5":
        fail(f"pl.random (pto.trandom) exists on a5 only, not {k.arch}", span,
             "compile for platform='a5sim' (or generate the values on the host)")
    seeds = [k.scalar(a, "i32", span) for a in c.args[:6]]
    dst = k.alloc(v, span)
    rounds = c.kwargs.get("rounds", 10)
    attr = f" {{rounds = {rounds} : i32}}" if rounds != 10 else ""
    k.emit(f"pto.trandom ins({', '.join(s.ssa for s in seeds)} : {', '.join(['i32'] * 6)}) "
           f"outs({dst.ssa} : {dst.ty}){attr}", span)


@emits("tile.gather_row")
def gather_row(k, v, c, span):
    """A window of the accumulator at dst_offset (pto.subview; in a boxed Mat tile as many
    whole fractals as hold it, only the window's rows and cols valid) and a DMA of the GM
    window into it (pto.tload): the accumulator is written in place, never copied."""
    acc = k.tile(c.args[0], span)
    dst = k.alloc(v, span)
    if not k.same_buffer(dst, acc):
        fail("pl.gather_row writes into its accumulator in place; here the result got a buffer "
             "of its own", span, "read the accumulator only through the result of pl.gather_row")
    src = k.tensor(c.args[1], span)
    rows, cols = (int(x.value) for x in c.args[4].items)
    valid = c.args[5].items if len(c.args) > 5 else c.args[4].items
    box = fractal_box(v.type, k.arch)
    prow, pcol = (-(-rows // box[0]) * box[0], -(-cols // box[1]) * box[1]) if box else (rows, cols)
    static = tuple(x.value if isinstance(x, Const) else None for x in valid)
    window = _Region(TileType((prow, pcol), v.type.dtype, v.type.memory_space, None,
                              None if static == (prow, pcol) else static))
    extent = tuple(k.index(x, span) for x in valid)
    view = k.subview(window, dst, c.args[2].items, span, valid=extent)
    sizes = [s if s is not None else e for s, e in zip(static, extent)]
    pview, pty = k.partition(src, c.args[3].items, sizes, span)
    k.emit(f"pto.tload ins({pview} : {pty}) outs({view.ssa} : {view.ty})", span)


class _Region:
    """A window of a tile for k.subview: a var-like handle with the window's type."""
    name = "row"

    def __init__(self, t):
        self.type = t
