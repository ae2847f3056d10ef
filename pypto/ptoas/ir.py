"""ptoas's own IR: the parsed .pto as plain dataclasses (types, values, ops, funcs).

Types print back in MLIR syntax, so a printed module parses again (see printer.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


# ------------------------------------------------------------------ types
@dataclass(frozen=True)
class ScalarType:
    name: str  # "index", "i64", "i32", "f32", "f16", "i1", ...

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64")


@dataclass(frozen=True)
class PtrType:
    elem: str

    def __str__(self) -> str:
        return f"!pto.ptr<{self.elem}>"


@dataclass(frozen=True)
class LocalArrayType:
    """!pto.local_array<NxT>: a kernel's stack-local array of scalars."""
    extent: int
    elem: str

    def __str__(self) -> str:
        return f"!pto.local_array<{self.extent}x{self.elem}>"


def _shape_text(shape: tuple) -> str:
    return "x".join("?" if d is None else str(d) for d in shape)


@dataclass(frozen=True)
class TensorViewType:
    shape: tuple  # ints or None for "?"
    elem: str

    def __str__(self) -> str:
        return f"!pto.tensor_view<{_shape_text(self.shape)}x{self.elem}>"


@dataclass(frozen=True)
class PartitionType:
    shape: tuple
    elem: str

    def __str__(self) -> str:
        return f"!pto.partition_tensor_view<{_shape_text(self.shape)}x{self.elem}>"


@dataclass(frozen=True)
class TileType:
    loc: str  # memory space: vec, mat, left, right, acc, bias, scaling
    dtype: str
    rows: int
    cols: int
    v_row: int | None  # None = "?" (dynamic, given by the alloc's valid_row operand)
    v_col: int | None
    blayout: str = "row_major"
    slayout: str = "none_box"
    fractal: int = 512
    pad: int = 0
    compact: int | None = None

    def __str__(self) -> str:
        vr = "?" if self.v_row is None else self.v_row
        vc = "?" if self.v_col is None else self.v_col
        text = (f"!pto.tile_buf<loc={self.loc}, dtype={self.dtype}, rows={self.rows}, "
                f"cols={self.cols}, v_row={vr}, v_col={vc}, blayout={self.blayout}, "
                f"slayout={self.slayout}, fractal={self.fractal}, pad={self.pad}")
        if self.compact is not None:
            text += f", compact={self.compact}"
        return text + ">"

    @property
    def boxed(self) -> bool:
        return self.slayout != "none_box"


@dataclass(frozen=True)
class MultiTileType:
    """`!pto.multi_tile_buf<!pto.tile_buf<...>, count=N>`: N equal slots of one buffer
    (pto.alloc_multi_tile), each a tile of `tile`'s type (pto.multi_tile_get)."""
    tile: TileType
    count: int

    def __str__(self) -> str:
        return f"!pto.multi_tile_buf<{self.tile}, count={self.count}>"


@dataclass(frozen=True)
class OpaqueType:
    """Any type ptoas does not model (printed back verbatim; ops reject it)."""
    text: str

    def __str__(self) -> str:
        return self.text


Type = Union[ScalarType, PtrType, TensorViewType, PartitionType, TileType, MultiTileType, LocalArrayType,
             OpaqueType]


# ------------------------------------------------------------------ values and ops
@dataclass(frozen=True)
class SrcLoc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def mlir(self) -> str:
        return f'loc("{self.file}":{self.line}:{self.col})'


@dataclass(eq=False)
class Value:
    """An SSA value. kind: "arg" (function/loop argument), "result", or "undefined"
    (a use the parser could not resolve; the verifier reports it)."""
    name: str  # without the leading '%'
    type: Type | None
    kind: str = "result"

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=False)
class Op:
    """One operation. Operands live in named groups in their syntax order, e.g.
    ins/outs for pto compute ops, shape/strides for make_tensor_view, addr/valid_row/
    valid_col for alloc_tile, args for arith ops, bounds/inits for scf.for."""
    name: str
    results: list[Value] = field(default_factory=list)
    operands: dict[str, list[Value]] = field(default_factory=dict)
    types: dict[str, list[Type]] = field(default_factory=dict)  # declared types per group
    attrs: dict[str, str] = field(default_factory=dict)  # attr-dict entries, raw text
    operand_attrs: dict[int, dict[str, str]] = field(default_factory=dict)  # ins(%x{...})
    value: object = None  # arith.constant literal, cmpi/cmpf predicate
    regions: list[list["Op"]] = field(default_factory=list)
    region_args: list[list[Value]] = field(default_factory=list)
    line: int = 0
    col: int = 0
    loc: SrcLoc | None = None

    def group(self, name: str) -> list[Value]:
        return self.operands.get(name, [])

    def all_operands(self) -> list[Value]:
        return [v for vs in self.operands.values() for v in vs]

    def attr(self, key: str) -> str | None:
        if key in self.attrs:
            return self.attrs[key]
        for d in self.operand_attrs.values():
            if key in d:
                return d[key]
        return None


@dataclass(eq=False)
class Func:
    name: str
    args: list[Value]
    body: list[Op]
    attrs: dict[str, str] = field(default_factory=dict)
    result_types: list[Type] = field(default_factory=list)
    line: int = 0
    col: int = 0

    @property
    def kernel_kind(self) -> str:
        """"vector", "cube" or "" (plain InCore)."""
        text = self.attrs.get("pto.kernel_kind", "")
        for kind in ("vector", "cube"):
            if f"<{kind}>" in text:
                return kind
        return ""


@dataclass(eq=False)
class Module:
    funcs: list[Func]
    attrs: dict[str, str] = field(default_factory=dict)

    @property
    def target_arch(self) -> str | None:
        text = self.attrs.get("pto.target_arch")
        return text.strip('"') if text else None


def walk(ops: list[Op]):
    """Pre-order over ops and their nested regions."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from walk(region)
