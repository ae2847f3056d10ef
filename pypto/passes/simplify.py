"""Simplify: fold constant scalar arithmetic, propagate scalar constants and plain copies
(`y = x`, as InlineFunctions and UnrollLoops leave them), and drop dead code (pure
operations whose results nobody reads), to a fixed point.

Dropping dead code is also what gives the build graph its early cutoff: a statement
the user added but never used disappears here, so every task after this pass sees
the same program as before and stays cached.
"""
from __future__ import annotations

import operator

from pypto.ir import ops
from pypto.ir.nodes import Assign, BinOp, Call, Const, Function, Program, Var
from pypto.ir.visit import Rewriter, Substitute, bodies, defs, stmt_uses, walk

NAME = "Simplify"
READS = ()

_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
         "%": operator.mod, "min": min, "max": max, "<<": operator.lshift, ">>": operator.rshift,
         "&": operator.and_, "|": operator.or_, "^": operator.xor}


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_function(f) for f in prog.functions], prog.source)


class _Fold(Rewriter):
    def expr(self, e):
        e = super().expr(e)
        if isinstance(e, BinOp) and isinstance(e.lhs, Const) and isinstance(e.rhs, Const):
            a, b = e.lhs.value, e.rhs.value
            if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) \
                    and e.op in _FOLD and not (e.op in ("//", "%") and b == 0):
                return Const(_FOLD[e.op](a, b), e.dtype, e.span)
        return e


def _function(f: Function) -> Function:
    body = f.body
    for _ in range(64):      # each round removes something; the bound is only a guard
        body = _Fold().body(body)
        consts = {id(s.var): s.value for s in walk(body)
                  if isinstance(s, Assign) and isinstance(s.value, Const)}
        consts.update(_copies(f, body))
        if consts:
            body = Substitute(consts).body(body)
        used = {id(v) for s in walk(body) for v in stmt_uses(s)}
        before = _count(body)      # counted first: _drop_dead edits nested bodies in place
        new = _drop_dead(body, used)
        if _count(new) == before and not consts:
            break
        body = new
    return Function(f.name, f.params, f.return_types, body, f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)


def _copies(f: Function, body) -> dict:
    """`y = x` with both bound exactly once and of one type: uses of y read x."""
    count: dict[int, int] = {id(p.var): 1 for p in f.params}
    for s in walk(body):
        for v in defs(s):
            count[id(v)] = count.get(id(v), 0) + 1
    out = {}
    for s in walk(body):
        if isinstance(s, Assign) and isinstance(s.value, Var) and s.value is not s.var \
                and count.get(id(s.var)) == 1 and count.get(id(s.value)) == 1 \
                and s.var.type == s.value.type:
            out[id(s.var)] = s.value
    # a chain y = x; z = y resolves to x
    for k, v in out.items():
        while id(v) in out:
            v = out[id(v)]
        out[k] = v
    return out


def _removable(s, used) -> bool:
    if not isinstance(s, Assign) or id(s.var) in used:
        return False
    v = s.value
    if isinstance(v, (Const, Var, BinOp)):
        return True
    return isinstance(v, Call) and v.callee is None and v.op in ops.OPS and ops.OPS[v.op].pure


def _drop_dead(body, used):
    out = []
    for s in body:
        if _removable(s, used):
            continue
        for b in bodies(s):
            b[:] = _drop_dead(b, used)
        out.append(s)
    return out


def _count(body) -> int:
    return sum(1 for _ in walk(body))



