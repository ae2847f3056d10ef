"""Python AST of a `@pl.program` class / `@pl.function` def -> `pypto.ir` nodes.

The body is read, never executed. Names resolve, in order, to the function's variables,
then to constants of the enclosing Python scope (closure/globals captured at decoration,
or module-level assignments of parsed text), which are folded into the IR.

Variables are name-based here: assigning a name again with the same type reuses its
Var (ConvertToSSA renames later); a different type makes a new Var with the same hint.
"""
from __future__ import annotations

import ast
import builtins
import difflib
import enum
import numbers
import operator
from dataclasses import dataclass, field
from typing import Any

from pypto import dtype as dt
from pypto.errors import (MisplacedTensorOpError, ParserError, PyptoError, Span,
                          TypeCheckError, UnknownOpError)
from pypto.ir import ops
from pypto.ir.nodes import (Assign, BinOp, Call, Const, DynDim, Eval, Expr, For,
                            ForKind, Function, FunctionType, If, InCoreScope, IterArg, Level,
                            MemorySpace, MemRef, Param, ParamDirection, Program, PtrType,
                            Return, Role, RuntimeScope, ScalarType, TensorType, TileType,
                            TupleExpr, TupleType, Var, Yield, derived_level_role)
from pypto.ir.visit import walk
from pypto.language.parser.source import Source
from pypto.language.signatures import signature

_LOOP_KINDS = {"range": ForKind.Sequential, "parallel": ForKind.Parallel, "unroll": ForKind.Unroll}
_SCALAR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%"}
_SHAPED_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_CMP_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_FOLD = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
         ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
         ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
         ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_INT_DTYPES = (dt.INDEX, dt.INT8, dt.INT16, dt.INT32, dt.INT64) + dt.UNSIGNED
_GENERIC_HINT = ("kernels are written with pl.* operators, pl.range/pl.parallel/pl.unroll loops, "
                 "if/else on scalars, `with pl.at(...)` and self.<function>(...) calls")
_AT_HINT = "put it inside `with pl.at(level=pl.Level.CORE_GROUP):`"


def _lang():
    import pypto.language as pl
    return pl


def _kind(obj) -> str | None:
    return getattr(obj, "_pl_kind", None) if callable(obj) else None


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, (bool, enum.Enum))


def _unsupported(what: str) -> str:
    return {
        "While": "while loops are not part of the language; use `for i in pl.range(n):`",
        "Try": "exceptions do not exist on the device; remove try/except",
        "Lambda": "lambdas are not supported inside a kernel; write the expression inline",
        "ListComp": "comprehensions are not supported; write a pl.range loop or list the values",
        "SetComp": "comprehensions are not supported",
        "DictComp": "comprehensions are not supported",
        "GeneratorExp": "generator expressions are not supported",
        "Break": "break is not supported; restructure the loop bounds",
        "Continue": "continue is not supported; use if/else inside the loop",
        "FunctionDef": "nested functions are not supported; add a method with @pl.function",
        "ClassDef": "classes are not allowed inside a kernel",
        "Import": "import at module level, outside the kernel",
        "ImportFrom": "import at module level, outside the kernel",
        "Global": "global declarations are not supported",
        "Nonlocal": "nonlocal declarations are not supported",
        "Delete": "del is not supported",
        "Raise": "raise is not supported inside a kernel",
        "Assert": "assert is not supported inside a kernel",
        "IfExp": "conditional expressions are not supported; use an if/else statement",
        "BoolOp": "and/or are not supported; nest if statements",
        "JoinedStr": "f-strings are not supported inside a kernel",
        "Starred": "star-arguments are not supported; pass each argument explicitly",
        "Await": "await is not supported",
        "Yield": "Python generators are not supported; to carry a loop value use pl.yield_",
        "Match": "match statements are not supported; use if/else",
        "With": "only `with pl.at(...)` and `with pl.scope()` are supported",
        "AsyncFunctionDef": "async functions are not supported",
        "AsyncFor": "async loops are not supported",
        "AsyncWith": "async with is not supported",
        "NamedExpr": "the walrus operator is not supported; assign on its own line",
        "Set": "sets are not supported; use a list",
    }.get(what, "rewrite it with the constructs of pypto.language (see the language guide)")


@dataclass
class _Sig:
    """A function's signature, collected before any body is parsed."""
    name: str
    node: ast.FunctionDef
    params: list[Param]
    return_types: list | None          # None: infer from the body's return
    func_type: FunctionType
    level: Level | None
    role: Role | None
    attrs: dict
    span: Span
    function: Function | None = None
    state: str = "pending"             # pending | parsing | done


@dataclass
class _YieldInfo:
    stmt: Yield
    targets: list[str] | None          # names bound by `a, b = pl.yield_(...)`


