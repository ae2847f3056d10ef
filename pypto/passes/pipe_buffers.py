"""The pipe buffers of a hand-written core group's members: `pl.reserve_buffer(name=,
size=, base=pl.AUTO)` reserves a consumer's pipe slots in its local memory (Mat on the
cube, Vec on the vector core) for the whole kernel. AllocateMemoryAddr lays the tiles out
from the bottom of the space; the buffers go at the top (pl.AUTO) or where the user put
them, and must not meet the tiles or each other. The base chosen is written into the
call, so the `.pto` and the peer's import name one address."""
from __future__ import annotations

from pypto.errors import MemoryOverflowError
from pypto.ir.nodes import Assign, Call, Function, FunctionType, MemorySpace
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
