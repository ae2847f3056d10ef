"""Indexing operators: elements picked by index or by a column pattern (gather)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import NotBuiltError
from pypto.ir.nodes import MaskPattern, MemorySpace, TensorType, TileType
from pypto.ir.ops.base import _err, _shaped, _tname, reg, whole

GATHER_DTYPES = (dt.FP16, dt.FP32, dt.INT16, dt.INT32)


def _vec_2d(op, t, span, what):
    if len(t.shape) != 2:
        _err(f"{op}: the {what} is 2-D, got {_tname(t)}", span)
    if isinstance(t, TileType):
        whole(op, t, span, what)
        if t.memory_space not in (None, MemorySpace.Vec):
            _err(f"{op}: the {what} is a Vec tile, not {t.memory_space.name}", span)


def _src(op, t, span):
    _vec_2d(op, t, span, "source")
    if t.dtype not in GATHER_DTYPES:
        _err(f"{op}: a gather picks fp16, fp32, int16 or int32 elements, got {t.dtype}", span,
             "pl.cast the source first")


def _indices(op, src, idx, span):
    _vec_2d(op, idx, span, "index")
    if not (idx.dtype == dt.INT32 or (idx.dtype == dt.INT16 and src.dtype.nbytes == 2)):
        _err(f"{op}: indices are int32 (or int16 with a 16-bit source), got {idx.dtype}", span)


def _tile_gather(args, kw, span):
    """dst[i, j] = src's element at row-major position indices[i, j]."""
    src = _shaped("gather", args[0], span, (TileType,))
    idx = _shaped("gather", args[1], span, (TileType,))
    tmp = _shaped("gather", args[2], span, (TileType,))
    _src("gather", src, span)
    _indices("gather", src, idx, span)
    _vec_2d("gather", tmp, span, "scratch tile")
    return TileType(tuple(idx.shape), src.dtype, MemorySpace.Vec)


def _masked(op, src, kw, span):
    """(kept columns, result dtype) of a mask gather."""
    pattern = kw.get("mask_pattern")
    if not isinstance(pattern, MaskPattern):
        _err(f"{op}: mask_pattern=pl.tile.MaskPattern.<P0101, P1010, ...> is required, got "
             f"{pattern!r}", span)
    stride, _ = pattern.stride_offset
    cols = src.shape[1]
    if cols % stride:
        _err(f"{op}: {pattern.name} keeps one column of every {stride}, but the source has {cols}",
             span)
    out = kw.get("output_dtype", src.dtype)
    if not isinstance(out, dt.DataType) or out.nbytes != src.dtype.nbytes:
        _err(f"{op}: output_dtype reads the picked bits as another dtype of the same width as "
             f"{src.dtype}, got {out!r}", span)
    return cols // stride, out


def _tile_gather_mask(args, kw, span):
    src = _shaped("gather_mask", args[0], span, (TileType,))
    _src("gather_mask", src, span)
    cols, out = _masked("gather_mask", src, kw, span)
    return TileType((src.shape[0], cols), out, MemorySpace.Vec)


def _tensor_gather(args, kw, span):
    """torch.gather along `dim` (index=), or a mask gather (mask_pattern=)."""
    src = _shaped("gather", args[0], span, (TensorType,))
    _src("gather", src, span)
    if "mask_pattern" in kw:
        if len(args) > 1:
            _err("gather: the mask form takes no index", span)
        cols, out = _masked("gather", src, kw, span)
        return TensorType((src.shape[0], cols), out)
    if len(args) < 2:
        _err("gather: index= (with dim=) or mask_pattern= is required", span,
             "pl.gather(x, dim=-1, index=idx)")
    idx = _shaped("gather", args[1], span, (TensorType,))
    _indices("gather", src, idx, span)
    d = kw.get("dim")
    if not isinstance(d, int) or isinstance(d, bool) or not -2 <= d < 2:
        if isinstance(d, int) and not isinstance(d, bool) and len(src.shape) == 2:
            _err(f"gather: dim {d} is out of range for a rank-2 tensor", span)
        _err("gather: dim= is an integer constant", span, "pl.gather(x, dim=-1, index=idx)")
    d %= 2
    other = 1 - d
    if not all(isinstance(x, int) for x in src.shape + idx.shape):
        raise NotBuiltError("gather: a tensor with a dynamic dim is not supported by this pypto yet",
                            span, "gather from static tensors")
    if idx.shape[other] > src.shape[other]:
        _err(f"gather: the index has {idx.shape[other]} along dim {other}, the source only "
             f"{src.shape[other]}", span)
    return TensorType(tuple(idx.shape), src.dtype)


reg("tile.gather", (3, 3), _tile_gather, params=("src", "indices", "tmp"), pto="tgather",
    sig="pl.tile.gather(src, indices, tmp)  (dst[i, j] = src's element at row-major position "
        "indices[i, j]; tmp: an int32 scratch tile of the indices' shape)")
reg("tile.gather_mask", (1, 1), _tile_gather_mask, ("mask_pattern", "output_dtype"),
    params=("src",), pto="tgather",
    sig="pl.tile.gather_mask(src, mask_pattern=pl.tile.MaskPattern.P0101, output_dtype=None)  "
        "(the columns the pattern keeps, each row packed)")
reg("tensor.gather", (1, 2), _tensor_gather, ("dim", "mask_pattern", "output_dtype"),
    params=("input", "index"),
    unbuilt={k: "the index form (dim=, index=) and the mask form (mask_pattern=) are built"
             for k in ("kvalue", "cmp_mode", "out_cols", "count_dtype")},
    sig="pl.gather(x, dim=-1, index=idx)  (torch.gather on a 2-D tensor) or pl.gather(x, "
        "mask_pattern=pl.tile.MaskPattern.P0101)")