@dataclass
class _Ctx:
    """Per-function parsing state."""
    sig: _Sig
    env: dict[str, Var] = field(default_factory=dict)
    incore: int = 0                    # depth of `with pl.at(...)`
    loops: int = 0                     # depth of for loops
    ifs: int = 0                       # depth of if statements
    ranges: dict = field(default_factory=dict)   # id(loop var) -> (var, first, last) of constant loops
    cur: Span | None = None            # span of the statement being parsed
    marked: bool = False               # cur came from a `# @file:line:col` marker


class Parser:
    """Shared by program and standalone-function parsing; one per parse request."""

    def __init__(self, source: Source, statics: dict[str, Any]):
        self.src = source
        self.statics = statics
        self.sigs: dict[str, _Sig] = {}
        self.in_program = False
        self.kernel_calls: list = []   # (caller, kernel, span, inside pl.at): calls no kernel may make
        self.ctx: _Ctx | None = None
        self._lit: set[int] = set()    # ids of Consts written as bare literals (adopt a dtype)
        self.call_sites: dict[str, list[tuple[str, Span]]] = {}   # caller -> [(callee, span)]
        self._parsing: list[_Ctx] = []  # functions whose bodies are being parsed (outermost first)

    # ================================================================== spans / errors
    def span(self, node) -> Span:
        c = self.ctx
        if c is not None and c.marked and c.cur is not None:
            return c.cur
        if node is None or not hasattr(node, "lineno"):
            return c.cur if c is not None and c.cur is not None else Span(self.src.file, 1, 1)
        # in marked text (a specialized @pl.jit program, a dump) a node outside any
        # statement (a parameter's annotation) takes the marker of its line
        return self.src.marker(node) or self.src.pos(node)

    def stmt_span(self, node, compound=False) -> tuple[Span, bool]:
        m = self.src.header_marker(node) if compound else self.src.marker(node)
        if m is not None:
            return m, True
        return self.src.pos(node), False

    def error(self, msg, node=None, hint=None, cls=ParserError):
        raise cls(msg, self.span(node), hint or _GENERIC_HINT)

    # ================================================================== entry points
    def parse_program(self, cdef: ast.ClassDef, source_name: str) -> Program:
        self.in_program = True
        if cdef.bases or cdef.keywords:
            self.error("a @pl.program class takes no base classes", cdef,
                       "write `class MyProgram:` and decorate each method with @pl.function")
        for s in cdef.body:
            if isinstance(s, ast.FunctionDef):
                sig = self.collect_signature(s, in_class=True)
                if sig.name in self.sigs:
                    self.error(f"function {sig.name!r} is defined twice in program {cdef.name!r}", s,
                               "give each function of a program its own name")
                self.sigs[sig.name] = sig
            elif isinstance(s, ast.Pass) or _is_docstring(s):
                continue
            else:
                self.error(f"a @pl.program class may only contain @pl.function methods, "
                           f"found {type(s).__name__}", s,
                           "move constants to module level; they are folded into the program")
        if not self.sigs:
            self.error(f"program {cdef.name!r} has no functions", cdef,
                       "add a method decorated with @pl.function")
        for sig in self.sigs.values():
            self.ensure_body(sig)
        self.check_recursion()
        self.program_checks(cdef)
        return Program(cdef.name, [s.function for s in self.sigs.values()], source_name)

    def program_checks(self, cdef: ast.ClassDef) -> None:
        """What needs every body parsed: one orchestration, kernels called only from the
        orchestration."""
        orch = [s for s in self.sigs.values() if s.func_type is FunctionType.Orchestration]
        regions = [s for s in self.sigs.values() if s.func_type is FunctionType.Opaque and s.function
                   and any(isinstance(x, InCoreScope) for x in walk(s.function.body))]
        if orch and regions:        # outlining makes such a function an orchestration too
            raise ParserError(
                f"{regions[0].name!r} has pl.at regions, which makes it an orchestration, but "
                f"{orch[0].name!r} already is the orchestration of program {cdef.name!r}",
                regions[0].span,
                f"make {regions[0].name} an Inline function (@pl.function(type=pl.FunctionType.Inline)) "
                f"that {orch[0].name} calls, or move its regions into {orch[0].name}")
        if len(orch) > 1:
            raise ParserError(
                f"program {cdef.name!r} has {len(orch)} orchestration functions "
                f"({', '.join(repr(s.name) for s in orch)}); a program has one entry point",
                orch[1].span, f"call every kernel from {orch[0].name!r}, or put {orch[1].name!r} "
                              f"in a @pl.program of its own")
        for caller, callee, span, in_region in self.kernel_calls:
            if in_region:
                raise TypeCheckError(
                    f"kernel {callee!r} is called inside a pl.at region of {caller!r}", span,
                    f"a pl.at region is a kernel itself: call self.{callee}(...) from the "
                    f"orchestration body, outside the `with pl.at(...)` block")
            raise TypeCheckError(
                f"kernel {caller!r} calls kernel {callee!r}; kernels are launched by the "
                f"orchestration, not by each other", span,
                f"call both from the orchestration one after the other, or make {callee} an "
                f"Inline function (@pl.function(type=pl.FunctionType.Inline)) to splice it in")

    def check_recursion(self) -> None:
        """No function may reach itself through calls: kernels are inlined, outlined and
        submitted by name, never entered twice. The error is at the call closing the cycle."""
        state: dict[str, int] = {}

        def visit(name: str, chain: list[str]):
            state[name] = 1
            for callee, span in self.call_sites.get(name, ()):
                if state.get(callee) == 1:
                    raise ParserError(_recursion_message(chain + [name, callee]), span,
                                      _RECURSION_HINT)
                if callee not in state:
                    visit(callee, chain + [name])
            state[name] = 2

        for name in self.sigs:
            if name not in state:
                visit(name, [])

    def parse_function(self, fdef: ast.FunctionDef, defaults: dict | None = None) -> Function:
        sig = self.collect_signature(fdef, in_class=False, defaults=defaults)
        self.sigs[sig.name] = sig
        self.ensure_body(sig)
        return sig.function

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
        if opts:
            self.error(f"@pl.function got unsupported keyword argument(s): {', '.join(sorted(opts))}",
                       fdef, "supported: type=, level=, role=, attrs=, auto_scope=")
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
        body, y = self.block(sig.node.body, allow_yield=False)
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
                or val.callee is not None or val.op in ("tile.store", "tensor.assemble") \
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
            if not _same_shape_dtype(vt, t):
                raise TypeCheckError(
                    f"{sig.name}: return value {i} is {ops._tname(vt)} but the annotation says "
                    f"{ops._tname(t)}", r.span, "fix the -> annotation or the returned value")

    def value_type(self, e):
        t = getattr(e, "type", None)
        return t

    # ================================================================== annotations
    def ann_type(self, node, allow_dir=False, allow_tuple=False):
        """An annotation -> (type, ParamDirection)."""
        pl = _lang()
        head = node.value if isinstance(node, ast.Subscript) else node
        if isinstance(head, ast.Name) and head.id == "tuple" and head.id not in self.statics:
            obj = tuple
        else:
            try:
                obj = self.static(head, "a type annotation")
            except ParserError as e:
                if isinstance(e, UnknownOpError):
                    raise
                self.bad_annotation(node, e.message)
        if obj in (pl.Out, pl.InOut):
            if not allow_dir:
                self.bad_annotation(node, f"pl.{obj.__name__}[...] is only allowed on parameters")
            if not isinstance(node, ast.Subscript):
                self.bad_annotation(node, f"pl.{obj.__name__} needs a type: pl.{obj.__name__}[pl.Tensor[...]]")
            inner, _ = self.ann_type(node.slice)
            if not isinstance(inner, TensorType):
                self.bad_annotation(node, f"pl.{obj.__name__}[...] marks a tensor the function writes; "
                                          f"a {type(inner).__name__.replace('Type', '').lower()} "
                                          f"cannot be an output (results are written into tensors)")
            return inner, ParamDirection(obj.__name__)
        direction = ParamDirection.In
        if obj is tuple or obj is getattr(pl, "Tuple", None):
            if not allow_tuple or not isinstance(node, ast.Subscript):
                self.bad_annotation(node, "tuple[...] is only allowed as a return annotation")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return TupleType(tuple(self.ann_type(e)[0] for e in elts)), direction
        if obj is pl.Ptr:
            return PtrType(), direction
        if isinstance(obj, dt.DataType) and not isinstance(node, ast.Subscript):
            return ScalarType(obj), direction
        if obj in (pl.Tensor, pl.Tile, pl.Scalar):
            if not isinstance(node, ast.Subscript):
                if obj is pl.Tensor:
                    self.bad_annotation(node, "a bare pl.Tensor (shape from the call) is only allowed under @pl.jit")
                self.bad_annotation(node, f"pl.{obj.__name__} needs its parameters")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if obj is pl.Scalar:
                if len(elts) != 1:
                    self.bad_annotation(node, "pl.Scalar takes one dtype: pl.Scalar[pl.FP32]")
                return ScalarType(self.ann_dtype(elts[0], node)), direction
            return self.shaped_ann(obj is pl.Tile, elts, node), direction
        if isinstance(obj, pl.Annotation):
            raise ParserError(
                f"bad type annotation `{ast.unparse(node)}`: it names {obj!r} through a Python "
                f"variable, but annotations are read as written in the source", self.span(node),
                f"spell the type out in the annotation: {obj!r}")
        self.bad_annotation(node, f"{ast.unparse(node)} is not a type of the language")

    def bad_annotation(self, node, why):
        raise ParserError(f"bad type annotation `{ast.unparse(node)}`: {why}", self.span(node),
                          "write pl.Tensor[[64, 128], pl.FP16], pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec], "
                          "pl.Scalar[pl.INDEX], pl.Out[pl.Tensor[...]] or pl.Ptr")

    def ann_dtype(self, node, whole):
        try:
            d = self.static(node, "a dtype")
        except ParserError as e:
            if isinstance(e, UnknownOpError):
                raise
            self.bad_annotation(whole, e.message)
        if not isinstance(d, dt.DataType):
            self.bad_annotation(whole, f"{ast.unparse(node)} is not a dtype (pl.FP32, pl.INT32, ...)")
        return d

    def shaped_ann(self, is_tile: bool, elts, whole):
        kind = "Tile" if is_tile else "Tensor"
        if len(elts) < 2:
            self.bad_annotation(whole, f"pl.{kind} needs a shape and a dtype: pl.{kind}[[64, 64], pl.FP32]")
        if not isinstance(elts[0], (ast.List, ast.Tuple)):
            self.bad_annotation(whole, "the shape must be a list like [64, 128]")
        shape = []
        for d in elts[0].elts:
            try:
                v = self.static(d, "a dimension")
            except ParserError as e:
                if isinstance(e, UnknownOpError):
                    raise
                self.bad_annotation(whole, e.message)
            if isinstance(v, Const):
                v = v.value
            if isinstance(v, DynDim):
                if is_tile:
                    self.bad_annotation(whole, "tile shapes are static; a dynamic dim is only allowed on tensors")
            elif not (isinstance(v, int) and not isinstance(v, bool)) or v <= 0:
                self.bad_annotation(whole, f"dimension {ast.unparse(d)} is not a positive integer "
                                           f"or a pl.dynamic dim")
            shape.append(v)
        dtype = self.ann_dtype(elts[1], whole)
        memref, space, valid = None, None, None
        pl = _lang()
        for e in elts[2:]:
            if isinstance(e, ast.Call):
                f = self.static(e.func, "a type parameter")
                if f is pl.MemRef:
                    if memref is not None:
                        self.bad_annotation(whole, "two pl.MemRef(...) in one type")
                    memref = self.memref_ann(e, whole)
                    continue
                if f is pl.TileView:
                    if not is_tile:
                        self.bad_annotation(whole, "pl.TileView belongs in a pl.Tile type")
                    # the layout fields are derived (explicit dumps print them); the valid
                    # region is part of the type
                    for kw in e.keywords:
                        if kw.arg == "valid_shape":
                            valid = self.static(kw.value, "a TileView valid_shape")
                    continue
                self.bad_annotation(whole, f"unexpected {ast.unparse(e)}")
            v = self.static(e, "a type parameter")
            if isinstance(v, MemorySpace) and is_tile:
                if space is not None:
                    self.bad_annotation(whole, "two memory spaces in one type")
                space = v
                continue
            if isinstance(v, MemorySpace):
                self.bad_annotation(whole, "a tensor always lives in DDR; memory spaces belong to tiles")
            self.bad_annotation(whole, f"unexpected type parameter {ast.unparse(e)}")
        if is_tile:
            if valid is not None:
                valid = tuple(getattr(v, "value", v) for v in valid)
                valid = tuple(None if v == -1 else v for v in valid)     # -1: known at run time
                if len(valid) != len(shape) or not all(v is None or isinstance(v, int) and 0 < v <= s
                                                       for v, s in zip(valid, shape)):
                    self.bad_annotation(whole, f"valid_shape {list(valid)} does not lie inside "
                                               f"the tile shape {shape}")
                if valid == tuple(shape):
                    valid = None
            return TileType(tuple(shape), dtype, space, memref, valid)
        return TensorType(tuple(shape), dtype, memref)

    def memref_ann(self, call: ast.Call, whole) -> MemRef:
        names = ["base", "offset", "size"]
        vals: dict[str, ast.AST] = {}
        if len(call.args) > 3:
            self.bad_annotation(whole, "pl.MemRef(base, byte_offset, size) takes 3 arguments")
        for n, a in zip(names, call.args):
            vals[n] = a
        for kw in call.keywords:
            if kw.arg not in names or kw.arg in vals:
                self.bad_annotation(whole, f"pl.MemRef got an unexpected argument {kw.arg}")
            vals[kw.arg] = kw.value
        if len(vals) != 3:
            self.bad_annotation(whole, "pl.MemRef(base, byte_offset, size) takes 3 arguments")
        b = vals["base"]
        if isinstance(b, ast.Name) and self.ctx is not None and b.id in self.ctx.env:
            base = self.ctx.env[b.id]
            if not isinstance(base.type, PtrType):
                self.bad_annotation(whole, f"MemRef base {b.id!r} is not a pl.Ptr")
        else:
            try:
                base = self.static(b, "a MemRef base")
            except ParserError as e:
                self.bad_annotation(whole, e.message)
            if not isinstance(base, str):
                self.bad_annotation(whole, "a MemRef base is a pl.Ptr variable or a string name")
        out = []
        for n in ("offset", "size"):
            v = self.static(vals[n], f"MemRef {n}")
            if isinstance(v, Const):
                v = v.value
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                self.bad_annotation(whole, f"MemRef {n} must be a non-negative integer")
            out.append(v)
        return MemRef(base, out[0], out[1])

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
        self._lit.add(id(c))
        return c

    def to_expr(self, v, node):
        if isinstance(v, Expr):
            return v
        span = self.span(node)
        if isinstance(v, bool):
            return self.lit(Const(v, dt.BOOL, span))
        if isinstance(v, int):
            return self.lit(Const(v, dt.INDEX, span))
        if isinstance(v, float):
            return self.lit(Const(v, dt.FP32, span))
        if isinstance(v, (list, tuple)):
            return TupleExpr([self.to_expr(x, node) for x in v], span)
        if isinstance(v, DynDim):
            self.error(f"dynamic dim {v.name} cannot be used as a value here", node,
                       "dynamic dims only appear in tensor annotations; pass the extent you need "
                       "(e.g. a block count) as a scalar parameter `n: pl.INDEX` (under @pl.jit, "
                       "compile it with pl.RUNTIME so one artifact serves every size)")
        what = type(v).__name__ if not isinstance(v, enum.Enum) else f"{type(v).__name__}.{v.name}"
        self.error(f"`{ast.unparse(node)}` ({what}) is not a value of the language", node,
                   "values are tensors, tiles, scalars, numbers or lists of them")

    def expr(self, node):
        return self.to_expr(self.value(node), node)

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
            self.error(f"reading a sub-region `{ast.unparse(node)}` is not supported", node,
                       "load a window with pl.load(t, offsets, shapes), or write with dst[i:i+m, :] = src")
        name = type(node).__name__
        self.error(f"unsupported expression `{ast.unparse(node)}` ({name})", node, _unsupported(name))

    def scalar_dtype(self, e):
        t = getattr(e, "type", None)
        return t.dtype if isinstance(t, ScalarType) else None

    def unify(self, a, b, what, node):
        """Scalar operands must share a dtype; a bare literal takes the other's dtype."""
        da, db = self.scalar_dtype(a), self.scalar_dtype(b)
        if da == db:
            return a, b, da
        if id(b) in self._lit and _adoptable(b, db, da):
            return a, self.retype(b, da), da
        if id(a) in self._lit and _adoptable(a, da, db):
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
                       "supported: + - * / // % and comparisons")
        a, b, d = self.unify(a, b, f"`{_opsym(node.op)}`", node)
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
        k = _kind(obj)
        if k == "op":
            name, ns = obj._pl_op
            return self.op_call(node, name, ns)
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

    def op_call(self, node: ast.Call, name: str, ns: str | None):
        display = f"pl.{ns}.{name}" if ns else f"pl.{name}"
        args = self.arg_values(node)
        params = _operand_params(name, ns)
        args = self.keyword_operands(node, args, params, display)
        kwargs = self.kwarg_values(node, operands=params)
        return self.op_call_values(name, ns, args, kwargs, node, display)

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
        else:
            op = f"{ns}.{name}"
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
        if ns is not None and op != "tile.load":
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
            if not isinstance(a, (Expr, dt.DataType, MemorySpace)) \
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
        self.check_placement(op, display, node)
        try:
            t = ops.infer_type(op, pos, kw, span)
        except TypeCheckError as e:
            if e.hint:
                raise
            raise TypeCheckError(e.message, e.span or span, _sig_hint(name)) from None
        self.check_loop_window(op, pos, span)
        return Call(op, pos, kw, t, dict(attrs), span)

    def check_loop_window(self, op: str, args: list, span) -> None:
        """A window whose offsets move with constant-bound loops stays inside the tensor on
        every iteration: checked at the first and last index of each loop (exact for offsets
        affine in the indices; a violation found there is always real)."""
        c = self.ctx
        if c is None or not c.ranges or c.ifs or op not in ("tile.load", "tile.store", "tensor.assemble"):
            return                  # (under an if, the first or last iteration may not reach it)
        if op == "tile.load":
            tensor, offs, sizes = args[0], args[1], [getattr(x, "value", None) for x in args[2].items]
        elif op == "tile.store":
            if len(args) > 3:
                return
            tensor, offs, sizes = args[2], args[1], list(args[0].type.shape)
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

    def check_placement(self, op: str, display: str, node):
        c = self.ctx
        if c is not None and op == "tensor.create" and (
                c.incore or c.sig.func_type in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)):
            where = "a pl.at region" if c.incore else f"the {c.sig.func_type.value} kernel {c.sig.name!r}"
            raise MisplacedTensorOpError(
                f"misplaced tensor op: {display} allocates a DDR tensor from the orchestration; "
                f"it cannot run inside {where}", self.span(node),
                "create the tensor in the orchestration (before the `with pl.at(...)` block or in "
                "the @pl.jit entry) and pass it to the kernel")
        if c is None or c.sig.func_type is not FunctionType.Orchestration or c.incore:
            return
        if op == "tensor.full":
            raise MisplacedTensorOpError(
                f"misplaced tensor op: {display} fills a tensor on the device; it cannot run in the "
                f"orchestration body of {c.sig.name!r}", self.span(node),
                "fill it where it is used, inside `with pl.at(level=pl.Level.CORE_GROUP):` "
                "(x = pl.full(...) or out[:] = pl.full(...)); the orchestration only allocates "
                "tensors (pl.create_tensor)")
        if op.startswith("tile.") or ops.is_tensor_op(op):
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
        kernels = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)
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
        if isinstance(s, ast.For):
            return [self.for_(s, span)]
        if isinstance(s, ast.If):
            return [self.if_(s, span)]
        if isinstance(s, ast.With):
            return [self.with_(s, span)]
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
        if isinstance(t, ast.Subscript):
            return self.region_write(t, s.value, span)
        if isinstance(t, ast.Name):
            val = self.expr(s.value)
            self.check_out_rebind(t.id, val, s)
            return [Assign(self.bind_value(t.id, val, s, span), val, span)]
        if isinstance(t, (ast.Tuple, ast.List)):
            self.error("tuple unpacking is not supported", s,
                       "bind the call to one name (x: tuple[...] = self.f(...)), or return one value per function")
        self.error(f"cannot assign to `{ast.unparse(t)}`", s)

    def ann_assign(self, s: ast.AnnAssign, span):
        if not isinstance(s.target, ast.Name):
            self.error(f"cannot annotate `{ast.unparse(s.target)}`", s,
                       "annotate plain names: x: pl.Tile[[64, 64], pl.FP32] = ...")
        if s.value is None:
            self.error(f"{s.target.id!r} is declared without a value", s,
                       "give it a value: x: T = expr")
        ann, _ = self.ann_type(s.annotation, allow_tuple=True)
        val = self.expr(s.value)
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
            elif tuple(vt.shape) != tuple(ann.shape):
                bad = f"the value has shape {list(vt.shape)}"
            elif vt.dtype != ann.dtype:
                bad = f"the value has dtype {vt.dtype}"
            elif isinstance(ann, TileType):
                # the valid region comes from the value (an annotation may restate it)
                if ann.valid is not None and ann.valid_shape != vt.valid_shape:
                    bad = f"the value's valid shape is {list(vt.valid_shape)}"
                elif ann.memory_space is None:
                    return TileType(ann.shape, ann.dtype, vt.memory_space, ann.memref, vt.valid)
                elif vt.memory_space is not None and vt.memory_space != ann.memory_space:
                    bad = f"the value lives in {vt.memory_space.name}, not {ann.memory_space.name}"
                else:
                    return TileType(ann.shape, ann.dtype, ann.memory_space, ann.memref, vt.valid)
        elif isinstance(ann, ScalarType):
            if not isinstance(vt, ScalarType):
                bad = f"the value is {ops._tname(vt)}"
            elif vt.dtype != ann.dtype:
                bad = f"the value has dtype {vt.dtype}"
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
            if isinstance(ext, int) and i < len(st.shape) and len(st.shape) == rank \
                    and isinstance(st.shape[i], int) and ext != st.shape[i]:
                raise TypeCheckError(
                    f"{ast.unparse(t)} selects {ext} along dim {i} but the value has shape "
                    f"{list(st.shape)}", self.span(t),
                    "the region and the written value must have the same shape")
        offsets = TupleExpr(offs, self.span(t))
        call = self.op_call_values("assemble", "tensor", [dst, src, offsets], {}, t,
                                   f"`{ast.unparse(t)} = ...` (tensor.assemble)")
        return [Assign(self.define(name, call.type, span), call, span)]

    def extent(self, sl: ast.Slice, lo):
        """Static width of a slice when it can be seen: `a:b` with constants, `:b`, `i:i+c`."""
        if sl.upper is None:
            return None
        if isinstance(sl.upper, ast.BinOp) and isinstance(sl.upper.op, ast.Add) and sl.lower is not None \
                and ast.dump(sl.upper.left) == ast.dump(sl.lower):
            try:
                c = self.static(sl.upper.right)
                return c if isinstance(c, int) else None
            except PyptoError:
                return None
        try:
            hi = self.static(sl.upper)
            lo_v = 0 if sl.lower is None else self.static(sl.lower)
        except PyptoError:
            return None
        if isinstance(hi, int) and isinstance(lo_v, int):
            return hi - lo_v
        return None

    # ---------------------------------------------------------------- for / if / with
    def for_(self, s: ast.For, span):
        if s.orelse:
            self.error("for ... else is not supported", s, "remove the else branch")
        it = s.iter
        if not isinstance(it, ast.Call):
            self.error(f"`for ... in {ast.unparse(it)}` is not supported", s,
                       "loop with for i in pl.range(n): / pl.parallel(n) / pl.unroll(...)")
        if isinstance(it.func, ast.Name) and it.func.id == "range" and "range" not in self.statics:
            self.error("the Python builtin range() cannot be used inside a kernel", s,
                       "use pl.range(...)")
        fobj = self.static(it.func, "the loop iterable")
        kname = _kind(fobj)
        if kname not in _LOOP_KINDS:
            self.error(f"`for ... in {ast.unparse(it.func)}(...)` is not supported", s,
                       "loop with pl.range, pl.parallel or pl.unroll")
        kind = _LOOP_KINDS[kname]
        bounds = [self.expr(a) for a in it.args]
        init_node = None
        for kw in it.keywords:
            if kw.arg == "init_values":
                init_node = kw.value
            else:
                self.error(f"pl.{kname}() got an unexpected keyword argument {kw.arg!r}", s,
                           f"pl.{kname}(start, stop, step, init_values=(...))")
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
        for n, old in saved.items():
            if old is None:
                env.pop(n, None)
            else:
                env[n] = old
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
        return For(loop_var, start, stop, step, body, iter_args, rets, kind, span)

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
        if item.optional_vars is not None:
            self.error(f"`with {ast.unparse(ce)} as {ast.unparse(item.optional_vars)}` is not supported",
                       s, "drop the `as ...` part")
        if k == "at":
            opts = {}
            if len(ce.args) > 1:
                self.error("pl.at takes the level as its only positional argument", s)
            if ce.args:
                opts["level"] = self.static(ce.args[0], "pl.at level")
            for kw in ce.keywords:
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
            if self.ctx.sig.func_type in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV):
                self.error(f"pl.at inside the kernel {self.ctx.sig.name!r}: a kernel's body already runs "
                           f"on the device", s, "remove the `with pl.at(...)` line and keep its body")
            self.ctx.incore += 1
            try:
                body, _ = self.block(s.body, allow_yield=False)
            finally:
                self.ctx.incore -= 1
            return InCoreScope(body, hint, span)
        if k == "scope":
            if self.ctx.incore or self.ctx.sig.func_type in (FunctionType.InCore, FunctionType.AIC,
                                                             FunctionType.AIV):
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
                mode = self.static(kw.value, "pl.scope mode=")
                if getattr(mode, "name", None) not in ("AUTO", "MANUAL"):
                    self.error(f"pl.scope mode must be pl.ScopeMode.AUTO or MANUAL, got {mode!r}", s)
                manual = mode.name == "MANUAL"
            body, _ = self.block(s.body, allow_yield=False)
            return RuntimeScope(body, manual, span)
        self.error(f"`with {ast.unparse(ce)}` is not supported", s, _unsupported("With"))


