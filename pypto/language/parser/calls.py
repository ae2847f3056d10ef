"""The Parser's calls: pl.* operators (found in the op table), casts, self.<function>(...)."""
from __future__ import annotations

import ast
import builtins
import difflib
import enum

from pypto.ir.nodes import KERNEL_TYPES
from pypto.ir.ops.lanes import CROSSINGS as LANE_CROSSINGS
from pypto.ir.ops.cross_core import ANNOTATION_TYPED
from pypto.language.parser.common import (BinOp, Call, Const, Expr, Function, FunctionType,
                                          MemorySpace, _Sig,
                                          MisplacedTensorOpError, ParserError, ScalarType,
                                          TensorType, TileType, TupleExpr, TupleType,
                                          TypeCheckError, _AT_HINT, _CONST_HINT, _LOOP_KINDS,
                                          _RECURSION_HINT, _bad_operand, _corners, _describe,
                                          _dims_text, _eval_affine, _is_number, _kind, _lang,
                                          _operand_params, _pick_slot, _recursion_message,
                                          _same_kind_dtype, _shape_conflict, _sig_hint,
                                          _unsupported, _vars_of, dt, ops)


# tensor ops an orchestration runs itself: they only describe a window of a tensor
_HOST_VIEWS = ("tensor.slice", "tensor.reshape", "tensor.transpose")


