"""Reductions along a row or a column, and the row/column expand forms."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import MemorySpace, PtrType, ScalarType, TensorType, TileType, Const, TupleExpr
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, reg)

ROW_REDUCE = ("row_sum", "row_max", "row_min", "row_prod")
COL_REDUCE = ("col_sum", "col_max", "col_min", "col_prod")
ROW_EXPAND = tuple(f"row_expand_{o}" for o in ("add", "sub", "mul", "div", "max", "min", "expdif"))
COL_EXPAND = tuple(f"col_expand_{o}" for o in ("add", "sub", "mul", "div", "max", "min", "expdif"))


def _pto(name: str) -> str:
    """row_sum -> trowsum, col_expand_max -> tcolexpandmax: the tile library's name."""
    return "t" + name.replace("_", "")


def _row_reduce(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D operand, got shape {list(a.shape)}", span)
        if isinstance(a, TileType):
            if len(args) < 2:
                _err(f"{op} on a tile needs a scratch tile: {op.split('.')[1]}(t, tmp)", span,
                     "pass tmp = pl.create_tile(shape_of_t, dtype=..., target_memory=pl.Mem.Vec)")
            tmp = _shaped(op, args[1], span, (TileType,))
            if len(tmp.shape) != 2 or tmp.shape[0] < a.shape[0] or tmp.shape[1] < a.shape[1] \
                    or tmp.dtype != a.dtype:
                _err(f"{op}: the scratch tile is {_tname(tmp)} but x is {_tname(a)}", span,
                     f"the scratch tile has x's shape and dtype: tmp = pl.create_tile("
                     f"{list(a.shape)}, dtype={a.dtype!r}, target_memory=pl.Mem.Vec)")
        return _same_kind(a, (a.shape[0], 1), a.dtype, (valid_of(a)[0], 1))
    return infer


def _col_reduce(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D operand", span)
        return _same_kind(a, (1, a.shape[1]), a.dtype, (1, valid_of(a)[1]))
    return infer


def _expand(op, row):
    def infer(args, kw, span):
        a, v = _shaped(op, args[0], span), _shaped(op, args[1], span)
        _check_dtype(op, a, v, span)
        if op.endswith("expdif") and not a.dtype.is_float:
            _err(f"{op} needs floating-point operands (exp(x - v)), got {a.dtype}", span)
        want = (a.shape[0], 1) if row else (1, a.shape[1])
        if tuple(v.shape) != tuple(want):
            _err(f"{op}: vector operand must have shape {list(want)}, got {list(v.shape)}", span)
        covers = (valid_of(a)[0], 1) if row else (1, valid_of(a)[1])
        if v.valid is None or tuple(v.valid) != covers:   # a partial vector covers x's valid part
            whole(op, v, span, "vector operand")
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer


ROW_EXPAND_ADD_DTYPES = (dt.INT8, dt.INT16, dt.INT32, dt.FP16, dt.FP32)


def _row_expand_add(op):
    """x + v per row, v a column [M, 1] or a packed carrier [M, 32 bytes] whose lanes repeat
    across the row (pto.trowexpandadd's two forms); v's valid rows are x's; an optional
    scratch tile (the hardware's workspace on a2/a3)."""
    def infer(args, kw, span):
        a, v = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(v):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(v)}", span)
        _check_dtype(op, a, v, span)
        if a.dtype not in ROW_EXPAND_ADD_DTYPES:
            _err(f"{op} adds int8, int16, int32, fp16 or fp32 elements, got {a.dtype}", span)
        if len(a.shape) != 2 or len(v.shape) != 2:
            _err(f"{op} expects 2-D operands", span)
        lanes = 32 // a.dtype.nbytes if isinstance(a, TileType) else 1   # (packed: tile level)
        if v.shape[0] != a.shape[0] or v.shape[1] not in (1, lanes):
            packed = f" or [{a.shape[0]}, {lanes}] (a 32-byte block per row, repeated)" if lanes > 1 else \
                " (a packed 32-byte carrier is a tile-level form: pl.tile.row_expand_add)"
            _err(f"{op}: vector operand must have shape [{a.shape[0]}, 1] (a value per row){packed}, "
                 f"got {list(v.shape)}", span)
        if valid_of(v)[0] != valid_of(a)[0] or valid_of(v)[1] != v.shape[1]:
            _err(f"{op}: the vector's valid shape {list(valid_of(v))} must cover x's valid rows "
                 f"{valid_of(a)[0]} and all its {v.shape[1]} columns", span)
        if len(args) > 2:
            tmp = _shaped(op, args[2], span, (TileType,))
            if isinstance(a, TileType) and tmp.memory_space not in (None, MemorySpace.Vec):
                _err(f"{op}: the scratch tile is a Vec tile", span)
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer


def _broadcast(op, row):
    """row_expand(target, v[M,1]) / col_expand(target, v[1,N]): v broadcast to target's
    shape (target's values are not read)."""
    def infer(args, kw, span):
        a, v = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(v):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(v)}", span)
        _check_dtype(op, a, v, span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D target, got shape {list(a.shape)}", span)
        want = (a.shape[0], 1) if row else (1, a.shape[1])
        if tuple(v.shape) != tuple(want):
            _err(f"{op}: vector operand must have shape {list(want)}, got {list(v.shape)}", span,
                 f"{op.split('.')[1]}(target, v) broadcasts v to target's shape")
        whole(op, v, span, "vector operand")
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer



for _ns in ("tensor", "tile"):
    for _o in ROW_REDUCE:
        reg(f"{_ns}.{_o}", (1, 2), _row_reduce(f"{_ns}.{_o}"), params=("x", "tmp"),
            sig=f"pl.{_o}(x, tmp)  ([M,N] -> [M,1]; a tile needs a scratch tile tmp of x's shape)",
            pto=_pto(_o))
    for _o in COL_REDUCE:
        reg(f"{_ns}.{_o}", (1, 2), _col_reduce(f"{_ns}.{_o}"), params=("x", "tmp"),
            sig=f"pl.{_o}(x)  ([M,N] -> [1,N])", pto=_pto(_o))
    reg(f"{_ns}.row_expand_add", (2, 3), _row_expand_add(f"{_ns}.row_expand_add"), params=("x", "v", "tmp"),
        sig="pl.row_expand_add(x, v, tmp=None)  (x [M,N] + v per row: v [M,1], or a packed 32-byte "
            "block per row [M, 32/bytes] whose lanes repeat across the row; tmp: a Vec scratch)",
        pto=_pto("row_expand_add"))
    for _o in ROW_EXPAND:
        if _o == "row_expand_add":
            continue
        reg(f"{_ns}.{_o}", (2, 2), _expand(f"{_ns}.{_o}", True), params=("x", "v"),
            sig=f"pl.{_o}(x, v)  (x [M,N], v [M,1]" + ("; exp(x - v)" if "expdif" in _o else "")
                + ")", pto=_pto(_o))
    for _o in COL_EXPAND:
        reg(f"{_ns}.{_o}", (2, 2), _expand(f"{_ns}.{_o}", False), params=("x", "v"),
            sig=f"pl.{_o}(x, v)  (x [M,N], v [1,N]" + ("; exp(x - v)" if "expdif" in _o else "")
                + ")", pto=_pto(_o))
    reg(f"{_ns}.row_expand", (2, 2), _broadcast(f"{_ns}.row_expand", True), params=("target", "v"),
        sig="pl.row_expand(target, v)  (v [M,1] broadcast to target's [M,N])", pto="trowexpand")
    reg(f"{_ns}.col_expand", (2, 2), _broadcast(f"{_ns}.col_expand", False), params=("target", "v"),
        sig="pl.col_expand(target, v)  (v [1,N] broadcast to target's [M,N])", pto="tcolexpand")


# arg reductions (tile level): the int32 index of the first max/min of each row / column
ARG_REDUCE = ("row_argmax", "row_argmin", "col_argmax", "col_argmin")


def _arg_reduce(op):
    row = ".row_" in op

    def infer(args, kw, span):
        a = _shaped(op, args[0], span, (TileType,) if op.startswith("tile.") else (TensorType,))
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D operand, got shape {list(a.shape)}", span)
        if not a.dtype.is_float:
            _err(f"{op} reduces float elements (fp32, fp16, bf16), got {a.dtype}", span,
                 "pl.cast it to pl.FP32 first")
        if len(args) > 1:
            tmp = _shaped(op, args[1], span, (TileType,))
            if tmp.dtype != a.dtype or len(tmp.shape) != 2:
                _err(f"{op}: the scratch tile is {_tname(tmp)} but x is {_tname(a)}", span)
        v = valid_of(a)
        shape, valid = ((a.shape[0], 1), (v[0], 1)) if row else ((1, a.shape[1]), (1, v[1]))
        if isinstance(a, TensorType):
            return TensorType(shape, dt.INT32)
        return TileType(shape, dt.INT32, a.memory_space, None, None if valid == shape else valid)
    return infer


for _o in ARG_REDUCE:
    _r = _o.startswith("row")
    reg(f"tensor.{_o}", (1, 1), _arg_reduce(f"tensor.{_o}"), params=("x",),
        sig=f"pl.{_o}(x)  ([M,N] tensor -> " + ("[M,1]" if _r else "[1,N]") +
            " INT32, inside pl.at: the first index of the " + ("max" if "max" in _o else "min") + ")")
    reg(f"tile.{_o}", (1, 2), _arg_reduce(f"tile.{_o}"), params=("x", "tmp"), pto=_pto(_o),
        sig=f"pl.tile.{_o}(x, tmp)  ([M,N] -> " + ("[M,1]" if _r else "[1,N]") +
            " INT32: the first index of the " + ("max" if "max" in _o else "min") + "; float x)")
