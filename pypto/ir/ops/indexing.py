"""Indexing operators: elements picked by index or by a column pattern (gather)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import NotBuiltError
from pypto.ir.nodes import Const, MaskPattern, MemorySpace, ScalarType, TensorType, TileType, TupleType
from pypto.ir.ops.base import _dims, _err, _ints, _shaped, _static, _tname, reg, whole
from pypto.ir.ops.base import _indices as _offsets

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


def _leading_merged(t: TensorType) -> TensorType:
    """A tensor of rank > 2 seen as 2-D: its leading dims merged into the rows."""
    rows = 1
    for d in t.shape[:-1]:
        rows *= d
    return TensorType((rows, t.shape[-1]), t.dtype)


def _tensor_gather(args, kw, span):
    """torch.gather along `dim` (index=), or a mask gather (mask_pattern=). A rank-3+
    source gathers along its last dim, its leading dims merged (as rows)."""
    src = _shaped("gather", args[0], span, (TensorType,))
    if len(src.shape) > 2 and "mask_pattern" not in kw and len(args) > 1:
        idx = _shaped("gather", args[1], span, (TensorType,))
        d, rank = kw.get("dim"), len(src.shape)
        if not isinstance(d, int) or isinstance(d, bool) or not -rank <= d < rank:
            _err(f"gather: dim= is a dim of the rank-{rank} source, got {d!r}", span)
        if len(idx.shape) != rank or any(i > s for k, (i, s) in enumerate(zip(idx.shape, src.shape))
                                         if k != d % rank):
            _err(f"gather: the index {list(idx.shape)} has the source's rank and fits it off dim {d}, "
                 f"the source is {list(src.shape)}", span)
        _tensor_gather([_Typed(_leading_merged(src)), _Typed(_leading_merged(idx))], {"dim": -1}, span)
        return TensorType(tuple(idx.shape), src.dtype)
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


# ------------------------------------------------------------- compare-form gather
CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")     # pto.tgather's cmpMode, in the reference's order


def compare_options(op, kw, span) -> tuple[str, int, int, dt.DataType]:
    """(cmp_mode, offset, out_cols, count_dtype) of a compare-form gather, checked."""
    mode = kw.get("cmp_mode", "eq")
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode < len(CMP_MODES):
        mode = CMP_MODES[mode]
    if mode not in CMP_MODES:
        _err(f"{op}: cmp_mode is one of {', '.join(repr(m) for m in CMP_MODES)} (or 0..5), got "
             f"{mode!r}", span)
    cols = kw.get("out_cols")
    if not isinstance(cols, int) or isinstance(cols, bool) or cols <= 0:
        _err(f"{op}: out_cols= (the indices kept per row) is a positive integer constant, got "
             f"{cols!r}", span, f"{op}(src, kvalue=k, cmp_mode='eq', out_cols=8)")
    offset = kw.get("offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool):
        _err(f"{op}: offset= (added to every index written) is an integer constant, got {offset!r}",
             span)
    count = kw.get("count_dtype", dt.INT32)
    if count not in (dt.INT32, dt.UINT32):
        _err(f"{op}: count_dtype is pl.INT32 or pl.UINT32, got {count!r}", span)
    return mode, offset, cols, count


def _kvalue(op, src_dtype, k, span):
    """The threshold: a scalar of the source's dtype (a literal takes it)."""
    t = getattr(k, "type", None)
    if not isinstance(t, ScalarType):
        _err(f"{op}: kvalue is a scalar (the threshold every element is compared with), got "
             f"{_tname(t)}", span)
    if isinstance(k, Const):
        if src_dtype.is_float or isinstance(k.value, int):
            return
    elif t.dtype == src_dtype:
        return
    _err(f"{op}: kvalue is a {src_dtype} scalar like the source, got {t.dtype}", span,
         f"annotate it pl.Scalar[pl.{src_dtype.name}] or pl.cast it")


