"""DataType <-> numpy / torch element types, and scalar bit patterns.

numpy and torch are imported only inside the functions that need them.
"""
from __future__ import annotations

import struct
import sys
from typing import Any

from pypto import dtype as _dt
from pypto.dtype import DataType

BY_TEXT = {d.text: d for d in _dt.ALL}

# DataType.name -> numpy dtype name (bf16 is stored as its raw 16-bit pattern)
_NUMPY = {"FP32": "float32", "FP16": "float16", "BF16": "uint16", "INT8": "int8",
          "INT16": "int16", "INT32": "int32", "INT64": "int64", "UINT8": "uint8",
          "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
          "BOOL": "bool", "INDEX": "int64", "FP8E4M3FN": "uint8", "FP8E5M2": "uint8",
          "FP8E8M0": "uint8", "FP4": "uint8", "HF8": "uint8"}
_TORCH = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16", "INT8": "int8",
          "INT16": "int16", "INT32": "int32", "INT64": "int64", "UINT8": "uint8",
          "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
          "BOOL": "bool", "INDEX": "int64", "FP8E4M3FN": "float8_e4m3fn", "FP8E5M2": "float8_e5m2",
          "FP8E8M0": "float8_e8m0fnu", "FP4": "float4_e2m1fn_x2", "HF8": "uint8"}


def to_dtype(value: Any) -> DataType:
    """Accept a DataType, its text ("fp32"), name ("FP32"), MLIR spelling ("f32"),
    its ABI code, or a numpy/torch dtype."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value in _dt.BY_CODE:
            return _dt.BY_CODE[value]
    elif isinstance(value, str):
        for table in (BY_TEXT, _dt.BY_NAME, _dt.BY_MLIR):
            if value in table:
                return table[value]
        up = value.upper()
        if up in _dt.BY_NAME:
            return _dt.BY_NAME[up]
        if value.lower() in ("bf16",):
            return _dt.BF16
    else:
        found = from_torch_dtype(value) if _is_torch_dtype(value) else None
        if found is None:
            found = _from_numpy_dtype_obj(value)
        if found is not None:
            return found
    raise ValueError(f"unknown data type {value!r}; expected one of "
                     f"{', '.join(d.text for d in _dt.ALL)}")


def _is_torch_dtype(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.dtype)


def _from_numpy_dtype_obj(value: Any):
    try:
        import numpy as np
        return from_numpy_dtype(np.dtype(value))
    except TypeError:
        return None


def numpy_dtype(d: DataType):
    import numpy as np
    return np.dtype(_NUMPY[d.name])


def torch_name(d: DataType) -> str:
    """The torch dtype's attribute name ("bfloat16"), without importing torch."""
    return _TORCH[d.name]


def torch_dtype(d: DataType):
    import torch
    return getattr(torch, torch_name(d))


def from_numpy_dtype(npd) -> DataType | None:
    """The DataType a numpy array of this dtype can stand for (uint16 stands for bf16)."""
    name = npd.name
    for key, value in _NUMPY.items():
        if value == name and key not in ("INDEX",):
            return _dt.BY_NAME[key]
    return None


_FROM_TORCH: dict = {}       # torch dtype -> DataType | None, filled as they are met


def from_torch_dtype(td) -> DataType | None:
    try:
        return _FROM_TORCH[td]
    except KeyError:
        pass
    text = str(td).replace("torch.", "")
    found = None
    for key, value in _TORCH.items():
        if value == text and key != "INDEX":
            found = _dt.BY_NAME[key]
            break
    _FROM_TORCH[td] = found
    return found


def accepts(param: DataType, actual: DataType) -> bool:
    """Whether a tensor of dtype `actual` may be passed for a parameter of `param`."""
    if param is actual or param == actual:
        return True
    # a dtype torch computes little with (uint16 / uint32 / uint64) or lacks (HiFloat8): a
    # torch tensor of the same width carries its bits (as the reference's harness passes them)
    return param.name == "INDEX" and actual.name == "INT64" or param.name in _BITS_CARRIED_BY \
        and actual.name == _BITS_CARRIED_BY[param.name]


_BITS_CARRIED_BY = {"UINT16": "INT16", "UINT32": "INT32", "UINT64": "INT64",
                       "HF8": "UINT8"}    # (torch has no HiFloat8: a uint8 tensor holds its bits)


def accepts_numpy(param: DataType, npd) -> bool:
    return npd == numpy_dtype(param)


_MASK64 = (1 << 64) - 1


def scalar_bits(value: Any, d: DataType) -> int:
    """The uint64 bit pattern a scalar of type `d` travels as: floats are bit-cast in
    their own width (fp32 in the low 32 bits, fp16/bf16 in the low 16), integers are
    two's complement sign-extended to 64 bits, bool is 0/1."""
    if hasattr(value, "item") and callable(value.item):  # numpy scalar / 0-d tensor
        value = value.item()
    if d.is_float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number for a {d} scalar, got {type(value).__name__}")
        if d.name == "FP32":
            return struct.unpack("<I", struct.pack("<f", float(value)))[0]
        if d.name == "FP16":
            return struct.unpack("<H", struct.pack("<e", float(value)))[0]
        # bf16: round-to-nearest-even from fp32
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
            return 0x7FC0
        bits += 0x7FFF + ((bits >> 16) & 1)
        return (bits >> 16) & 0xFFFF
    if d.name == "BOOL":
        if not isinstance(value, (bool, int)):
            raise TypeError(f"expected a bool for a {d} scalar, got {type(value).__name__}")
        return 1 if value else 0
    if isinstance(value, float):
        if not value.is_integer():
            raise TypeError(f"expected an integer for a {d} scalar, got {value!r}")
        value = int(value)
    if not isinstance(value, int):
        raise TypeError(f"expected an integer for a {d} scalar, got {type(value).__name__}")
    bits = 8 * d.nbytes
    lo, hi = (0, (1 << bits) - 1) if d in _dt.UNSIGNED else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not lo <= value <= hi:
        raise ValueError(f"scalar {value} does not fit in {d}")
    return value & _MASK64
