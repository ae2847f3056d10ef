"""Parsing type text (builtin scalar names and `!pto.*<...>` tokens) into ir types."""
from __future__ import annotations

from .ir import (LocalArrayType, MultiTileType, OpaqueType, PartitionType, PtrType, ScalarType,
                 TensorViewType, TileType, Type)

SCALAR_NAMES = {"index", "i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64",
                "f16", "bf16", "f32", "f64"}


def _shape(body: str) -> tuple[tuple, str]:
    """`4x?xf32` -> ((4, None), "f32"); the element type may hold an x (!pto.f4E2M1x2)."""
    parts = body.strip().split("x")
    n = 0
    while n < len(parts) - 1 and (parts[n] == "?" or parts[n].isdigit()):
        n += 1
    elem = "x".join(parts[n:])
    dims = tuple(None if p == "?" else int(p) for p in parts[:n])
    return dims, elem


def _tile(body: str) -> TileType:
    fields: dict[str, str] = {}
    for item in body.split(","):
        if not item.strip():
            continue
        key, _, val = item.partition("=")
        fields[key.strip()] = val.strip()
    for key in ("loc", "dtype", "rows", "cols"):
        if key not in fields:
            raise ValueError(f"tile_buf type lacks '{key}='")

    def opt_int(key: str, default):
        val = fields.get(key)
        if val is None:
            return default
        return None if val == "?" else int(val)

    rows, cols = int(fields["rows"]), int(fields["cols"])
    loc = fields["loc"]
    known = {"loc", "dtype", "rows", "cols", "v_row", "v_col", "blayout", "slayout",
             "fractal", "pad", "compact"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"tile_buf type has unknown field(s) {', '.join(unknown)}")
    return TileType(
        loc=loc, dtype=fields["dtype"], rows=rows, cols=cols,
        v_row=opt_int("v_row", rows), v_col=opt_int("v_col", cols),
        blayout=fields.get("blayout", "row_major"),
        slayout=fields.get("slayout", "none_box"),
        fractal=int(fields.get("fractal", 1024 if loc == "acc" else 512)),
        pad=int(fields.get("pad", 0)),
        compact=opt_int("compact", None),
    )


# the per-list status pto.tmrgsort (format 2) writes beside its result; kernels never read it
STATUS_VECTOR = "vector<4xi16>"


def parse_type(text: str) -> Type:
    """Raises ValueError with a short reason on malformed text."""
    if text in SCALAR_NAMES:
        return ScalarType(text)
    if text == STATUS_VECTOR:
        return OpaqueType(text)
    if not text.startswith("!"):
        raise ValueError(f"unknown type '{text}'")
    head, lt, rest = text.partition("<")
    body = rest[:-1] if lt else ""
    try:
        if head == "!pto.ptr":
            return PtrType(body.strip())
        if head == "!pto.tensor_view":
            return TensorViewType(*_shape(body))
        if head == "!pto.partition_tensor_view":
            return PartitionType(*_shape(body))
        if head == "!pto.tile_buf":
            return _tile(body)
        if head == "!pto.multi_tile_buf":
            inner, sep, count = body.rpartition(",")
            key, _, n = count.partition("=")
            tile = parse_type(inner.strip())
            if not sep or key.strip() != "count" or not isinstance(tile, TileType):
                raise ValueError("a multi-slot buffer is !pto.multi_tile_buf<!pto.tile_buf<...>, count=N>")
            return MultiTileType(tile, int(n))
        if head == "!pto.local_array":
            dims, elem = _shape(body)
            if len(dims) != 1 or dims[0] is None or dims[0] <= 0 or elem not in SCALAR_NAMES:
                raise ValueError("a local array is !pto.local_array<NxT>, N > 0, T a scalar type")
            return LocalArrayType(dims[0], elem)
    except (TypeError, ValueError) as e:
        raise ValueError(f"malformed {head} type: {e}") from None
    return OpaqueType(text)
