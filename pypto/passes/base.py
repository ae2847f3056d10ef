"""What every pass shares: its options, and fresh-name generation."""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto import dtype as dt
from pypto.backend import BackendType, Chip, chip
from pypto.ir import ops
from pypto.ir.nodes import Const, TupleExpr, map_slot
from pypto.ir.visit import Rewriter


def index_tuple(values, span) -> TupleExpr:
    """[a, b, ...] of compile-time index constants: a shape or offsets operand."""
    return TupleExpr([Const(v, dt.INDEX, span) for v in values], span)


# elementwise tile ops: each output element depends only on the same element of its
# full-shape operands, so the result may be written over such an operand in place
IN_PLACE_OPS = frozenset({f"tile.{o}" for o in ops.BINARY + ops.UNARY + ops.ROW_EXPAND + ops.COL_EXPAND}
                         | {f"tile.{ops.SCALAR_FORM[o]}" for o in ops.BINARY}
                         | {"tile.fillpad", "tile.fillpad_inplace", "tile.assemble", "tile.write"})


def _default_backend() -> BackendType:
    from pypto.backend import configured_backend
    return configured_backend() or BackendType.Ascend910B


@dataclass(frozen=True)
class PassOptions:
    # default: the process's configured backend (pypto.backend.set_backend_type), else 910B
    backend_type: BackendType = field(default_factory=_default_backend)
    memory_planner: str = "PYPTO"             # PYPTO | DSA_RP | PTOAS
    analyze_auto_scopes_for_deps: bool = False
    l0c_double_buffer: bool = False

    @property
    def chip(self) -> Chip:
        return chip(self.backend_type)

    def read(self, names) -> dict:
        """The subset of options a pass reads (its build key includes only these)."""
        out = {}
        for n in names:
            v = getattr(self, n)
            out[n] = v.value if hasattr(v, "value") else v
        return out


@dataclass
class Namer:
    """Fresh names `<base>__<tag>_v<k>` unique within one function."""
    taken: set = field(default_factory=set)

    def fresh(self, base: str, tag: str) -> str:
        base = base.split("__")[0] or "v"
        k = 0
        while f"{base}__{tag}_v{k}" in self.taken:
            k += 1
        name = f"{base}__{tag}_v{k}"
        self.taken.add(name)
        return name


class Clone(Rewriter):
    """Copy a body with fresh statement objects, mapping Vars through `var_map`
    (keyed by id): a Var the body defines and that is not in the map gets a new Var
    from `new_var(old)` (registered on first sight, so its uses follow); a Var it only
    uses and that is not in the map stays as is. Types are kept (no MemRefs are
    rebased: the passes that clone run before memory planning)."""

    def __init__(self, var_map: dict, new_var):
        self.map = var_map
        self.new_var = new_var

    def define(self, v):
        got = self.map.get(id(v))
        if got is None:
            got = self.new_var(v)
            if got is not v:        # a slot index names Vars of the copied body
                got.type = map_slot(got.type, self.expr)
            self.map[id(v)] = got
        return got

    def expr(self, e):
        from pypto.ir.nodes import Const, Var
        if isinstance(e, Var):
            got = self.map.get(id(e), e)
            return Const(got.value, got.dtype, got.span) if isinstance(got, Const) else got
        return super().expr(e)          # calls, tuples, scalar math: rebuilt, operands mapped

    def body(self, stmts):
        return [self.stmt(s) for s in stmts]

    def stmt(self, s):
        from pypto.ir.nodes import (Assign, Eval, For, If, InCoreScope, IterArg, Return,
                                    RuntimeScope, While, Yield)
        e = self.expr
        if isinstance(s, Assign):
            value = e(s.value)
            return Assign(self.define(s.var), value, s.span)
        if isinstance(s, Eval):
            return Eval(e(s.expr), s.span)
        if isinstance(s, (Return, Yield)):
            return type(s)([e(v) for v in s.values], s.span)
        if isinstance(s, For):
            start, stop, step = e(s.start), e(s.stop), e(s.step)
            inits = [e(a.init) for a in s.iter_args]
            lv = self.define(s.loop_var)
            iters = [IterArg(self.define(a.var), i) for a, i in zip(s.iter_args, inits)]
            body = self.body(s.body)
            return For(lv, start, stop, step, body, iters, [self.define(v) for v in s.return_vars],
                       s.kind, s.span, s.stage, dict(s.attrs))
        if isinstance(s, While):
            inits = [e(a.init) for a in s.iter_args]
            iters = [IterArg(self.define(a.var), i) for a, i in zip(s.iter_args, inits)]
            return While(e(s.cond), self.body(s.body), iters, [self.define(v) for v in s.return_vars],
                         s.span)
        if isinstance(s, If):
            cond = e(s.cond)
            then = self.body(s.then_body)
            other = self.body(s.else_body) if s.else_body else None
            return If(cond, then, other, [self.define(v) for v in s.return_vars], s.span)
        if isinstance(s, InCoreScope):
            return s.with_body(self.body(s.body))
        if isinstance(s, RuntimeScope):
            return RuntimeScope(self.body(s.body), s.manual, s.span)
        raise TypeError(f"cannot clone statement {s!r}")