def _compare_result(op, src, k, kw, span, kind):
    _, _, cols, count = compare_options(op, kw, span)
    _kvalue(op, src.dtype, k, span)
    rows = src.shape[0]
    if kind is TileType:
        return TupleType((TileType((rows, cols), dt.INT32, MemorySpace.Vec),
                          TileType((1, rows), count, MemorySpace.Vec)))
    return TupleType((TensorType((rows, cols), dt.INT32), TensorType((1, rows), count)))


def _tile_gather_compare(args, kw, span):
    """Per row, the column indices (+ offset) of the elements that compare true with
    kvalue, the first out_cols of them, and (second result) how many compared true."""
    src = _shaped("gather_compare", args[0], span, (TileType,))
    _src("gather_compare", src, span)
    tmp = _shaped("gather_compare", args[2], span, (TileType,))
    _vec_2d("gather_compare", tmp, span, "scratch tile")
    return _compare_result("gather_compare", src, args[1], kw, span, TileType)


def _tensor_gather_compare(args, kw, span):
    src = _shaped("gather", args[0], span, (TensorType,))
    _src("gather", src, span)
    return _compare_result("gather", src, args[1], kw, span, TensorType)


def compare_form(keywords, nargs: int) -> str:
    """pl.gather(x, kvalue=k, cmp_mode=..., out_cols=n) is the compare form."""
    return "gather_compare" if {"kvalue", "cmp_mode", "out_cols"} & set(keywords) else "gather"


_COMPARE_KW = ("cmp_mode", "offset", "out_cols", "count_dtype")
reg("tile.gather_compare", (3, 3), _tile_gather_compare, _COMPARE_KW, params=("src", "kvalue", "tmp"),
    pto="tgather",
    sig="pl.tile.gather_compare(src, kvalue, tmp, cmp_mode='eq', offset=0, out_cols=8, "
        "count_dtype=pl.INT32) -> (dst, cdst)  (per row the column indices + offset of the elements that compare "
        "true with kvalue, the first out_cols of them, INT32 [rows, out_cols]; and how many did, "
        "[1, rows]; tmp: a Vec scratch tile)")
reg("tensor.gather_compare", (2, 2), _tensor_gather_compare, _COMPARE_KW, params=("input", "kvalue"),
    sig="pl.gather(x, kvalue=k, cmp_mode='eq', out_cols=8, offset=0, count_dtype=pl.INT32) -> (dst, cdst)  "
        "(the compare form of pl.tensor.gather: see pl.tile.gather_compare)")


reg("tile.gather", (3, 3), _tile_gather, params=("src", "indices", "tmp"), pto="tgather",
    sig="pl.tile.gather(src, indices, tmp)  (dst[i, j] = src's element at row-major position "
        "indices[i, j]; tmp: an int32 scratch tile of the indices' shape)")
reg("tile.gather_mask", (1, 1), _tile_gather_mask, ("mask_pattern", "output_dtype"),
    params=("src",), pto="tgather",
    sig="pl.tile.gather_mask(src, mask_pattern=pl.tile.MaskPattern.P0101, output_dtype=None)  "
        "(the columns the pattern keeps, each row packed)")
reg("tensor.gather", (1, 2), _tensor_gather, ("dim", "mask_pattern", "output_dtype"),
    params=("input", "index"),
    sig="pl.gather(x, dim=-1, index=idx)  (torch.gather on a 2-D tensor) or pl.gather(x, "
        "mask_pattern=pl.tile.MaskPattern.P0101), or the compare form (kvalue=, cmp_mode=, out_cols=)")


# ------------------------------------------------------------------------- scatter
SCATTER_DTYPES = (dt.FP16, dt.FP32, dt.BF16, dt.INT8, dt.INT16, dt.INT32)


def _scatter_dst(op, t, span):
    _vec_2d(op, t, span, "destination")
    if t.dtype not in SCATTER_DTYPES:
        _err(f"{op}: a scatter writes fp16, fp32, bf16, int8, int16 or int32 elements, got {t.dtype}",
             span, "pl.cast the values first")


def _scatter_indexes(op, dst, idx, span):
    """4-byte elements take int32 indexes; 2- and 1-byte elements int16 ones."""
    _vec_2d(op, idx, span, "index")
    want = dt.INT32 if dst.dtype.nbytes == 4 else dt.INT16
    if idx.dtype != want:
        _err(f"{op}: {dst.dtype} elements take {want} indexes, got {idx.dtype}", span)