# ====================================================================== helpers
_RECURSION_HINT = ("a function cannot call itself, directly or through other functions: "
                   "repeat work with a pl.range / pl.unroll loop, or split it into separate functions")


def _recursion_message(chain: list[str]) -> str:
    if len(chain) == 2 and chain[0] == chain[1]:
        return f"recursion is not supported: {chain[0]!r} calls itself"
    return f"recursion is not supported: {chain[0]!r} calls itself through {' -> '.join(chain)}"


_CONST_HINT = "the value is a number literal or a module-level number: pl.const(2.0, pl.FP32)"


def _const_range(start, stop, step):
    """(first, last) index of a loop with constant bounds that runs at least once."""
    vals = [getattr(x, "value", None) for x in (start, stop, step)]
    if not all(isinstance(x, Const) and isinstance(x.value, int) and not isinstance(x.value, bool)
               for x in (start, stop, step)):
        return None
    a, b, k = vals
    if k > 0 and b > a:
        return a, a + (b - a - 1) // k * k
    if k < 0 and b < a:
        return a, a - (a - b - 1) // -k * -k
    return None


def _vars_of(e) -> list:
    if isinstance(e, Var):
        return [e]
    if isinstance(e, BinOp):
        return _vars_of(e.lhs) + _vars_of(e.rhs)
    return []


