"""MemoryReuse: buffers whose lifetimes do not overlap share one allocation.

Lifetimes are measured over the kernel's statements in order; a value used inside a
loop but defined before it stays live to the end of the loop. An elementwise op may
write into the buffer of an operand that dies at that very op (it reads and writes
each element in place), which is how the quickstart's three 64 KiB tiles fit in UB --
but only an operand of the result's own shape: writing a [64, 64] result over the
[64, 1] vector a row_expand_sub is still reading would clobber it. An Acc tile of a
double-buffered pair (a matmul DoubleBufferAcc tagged `acc_buffer`) is live through its
whole loop, so the pair never shares. A declared multi-slot allocation
(pl.MemRef(slots=N)) is live through the whole kernel: its slots are the user's to rotate.
"""
from __future__ import annotations

from pypto.ir.nodes import (While, Assign, Call, For, Function, MemRef, Program, PtrType, TileType,
                            TupleType, Var)
from pypto.ir.visit import bodies, defs, stmt_uses
from pypto.passes.base import IN_PLACE_OPS

NAME = "MemoryReuse"
READS = ()


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [reuse(f) if f.is_kernel else f for f in prog.functions], prog.source)


def linearize(body):
    """[(index, stmt, enclosing loops)] in program order, plus each loop's last index."""
    order, loop_end = [], {}

    def go(stmts, loops):
        for s in stmts:
            order.append((len(order), s, loops))
            if isinstance(s, (For, While)):
                start = len(order)
                for b in bodies(s):
                    go(b, loops + (id(s),))
                loop_end[id(s)] = (start - 1, len(order) - 1)
            else:
                for b in bodies(s):
                    go(b, loops)
    go(body, ())
    return order, loop_end


def lifetimes(f: Function):
    """Ptr var -> [first def index, last use index, ptrs the first def may overwrite in place]."""
    order, loop_end = linearize(f.body)
    def_at: dict[int, int] = {}
    loops_of_def: dict[int, tuple] = {}
    life: dict[int, list] = {}
    ptrs: dict[int, Var] = {}
    for i, s, loops in order:
        for v in defs(s):
            def_at[id(v)] = i
            loops_of_def[id(v)] = loops
            m = getattr(v.type, "memref", None)
            if isinstance(v.type, TileType) and m is not None and isinstance(m.base, Var):
                ptrs[id(m.base)] = m.base
                first, last = i, i
                if _item_of_op(s):     # one result of a tile op with several: written by that op
                    first = def_at.get(id(s.value.args[0]), i)
                if loops and isinstance(s, Assign) and isinstance(s.value, Call) \
                        and "acc_buffer" in s.value.attrs:      # double-buffered: the whole loop
                    first, last = loop_end[loops[-1]]
                cur = life.get(id(m.base))
                if cur is None:
                    life[id(m.base)] = [first, last, _in_place_operands(s, v)]
                else:
                    cur[0], cur[1] = min(cur[0], first), max(cur[1], last)
    for i, s, loops in order:
        for v in stmt_uses(s):
            m = getattr(v.type, "memref", None)
            if not (isinstance(v.type, TileType) and m is not None and id(m.base) in life):
                continue
            end = i
            for lp in loops:                  # used in a loop it was not defined in
                if lp not in loops_of_def.get(id(v), ()):
                    end = max(end, loop_end[lp][1])
            life[id(m.base)][1] = max(life[id(m.base)][1], end)
    for s in f.body:        # a declared multi-slot allocation is the user's for the whole kernel
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType) and "slots" in s.value.attrs \
                and id(s.var) in life:
            life[id(s.var)] = [0, len(order), set()]
    return ptrs, life


def _item_of_op(s) -> bool:
    """`x = t[i]` with t the results of a tile op (pl.tile.gather_compare's two): x's
    buffer is written where t is defined, so x is live from there."""
    return isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tuple.get" \
        and isinstance(s.value.args[0], Var) and isinstance(s.value.args[0].type, TupleType)


def _in_place_operands(s, v) -> set[int]:
    """Buffers of the operands an elementwise op may overwrite: those of v's own shape."""
    if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in IN_PLACE_OPS):
        return set()
    return {id(a.type.memref.base) for a in s.value.args
            if isinstance(a, Var) and isinstance(a.type, TileType) and a.type.memref is not None
            and (a.type.shape, a.type.dtype) == (v.type.shape, v.type.dtype)}


def reuse(f: Function) -> Function:
    ptrs, life = lifetimes(f)
    sizes = {}
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            sizes[id(s.var)] = s.value.args[0].value
            space = s.value.kwargs["target_memory"]
            sizes[(id(s.var), "space")] = space
    slots: list[dict] = []           # {"ptr", "space", "size", "until", "members"}
    remap: dict[int, Var] = {}
    for pid in sorted(life, key=lambda k: life[k][0]):
        start, end, in_place = life[pid]
        space = sizes[(pid, "space")]
        best = None
        for slot in slots:
            free = slot["until"] < start or (slot["until"] == start and slot["members"] & in_place)
            if slot["space"] == space and free:
                if best is None or abs(slot["size"] - sizes[pid]) < abs(best["size"] - sizes[pid]):
                    best = slot
        if best is None:
            slots.append({"ptr": ptrs[pid], "space": space, "size": sizes[pid], "until": end,
                          "members": {pid}})
        else:
            remap[pid] = best["ptr"]
            best["size"] = max(best["size"], sizes[pid])
            best["until"] = max(best["until"], end)
            best["members"].add(pid)
    if not remap:
        return f
    new_size = {id(s["ptr"]): s["size"] for s in slots}
    _rebase(f.body, remap)
    body = []
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            if id(s.var) in remap:
                continue
            s.value.args[0].value = new_size.get(id(s.var), s.value.args[0].value)
        body.append(s)
    return Function(f.name, f.params, f.return_types, body, f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)


def _rebase(body, remap):
    from pypto.ir.visit import walk
    for s in walk(body):
        for v in defs(s):
            m = getattr(v.type, "memref", None)
            if m is not None and isinstance(m.base, Var) and id(m.base) in remap:
                v.type = type(v.type)(**{**v.type.__dict__, "memref": MemRef(remap[id(m.base)], m.offset, m.size)})
        if isinstance(s, Assign) and isinstance(s.value, Call):
            s.value.type = s.var.type
