"""OutlineIncoreScopes: each `with pl.at(level=pl.Level.CORE_GROUP)` region becomes an
InCore function `<parent>_incore_<k>` (or its `name_hint`), called from the parent.

Values the region reads become parameters (in order of first use); tensors it writes
(assemble/store targets) become Out (or InOut when also read) parameters and are
returned. The parent, if Opaque, becomes the Orchestration.
"""
from __future__ import annotations

import re

from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.nodes import (While, Assign, Call, Eval, For, Function, FunctionType, If, InCoreScope,
                            Param, ParamDirection, Program, Return, TensorType, Var, Yield,
                            derived_level_role)
from pypto.ir.visit import Rewriter, Substitute, bodies, defs, stmt_uses, walk
from pypto.passes.base import index_tuple

NAME = "OutlineIncoreScopes"
READS = ()

_WRITES = ops.WRITES            # op -> index of the written tensor


def _user_name(name: str) -> str:
    """The name the user wrote: without ConvertToSSA's `__ssa_v<k>` suffix."""
    head, sep, tail = name.rpartition("__ssa_v")
    return head if sep and tail.isdigit() else name


def run(prog: Program, opts) -> Program:
    names = {f.name for f in prog.functions}   # taken program-wide (kernels join as made)
    out: list[Function] = []
    for f in prog.functions:
        if not any(isinstance(s, InCoreScope) for s in walk(f.body)):
            out.append(f)
            continue
        o = _Outliner(f, names)
        body = o.body(f.body)
        ftype = FunctionType.Orchestration if f.func_type is FunctionType.Opaque else f.func_type
        level, role = (f.level, f.role) if f.func_type is not FunctionType.Opaque else derived_level_role(ftype)
        out.extend(o.kernels)
        out.append(Function(f.name, f.params, f.return_types, body, ftype, level, role,
                            dict(f.attrs), f.span))
    return Program(prog.name, out, prog.source)


class _Outliner(Rewriter):
    def __init__(self, parent: Function, names: set):
        self.parent = parent
        self.names = names
        # names taken inside the parent: its parameters' and values' names and the
        # kernels outlined from it so far
        self.local = {p.var.name for p in parent.params} | {
            _user_name(v.name) for s in walk(parent.body) for v in defs(s)}
        self.kernels: list[Function] = []
        self.count = 0
        # for live-out analysis, per enclosing body: (var id -> index of the last statement
        # of that body using it, index of the statement being rewritten). One pass per
        # body, so a parent with N regions costs O(N), not a walk of the rest per region.
        self.after: list[list] = []
        self.subst: dict[int, object] = {}

    def body(self, stmts):
        last: dict[int, int] = {}
        for idx, s in enumerate(stmts):
            for t in walk([s]):
                for v in stmt_uses(t):
                    last[id(v)] = idx
        out = []
        self.after.append([last, 0])
        for i, s in enumerate(stmts):
            self.after[-1][1] = i
            out.extend(self.stmt(s))
        self.after.pop()
        return out

    def used_later(self, v) -> bool:
        """Is `v` read after the statement being rewritten (at any enclosing level)?"""
        return any(last.get(id(v), -1) > i for last, i in self.after)

    def expr(self, e):
        if isinstance(e, Var):
            return self.subst.get(id(e), e)
        return super().expr(e)

    def stmt(self, s):
        if isinstance(s, InCoreScope):
            return self.outline(s)
        return [self.default_stmt(s)]

    def outline(self, scope: InCoreScope):
        inner_defs = {id(v) for s in walk(scope.body) for v in defs(s)}
        live_in, seen = [], set()
        for s in walk(scope.body):
            for v in stmt_uses(s):
                if id(v) not in inner_defs and id(v) not in seen:
                    seen.add(id(v))
                    live_in.append(v)
        alias, written = _tensor_writes(scope.body, seen)
        live_out = [v for v in _inner_defs_in_order(scope.body) if self.used_later(v)]
        # a tensor value computed in the region and used after it leaves through a tensor
        # the parent creates for it (an Out parameter the kernel assembles the value into)
        created, escaping = [], []
        for v in live_out:
            if id(v) in alias:
                continue
            if not (isinstance(v.type, TensorType) and all(isinstance(d, int) for d in v.type.shape)):
                raise CodegenError(
                    f"{_user_name(v.name)!r} is computed inside a pl.at region and used after it", v.span,
                    "only tensors (of a static shape) may leave a pl.at region; write the value into "
                    "a tensor created with pl.create_tensor")
            t = TensorType(tuple(v.type.shape), v.type.dtype)
            buf = Var(f"{_user_name(v.name)}__out", t, v.span)
            created.append(Assign(buf, Call("tensor.create", [index_tuple(t.shape, v.span)], {"dtype": t.dtype},
                                            t, {}, v.span), v.span))
            escaping.append((v, buf))
            alias[id(v)] = buf
            written[id(buf)] = False
            live_in.append(buf)
        name = self.kernel_name(scope.name_hint)
        # the kernel works on its own copies of the parameters
        params, mapping = [], {}
        for v in live_in:
            pv = Var(v.name, v.type, v.span)
            mapping[id(v)] = pv
            if id(v) in written:
                d = ParamDirection.InOut if written[id(v)] else ParamDirection.Out
            else:
                d = ParamDirection.In
            params.append(Param(pv, d))
        kbody = Substitute(mapping).body(scope.body)
        # return the final version of each written parameter, in parameter order
        final: dict[int, Var] = {}
        for s in scope.body:           # top level: a loop's result, not its body's value
            for v in defs(s):
                if id(v) in alias:
                    final[id(alias[id(v)])] = v
        for v, buf in escaping:      # the value, into the tensor made for it
            pv = mapping[id(buf)]
            done = Var(pv.name + "__ssa_v0", pv.type, v.span)
            kbody.append(Assign(done, Call("tensor.assemble", [pv, v, index_tuple((0,) * len(pv.type.shape), v.span)],
                                           {}, pv.type, {}, v.span), v.span))
            final[id(buf)] = done
        rets = [final.get(id(v), mapping[id(v)]) for v in live_in if id(v) in written]
        kbody.append(Return(rets, scope.span))
        outer_names = {id(v): v.name for v in live_out}     # the parent keeps its names
        _renumber_versions([p.var for p in params], kbody)
        level, role = derived_level_role(FunctionType.InCore)
        # a region whose blocks meet at a syncall: the launch must run them at once
        attrs = {"sync_blocks": True} if any(
            isinstance(x, Eval) and isinstance(x.expr, Call) and x.expr.op == "system.syncall"
            for x in walk(kbody)) else {}
        if scope.split:            # optimizations=[pl.split(...), pl.cross_core_slot(...)]
            attrs["split"] = scope.split
        if scope.slot_num:
            attrs["slot_num"] = scope.slot_num
        self.kernels.append(Function(name, params, [r.type for r in rets], kbody,
                                     FunctionType.InCore, level, role, attrs, scope.span))
        args = [self.expr(v) for v in live_in]
        call = Call("@" + name, args, {}, rets[0].type if len(rets) == 1 else None, {}, scope.span)
        if len(live_out) == 1 and len(rets) == 1:
            outer = Var(outer_names[id(live_out[0])], rets[0].type, live_out[0].span)
            self.subst[id(live_out[0])] = outer
            return created + [Assign(outer, call, scope.span)]
        for v in live_out:        # several outputs: later uses read the written argument
            self.subst[id(v)] = self.expr(alias[id(v)])
        call.type = None
        return created + [Eval(call, scope.span)]

    def kernel_name(self, hint: str) -> str:
        """The region's kernel name, as the reference makes it: the name_hint, else
        `<parent>_incore_<k>` (k counts the parent's regions, named ones too). A name
        another function has becomes `<parent>_<name>`; one taken inside the parent
        (two regions with one hint) takes the smallest free `_<n>` suffix."""
        name = hint or f"{self.parent.name}_incore_{self.count}"
        self.count += 1
        if self.taken(name):
            if name not in self.local:
                name = f"{self.parent.name}_{name}"
                if self.taken(name):
                    name = self.suffixed(name)
            else:
                name = self.suffixed(name)
        self.local.add(name)
        self.names.add(name)
        return name

    def taken(self, name: str) -> bool:
        return name in self.local or name in self.names

    def suffixed(self, base: str) -> str:
        n = 0
        while self.taken(f"{base}_{n}"):
            n += 1
        return f"{base}_{n}"