def _corners(loops):
    out = [{}]
    for v, first, last in loops:
        out = [{**c, id(v): x} for c in out for x in (first, last)]
    return out


def _eval_affine(e, values):
    """The value of an index expression of + - * // on loop indices and constants (None
    for anything else, where first/last need not bound it)."""
    if isinstance(e, Const):
        return e.value if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, Var):
        return values.get(id(e))
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "//"):
        a, b = _eval_affine(e.lhs, values), _eval_affine(e.rhs, values)
        if a is None or b is None:
            return None
        if e.op == "//":
            return a // b if b > 0 else None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return None


def _coerce(v):
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, enum.Enum)):
        return int(v)
    if isinstance(v, numbers.Real) and not isinstance(v, (bool, int, enum.Enum)):
        return float(v)
    return v


def _is_docstring(s) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)


def _opsym(op) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
            ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@", ast.USub: "-", ast.UAdd: "+",
            ast.Not: "not", ast.Invert: "~"}.get(type(op), type(op).__name__)


def _adoptable(c: Const, have, want) -> bool:
    """May a bare literal of dtype `have` take dtype `want`?"""
    if want is None:
        return False
    v = c.value
    if isinstance(v, bool):
        return want == dt.BOOL
    if isinstance(v, int):
        return want in _INT_DTYPES or want.is_float
    if isinstance(v, float):
        return want.is_float
    return False


