"""The values kernel codegen binds IR variables to: a tensor parameter, a tile, a scalar,
an on-core array (their MLIR names and types), and the helpers naming them."""
from __future__ import annotations

import re
from dataclasses import dataclass

from pypto.ir.nodes import Const, TileType, Var

_RESERVED = re.compile(r"^(arg\d+|cn?\d+_\w+|cst(_\d+)?|true|false|\d.*)$")


@dataclass
class _Tensor:
    param: Var
    arg: str                 # %argN
    index: int               # position among tensor params
    view: str | None = None  # %x_view once used
    tview: str | None = None  # %x_tview: the transposed (DN) view of a 2-D tensor, once used


@dataclass
class _Tile:
    ssa: str
    ty: str                  # full !pto.tile_buf<...> text
    tile: TileType
    valid: tuple = ()        # SSA values of the valid rows/cols it was allocated with


@dataclass
class _Scalar:
    ssa: str
    ty: str                  # mlir type


@dataclass
class _Array:
    """An on-core array (pto.declare_local_array): written in place by its updates."""
    ssa: str
    ty: str                  # !pto.local_array<NxT>
    elem: str                # mlir element type


def _mlir_name(hint: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_$.\-]", "_", hint) or "v"
    if _RESERVED.match(s):
        s = s + "_v"
    return s


def _same_storage(a: TileType, b: TileType) -> bool:
    return (a.memref is not None and b.memref is not None and a.memref.base is b.memref.base
            and a.memref.offset == b.memref.offset)




def _const_int(e):
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