def _tile_scatter(args, kw, span):
    """dst with src[i, j] written at dst's row-major position indexes[i, j]."""
    dst = _shaped("scatter", args[0], span, (TileType,))
    src = _shaped("scatter", args[1], span, (TileType,))
    idx = _shaped("scatter", args[2], span, (TileType,))
    _scatter_dst("scatter", dst, span)
    _vec_2d("scatter", src, span, "source")
    _scatter_indexes("scatter", dst, idx, span)
    if src.dtype != dst.dtype:
        _err(f"scatter: {src.dtype} values into a {dst.dtype} tile", span, "pl.cast them first")
    if tuple(src.shape) != tuple(idx.shape):
        _err(f"scatter: the values {list(src.shape)} and the indexes {list(idx.shape)} differ in "
             f"shape", span)
    return TileType(tuple(dst.shape), dst.dtype, MemorySpace.Vec)


def _tile_scatter_mask(args, kw, span):
    """dst zeroed, src's columns written at the columns the pattern marks (the hardware
    form; pl.scatter keeps dst's other columns)."""
    dst = _shaped("scatter_mask", args[0], span, (TileType,))
    src = _shaped("scatter_mask", args[1], span, (TileType,))
    _scatter_dst("scatter_mask", dst, span)
    _vec_2d("scatter_mask", src, span, "source")
    cols, out = _masked("scatter_mask", dst, kw, span)
    if (src.shape[0], cols) != tuple((dst.shape[0], cols)) or src.shape[1] != cols \
            or src.dtype.nbytes != dst.dtype.nbytes:
        _err(f"scatter_mask: {kw['mask_pattern'].name} writes {dst.shape[0]}x{cols} values of "
             f"{dst.dtype}'s width into {list(dst.shape)}, got {_tname(src)}", span)
    return TileType(tuple(dst.shape), dst.dtype, MemorySpace.Vec)


def _tensor_scatter(args, kw, span):
    """torch.scatter along the last dim (index=, src=)."""
    base = _shaped("scatter", args[0], span, (TensorType,))
    _scatter_dst("scatter", base, span)
    idx = _shaped("scatter", args[1], span, (TensorType,))
    src = _shaped("scatter", args[2], span, (TensorType,))
    _scatter_indexes("scatter", base, idx, span)
    if kw.get("dim") not in (-1, 1):
        raise NotBuiltError(f"scatter: dim={kw.get('dim')!r} is not supported by this pypto yet "
                            f"(the last dim of a 2-D tensor is)", span,
                            "scatter along the last dim (transpose the tensors for dim 0)")
    if src.dtype != base.dtype or tuple(src.shape) != tuple(idx.shape):
        _err(f"scatter: the values {_tname(src)} must be {base.dtype} and shaped like the index "
             f"{list(idx.shape)}", span)
    if idx.shape[0] > base.shape[0]:
        _err(f"scatter: the index has {idx.shape[0]} rows, the tensor only {base.shape[0]}", span)
    return TensorType(tuple(base.shape), base.dtype)


def _tensor_scatter_mask(args, kw, span):
    """dst with the values written at the columns the pattern marks."""
    vals = _shaped("scatter", args[0], span, (TensorType,))
    dst = _shaped("scatter", args[1], span, (TensorType,))
    _scatter_dst("scatter", dst, span)
    cols, _ = _masked("scatter", dst, kw, span)
    if tuple(vals.shape) != (dst.shape[0], cols) or vals.dtype.nbytes != dst.dtype.nbytes:
        _err(f"scatter: {kw['mask_pattern'].name} writes {dst.shape[0]}x{cols} values into "
             f"{list(dst.shape)}, got {_tname(vals)}", span)
    return TensorType(tuple(dst.shape), dst.dtype)


GATHERB_DTYPES = (dt.INT8, dt.UINT8, dt.INT16, dt.UINT16, dt.INT32, dt.UINT32, dt.FP16, dt.BF16,
                  dt.FP32)


