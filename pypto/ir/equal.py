"""Structural equality of IR: same shape of tree, same ops, types and constants.

Spans and variable name hints are ignored. Variables are matched by where they are
first met in a parallel walk (definition order), and the matching must be a bijection:
two uses of one Var on the left must be two uses of one Var on the right. MemRef bases
that are Ptr variables are matched the same way.

`assert_structural_equal` raises AssertionError naming the first difference with its
path, e.g. `Program(P).functions[1](kernel).body[3].value.args[0]`.
"""
from __future__ import annotations

import math

from pypto.ir.nodes import (Assign, BinOp, Call, Const, Eval, For, Function, If, InCoreScope, While,
                            MemRef, Program, PtrType, Return, RuntimeScope, ScalarType,
                            TensorType, TileType, TupleExpr, TupleType, Var, Yield)


class _Mismatch(Exception):
    def __init__(self, path: str, what: str):
        super().__init__(f"{path}: {what}")
        self.path = path
        self.what = what


class _Eq:
    def __init__(self):
        self.fwd: dict[int, Var] = {}
        self.bwd: dict[int, Var] = {}

    def fail(self, path, what):
        raise _Mismatch(path, what)

    # ---------------------------------------------------------------- vars
    def var(self, a: Var, b: Var, path: str):
        if not isinstance(a, Var) or not isinstance(b, Var):
            self.fail(path, f"{_show(a)} vs {_show(b)}")
        fa, fb = self.fwd.get(id(a)), self.bwd.get(id(b))
        if fa is None and fb is None:
            self.fwd[id(a)] = b
            self.bwd[id(b)] = a
            self.type(a.type, b.type, f"{path}<{a.name}>.type")
            return
        if fa is not b or fb is not a:
            left = fa.name if fa is not None else "a different variable"
            self.fail(path, f"variable {a.name!r} does not correspond to {b.name!r} "
                            f"(it was matched with {left!r} earlier)")

    # ---------------------------------------------------------------- types
    def type(self, a, b, path):
        if type(a) is not type(b):
            self.fail(path, f"type {_tshow(a)} vs {_tshow(b)}")
        if isinstance(a, ScalarType):
            if a.dtype != b.dtype:
                self.fail(path, f"dtype {a.dtype} vs {b.dtype}")
        elif isinstance(a, (TensorType, TileType)):
            if tuple(a.shape) != tuple(b.shape):
                self.fail(path, f"shape {list(a.shape)} vs {list(b.shape)}")
            if a.dtype != b.dtype:
                self.fail(path, f"dtype {a.dtype} vs {b.dtype}")
            if isinstance(a, TileType) and a.memory_space != b.memory_space:
                self.fail(path, f"memory space {_ename(a.memory_space)} vs {_ename(b.memory_space)}")
            self.memref(a.memref, b.memref, path + ".memref")
        elif isinstance(a, TupleType):
            if len(a.types) != len(b.types):
                self.fail(path, f"tuple of {len(a.types)} vs {len(b.types)} types")
            for i, (x, y) in enumerate(zip(a.types, b.types)):
                self.type(x, y, f"{path}[{i}]")
        elif isinstance(a, PtrType) or a is None:
            pass
        elif a != b:
            self.fail(path, f"type {a!r} vs {b!r}")

    def memref(self, a: MemRef | None, b: MemRef | None, path):
        if a is None or b is None:
            if a is not b:
                self.fail(path, f"{'no memref' if a is None else 'memref'} vs "
                                f"{'no memref' if b is None else 'memref'}")
            return
        if a.offset != b.offset:
            self.fail(path, f"offset {a.offset} vs {b.offset}")
        if a.size != b.size:
            self.fail(path, f"size {a.size} vs {b.size}")
        if isinstance(a.base, Var) or isinstance(b.base, Var):
            self.var(a.base, b.base, path + ".base")
        elif a.base != b.base:
            self.fail(path + ".base", f"{a.base!r} vs {b.base!r}")

    # ---------------------------------------------------------------- exprs
    def expr(self, a, b, path):
        if type(a) is not type(b):
            self.fail(path, f"{_show(a)} vs {_show(b)}")
        if isinstance(a, Var):
            self.var(a, b, path)
        elif isinstance(a, Const):
            if a.dtype != b.dtype:
                self.fail(path, f"constant dtype {a.dtype} vs {b.dtype}")
            if not _same_value(a.value, b.value):
                self.fail(path, f"constant {a.value!r} vs {b.value!r}")
        elif isinstance(a, TupleExpr):
            self.seq(a.items, b.items, path, self.expr, "items")
        elif isinstance(a, BinOp):
            if a.op != b.op:
                self.fail(path, f"operator {a.op!r} vs {b.op!r}")
            if a.dtype != b.dtype:
                self.fail(path, f"dtype {a.dtype} vs {b.dtype}")
            self.expr(a.lhs, b.lhs, path + ".lhs")
            self.expr(a.rhs, b.rhs, path + ".rhs")
        elif isinstance(a, Call):
            if a.op != b.op:
                self.fail(path, f"call of {a.op} vs {b.op}")
            self.seq(a.args, b.args, path, self.expr, "args")
            self.attrs(a.kwargs, b.kwargs, path + ".kwargs")
            self.attrs(a.attrs, b.attrs, path + ".attrs")
        elif not _same_value(a, b):
            self.fail(path, f"{a!r} vs {b!r}")

    def attrs(self, a: dict, b: dict, path):
        if set(a) != set(b):
            self.fail(path, f"keys {sorted(a)} vs {sorted(b)}")
        for k in a:
            if not _same_value(a[k], b[k]):
                self.fail(f"{path}[{k!r}]", f"{a[k]!r} vs {b[k]!r}")

    def seq(self, xs, ys, path, fn, field):
        if len(xs) != len(ys):
            self.fail(f"{path}.{field}", f"{len(xs)} vs {len(ys)} entries")
        for i, (x, y) in enumerate(zip(xs, ys)):
            fn(x, y, f"{path}.{field}[{i}]")

    # ---------------------------------------------------------------- stmts
    def body(self, a, b, path):
        a, b = a or [], b or []
        if len(a) != len(b):
            self.fail(path, f"{len(a)} vs {len(b)} statements "
                            f"({_kinds(a)} vs {_kinds(b)})")
        for i, (x, y) in enumerate(zip(a, b)):
            self.stmt(x, y, f"{path}[{i}]")

    def stmt(self, a, b, path):
        if type(a) is not type(b):
            self.fail(path, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Assign):
            self.expr(a.value, b.value, path + ".value")
            self.var(a.var, b.var, path + ".var")
        elif isinstance(a, Eval):
            self.expr(a.expr, b.expr, path + ".expr")
        elif isinstance(a, (Return, Yield)):
            self.seq(a.values, b.values, path, self.expr, "values")
        elif isinstance(a, For):
            if a.kind != b.kind:
                self.fail(path, f"loop kind {a.kind.value} vs {b.kind.value}")
            if a.stage != b.stage or a.attrs != b.attrs:
                self.fail(path, f"loop stage/attrs {a.stage} {a.attrs} vs {b.stage} {b.attrs}")
            for f in ("start", "stop", "step"):
                self.expr(getattr(a, f), getattr(b, f), f"{path}.{f}")
            if len(a.iter_args) != len(b.iter_args):
                self.fail(path + ".iter_args", f"{len(a.iter_args)} vs {len(b.iter_args)}")
            for i, (x, y) in enumerate(zip(a.iter_args, b.iter_args)):
                self.expr(x.init, y.init, f"{path}.iter_args[{i}].init")
            self.var(a.loop_var, b.loop_var, path + ".loop_var")
            for i, (x, y) in enumerate(zip(a.iter_args, b.iter_args)):
                self.var(x.var, y.var, f"{path}.iter_args[{i}].var")
            self.body(a.body, b.body, path + ".body")
            self.seq(a.return_vars, b.return_vars, path, self.var, "return_vars")
        elif isinstance(a, While):
            if len(a.iter_args) != len(b.iter_args):
                self.fail(path + ".iter_args", f"{len(a.iter_args)} vs {len(b.iter_args)}")
            for i, (x, y) in enumerate(zip(a.iter_args, b.iter_args)):
                self.expr(x.init, y.init, f"{path}.iter_args[{i}].init")
                self.var(x.var, y.var, f"{path}.iter_args[{i}].var")
            self.expr(a.cond, b.cond, path + ".cond")
            self.body(a.body, b.body, path + ".body")
            self.seq(a.return_vars, b.return_vars, path, self.var, "return_vars")
        elif isinstance(a, If):
            self.expr(a.cond, b.cond, path + ".cond")
            self.body(a.then_body, b.then_body, path + ".then_body")
            if (a.else_body is None) != (b.else_body is None) and (a.else_body or b.else_body):
                self.fail(path + ".else_body", "else branch present on one side only")
            self.body(a.else_body, b.else_body, path + ".else_body")
            self.seq(a.return_vars, b.return_vars, path, self.var, "return_vars")
        elif isinstance(a, InCoreScope):
            if a.name_hint != b.name_hint:
                self.fail(path, f"name_hint {a.name_hint!r} vs {b.name_hint!r}")
            self.body(a.body, b.body, path + ".body")
        elif isinstance(a, RuntimeScope):
            if a.manual != b.manual:
                self.fail(path, f"manual {a.manual} vs {b.manual}")
            self.body(a.body, b.body, path + ".body")
        else:
            self.fail(path, f"unknown statement {type(a).__name__}")

    # ---------------------------------------------------------------- functions
    def function(self, a: Function, b: Function, path):
        self.fwd, self.bwd = {}, {}
        if a.name != b.name:
            self.fail(path, f"function name {a.name!r} vs {b.name!r}")
        for f in ("func_type", "level", "role"):
            x, y = getattr(a, f), getattr(b, f)
            if x != y:
                self.fail(f"{path}.{f}", f"{_ename(x)} vs {_ename(y)}")
        self.attrs(a.attrs, b.attrs, path + ".attrs")
        if len(a.params) != len(b.params):
            self.fail(path + ".params", f"{len(a.params)} vs {len(b.params)} parameters")
        for i, (x, y) in enumerate(zip(a.params, b.params)):
            if x.direction != y.direction:
                self.fail(f"{path}.params[{i}]", f"direction {x.direction.value} vs {y.direction.value}")
            self.var(x.var, y.var, f"{path}.params[{i}]")
        if len(a.return_types) != len(b.return_types):
            self.fail(path + ".return_types", f"{len(a.return_types)} vs {len(b.return_types)}")
        for i, (x, y) in enumerate(zip(a.return_types, b.return_types)):
            self.type(x, y, f"{path}.return_types[{i}]")
        self.body(a.body, b.body, path + ".body")

    def program(self, a: Program, b: Program, path):
        if a.name != b.name:
            self.fail(path, f"program name {a.name!r} vs {b.name!r}")
        na, nb = [f.name for f in a.functions], [f.name for f in b.functions]
        if na != nb:
            self.fail(path + ".functions", f"functions {na} vs {nb}")
        for i, (x, y) in enumerate(zip(a.functions, b.functions)):
            self.function(x, y, f"{path}.functions[{i}]({x.name})")


