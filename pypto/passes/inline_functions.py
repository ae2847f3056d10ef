"""InlineFunctions: the body of every `FunctionType.Inline` function (`@pl.jit.inline`,
`@pl.function(type=pl.FunctionType.Inline)`) is spliced into each place that calls it,
and the Inline functions leave the program.

Runs first, before ConvertToSSA, so it works with names as the user wrote them: every
name the inline body binds becomes one fresh caller name (`t__inl_v0`), shared by all
its assignments, so values the body carries through a loop by rebinding still do. A
parameter the body never rebinds is replaced by the argument itself; one it rebinds
gets a fresh local initialised from the argument. The call's value becomes the
returned expression (a plain copy `y = r` that Simplify folds away after SSA). A call
nested in another expression is spliced just before its statement. Inline functions
may call one another (inner ones are spliced first); a cycle is an error.
"""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.ir.nodes import (Assign, Call, Eval, Function, FunctionType, Program, Return,
                            TupleExpr, Var)
from pypto.ir.visit import Rewriter, defs, walk
from pypto.passes.base import Clone, function_namer, rebind_names

NAME = "InlineFunctions"
READS = ()


def run(prog: Program, opts) -> Program:
    inline = {f.name: f for f in prog.functions if f.func_type is FunctionType.Inline}
    if not inline:
        return prog
    ready: dict[str, Function] = {}          # inline functions with their own calls spliced

    def expanded(name: str, chain: tuple) -> Function:
        if name in ready:
            return ready[name]
        f = inline[name]
        if name in chain:
            path = " -> ".join(chain[chain.index(name):] + (name,))
            raise CodegenError(f"inline function {name!r} calls itself ({path})", f.span,
                               "an inline function is copied into its callers, so it cannot "
                               "recurse; make it a regular function or remove the cycle")
        _check_returns(f)
        ready[name] = _Inliner(f, lambda n: expanded(n, chain + (name,)), inline).function(f)
        return ready[name]

    out = []
    for f in prog.functions:
        if f.func_type is FunctionType.Inline:
            expanded(f.name, ())               # errors in unused inline functions surface too
            continue
        out.append(rebind_names(_Inliner(f, lambda n: expanded(n, ()), inline).function(f)))
    return Program(prog.name, out, prog.source)


def _check_returns(f: Function):
    for s in walk(f.body):
        if isinstance(s, Return) and s is not f.body[-1]:
            raise CodegenError(f"inline function {f.name!r} returns before its end", s.span,
                               "an inline function is spliced into its callers: give it a "
                               "single return as its last statement")


class _Inliner(Rewriter):
    def __init__(self, caller: Function, get, inline: dict):
        self.caller = caller
        self.get = get                     # name -> the inline function, expanded
        self.inline = inline
        self.namer = function_namer(caller)
        self.pending: list = []

    def body(self, stmts):
        out = []
        for s in stmts:
            saved, self.pending = self.pending, []
            new = self.stmt(s)
            out.extend(self.pending)
            out.extend(new)
            self.pending = saved
        return out

    def stmt(self, s):
        if isinstance(s, Eval) and isinstance(s.expr, Call) and s.expr.callee in self.inline:
            self.splice(s.expr)                # the value (if any) is dropped
            return []
        # nested bodies keep their own pending statements (see body); a loop's bounds and
        # initial values, and an if's condition, splice before the loop / if
        return [self.default_stmt(s)]

    def expr(self, e):
        if isinstance(e, Call) and e.callee in self.inline:
            args = [self.expr(a) for a in e.args]
            result = self.splice(Call(e.op, args, dict(e.kwargs), e.type, dict(e.attrs), e.span))
            if result is None:
                raise CodegenError(f"inline function {e.callee!r} returns nothing, but its "
                                   f"value is used", e.span)
            return result
        return super().expr(e)

    def splice(self, call: Call):
        """Append the callee's body (renamed) to the pending statements; return the
        expression of its result (None when it returns nothing)."""
        g = self.get(call.callee)
        if len(call.args) != len(g.params):
            raise CodegenError(f"{call.callee} takes {len(g.params)} arguments, got "
                               f"{len(call.args)}", call.span)
        rebound = {v.name for s in walk(g.body) for v in defs(s)}
        fresh: dict[str, str] = {}

        def name_for(n: str) -> str:
            if n not in fresh:
                fresh[n] = self.namer.fresh(n, "inl")
            return fresh[n]

        made: dict = {}

        def new_var(v: Var) -> Var:
            # before SSA a variable is its name and type: one Var object per pair, as
            # the parser makes them (the printer relies on it)
            key = (name_for(v.name), v.type)
            if key not in made:
                made[key] = Var(key[0], v.type, v.span)
            return made[key]

        var_map: dict[int, object] = {}
        for p, a in zip(g.params, call.args):
            if p.var.name in rebound or not isinstance(a, Var):
                # the body assigns it, or the argument is an expression (evaluated once,
                # as in Python): a local initialised from the argument
                local = new_var(p.var)
                self.pending.append(Assign(local, a, call.span))
                var_map[id(p.var)] = local
            else:
                var_map[id(p.var)] = a
        clone = Clone(var_map, new_var)
        body = clone.body(g.body)
        ret = body.pop() if body and isinstance(body[-1], Return) else None
        self.pending.extend(body)
        if ret is None or not ret.values:
            return None
        if len(ret.values) == 1:
            return ret.values[0]
        return TupleExpr(list(ret.values), call.span)
