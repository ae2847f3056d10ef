"""InitMemRef: give every tile a buffer.

Tiles that must share storage are grouped first (a loop-carried tile, its initial and
yielded values and the loop's result; an if's result and both branch values; an
accumulating matmul and its accumulator; a reshape and its source). Each group gets
one `pl.tile.alloc` at the top of the kernel and every member a `MemRef(ptr, 0, size)`;
addresses come later (AllocateMemoryAddr). Tensor parameters get DDR MemRefs.

A declared multi-slot allocation (`pl.MemRef("name", slots=N)[index]` in tiles' types)
is one `pl.tile.alloc(N * stride, ..., attrs={"slots": N})`, the stride the largest of
its tiles rounded up to 512 bytes; each of its tiles points at it and keeps its slot
index in its type (codegen adds index * stride to the address).

Sharing means writing in place: a loop's initial value that is still read once the loop
has started is copied first (`tile.move` within its space); a yielded value computed while
the carried one is still to be read gets its own buffer (codegen copies it at the yield);
and an accumulator that matmul_acc overwrites must not be read afterwards (Acc has no
copy path).
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import CodegenError
from pypto.ir.nodes import (While, Assign, Call, Const, For, Function, If, MemorySpace, MemRef, Program,
                            PtrType, TensorType, TileType, Var, Yield, with_memref)
from pypto.ir.visit import bodies, defs, stmt_uses, walk
from pypto.passes.base import IN_PLACE_OPS, Namer

NAME = "InitMemRef"
READS = ()

# result shares arg[i]'s buffer
_SAME_BUFFER = {"tile.matmul_acc": 0, "tile.gemv_acc": 0, "tile.matmul_mx_acc": 0, "tile.reshape": 0, "tile.slice": 0, "tile.set_validshape": 0,
                "tile.reinterpret_view": 0, "tile.gather_row": 0}


_ACCUMULATE = ("tile.matmul_acc", "tile.gemv_acc", "tile.matmul_mx_acc", "tile.gather_row")   # write their operand 0 in place


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
    names = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
    body = _protect_overwritten(f.body, _read_after(f.body), names)
    stmts, last = _last_reads(body)
    def_at = {id(s.var): i for i, s in enumerate(stmts) if isinstance(s, Assign)}
    phis = _phi_sources(body)
    g = _Groups()
    order: list[Var] = []
    for s in walk(body):
        if isinstance(s, Assign):
            g.add(s.var)
            if isinstance(s.var.type, TileType):
                order.append(s.var)
        if isinstance(s, (For, While, If)):
            for v in ([a.var for a in s.iter_args] if isinstance(s, (For, While)) else []) + list(s.return_vars):
                g.add(v)

    for s in walk(body):
        if isinstance(s, Assign) and isinstance(s.value, Call):
            c = s.value
            if c.op in _SAME_BUFFER:
                g.union(c.args[_SAME_BUFFER[c.op]], s.var)
            elif _acc_into_mat(c):              # the cube writes into the Mat tile itself
                g.union(c.args[0], s.var)
            if c.op == "tile.store" and isinstance(s.var.type, TensorType):
                m = tensor_mem.get(id(c.args[2]))
                if m is not None:
                    s.var.type = with_memref(s.var.type, m)
                    tensor_mem[id(s.var)] = m
        if isinstance(s, (For, While)):
            for a, r in zip(s.iter_args, s.return_vars):   # a carried tensor stays in its DDR buffer
                m = tensor_mem.get(id(a.init))
                if m is not None:
                    for v in (a.var, r):
                        v.type = with_memref(v.type, m)
                        tensor_mem[id(v)] = m
            y = _yield_of(s.body)
            for i, a in enumerate(s.iter_args):
                g.union(a.var, a.init)
                if y is not None and i < len(y.values) and \
                        not _overwrites_live(y.values[i], a.var, stmts, def_at, last, phis):
                    g.union(a.var, y.values[i])
                if i < len(s.return_vars):
                    g.union(a.var, s.return_vars[i])
        if isinstance(s, If):
            # a result shares the buffer of a value its branch computes; a value from before
            # the if may still be read after it, so the kernel copies that one instead
            for branch in (s.then_body, s.else_body or []):
                y = _yield_of(branch)
                for i, r in enumerate(s.return_vars):      # (each its own, or a copy)
                    if y is not None and i < len(y.values):
                        g.union(r, y.values[i])
    members: dict[int, list[Var]] = {}
    for k, v in g.var.items():
        members.setdefault(g.find(k), []).append(v)
    allocs, ptr_of = [], {}
    regions = _regions(order, g, members)
    for v in order:
        root = g.find(id(v))
        if root in ptr_of:
            continue
        if v.type.slot is not None:
            region = regions[v.type.slot.region]
            ptr = region.get("ptr")
            if ptr is None:
                ptr = region["ptr"] = Var(f"mem_{region['space'].value}_{counter}", PtrType(), v.span)
                counter += 1
                size = region["count"] * region["stride"]
                allocs.append(Assign(ptr, Call("tile.alloc", [Const(size, dt.INDEX, v.span)],
                                               {"target_memory": region["space"]}, PtrType(),
                                               {"slots": region["count"]}, v.span), v.span))
            ptr_of[root] = ptr
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
    _retype_calls(body)
    return Function(f.name, f.params, f.return_types, allocs + body, f.func_type, f.level,
                    f.role, dict(f.attrs), f.span)


SLOT_ALIGN = 512       # a slot starts on a fractal box boundary, whatever the space


def _regions(order, g: _Groups, members) -> dict[str, dict]:
    """The declared multi-slot allocations (pl.MemRef("name", slots=N)) the kernel's tiles
    take slots of: name -> {count, space, stride}; a slot is as large as the largest tile
    placed in it. A slotted tile owns its slot: it shares it with no other value."""
    regions: dict[str, dict] = {}
    for v in order:
        sl = v.type.slot
        if sl is None:
            continue
        group = members[g.find(id(v))]
        if len(group) > 1:
            other = next(m for m in group if m is not v)
            raise CodegenError(
                f"tile {v.name!r} takes a slot of {sl.region!r} but would share its buffer with "
                f"{other.name!r} (a loop-carried value, an if's result or a view of it)", v.span,
                "give the slotted tile a value of its own (pl.move into a fresh tile), or drop "
                "the pl.MemRef slot from its type")
        space = v.type.memory_space
        r = regions.setdefault(sl.region, {"count": sl.count, "space": space, "stride": 0, "first": v})
        if r["count"] != sl.count or r["space"] is not space:
            first = r["first"]
            raise CodegenError(
                f"{sl.region!r} is declared as {sl.count} slots in {space.name} here but as "
                f"{r['count']} slots in {r['space'].name} for {first.name!r}", v.span,
                "one declared allocation has one slot count and one memory space")
        r["stride"] = max(r["stride"], -(-v.type.nbytes() // SLOT_ALIGN) * SLOT_ALIGN)
    return regions


def _acc_into_mat(c: Call) -> bool:
    """tile.assemble of an Acc tile into a Mat one: written in place (no Mat -> Mat copy)."""
    return (c.op == "tile.assemble" and getattr(c.args[1].type, "memory_space", None) is MemorySpace.Acc
            and getattr(c.args[0].type, "memory_space", None) is MemorySpace.Mat)


def _last_reads(body):
    """The statements in program order, and the index of each Var's last read."""
    order, last = list(walk(body)), {}
    for i, s in enumerate(order):
        for v in stmt_uses(s):
            last[id(v)] = i
    return order, last


