"""Emitters of the element-wise family: tile-tile (broadcasting add/sub/mul/div),
tile-scalar, unary, cast, compare and select."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir import ops
from pypto.ir.layout import tile_rows_cols
from pypto.ir.nodes import MemorySpace as M

ROUND_MODES = ("NONE", "RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD")
DEFAULT_ROUND_MODE = "ROUND"
_BROADCAST = {"tile.add": "add", "tile.sub": "sub", "tile.mul": "mul", "tile.div": "div"}


@emits(*(f"tile.{o}" for o in ops.BINARY))
def binary(k, v, c, span):
    a, b = k.tile(c.args[0], span), k.tile(c.args[1], span)
    name = ops.OPS[c.op].pto
    if a.tile.shape != b.tile.shape:        # a per-row or per-column second operand
        ra, ca = tile_rows_cols(a.tile.shape)
        rb, cb = tile_rows_cols(b.tile.shape)
        if c.op in _BROADCAST and (rb, cb) == (ra, 1):
            name = f"trowexpand{_BROADCAST[c.op]}"
        elif c.op in _BROADCAST and (rb, cb) == (1, ca):
            name = f"tcolexpand{_BROADCAST[c.op]}"
        else:
            fail(f"{c.op}: shapes {list(a.tile.shape)} and {list(b.tile.shape)} do not match", span)
    if name != ops.OPS[c.op].pto and c.kwargs.get("high_precision"):
        fail(f"{c.op}: high_precision is for tile / tile division of equal shapes", span,
             "divide by a tile of the dividend's shape (pl.row_expand / pl.col_expand the divisor)")
    k.op(name, [a, b], k.alloc(v, span), span, attrs=_precision(c))


@emits(*(f"tile.{o}" for o in tuple(ops.SCALAR_FORM.values()) + ops.SCALAR_ONLY))
def scalar(k, v, c, span):
    a = k.tile(c.args[0], span)
    s = k.scalar(c.args[1], a.tile.dtype.mlir, span)
    k.op(ops.OPS[c.op].pto, [a, s], k.alloc(v, span), span)


@emits(*(f"tile.{o}" for o in ops.UNARY))
def unary(k, v, c, span):
    """rsqrt with a scratch tile is its precise form (both operands, as the reference
    writes it); recip's scratch tile is not the hardware's and is not passed on."""
    ins = [k.tile(x, span) for x in (c.args if c.op == "tile.rsqrt" else c.args[:1])]
    k.op(ops.OPS[c.op].pto, ins, k.alloc(v, span), span, attrs=_precision(c))


def _precision(c) -> str:
    """{precisionType = #pto<KIND high_precision>} after outs, when the precise mode is asked."""
    kind = ops.PRECISION.get(c.op.split(".", 1)[1])
    return f"{{precisionType = #pto<{kind} high_precision>}}" if kind and c.kwargs.get("high_precision") else ""


@emits("tile.cast")
def cast(k, v, c, span):
    a = k.tile(c.args[0], span)
    if a.tile.memory_space is M.Acc and v.type.memory_space is M.Mat:   # converted on write-back
        k.op("tmov", [a], k.alloc(v, span), span)
        return
    mode = c.kwargs.get("mode") or DEFAULT_ROUND_MODE
    mode = getattr(mode, "name", mode)
    if not isinstance(mode, str) or mode.upper() not in ROUND_MODES:
        fail(f"cast: unknown round mode {mode!r}", span,
             f"use one of {', '.join(m.lower() for m in ROUND_MODES)}")
    k.op("tcvt", [a], k.alloc(v, span), span,
         attr_first=f"{{rmode = #pto<round_mode {mode.upper()}>}}")


@emits("tile.cmp", "tile.cmps")
def cmp(k, v, c, span):
    a = k.tile(c.args[0], span)
    b = k.tile(c.args[1], span) if c.op == "tile.cmp" else k.scalar(c.args[1], a.tile.dtype.mlir, span)
    attr = f"{{cmp_type = {int(c.kwargs.get('cmp_type', 0))}}}"
    k.op(ops.OPS[c.op].pto, [a, b], k.alloc(v, span), span, attr_first=attr)


@emits("tile.sel", "tile.sels")
def sel(k, v, c, span):
    ins = [k.tile(x, span) for x in c.args[:3]]
    if c.op == "tile.sels":
        ins.append(k.scalar(c.args[3], ins[1].tile.dtype.mlir, span))
    elif len(c.args) > 3:
        ins.append(k.tile(c.args[3], span))
    k.op(ops.OPS[c.op].pto, ins, k.alloc(v, span), span)


@emits(*(f"tile.{o}" for o in ops.PART), "tile.prelu")
def two_tiles(k, v, c, span):            # part_*: src0, src1; prelu: x, slope (+ the scratch)
    if c.op == "tile.prelu" and k.arch != "a5":
        _prelu_mask(c.args[0].type, c.args[2].type, k.arch, span)
    ins = [k.tile(x, span) for x in c.args]
    k.op(ops.OPS[c.op].pto, ins, k.alloc(v, span), span)


def _prelu_mask(x, tmp, arch, span):
    """On a2/a3 tprelu writes the comparison's bit mask into its scratch tile: UINT8, a
    row more than x's valid rows, a bit per valid column."""
    from pypto import dtype as dt
    rows, cols = x.valid_shape
    hint = (f"pass pl.Tile[[{rows if isinstance(rows, int) else 'rows'} + 1, 32], pl.UINT8] "
            f"loaded with valid_shape=[rows, (cols + 7) // 8]")
    if tmp.dtype != dt.UINT8:
        fail(f"prelu on {arch} needs a UINT8 scratch tile (its bit mask), got {tmp.dtype}", span, hint)
    if isinstance(rows, int) and tmp.shape[0] < rows + 1:
        fail(f"prelu on {arch}: the scratch tile has {tmp.shape[0]} rows, it needs x's valid rows "
             f"+ 1 = {rows + 1}", span, hint)
    need, have = (cols + 7) // 8 if isinstance(cols, int) else None, tmp.valid_shape[1]
    if need is not None and isinstance(have, int) and have < need:
        fail(f"prelu on {arch}: the scratch tile has {have} valid columns, it needs "
             f"ceil({cols} / 8) = {need}", span, hint)
