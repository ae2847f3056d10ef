"""Run-time objects behind the annotations of the DSL.

Python evaluates parameter annotations when it defines a function, so
`pl.Tensor[[64, 128], pl.FP16]` and `pl.MemRef("mem_ddr_0", 0, 16384)` must be legal
Python values. The parser never looks at these objects: it reads the annotation's
source (AST). They only record what was written, for introspection and for `@pl.jit`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from pypto.ir.nodes import DynDim


@dataclass(frozen=True)
class Annotation:
    """What `pl.Tensor[...]`, `pl.Tile[...]`, `pl.Scalar[...]`, `pl.Out[...]` evaluate to."""
    kind: str                 # "Tensor" | "Tile" | "Scalar" | "Out" | "InOut"
    args: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"pl.{self.kind}[{', '.join(map(repr, self.args))}]"


class _Subscriptable(type):
    def __getitem__(cls, item):
        args = item if isinstance(item, tuple) else (item,)
        return Annotation(cls.__name__, args)

    def __repr__(cls) -> str:
        return f"pl.{cls.__name__}"


class Tensor(metaclass=_Subscriptable):
    """`pl.Tensor[[M, N], dtype, (pl.MemRef(...))]` — a tensor in DDR. Bare `pl.Tensor`
    is only legal under `@pl.jit`, where shape and dtype come from the call."""


class Tile(metaclass=_Subscriptable):
    """`pl.Tile[[M, N], dtype, (pl.MemRef(...)), (pl.Mem.<space>)]` — an on-chip tile."""


class Scalar(metaclass=_Subscriptable):
    """`pl.Scalar[dtype]` — a scalar value."""


class Out(metaclass=_Subscriptable):
    """`pl.Out[pl.Tensor[...]]` — a parameter the function writes."""


class InOut(metaclass=_Subscriptable):
    """`pl.InOut[pl.Tensor[...]]` — a parameter the function reads and writes."""


class Array(metaclass=_Subscriptable):
    """`pl.Array[4, pl.INT32]` — an on-core array of scalars (pl.array.create)."""


class Ptr(metaclass=_Subscriptable):
    """`pl.Ptr` — the identity of an on-chip allocation (`pl.tile.alloc`)."""


class PrefetchAsyncContext(metaclass=_Subscriptable):
    """`pl.PrefetchAsyncContext` — what pl.prefetch.make_context() gives."""


class AsyncEvent(metaclass=_Subscriptable):
    """`pl.AsyncEvent` — a started prefetch (pl.prefetch.async_prefetch), to wait for."""


class AsyncSession(metaclass=_Subscriptable):
    """`pl.AsyncSession` — the session of a prefetch context (pl.prefetch.session)."""


class MemRef:
    """In a type, where the value lives: `pl.MemRef(base, byte_offset, size)` (explicit
    dumps), or a declared allocation of N equal slots, `pl.MemRef("name", slots=N)` --
    written inline or bound to a module-level name -- with the slot a tile takes chosen
    by subscript: `pl.Tile[[64, 64], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec]`."""

    def __init__(self, base: Any = None, offset: Any = None, size: Any = None, *, slots: Any = None):
        self.base, self.offset, self.size, self.slots = base, offset, size, slots

    def __getitem__(self, index):
        return (self, index)          # only read from the source by the parser

    def __eq__(self, other):
        return isinstance(other, MemRef) and (self.base, self.offset, self.size, self.slots) == \
            (other.base, other.offset, other.size, other.slots)

    def __hash__(self):
        return hash((MemRef, self.base, self.offset, self.size, self.slots))

    def __repr__(self) -> str:
        if self.slots is not None:
            return f"pl.MemRef({self.base!r}, slots={self.slots!r})" if self.base is not None \
                else f"pl.MemRef(slots={self.slots!r})"
        return f"pl.MemRef({self.base!r}, {self.offset!r}, {self.size!r})"


class TileView:
    """`pl.TileView(...)` in explicit dumps (the physical layout); ignored by the parser."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"pl.TileView({', '.join(parts)})"


class TensorView(TileView):
    """`pl.TensorView(valid_shape=[...])` in a tensor type: the part that holds data (what
    pl.set_validshape sets). The reference's stride= / layout= are not built yet."""

    def __repr__(self) -> str:
        return "pl.TensorView" + super().__repr__()[len("pl.TileView"):]


class TensorLayout(enum.Enum):
    """A tensor's layout in DDR (`pl.TensorView(layout=...)`, or a type parameter:
    `pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ]`): ND is row-major; MX_A_ZZ and MX_B_NN
    are the blocked orders of an MX matmul's left and right scales."""
    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    MX_A_ZZ = "MX_A_ZZ"
    MX_B_NN = "MX_B_NN"


class ScopeMode(enum.Enum):
    """`with pl.scope(mode=pl.ScopeMode.MANUAL):` — who manages the runtime scope."""
    AUTO = "AUTO"
    MANUAL = "MANUAL"


def dynamic(name: str) -> DynDim:
    """`M = pl.dynamic("M")`: a dynamic dimension usable in tensor annotations."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"pl.dynamic expects an identifier name, got {name!r}")
    return DynDim(name)
