"""Operators that change a shape: reshape."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import MemorySpace, PtrType, ScalarType, TensorType, TileType, Const, TupleExpr
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, reg)


def _reshape(args, kw, span):
    a = _shaped("reshape", args[0], span)
    whole("reshape", a, span)
    shape = _dims("reshape", args[1], span)
    n_old = 1
    for d in a.shape:
        n_old *= d if isinstance(d, int) else 1
    n_new = 1
    for d in shape:
        n_new *= d
    if n_old != n_new:
        _err(f"reshape: {list(a.shape)} has {n_old} elements, {shape} has {n_new}", span)
    return _same_kind(a, shape, a.dtype) if isinstance(a, TensorType) else \
        TileType(tuple(shape), a.dtype, a.memory_space)



for _ns in ("tensor", "tile"):
    reg(f"{_ns}.reshape", (2, 2), _reshape, params=("x", "shape"), sig="pl.reshape(x, [M, N])")
