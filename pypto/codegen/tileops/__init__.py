"""PTO emission of the tile ops, one module per family (memory, elementwise, reduction,
shape, matmul, indexing, sort, prefetch), each registering its ops' emitters here. An emitter is
`fn(k, v, c, span)`: kernel codegen `k` (pypto.codegen.pto._Kernel), the tile variable
`v` the call `c` defines. The pto op name comes from the op table (OpDef.pto)."""
from __future__ import annotations

from typing import Callable

EMITTERS: dict[str, Callable] = {}
# ops giving a scalar: `fn(k, c, span) -> _Scalar` (also used as statements, the value dropped)
SCALAR_EMITTERS: dict[str, Callable] = {}


def emits(*ops: str):
    """Register the decorated function as the emitter of these tile ops."""
    def register(fn):
        for op in ops:
            EMITTERS[op] = fn
        return fn
    return register


from pypto.codegen.tileops import (comm, cross_core, elementwise, indexing, matmul, memory,  # noqa: E402,F401
                                   reduction, prefetch, shape, sort)