def _same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return set(a) == set(b) and all(_same_value(a[k], b[k]) for k in a)
    return a == b


def _ename(v) -> str:
    return "None" if v is None else getattr(v, "name", str(v))


def _show(x) -> str:
    if isinstance(x, Var):
        return f"Var({x.name})"
    if isinstance(x, Const):
        return f"Const({x.value!r}, {x.dtype})"
    if isinstance(x, Call):
        return f"Call({x.op})"
    return type(x).__name__


def _tshow(t) -> str:
    return "None" if t is None else type(t).__name__


def _kinds(stmts) -> str:
    return ", ".join(type(s).__name__ for s in stmts[:6]) + (", ..." if len(stmts) > 6 else "")


def _compare(a, b):
    eq = _Eq()
    if isinstance(a, Program) or isinstance(b, Program):
        if type(a) is not type(b):
            raise _Mismatch("<root>", f"{type(a).__name__} vs {type(b).__name__}")
        eq.program(a, b, f"Program({a.name})")
    elif isinstance(a, Function) or isinstance(b, Function):
        if type(a) is not type(b):
            raise _Mismatch("<root>", f"{type(a).__name__} vs {type(b).__name__}")
        eq.function(a, b, f"Function({a.name})")
    elif isinstance(a, list) and isinstance(b, list):
        eq.body(a, b, "body")
    elif isinstance(a, (Assign, Eval, Return, Yield, For, While, If, InCoreScope, RuntimeScope)):
        eq.stmt(a, b, "stmt")
    else:
        eq.expr(a, b, "expr")


def structural_equal(a, b) -> bool:
    """True when a and b (Programs, Functions, bodies, statements or expressions) are
    the same up to spans and variable names."""
    try:
        _compare(a, b)
    except _Mismatch:
        return False
    return True


def assert_structural_equal(a, b) -> None:
    """Raise AssertionError describing the first difference (with its path)."""
    try:
        _compare(a, b)
    except _Mismatch as m:
        raise AssertionError(f"IR differs at {m.path}: {m.what}") from None


__all__ = ["structural_equal", "assert_structural_equal"]
