"""InitMemRef: give every tile a buffer.

Tiles that must share storage are grouped first (a loop-carried tile, its initial and
yielded values and the loop's result; an if's result and both branch values; an
accumulating matmul and its accumulator; a reshape and its source). Each group gets
one `pl.tile.alloc` at the top of the kernel and every member a `MemRef(ptr, 0, size)`;
addresses come later (AllocateMemoryAddr). Tensor parameters get DDR MemRefs.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import (Assign, Call, Const, For, Function, If, MemRef, Program, PtrType,
                            TensorType, TileType, Var, Yield, with_memref)
from pypto.ir.visit import walk

NAME = "InitMemRef"
READS = ()

_SAME_BUFFER = {"tile.matmul_acc": 0, "tile.reshape": 0}   # result shares arg[i]'s buffer


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_function(f) if f.is_kernel else f for f in prog.functions],
                   prog.source)


class _Groups:
    def __init__(self):
        self.parent: dict[int, int] = {}
        self.var: dict[int, Var] = {}

    def add(self, v):
        if isinstance(v, Var) and isinstance(v.type, TileType) and id(v) not in self.parent:
            self.parent[id(v)] = id(v)
            self.var[id(v)] = v

    def find(self, k):
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b):
        if isinstance(a, Var) and isinstance(b, Var) and id(a) in self.parent and id(b) in self.parent:
            ra, rb = self.find(id(a)), self.find(id(b))
            if ra != rb:
                self.parent[rb] = ra


def _yield_of(body):
    return body[-1] if body and isinstance(body[-1], Yield) else None


def _function(f: Function) -> Function:
    counter = 0
    tensor_mem: dict[int, MemRef] = {}
    for p in f.params:
        t = p.var.type
        if isinstance(t, TensorType):
            m = MemRef(f"mem_ddr_{counter}", 0, t.nbytes() or 0)
            counter += 1
            p.var.type = with_memref(t, m)
            tensor_mem[id(p.var)] = m
    g = _Groups()
    order: list[Var] = []
    for s in walk(f.body):
        if isinstance(s, Assign):
            g.add(s.var)
            if isinstance(s.var.type, TileType):
                order.append(s.var)
        if isinstance(s, (For, If)):
            for v in ([a.var for a in s.iter_args] if isinstance(s, For) else []) + list(s.return_vars):
                g.add(v)
    for s in walk(f.body):
        if isinstance(s, Assign) and isinstance(s.value, Call):
            c = s.value
            if c.op in _SAME_BUFFER:
                g.union(c.args[_SAME_BUFFER[c.op]], s.var)
            if c.op == "tile.store" and isinstance(s.var.type, TensorType):
                m = tensor_mem.get(id(c.args[2]))
                if m is not None:
                    s.var.type = with_memref(s.var.type, m)
                    tensor_mem[id(s.var)] = m
        if isinstance(s, For):
            y = _yield_of(s.body)
            for i, a in enumerate(s.iter_args):
                g.union(a.var, a.init)
                if y is not None and i < len(y.values):
                    g.union(a.var, y.values[i])
                if i < len(s.return_vars):
                    g.union(a.var, s.return_vars[i])
        if isinstance(s, If):
            for body in (s.then_body, s.else_body or []):
                y = _yield_of(body)
                for i, r in enumerate(s.return_vars):
                    if y is not None and i < len(y.values):
                        g.union(r, y.values[i])
    members: dict[int, list[Var]] = {}
    for k, v in g.var.items():
        members.setdefault(g.find(k), []).append(v)
    allocs, ptr_of = [], {}
    for v in order:
        root = g.find(id(v))
        if root in ptr_of:
            continue
        group = members[root]
        space = v.type.memory_space
        size = max(m.type.nbytes() for m in group)
        ptr = Var(f"mem_{space.value}_{counter}", PtrType(), v.span)
        counter += 1
        ptr_of[root] = ptr
        allocs.append(Assign(ptr, Call("tile.alloc", [Const(size, dt.INDEX, v.span)],
                                       {"target_memory": space}, PtrType(), {}, v.span), v.span))
    for root, group in members.items():
        ptr = ptr_of.get(root)
        if ptr is None:
            continue
        for m in group:
            m.type = with_memref(m.type, MemRef(ptr, 0, m.type.nbytes()))
    _retype_calls(f.body)
    return Function(f.name, f.params, f.return_types, allocs + f.body, f.func_type, f.level,
                    f.role, dict(f.attrs), f.span)


def _retype_calls(body):
    """A call's recorded type follows the variable it is bound to."""
    for s in walk(body):
        if isinstance(s, Assign) and isinstance(s.value, Call):
            s.value.type = s.var.type
