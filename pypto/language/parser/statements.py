"""The Parser's statements: assignments, if/else, with pl.at / pl.scope, returns (loops:
loops.py)."""
from __future__ import annotations

import ast

from pypto.language.parser.continues import first_break, has_break, without_break
from pypto.ir.nodes import KERNEL_TYPES, DynDim
from pypto.language.parser.common import (ArrayType, Assign, Call, Const, Eval, For, If, InCoreScope, Level,
                                          PtrType, PyptoError, Return, RuntimeScope, ScalarType, TensorType,
                                          TileType, TupleExpr, TupleType, TypeCheckError, Var, While, Yield,
                                          _YieldInfo, _adoptable, _kind, _lang, _same_shape_dtype,
                                          _type_text, _unsupported, dt, ops)
from pypto.language.parser.loops import LoopsMixin



def _dyn_refines(value_shape, ann_shape) -> bool:
    """Each annotated dim is the value's, or a number where the value's is a runtime dim."""
    return len(value_shape) == len(ann_shape) and all(
        v == a or isinstance(v, DynDim) and isinstance(a, int) for v, a in zip(value_shape, ann_shape))

class StatementsMixin(LoopsMixin):
    # ================================================================== statements
    def block(self, stmts, allow_yield: bool):
        out, yinfo = [], None
        for i, s in enumerate(stmts):
            if self.is_yield(s):
                self.set_cur(s)
                if not allow_yield or i != len(stmts) - 1:
                    self.error("pl.yield_ must be the last statement of a loop body or an if/else branch",
                               s, "move it to the end of the body")
                yinfo = self.yield_stmt(s)
                out.append(yinfo.stmt)
                continue
            if out and isinstance(out[-1], Return):
                self.set_cur(s)
                self.error("this statement comes after `return` and is never reached", s,
                           "return ends the function: move the return to the end")
            out.extend(self.stmt(s))
        return out, yinfo

    def set_cur(self, s):
        compound = isinstance(s, (ast.For, ast.If, ast.With, ast.While, ast.FunctionDef))
        self.ctx.cur, self.ctx.marked = self.stmt_span(s, compound)

    def is_yield(self, s) -> bool:
        call = None
        if isinstance(s, ast.Expr):
            call = s.value
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            call = s.value
        if not isinstance(call, ast.Call):
            return False
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self.statics):
            return False           # e.g. self.kernel(...): not a module-level name
        try:
            return _kind(self.static(call.func)) == "yield_"
        except PyptoError:
            return False

    def yield_stmt(self, s) -> _YieldInfo:
        call = s.value
        targets = None
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                self.error("chained assignment is not supported", s)
            t = s.targets[0]
            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
            if not all(isinstance(e, ast.Name) for e in elts):
                self.error("pl.yield_ results must be bound to plain names", s, "a, b = pl.yield_(x, y)")
            targets = [e.id for e in elts]
        elif isinstance(s, ast.AnnAssign):
            if not isinstance(s.target, ast.Name):
                self.error("pl.yield_ results must be bound to plain names", s)
            targets = [s.target.id]
        if call.keywords:
            self.error("pl.yield_ takes positional values only", s)
        values = [self.expr(a) for a in call.args]
        return _YieldInfo(Yield(values, self.ctx.cur), targets)

    def stmt(self, s) -> list:
        self.set_cur(s)
        span = self.ctx.cur
        if isinstance(s, ast.Assign):
            return self.assign(s, span)
        if isinstance(s, ast.AnnAssign):
            return self.ann_assign(s, span)
        if isinstance(s, ast.AugAssign):
            return self.aug_assign(s, span)
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []      # docstring / string comment
            if not isinstance(s.value, ast.Call):
                self.error(f"the expression `{ast.unparse(s.value)}` has no effect", s,
                           "assign its value to a name, or remove it")
            if self.is_submit(s.value):
                return self.submit(None, s.value, span)
            e = self.expr(s.value)
            return [Eval(e, span)]
        if isinstance(s, ast.Return):
            self.check_return_position(s)
            if s.value is None:
                vals = []
            elif isinstance(s.value, ast.Tuple):
                vals = [self.expr(e) for e in s.value.elts]
            else:
                vals = [self.expr(s.value)]
            for v, n in zip(vals, s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]):
                if isinstance(v, TupleExpr) or getattr(v, "type", None) is None:
                    self.error(f"cannot return `{ast.unparse(n)}`", n,
                               "return tensors, tiles or scalars: return a, b")
            return [Return(vals, span)]
        if isinstance(s, ast.For) and self.is_spmd_loop(s):
            return self.for_(s, span)
        if isinstance(s, ast.For):
            if has_break(s.body):
                if _yields_last(s.body):
                    brk = first_break(s.body)
                    self.set_cur(brk)            # (the break's own line, in marked text too)
                    self.error("break in a loop with init_values is not supported", brk,
                               "carry the values by rebinding names (x = ...) in a plain pl.range loop")
                init, s = without_break(s)       # a flag, the body run while it is clear
                return self.stmt(init) + [self.for_(s, span)]
            return [self.for_(s, span)]
        if isinstance(s, ast.While):
            return [self.while_(s, span)]
        if isinstance(s, ast.If):
            return [self.if_(s, span)]
        if isinstance(s, ast.With):
            return self.with_(s, span)
        if isinstance(s, ast.Pass):
            return []
        name = type(s).__name__
        self.error(f"unsupported statement: {name.lower() if name in ('While', 'Try', 'Break', 'Continue') else name}",
                   s, _unsupported(name))

    def check_return_position(self, s: ast.Return) -> None:
        """`return` ends the function: never inside a loop or a pl.at region (a region
        is a kernel of its own and returns nothing)."""
        c = self.ctx
        if c.incore:
            self.error("return inside a pl.at region", s,
                       "a pl.at region runs on the device and returns nothing: write results into "
                       "tensors (o[:] = ...) and `return o` after the with block")
        if c.loops:
            self.error("return inside a loop", s,
                       "a function cannot leave a loop early: let the loop finish and return after it")

    def define(self, name: str, t, span) -> Var:
        env = self.ctx.env
        if name == "self" or self.statics.get(name) is _lang():
            self.error(f"cannot assign to {name!r}: the name is reserved", None,
                       "choose another variable name")
        old = env.get(name)
        if old is not None and old.type == t:
            return old
        v = Var(name, t, span)
        env[name] = v
        return v

    def bind_value(self, name: str, value, node, span) -> Var:
        t = getattr(value, "type", None)
        if t is None and isinstance(value, Call) and value.callee is not None:
            self.error(f"`{value.callee}` returns nothing, so there is no value to assign to {name!r}",
                       node, f"end {value.callee} with `return <the Out tensor it writes>`, or call it "
                             f"as a statement")
        if t is None or isinstance(value, TupleExpr):
            what = "a list" if isinstance(value, TupleExpr) else "no value"
            self.error(f"cannot assign {what} to {name!r}", node,
                       "assign the result of an operator or of a function that returns a value")
        return self.define(name, t, span)

    def assign(self, s: ast.Assign, span):
        if len(s.targets) != 1:
            self.error("chained assignment `a = b = ...` is not supported", s, "assign each name on its own line")
        t = s.targets[0]
        if self.is_submit(s.value):
            return self.submit(t, s.value, span)
        if isinstance(t, ast.Subscript):
            return self.region_write(t, s.value, span)
        if isinstance(t, ast.Name):
            val = self.expr(s.value)
            self.check_out_rebind(t.id, val, s)
            return [Assign(self.bind_value(t.id, val, s, span), val, span)]
        if isinstance(t, (ast.Tuple, ast.List)):
            return self.unpack(t, s, span)
        self.error(f"cannot assign to `{ast.unparse(t)}`", s)

    def unpack(self, t, s: ast.Assign, span):
        """`a, b = self.f(...)`: the values a function returns, one name each (the tuple
        itself bound to a name of its own, read back element by element)."""
        names = []
        for e in t.elts:
            if not isinstance(e, ast.Name):
                self.error(f"cannot unpack into `{ast.unparse(e)}`", s, "unpack into plain names: a, b = ...")
            names.append(e.id)
        if isinstance(s.value, (ast.Tuple, ast.List)):      # a, b = x, y: every value first
            if len(s.value.elts) != len(names):
                self.error(f"{len(s.value.elts)} values for {len(names)} names", s,
                           "give one value per name")
            vals = [self.expr(e) for e in s.value.elts]
            out = []
            for name, val in zip(names, vals):
                self.check_out_rebind(name, val, s)
                out.append(Assign(self.bind_value(name, val, s, span), val, span))
            if any(isinstance(v, Var) and v.name in names for v in vals):
                self.error("a, b = b, a: the names read on the right are also assigned", s,
                           "assign through a temporary name, one line each")
            return out
        val = self.expr(s.value)
        vt = getattr(val, "type", None)
        if not isinstance(vt, TupleType):
            self.error(f"`{ast.unparse(s.value)}` gives one value, not {len(names)}", s,
                       "unpack the call of a function that returns several values")
        if len(vt.types) != len(names):
            self.error(f"`{ast.unparse(s.value)}` gives {len(vt.types)} values but {len(names)} names "
                       f"receive them", s, "give one name per returned value")
        tup = self.define("_".join(names) + "__ret", vt, span)
        out = [Assign(tup, val, span)]
        for i, name in enumerate(names):
            item = ops.tuple_get(tup, i, span)
            self.check_out_rebind(name, val, s)
            out.append(Assign(self.bind_value(name, item, s, span), item, span))
        return out

    def ann_assign(self, s: ast.AnnAssign, span):
        if not isinstance(s.target, ast.Name):
            self.error(f"cannot annotate `{ast.unparse(s.target)}`", s,
                       "annotate plain names: x: pl.Tile[[64, 64], pl.FP32] = ...")
        if s.value is None:
            self.error(f"{s.target.id!r} is declared without a value", s,
                       "give it a value: x: T = expr")
        self.valid_values = {}
        ann, _ = self.ann_type(s.annotation, allow_tuple=True)
        self.annotated = ann               # (a pipe pop's tile type may come from it)
        try:
            val = self.expr(s.value)
        finally:
            self.annotated = None
        if isinstance(ann, ScalarType) and isinstance(val, Const) and id(val) in self._lit \
                and _adoptable(val, val.dtype, ann.dtype):
            val = Const(self.retype(val, ann.dtype).value, ann.dtype, val.span)
        t = self.reconcile(ann, getattr(val, "type", None), s)
        return [Assign(self.define(s.target.id, t, span), val, span)]

    def reconcile(self, ann, vt, node):
        """The annotation is authoritative; it must agree with the value's inferred type
        (shape, dtype, kind). Memref and memory space come from the annotation (the space
        from the value when the annotation has none)."""
        name = node.target.id if isinstance(node, ast.AnnAssign) else "value"
        bad = None
        if vt is None:
            bad = "the value has no type (the call returns nothing)"
        elif isinstance(ann, (TensorType, TileType)):
            if type(vt) is not type(ann):
                bad = f"the value is {ops._tname(vt)}"
            elif isinstance(ann, TensorType) and tuple(vt.shape) != tuple(ann.shape) \
                    and _dyn_refines(vt.shape, ann.shape) and vt.dtype == ann.dtype:
                # a number where the value's dim is only known at run time: the dim stays
                # the runtime one (the annotation cannot be checked before the run)
                return TensorType(tuple(vt.shape), vt.dtype, ann.memref, vt.valid)
            elif tuple(vt.shape) != tuple(ann.shape):
                bad = f"the value has shape {list(vt.shape)}"
            elif vt.dtype != ann.dtype:
                bad = f"the value has dtype {vt.dtype}"
            elif isinstance(ann, TileType):
                # the valid region comes from the value (an annotation may restate it)
                if ann.valid is not None and ann.valid_shape != vt.valid_shape:
                    bad = f"the value's valid shape is {list(vt.valid_shape)}"
                elif ann.memory_space is None:
                    return TileType(ann.shape, ann.dtype, vt.memory_space, ann.memref, vt.valid, ann.slot)
                elif vt.memory_space is not None and vt.memory_space != ann.memory_space:
                    bad = f"the value lives in {vt.memory_space.name}, not {ann.memory_space.name}"
                else:
                    return TileType(ann.shape, ann.dtype, ann.memory_space, ann.memref, vt.valid, ann.slot)
        elif isinstance(ann, ScalarType):
            if not isinstance(vt, ScalarType):
                bad = f"the value is {ops._tname(vt)}"
            elif vt.dtype != ann.dtype and {vt.dtype, ann.dtype} != {dt.INDEX, dt.INT64}:
                bad = f"the value has dtype {vt.dtype}"     # (an index is a 64-bit integer)
        elif isinstance(ann, PtrType):
            if not isinstance(vt, PtrType):
                bad = f"the value is {ops._tname(vt)}"
        elif isinstance(ann, TupleType):
            if not isinstance(vt, TupleType) or len(vt.types) != len(ann.types) or \
                    not all(_same_shape_dtype(a, b) for a, b in zip(vt.types, ann.types)):
                bad = "the value's types differ"
        if bad:
            raise TypeCheckError(f"annotation of {name!r} says {_type_text(ann)} but {bad}",
                                 self.span(node), "fix the annotation or the expression (pl.cast converts dtypes)")
        return ann

    def aug_assign(self, s: ast.AugAssign, span):
        if not isinstance(s.target, ast.Name):
            self.error("augmented assignment to a sub-region is not supported", s,
                       "write dst[...] = pl.add(...) instead")
        cur = self.ctx.env.get(s.target.id)
        if cur is None:
            self.undefined(s.target)
        if not isinstance(cur.type, ScalarType):
            self.error(f"augmented assignment `{ast.unparse(s)}` on a tensor/tile is not supported",
                       s, f"write {s.target.id} = pl.<op>({s.target.id}, ...) explicitly")
        val = self.binop(ast.copy_location(ast.BinOp(s.target, s.op, s.value), s))
        val = self.to_expr(val, s)
        return [Assign(self.bind_value(s.target.id, val, s, span), val, span)]

    def region_write(self, t: ast.Subscript, value_node, span):
        if not isinstance(t.value, ast.Name):
            self.error(f"cannot assign to `{ast.unparse(t)}`", t, "write into a tensor variable: out[...] = v")
        name = t.value.id
        dst = self.ctx.env.get(name)
        if dst is None:
            self.undefined(t.value)
        if isinstance(dst.type, ArrayType):      # arr[i] = v: the array's next value
            if isinstance(t.slice, (ast.Tuple, ast.Slice)):
                self.error(f"`{ast.unparse(t)}`: an array is indexed by one integer", t, "arr[i] = v")
            val = self.expr(value_node)
            if self.is_literal_number(val) and _adoptable(val, val.dtype, dst.type.dtype):
                val = self.retype(val, dst.type.dtype)          # arr[0] = 1 into an int32 array
            call = self.op_call_values("update_element", "array", [dst, self.expr(t.slice), val], {}, t,
                                       f"`{ast.unparse(t)} = ...`")
            return [Assign(self.define(name, dst.type, span), call, span)]
        if not isinstance(dst.type, TensorType):
            self.error(f"`{name}[...] = ...` writes into a tensor, but {name!r} is {ops._tname(dst.type)}",
                       t, "store a tile into a tensor with pl.store(tile, offsets, tensor)")
        elts = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
        rank = len(dst.type.shape)
        if len(elts) > rank:
            self.error(f"{name} has rank {rank} but {len(elts)} indices are given", t,
                       f"give at most one index or slice per dimension: {name}[{', '.join(['i:i+m'] + [':'] * (rank - 1))}]")
        src = self.expr(value_node)
        st = getattr(src, "type", None)
        if not isinstance(st, (TensorType, TileType)):
            self.error(f"only a tensor or tile can be written into {name}[...], got {ops._tname(st)}",
                       value_node, "use pl.full for constants")
        offs, extents = [], []
        for e in elts:
            if isinstance(e, ast.Slice):
                if e.step is not None:
                    self.error("slices with a step are not supported", t,
                               "write a contiguous region (dst[i:i+m, :] = v); strided writes are not part "
                               "of the language")
                lo = self.expr(e.lower) if e.lower is not None else self.lit(Const(0, dt.INDEX, self.span(t)))
                offs.append(lo)
                extents.append(self.extent(e, lo))
            else:
                offs.append(self.expr(e))
                extents.append(1)
        for x in offs:
            if not isinstance(getattr(x, "type", None), ScalarType):
                self.error(f"offsets of {ast.unparse(t)} must be scalars", t)
        while len(offs) < rank:
            offs.append(self.lit(Const(0, dt.INDEX, self.span(t))))
            extents.append(None)
        for i, (ext, full) in enumerate(zip(extents, dst.type.shape)):
            if ext is None and isinstance(full, int) and isinstance(offs[i], Const):
                ext = full - offs[i].value
            # what the value holds is what is written: the region is its valid part, or its
            # whole box (of which the valid part is written)
            have = st.valid_shape
            if isinstance(ext, int) and i < len(have) and len(have) == rank \
                    and isinstance(have[i], int) and ext not in (have[i], st.shape[i]):
                raise TypeCheckError(
                    f"{ast.unparse(t)} selects {ext} along dim {i} but the value has shape "
                    f"{list(have)}", self.span(t),
                    "the region and the written value must have the same shape")
        offsets = TupleExpr(offs, self.span(t))
        call = self.op_call_values("assemble", "tensor", [dst, src, offsets], {}, t,
                                   f"`{ast.unparse(t)} = ...` (tensor.assemble)")
        return [Assign(self.define(name, call.type, span), call, span)]

    def extent(self, sl: ast.Slice, lo):
        """Static width of a slice when it can be seen: `a:b` with constants, `:b`, `i:i+c`."""
        if sl.upper is None:
            return None
        if sl.lower is not None:      # affine in the same values: i*c + a : (i+1)*c + b
            lo, hi = self.linear(sl.lower), self.linear(sl.upper)
            if lo is not None and hi is not None:
                terms = {k: hi[0].get(k, 0) - lo[0].get(k, 0) for k in set(hi[0]) | set(lo[0])}
                if not any(terms.values()):
                    return hi[1] - lo[1]
        try:
            hi = self.static(sl.upper)
            lo_v = 0 if sl.lower is None else self.static(sl.lower)
        except PyptoError:
            return None
        if isinstance(hi, int) and isinstance(lo_v, int):
            return hi - lo_v
        return None

    def linear(self, node):
        """`node` as ({dump of a non-constant term: its coefficient}, constant) when it is
        affine with integer coefficients (i, i + 64, (i + 1) * 128, 2 * i - j); else None."""
        try:
            v = self.static(node)
        except PyptoError:
            v = None
        if isinstance(v, int) and not isinstance(v, bool):
            return {}, v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = self.linear(node.left), self.linear(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Mult):
                if a[0] and b[0]:
                    return None                       # a product of two values
                (k, (t, c)) = (a[1], b) if not a[0] else (b[1], a)
                return {x: k * y for x, y in t.items()}, k * c
            sign = 1 if isinstance(node.op, ast.Add) else -1
            terms = dict(a[0])
            for x, y in b[0].items():
                terms[x] = terms.get(x, 0) + sign * y
            return terms, a[1] + sign * b[1]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = self.linear(node.operand)
            return None if a is None else ({x: -y for x, y in a[0].items()}, -a[1])
        return {ast.dump(node): 1}, 0

    # ---------------------------------------------------------------- for / if / with
    def if_(self, s: ast.If, span):
        cond = self.expr(s.test)
        ct = getattr(cond, "type", None)
        if not isinstance(ct, ScalarType):
            self.error(f"an if condition must be a scalar, got {ops._tname(ct)}", s.test,
                       "compare scalars: if i == 0:")
        self.ctx.ifs += 1
        try:
            then_body, ty = self.block(s.body, allow_yield=True)
            else_body, ey = (None, None)
            if s.orelse:
                else_body, ey = self.block(s.orelse, allow_yield=True)
                else_body = else_body or None
        finally:
            self.ctx.ifs -= 1
        self.ctx.cur, self.ctx.marked = span, bool(self.src.header_marker(s))
        rets = []
        elif_ = False
        if ty is not None and ey is None and len(s.orelse) == 1 and isinstance(s.orelse[0], ast.If) \
                and else_body and isinstance(else_body[-1], If) and else_body[-1].return_vars \
                and [v.name for v in else_body[-1].return_vars] == (ty.targets or []):
            # `elif` whose branches yield the same names: the else branch yields its result
            inner = else_body[-1]
            ey = _YieldInfo(Yield(list(inner.return_vars), inner.span), list(ty.targets))
            else_body.append(ey.stmt)
            elif_ = True
        if ty is not None or ey is not None:
            if ty is None or ey is None:
                self.error("when one branch of an if ends with pl.yield_, both must", s,
                           "add an else branch ending with `r = pl.yield_(...)`")
            if len(ty.stmt.values) != len(ey.stmt.values) or (ty.targets or []) != (ey.targets or []):
                self.error("both branches of an if must yield the same names", s,
                           "end both with `a, b = pl.yield_(...)` binding the same names")
            for a, b in zip(ty.stmt.values, ey.stmt.values):
                if not _same_shape_dtype(getattr(a, "type", None), getattr(b, "type", None)):
                    raise TypeCheckError(
                        f"if branches yield different types: {ops._tname(a.type)} vs {ops._tname(b.type)}",
                        span, "yield values of the same shape and dtype in both branches")
            if ty.targets:
                if elif_:       # fresh Vars: the inner if already bound these names
                    rets = [Var(n, v.type, span) for n, v in zip(ty.targets, ty.stmt.values)]
                    self.ctx.env.update({v.name: v for v in rets})
                else:
                    rets = [self.define(n, v.type, span) for n, v in zip(ty.targets, ty.stmt.values)]
        return If(cond, then_body, else_body, rets, span)

    def with_(self, s: ast.With, span):
        if len(s.items) != 1:
            self.error("a with statement takes one context", s, "with pl.at(level=pl.Level.CORE_GROUP):")
        item = s.items[0]
        ce = item.context_expr
        if not isinstance(ce, ast.Call):
            self.error(f"`with {ast.unparse(ce)}` is not supported", s, _unsupported("With"))
        k = _kind(self.static(ce.func, "the with context"))
        task = item.optional_vars
        if task is not None and (k not in ("at", "spmd") or not isinstance(task, ast.Name)):
            self.error(f"`with {ast.unparse(ce)} as {ast.unparse(task)}` is not supported", s,
                       "only `with pl.at(...) as tid:` / `with pl.spmd(...) as tid:` bind a name "
                       "(the task id)")
        if k == "at":
            opts, deps, optim = {}, None, None
            if len(ce.args) > 1:
                self.error("pl.at takes the level as its only positional argument", s)
            if ce.args:
                opts["level"] = self.static(ce.args[0], "pl.at level")
            for kw in ce.keywords:
                if kw.arg in ("deps", "optimizations"):
                    deps, optim = (kw.value, optim) if kw.arg == "deps" else (deps, kw.value)
                    continue
                if kw.arg == "allow_early_resolve":
                    self.early_resolve(kw.value, "pl.at()")
                    continue
                if kw.arg not in ("level", "name_hint"):
                    self.error(f"pl.at() got an unsupported argument {kw.arg!r}", s,
                               "pl.at(level=pl.Level.CORE_GROUP, name_hint=\"stage1\")")
                opts[kw.arg] = self.static(kw.value, f"pl.at {kw.arg}=")
            level = opts.get("level")
            if level is None:
                self.error("pl.at() needs the level of the region", s,
                           "with pl.at(level=pl.Level.CORE_GROUP):")
            if level is not Level.CORE_GROUP:
                self.error(f"pl.at(level={level}) is not supported; only pl.Level.CORE_GROUP regions exist",
                           s, "with pl.at(level=pl.Level.CORE_GROUP):")
            hint = opts.get("name_hint", "") or ""
            if not isinstance(hint, str) or (hint and not hint.isidentifier()):
                self.error(f"name_hint must be an identifier string, got {hint!r}", s,
                           'it names the outlined kernel: letters, digits and _, e.g. name_hint="stage1"')
            if self.ctx.incore:
                self.error("pl.at regions cannot be nested", s, "remove the inner `with pl.at(...)`")
            if self.ctx.sig.func_type in KERNEL_TYPES:
                self.error(f"pl.at inside the kernel {self.ctx.sig.name!r}: a kernel's body already runs "
                           f"on the device", s, "remove the `with pl.at(...)` line and keep its body")
            before = [self.task_deps(deps, span)] if deps is not None else []
            self.ctx.incore += 1
            try:
                body, _ = self.block(s.body, allow_yield=False)
            finally:
                self.ctx.incore -= 1
            split, slots = self.optimizations(optim, s)
            return before + [InCoreScope(body, hint, span, split, slots)] + self.task_id(task, span)
        if k == "spmd":
            return self.spmd_scope(s, ce, task, span)
        if k == "cluster":
            return self.cluster_scope(s, ce, task, span)
        if k == "manual_scope":
            if ce.args or ce.keywords:
                self.error("pl.manual_scope() takes no arguments", s, "with pl.manual_scope():")
            k, ce = "scope", ast.Call(ce.func, [], [ast.keyword("mode", ast.Constant("MANUAL"))])
        if k == "scope":
            if self.ctx.incore or self.ctx.sig.func_type in KERNEL_TYPES:
                self.error("pl.scope inside a kernel: a runtime scope groups the orchestration's "
                           "kernel launches", s,
                           "put `with pl.scope():` in the orchestration, around the `with pl.at(...)` "
                           "blocks it groups")
            if ce.args:
                self.error("pl.scope takes keyword arguments only", s, "with pl.scope(mode=pl.ScopeMode.MANUAL):")
            manual = False
            for kw in ce.keywords:
                if kw.arg != "mode":
                    self.error(f"pl.scope() got an unsupported argument {kw.arg!r}", s)
                if isinstance(kw.value, ast.Constant) and kw.value.value == "MANUAL":
                    manual = True          # (pl.manual_scope())
                    continue
                mode = self.static(kw.value, "pl.scope mode=")
                if getattr(mode, "name", None) not in ("AUTO", "MANUAL"):
                    self.error(f"pl.scope mode must be pl.ScopeMode.AUTO or MANUAL, got {mode!r}", s)
                manual = mode.name == "MANUAL"
            body, _ = self.block(s.body, allow_yield=False)
            return [RuntimeScope(body, manual, span)]
        self.error(f"`with {ast.unparse(ce)}` is not supported", s, _unsupported("With"))


def _yields_last(body) -> bool:
    """The body ends in `... = pl.yield_(...)` (a loop with init_values)."""
    last = body[-1] if body else None
    v = getattr(last, "value", None)
    f = getattr(v, "func", None)
    return isinstance(v, ast.Call) and (getattr(f, "attr", None) == "yield_" or getattr(f, "id", None) == "yield_")
