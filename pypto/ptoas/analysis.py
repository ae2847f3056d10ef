"""Small queries over a function shared by the verifier, planner and emitter."""
from __future__ import annotations

from ..dtype import BY_MLIR
from .arch import ALIGN
from .ir import Func, Op, TileType, Value, walk


def defining_ops(func: Func) -> dict[Value, Op]:
    return {r: op for op in walk(func.body) for r in op.results}


def const_int(v: Value, defs: dict[Value, Op]) -> int | None:
    """The integer a value always holds when it comes from arith.constant, else None."""
    op = defs.get(v)
    if op is not None and op.name == "arith.constant" and isinstance(op.value, int) \
            and not isinstance(op.value, bool):
        return op.value
    return None


def static_valid(v: Value, defs: dict[Value, Op]) -> tuple[int | None, int | None]:
    """A tile value's valid (rows, cols) where known at compile time, None where dynamic."""
    t = v.type
    if not isinstance(t, TileType):
        return (None, None)
    op = defs.get(v)
    if op is not None and op.name == "pto.multi_tile_get":      # a slot: its region's valid
        op = defs.get(op.group("source")[0])
    dims = []
    for key, static, full in (("valid_row", t.v_row, t.rows), ("valid_col", t.v_col, t.cols)):
        if op is not None and op.name in ("pto.alloc_tile", "pto.alloc_multi_tile") and key in op.operands:
            dims.append(const_int(op.operands[key][0], defs))
        else:
            dims.append(static if static is not None else full)
    return dims[0], dims[1]


def tile_bytes(t: TileType, nbytes: int) -> int:
    return t.rows * t.cols * nbytes


def slot_bytes(t: TileType) -> int:
    """Bytes between the slots of a !pto.multi_tile_buf of `t` tiles: each starts aligned."""
    return -(-tile_bytes(t, BY_MLIR[t.dtype].nbytes) // ALIGN) * ALIGN


def shape_str(s) -> str:
    return "x".join("?" if d is None else str(d) for d in s)


def same(a, b) -> bool:
    """Shapes agree where both are known."""
    return all(x is None or y is None or x == y for x, y in zip(a, b))