def function_namer(f) -> Namer:
    """A Namer that knows every name a function already uses."""
    from pypto.ir.visit import defs, walk
    return Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})


def rebind_names(f):
    """Before ConvertToSSA a variable is a name: rebuild `f`'s Vars the way the parser
    binds them, so the program is the one its printed text parses back to. Walking in
    program order, an assignment reuses the Var the name holds when the type is the same
    (else a new Var); a loop makes its own loop variable and carried variables (gone
    after the loop); every use reads the Var its name holds at that point. Passes that
    copy statements before SSA (UnrollLoops, InlineFunctions) end with this."""
    from pypto.ir.nodes import (Assign, BinOp, Call, Const, Eval, For, Function, If,
                                InCoreScope, IterArg, Return, RuntimeScope, TupleExpr, Var,
                                While, Yield)
    env = {p.var.name: p.var for p in f.params}

    def define(v):
        old = env.get(v.name)
        if old is not None and old.type == v.type:
            return old
        nv = Var(v.name, v.type, v.span)
        env[v.name] = nv
        return nv

    def expr(e):
        if isinstance(e, Var):
            return env.get(e.name, e)
        if isinstance(e, Call):
            return Call(e.op, [expr(a) for a in e.args], dict(e.kwargs), e.type, dict(e.attrs), e.span)
        if isinstance(e, TupleExpr):
            return TupleExpr([expr(i) for i in e.items], e.span)
        if isinstance(e, BinOp):
            return BinOp(e.op, expr(e.lhs), expr(e.rhs), e.dtype, e.span)
        if isinstance(e, Const):
            return Const(e.value, e.dtype, e.span)
        return e

    def body(stmts):
        return [stmt(s) for s in stmts]

    def stmt(s):
        if isinstance(s, Assign):
            value = expr(s.value)
            var = define(s.var)
            var.type = map_slot(var.type, expr)
            return Assign(var, value, s.span)
        if isinstance(s, Eval):
            return Eval(expr(s.expr), s.span)
        if isinstance(s, (Return, Yield)):
            return type(s)([expr(v) for v in s.values], s.span)
        if isinstance(s, For):
            start, stop, step = expr(s.start), expr(s.stop), expr(s.step)
            inits = [expr(a.init) for a in s.iter_args]
            scoped = [s.loop_var.name] + [a.var.name for a in s.iter_args]
            saved = {n: env.get(n) for n in scoped}
            lv = Var(s.loop_var.name, s.loop_var.type, s.loop_var.span)
            env[lv.name] = lv
            iters = []
            for a, i in zip(s.iter_args, inits):
                nv = Var(a.var.name, a.var.type, a.var.span)
                env[nv.name] = nv
                iters.append(IterArg(nv, i))
            new_body = body(s.body)
            for n, old in saved.items():
                if old is None:
                    env.pop(n, None)
                else:
                    env[n] = old
            return For(lv, start, stop, step, new_body, iters, [define(v) for v in s.return_vars],
                       s.kind, s.span, s.stage, dict(s.attrs))
        if isinstance(s, While):
            inits = [expr(a.init) for a in s.iter_args]
            saved = {a.var.name: env.get(a.var.name) for a in s.iter_args}
            iters = []
            for a, i in zip(s.iter_args, inits):
                nv = Var(a.var.name, a.var.type, a.var.span)
                env[nv.name] = nv
                iters.append(IterArg(nv, i))
            cond, new_body = expr(s.cond), body(s.body)
            for n, old in saved.items():
                if old is None:
                    env.pop(n, None)
                else:
                    env[n] = old
            return While(cond, new_body, iters, [define(v) for v in s.return_vars], s.span)
        if isinstance(s, If):
            cond = expr(s.cond)
            then = body(s.then_body)
            other = body(s.else_body) if s.else_body else None
            return If(cond, then, other, [define(v) for v in s.return_vars], s.span)
        if isinstance(s, InCoreScope):
            return s.with_body(body(s.body))
        if isinstance(s, RuntimeScope):
            return RuntimeScope(body(s.body), s.manual, s.span)
        raise TypeError(f"cannot rebind statement {s!r}")

    return Function(f.name, f.params, f.return_types, body(f.body), f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)
