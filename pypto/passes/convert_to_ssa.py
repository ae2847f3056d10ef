"""ConvertToSSA: every variable is assigned exactly once.

A name assigned again gets a fresh version (`x__ssa_v1`). Values a loop carries
(assigned in its body, defined before it) become iter_args with a yield at the end of
the body and return vars after the loop; values assigned in an if become its return
vars (phi). Scopes (`pl.at`, `pl.scope`) are transparent.
"""
from __future__ import annotations

from pypto.ir.nodes import (Assign, For, Function, If, InCoreScope, IterArg, Program,
                            RuntimeScope, Var, Yield)
from pypto.ir.visit import Rewriter, walk, defs
from pypto.passes.base import Namer

NAME = "ConvertToSSA"
READS = ()


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_function(f) for f in prog.functions], prog.source)


def _function(f: Function) -> Function:
    namer = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
    env = {id(p.var): p.var for p in f.params}
    body = _SSA(env, namer, {id(p.var) for p in f.params}).body(f.body)
    return Function(f.name, f.params, f.return_types, body, f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)


def _assigned(stmts) -> list[Var]:
    """Original variables assigned anywhere in a body, in first-assignment order."""
    seen, out = set(), []
    for s in walk(stmts):
        targets = [s.var] if isinstance(s, Assign) else list(getattr(s, "return_vars", []))
        for v in targets:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


class _SSA(Rewriter):
    def __init__(self, env, namer, defined):
        self.env = env            # id(original var) -> current SSA var
        self.namer = namer
        self.defined = defined    # ids of original vars that already had a definition

    def version(self, v: Var, tag="ssa") -> Var:
        if id(v) not in self.defined:
            self.defined.add(id(v))
            new = v
        else:
            new = Var(self.namer.fresh(v.name, tag), v.type, v.span)
        self.env[id(v)] = new
        return new

    def expr(self, e):
        if isinstance(e, Var):
            return self.env.get(id(e), e)
        return super().expr(e)

    def stmt(self, s):
        if isinstance(s, Assign):
            value = self.expr(s.value)
            return [Assign(self.version(s.var), value, s.span)]
        if isinstance(s, For):
            return [self.for_(s)]
        if isinstance(s, If):
            return [self.if_(s)]
        if isinstance(s, InCoreScope):
            return [InCoreScope(self.body(s.body), s.name_hint, s.span)]
        if isinstance(s, RuntimeScope):
            return [RuntimeScope(self.body(s.body), s.manual, s.span)]
        return [self.default_stmt(s)]

    def for_(self, s: For) -> For:
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        explicit = [(a.var, self.expr(a.init)) for a in s.iter_args]
        explicit_ids = {id(a.var) for a in s.iter_args}
        carried = [v for v in _assigned(s.body)
                   if id(v) in self.env and id(v) not in explicit_ids]
        iter_args = []
        for v, init in explicit:
            iter_args.append(IterArg(self.version(v), init))
        implicit = []
        for v in carried:
            it = Var(self.namer.fresh(v.name, "iter"), v.type, v.span)
            iter_args.append(IterArg(it, self.env[id(v)]))
            self.env[id(v)] = it
            implicit.append(v)
        self.defined.add(id(s.loop_var))
        self.env[id(s.loop_var)] = s.loop_var
        body = self.body(s.body)
        # the body's trailing yield carries explicit values, then the implicit carries
        extra = [self.env[id(v)] for v in implicit]
        if body and isinstance(body[-1], Yield):
            body[-1] = Yield(body[-1].values + extra, body[-1].span)
        elif extra:
            body.append(Yield(extra, s.span))
        rets = [self.version(v) for v in s.return_vars]
        for v in implicit:
            rv = Var(self.namer.fresh(v.name, "rv"), v.type, v.span)
            self.env[id(v)] = rv
            self.defined.add(id(v))
            rets.append(rv)
        return For(s.loop_var, start, stop, step, body, iter_args, rets, s.kind, s.span)

    def if_(self, s: If) -> If:
        cond = self.expr(s.cond)
        before = dict(self.env)
        then_body = self.body(s.then_body)
        then_env = dict(self.env)
        self.env = dict(before)
        else_body = self.body(s.else_body) if s.else_body else []
        else_env = dict(self.env)
        self.env = dict(before)
        ids = {id(v) for v in s.return_vars}
        merged = [v for v in _assigned(list(s.then_body) + list(s.else_body or []))
                  if id(v) not in ids and id(v) in before]
        extra_then = [then_env[id(v)] for v in merged]
        extra_else = [else_env[id(v)] for v in merged]
        _append_yield(then_body, extra_then, s.span)
        if merged or else_body:
            _append_yield(else_body, extra_else, s.span)
        rets = [self.version(v) for v in s.return_vars]
        for v in merged:
            rv = Var(self.namer.fresh(v.name, "phi"), v.type, v.span)
            self.env[id(v)] = rv
            rets.append(rv)
        return If(cond, then_body, else_body or None, rets, s.span)


def _append_yield(body, extra, span):
    if body and isinstance(body[-1], Yield):
        body[-1] = Yield(body[-1].values + extra, body[-1].span)
    elif extra:
        body.append(Yield(extra, span))
