"""The pipe buffers of a hand-written core group's members: `pl.reserve_buffer(name=,
size=, base=pl.AUTO)` reserves a consumer's pipe slots in its local memory (Mat on the
cube, Vec on the vector core) for the whole kernel. AllocateMemoryAddr lays the tiles out
from the bottom of the space; the buffers go at the top (pl.AUTO) or where the user put
them, and must not meet the tiles or each other. The base chosen is written into the
call, so the `.pto` and the peer's import name one address."""
from __future__ import annotations

from pypto.errors import MemoryOverflowError
from pypto.ir.nodes import CUBE, Assign, Call, Function, FunctionType, MemorySpace
from pypto.ir.ops.cross_core import AUTO
from pypto.ir.visit import walk


def consumer_space(f: Function) -> MemorySpace:
    return MemorySpace.Mat if f.func_type is FunctionType.AIC else MemorySpace.Vec


def reserve(f: Function, chip, top: dict) -> None:
    calls = [s.value for s in walk(f.body)
             if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "system.reserve_buffer"]
    if not calls:
        return
    space = consumer_space(f)
    cap, align = chip.capacity[space], chip.align[space]
    hi = cap
    taken: list[tuple[int, int, str]] = []
    for c in sorted(calls, key=lambda c: c.kwargs.get("base", AUTO) != AUTO):   # explicit ones first
        size, base = int(c.kwargs["size"]), c.kwargs.get("base", AUTO)
        base = getattr(base, "value", base)
        if base == AUTO:
            free_top = min([lo for lo, _, _ in taken] + [hi])
            base = (free_top - size) // align * align
        if base < 0 or base + size > cap:
            raise MemoryOverflowError(f"kernel {f.name!r}: pipe buffer {c.kwargs['name']!r} ({size} bytes at "
                                      f"{base}) does not fit in {space.name} ({cap} bytes on {chip.arch})",
                                      c.span, "make slot_size * slots smaller")
        for lo, end, other in taken:
            if base < end and lo < base + size:
                raise MemoryOverflowError(f"kernel {f.name!r}: pipe buffers {other!r} and {c.kwargs['name']!r} "
                                          f"overlap in {space.name}", c.span, "give them distinct bases, or pl.AUTO")
        taken.append((base, base + size, c.kwargs["name"]))
        c.kwargs["base"] = base
    low = min(lo for lo, _, _ in taken)
    if top.get(space, 0) > low:
        raise MemoryOverflowError(f"kernel {f.name!r}: its tiles use {top[space]} bytes of {space.name} and "
                                  f"its pipe buffers start at {low} ({cap} bytes on {chip.arch})", f.span,
                                  "use smaller tiles, or fewer / smaller pipe slots")


AUTO_RING_SLOTS = 2     # a Group's pipe depth unless pl.cross_core_slot(slot_num=N) says


def auto_ring(f: Function, chip, top: dict, sizes: dict) -> None:
    """A Group's automatic pipes (its crossings between cube and vector tiles, which
    ExpandMixedKernel makes pushes and pops) are rings of slot_num slots in the receiving
    core's space (Mat on the cube, Vec on the vector core), each slot as large as the
    largest tile it receives -- under pl.split each AIV receives half; the received
    tiles live in the slots. Each ring and the kernel's other tiles must fit together.
    sizes: id(alloc pointer) -> bytes."""
    if f.func_type is not FunctionType.Group:
        return
    slots = int(f.attrs.get("slot_num") or AUTO_RING_SLOTS)
    received: dict = {}
    # (imported here: only a Group needs it; a step of AllocateMemoryAddr loads no more of
    # the passes than it uses -- tests/graph/test_impl_closure.py)
    from pypto.passes.expand_mixed_kernel import crossing
    for s in walk(f.body):
        sides = crossing(s)
        if sides is not None:
            received.setdefault(MemorySpace.Mat if sides[1] == CUBE else MemorySpace.Vec, []).append(s.var)
    for space, tiles in received.items():
        halves = 2 if space is MemorySpace.Vec and f.attrs.get("split") else 1
        slot = max(v.type.nbytes() for v in tiles) // halves
        in_ring = {id(m.base): sizes.get(id(m.base), 0) for m in (v.type.memref for v in tiles) if m is not None}
        others = max(0, top.get(space, 0) - sum(in_ring.values()))
        ring, cap = slots * slot, chip.capacity[space]
        if others + ring > cap:
            raise MemoryOverflowError(
                f"kernel {f.name!r} needs {others + ring} bytes of {space.name} but {chip.arch} has "
                f"{cap}: its cross-core pipe ring takes {ring} of them ({slots} slots of {slot} bytes, "
                f"the largest tile it receives) and its other tiles {others}", f.span,
                "give the region a shallower ring with pl.cross_core_slot(slot_num=N), or move "
                "smaller tiles across the cores")