def _phi_sources(body) -> dict[int, list]:
    """An if's result -> the values its branches yield for it (they share its buffer)."""
    out: dict[int, list] = {}
    for s in walk(body):
        if isinstance(s, If):
            for branch in (s.then_body, s.else_body or []):
                y = _yield_of(branch)
                for r, v in zip(s.return_vars, y.values if y is not None else []):
                    out.setdefault(id(r), []).append(v)
    return out


def _overwrites_live(v, carried: Var, stmts, def_at, last, phis=None) -> bool:
    """Would computing `v` into the carried value's buffer clobber it before its last read?
    Reading it in the very statement is fine for an elementwise op on equal shapes. An
    if's result is computed by its branches: each of their values is asked."""
    if phis and id(v) in phis:
        return any(_overwrites_live(b, carried, stmts, def_at, last, phis) for b in phis[id(v)])
    d = def_at.get(id(v))
    if d is None or last.get(id(carried), -1) < d:
        return False
    c = stmts[d].value
    return last[id(carried)] > d or not (
        isinstance(c, Call) and c.op in IN_PLACE_OPS and v.type.shape == carried.type.shape)


def _read_after(body) -> set[int]:
    """ids of the loop iter_args whose initial value is read once the loop has started."""
    order, last = _last_reads(body)
    out = set()
    for i, s in enumerate(order):
        if isinstance(s, (For, While)):
            out |= {id(a) for a in s.iter_args if last.get(id(a.init), -1) > i}
        if isinstance(s, Assign) and isinstance(s.value, Call) and _acc_into_mat(s.value) \
                and last.get(id(s.value.args[0]), -1) > i:
            raise CodegenError("assembling a matmul result into a Mat tile that is still read afterwards "
                               "needs a Mat -> Mat copy, which the hardware does not have", s.span,
                               "assemble into a Mat tile the kernel does not read again (reassign it: "
                               "x = pl.tile.assemble(x, acc, [r, c]))")
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _ACCUMULATE:
            acc, name = s.value.args[0], s.value.op.removeprefix("tile.")
            if last.get(id(acc), -1) > i:
                raise CodegenError(
                    f"accumulator {acc.name!r} is read after {name} wrote into it",
                    s.span, f"read the result of {name} instead; the accumulator is updated in place")
    return out


