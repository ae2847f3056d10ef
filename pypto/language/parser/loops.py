"""The Parser's loops: for over pl.range / pl.parallel / pl.unroll / pl.pipeline (with
init_values, stage= and attrs=), while loops and their pl.while_ form."""
from __future__ import annotations

import ast
import copy

from pypto.language.parser.continues import first_break, has_break, without_continue
from pypto.language.parser.common import (Call, Const, For, ForKind, IterArg, ScalarType, TensorType,
                                          TileType, TupleExpr, TypeCheckError, Var, While, _INT_DTYPES,
                                          _LOOP_KINDS, _const_range, _kind, _same_shape_dtype, dt, ops)


class LoopsMixin:
    def for_(self, s: ast.For, span):
        if s.orelse:
            self.error("for ... else is not supported", s, "remove the else branch")
        body = without_continue(s.body)
        if body is not s.body:                 # continue -> the rest under the other branch
            s = copy.copy(s)
            s.body = body
        it = s.iter
        if not isinstance(it, ast.Call):
            self.error(f"`for ... in {ast.unparse(it)}` is not supported", s,
                       "loop with for i in pl.range(n): / pl.parallel(n) / pl.unroll(...)")
        if isinstance(it.func, ast.Name) and it.func.id == "range" and "range" not in self.statics:
            self.error("the Python builtin range() cannot be used inside a kernel", s,
                       "use pl.range(...)")
        fobj = self.static(it.func, "the loop iterable")
        kname = _kind(fobj)
        if kname == "while_":
            return self.while_loop(s, it, span)
        if kname == "spmd":
            return self.spmd_loop(s, it, span)
        if kname == "split_aiv":
            return self.split_aiv_loop(s, it, span)
        if kname not in _LOOP_KINDS:
            self.error(f"`for ... in {ast.unparse(it.func)}(...)` is not supported", s,
                       "loop with pl.range, pl.parallel or pl.unroll")
        kind = _LOOP_KINDS[kname]
        bounds = [self.expr(a) for a in it.args]
        init_node, stage, attrs = None, None, {}
        for kw in it.keywords:
            if kw.arg == "init_values":
                init_node = kw.value
            elif kw.arg == "stage" and kname == "pipeline":
                stage = self.static(kw.value, "stage=")
                if not isinstance(stage, int) or isinstance(stage, bool) or stage < 1:
                    self.error(f"pl.pipeline stage= is a positive integer, got {stage!r}", s,
                               "pl.pipeline(0, n, stage=2)")
            elif kw.arg == "attrs" and kind is not ForKind.Unroll:
                attrs = self.loop_attrs(kw.value, s)
            else:
                self.error(f"pl.{kname}() got an unexpected keyword argument {kw.arg!r}", s,
                           f"pl.{kname}(start, stop, step, init_values=(...))")
        if kname == "pipeline" and not any(kw.arg == "stage" for kw in it.keywords):
            self.error("pl.pipeline needs stage=: how many stages the loop overlaps", s,
                       "for i in pl.pipeline(0, n, stage=2):")
        if not 1 <= len(bounds) <= 3:
            self.error(f"pl.{kname} takes 1 to 3 bounds, got {len(bounds)}", s,
                       f"pl.{kname}(stop) or pl.{kname}(start, stop[, step])")
        for b, n in zip(bounds, it.args):
            bt = getattr(b, "type", None)
            if not isinstance(bt, ScalarType) or bt.dtype not in _INT_DTYPES:
                self.error(f"loop bound `{ast.unparse(n)}` must be an integer scalar, got {ops._tname(bt)}", n,
                           "loop bounds are integers (pl.INDEX): write 2, not 2.0, and pass runtime "
                           "counts as `n: pl.INDEX` parameters")
            if kind is ForKind.Unroll and not isinstance(b, Const):
                self.error("pl.unroll bounds must be constants", n, "use pl.range for runtime bounds")
        one = lambda: self.lit(Const(1, dt.INDEX, span))   # noqa: E731
        zero = lambda: self.lit(Const(0, dt.INDEX, span))  # noqa: E731
        if len(bounds) == 1:
            start, stop, step = zero(), bounds[0], one()
        elif len(bounds) == 2:
            start, stop, step = bounds[0], bounds[1], one()
        else:
            start, stop, step = bounds
        if isinstance(step, Const) and step.value == 0:
            self.error("loop step must not be 0", s,
                       "a loop advances by a non-zero step: pl.range(start, stop, step) with step >= 1 "
                       "(or negative to count down)")
        inits = []
        if init_node is not None:
            if kind is ForKind.Unroll:
                self.error("pl.unroll does not carry values (no init_values)", s,
                           "use pl.range(..., init_values=(...)) for carried values")
            if not isinstance(init_node, (ast.Tuple, ast.List)):
                self.error("init_values must be a tuple", s,
                           "write a tuple even for one value: init_values=(x,) and bind it as "
                           "for i, (acc,) in pl.range(n, init_values=(x,)):")
            inits = [self.expr(e) for e in init_node.elts]
            for e, n in zip(inits, init_node.elts):
                if getattr(e, "type", None) is None or isinstance(e, TupleExpr):
                    self.error(f"init value `{ast.unparse(n)}` is not a value", n)
        # targets
        tgt = s.target
        if inits:
            if not (isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2 and isinstance(tgt.elts[0], ast.Name)):
                self.error("a loop with init_values binds `i, (a, b)`", s,
                           f"for i, ({', '.join('v%d' % k for k in range(len(inits)))},) in pl.{kname}(..., init_values=(...)):")
            lv_name = tgt.elts[0].id
            carried = tgt.elts[1]
            c_elts = carried.elts if isinstance(carried, (ast.Tuple, ast.List)) else [carried]
            if not all(isinstance(e, ast.Name) for e in c_elts):
                self.error("carried values must be bound to plain names", s)
            c_names = [e.id for e in c_elts]
            if len(c_names) != len(inits):
                self.error(f"the loop binds {len(c_names)} carried names but init_values has {len(inits)}", s)
        else:
            if not isinstance(tgt, ast.Name):
                self.error(f"loop target `{ast.unparse(tgt)}` is not supported", s,
                           "for i in pl.range(n):  (carried values need init_values=(...))")
            lv_name, c_names = tgt.id, []
        env = self.ctx.env
        scoped = [lv_name] + c_names
        saved = {n: env.get(n) for n in scoped}
        hidden = env.get(lv_name)
        if hidden is not None and isinstance(hidden.type, (TensorType, TileType)):
            kind_of = "tensor" if isinstance(hidden.type, TensorType) else "tile"
            self.error(f"the loop index {lv_name!r} hides the {kind_of} {lv_name!r}", s,
                       f"give the index its own name: for i in pl.{kname}(...):")
        loop_var = Var(lv_name, ScalarType(dt.INDEX), span)
        env[lv_name] = loop_var
        iter_args = []
        for n, init in zip(c_names, inits):
            v = Var(n, init.type, span)
            env[n] = v
            iter_args.append(IterArg(v, init))
        self.ctx.loops += 1
        extent = _const_range(start, stop, step)
        if extent is not None:
            self.ctx.ranges[id(loop_var)] = (loop_var, *extent)
        try:
            body, y = self.block(s.body, allow_yield=True)
        finally:
            self.ctx.loops -= 1
            self.ctx.ranges.pop(id(loop_var), None)
        self.ctx.cur, self.ctx.marked = span, bool(self.src.header_marker(s))
        _restore(env, saved)
        rets = []
        if iter_args:
            if y is None:
                self.error("a loop with init_values must end with `r = pl.yield_(...)`", s,
                           "yield the next value of each carried variable as the last statement")
            if len(y.stmt.values) != len(iter_args):
                raise TypeCheckError(f"pl.yield_ gives {len(y.stmt.values)} values but the loop "
                                     f"carries {len(iter_args)}", y.stmt.span,
                                     "yield one value per init_values entry")
            for ia, v in zip(iter_args, y.stmt.values):
                if not _same_shape_dtype(getattr(v, "type", None), ia.var.type):
                    raise TypeCheckError(
                        f"carried value {ia.var.name!r} is {ops._tname(ia.var.type)} but the loop "
                        f"yields {ops._tname(getattr(v, 'type', None))}", y.stmt.span,
                        "a carried value keeps its shape and dtype across iterations")
            if y.targets:
                if len(y.targets) != len(iter_args):
                    self.error(f"pl.yield_ binds {len(y.targets)} names but the loop carries "
                               f"{len(iter_args)} values", s)
                rets = [self.define(n, ia.var.type, y.stmt.span) for n, ia in zip(y.targets, iter_args)]
        elif y is not None and (y.stmt.values or y.targets):
            self.error("pl.yield_ in a loop without init_values", s,
                       "carry values explicitly: for i, (acc,) in pl.range(n, init_values=(x,)):")
        return For(loop_var, start, stop, step, body, iter_args, rets, kind, span, stage, attrs)

    def loop_attrs(self, node, s) -> dict:
        """attrs={"name": value, ...} of a loop: names from FOR_ATTRS, constant values."""
        from pypto.ir.nodes import FOR_ATTRS
        got = self.static(node, "attrs=")
        if not isinstance(got, dict):
            self.error(f"loop attrs= is a dict, got {got!r}", s, 'attrs={"pipeline_double_buffer_c": True}')
        for k, v in got.items():
            if k not in FOR_ATTRS:
                self.error(f"unknown loop attribute {k!r}", s,
                           "loop attributes: " + ", ".join(f"{n} ({d})" for n, d in FOR_ATTRS.items()))
            if not isinstance(v, bool):
                self.error(f"loop attribute {k!r} is True or False, got {v!r}", s)
        return dict(got)

    def while_(self, s: ast.While, span):
        """`while cond:` -- the names the body rebinds are carried (ConvertToSSA makes
        them the loop's iter_args; the condition reads them)."""
        if s.orelse:
            self.error("while ... else is not supported", s, "remove the else branch")
        if has_break(s.body):
            self.error("break in a while loop is not supported", first_break(s.body),
                       "fold the exit into the loop's condition")
        cond = self.loop_cond(s.test)
        if isinstance(cond, Const) and cond.value:
            self.error(f"`while {ast.unparse(s.test)}:` never ends (break is not supported in while "
                       f"loops)", s, "loop while a carried value says so: i = 0 / while i < n: ... "
                                     "i = i + 1; or use for i in pl.range(n):")
        body = without_continue(s.body)
        self.ctx.loops += 1
        self.ctx.ifs += 1          # (no window check by iteration: the trip count is unknown)
        try:
            stmts, y = self.block(body, allow_yield=True)
        finally:
            self.ctx.loops -= 1
            self.ctx.ifs -= 1
        self.ctx.cur, self.ctx.marked = span, bool(self.src.header_marker(s))
        if y is not None and (y.stmt.values or y.targets):
            self.error("pl.yield_ in a plain while loop", s,
                       "rebind the names the loop carries (i = i + 1); or write the explicit form "
                       "for (x,) in pl.while_(init_values=(x0,)):")
        return While(cond, stmts, [], [], span)

    def loop_cond(self, node):
        cond = self.expr(node)
        ct = getattr(cond, "type", None)
        if not isinstance(ct, ScalarType):
            self.error(f"a while condition must be a scalar, got {ops._tname(ct)}", node,
                       "compare scalars: while i < n:")
        return cond

    def while_loop(self, s: ast.For, it: ast.Call, span):
        """`for (x, y) in pl.while_(init_values=(x0, y0)):` with `pl.cond(...)` first and
        `x2, y2 = pl.yield_(...)` last: a while loop carrying x and y explicitly."""
        init_node = next((kw.value for kw in it.keywords if kw.arg == "init_values"), None)
        if it.args or init_node is None or not isinstance(init_node, (ast.Tuple, ast.List)) \
                or any(kw.arg != "init_values" for kw in it.keywords):
            self.error("pl.while_ takes init_values=(...) only", s,
                       "for (x,) in pl.while_(init_values=(x0,)):")
        tgt = s.target
        elts = tgt.elts if isinstance(tgt, (ast.Tuple, ast.List)) else [tgt]
        if not all(isinstance(e, ast.Name) for e in elts) or len(elts) != len(init_node.elts):
            self.error("a pl.while_ loop binds one name per init value: for (x, y) in pl.while_(...)", s)
        first = s.body[0] if s.body else None
        fcall = getattr(first, "value", None) if isinstance(first, ast.Expr) else None
        if not (isinstance(fcall, ast.Call) and _kind(self.static(fcall.func, "pl.cond")) == "cond"
                and len(fcall.args) == 1):
            self.error("a pl.while_ loop starts with pl.cond(condition)", first or s,
                       "for (x,) in pl.while_(init_values=(x0,)):\n    pl.cond(x < n)")
        inits = [self.expr(e) for e in init_node.elts]
        env = self.ctx.env
        names = [e.id for e in elts]
        saved = {n: env.get(n) for n in names}
        iter_args = []
        for n, init in zip(names, inits):
            v = Var(n, init.type, span)
            env[n] = v
            iter_args.append(IterArg(v, init))
        cond = self.loop_cond(fcall.args[0])
        self.ctx.loops += 1
        self.ctx.ifs += 1
        try:
            body, y = self.block(s.body[1:], allow_yield=True)
        finally:
            self.ctx.loops -= 1
            self.ctx.ifs -= 1
        self.ctx.cur, self.ctx.marked = span, bool(self.src.header_marker(s))
        _restore(env, saved)
        if y is None or len(y.stmt.values) != len(iter_args):
            self.error("a pl.while_ loop ends with `r = pl.yield_(...)`, one value per init value", s)
        rets = []
        if y.targets:
            rets = [self.define(n, ia.var.type, y.stmt.span) for n, ia in zip(y.targets, iter_args)]
        return While(cond, body, iter_args, rets, span)


def _restore(env: dict, saved: dict) -> None:
    """Put back the names a loop bound for its body (its index, its carried values)."""
    for n, old in saved.items():
        if old is None:
            env.pop(n, None)
        else:
            env[n] = old