class CallsMixin:
    # ================================================================== calls
    def call(self, node: ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
                and (self.ctx is None or "self" not in self.ctx.env):
            return self.function_call(node, f.attr)
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.error("star-arguments are not supported", a, _unsupported("Starred"))
        if isinstance(f, ast.Name) and (self.ctx is None or f.id not in self.ctx.env) \
                and f.id not in self.statics:
            if self.in_program and f.id in self.sigs:
                self.error(f"`{f.id}(...)` calls a function of the program without `self.`", node,
                           f"write self.{f.id}({', '.join(ast.unparse(a) for a in node.args)})")
            if f.id in _lang().OPERATORS:
                self.error(f"`{f.id}(...)` is not defined; the operator is pl.{f.id}", node,
                           f"write pl.{f.id}(...)")
            if hasattr(builtins, f.id):
                hint = "use pl.range" if f.id == "range" else (
                    "use pl.min / pl.max" if f.id in ("min", "max") else
                    "only pl.* operators and self.<function> calls exist inside a kernel")
                self.error(f"the Python builtin {f.id}() cannot be used inside a kernel", node, hint)
            cands = list(self.ctx.env) if self.ctx else []
            close = difflib.get_close_matches(f.id, cands + [k for k in self.statics if not k.startswith("_")], n=1)
            self.error(f"`{f.id}` is not a function a kernel can call", node,
                       (f"did you mean {close[0]!r}? " if close else "") +
                       "a kernel calls pl.* operators and kernel functions (@pl.jit.incore / "
                       "@pl.jit.inline functions under @pl.jit, self.<name>(...) in a @pl.program); "
                       "a plain Python helper cannot run on the device: decorate it with "
                       "@pl.jit.inline, or write its body inline")
        obj = self.static(f, "the called function")
        if isinstance(obj, Function):
            return self.module_function_call(node, obj)
        k = _kind(obj)
        if k == "op":
            name, ns = obj._pl_op
            return self.op_call(node, name, ns, getattr(obj, "_pl_display", None))
        if k == "not_built":                  # a name of the language this pypto has not built
            from pypto.errors import NotBuiltError
            raise NotBuiltError(f"{ast.unparse(f)} is not built in this pypto yet", self.span(node),
                                obj._pl_hint)
        if k == "cast":
            return self.cast_call(node)
        if k in ("min", "max"):
            return self.minmax(node, k)
        if k == "const":
            return self.const_call(node)
        if k == "yield_":
            self.error("pl.yield_(...) must be a statement of its own, the last of a loop body or "
                       "an if/else branch", node, "write `r = pl.yield_(v)` as the last line of the body")
        if k in _LOOP_KINDS:
            self.error(f"{ast.unparse(f)}(...) is only allowed as the iterable of a for loop", node,
                       f"for i in {ast.unparse(f)}(n):")
        if k in ("at", "scope"):
            self.error(f"{ast.unparse(f)}(...) is only allowed in a with statement", node,
                       f"with {ast.unparse(f)}(...):")
        if obj is _lang().dynamic:
            self.error(f"`{ast.unparse(node)}` declares a dynamic dim; it cannot be called inside a kernel",
                       node, 'declare it once at module level, M = pl.dynamic("M"), and use M in '
                             'tensor annotations: x: pl.Tensor[[M, 64], pl.FP32]')
        self.error(f"`{ast.unparse(f)}` cannot be called inside a kernel", node,
                   "only pl.* operators and self.<function> calls exist inside a kernel")

    def arg_values(self, node: ast.Call) -> list:
        out = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.error("star-arguments are not supported", a, _unsupported("Starred"))
            v = self.value(a)
            if _is_number(v) or isinstance(v, (bool, list, tuple)):
                v = self.to_expr(v, a)
            out.append(v)
        return out

    def kwarg_values(self, node: ast.Call, allowed=None, operands=()) -> dict:
        out = {}
        for kw in node.keywords:
            if kw.arg is None:
                self.error("**kwargs is not supported", node, _unsupported("Starred"))
            if (allowed is not None and kw.arg not in allowed) or kw.arg in operands:
                continue
            out[kw.arg] = self.static(kw.value, f"keyword argument {kw.arg}=")
        return out

    def op_call(self, node: ast.Call, name: str, ns: str | None, display: str | None = None):
        display = display or (f"pl.{ns}.{name}" if ns else f"pl.{name}")
        name = ops.keyword_form(name, {kw.arg for kw in node.keywords}, len(node.args))
        if name == "slice" and any(kw.arg == "valid_shape" for kw in node.keywords) \
                and not getattr(node, "pypto_view_only", False):
            view = self.valid_slice(node, ns, display)
            if view is not None:
                return view
        args = self.arg_values(node)
        params = _operand_params(name, ns, args)
        args = self.keyword_operands(node, args, params, display)
        kwargs = self.kwarg_values(node, operands=params)
        return self.op_call_values(name, ns, args, kwargs, node, display)

    def valid_slice(self, node: ast.Call, ns, display):
        """`pl.slice(t, shape, offsets, valid_shape=[r, c])` of a 2-D tensor in a kernel: the
        window, with only its [r, c] corner valid (r, c may be computed in the kernel):
        tensor.set_validshape of the tensor.slice. None: not that form (the op decides)."""
        kw = next(k for k in node.keywords if k.arg == "valid_shape")
        base = self.expr(node.args[0]) if node.args else None
        if not isinstance(getattr(base, "type", None), TensorType) or ns == "tile":
            return None
        if self.ctx is None or not (self.ctx.incore or self.ctx.sig.func_type in
                                    KERNEL_TYPES):
            return None       # an orchestration's view: tensor.slice's valid_shape operand
        if not isinstance(kw.value, (ast.List, ast.Tuple)) or len(kw.value.elts) != 2 \
                or len(base.type.shape) != 2:
            self.error(f"{display}(..., valid_shape=[rows, cols]): a 2-D window and two extents",
                       node, "pl.slice(t, [16, 128], [r, 0], valid_shape=[n, 128])")
        valid = [self.to_expr(self.value(e), e) for e in kw.value.elts]
        keep = [k for k in node.keywords if k.arg != "valid_shape"]
        if all(isinstance(v, Const) for v in valid):
            # constant extents ride on the slice too: its box may then overhang the tensor
            keep.append(kw)
        plain = ast.copy_location(ast.Call(node.func, node.args, keep), node)
        plain.pypto_view_only = True      # op_call: the tensor.slice itself, not this form again
        view = self.call(plain)
        return self.op_call_values("set_validshape", "tensor", [view] + valid, {}, node, display)

    def keyword_operands(self, node: ast.Call, args: list, params: tuple, display: str) -> list:
        """Operands passed by name, as the reference's signatures allow
        (pl.load(t, offsets=[0, 0], shapes=[64, 64])): placed after the positional ones
        in the op's operand order."""
        given = {kw.arg: kw for kw in node.keywords if kw.arg in params}
        if not given:
            return args
        slots = {}
        for name, kw in given.items():
            i = params.index(name)
            if i < len(args):
                self.error(f"{display} got two values for {name!r}: the argument in position "
                           f"{i + 1} and {name}=", node, f"pass {name} once")
            v = self.value(kw.value)
            if v is None:       # an optional operand passed as None: not given
                continue
            if _is_number(v) or isinstance(v, (bool, list, tuple)):
                v = self.to_expr(v, kw.value)
            slots[i] = v
        out = list(args)
        while len(out) in slots:
            out.append(slots.pop(len(out)))
        if slots:
            missing = params[len(out)]
            self.error(f"{display}: operand {missing!r} is missing (given by name: "
                       f"{', '.join(params[i] for i in sorted(slots))})", node,
                       f"pass {missing} too, by position or as {missing}=...")
        return out

    def op_call_values(self, name, ns, args, kwargs, node, display=None):
        display = display or (f"pl.{ns}.{name}" if ns else f"pl.{name}")
        span = self.span(node)
        exprs = [a for a in args if isinstance(a, Expr)]
        if ns is None:
            op = ops.resolve(name, exprs, span)
        elif name in ops.SCALAR_FORM and len(exprs) == 2 and isinstance(getattr(exprs[1], "type", None), ScalarType) \
                and isinstance(getattr(exprs[0], "type", None), (TensorType, TileType)):
            op = f"{ns}.{ops.SCALAR_FORM[name]}"      # pl.tensor.maximum(x, 0.5): against a scalar
        else:
            op = f"{ns}.{name}"
        op = ops.OP_ALIASES.get(op, op)
        d = ops.OPS.get(op)
        if d is None:
            first = exprs[0].type if exprs else None
            raise TypeCheckError(f"{display} has no form for {ops._tname(first)} arguments "
                                 f"(no operator {op})", span, _sig_hint(name))
        kwargs = dict(kwargs)
        for alias, canon in d.aliases.items():     # the reference's name for an option
            if alias in kwargs:
                if canon in kwargs:
                    raise TypeCheckError(f"{display}: {alias}= and {canon}= name the same option",
                                         span, f"pass only one of them")
                kwargs[canon] = kwargs.pop(alias)
        if ns in ("tile", "tensor") and op not in ("tile.load", "tile.mgather"):   # (they read a tensor)
            want = TensorType if ns == "tensor" else TileType
            first = next((getattr(a, "type", None) for a in exprs
                          if isinstance(getattr(a, "type", None), (TensorType, TileType))), None)
            if first is not None and not isinstance(first, want):
                other = "tile" if ns == "tensor" else "tensor"
                raise TypeCheckError(
                    f"{display} works on {ns}s, got {ops._tname(first)}", span,
                    f"use pl.{other}.{name}, or pl.{name} which picks the level from its arguments")
        pos, kw = [], dict(kwargs)
        attrs = kw.pop("attrs", None) or {}        # metadata a pass wrote (the printer spells it)
        if not isinstance(attrs, dict):
            raise TypeCheckError(f"{display}: attrs= must be a dict literal", span)
        for a in args:
            if isinstance(a, Expr) and len(pos) < d.nargs[1]:
                pos.append(a)
                continue
            if not isinstance(a, (Expr, dt.DataType, MemorySpace)) and len(pos) < d.nargs[0]:
                # a string, None, an enum...: never an operand, never a keyword's slot
                raise TypeCheckError(_bad_operand(display, name, len(pos), a), span, _sig_hint(name))
            if not isinstance(a, (Expr, dt.DataType, MemorySpace, enum.Enum)) \
                    and not (isinstance(a, str) and "mode" in d.kwargs):
                raise TypeCheckError(f"{display}: unexpected extra argument {_describe(a)}; options "
                                     f"are keywords (target_memory=pl.Mem.Vec, dtype=pl.FP32, ...)",
                                     span, _sig_hint(name))
            slot = _pick_slot(d, a, kw)
            if slot is None:
                lo, hi = d.nargs
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise TypeCheckError(f"{display} takes {want} positional arguments, got {len(args)}",
                                     span, _sig_hint(name))
            kw[slot] = self.kwarg_const(a, node, slot)
        kw = {**{k: kw[k] for k in d.kwargs if k in kw}, **{k: v for k, v in kw.items() if k not in d.kwargs}}
        if op == "tile.store" and len(pos) == 4 and isinstance(pos[2], TupleExpr) \
                and isinstance(getattr(pos[3], "type", None), TensorType):
            pos[2], pos[3] = pos[3], pos[2]      # the older order: pl.store(tile, offsets, shapes, out)
        if op in LANE_CROSSINGS and "split" not in kw:      # the region's mode
            mode = self.ctx.lane_mode if self.ctx is not None else None
            if mode is None:
                raise TypeCheckError(f"{display} crosses into or out of a pl.split_aiv region; it is "
                                     f"used inside one", span,
                                     "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): ...")
            kw["split"] = mode
        annotated = getattr(self, "annotated", None)
        if op in ANNOTATION_TYPED and "shape" not in kw and isinstance(annotated, TileType):
            kw.update(shape=list(annotated.shape), dtype=annotated.dtype)
            if annotated.valid is not None:
                kw["valid_shape"] = list(annotated.valid)
                runtime = getattr(self, "valid_values", {})
                if runtime:                # the valid extents known at run time: operands
                    pos = [runtime.get(i, Const(annotated.valid_shape[i], dt.INDEX, span)) for i in range(2)]
        self.check_placement(op, display, node, pos)
        if op == "system.syncall" and self.ctx is not None and not self.ctx.incore:
            self.ctx.sig.attrs["sync_blocks"] = True    # its blocks must run at once
        try:
            t = ops.infer_type(op, pos, kw, span)
        except TypeCheckError as e:
            if e.hint:
                raise
            raise TypeCheckError(e.message, e.span or span, _sig_hint(name)) from None
        if not kw.get("clamp"):       # a clamped window may run off the end: it is cut there
            self.check_loop_window(op, pos, span)
        if op == "tensor.dim" and isinstance(pos[0].type.shape[pos[1].value], int):
            return self.lit(Const(pos[0].type.shape[pos[1].value], dt.INDEX, span))  # static
        return Call(op, pos, kw, t, dict(attrs), span)

    def check_loop_window(self, op: str, args: list, span) -> None:
        """A window whose offsets move with constant-bound loops stays inside the tensor on
        every iteration: checked at the first and last index of each loop (exact for offsets
        affine in the indices; a violation found there is always real)."""
        c = self.ctx
        if c is None or not c.ranges or c.ifs or op not in ("tile.load", "tile.store", "tensor.assemble"):
            return                  # (under an if, the first or last iteration may not reach it)
        if op == "tile.load":       # the part read: the valid region where one is given
            tensor, offs = args[0], args[1]
            sizes = [getattr(x, "value", None) for x in (args[3] if len(args) > 3 else args[2]).items]
        elif op == "tile.store":
            if len(args) > 3:
                return
            tensor, offs, sizes = args[2], args[1], list(args[0].type.valid_shape)   # what is written
        else:
            tensor, offs, sizes = args[0], args[2], list(args[1].type.shape)
        dims = getattr(getattr(tensor, "type", None), "shape", ())
        items = getattr(offs, "items", None)
        if items is None or len(items) != len(dims) or len(sizes) != len(dims):
            return
        for i, (o, size, d) in enumerate(zip(items, sizes, dims)):
            if isinstance(o, Const) or not isinstance(d, int) or not isinstance(size, int):
                continue
            loops = [c.ranges[id(v)] for v in _vars_of(o) if id(v) in c.ranges]
            if not loops or len(loops) != len(set(map(id, _vars_of(o)))) or len(loops) > 4:
                continue
            for corner in _corners(loops):
                at = _eval_affine(o, corner)
                if at is None:
                    break
                if at < 0 or at + size > d:
                    where = ", ".join(f"{v.name} = {corner[id(v)]}" for v, _, _ in loops)
                    raise TypeCheckError(
                        f"{op.split('.')[1]}: at {where} the window [{at}, {at + size}) of dim {i} lies "
                        f"outside the tensor's extent {d}", span,
                        "keep every iteration's window inside the tensor: fix the loop's bounds or "
                        "step, or the offset expression")

    def kwarg_const(self, a, node, slot):
        if isinstance(a, Const):
            return a.value
        if isinstance(a, TupleExpr) and all(isinstance(i, Const) for i in a.items):
            return [i.value for i in a.items]
        if isinstance(a, Expr):
            self.error(f"argument {slot}= must be a compile-time constant", node)
        return a

    def check_placement(self, op: str, display: str, node, args=()):
        c = self.ctx
        # (pl.create_tensor in a kernel is a tensor the kernel keeps on chip: a Vec tile)
        if c is None or c.sig.func_type is not FunctionType.Orchestration or c.incore:
            return
        if op.startswith("array.") or op.startswith("system."):
            return            # host arrays (task ids, counters) and task ids live in the orchestration
        if op in ("tensor.full", "tensor.ci", "tensor.random"):
            raise MisplacedTensorOpError(
                f"misplaced tensor op: {display} fills a tensor on the device; it cannot run in the "
                f"orchestration body of {c.sig.name!r}", self.span(node),
                "fill it where it is used, inside `with pl.at(level=pl.Level.CORE_GROUP):` "
                "(x = pl.full(...) or out[:] = pl.full(...)); the orchestration only allocates "
                "tensors (pl.create_tensor)")
        if op in _HOST_VIEWS:
            return            # a view of a tensor's window: the orchestration makes it (no data)
        if op == "tensor.assemble" and len(args) > 1 and isinstance(getattr(args[1], "type", None),
                                                                    TensorType) \
                and all(args[1] is not p.var for p in c.sig.params):
            return            # a created tensor put in a window: FuseCreateAssembleToSlice folds it
        if op.startswith(("tile.", "prefetch.")) or ops.is_tensor_op(op) or op == "tensor.write":
            span = self.span(node)
            raise MisplacedTensorOpError(
                f"misplaced tensor op: {display} ({op}) at line {span.line} is written directly in "
                f"the orchestration body of {c.sig.name!r}; it should be inside an InCore block",
                span, _AT_HINT)

    def cast_call(self, node: ast.Call):
        args = self.arg_values(node)
        kwargs = self.kwarg_values(node)
        first = args[0] if args else None
        t = getattr(first, "type", None)
        if isinstance(t, ScalarType) or isinstance(first, Const):
            target = kwargs.get("dtype", kwargs.get("target_type", args[1] if len(args) > 1 else None))
            if isinstance(first, Const) and isinstance(target, dt.DataType):
                return Const(float(first.value) if target.is_float else
                             (bool(first.value) if target == dt.BOOL else int(first.value)),
                             target, self.span(node))
            if not isinstance(target, dt.DataType):
                self.error("pl.cast needs the target dtype: pl.cast(x, pl.INDEX)", node)
            return Call("scalar.cast", [first], {"dtype": target}, ScalarType(target), {},
                        self.span(node))
        return self.op_call_values("cast", None, args, kwargs, node, "pl.cast")

    def minmax(self, node: ast.Call, which: str):
        if node.keywords or len(node.args) != 2:
            self.error(f"pl.{which} takes two scalar arguments", node, f"pl.{which}(a, b)")
        a, b = self.expr(node.args[0]), self.expr(node.args[1])
        for x in (a, b):
            if not isinstance(getattr(x, "type", None), ScalarType):
                other = "maximum" if which == "max" else "minimum"
                self.error(f"pl.{which} works on scalars, got {ops._tname(getattr(x, 'type', None))}",
                           node, f"for elementwise {which} of tensors/tiles use pl.{other}(a, b)")
        a, b, d = self.unify(a, b, f"pl.{which}", node)
        return BinOp(which, a, b, d, self.span(node))

    def const_call(self, node: ast.Call) -> Const:
        args = [self.static(a, "pl.const argument") for a in node.args]
        kw = {k.arg: self.static(k.value, "pl.const argument") for k in node.keywords}
        if "value" in kw:
            args.insert(0, kw.pop("value"))
        if "dtype" in kw:
            args.append(kw.pop("dtype"))
        if len(args) != 2 or kw or not isinstance(args[1], dt.DataType):
            self.error("pl.const takes a value and a dtype", node, "pl.const(0, pl.INT32)")
        v, d = args
        if isinstance(v, Const):
            v = v.value
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                self.error(f"pl.const: {v!r} is not a number", node, _CONST_HINT)
        if not isinstance(v, (int, float, bool)):
            self.error(f"pl.const: {v!r} is not a number", node, _CONST_HINT)
        if d.is_float:
            v = float(v)
        elif d == dt.BOOL:
            v = bool(v)
        else:
            if isinstance(v, float) and not v.is_integer():
                self.error(f"pl.const: {v} is not an integer but the dtype is {d}", node)
            v = int(v)
        return Const(v, d, self.span(node))

    def module_function_call(self, node: ast.Call, fn: Function):
        """A `@pl.function` defined outside the program (at module level, perhaps in
        another module) called by name: it becomes a function of the program, called
        as self.<name>(...) would be."""
        if not self.in_program:
            self.error(f"`{ast.unparse(node.func)}` is a @pl.function; a lone @pl.function "
                       f"cannot call another", node,
                       "call both from the orchestration of a @pl.program")
        have = self.sigs.get(fn.name)
        if have is None:
            self.sigs[fn.name] = _Sig(fn.name, None, fn.params, fn.return_types, fn.func_type,
                                      fn.level, fn.role, dict(fn.attrs), fn.span, fn, "done")
        elif have.function is not fn:
            self.error(f"`{ast.unparse(node.func)}` is the @pl.function {fn.name!r}, but the program "
                       f"already has a function named {fn.name!r}", node,
                       f"rename one of them: a program holds one function per name")
        return self.function_call(node, fn.name)

    def function_call(self, node: ast.Call, name: str):
        sig = self.sigs.get(name)
        if not self.in_program:
            self.error(f"self.{name}(...) is only available inside a @pl.program class", node,
                       "put the functions in a @pl.program class")
        if sig is None:
            close = difflib.get_close_matches(name, list(self.sigs), n=1)
            hint = f"did you mean self.{close[0]}?" if close else \
                f"functions of this program: {', '.join(self.sigs)}"
            self.error(f"self.{name}: the program has no function {name!r}", node, hint)
        args = self.arg_values(node)
        for a, n in zip(args, node.args):
            if not isinstance(a, Expr):
                self.error(f"argument `{ast.unparse(n)}` of self.{name} is not a value", n)
        kernels = KERNEL_TYPES
        if self.ctx is not None and sig.func_type in kernels and name != self.ctx.sig.name \
                and (self.ctx.incore or self.ctx.sig.func_type in kernels):
            self.kernel_calls.append((self.ctx.sig.name, name, self.span(node), bool(self.ctx.incore)))
        attrs = {}
        for kw in node.keywords:
            if kw.arg != "attrs":
                self.error(f"self.{name}(...) got an unexpected keyword argument {kw.arg!r}", node,
                           "pass arguments positionally; only attrs={...} is accepted")
            attrs = self.static(kw.value, "attrs=")
            if not isinstance(attrs, dict):
                self.error("attrs= must be a dict literal", node)
        span = self.span(node)
        caller = self.ctx.sig if self.ctx is not None else None
        if caller is not None:
            if name == caller.name:
                raise ParserError(_recursion_message([name, name]), span, _RECURSION_HINT)
            self.call_sites.setdefault(caller.name, []).append((name, span))
            if caller.func_type is FunctionType.Orchestration \
                    and sig.func_type is FunctionType.Orchestration:
                raise TypeCheckError(
                    f"orchestration {caller.name!r} calls orchestration {name!r}; an orchestration "
                    f"submits kernels (InCore/AIC/AIV functions, pl.at regions) and calls Inline "
                    f"functions, not other orchestrations", span,
                    f"make {name} an InCore kernel (@pl.function(type=pl.FunctionType.InCore)) "
                    f"or an Inline function, or move its calls into {caller.name}")
        if len(args) != len(sig.params):
            raise TypeCheckError(f"self.{name} takes {len(sig.params)} arguments, got {len(args)}",
                                 span, f"def {name}({', '.join(p.var.name for p in sig.params)})")
        for i, (a, p) in enumerate(zip(args, sig.params)):
            at, pt = getattr(a, "type", None), p.var.type
            if sig.func_type in kernels and isinstance(at, ScalarType) and isinstance(pt, ScalarType) \
                    and at.dtype.is_float == pt.dtype.is_float:
                continue     # an integer (or bool) argument converts to an integer parameter's dtype
            if not _same_kind_dtype(at, pt):
                raise TypeCheckError(f"self.{name}: argument {i} ({p.var.name}) expects "
                                     f"{ops._tname(pt)}, got {ops._tname(at)}", span,
                                     "pass a value of the parameter's kind and dtype")
            bad = _shape_conflict(at, pt)
            if bad is not None:
                raise TypeCheckError(
                    f"self.{name}: argument {i} ({p.var.name}) has shape {_dims_text(at.shape)} but "
                    f"{name} declares {p.var.name} as {_dims_text(pt.shape)}{bad}", span,
                    f"pass a tensor of shape {_dims_text(pt.shape)} (a window of a larger one is "
                    f"not implied), or declare the parameter with a pl.dynamic dim to accept "
                    f"several sizes")
        if sig.return_types is None:
            self.ensure_body(sig)
        rets = sig.return_types
        t = rets[0] if len(rets) == 1 else (TupleType(tuple(rets)) if rets else None)
        return Call("@" + name, args, {}, t, attrs, span)
