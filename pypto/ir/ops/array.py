"""The array family: on-core arrays of scalars (a kernel's stack-local array),
created with a static extent, read and written an element at a time. Writes are
functional in the IR (`update_element` gives the array's next value) and in place in
the kernel (pto.local_array_set)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import ArrayType, Const, ScalarType
from pypto.ir.ops.base import _err, _tname, reg

ARRAY_DTYPES = (dt.INT8, dt.INT16, dt.INT32, dt.INT64, dt.UINT8, dt.UINT16, dt.UINT32, dt.UINT64,
                dt.INDEX, dt.BOOL, dt.FP16, dt.BF16, dt.FP32, dt.TASK_ID)


def _array(op, a, span) -> ArrayType:
    t = getattr(a, "type", None)
    if not isinstance(t, ArrayType):
        _err(f"{op} works on an array (pl.array.create), got {_tname(t)}", span)
    return t


def _index(op, i, t: ArrayType, span) -> None:
    it = getattr(i, "type", None)
    if not isinstance(it, ScalarType) or it.dtype.is_float or it.dtype == dt.BOOL:
        _err(f"{op}: the index is an integer, got {_tname(it)}", span)
    if isinstance(i, Const) and not 0 <= i.value < t.extent:
        _err(f"{op}: index {i.value} is outside the array's {t.extent} elements", span,
             f"index 0 .. {t.extent - 1}")


def _create(args, kw, span):
    n, d = args[0], kw.get("dtype")
    if not (isinstance(n, Const) and isinstance(n.value, int) and not isinstance(n.value, bool)) or n.value <= 0:
        _err("array.create: the extent is a positive integer constant", span, "pl.array.create(4, pl.INT32)")
    if d not in ARRAY_DTYPES:
        _err(f"array.create: an array holds scalars ({', '.join(map(str, ARRAY_DTYPES))}), got {d!r}", span)
    return ArrayType(n.value, d)


def _get(args, kw, span):
    t = _array("array.get_element", args[0], span)
    _index("array.get_element", args[1], t, span)
    return ScalarType(t.dtype)


def _update(args, kw, span):
    t = _array("array.update_element", args[0], span)
    _index("array.update_element", args[1], t, span)
    vt = getattr(args[2], "type", None)
    if not isinstance(vt, ScalarType):
        _err(f"array.update_element: the value is a scalar, got {_tname(vt)}", span)
    if vt.dtype != t.dtype:
        _err(f"array.update_element: a {vt.dtype} value into a {t.dtype} array", span,
             f"pl.cast it to {t.dtype!r}")
    return t


reg("array.create", (1, 1), _create, ("dtype",), params=("extent",),
    sig="pl.array.create(4, pl.INT32)  (an array of that many scalars, zeros; on the core in "
        "kernels, on the host in an orchestration, where pl.TASK_ID arrays start unset)")
reg("array.get_element", (2, 2), _get, params=("array", "index"),
    sig="pl.array.get_element(arr, i)  (or arr[i]: one element, a scalar)")
reg("array.update_element", (3, 3), _update, pure=False, params=("array", "index", "value"),
    sig="pl.array.update_element(arr, i, v)  (or arr[i] = v: the array with element i set)")
