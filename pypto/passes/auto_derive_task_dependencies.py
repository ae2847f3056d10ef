"""AutoDeriveTaskDependencies: compile-time task -> task edges between the kernel calls
of an orchestration, from how each call uses its arguments (`arg_directions`, written
by DeriveCallDirections).

Tasks are numbered per runtime scope: the calls lexically inside one `RuntimeScope`
(through its loops and ifs, not into a nested scope), in program order from 0; calls
outside every scope form the function's own scope. A call gets `attrs["deps"]`, the
sorted numbers of the earlier calls of its scope it must wait for: an earlier call
that writes a tensor this one reads (RAW), reads one it writes (WAR) or writes one it
writes (WAW). "The same tensor" is decided on alias roots, conservatively: a kernel's
result is the tensors it writes, a loop-carried or if-merged tensor is every tensor
that may flow into it. Calls in the two branches of one if never run together and get
no edge. A call inside a loop may also wait for calls of the previous iteration: those
at or after it in the loop body (and those before it in the other branch of an if) go
to `attrs["loop_deps"]`, written only when there are some; an earlier call of the same
iteration covers its own previous iteration through the edges of that iteration.

MANUAL scopes (`with pl.scope(mode=pl.ScopeMode.MANUAL)`) are always analysed: the
runtime does not track dependencies inside them. AUTO scopes, where the runtime finds
dependencies itself from overlapping tensor ranges, are analysed only with
`analyze_auto_scopes_for_deps`; the function's own scope counts as AUTO.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto.ir.nodes import (While, ArgDir, Assign, Call, Eval, For, FunctionType, If, Program,
                            RuntimeScope, TensorType, TupleType, Var, Yield)
from pypto.ir.visit import bodies

NAME = "AutoDeriveTaskDependencies"
READS = ("analyze_auto_scopes_for_deps",)
CALLEES = True      # function-local, given the signatures of the functions it calls

_READ = {ArgDir.input, ArgDir.inout}
_WRITE = {ArgDir.output, ArgDir.output_existing, ArgDir.inout}


def run(prog: Program, opts) -> Program:
    funcs = {f.name for f in prog.functions}
    for f in prog.functions:
        if f.func_type is FunctionType.Orchestration:
            _function(f, funcs, opts.analyze_auto_scopes_for_deps)
    return prog


@dataclass
class _Task:
    call: Call
    index: int
    path: tuple            # (id(stmt), branch) of each enclosing For / If, outermost first
    loops: tuple           # id of each enclosing For inside the scope
    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)


def _is_tensor(t) -> bool:
    return isinstance(t, TensorType) or (isinstance(t, TupleType) and
                                         any(isinstance(x, TensorType) for x in t.types))


def _roots(f, funcs) -> dict[int, frozenset]:
    """id(var) -> ids of the tensors (parameters, creations) it may be."""
    roots: dict[int, frozenset] = {id(p.var): frozenset({id(p.var)}) for p in f.params
                                   if isinstance(p.var.type, TensorType)}

    def of(e) -> frozenset:
        return roots.get(id(e), frozenset()) if isinstance(e, Var) else frozenset()

    def set_(v, r) -> bool:
        old = roots.get(id(v), frozenset())
        if not r <= old:
            roots[id(v)] = old | r
            return True
        return False

    def go(stmts) -> bool:
        changed = False
        for s in stmts:
            if isinstance(s, Assign) and _is_tensor(s.var.type):
                e = s.value
                if isinstance(e, Var):
                    r = of(e)
                elif isinstance(e, Call) and e.callee in funcs:
                    dirs = e.attrs.get("arg_directions") or []
                    r = frozenset().union(*[of(a) for a, d in zip(e.args, dirs) if d in _WRITE])
                elif isinstance(e, Call):
                    r = frozenset().union(*[of(a) for a in e.args])
                else:
                    r = frozenset()
                changed |= set_(s.var, r or frozenset({id(s.var)}))
            if isinstance(s, (For, While)):
                y = s.body[-1] if s.body and isinstance(s.body[-1], Yield) else None
                for i, a in enumerate(s.iter_args):
                    r = of(a.init) | (of(y.values[i]) if y is not None and i < len(y.values) else frozenset())
                    changed |= set_(a.var, r)
                    if i < len(s.return_vars):
                        changed |= set_(s.return_vars[i], of(a.var))
            for b in bodies(s):
                changed |= go(b)
            if isinstance(s, If):
                for b in (s.then_body, s.else_body or []):
                    if b and isinstance(b[-1], Yield):
                        for rv, v in zip(s.return_vars, b[-1].values):
                            changed |= set_(rv, of(v))
        return changed

    while go(f.body):           # loops feed values back to their iter_args: to a fixed point
        pass
    return roots


def _function(f, funcs, analyze_auto: bool):
    roots = _roots(f, funcs)
    scopes: dict[int, list[_Task]] = {}
    analysed: dict[int, bool] = {}
    top = id(f)
    analysed[top] = analyze_auto

    def visit(stmts, scope, path, loops):
        for s in stmts:
            c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
            if isinstance(c, Call) and c.callee in funcs:
                tasks = scopes.setdefault(scope, [])
                t = _Task(c, len(tasks), path, loops)
                for a, d in zip(c.args, c.attrs.get("arg_directions") or []):
                    r = roots.get(id(a), frozenset()) if isinstance(a, Var) else frozenset()
                    if d in _READ:
                        t.reads |= r
                    if d in _WRITE:
                        t.writes |= r
                tasks.append(t)
            if isinstance(s, RuntimeScope):
                analysed[id(s)] = s.manual or analyze_auto
                visit(s.body, id(s), (), ())
            elif isinstance(s, (For, While)):
                visit(s.body, scope, path + ((id(s), 0),), loops + (id(s),))
            elif isinstance(s, If):
                visit(s.then_body, scope, path + ((id(s), 0),), loops)
                visit(s.else_body or [], scope, path + ((id(s), 1),), loops)

    visit(f.body, top, (), ())
    for scope, tasks in scopes.items():
        if not analysed[scope]:
            continue
        for t in tasks:
            deps, carried = [], []
            for d in tasks:
                if not _conflict(d, t):
                    continue
                exclusive = _exclusive(d.path, t.path)
                if d.index < t.index and not exclusive:
                    deps.append(d.index)
                elif _shared_loop(d, t) and (d.index >= t.index or exclusive):
                    carried.append(d.index)
            t.call.attrs["deps"] = deps
            if carried:
                t.call.attrs["loop_deps"] = carried
            else:
                t.call.attrs.pop("loop_deps", None)


def _conflict(a: _Task, b: _Task) -> bool:
    return bool(a.writes & (b.reads | b.writes) or a.reads & b.writes)


def _exclusive(p: tuple, q: tuple) -> bool:
    """Do two positions lie in different branches of one if (never both run)?"""
    for (sa, ba), (sb, bb) in zip(p, q):
        if sa != sb:
            return False
        if ba != bb:
            return True
    return False


def _shared_loop(a: _Task, b: _Task) -> bool:
    """Is there a loop (inside the scope) around both: a later call of its previous
    iteration runs before this one."""
    return any(lp in b.loops for lp in a.loops)