def _gatherb(args, kw, span):
    """32-byte blocks of a tile picked by UINT32 byte offsets: block b of row i is the 32
    bytes at offset[i, b] into the source tile, read as output_dtype (default the
    source's); an offset row is a whole number of 32-byte blocks (8 offsets)."""
    src = _shaped("gatherb", args[0], span, (TileType,))
    off = _shaped("gatherb", args[1], span, (TileType,))
    out = kw.get("output_dtype") or src.dtype
    for what, d in (("source", src.dtype), ("output_dtype", out)):
        if d not in GATHERB_DTYPES:
            _err(f"gatherb: the {what} is {d}; blocks are read as 8/16/32-bit ints or fp16 / bf16 / "
                 f"fp32", span)
    if off.dtype != dt.UINT32 or len(off.shape) != 2 or len(src.shape) != 2:
        _err(f"gatherb: a 2-D source and 2-D UINT32 byte offsets, got {_tname(src)} and "
             f"{_tname(off)}", span)
    if off.shape[1] % 8:
        _err(f"gatherb: an offset row is a whole number of 32-byte blocks (a multiple of 8 "
             f"offsets), got {off.shape[1]}", span)
    per = 32 // out.nbytes
    vr, vc = off.valid_shape
    valid = None if off.valid is None else (vr, None if vc is None else vc * per)
    return TileType((off.shape[0], off.shape[1] * per), out, MemorySpace.Vec, None, valid)


class _Typed:
    """Something of a type (a type rule's view of an operand reshaped)."""
    def __init__(self, t):
        self.type = t


MGATHER_COALESCE = {"row": 0, "elem": 1}
MGATHER_OOB = {"undefined": 0, "clamp": 1, "wrap": 2, "zero": 3}
MGATHER_DTYPES = (dt.INT8, dt.UINT8, dt.INT16, dt.UINT16, dt.INT32, dt.UINT32, dt.FP16, dt.BF16,
                  dt.FP32, dt.FP8E4M3FN, dt.FP8E5M2, dt.HF8)      # (the 8-bit floats: a5)


def mgather_mode(kw, key, names, span, op="mgather") -> int:
    """An mgather option given by name ("row") or by number (0), as the reference prints it."""
    v = kw.get(key, next(iter(names)))
    if isinstance(v, str) and v in names:
        return names[v]
    if isinstance(v, int) and not isinstance(v, bool) and v in names.values():
        return v
    _err(f"{op}: {key} is one of {', '.join(map(repr, names))} (or {sorted(names.values())}), got {v!r}",
         span)


def _mgather(args, kw, span):
    """Rows (coalesce="row": idx [1, R] picks rows of the tensor, its leading dims merged)
    or elements (coalesce="elem": idx's shape, each the tensor's row-major element) of a
    GM tensor gathered into a fresh Vec tile; gather_oob says what an index outside the
    tensor reads (undefined -- an error here --, clamp, wrap, zero)."""
    mem = _shaped("mgather", args[0], span, (TensorType,))
    mode = mgather_mode(kw, "coalesce", MGATHER_COALESCE, span)
    mgather_mode(kw, "gather_oob", MGATHER_OOB, span)
    space = kw.get("target_memory", MemorySpace.Vec)
    if space is MemorySpace.Mat:
        return _mgather_mat(mem, args, mode, kw, span)
    if space is not MemorySpace.Vec:
        _err(f"mgather gathers into Vec or Mat, not {space.name}", span)
    idx = _shaped("mgather", args[1], span, (TileType,))
    if len(args) > 2 or kw.get("valid_shape") is not None:
        _err("mgather into Vec takes no scratch= and no valid_shape= (the indices' valid shape is "
             "the result's)", span)
    if mem.dtype not in MGATHER_DTYPES:
        _err(f"mgather: cannot gather {mem.dtype} elements", span)
    if not all(isinstance(d, int) for d in mem.shape):
        raise NotBuiltError("mgather: a tensor with a dynamic dim is not supported by this pypto yet",
                            span, "gather from a static tensor")
    if idx.dtype != dt.INT32 or len(idx.shape) != 2:
        _err(f"mgather: the indices are a 2-D INT32 tile, got {_tname(idx)}", span)
    rows, cols = idx.valid_shape
    if mode == 1:
        return TileType(tuple(idx.shape), mem.dtype, MemorySpace.Vec, None, idx.valid)
    if len(mem.shape) < 2:
        _err(f"mgather: row mode gathers rows of a tensor of rank >= 2, got {_tname(mem)}", span,
             'gather elements with coalesce="elem"')
    if 1 not in idx.shape:
        _err(f"mgather: row mode takes [1, R] (or [R, 1]) indices, got {list(idx.shape)}", span)
    r, vr = (idx.shape[1], cols) if idx.shape[0] == 1 else (idx.shape[0], rows)
    shape = (r, mem.shape[-1])
    valid = None if vr == r else (vr, mem.shape[-1])
    return TileType(shape, mem.dtype, MemorySpace.Vec, None, valid)


