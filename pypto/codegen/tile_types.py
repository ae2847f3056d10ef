"""The `!pto.tile_buf` type of a tile, and the hardware's shape rules for it: a row-major
(or column-major) tile's rows (columns) are whole 32-byte blocks, a cube tile is a whole
number of fractals (ptoas checks them again on the .pto)."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.ir.layout import allocated_rows_cols, tile_layout, tile_rows_cols
from pypto.ir.nodes import MemorySpace, TileType, pto_loc


def fractal_box(t: TileType, arch: str | None = "a2a3", layout=None) -> tuple[int, int] | None:
    """(rows, cols) of the fractal a boxed (cube) tile is made of; None for an ND tile."""
    bl, sl, fr = layout or tile_layout(t, arch)
    if sl == "none_box":
        return None
    nb = t.dtype.nbytes
    if fr == 1024 or t.memory_space is MemorySpace.Acc:
        return 16, 16
    if fr == 32:           # MX scales: 16x2 blocks of a left scale, 2x16 of a right one
        return (16, 2) if bl == "row_major" else (2, 16)
    return (_ALIGN // nb, 16) if sl == "col_major" else (16, _ALIGN // nb)


def stored_tile(t: TileType) -> TileType:
    """The tile in stored elements (FP4: pairs, the .pto's !pto.f4E2M1x2)."""
    if t.dtype.pack == 1:
        return t
    valid = None if t.valid is None else t.dtype.stored(t.valid)
    return TileType(t.dtype.stored(t.shape), t.dtype, t.memory_space, t.memref, valid, t.slot)


def tile_buf_type(t: TileType, arch: str = "a2a3", *, static_valid: bool = False, span=None,
                  pad: int = 0) -> str:
    if t.memory_space is None or t.memory_space is MemorySpace.DDR:
        fail(f"tile of shape {list(t.shape)} has no on-chip memory space "
             f"({t.memory_space.name if t.memory_space else 'none'})", span,
             "run InferTileMemorySpace before codegen")
    t = stored_tile(t)
    try:
        rows, cols = allocated_rows_cols(t)
    except ValueError as e:
        fail(str(e), span)
    bl, sl, fr = tile_layout(t, arch)
    _check_alignment(t, rows, cols, bl, sl, fr, span)
    # a padded Mat tile's data region (its shape) is part of its type, as a static valid
    padded = (rows, cols) != tile_rows_cols(t.shape) and (t.valid is None or None not in t.valid)
    vr, vc = tile_rows_cols(t.valid_shape) if static_valid or padded else ("?", "?")
    return (f"!pto.tile_buf<loc={pto_loc(t.memory_space)}, dtype={t.dtype.mlir}, rows={rows}, "
            f"cols={cols}, v_row={vr}, v_col={vc}, blayout={bl}, slayout={sl}, fractal={fr}, "
            f"pad={pad}>")


_ALIGN = 32     # bytes: a tile row (row-major) or column (col-major) is a whole number of blocks


def _check_alignment(t: TileType, rows, cols, bl, sl, fr, span):
    """The hardware's tile shape rules (ptoas checks them again on the .pto)."""
    nb = t.dtype.nbytes
    space, shape = t.memory_space.name, list(t.shape)
    if sl == "none_box":
        n, what, idx = (cols, "row", -1) if bl == "row_major" else (rows, "column", -2)
        if n * nb % _ALIGN:
            per = _ALIGN // nb
            good = list(shape)
            good[idx] = -(-n // per) * per
            fail(f"a {space} tile of shape {shape} {t.dtype} has a {n * nb}-byte {what}; "
                 f"{what}s must be a multiple of {_ALIGN} bytes ({per} {t.dtype} elements)", span,
                 f"use a tile shape like {good} (load a wider window and use part of it)")
        return
    nbox = fractal_box(t, arch=None, layout=(bl, sl, fr))
    one_row = rows == 1 and t.memory_space is MemorySpace.Left     # gemv's row vector
    if (rows % nbox[0] and not one_row) or cols % nbox[1]:
        fail(f"a {space} tile of shape {shape} {t.dtype} is not a whole number of "
             f"{nbox[0]}x{nbox[1]} fractals", span,
             f"cube tiles (Mat/Left/Right/Acc) need rows a multiple of {nbox[0]} and cols a "
             f"multiple of {nbox[1]}")