def _operand_params(name: str, ns: str | None) -> tuple:
    """The operand names of `pl.[ns.]name` (the same in both namespaces)."""
    full = ops.TILE_ONLY.get(name) or ops.TENSOR_ONLY.get(name)
    for op in ([f"{ns}.{name}"] if ns else ([full] if full else []) + [f"tile.{name}", f"tensor.{name}"]):
        d = ops.OPS.get(op)
        if d is not None and d.params:
            return d.params
    return ()


_SIGNED = (dt.INT8, dt.INT16, dt.INT32, dt.INT64, dt.INDEX)


def _widened(a, b):
    """Signed integer scalars of two widths meet in the wider (as the reference's scalar
    arithmetic does); index is the 64-bit one addresses use, and wins a tie. Floats,
    unsigned and bool never mix implicitly."""
    if a not in _SIGNED or b not in _SIGNED:
        return None
    if a.nbytes != b.nbytes:
        return a if a.nbytes > b.nbytes else b
    return dt.INDEX if dt.INDEX in (a, b) else None


def _pick_slot(d: ops.OpDef, a, kw: dict) -> str | None:
    if isinstance(a, dt.DataType):
        order = [k for k in ("dtype", "out_dtype") if k in d.kwargs]
    elif isinstance(a, MemorySpace):
        order = ["target_memory"] if "target_memory" in d.kwargs else []
    else:
        order = [k for k in d.kwargs if k not in ("dtype", "out_dtype", "target_memory")]
    for k in order:
        if k not in kw:
            return k
    return None