def _mgather_mat(mem, args, mode, kw, span):
    """Into Mat (a matmul operand): the indices are a GM INT32 tensor ([1, R] rows, or the
    result's shape for elements); the element form stages the values in a GM scratch
    tensor of the source's dtype (the hardware's path), the row form takes none."""
    idx = _shaped("mgather", args[1], span, (TensorType,))
    if idx.dtype != dt.INT32 or len(idx.shape) != 2 or not all(isinstance(d, int) for d in idx.shape):
        _err(f"mgather into Mat: the indices are a static 2-D INT32 tensor, got {_tname(idx)}", span)
    if mem.dtype not in MGATHER_DTYPES or not all(isinstance(d, int) for d in mem.shape):
        _err(f"mgather into Mat: a static tensor of {', '.join(map(str, MGATHER_DTYPES))}, got "
             f"{_tname(mem)}", span)
    if mode == 1:
        shape = tuple(idx.shape)
        if len(args) < 3:
            _err("mgather into Mat gathering elements stages them in GM: pass scratch=, a tensor of "
                 "the source's dtype", span)
        scratch = _shaped("mgather", args[2], span, (TensorType,))
        n = 1
        for d in scratch.shape:
            n *= d if isinstance(d, int) else 0
        if scratch.dtype != mem.dtype or n < shape[0] * shape[1]:
            _err(f"mgather: the scratch holds {shape[0] * shape[1]} {mem.dtype} elements, got "
                 f"{_tname(scratch)}", span)
    else:
        if len(mem.shape) < 2 or idx.shape[0] != 1:
            _err(f"mgather into Mat gathering rows takes [1, R] indices of a tensor of rank >= 2, "
                 f"got {_tname(idx)} of {_tname(mem)}", span)
        if len(args) > 2:
            _err("mgather into Mat gathering rows takes no scratch=", span)
        shape = (idx.shape[1], mem.shape[-1])
    valid = kw.get("valid_shape")
    if valid is not None:        # only that part of the result is gathered
        valid = [getattr(v, "value", v) for v in valid]
        if len(valid) != 2 or any(not isinstance(v, int) or not 0 < v <= n for v, n in zip(valid, shape)):
            _err(f"mgather: valid_shape is [rows, cols] within the {list(shape)} result, got {valid}", span)
        valid = None if valid == list(shape) else tuple(valid)
    return TileType(shape, mem.dtype, MemorySpace.Mat, None, valid)


def _mscatter(args, kw, span):
    """src[i, j] stored to the tensor's element idx[i, j] (row-major positions)."""
    src = _shaped("mscatter", args[0], span, (TileType,))
    idx = _shaped("mscatter", args[1], span, (TileType,))
    out = _shaped("mscatter", args[2], span, (TensorType,))
    _vec_2d("mscatter", src, span, "source")
    _indices("mscatter", src, idx, span) if idx.dtype != dt.INT32 else None
    if tuple(src.shape) != tuple(idx.shape):
        _err(f"mscatter: the values {list(src.shape)} and the indices {list(idx.shape)} differ in "
             f"shape", span)
    if src.dtype != out.dtype:
        _err(f"mscatter: {src.dtype} values into a {out.dtype} tensor", span, "pl.cast them first")
    if not all(isinstance(d, int) for d in out.shape):
        raise NotBuiltError("mscatter: a tensor with a dynamic dim is not supported by this pypto "
                            "yet", span, "store into a static tensor")
    return TensorType(tuple(out.shape), out.dtype)


