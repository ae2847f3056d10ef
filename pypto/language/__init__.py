"""`import pypto.language as pl` — the kernel language.

Kernels are written as Python, read by the parser as source and never executed:
`@pl.program` classes, `@pl.function` methods, `pl.Tensor[...]` annotations and the
`pl.<op>` operators (`pl.tile.<op>` / `pl.tensor.<op>` fully qualified).
"""
from __future__ import annotations

import importlib
import importlib.util

from pypto.dtype import (BF16, BOOL, FP4, FP8E4M3FN, FP8E5M2, FP8E8M0, FP16, FP32, HF4, HF8, INDEX, INT4,
                         INT8, INT16, INT32, INT64, TASK_ID, UINT4, UINT8, UINT16, UINT32, UINT64,
                         DataType)
from pypto.ir.nodes import ArgDir as adir
from pypto.ir.nodes import (AtomicType, DynDim, ForKind, FunctionType, Level, MemorySpace, PadValue, ParamDirection,
                            PipeType, Role, SplitMode)
from pypto.language import dsl
from pypto.language.dsl import (DSLCallError, OPERATORS, at, cast, cluster, comm, const, manual_scope, max, min,
                                parallel, pipeline, range, scope, spmd, spmd_submit, submit, system, tensor,
                                tile, array, prefetch, split_aiv, unroll, while_, cond, yield_)
from pypto.language.optimizations import cross_core_slot, split
from pypto.language.parser import function, loads, parse, program
from pypto.language.typing import (Annotation, Array, AsyncEvent, AsyncSession, InOut, MemRef, Out,
                                   PrefetchAsyncContext, Ptr, Scalar, ScopeMode,
                                   Tensor, TensorLayout, TensorView, Tile, TileView, dynamic)

Mem = MemorySpace
AUTO = -1                  # pl.reserve_buffer(base=pl.AUTO): the planner picks the address
ND, DN, NZ, MX_A_ZZ, MX_B_NN = (TensorLayout.ND, TensorLayout.DN, TensorLayout.NZ, TensorLayout.MX_A_ZZ,
                                TensorLayout.MX_B_NN)

globals().update(OPERATORS)

__all__ = sorted(
    ["FP32", "FP16", "BF16", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
     "UINT64", "BOOL", "INDEX", "TASK_ID", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF8", "FP4", "HF4", "INT4", "UINT4",
     "DataType", "Tensor", "Tile", "Scalar", "Array", "Out", "InOut", "Ptr", "PrefetchAsyncContext", "AsyncEvent", "AsyncSession", "MemRef", "TileView", "TensorView", "TensorLayout", "ND", "DN", "NZ", "MX_A_ZZ", "MX_B_NN",
     "Mem", "MemorySpace", "PadValue", "AtomicType", "FunctionType", "Level", "Role", "ScopeMode", "ForKind",
     "SplitMode", "PipeType", "split", "cross_core_slot", "AUTO",
     "ParamDirection", "DynDim", "Annotation", "adir", "dynamic", "program", "function", "at", "cluster",
     "scope", "pipeline", "manual_scope", "comm", "submit", "spmd", "spmd_submit", "split_aiv", "system", "range", "parallel", "unroll", "array", "prefetch", "while_", "cond", "yield_", "const", "cast", "min", "max", "parse",
     "loads", "tile", "tensor", "DSLCallError"] + list(OPERATORS)
    + (["jit"] if importlib.util.find_spec("pypto.jit") is not None else []))


def __getattr__(name: str):
    if name == "RUNTIME":       # signature-mode marker: keep a scalar parameter unspecialised
        from pypto.jit import RUNTIME
        return RUNTIME
    if name == "jit":
        if importlib.util.find_spec("pypto.jit") is None:
            raise AttributeError("pl.jit is not available: the pypto.jit module is not installed")
        mod = importlib.import_module("pypto.jit")
        jit = getattr(mod, "jit", None)
        if jit is None:
            raise AttributeError("pypto.jit does not define `jit`")
        return jit
    raise _NotInLanguage(name)


class _NotInLanguage(AttributeError):
    """`pl.<name>` does not exist. The suggestion is computed only when the message is
    shown: probing with getattr(pl, name, None) must stay cheap."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        import difflib
        close = difflib.get_close_matches(self.name, [n for n in globals() if not n.startswith("_")], n=1)
        more = f"; did you mean pl.{close[0]}?" if close else ""
        return f"pl.{self.name} is not part of pypto.language{more}"


def __dir__():
    return __all__