def _operand_names(name: str) -> list[str]:
    """The positional parameter names of `pl.<name>` from its documented signature."""
    text = signature(name)
    if "(" not in text:
        return []
    inner = text.split("(", 1)[1].split(")", 1)[0]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p and "=" not in p]


def _bad_operand(display: str, name: str, index: int, value) -> str:
    names = _operand_names(name)
    param = names[index] if index < len(names) else f"argument {index + 1}"
    if "offset" in param:
        want = "a list of indices like [0, 0]"
        param = "offsets" if param.startswith("[") else param
    elif param.startswith("shape") or param.startswith("["):
        want = "a list of dimensions like [64, 64]"
        param = "shape" if param.startswith("[") else param
    else:
        want = "a tensor, tile or scalar value"
    return f"{display}: {param} must be {want}, got {_describe(value)}"


def _describe(value) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "None"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return type(value).__name__


def _sig_hint(name: str) -> str:
    s = signature(name)
    return f"call it as {s}" if s else f"check the arguments of pl.{name}"


def _same_shape_dtype(a, b) -> bool:
    if isinstance(a, (TensorType, TileType)) and isinstance(b, (TensorType, TileType)):
        return type(a) is type(b) and tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        return a.dtype == b.dtype
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.types) == len(b.types) and all(_same_shape_dtype(x, y) for x, y in zip(a.types, b.types))
    return type(a) is type(b) and a is not None


def _shape_conflict(arg, param) -> str | None:
    """Why a tensor/tile argument's static shape cannot bind the parameter's, or None.
    A dynamic dim on either side matches any extent."""
    if not isinstance(arg, (TensorType, TileType)) or not isinstance(param, (TensorType, TileType)):
        return None
    if len(arg.shape) != len(param.shape):
        return f" (rank {len(arg.shape)} vs {len(param.shape)})"
    for k, (a, p) in enumerate(zip(arg.shape, param.shape)):
        if isinstance(a, int) and isinstance(p, int) and a != p:
            return f" (dim {k}: {a} vs {p})"
    return None


def _dims_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _same_kind_dtype(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, ScalarType) and {a.dtype, b.dtype} == {dt.INDEX, dt.INT64}:
        return True          # one 64-bit integer: an index passes for an int64 and back
    if isinstance(a, (TensorType, TileType, ScalarType)):
        return a.dtype == b.dtype
    return True


def _type_text(t) -> str:
    from pypto.ir.printer import print_type
    try:
        return print_type(t)
    except Exception:
        return ops._tname(t)


__all__ = ["Parser"]