_VERSIONED = re.compile(r"(.+)__(ssa|tmp)_v(\d+)")


def _renumber_versions(params: list[Var], body) -> None:
    """Number the versioned names of a new kernel (`x__ssa_v<k>`, `t__tmp_v<k>`) from 0
    within the kernel, in order of definition. Versions were counted over the whole
    parent, so without this an edit of one region that adds a version would rename
    values in every later region's kernel and rebuild each of them. The kernel's
    Vars are its own (its parameters are copies; the region's values live on only in
    the kernel), so they are renamed in place."""
    order, seen = [], set()
    for v in params + [d for s in walk(body) for d in defs(s)]:
        if id(v) not in seen:
            seen.add(id(v))
            order.append(v)
    versioned = [v for v in order if _VERSIONED.fullmatch(v.name)]
    taken = {v.name for v in order if not _VERSIONED.fullmatch(v.name)}
    counters: dict[tuple[str, str], int] = {}
    for v in versioned:
        base, tag, _ = _VERSIONED.fullmatch(v.name).groups()
        k = counters.get((base, tag), 0)
        while f"{base}__{tag}_v{k}" in taken:
            k += 1
        counters[(base, tag)] = k + 1
        v.name = f"{base}__{tag}_v{k}"
        taken.add(v.name)


def _tensor_writes(body, live_in: set[int]):
    """Which live-in tensors the region writes (id -> also read?), and the inner values
    that are versions of them (id -> live-in): write results, and the iter_args, results
    and phis that carry them through loops and ifs. Reading any version reads the input."""
    alias: dict[int, Var] = {}
    writes, reads = [], set()

    def root(v):
        r = alias.get(id(v), v)
        return r if isinstance(r, Var) and id(r) in live_in else None

    def go(stmts):
        for s in stmts:
            if isinstance(s, (For, While)):
                for a, rv in zip(s.iter_args, s.return_vars):
                    if root(a.init) is not None:
                        alias[id(a.var)] = alias[id(rv)] = root(a.init)
            c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
            for i, a in enumerate(c.args if isinstance(c, Call) else []):
                r = root(a)
                if r is None:
                    continue
                if c.op in _WRITES and i == _WRITES[c.op]:
                    writes.append(id(r))
                    if isinstance(s, Assign):
                        alias[id(s.var)] = r
                else:
                    reads.add(id(r))
            for b in bodies(s):
                go(b)
            if isinstance(s, If) and s.then_body and isinstance(s.then_body[-1], Yield):
                for rv, y in zip(s.return_vars, s.then_body[-1].values):
                    if root(y) is not None:
                        alias[id(rv)] = root(y)
    go(body)
    return alias, {k: k in reads for k in writes}


def _inner_defs_in_order(body):
    return [v for s in walk(body) for v in defs(s)]

