"""Data types shared by the language, the IR, codegen and the runtime."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataType:
    name: str      # DSL spelling: pl.<name>
    text: str      # str(): "fp32"
    mlir: str      # .pto spelling: "f32"
    cpp: str       # C++ element type in the tile library
    nbytes: int
    code: int      # pypto_abi.h PYPTO_<name>
    is_float: bool
    # "": computed with; "fp8": 8-bit floats, stored, moved and converted (on a5), not
    # computed with; "fp4": a 4-bit float stored as packed pairs (a5: loaded, stored and
    # cast to a wider float); "hf8": HiFloat8, stored and moved as bits; "unbuilt":
    # exported as the reference does, refused where used
    kind: str = ""
    pack: int = 1  # elements per stored element: 2 for FP4 (one byte holds a pair)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def get_byte(self) -> int:
        return self.nbytes

    def stored(self, shape) -> tuple:
        """A shape in stored elements (FP4: its last dim counts pairs)."""
        shape = tuple(shape)
        if self.pack == 1 or not shape or not isinstance(shape[-1], int):
            return shape
        return shape[:-1] + (shape[-1] // self.pack,)

    def __copy__(self):        # dtypes are singletons: copies of an IR share them
        return self

    def __deepcopy__(self, memo):
        return self


FP32 = DataType("FP32", "fp32", "f32", "float", 4, 0, True)
FP16 = DataType("FP16", "fp16", "f16", "pto::half", 2, 1, True)
BF16 = DataType("BF16", "bfloat16", "bf16", "pto::bfloat16", 2, 2, True)
INT8 = DataType("INT8", "int8", "i8", "int8_t", 1, 3, False)
INT16 = DataType("INT16", "int16", "i16", "int16_t", 2, 4, False)
INT32 = DataType("INT32", "int32", "i32", "int32_t", 4, 5, False)
INT64 = DataType("INT64", "int64", "i64", "int64_t", 8, 6, False)
UINT8 = DataType("UINT8", "uint8", "ui8", "uint8_t", 1, 7, False)
UINT16 = DataType("UINT16", "uint16", "ui16", "uint16_t", 2, 10, False)
UINT32 = DataType("UINT32", "uint32", "ui32", "uint32_t", 4, 11, False)
UINT64 = DataType("UINT64", "uint64", "ui64", "uint64_t", 8, 12, False)
BOOL = DataType("BOOL", "bool", "i1", "bool", 1, 8, False)
INDEX = DataType("INDEX", "index", "index", "int64_t", 8, 9, False)

FP8E4M3FN = DataType("FP8E4M3FN", "fp8_e4m3fn", "f8E4M3FN", "pto::fp8_e4m3fn", 1, 13, True, "fp8")
FP8E5M2 = DataType("FP8E5M2", "fp8_e5m2", "f8E5M2", "pto::fp8_e5m2", 1, 14, True, "fp8")
FP8E8M0 = DataType("FP8E8M0", "fp8_e8m0", "!pto.f8E8M0", "pto::fp8_e8m0", 1, 15, True, "fp8")
# the reference's other narrow formats: named, not built here
# HiFloat8 (a5): stored, moved and gathered as its bits (a uint8 tensor carries them); its
# conversions are not built
HF8 = DataType("HF8", "hifloat8", "!pto.hif8", "pto::hif8", 1, 16, True, "hf8")
# FP4 (e2m1): shapes count elements; the storage, the .pto and the tile library count
# pairs (!pto.f4E2M1x2, one byte: the even element in the low nibble)
FP4 = DataType("FP4", "fp4", "!pto.f4E2M1x2", "pto::fp4x2", 1, 17, True, "fp4", 2)
HF4 = DataType("HF4", "hifloat4", "!pto.hif4", "", 0, 18, True, "unbuilt")
INT4 = DataType("INT4", "int4", "i4", "", 0, 19, False, "unbuilt")
UINT4 = DataType("UINT4", "uint4", "ui4", "", 0, 20, False, "unbuilt")

# the id of a submitted task (pl.submit / pl.at(...) as tid), held by an orchestration;
# not an element type: no tile or tensor holds one
TASK_ID = DataType("TASK_ID", "task_id", "i64", "int64_t", 8, 21, False, "task")

FP8 = (FP8E4M3FN, FP8E5M2, FP8E8M0)
UNBUILT = (HF4, INT4, UINT4)
ALL = (FP32, FP16, BF16, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, BOOL, INDEX) + FP8 \
    + (FP4, HF8) + UNBUILT
UNSIGNED = (UINT8, UINT16, UINT32, UINT64)
BY_NAME = {d.name: d for d in ALL + (TASK_ID,)}
BY_CODE = {d.code: d for d in ALL}
BY_MLIR = {d.mlir: d for d in ALL}