reg("tile.scatter", (3, 3), _tile_scatter, params=("dst", "src", "indexes"), pto="tscatter",
    sig="pl.tile.scatter(dst, src, indexes)  (dst with src[i, j] written at dst's row-major "
        "position indexes[i, j])")
reg("tile.scatter_mask", (2, 2), _tile_scatter_mask, ("mask_pattern",), params=("dst", "src"),
    pto="tscatter",
    sig="pl.tile.scatter_mask(dst, src, mask_pattern=pl.tile.MaskPattern.P0101)  (zeros, src's "
        "columns at the columns the pattern marks)")
reg("tensor.scatter", (3, 3), _tensor_scatter, ("dim",), params=("input", "index", "src"),
    sig="pl.scatter(x, dim=-1, index=idx, src=values)  (torch.scatter on the last dim of a 2-D "
        "tensor)")
reg("tensor.scatter_mask", (2, 2), _tensor_scatter_mask, ("mask_pattern",), params=("input", "dst"),
    sig="pl.scatter(values, mask_pattern=pl.tile.MaskPattern.P0101, dst=d)  (d with the values at "
        "the columns the pattern marks)")
reg("tile.gatherb", (2, 2), _gatherb, ("output_dtype",), params=("src", "offset"), pto="tgatherb",
    sig="pl.tile.gatherb(src, offset, output_dtype=None)  (32-byte blocks of the tile at UINT32 byte "
        "offsets, one per block of the result: [R, 8k] offsets -> [R, 8k * 32 / element bytes])")
reg("tile.mgather", (2, 3), _mgather, ("coalesce", "gather_oob", "target_memory", "valid_shape"),
    params=("mem", "idx", "scratch"), pto="mgather",
    sig='pl.tile.mgather(mem, idx, coalesce="row", gather_oob="undefined", target_memory=pl.Mem.Vec, '
        'scratch=None)  (rows of the GM tensor picked by a [1, R] INT32 tile -- or elements, '
        'coalesce="elem", by a tile of their positions -- into a fresh Vec tile; into Mat the '
        'indices are a GM tensor and elements are staged in a GM scratch tensor; gather_oob= '
        '"clamp" / "wrap" / "zero" for indices outside it)')
reg("tile.mscatter", (3, 3), _mscatter, pure=False, params=("src", "idx", "output_tensor"),
    pto="mscatter",
    sig="pl.mscatter(src, idx, output_tensor)  (src[i, j] stored to the tensor's element at "
        "row-major position idx[i, j])")


def _scatter_update(args, kw, span):
    """input with row index.flat[k] replaced by src's row k (dim=-2)."""
    kinds = (TileType,) if isinstance(getattr(args[0], "type", None), TileType) else (TensorType,)
    inp = _shaped("scatter_update", args[0], span, kinds)
    d = args[1]
    if not (getattr(d, "value", None) in (-2, 0) and not isinstance(getattr(d, "value", None), bool)):
        raise NotBuiltError(f"scatter_update: dim={getattr(d, 'value', d)!r} is not supported by this "
                            f"pypto yet (rows, dim=-2, are)", span, "scatter_update(x, -2, index, src)")
    idx = _shaped("scatter_update", args[2], span, kinds)
    src = _shaped("scatter_update", args[3], span, kinds)
    _scatter_dst("scatter_update", inp, span)
    _vec_2d("scatter_update", src, span, "source")
    _vec_2d("scatter_update", idx, span, "index")
    if idx.dtype not in (dt.INT32, dt.INT16):
        _err(f"scatter_update: row indices are int32 or int16, got {idx.dtype}", span)
    if src.dtype != inp.dtype or src.shape[1] != inp.shape[1] or src.shape[0] != idx.shape[0] * idx.shape[1]:
        _err(f"scatter_update: {_tname(src)} gives one {inp.dtype} row of {inp.shape[1]} per index of "
             f"{list(idx.shape)} (it needs {idx.shape[0] * idx.shape[1]} rows)", span)
    if isinstance(inp, TileType):
        return TileType(tuple(inp.shape), inp.dtype, MemorySpace.Vec)
    return TensorType(tuple(inp.shape), inp.dtype)


