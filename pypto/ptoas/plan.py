"""Memory planning for --pto-level=level2: give every alloc_tile a byte offset.

Per space, linear scan over the op list: a tile's buffer lives from its first use to its
last use (a use inside a loop that does not contain the alloc keeps the buffer alive for
the whole loop, since the next iteration comes back to it). Buffers whose lifetimes do not
overlap share memory; offsets are 32-byte aligned; first fit, lowest offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dtype import BY_MLIR
from .analysis import slot_bytes, tile_bytes
from .arch import ALIGN, Arch
from .errors import op_error
from .ir import Func, Module, Op, ScalarType, TileType, Value, walk
from .ops import TILE_OPS


@dataclass(eq=False)
class Buffer:
    alloc: Op
    value: Value
    space: str
    size: int
    start: int = -1
    end: int = -1
    offset: int = -1
    aliases: list[Value] = field(default_factory=list)


def _number(ops: list[Op], loops: tuple, pos: dict, enclosing: dict, spans: dict) -> None:
    for op in ops:
        pos[op] = len(pos)
        enclosing[op] = loops
        inner = loops + (op,) if op.name == "scf.for" else loops
        for region in op.regions:
            _number(region, inner, pos, enclosing, spans)
        if op.name == "scf.for":
            spans[op] = (pos[op], len(pos) - 1)


def _lifetimes(f: Func) -> tuple[list[Buffer], dict[int, Op], dict[Value, Buffer]]:
    pos: dict[Op, int] = {}
    enclosing: dict[Op, tuple] = {}
    spans: dict[Op, tuple[int, int]] = {}
    _number(f.body, (), pos, enclosing, spans)
    buffers: list[Buffer] = []
    owner: dict[Value, Buffer] = {}
    for op in walk(f.body):
        if op.name == "pto.alloc_tile":
            t: TileType = op.results[0].type
            size = -(-tile_bytes(t, BY_MLIR[t.dtype].nbytes) // ALIGN) * ALIGN
            b = Buffer(op, op.results[0], t.loc, size)
            buffers.append(b)
            owner[op.results[0]] = b
        elif op.name == "pto.alloc_multi_tile":   # one buffer of N slots, never split or shared
            mt = op.results[0].type
            b = Buffer(op, op.results[0], mt.tile.loc, slot_bytes(mt.tile) * mt.count)
            buffers.append(b)
            owner[op.results[0]] = b
        elif op.name in ("pto.treshape", "pto.subview", "pto.multi_tile_get"):  # views of the same bytes
            b = owner.get(op.group("source")[0])
            if b is not None:
                owner[op.results[0]] = b
                b.aliases.append(op.results[0])
    alloc_of = {b: b.alloc for b in buffers}
    for op in walk(f.body):
        for v in op.all_operands():
            b = owner.get(v)
            if b is None:
                continue
            lo = hi = pos[op]
            outer = [lp for lp in enclosing[op] if lp not in enclosing[alloc_of[b]]]
            if outer:
                lo, hi = spans[outer[0]]
            b.start = lo if b.start < 0 else min(b.start, lo)
            b.end = max(b.end, hi)
    for b in buffers:
        if b.start < 0:  # never used: give it a point lifetime at its alloc
            b.start = b.end = pos[b.alloc]
    return buffers, {p: op for op, p in pos.items()}, owner


# Ops that read and write element (i, j) in step, so dst may be the very buffer of a
# same-shaped source that dies at this op (pypto's planner reuses it the same way).
INPLACE_KINDS = {"binary", "binary_full", "scalar", "unary", "rowexpand_binary",
                 "colexpand_binary", "cvt"}


def _inplace_sources(op: Op, b: Buffer, owner: dict) -> list:
    spec = TILE_OPS.get(op.name)
    if spec is None or spec.kind not in INPLACE_KINDS or op.group("outs")[0] is not b.value:
        return []
    out_t: TileType = b.value.type
    found = []
    for v in op.group("ins"):
        t = v.type
        if isinstance(t, TileType) and v in owner and owner[v] is not b \
                and owner[v].alloc.name == "pto.alloc_tile" and (t.rows, t.cols) == \
                (out_t.rows, out_t.cols) and BY_MLIR[t.dtype].nbytes == BY_MLIR[out_t.dtype].nbytes:
            found.append(owner[v])
    return found


def _fits_at(b: Buffer, offset: int, placed: list[Buffer], ignore: Buffer) -> bool:
    return all(p is ignore or p.space != b.space or not (p.start <= b.end and b.start <= p.end)
               or offset + b.size <= p.offset or p.offset + p.size <= offset for p in placed)


def _first_fit(b: Buffer, placed: list[Buffer]) -> int:
    busy = sorted((p.offset, p.offset + p.size) for p in placed
                  if p.space == b.space and p.start <= b.end and b.start <= p.end)
    offset = 0
    for lo, hi in busy:
        if offset + b.size <= lo:
            break
        offset = max(offset, -(-hi // ALIGN) * ALIGN)
    return offset


def _unique_name(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def plan_func(f: Func, arch: Arch, source_name: str = "<pto>") -> tuple[dict[str, int], dict[Op, str]]:
    """Assign offsets in place (adds `addr = %cN_i64` operands and their constants).
    Returns bytes used per space and a note per alloc for the pass dump."""
    buffers, op_at, owner = _lifetimes(f)
    placed: list[Buffer] = _reserve(f, arch, len(op_at), source_name)
    for b in sorted(buffers, key=lambda b: (b.start, b.end)):
        b.offset = -1
        for src in _inplace_sources(op_at[b.start], b, owner):
            if src.end == b.start and src.offset >= 0 and src.size >= b.size \
                    and _fits_at(b, src.offset, placed, src):
                b.offset = src.offset
                break
        if b.offset < 0:
            b.offset = _first_fit(b, placed)
        cap = arch.capacity[b.space]
        if b.offset + b.size > cap:
            live = [p for p in placed if p.space == b.space and p.start <= b.end and b.start <= p.end]
            raise op_error(b.alloc, f"function @{f.name}: '{b.space}' needs {b.offset + b.size} bytes "
                                    f"but has {cap} on {arch.name} ({len(live) + 1} tiles live at once "
                                    f"when %{b.value.name} ({b.size} bytes) is placed)", source_name)
        placed.append(b)
    taken = {a.name for a in f.args} | {r.name for op in walk(f.body) for r in op.results} \
        | {a.name for op in walk(f.body) for args in op.region_args for a in args}
    consts: dict[int, Value] = {}
    for b in buffers:
        if b.offset not in consts:
            consts[b.offset] = Value(_unique_name(f"c{b.offset}_i64", taken), ScalarType("i64"))
        b.alloc.operands = {"addr": [consts[b.offset]], **b.alloc.operands}
    const_ops = [Op("arith.constant", results=[v], value=off, line=f.line, col=f.col)
                 for off, v in sorted(consts.items())]
    f.body[:0] = const_ops
    used: dict[str, int] = {}
    for b in placed:                    # (the tiles and the reserved pipe buffers)
        used[b.space] = max(used.get(b.space, 0), b.offset + b.size)
    notes = {b.alloc: f"planned {b.space}[{b.offset}, {b.offset + b.size}) live ops {b.start}..{b.end}"
             for b in buffers}
    return used, notes


def _reserve(f: Func, arch: Arch, n_ops: int, source_name: str) -> list[Buffer]:
    """Buffers a cross-core pipe reserves without a base (auto = true): stacked down from
    the top of their space, live for the whole function, so no tile is placed over them.
    Their op gets the base (auto = false) for the emitter and for the peer that imports it."""
    top: dict[str, int] = {}
    out = []
    for op in walk(f.body):
        if op.name != "pto.reserve_buffer" or op.attrs.get("auto") == "false":
            continue
        space = (op.attrs.get("location") or "").replace("#pto.address_space<", "").rstrip(">")
        size = -(-int(op.attrs["size"]) // ALIGN) * ALIGN
        base = (top.get(space, arch.capacity[space]) - size) // ALIGN * ALIGN
        if base < 0:
            raise op_error(op, f"function @{f.name}: the reserved buffers of '{space}' need more than its "
                               f"{arch.capacity[space]} bytes", source_name)
        top[space] = base
        op.attrs["auto"], op.attrs["base"] = "false", str(base)
        out.append(Buffer(op, op.results[0], space, size, 0, max(n_ops - 1, 0), base))
    return out


def plan(module: Module, arch: Arch, source_name: str = "<pto>") -> tuple[dict, dict]:
    usage, notes = {}, {}
    for f in module.funcs:
        usage[f.name], n = plan_func(f, arch, source_name)
        notes.update(n)
    return usage, notes
