"""GM forwarding: which tile copies the simulator may skip, decided per function.

On the chip a tload copies GM into a tile and a tstore copies a tile back. The simulator's
GM and on-chip buffers are both host memory, so:
- a loaded tile that only the next few ops read, while nothing writes GM, can be read in
  place (`pto::tload_view`: the tile becomes a window onto the partition);
- a tile an op computes only for the tstore right after it can be computed into GM
  (`pto::store_target`: the op writes the partition, the tstore is skipped).
The values read and written are the same; only the copies go. The analysis is
conservative: anything it cannot see through (loops, pipes, syncs, GM writes inside the
window, other tiles that would read the skipped bytes) keeps the copy. The tile library
checks at run time what only the run knows -- a row-major partition, no overlap between
the GM an op reads and the GM it now writes -- and makes the copy as written otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dtype import BY_MLIR
from .analysis import const_int, defining_ops, tile_bytes
from .ir import Func, Op, TileType, Value, walk
from .ops import TILE_OPS, kind_of

# kind -> how many of its leading `ins` the op reads element by element over their valid
# region (the rest are the hardware's scratch or scalars)
READS = {**dict.fromkeys(("unary", "rowexpand", "colexpand", "rowreduce", "colreduce", "cvt", "mov"), 1),
         **dict.fromkeys(("binary", "binary_full", "scalar", "rowexpand_binary", "colexpand_binary",
                          "cmp", "cmps", "sels", "prelu"), 2),
         "sel": 3}
# kinds that write all of their result's valid region without reading what it held
WRITES = {"binary", "binary_full", "scalar", "unary", "rowreduce", "colreduce", "rowexpand_binary",
          "colexpand_binary", "rowexpand", "colexpand", "cvt", "sel", "sels", "prelu", "fill"}
FULL_WRITES = WRITES | {"load", "mov"}
# ops that neither touch GM nor synchronise: a window onto GM may stay open across them
QUIET = {"pto.partition_view", "pto.make_tensor_view", "pto.alloc_tile", "pto.load_scalar",
         "pto.tgetval", "pto.tsetval", "pto.subview", "pto.treshape"}
GM_WRITERS = {"store", "mscatter"}
# ops that place buffers the analysis does not follow: no forwarding in their function
OPAQUE = {"pto.alloc_multi_tile", "pto.multi_tile_get", "pto.reserve_buffer", "pto.import_reserved_buffer"}


@dataclass
class Forwarding:
    loads: set = field(default_factory=set)     # tload ops whose tile reads GM in place
    stores: dict = field(default_factory=dict)  # op -> the tstore of its result (computed into GM)
    hoisted: dict = field(default_factory=dict)  # op -> pure ops emitted before it (they define the partition)


def _pure(op: Op) -> bool:
    return op.name.startswith("arith.") or op.name == "pto.partition_view"


def _quiet(op: Op) -> bool:
    if op.regions:
        return False
    if _pure(op) or op.name in QUIET:
        return True
    return op.name in TILE_OPS and kind_of(op) not in GM_WRITERS


def _reads_only(op: Op, v: Value) -> bool:
    """v is used by op only as an operand it reads element by element."""
    if op.name not in TILE_OPS or op.regions or v in op.group("outs"):
        return False
    n = READS.get(kind_of(op))
    return n is not None and v in op.group("ins")[:n] and v not in op.group("ins")[n:]


def _writes_fully(op: Op, v: Value) -> bool:
    return op.name in TILE_OPS and not op.regions and kind_of(op) in FULL_WRITES \
        and op.group("outs")[:1] == [v] and v not in op.group("ins")


class _Func:
    def __init__(self, f: Func):
        self.ops = list(walk(f.body))
        self.defs = defining_ops(f)
        self.uses: dict[Value, list[Op]] = {}
        for op in self.ops:
            for v in dict.fromkeys(op.all_operands()):
                self.uses.setdefault(v, []).append(op)
        self.opaque = any(op.name in OPAQUE for op in self.ops)
        self.ranges: dict[Value, tuple[str, int, int] | None] = {}
        for op in self.ops:
            if op.name == "pto.alloc_tile":
                self.ranges[op.results[0]] = self._range(op)

    def _range(self, op: Op):
        t: TileType = op.results[0].type
        addr = const_int(op.operands["addr"][0], self.defs) if "addr" in op.operands else None
        if addr is None or t.dtype not in BY_MLIR:
            return None
        return t.loc, addr, addr + tile_bytes(t, BY_MLIR[t.dtype].nbytes)

    def bytes_dead(self, t: Value, block: list[Op], at: int) -> bool:
        """No tile but t reads the bytes t would have held after block[at]: every other
        tile over them lives in this block, is written whole before it is first read (in
        a loop: before it reads what the last round left there), and again before it is
        read after block[at]."""
        mine = self.ranges.get(t)
        if mine is None:
            return False
        space, lo, hi = mine
        where = {id(op): k for k, op in enumerate(block)}
        for u, rng in self.ranges.items():
            if u is t:
                continue
            if rng is None:
                if u.type.loc == space:
                    return False        # an address the analysis cannot see
                continue
            if rng[0] != space or rng[2] <= lo or hi <= rng[1]:
                continue
            uses = [op for op in self.uses.get(u, []) if op is not self.defs[u]]
            if id(self.defs[u]) not in where or any(id(op) not in where for op in uses):
                return False            # lives outside this block, or is used in a nested one
            later = [op for op in uses if where[id(op)] > at]
            for first in (uses[:1], later[:1]):
                if first and not _writes_fully(first[0], u):
                    return False
        return True


def _load(fn: _Func, block: list[Op], k: int) -> bool:
    op = block[k]
    t = op.group("outs")[0]
    alloc = fn.defs.get(t)
    if alloc is None or alloc.name != "pto.alloc_tile" or alloc not in block[:k]:
        return False
    uses = fn.uses.get(t, [])
    if uses[:1] != [op] or len(uses) < 2 or any(u not in block[k + 1:] or not _reads_only(u, t) for u in uses[1:]):
        return False                    # written by the load only, read only by ops after it here
    last = max(block.index(u) for u in uses[1:])
    if not all(_quiet(x) for x in block[k + 1:last]):
        return False                    # GM may change while the window is open
    return fn.bytes_dead(t, block, k)


def _store(fn: _Func, block: list[Op], k: int) -> int | None:
    """The index of the tstore block[k]'s result goes to, when it can be computed into GM."""
    op = block[k]
    if op.name not in TILE_OPS or kind_of(op) not in WRITES or len(op.group("outs")) != 1:
        return None
    t = op.group("outs")[0]
    alloc = fn.defs.get(t)
    if alloc is None or alloc.name != "pto.alloc_tile" or alloc not in block[:k] or t.type.loc != "vec":
        return None
    if t in op.group("ins"):
        return None
    m = k + 1
    while m < len(block) and _pure(block[m]):
        m += 1
    if m == len(block):
        return None
    st = block[m]
    if st.name != "pto.tstore" or st.group("ins")[:1] != [t] or st.attr("atomicType"):
        return None
    part = st.group("outs")[0]
    if part.type is None or getattr(part.type, "elem", None) != t.type.dtype:
        return None
    if fn.uses.get(t) != [op, st]:
        return None
    return m if fn.bytes_dead(t, block, k) else None


def analyse(f: Func) -> Forwarding:
    out = Forwarding()
    fn = _Func(f)
    if fn.opaque:
        return out
    blocks = [f.body] + [r for op in fn.ops for r in op.regions]
    for block in blocks:
        for k, op in enumerate(block):
            if op.name == "pto.tload" and _load(fn, block, k):
                out.loads.add(op)
        for k, op in enumerate(block):
            m = _store(fn, block, k)
            if m is not None:
                out.stores[op] = block[m]
                out.hoisted[op] = block[k + 1:m]
    return out