def _protect_overwritten(body, reread: set[int], names: Namer) -> list:
    """Give a loop whose initial tile is still read later a copy of it to carry."""
    out = []
    for s in body:
        for b in bodies(s):
            b[:] = _protect_overwritten(b, reread, names)
        for a in s.iter_args if isinstance(s, (For, While)) else []:
            t = a.init.type
            if id(a) not in reread or not isinstance(t, TileType):
                continue
            if t.memory_space is MemorySpace.Acc:
                raise CodegenError(
                    f"accumulator {a.init.name!r} is read after the loop that accumulates into it "
                    f"starts", s.span, "read the loop's result instead; the accumulator is "
                    "updated in place")
            copy = Var(names.fresh(a.init.name, "copy"),
                       TileType(t.shape, t.dtype, t.memory_space, None, t.valid), s.span)
            out.append(Assign(copy, Call("tile.move", [a.init], {"target_memory": t.memory_space},
                                         copy.type, {}, s.span), s.span))
            a.init = copy
        if isinstance(s, If):
            for branch in (s.then_body, s.else_body or []):
                _copy_outside_yields(s, branch, names)
        out.append(s)
    return out


def _copy_outside_yields(s: If, branch: list, names: Namer) -> None:
    """A tile result is one buffer that each branch computes into; a branch yielding a
    tile made before the if (still readable after it) yields a copy of it instead."""
    y = _yield_of(branch)
    if y is None:
        return
    # values the branch computes: views of older tiles are not, but an accumulation is (its
    # accumulator is written in place and may not be read after it: _read_after)
    made = {id(x.var) for x in walk(branch) if isinstance(x, Assign)
            and isinstance(x.value, Call) and (x.value.op not in _SAME_BUFFER or x.value.op in _ACCUMULATE)}
    # a loop's or an inner if's results are computed in the branch too
    made |= {id(r) for x in walk(branch) if isinstance(x, (For, While, If)) for r in x.return_vars}
    # and a tile accumulated into through windows of it (a flattened batch_matmul_acc)
    window_of = {id(x.var): x.value.args[0] for x in walk(branch) if isinstance(x, Assign)
                 and isinstance(x.value, Call) and x.value.op == "tile.slice"}
    made |= {id(window_of[id(x.value.args[0])]) for x in walk(branch) if isinstance(x, Assign)
             and isinstance(x.value, Call) and x.value.op in _ACCUMULATE and x.value.args
             and id(x.value.args[0]) in window_of}
    for i, (r, v) in enumerate(zip(s.return_vars, y.values)):
        t = getattr(v, "type", None)
        if not isinstance(t, TileType) or not isinstance(r.type, TileType) or id(v) in made:
            continue
        if t.memory_space is not MemorySpace.Vec:
            raise CodegenError(
                f"this if yields {r.name!r}, a {t.memory_space.name} tile from before the if; only "
                f"Vec tiles are copied into an if's result", s.span,
                "compute the value inside the branch (e.g. pl.matmul there)")
        copy = Var(names.fresh(v.name, "copy"), TileType(t.shape, t.dtype, t.memory_space, None, t.valid),
                   y.span or s.span)
        branch.insert(len(branch) - 1, Assign(copy, Call("tile.move", [v], {"target_memory": t.memory_space},
                                                         copy.type, {}, copy.span), copy.span))
        y.values[i] = copy


def _retype_calls(body):
    """A call's recorded type follows the variable it is bound to."""
    for s in walk(body):
        if isinstance(s, Assign) and isinstance(s.value, Call):
            s.value.type = s.var.type
