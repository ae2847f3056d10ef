"""Walking and rewriting the IR: the few generic traversals every pass needs."""
from __future__ import annotations

from typing import Iterator

from pypto.ir.nodes import (Assign, BinOp, Call, Const, Eval, For, Function, If, InCoreScope,
                            IterArg, Program, Return, RuntimeScope, Stmt, TupleExpr, Var, While, Yield,
                            TensorType, TileType)


def bodies(s: Stmt) -> list[list[Stmt]]:
    if isinstance(s, (For, While)):
        return [s.body]
    if isinstance(s, If):
        return [s.then_body] + ([s.else_body] if s.else_body else [])
    if isinstance(s, (InCoreScope, RuntimeScope)):
        return [s.body]
    return []


def walk(body: list[Stmt]) -> Iterator[Stmt]:
    """Every statement, pre-order, descending into nested bodies."""
    for s in body:
        yield s
        for b in bodies(s):
            yield from walk(b)


def stmt_exprs(s: Stmt) -> list:
    if isinstance(s, Assign):
        return [s.value]
    if isinstance(s, Eval):
        return [s.expr]
    if isinstance(s, (Return, Yield)):
        return list(s.values)
    if isinstance(s, For):
        return [s.start, s.stop, s.step] + [a.init for a in s.iter_args]
    if isinstance(s, While):        # (the condition reads the carried values)
        return [a.init for a in s.iter_args] + [s.cond]
    if isinstance(s, If):
        return [s.cond]
    return []


def sub_exprs(e) -> list:
    if isinstance(e, Call):
        return list(e.args)
    if isinstance(e, TupleExpr):
        return list(e.items)
    if isinstance(e, BinOp):
        return [e.lhs, e.rhs]
    return []


def walk_expr(e) -> Iterator:
    yield e
    for c in sub_exprs(e):
        yield from walk_expr(c)


def vars_used(e) -> Iterator[Var]:
    for x in walk_expr(e):
        if isinstance(x, Var):
            yield x


def stmt_uses(s: Stmt) -> Iterator[Var]:
    """Vars read directly by a statement (not its nested bodies)."""
    for e in stmt_exprs(s):
        yield from vars_used(e)
    for t in _stmt_types(s):
        yield from _memref_vars(t)


def users_by_var(stmts) -> dict[int, list]:
    """id(var) -> the statements of `stmts` that read it (a compound statement once for
    each read anywhere inside it)."""
    users: dict[int, list] = {}
    for s in stmts:
        for x in walk([s]):
            for v in stmt_uses(x):
                users.setdefault(id(v), []).append(s)
    return users


def _memref_vars(t):
    m = getattr(t, "memref", None)
    if m is not None and isinstance(m.base, Var):
        yield m.base
    slot = getattr(t, "slot", None)
    if slot is not None:            # the slot index is read where the tile is defined
        yield from vars_used(slot.index)


def _stmt_types(s):
    if isinstance(s, Assign):
        yield s.var.type


def defs(s: Stmt) -> list[Var]:
    """Vars a statement binds in the enclosing scope (or its body, for loops)."""
    if isinstance(s, Assign):
        return [s.var]
    if isinstance(s, For):
        return [s.loop_var] + [a.var for a in s.iter_args] + list(s.return_vars)
    if isinstance(s, While):
        return [a.var for a in s.iter_args] + list(s.return_vars)
    if isinstance(s, If):
        return list(s.return_vars)
    return []


def all_types(p: Program):
    for f in p.functions:
        for prm in f.params:
            yield prm.var.type
        yield from f.return_types
        for s in walk(f.body):
            for v in defs(s):
                yield v.type
            for e in stmt_exprs(s):
                for x in walk_expr(e):
                    t = getattr(x, "type", None)
                    if t is not None:
                        yield t


class Rewriter:
    """Rebuild a body statement by statement. Override `stmt` (return a list of
    statements to splice) and/or `expr`; defaults copy structure, reusing Vars."""

    def body(self, stmts: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: Stmt) -> list[Stmt]:
        return [self.default_stmt(s)]

    def default_stmt(self, s: Stmt) -> Stmt:
        e = self.expr
        if isinstance(s, Assign):
            return Assign(s.var, e(s.value), s.span)
        if isinstance(s, Eval):
            return Eval(e(s.expr), s.span)
        if isinstance(s, Return):
            return Return([e(v) for v in s.values], s.span)
        if isinstance(s, Yield):
            return Yield([e(v) for v in s.values], s.span)
        if isinstance(s, For):
            return For(s.loop_var, e(s.start), e(s.stop), e(s.step), self.body(s.body),
                       [IterArg(a.var, e(a.init)) for a in s.iter_args], list(s.return_vars),
                       s.kind, s.span, s.stage, dict(s.attrs))
        if isinstance(s, While):
            return While(e(s.cond), self.body(s.body), [IterArg(a.var, e(a.init)) for a in s.iter_args],
                         list(s.return_vars), s.span)
        if isinstance(s, If):
            return If(e(s.cond), self.body(s.then_body),
                      self.body(s.else_body) if s.else_body else None, list(s.return_vars), s.span)
        if isinstance(s, InCoreScope):
            return s.with_body(self.body(s.body))
        if isinstance(s, RuntimeScope):
            return RuntimeScope(self.body(s.body), s.manual, s.span)
        raise TypeError(f"unknown statement {s!r}")

    def expr(self, e):
        if isinstance(e, Call):
            return Call(e.op, [self.expr(a) for a in e.args], dict(e.kwargs), e.type,
                        dict(e.attrs), e.span)
        if isinstance(e, TupleExpr):
            return TupleExpr([self.expr(i) for i in e.items], e.span)
        if isinstance(e, BinOp):
            return BinOp(e.op, self.expr(e.lhs), self.expr(e.rhs), e.dtype, e.span)
        return e

    def function(self, f: Function) -> Function:
        return Function(f.name, f.params, f.return_types, self.body(f.body), f.func_type,
                        f.level, f.role, dict(f.attrs), f.span)


class Substitute(Rewriter):
    """Replace uses of Vars by expressions (`mapping` keyed by id(var))."""

    def __init__(self, mapping: dict[int, object]):
        self.mapping = mapping

    def expr(self, e):
        if isinstance(e, Var):
            return self.mapping.get(id(e), e)
        return super().expr(e)


def is_shaped(t) -> bool:
    return isinstance(t, (TensorType, TileType))


def const_int(e) -> int | None:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None