for _ns in ("tile", "tensor"):
    reg(f"{_ns}.scatter_update", (4, 4), _scatter_update, params=("input", "dim", "index", "src"),
        sig="pl.scatter_update(x, -2, index, src)  (x with row index.flat[k] replaced by src's row "
            "k; a tile.scatter at the rows' positions)")


# ---------------------------------------------------------------- rows into on-chip memory
# A kernel builds a matmul operand (Mat) or a Vec tile from scattered GM rows: one DMA a
# row, straight into a window of the on-chip tile (no UB round trip for Mat).
ROW_DTYPES = (dt.FP16, dt.BF16, dt.FP32, dt.INT8)
_TRANSPOSED = "row-into-column gathers (transpose=True, the ZN layout) are not built; gather rows " \
              "and multiply with b_trans=False"


def _create_l1(args, kw, span):
    shape = _dims("create_l1", args[0], span)
    dtype = kw.get("dtype")
    if not isinstance(dtype, dt.DataType):
        _err("create_l1: dtype= is required, e.g. pl.create_l1([128, 128], pl.FP16)", span)
    if len(shape) != 2:
        _err(f"create_l1: an on-chip accumulator is 2-D, got {shape}", span)
    return TensorType(tuple(shape), dtype)


def _row_window(op, acc, src, args, span):
    """(static window shape, its valid part) of a gather_row; the offsets checked."""
    if len(acc.shape) != 2 or len(src.shape) != 2:
        _err(f"{op}: the accumulator and the source are 2-D", span)
    if acc.dtype != src.dtype:
        _err(f"{op}: the accumulator holds {acc.dtype}, the source {src.dtype}", span,
             "gather into an accumulator of the source's dtype")
    for what, x in (("dst_offset", args[2]), ("src_offset", args[3])):
        if len(_offsets(op, x, span)) != 2:
            _err(f"{op}: {what} is [row, col]", span)
    shape = _static(op, _ints(op, args[4], span, "shapes"), span, "shapes (the window, static)")
    if len(shape) != 2 or min(shape) <= 0:
        _err(f"{op}: shapes is the [rows, cols] window, positive, got {shape}", span)
    if shape[1] > acc.shape[1] or shape[0] > acc.shape[0]:
        _err(f"{op}: a {shape} window does not fit the {list(acc.shape)} accumulator", span)
    valid = None
    if len(args) > 5:
        valid = _offsets(op, args[5], span)
        if len(valid) != 2:
            _err(f"{op}: valid_shape is [rows, cols]", span)
        for v, n in zip(valid, shape):
            if isinstance(v, Const) and not 0 <= v.value <= n:
                _err(f"{op}: valid_shape {v.value} exceeds the window's {n}", span)
    return shape, valid


def _gather_row(ns):
    def infer(args, kw, span):
        op = "gather_row"
        acc = _shaped(op, args[0], span, (TileType,) if ns == "tile" else (TensorType,))
        src = _shaped(op, args[1], span, (TensorType,))
        _row_window(op, acc, src, args, span)
        if ns == "tile" and acc.memory_space not in (None, MemorySpace.Mat, MemorySpace.Vec):
            _err(f"{op}: rows are loaded into a Mat or Vec tile, not {acc.memory_space}", span)
        if acc.dtype not in ROW_DTYPES:
            _err(f"{op}: rows of fp16, bf16, fp32 or int8 are gathered, got {acc.dtype}", span)
        return acc
    return infer


def paged_options(kw, span) -> tuple[int, int, int, MemorySpace, int]:
    """(block_size, size, max_indices, space, col_off) of a paged gather, checked."""
    vals = []
    for k in ("block_size", "size", "max_indices"):
        v = kw.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            _err(f"paged_gather: {k}= is a positive integer constant, got {v!r}", span,
                 "pl.paged_gather(src, idx, block_table, block_size=16, size=128, max_indices=16)")
        vals.append(v)
    space = kw.get("space", MemorySpace.Mat)
    if space not in (MemorySpace.Mat, MemorySpace.Vec):
        _err(f"paged_gather: space= is pl.Mem.Mat (L1, the default) or pl.Mem.Vec, got {space!r}", span)
    off = kw.get("col_off", 0)
    if not isinstance(off, int) or isinstance(off, bool) or off < 0:
        _err(f"paged_gather: col_off= is a non-negative integer constant, got {off!r}", span)
    return (*vals, space, off)


