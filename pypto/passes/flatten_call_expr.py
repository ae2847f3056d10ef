"""FlattenCallExpr: three-address form. A call nested inside another call's arguments
(`pl.store(pl.add(a, b), ...)`), a yielded or returned call, or a call giving a loop's
initial value, is hoisted into a temporary assigned just before its statement."""
from __future__ import annotations

from pypto.ir.nodes import (While, Assign, Call, Eval, For, IterArg, Program, Return, TupleExpr, Var,
                            Yield)
from pypto.ir.visit import Rewriter, defs, walk
from pypto.passes.base import Namer

NAME = "FlattenCallExpr"
READS = ()


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        namer = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
        out.append(_Flatten(namer).function(f))
    return Program(prog.name, out, prog.source)


class _Flatten(Rewriter):
    def __init__(self, namer):
        self.namer = namer
        self.pending: list = []

    def hoist(self, e, span):
        """Arguments of a call: nested calls become temporaries."""
        if isinstance(e, Call):
            flat = self.call(e, span)
            tmp = Var(self.namer.fresh(_base(flat), "tmp"), flat.type, span)
            self.pending.append(Assign(tmp, flat, span))
            return tmp
        if isinstance(e, TupleExpr):
            return TupleExpr([self.hoist(i, span) for i in e.items], e.span)
        return e

    def call(self, c: Call, span) -> Call:
        return Call(c.op, [self.hoist(a, span) for a in c.args], dict(c.kwargs), c.type,
                    dict(c.attrs), c.span)

    def top(self, e, span):
        return self.call(e, span) if isinstance(e, Call) else self.hoist(e, span)

    def stmt(self, s):
        self.pending = []
        if isinstance(s, Assign):
            new = Assign(s.var, self.top(s.value, s.span), s.span)
        elif isinstance(s, Eval):
            new = Eval(self.top(s.expr, s.span), s.span)
        elif isinstance(s, (Return, Yield)):
            new = type(s)([self.hoist(v, s.span) for v in s.values], s.span)
        elif isinstance(s, For):
            inits = [self.hoist(a.init, s.span) for a in s.iter_args]
            pending = self.pending          # the body's statements reset it
            new = For(s.loop_var, s.start, s.stop, s.step, self.body(s.body),
                      [IterArg(a.var, i) for a, i in zip(s.iter_args, inits)],
                      list(s.return_vars), s.kind, s.span, s.stage, dict(s.attrs))
            return pending + [new]
        elif isinstance(s, While):        # (its condition is evaluated each trip: not hoisted)
            inits = [self.hoist(a.init, s.span) for a in s.iter_args]
            pending = self.pending
            new = While(s.cond, self.body(s.body), [IterArg(a.var, i) for a, i in zip(s.iter_args, inits)],
                        list(s.return_vars), s.span)
            return pending + [new]
        else:
            new = self.default_stmt(s)
            return [new]
        return self.pending + [new]


def _base(c: Call) -> str:
    return c.callee or c.op.split(".")[-1]
