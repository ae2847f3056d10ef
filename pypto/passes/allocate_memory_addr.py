"""AllocateMemoryAddr: every on-chip allocation gets a byte address inside its memory
space, aligned as the chip's planner requires; a kernel that does not fit is an error
naming the kernel, the space, the bytes needed and the capacity."""
from __future__ import annotations

from pypto.errors import MemoryOverflowError
from pypto.ir.nodes import Assign, Call, Function, MemRef, Program, PtrType, Var
from pypto.ir.visit import defs, walk

NAME = "AllocateMemoryAddr"
READS = ("backend_type",)


def run(prog: Program, opts) -> Program:
    for f in prog.functions:
        if f.is_kernel:
            assign_addresses(f, opts.chip)
    return prog


def _align(x, a):
    return (x + a - 1) // a * a


def assign_addresses(f: Function, chip) -> None:
    top: dict = {}
    addr: dict[int, int] = {}
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            space = s.value.kwargs["target_memory"]
            size = s.value.args[0].value
            at = _align(top.get(space, 0), chip.align[space])
            addr[id(s.var)] = at
            top[space] = at + size
    for space, used in top.items():
        cap = chip.capacity[space]
        if used > cap:
            raise MemoryOverflowError(
                f"kernel {f.name!r} needs {used} bytes of {space.name} but {chip.arch} has {cap}",
                f.span, "use smaller tiles (loop over chunks with pl.range), or let buffers whose "
                        "lifetimes don't overlap share memory (memory_planner=PYPTO)")
    for s in walk(f.body):
        for v in defs(s):
            m = getattr(v.type, "memref", None)
            if m is not None and isinstance(m.base, Var) and id(m.base) in addr:
                v.type = type(v.type)(**{**v.type.__dict__,
                                        "memref": MemRef(m.base, addr[id(m.base)], m.size)})
        if isinstance(s, Assign) and isinstance(s.value, Call):
            s.value.type = s.var.type
