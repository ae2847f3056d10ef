"""The Parser's values: compile-time constants folded at parse time, and IR expressions."""
from __future__ import annotations

import ast
import builtins
import difflib
import types
import enum
import operator

from pypto.language.parser.common import (ArrayType, BinOp, Const, DynDim, Expr, FunctionType,
                                          ScalarType, TensorType,
                                          TileType, TupleExpr, TupleType, TypeCheckError, UnknownOpError,
                                          _CMP_OPS, _FOLD, _SCALAR_OPS, INT_ONLY_SCALAR_OPS, _SHAPED_OPS, _adoptable,
                                          _coerce, _is_number, _kind, _lang, _opsym, _unsupported,
                                          _widened, dt, ops)


class ValuesMixin:
    # ================================================================== static values
    def lookup_static(self, node: ast.Name):
        if node.id in self.statics:
            return _coerce(self.statics[node.id])
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        self.undefined(node)

    def undefined(self, node: ast.Name):
        if hasattr(builtins, node.id) and not node.id.startswith("_"):
            hint = {"range": "use pl.range(...)", "min": "use pl.min(a, b) (scalars) or pl.minimum",
                    "max": "use pl.max(a, b) (scalars) or pl.maximum"}.get(
                node.id, "only pl.* operators and self.<function> calls exist inside a kernel")
            self.error(f"the Python builtin {node.id!r} cannot be used inside a kernel", node, hint)
        cands = list(self.ctx.env) if self.ctx else []
        cands += [k for k in self.statics if not k.startswith("_")]
        close = difflib.get_close_matches(node.id, cands, n=1)
        hint = f"did you mean {close[0]!r}?" if close else \
            "assign it before use, declare it as a parameter, or define the constant at module level"
        self.error(f"name {node.id!r} is not defined", node, hint)

    def static(self, node, what: str = "a constant"):
        """Evaluate a compile-time constant expression to a Python value."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if self.ctx is not None and node.id in self.ctx.env:
                self.error(f"{what} must be a compile-time constant, but {node.id!r} is a value "
                           f"computed in the kernel", node, "use a literal or a module-level constant")
            return self.lookup_static(node)
        if isinstance(node, ast.Attribute):
            base = self.static(node.value, what)
            return self.get_attr(base, node)
        if isinstance(node, ast.List):
            return [self.static(e, what) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.static(e, what) for e in node.elts)
        if isinstance(node, ast.Subscript):      # an element of a constant list / tuple / dict
            base = self.static(node.value, what)
            key = slice(*(None if x is None else self.static(x, what)
                          for x in (node.slice.lower, node.slice.upper, node.slice.step))) \
                if isinstance(node.slice, ast.Slice) else self.static(node.slice, what)
            key = key.value if isinstance(key, Const) else key
            try:
                return _coerce(base[key])
            except Exception:
                self.error(f"cannot evaluate {ast.unparse(node)} at compile time", node)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                self.error("** in a dict literal is not supported", node)
            return {self.static(k, what): self.static(v, what) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp):
            v = self.static(node.operand, what)
            if isinstance(v, Const):
                v = v.value
            try:
                return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                        ast.Invert: operator.invert}[type(node.op)](v)
            except Exception:
                self.error(f"cannot evaluate {ast.unparse(node)} at compile time", node)
        if isinstance(node, ast.BinOp):
            a, b = self.static(node.left, what), self.static(node.right, what)
            a = a.value if isinstance(a, Const) else a
            b = b.value if isinstance(b, Const) else b
            f = _FOLD.get(type(node.op))
            try:
                return f(a, b)
            except Exception:
                self.error(f"cannot evaluate {ast.unparse(node)} at compile time", node)
        if isinstance(node, ast.Call):
            f = self.static(node.func, what)
            k = _kind(f)
            if k == "const":
                return self.const_call(node).value
            if k == "dynamic" or f is _lang().dynamic:
                args = [self.static(a, what) for a in node.args]
                if len(args) != 1 or node.keywords or not isinstance(args[0], str):
                    self.error('pl.dynamic takes one name: pl.dynamic("M")', node)
                return DynDim(args[0])
            self.error(f"{what} must be a compile-time constant; {ast.unparse(node)} is a call", node,
                       "use a literal or a module-level constant")
        self.error(f"{what} must be a compile-time constant, got `{ast.unparse(node)}`", node,
                   "use a literal or a module-level constant")

    def get_attr(self, base, node: ast.Attribute):
        pl = _lang()
        try:
            return _coerce(getattr(base, node.attr))
        except AttributeError:
            pass
        text = ast.unparse(node)
        if base is pl or isinstance(base, pl.dsl.OpNamespace):
            if base is pl:
                cands = [n for n in dir(pl) if not n.startswith("_")]
            else:
                cands = base.names()
            close = difflib.get_close_matches(node.attr, cands, n=1, cutoff=0.5)
            hint = f"did you mean {ast.unparse(node.value)}.{close[0]}?" if close else \
                "the operators are listed by pypto.ir.ops.dsl_names()"
            raise UnknownOpError(f"{text} is not an operator of the language", self.span(node), hint)
        if isinstance(base, type) and issubclass(base, enum.Enum):
            members = ", ".join(base.__members__)
            self.error(f"{text}: {ast.unparse(node.value)} has no member {node.attr!r}", node,
                       f"members: {members}")
        self.error(f"{text}: {ast.unparse(node.value)} has no attribute {node.attr!r}", node)

    # ================================================================== values (IR exprs)
    def lit(self, c: Const) -> Const:
        self._lit[id(c)] = c
        return c

    def to_expr(self, v, node):
        if isinstance(v, Expr):
            return v
        span = self.span(node)
        if v is None and self.ctx is not None and self.ctx.sig.func_type is FunctionType.Orchestration:
            return self.lit(Const(-1, dt.TASK_ID, span))     # `prev = None`: a task id naming no task
        if isinstance(v, bool):
            return self.lit(Const(v, dt.BOOL, span))
        if isinstance(v, int):
            return self.lit(Const(v, dt.INDEX, span))
        if isinstance(v, float):
            return self.lit(Const(v, dt.FP32, span))
        if isinstance(v, (list, tuple)):
            return TupleExpr([self.to_expr(x, node) for x in v], span)
        if isinstance(v, DynDim):
            found = self.dyn_extent(v, node)
            if found is not None:
                return found
            self.error(f"dynamic dim {v.name} cannot be used as a value here", node,
                       "dynamic dims only appear in tensor annotations; pass the extent you need "
                       "(e.g. a block count) as a scalar parameter `n: pl.INDEX` (under @pl.jit, "
                       "compile it with pl.RUNTIME so one artifact serves every size)")
        what = type(v).__name__ if not isinstance(v, enum.Enum) else f"{type(v).__name__}.{v.name}"
        self.error(f"`{ast.unparse(node)}` ({what}) is not a value of the language", node,
                   "values are tensors, tiles, scalars, numbers or lists of them")

    def expr(self, node):
        return self.to_expr(self.value(node), node)

    def dim_of(self, t, axis: int, node):
        """The extent of dim `axis` of tensor `t`: a constant, or pl.tensor.dim at run time."""
        return self.op_call_values("dim", "tensor", [t, self.lit(Const(axis, dt.INDEX, self.span(node)))],
                                   {}, node, "pl.tensor.dim")

    def dyn_extent(self, d: DynDim, node):
        """A dynamic dim used as a value: its run-time extent, read from the first tensor
        parameter of the function that has it (None if none has)."""
        c = self.ctx
        if c is None:
            return None
        for p in c.sig.params:
            shape = getattr(p.var.type, "shape", None)
            if isinstance(p.var.type, TensorType) and d in shape:
                return self.dim_of(p.var, list(shape).index(d), node)
        return None

    def value(self, node):
        """An expression -> IR Expr, or a raw Python constant (number from a closure,
        enum, dtype, string, None) that the caller may fold or pass as a keyword."""
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, (bool, int, float)):
                return self.to_expr(v, node)
            if v is None or isinstance(v, str):
                return v
            self.error(f"unsupported literal {ast.unparse(node)}", node)
        if isinstance(node, ast.Name):
            if self.ctx is not None and node.id in self.ctx.env:
                return self.ctx.env[node.id]
            return self.lookup_static(node)
        if isinstance(node, ast.Attribute):
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and self.ctx is not None and root.id in self.ctx.env:
                if node.attr == "shape" and node.value is root \
                        and isinstance(getattr(self.ctx.env[root.id], "type", None), TensorType):
                    t = self.ctx.env[root.id]        # t.shape: its extents, dynamic ones read
                    return TupleExpr([self.dim_of(t, a, node) for a in range(len(t.type.shape))],
                                     self.span(node))
                self.error(f"`{ast.unparse(node)}`: attribute access on kernel values is not supported",
                           node, "shapes and dtypes are static: write them as constants "
                                 "(under @pl.jit, a.shape folds to constants)")
            if isinstance(root, ast.Name) and root.id == "self" and self.in_program:
                self.error(f"`{ast.unparse(node)}` is not a call", node,
                           "call functions of the program as self.f(args)")
            return self.static(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            return TupleExpr([self.expr(e) for e in node.elts], self.span(node))
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                    and isinstance(node.value.value, ast.Name) and self.ctx is not None \
                    and node.value.value.id in self.ctx.env:       # t.shape[k]
                dims = self.value(node.value)
                k = self.static(node.slice, "a dim index")
                k = getattr(k, "value", k)
                if not isinstance(k, int) or isinstance(k, bool) or not -len(dims.items) <= k < len(dims.items):
                    self.error(f"`{ast.unparse(node)}`: the index of a dim must be an integer "
                               f"constant below the rank {len(dims.items)}", node)
                return dims.items[k]
            if self.constant_base(node.value):   # SHAPE[0] of a module-level or closure constant
                v = self.static(node, "a constant")
                return self.to_expr(v, node) if isinstance(v, (bool, int, float)) else v
            return self.subscript(node)
        name = type(node).__name__
        self.error(f"unsupported expression `{ast.unparse(node)}` ({name})", node, _unsupported(name))

    def constant_base(self, node) -> bool:
        """`node` names a Python constant (module level or a closure), not a kernel value."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id != "self" and \
            not (self.ctx is not None and node.id in self.ctx.env) and node.id in self.statics \
            and not isinstance(self.statics[node.id], types.ModuleType)

    def subscript(self, node: ast.Subscript):
        """`t[i:i+m, j:j+n]` of a tensor or a tile: a view of that window (tensor.slice,
        tile.slice); `t[i, j]` with one index per dim: that element (tensor.read,
        tile.read)."""
        base = self.expr(node.value)
        t = getattr(base, "type", None)
        text = ast.unparse(node)
        if isinstance(t, TupleType):             # one of several returned values
            i = self.static(node.slice, "a tuple index")
            i = getattr(i, "value", i)
            if not isinstance(i, int) or isinstance(i, bool):
                self.error(f"`{text}`: a tuple is indexed by an integer constant", node)
            return ops.tuple_get(base, i, self.span(node))
        if isinstance(t, ArrayType):             # one element of an on-core array
            if isinstance(node.slice, (ast.Tuple, ast.Slice)):
                self.error(f"`{text}`: an array is indexed by one integer", node, "arr[i]")
            return self.op_call_values("get_element", "array", [base, self.expr(node.slice)], {}, node,
                                       f"`{text}`")
        if not isinstance(t, (TensorType, TileType)):
            self.error(f"reading a sub-region `{text}` of {ops._tname(t)} is not supported", node,
                       "slice a tensor or a tile (t[i:i+m, :])")
        kind = "tile" if isinstance(t, TileType) else "tensor"
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        rank = len(t.shape)
        if len(elts) > rank:
            self.error(f"`{text}`: the tensor has rank {rank} but {len(elts)} indices are given",
                       node, "give at most one index or slice per dimension")
        span = self.span(node)
        if all(not isinstance(e, ast.Slice) for e in elts):
            if len(elts) != rank:
                self.error(f"`{text}` indexes {len(elts)} of {rank} dims", node,
                           "give one index per dim for an element (t[i, j]), or slice the rest "
                           "(t[i:i+1, :])")
            idx = TupleExpr([self.expr(e) for e in elts], span)
            return self.op_call_values("read", kind, [base, idx], {}, node, f"`{text}`")
        offs, extents = [], []
        for i, e in enumerate(elts):
            if not isinstance(e, ast.Slice):
                self.error(f"`{text}` mixes an index and slices", node,
                           f"keep every dim: write {ast.unparse(e)}:{ast.unparse(e)}+1 for dim {i}")
            if e.step is not None:
                self.error("slices with a step are not supported", node,
                           "slice a contiguous window (t[i:i+m, :])")
            lo = self.expr(e.lower) if e.lower is not None else self.lit(Const(0, dt.INDEX, span))
            ext = self.extent(e, lo)
            if ext is None and e.upper is None and isinstance(t.shape[i], int) and isinstance(lo, Const):
                ext = t.shape[i] - lo.value
            if ext is None:
                self.error(f"`{text}`: the extent of dim {i} is not known when compiling", node,
                           "write the slice as i:i+m with a constant m (the window's shape is static)")
            offs.append(lo)
            extents.append(ext)
        for i in range(len(elts), rank):
            if not isinstance(t.shape[i], int):
                self.error(f"`{text}`: dim {i} is dynamic; slice it explicitly", node)
            offs.append(self.lit(Const(0, dt.INDEX, span)))
            extents.append(t.shape[i])
        shape = TupleExpr([Const(x, dt.INDEX, span) for x in extents], span)
        return self.op_call_values("slice", kind, [base, shape, TupleExpr(offs, span)], {}, node,
                                   f"`{text}`")

    def scalar_dtype(self, e):
        t = getattr(e, "type", None)
        return t.dtype if isinstance(t, ScalarType) else None

    def unify(self, a, b, what, node):
        """Scalar operands must share a dtype; a bare literal takes the other's dtype."""
        da, db = self.scalar_dtype(a), self.scalar_dtype(b)
        if da == db:
            return a, b, da
        # (a literal is a Const the parser made; ids of freed objects are reused)
        if isinstance(b, Const) and id(b) in self._lit and _adoptable(b, db, da):
            return a, self.retype(b, da), da
        if isinstance(a, Const) and id(a) in self._lit and _adoptable(a, da, db):
            return self.retype(a, db), b, db
        wide = _widened(da, db)
        if wide is not None:
            return a, b, wide
        raise TypeCheckError(f"{what}: dtype mismatch {da} vs {db}", self.span(node),
                             "insert pl.cast or write the constant as pl.const(v, dtype); "
                             "there is no implicit promotion")

    def retype(self, c: Const, d):
        v = float(c.value) if d.is_float else (bool(c.value) if d == dt.BOOL else int(c.value))
        return self.lit(Const(v, d, c.span))

    def binop(self, node: ast.BinOp):
        lv, rv = self.value(node.left), self.value(node.right)
        op = type(node.op)
        # a module-level constant folds with a bare literal (`128 // TILE`); two literals
        # stay a BinOp, exactly as a printed dump spells it
        if _is_number(lv) and self.is_literal_number(rv):
            rv = rv.value
        elif _is_number(rv) and self.is_literal_number(lv):
            lv = lv.value
        if _is_number(lv) and _is_number(rv) and op in _FOLD:
            try:
                return _FOLD[op](lv, rv)
            except Exception as e:
                self.error(f"cannot evaluate {ast.unparse(node)}: {e}", node)
        a, b = self.to_expr(lv, node.left), self.to_expr(rv, node.right)
        ta, tb = getattr(a, "type", None), getattr(b, "type", None)
        shaped = (TensorType, TileType)
        if isinstance(ta, shaped) or isinstance(tb, shaped):
            name = _SHAPED_OPS.get(op)
            if name is None:
                self.error(f"operator `{_opsym(node.op)}` is not defined on tensors/tiles", node,
                           {ast.MatMult: "multiply matrices with pl.matmul(a, b)",
                            ast.Pow: "multiply explicitly: pl.mul(t, t)"}.get(
                               type(node.op), "use + - * / or the pl.<op> functions"))
            if not isinstance(ta, shaped):
                if name in ("add", "mul") and isinstance(ta, ScalarType):
                    a, b = b, a
                else:
                    self.error(f"`scalar {_opsym(node.op)} {ops._tname(tb)}` is not supported", node,
                               f"put the tensor/tile first, e.g. pl.{name}(t, s)")
            return self.op_call_values(name, None, [a, b], {}, node, f"the `{_opsym(node.op)}` operator")
        if not isinstance(ta, ScalarType) or not isinstance(tb, ScalarType):
            self.error(f"operator `{_opsym(node.op)}` needs scalar or shaped operands, got "
                       f"{ops._tname(ta)} and {ops._tname(tb)}", node)
        s = _SCALAR_OPS.get(op)
        if s is None:
            self.error(f"operator `{_opsym(node.op)}` is not supported on scalars", node,
                       "supported: + - * / // % << >> & | ^ and comparisons")
        a, b, d = self.unify(a, b, f"`{_opsym(node.op)}`", node)
        if s in INT_ONLY_SCALAR_OPS and (d.is_float or d == dt.BOOL):
            self.error(f"operator `{_opsym(node.op)}` works on integer scalars, not {d}", node,
                       "pl.cast the operands to an integer dtype")
        if s in ("/", "//", "%") and isinstance(b, Const) and b.value == 0:
            self.error(f"division by zero in `{ast.unparse(node)}`", node, "divide by a non-zero value")
        return BinOp(s, a, b, d, self.span(node))

    def is_literal_number(self, v) -> bool:
        return isinstance(v, Const) and id(v) in self._lit and _is_number(v.value)

    def unaryop(self, node: ast.UnaryOp):
        v = self.value(node.operand)
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(node.op, ast.USub):
            self.error(f"unary `{_opsym(node.op)}` is not supported", node,
                       "use comparisons and if/else" if isinstance(node.op, ast.Not) else None)
        if _is_number(v):
            return -v
        if isinstance(v, Const) and not isinstance(v.value, bool):
            c = Const(-v.value, v.dtype, v.span)
            return self.lit(c) if id(v) in self._lit else c
        e = self.to_expr(v, node.operand)
        t = getattr(e, "type", None)
        if isinstance(t, (TensorType, TileType)):
            return self.op_call_values("neg", None, [e], {}, node, "unary -")
        if isinstance(t, ScalarType):
            zero = Const(0.0 if t.dtype.is_float else 0, t.dtype, self.span(node))
            return BinOp("-", zero, e, t.dtype, self.span(node))
        self.error(f"cannot negate {ops._tname(t)}", node)

    def compare(self, node: ast.Compare):
        if len(node.ops) != 1:
            self.error("chained comparisons are not supported", node, "write a < b and nest ifs")
        sym = _CMP_OPS.get(type(node.ops[0]))
        if sym is None:
            self.error(f"comparison `{ast.unparse(node)}` is not supported", node,
                       "supported: == != < <= > >=")
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        for x in (a, b):
            if not isinstance(getattr(x, "type", None), ScalarType):
                self.error(f"comparisons work on scalars, not {ops._tname(getattr(x, 'type', None))}", node,
                           "compare scalar values (loop indices, scalar parameters); tiles and tensors "
                           "have no comparison operator")
        a, b, _ = self.unify(a, b, f"`{sym}`", node)
        return BinOp(sym, a, b, dt.BOOL, self.span(node))
