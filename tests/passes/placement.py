"""A checker of on-chip memory placements, independent of the planners it checks.

A placement is a list of buffers (space, address, size, first statement, last
statement). It is valid when every buffer is aligned and inside its space's capacity,
and two buffers of one space that are live at the same time share no byte. Buffers
come either from a planned kernel's IR (AllocateMemoryAddr: PYPTO or DSA_RP), with
lifetimes computed here from the statements, or from our ptoas's level2 plan of the
kernel's .pto (the PTOAS planner, where the IR carries no addresses).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pypto.ir.nodes import Assign, For, PtrType, TileType, Var
from pypto.ir.visit import bodies, defs, stmt_uses


@dataclass(frozen=True)
class Buffer:
    name: str
    space: str
    addr: int
    size: int
    start: int
    end: int


def check(buffers: list[Buffer], capacity: dict, align: dict, touching_ok: bool = False) -> dict:
    """Assert the placement is valid; returns the bytes used per space. With
    `touching_ok`, a buffer may take the bytes of one whose last use is the statement
    that first writes it (a result written in place over a dying operand)."""
    used = {}
    for b in buffers:
        assert b.addr % align[b.space] == 0, f"{b.name} at {b.addr} is not {align[b.space]}-aligned"
        assert b.addr + b.size <= capacity[b.space], \
            f"{b.name} [{b.addr}, {b.addr + b.size}) exceeds {b.space} capacity {capacity[b.space]}"
        used[b.space] = max(used.get(b.space, 0), b.addr + b.size)
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if a.space != b.space or a.end < b.start or b.end < a.start:
                continue
            if touching_ok and (a.end == b.start or b.end == a.start):
                continue
            assert a.addr + a.size <= b.addr or b.addr + b.size <= a.addr, \
                (f"{a.name} [{a.addr}, {a.addr + a.size}) live {a.start}..{a.end} overlaps "
                 f"{b.name} [{b.addr}, {b.addr + b.size}) live {b.start}..{b.end}")
    return used


def ir_buffers(f) -> list[Buffer]:
    """The allocations of a planned kernel: one buffer per tile.alloc, live from the
    first statement writing a tile in it to the last reading one (to the end of a loop
    that reads it without writing it)."""
    order, loop_of, loop_end = [], {}, {}

    def go(stmts, loops):
        for s in stmts:
            order.append(s)
            loop_of[len(order) - 1] = loops
            if isinstance(s, For):
                for b in bodies(s):
                    go(b, loops + (id(s),))
                loop_end[id(s)] = len(order) - 1
            else:
                for b in bodies(s):
                    go(b, loops)
    go(f.body, ())
    alloc = {}
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            alloc[id(s.var)] = (s.var.name, s.value.kwargs["target_memory"], s.value.args[0].value)
    addr, first, last, def_loops = {}, {}, {}, {}
    for i, s in enumerate(order):
        for v in defs(s):
            m = getattr(v.type, "memref", None)
            if isinstance(v.type, TileType) and m is not None and isinstance(m.base, Var):
                k = id(m.base)
                assert addr.setdefault(k, m.offset) == m.offset, f"{v.name}: two addresses for one buffer"
                if k not in first:
                    first[k], def_loops[k] = i, loop_of[i]
                last[k] = max(last.get(k, i), i)
    for i, s in enumerate(order):
        for v in stmt_uses(s):
            m = getattr(v.type, "memref", None)
            if not (isinstance(v.type, TileType) and m is not None and id(m.base) in first):
                continue
            k, end = id(m.base), i
            for lp in loop_of[i]:
                if lp not in def_loops[k]:
                    end = max(end, loop_end[lp])
            last[k] = max(last[k], end)
    return [Buffer(alloc[k][0], alloc[k][1].value, addr[k], alloc[k][2], first[k], last[k])
            for k in first]


def limits(chip) -> tuple[dict, dict]:
    """Capacity and alignment per space, keyed like Buffer.space ("vec", "mat", ...)."""
    return ({s.value: n for s, n in chip.capacity.items()}, {s.value: n for s, n in chip.align.items()})


def check_kernel(f, chip) -> dict:
    """Check a kernel planned by AllocateMemoryAddr (PYPTO or DSA_RP)."""
    cap, align = limits(chip)
    return check(ir_buffers(f), cap, align)


def check_ptoas(kernel_prog, chip) -> dict:
    """Check our ptoas's level2 plan of a kernel the PTOAS planner left unaddressed. ptoas
    writes a result in place over an operand that dies at that op, so touching
    lifetimes may share bytes."""
    cap, align = limits(chip)
    return check(ptoas_buffers(kernel_prog, chip.arch), cap, {k: 32 for k in align}, touching_ok=True)


_NOTE = re.compile(r"%(\S+) = pto\.alloc_tile .*// planned (\w+)\[(\d+), (\d+)\) live ops (\d+)\.\.(\d+)")


def ptoas_buffers(kernel_prog, arch="a2a3") -> list[Buffer]:
    """Our ptoas's level2 plan of one kernel (a program holding it), read from its
    plan dump."""
    from pypto.codegen.pto import generate_kernel
    from pypto.ptoas import compile_pto
    (k,) = [f for f in kernel_prog.functions if f.is_kernel]
    pto = generate_kernel(kernel_prog, k.name, arch=arch, memory_planner="PTOAS")
    res = compile_pto(pto, arch=arch, level="level2", dump_passes=True)
    out = []
    for line in res.pass_dumps["03_plan_memory"].splitlines():
        m = _NOTE.search(line)
        if m:
            name, space, lo, hi, s, e = m.groups()
            out.append(Buffer(name, space, int(lo), int(hi) - int(lo), int(s), int(e)))
    assert out, "no planned allocations in the ptoas dump"
    return out
