"""ConvertToSSA: every variable is assigned exactly once.

A name assigned again gets a fresh version (`x__ssa_v1`). Values a loop carries
(assigned in its body, defined before it) become iter_args with a yield at the end of
the body and return vars after the loop; values assigned in an if (defined before it,
or in both branches) become its return vars (phi). Scopes (`pl.at`, `pl.scope`) are
transparent.

Variables are tracked by name, as in the user's Python: the parser makes a new Var when
a rebinding changes the type (`acc = pl.add(acc, t)` after `acc = pl.load(...)` drops
the memory space), and both are still the one variable `acc`.
"""
from __future__ import annotations

from pypto.errors import ParserError
from pypto.ir.nodes import (Assign, For, Function, If, InCoreScope, IterArg, Program, While,
                            RuntimeScope, Var, Yield, map_slot)
from pypto.ir import ops
from pypto.ir.visit import Rewriter, walk, defs
from pypto.passes.base import Namer

NAME = "ConvertToSSA"
READS = ()


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_function(f) for f in prog.functions], prog.source)


def _function(f: Function) -> Function:
    namer = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
    env = {p.var.name: p.var for p in f.params}
    body = _SSA(env, namer, set(env)).body(f.body)
    return Function(f.name, f.params, f.return_types, body, f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)


def _assigned(stmts) -> list[Var]:
    """Variables assigned anywhere in a body (one Var per name), in first-assignment order."""
    seen, out = set(), []
    for s in walk(stmts):
        targets = [s.var] if isinstance(s, Assign) else list(getattr(s, "return_vars", []))
        for v in targets:
            if v.name not in seen:
                seen.add(v.name)
                out.append(v)
    return out


class _SSA(Rewriter):
    def __init__(self, env, namer, defined):
        self.env = env            # name -> current SSA var
        self.namer = namer
        self.defined = defined    # names that already had a definition
        self.span = None          # of the statement being rewritten, for errors

    def version(self, v: Var, tag="ssa") -> Var:
        if v.name not in self.defined:
            self.defined.add(v.name)
            new = v
        else:
            new = Var(self.namer.fresh(v.name, tag), v.type, v.span)
        self.env[v.name] = new
        return new

    def fresh(self, name: str, like: Var, tag: str) -> Var:
        """A new version of `name` with the type of `like` (an iter_arg, loop result or phi)."""
        new = Var(self.namer.fresh(name, tag), like.type, like.span)
        self.env[name] = new
        return new

    def expr(self, e):
        if isinstance(e, Var):
            if e.name not in self.env:
                raise ParserError(
                    f"{e.name!r} is used after the loop or if that assigns it, but has no value "
                    f"before it", self.span,
                    f"give {e.name!r} a value before the loop/if (or in both branches of the if)")
            return self.env[e.name]
        return super().expr(e)

    def stmt(self, s):
        self.span = s.span
        if isinstance(s, Assign):
            value = self.expr(s.value)
            var = self.version(s.var)
            var.type = map_slot(var.type, self.expr)     # its slot index reads current versions
            return [Assign(var, value, s.span)]
        if isinstance(s, For):
            return [self.for_(s)]
        if isinstance(s, While):
            return [self.while_(s)]
        if isinstance(s, If):
            return [self.if_(s)]
        if isinstance(s, InCoreScope):
            return [s.with_body(self.body(s.body))]
        if isinstance(s, RuntimeScope):
            return [RuntimeScope(self.body(s.body), s.manual, s.span)]
        return [self.default_stmt(s)]

    def writes_into(self, stmts) -> None:
        """A name first bound in `stmts` to what writes into one tensor -- `out =
        pl.store(t, offs, c)`, pl.assemble / pl.write into c -- is that tensor (the
        write returns it, written in place): give it c's value before them, so it is
        carried (or merged) like any variable and has a value after the loop or if."""
        found: dict[str, str | None] = {}
        for st in walk(stmts):
            if not isinstance(st, Assign) or st.var.name in self.env:
                continue
            c = st.value
            k = ops.WRITES.get(getattr(c, "op", None))
            dst = c.args[k] if k is not None and len(c.args) > k else None
            name = dst.name if isinstance(dst, Var) else None
            if name is not None and found.get(st.var.name, name) == name:
                found[st.var.name] = name
            else:
                found[st.var.name] = None
        for name, tensor in found.items():
            if tensor is not None and tensor in self.env:
                self.env[name] = self.env[tensor]
                self.defined.add(name)

    def for_(self, s: For) -> For:
        self.writes_into(s.body)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        explicit = [(a.var, self.expr(a.init)) for a in s.iter_args]
        explicit_names = {a.var.name for a in s.iter_args}
        implicit = [v for v in _assigned(s.body)
                    if v.name in self.env and v.name not in explicit_names]
        before = dict(self.env)
        iter_args = [IterArg(self.version(v), init) for v, init in explicit]
        for v in implicit:
            init = self.env[v.name]
            iter_args.append(IterArg(self.fresh(v.name, init, "iter"), init))
        loop_var = self.version(s.loop_var)
        body = self.body(s.body)
        # the body's trailing yield carries explicit values, then the implicit carries
        _append_yield(body, [self.env[v.name] for v in implicit], s.span)
        # names first bound in the body do not outlive it
        self.env = before
        rets = [self.version(v) for v in s.return_vars]
        rets += [self.fresh(v.name, before[v.name], "rv") for v in implicit]
        return For(loop_var, start, stop, step, body, iter_args, rets, s.kind, s.span, s.stage, dict(s.attrs))

    def while_(self, s: While) -> While:
        """As a for loop's, with the condition reading the carried values."""
        self.writes_into(s.body)
        explicit = [(a.var, self.expr(a.init)) for a in s.iter_args]
        explicit_names = {a.var.name for a in s.iter_args}
        implicit = [v for v in _assigned(s.body) if v.name in self.env and v.name not in explicit_names]
        before = dict(self.env)
        iter_args = [IterArg(self.version(v), init) for v, init in explicit]
        for v in implicit:
            init = self.env[v.name]
            iter_args.append(IterArg(self.fresh(v.name, init, "iter"), init))
        cond = self.expr(s.cond)
        body = self.body(s.body)
        _append_yield(body, [self.env[v.name] for v in implicit], s.span)
        self.env = before
        rets = [self.version(v) for v in s.return_vars]
        rets += [self.fresh(v.name, before[v.name], "rv") for v in implicit]
        return While(cond, body, iter_args, rets, s.span)

    def if_(self, s: If) -> If:
        self.writes_into(list(s.then_body) + list(s.else_body or []))
        cond = self.expr(s.cond)
        before = dict(self.env)
        then_body = self.body(s.then_body)
        then_env, self.env = self.env, dict(before)
        else_body = self.body(s.else_body) if s.else_body else []
        else_env, self.env = self.env, before
        ret_names = {v.name for v in s.return_vars}
        merged = [v for v in _assigned(list(s.then_body) + list(s.else_body or []))
                  if v.name not in ret_names and v.name in then_env and v.name in else_env]
        _append_yield(then_body, [then_env[v.name] for v in merged], s.span)
        if merged or else_body:
            _append_yield(else_body, [else_env[v.name] for v in merged], s.span)
        rets = [self.version(v) for v in s.return_vars]
        rets += [self.fresh(v.name, then_env[v.name], "phi") for v in merged]
        return If(cond, then_body, else_body or None, rets, s.span)


def _append_yield(body, extra, span):
    if body and isinstance(body[-1], Yield):
        body[-1] = Yield(body[-1].values + extra, body[-1].span)
    elif extra:
        body.append(Yield(extra, span))
