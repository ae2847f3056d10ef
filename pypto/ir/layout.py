"""Physical layout of an on-chip tile, per memory space and shape.

`tile_layout(t)` answers the three `!pto.tile_buf` attributes that are not in the IR
type itself: the block layout, the in-box (fractal) layout and the fractal size in
bytes. The `.pto` codegen prints them on every tile type, and the printer's explicit
mode shows them as `pl.TileView(...)`.

| space | blayout   | slayout   | fractal |
|-------|-----------|-----------|---------|
| vec   | row_major | none_box  | 512     |  (a column vector [M, 1], M > 1: col_major)
| mat   | col_major | row_major | 512     |  (NZ; a single row [1, N]: row_major / none_box)
| left  | row_major | row_major | 512     |  (a5: col_major / row_major)
| right | row_major | col_major | 512     |
| acc   | col_major | row_major | 1024    |
| bias  | row_major | none_box  | 512     |  (one row: a matmul's per-column bias)
| left_scale  | row_major | row_major | 32  |  (MX scales, PTO loc `scaling`)
| right_scale | col_major | col_major | 32  |
"""
from __future__ import annotations

from pypto.ir.nodes import MemorySpace, TileType

ARCHS = ("a2a3", "a5")

_FIXED = {
    MemorySpace.Mat: ("col_major", "row_major", 512),
    MemorySpace.Right: ("row_major", "col_major", 512),
    MemorySpace.Acc: ("col_major", "row_major", 1024),
    MemorySpace.Bias: ("row_major", "none_box", 512),
    MemorySpace.LeftScale: ("row_major", "row_major", 32),      # one scale per 32 elements of K
    MemorySpace.RightScale: ("col_major", "col_major", 32),
}
_LEFT = {"a2a3": ("row_major", "row_major", 512), "a5": ("col_major", "row_major", 512)}


def tile_rows_cols(shape) -> tuple[int, int]:
    """The 2-D physical shape of a tile: a 1-D tile is one row; leading unit dims of a
    higher-rank tile are dropped. Raises ValueError for anything else."""
    shape = tuple(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, int(shape[0])
    if any(d != 1 for d in shape[:-2]):
        raise ValueError(f"a tile is at most 2-D (leading dims must be 1), got shape {list(shape)}")
    return int(shape[-2]), int(shape[-1])


def allocated_rows_cols(t: TileType) -> tuple[int, int]:
    """The rows and columns an on-chip tile occupies. A Mat tile is stored as whole
    fractals (16 rows of 32 bytes): one whose shape is not (an int8 [128, 144] window of a
    matrix) is allocated padded up to them, its shape being the region that holds data;
    the cube reads its blocks out of it (pto.textract). A row-major Vec tile's rows are
    padded to whole 32-byte blocks. Other tiles: their shape."""
    if len(t.shape) > 2:           # before FlattenTileNdTo2D: as it will be flattened
        rows = 1
        for d in t.shape[:-1]:
            rows *= d
        cols = t.shape[-1]
    else:
        rows, cols = tile_rows_cols(t.shape)
    if t.memory_space is MemorySpace.Mat and rows > 1 and t.dtype.nbytes >= 1:   # (not 4-bit)
        per = max(1, 32 // t.dtype.nbytes)
        rows, cols = -(-rows // 16) * 16, -(-cols // per) * per
    elif t.memory_space is MemorySpace.Vec and not (cols == 1 and rows > 1) and t.dtype.nbytes >= 1 \
            and t.dtype.pack == 1:
        # a row-major Vec tile's rows are whole 32-byte blocks: a narrower row (an int8
        # [2, 16] tile) is allocated padded, its shape the part that holds data
        per = max(1, 32 // t.dtype.nbytes)
        cols = -(-cols // per) * per
    return rows, cols


def tile_layout(t: TileType, arch: str = "a2a3") -> tuple[str, str, int]:
    """(blayout, slayout, fractal) of tile `t` on `arch` ("a2a3" or "a5")."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; expected one of {', '.join(ARCHS)}")
    space = t.memory_space
    if space is MemorySpace.Vec:
        rows, cols = tile_rows_cols(t.shape)
        if cols == 1 and rows > 1:
            return "col_major", "none_box", 512
        return "row_major", "none_box", 512
    if space is MemorySpace.Left:
        return _LEFT[arch]
    if space is MemorySpace.Mat and tile_rows_cols(t.shape)[0] == 1:
        return "row_major", "none_box", 512      # one row (a bias on its way to Bias): ND

    if space in _FIXED:
        return _FIXED[space]
    raise ValueError(f"a tile in memory space {space!r} has no on-chip layout")
