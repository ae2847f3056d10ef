"""The Parser's reading of function signatures and decorators."""
from __future__ import annotations

import ast

from pypto.language.parser.common import (Call, DynDim, Function, FunctionType, Level, Param,
                                          ParamDirection, ParserError, Return, Role, TensorType,
                                          TileType, TupleType, TypeCheckError, UnknownOpError,
                                          Var, _Ctx, _RECURSION_HINT, _Sig, _kind,
                                          _recursion_message, _same_shape_dtype, _type_text,
                                          derived_level_role, ops, walk)


class SignaturesMixin:
    # ================================================================== signatures
    def collect_signature(self, fdef: ast.FunctionDef, in_class: bool,
                          defaults: dict | None = None) -> _Sig:
        self.ctx = None
        opts = dict(defaults or {})
        deco_found = defaults is not None
        kw_nodes = {}
        for d in fdef.decorator_list:
            head = d.func if isinstance(d, ast.Call) else d
            try:
                obj = self.static(head, "a decorator")
            except UnknownOpError:
                raise
            except ParserError:
                obj = None
            if _kind(obj) != "function":
                self.error(f"unsupported decorator {ast.unparse(head)!r} on {fdef.name!r}", d,
                           "functions of a program are decorated with @pl.function(...) only")
            deco_found = True
            if isinstance(d, ast.Call):
                if d.args:
                    self.error("@pl.function takes keyword arguments only", d,
                               "write @pl.function(type=pl.FunctionType.InCore)")
                for kw in d.keywords:
                    if kw.arg is None:
                        self.error("**kwargs is not supported in @pl.function", d)
                    opts[kw.arg] = self.static(kw.value, f"@pl.function({kw.arg}=...)")
                    kw_nodes[kw.arg] = kw.value
        if not deco_found:
            self.error(f"method {fdef.name!r} of a @pl.program class is not decorated with @pl.function",
                       fdef, "add @pl.function(type=pl.FunctionType.<Kind>) above it")
        ftype = opts.pop("type", FunctionType.Opaque)
        if ftype is None:
            ftype = FunctionType.Opaque
        if not isinstance(ftype, FunctionType):
            self.error(f"type= must be a pl.FunctionType, got {ftype!r}", kw_nodes.get("type", fdef),
                       "e.g. type=pl.FunctionType.Orchestration")
        level = opts.pop("level", None)
        role = opts.pop("role", None)
        if level is not None and not isinstance(level, Level):
            self.error(f"level= must be a pl.Level, got {level!r}", fdef, "e.g. level=pl.Level.AIV")
        if role is not None and not isinstance(role, Role):
            self.error(f"role= must be a pl.Role, got {role!r}", fdef, "role=pl.Role.Orchestrator or pl.Role.SubWorker")
        dl, dr = derived_level_role(ftype)
        level = level if level is not None else dl
        role = role if role is not None else dr
        attrs = opts.pop("attrs", None) or {}
        if not isinstance(attrs, dict):
            self.error("attrs= must be a dict literal", fdef)
        attrs = dict(attrs)
        if "auto_scope" in opts:
            a = opts.pop("auto_scope")
            if a is not True:
                attrs["auto_scope"] = a
        for k in ("strict_ssa",):
            if opts.get(k) is False:
                opts.pop(k)
        if "external_source" in opts:
            attrs["external_source"] = opts.pop("external_source")
        if "external_source" in attrs:
            attrs["external_source"] = self.external_source(attrs["external_source"], ftype, fdef,
                                                            kw_nodes.get("external_source", fdef))
        if opts:
            self.error(f"@pl.function got unsupported keyword argument(s): {', '.join(sorted(opts))}",
                       fdef, "supported: type=, level=, role=, attrs=, auto_scope=, external_source=")
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
            self.error(f"function {fdef.name!r}: *args, **kwargs, keyword-only parameters and "
                       f"default values are not supported", fdef,
                       "declare each parameter with its type: x: pl.Tensor[[64, 64], pl.FP32]")
        args = list(a.posonlyargs) + list(a.args)
        if args and args[0].arg == "self" and args[0].annotation is None:
            args = args[1:]
        span, _ = self.stmt_span(fdef, compound=True)
        params, seen = [], set()
        for arg in args:
            if arg.annotation is None:
                self.error(f"parameter {arg.arg!r} of {fdef.name!r} needs a type annotation", arg,
                           "e.g. x: pl.Tensor[[64, 64], pl.FP32] or n: pl.Scalar[pl.INDEX]")
            if arg.arg in seen:
                self.error(f"duplicate parameter {arg.arg!r}", arg, "give each parameter its own name")
            seen.add(arg.arg)
            t, direction = self.ann_type(arg.annotation, allow_dir=True)
            if ftype is FunctionType.Orchestration and isinstance(t, TileType):
                self.error(f"parameter {arg.arg!r} of the orchestration {fdef.name!r} is a tile; "
                           f"an orchestration takes tensors and scalars", arg,
                           f"declare it as a tensor ({arg.arg}: pl.Tensor[[...], dtype]) and "
                           f"pl.load it inside `with pl.at(...)`")
            pspan = span if self.src.markers else self.src.pos(arg)
            params.append(Param(Var(arg.arg, t, pspan), direction))
        rets = None
        if fdef.returns is not None:
            if isinstance(fdef.returns, ast.Constant) and fdef.returns.value is None:
                rets = []
            else:
                t, _ = self.ann_type(fdef.returns, allow_tuple=True)
                rets = list(t.types) if isinstance(t, TupleType) else [t]
        return _Sig(fdef.name, fdef, params, rets, ftype, level, role, attrs, span)

    def external_source(self, path, ftype, fdef, node) -> str:
        """`external_source=`: a hand-written C++ kernel (its entry .cpp) backs this AIC / AIV
        function, whose body is `...`. The path is absolute or relative to the program's file."""
        import os
        if ftype not in (FunctionType.AIC, FunctionType.AIV):
            self.error(f"external_source= is for AIC and AIV functions; {fdef.name!r} is "
                       f"{ftype.name}", node, "declare it type=pl.FunctionType.AIV (or AIC)")
        if not isinstance(path, (str, os.PathLike)):
            self.error(f"external_source= is a path to the kernel's entry .cpp, got {path!r}", node)
        path = os.fspath(path)
        if not os.path.isabs(path):     # relative to the file that defines the program
            home = self.statics.get("__file__")
            path = os.path.join(os.path.dirname(os.path.abspath(home)) if isinstance(home, str)
                                else os.getcwd(), path)
        path = os.path.normpath(path)
        if not os.path.isfile(path):
            self.error(f"external_source: {path} is not a file", node,
                       "point it at the .cpp that defines kernel_entry (absolute, or relative "
                       "to the file that defines the program)")
        body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                             and isinstance(s.value.value, str))]
        if not (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and body[0].value.value is Ellipsis):
            self.error(f"{fdef.name!r} has external_source=, so its body is `...`: the kernel is "
                       f"the C++ file", fdef, "replace the body with `...`")
        return path

    def host_body(self, sig: _Sig) -> dict:
        """A HOST-level function's body is host Python, not kernel language: kept as its
        source. A SubWorker whose body is `...` (after an optional docstring) is a callback
        bound when the program is prepared (requires_runtime_binding)."""
        fdef = sig.node
        if sig.role is Role.SubWorker:
            a = fdef.args
            if (a.posonlyargs + a.args) and (a.posonlyargs + a.args)[0].arg == "self":
                self.error(f"the SubWorker {fdef.name!r} runs on the host as a plain function: it takes "
                           f"no `self`", fdef, f"def {fdef.name}({', '.join(x.arg for x in a.args[1:])}):")
        stmts = [x for x in fdef.body if not (isinstance(x, ast.Expr) and isinstance(x.value, ast.Constant)
                                             and isinstance(x.value.value, str))]
        abstract = len(stmts) == 1 and isinstance(stmts[0], ast.Expr) \
            and isinstance(stmts[0].value, ast.Constant) and stmts[0].value.value is Ellipsis
        lines = self.src.text.splitlines()[fdef.body[0].lineno - 1:fdef.body[-1].end_lineno]
        import textwrap
        return {"host": sig.role.name if sig.role else "Orchestrator", "abstract": abstract,
                "python_body": textwrap.dedent("\n".join(lines))}

    def ensure_body(self, sig: _Sig) -> None:
        if sig.state == "done":
            return
        if sig.state == "parsing":
            chain = [c.sig.name for c in self._parsing]
            chain = chain[chain.index(sig.name):] if sig.name in chain else [sig.name]
            raise ParserError(_recursion_message(chain + [sig.name]),
                              self.span(None) if self.ctx is not None else sig.span, _RECURSION_HINT)
        sig.state = "parsing"
        saved = self.ctx
        self.ctx = _Ctx(sig)
        self._parsing.append(self.ctx)
        self.ctx.cur, self.ctx.marked = sig.span, bool(self.src.header_marker(sig.node))
        for p in sig.params:
            self.ctx.env[p.var.name] = p.var
        if sig.level is Level.HOST:            # host-side Python, run when the program runs
            body, y = [], None
            sig.attrs.update(self.host_body(sig))
        else:
            body, y = ([], None) if "external_source" in sig.attrs else self.block(sig.node.body,
                                                                                   allow_yield=False)
        rets = sig.return_types
        returns = [s for s in walk(body) if isinstance(s, Return)]
        if rets is None:
            rets = [self.value_type(v) for v in returns[0].values] if returns else []
        else:
            for r in returns:
                self.check_return(sig, r, rets)
            if rets and not returns and body:
                raise TypeCheckError(
                    f"{sig.name} declares a return value (-> {', '.join(_type_text(t) for t in rets)}) "
                    f"but has no return statement", sig.span,
                    f"end {sig.name} with `return <value>` (an orchestration returns its Out tensor), "
                    f"or drop the -> annotation")
        sig.return_types = rets
        sig.function = Function(sig.name, sig.params, list(rets), body, sig.func_type,
                                sig.level, sig.role, sig.attrs, sig.span)
        sig.state = "done"
        self._parsing.pop()
        self.ctx = saved

    def check_out_rebind(self, name: str, val, node) -> None:
        """`out = pl.exp(a)` in a pl.at region of an orchestration rebinds the name to a
        tensor computed on the device, writes nothing into the parameter, and the new
        tensor cannot leave the region."""
        c = self.ctx
        if c is None or c.sig.func_type is not FunctionType.Orchestration or not c.incore:
            return
        p = next((p for p in c.sig.params if p.var.name == name), None)
        if p is None or p.direction is ParamDirection.In or not isinstance(val, Call) \
                or val.callee is not None or val.op in ops.WRITES \
                or not isinstance(val.type, TensorType):
            return
        text = ast.unparse(node.value)
        raise ParserError(
            f"`{name} = {text}` rebinds the {p.direction.value} parameter {name!r} to a new tensor; "
            f"nothing is written into {name!r}", self.span(node),
            f"write into the parameter instead: {name}[:] = {text}")

    def check_return(self, sig: _Sig, r: Return, rets: list) -> None:
        if len(r.values) != len(rets):
            raise TypeCheckError(
                f"{sig.name} returns {len(r.values)} value(s) but its annotation declares {len(rets)}",
                r.span, "make the return statement match the -> annotation")
        for i, (v, t) in enumerate(zip(r.values, rets)):
            vt = self.value_type(v)
            if not _same_shape_dtype(vt, t) and not _dyn_compatible(vt, t):
                raise TypeCheckError(
                    f"{sig.name}: return value {i} is {ops._tname(vt)} but the annotation says "
                    f"{ops._tname(t)}", r.span, "fix the -> annotation or the returned value")

    def value_type(self, e):
        t = getattr(e, "type", None)
        return t


def _dyn_compatible(value, declared) -> bool:
    """A returned tensor whose shape differs from the annotation only where one side has
    a dynamic dim (a kernel declared [M, N] and the caller [128, 128]): the extents are
    the same tensor's at run time."""
    if not (isinstance(value, TensorType) and isinstance(declared, TensorType)):
        return False
    return value.dtype == declared.dtype and len(value.shape) == len(declared.shape) and all(
        a == b or isinstance(a, DynDim) or isinstance(b, DynDim)
        for a, b in zip(value.shape, declared.shape))