def _paged_gather(args, kw, span):
    """out[i, :] = src[block_table[idx // B] * B + idx % B, col_off : col_off + size] for
    each logical index idx = indices[i]; [max_indices, size] on chip."""
    op = "paged_gather"
    src = _shaped(op, args[0], span, (TensorType,))
    idx = _shaped(op, args[1], span, (TensorType,))
    table = _shaped(op, args[2], span, (TensorType,))
    block, size, most, _space, off = paged_options(kw, span)
    if not isinstance(kw.get("is_b_matrix", False), bool):
        _err(f"{op}: is_b_matrix= is True or False", span)
    if len(src.shape) != 2 or src.dtype not in ROW_DTYPES:
        _err(f"{op}: the pool is a 2-D fp16, bf16, fp32 or int8 tensor, got {_tname(src)}", span)
    for what, t in (("indices", idx), ("block_table", table)):
        if t.dtype != dt.INT32 or not (len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[0] == 1)):
            _err(f"{op}: {what} is an int32 [n] or [1, n] tensor, got {_tname(t)}", span)
    n = idx.shape[-1]
    if not isinstance(n, int):
        from pypto.errors import NotBuiltError
        raise NotBuiltError(f"{op}: indices of a length known only at run time are not supported by "
                            f"this pypto yet", span, "pass indices of a static length (pad with valid rows)")
    if n > most:
        _err(f"{op}: {n} indices exceed max_indices={most}", span)
    if isinstance(src.shape[1], int) and off + size > src.shape[1]:
        _err(f"{op}: columns [{off}, {off + size}) lie outside the pool's {src.shape[1]}", span)
    return TensorType((most, size), src.dtype)


reg("tensor.create_l1", (1, 1), _create_l1, ("dtype", "transpose"), params=("shape",),
    unbuilt={"transpose": _TRANSPOSED},
    sig="pl.create_l1([M, N], pl.FP16)  (an on-chip (Mat) accumulator a kernel fills with "
        "pl.gather_row and hands to pl.matmul)")
reg("tensor.gather_row", (5, 6), _gather_row("tensor"), ("transpose",),
    params=("acc", "src", "dst_offset", "src_offset", "shapes", "valid_shape"),
    unbuilt={"transpose": _TRANSPOSED},
    sig="pl.gather_row(acc, src, [row, col], [src_row, src_col], [R, C], valid_shape=[r, c])  "
        "(the GM window written straight into acc at [row, col], in place; valid_shape: how much "
        "of it moves, run-time values allowed)")
reg("tile.gather_row", (5, 6), _gather_row("tile"), ("transpose",),
    params=("acc", "src", "dst_offset", "src_offset", "shapes", "valid_shape"), pto="tload",
    unbuilt={"transpose": _TRANSPOSED},
    sig="pl.tile.gather_row(acc, src, [row, col], [src_row, src_col], [R, C], valid_shape=None)  "
        "(pto.subview of acc + pto.tload of the GM window into it)")
reg("tensor.paged_gather", (3, 3), _paged_gather,
    ("block_size", "size", "max_indices", "space", "col_off", "is_trans", "is_b_matrix"),
    params=("src", "indices", "block_table"),
    unbuilt={"is_trans": _TRANSPOSED},
    sig="pl.paged_gather(src, indices, block_table, block_size=B, size=D, max_indices=N, "
        "space=pl.Mem.Mat, col_off=0)  (row i = src[block_table[idx // B] * B + idx % B, "
        "col_off:col_off + D] for idx = indices[i]; [N, D] on chip; is_b_matrix=: the reference's hint "
        "that it feeds a matmul as B, checked to be a bool (Mat tiles have one layout here))")
