"""AllocateMemoryAddr: every on-chip allocation gets a byte address inside its memory
space, aligned as the chip's planner requires; a kernel that does not fit is an error
naming the kernel, the space, the bytes needed and the capacity.

How addresses are chosen depends on the planner:
- PYPTO: MemoryReuse has already merged the buffers that may share; the remaining
  allocations are laid out one after another.
- DSA_RP: capacity-constrained packing, with no merging and no in-place reuse. Each
  allocation's lifetime is the span of statements from its first write to its last
  read (a value read in a loop it was not written in lives to the loop's end). The
  allocations are placed largest first (then earliest), each at the lowest aligned
  address where it overlaps no already placed allocation whose lifetime overlaps its
  own: buffers live at the same time never share bytes, buffers that are not may.
A hand-written group's pipe buffers (pl.reserve_buffer) go at the top of their space,
and a Group half's automatic pipe ring must fit beside its tiles (pipe_buffers). (PTOAS skips this pass: our ptoas plans memory.)
"""
from __future__ import annotations

from pypto.errors import MemoryOverflowError
from pypto.ir.nodes import Assign, Call, Function, MemRef, Program, PtrType, Var, plan_pool
from pypto.ir.visit import defs, walk
from pypto.passes.memory_reuse import lifetimes
from pypto.passes.pipe_buffers import auto_ring, reserve as reserve_pipe_buffers

NAME = "AllocateMemoryAddr"
READS = ("backend_type", "memory_planner")


def run(prog: Program, opts) -> Program:
    for f in prog.functions:
        if f.is_kernel:
            if opts.memory_planner == "DSA_RP":
                top = pack_addresses(f, opts.chip)
            else:
                top = assign_addresses(f, opts.chip)
            reserve_pipe_buffers(f, opts.chip, top)
            auto_ring(f, opts.chip, top, {id(p): size for p, _, size in _allocs(f)})
    return prog


def _align(x, a):
    return (x + a - 1) // a * a


def _allocs(f: Function):
    """[(ptr var, space, size)] of the kernel's tile.alloc statements, in order."""
    out = []
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            out.append((s.var, plan_pool(s.value.kwargs["target_memory"]), s.value.args[0].value))
    return out


def assign_addresses(f: Function, chip) -> None:
    top: dict = {}
    addr: dict[int, int] = {}
    for ptr, space, size in _allocs(f):
        at = _align(top.get(space, 0), chip.align[space])
        addr[id(ptr)] = at
        top[space] = at + size
    _check(f, chip, top, "let buffers whose lifetimes don't overlap share memory (memory_planner=PYPTO)")
    _apply(f, addr)
    return top


def pack_addresses(f: Function, chip) -> None:
    _, life = lifetimes(f)
    allocs = _allocs(f)
    whole = (0, 1 << 62)                     # an allocation nothing writes: live throughout
    span = {id(p): tuple(life[id(p)][:2]) if id(p) in life else whole for p, _, _ in allocs}
    order = sorted(allocs, key=lambda a: (-a[2], span[id(a[0])][0], allocs.index(a)))
    placed: list[tuple] = []                 # (space, start, end, addr, size)
    addr: dict[int, int] = {}
    top: dict = {}
    for ptr, space, size in order:
        s, e = span[id(ptr)]
        busy = sorted((a, a + n) for sp, ps, pe, a, n in placed
                      if sp == space and ps <= e and s <= pe)
        at = 0
        for lo, hi in busy:                  # first fit on the address line
            if _align(at, chip.align[space]) + size <= lo:
                break
            at = max(at, hi)
        at = _align(at, chip.align[space])
        addr[id(ptr)] = at
        placed.append((space, s, e, at, size))
        top[space] = max(top.get(space, 0), at + size)
    _check(f, chip, top, "use memory_planner=PYPTO, which also lets a result overwrite an operand "
                         "that dies at the same op")
    _apply(f, addr)
    return top


def _check(f: Function, chip, top: dict, hint: str) -> None:
    for space, used in top.items():
        cap = chip.capacity[space]
        if cap == 0:
            raise MemoryOverflowError(
                f"kernel {f.name!r} uses {space.name} tiles, which {chip.arch} does not have: MX "
                f"matmuls run on a5", f.span, "compile for platform='a5sim' (backend Ascend950)")
        if used > cap:
            raise MemoryOverflowError(
                f"kernel {f.name!r} needs {used} bytes of {space.name} but {chip.arch} has {cap}",
                f.span, "use smaller tiles (loop over chunks with pl.range), or " + hint)


def _apply(f: Function, addr: dict) -> None:
    for s in walk(f.body):
        for v in defs(s):
            m = getattr(v.type, "memref", None)
            if m is not None and isinstance(m.base, Var) and id(m.base) in addr:
                v.type = type(v.type)(**{**v.type.__dict__,
                                        "memref": MemRef(m.base, addr[id(m.base)], m.size)})
        if isinstance(s, Assign) and isinstance(s.value, Call):
            s.value.type = s.var.type
