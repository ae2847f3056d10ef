"""Specialize `@pl.jit` source into `@pl.program` source text.

`specialize(spec) -> str` is a pure function (one stage of the build graph): the spec,
built by the decorator, holds the source of the entry and its `@pl.jit.incore` /
`@pl.jit.inline` deps plus the metadata of the call's arguments; the result is the text
of a `@pl.program` class in the printer's dialect. It never executes user code: it
parses the sources, rewrites them (annotations filled in from the arguments, shapes and
scalar parameters folded to constants, dep calls made `self.dep(...)`) and writes one
line per statement, each ending in a `# @<file>:<line>:<col>` marker that points at the
user's own source, so later errors and `.pto` locations name the user's file.

The spec (all JSON data):
    program    "_jit_<entry>"
    functions  [{name, kind: orchestration|incore|inline, source, file, line, col_offset,
                 options?: {auto_scope: bool, level: "AIC"...},
                 calls?: {<name called in the body>: <function name>},
                 constants?: {<name>: value}}...]   deps first, entry last
    args       {<entry param>: {"kind": "tensor", "shape": [int | "<dyn name>"...], "dtype": "fp32"}
                             | {"kind": "scalar", "dtype": "index", "value": v | null}}
    dynamic    {<source name>: <dynamic dim name>}   (globals bound by `pl.dynamic`)
    constants  {<global name>: int | float | bool | [..] | {"dtype": "fp32"}}
"""
from __future__ import annotations

import ast
import copy
import io
import math
import tokenize

from pypto.errors import ParserError, Span
from pypto.jit import analysis as A

_DECORATOR = {"orchestration": "Orchestration", "incore": "InCore", "inline": "Inline"}
_NO = object()          # "not a compile-time constant"
_INDENT = "    "


class SpecializeError(ParserError):
    """The `@pl.jit` source cannot be specialized against these arguments."""


def specialize(spec: dict) -> str:
    """The `@pl.program` source text for one specialization (see the module docstring)."""
    return _Specializer(spec).run()


# ----------------------------------------------------------------------------- metadata
# A meta describes a value the specializer can reason about:
#   ("tensor", (dim, ...), dtype_text)   dim: int, or str naming a dynamic dim
#   ("scalar", dtype_text)
#   ("tuple", (meta, ...))

def type_text(meta) -> str:
    if meta[0] == "tensor":
        dims = ", ".join(str(d) for d in meta[1])
        return f"pl.Tensor[[{dims}], {_dtype_src(meta[2])}]"
    if meta[0] == "scalar":
        return f"pl.Scalar[{_dtype_src(meta[1])}]"
    return f"tuple[{', '.join(type_text(m) for m in meta[1])}]"


def _dtype_src(text: str) -> str:
    return repr(A.dtype_by_text(text))          # "pl.FP32"


def _dtype_node(text: str) -> ast.AST:
    return ast.Attribute(ast.Name("pl", ast.Load()), A.dtype_by_text(text).name, ast.Load())


def _show(meta) -> str:
    if meta is None:
        return "unknown"
    if meta[0] == "tensor":
        return f"Tensor[{', '.join(map(str, meta[1]))}] {meta[2]}"
    if meta[0] == "scalar":
        return f"Scalar {meta[1]}"
    return "(" + ", ".join(_show(m) for m in meta[1]) + ")"


def _literal(v) -> ast.AST:
    if isinstance(v, bool) or v is None:
        return ast.Constant(v)
    if isinstance(v, int):
        return ast.Constant(v) if v >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-v))
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return _pl_call("const", [ast.Constant(repr(v)), _dtype_node("fp32")])
        if math.copysign(1.0, v) < 0:
            return ast.UnaryOp(ast.USub(), ast.Constant(-v))
        return ast.Constant(v)
    if isinstance(v, (list, tuple)):
        return ast.List([_literal(x) for x in v], ast.Load())
    if isinstance(v, dict) and set(v) == {"dtype"}:
        return _dtype_node(v["dtype"])
    raise SpecializeError(f"cannot write constant {v!r} into the program")


def _scalar_literal(value, dtype: str) -> ast.AST:
    """A scalar parameter's value, typed the way the printer types constants: bare
    literals are INDEX / FP32 / BOOL, other dtypes go through `pl.const`."""
    if dtype == "bool":
        return ast.Constant(bool(value))
    if dtype == "index":
        return _literal(int(value))
    if dtype == "fp32":
        return _literal(float(value))
    d = A.dtype_by_text(dtype)
    v = float(value) if d.is_float else int(value)
    return _pl_call("const", [_literal(v), _dtype_node(dtype)])


def _pl_call(name, args) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name("pl", ast.Load()), name, ast.Load()), args, [])


# ----------------------------------------------------------------------------- functions
class _Fn:
    """One function of the spec, parsed."""

    def __init__(self, entry: dict, spec: dict, names: list[str]):
        self.name = entry["name"]
        self.kind = entry["kind"]
        if self.kind not in _DECORATOR:
            raise SpecializeError(f"function `{self.name}` has unknown kind {self.kind!r}; "
                                  f"expected one of {', '.join(_DECORATOR)}")
        self.file = entry.get("file", "<unknown>")
        self.line0 = int(entry.get("line", 1))
        self.col0 = int(entry.get("col_offset", 0))
        self.options = dict(entry.get("options") or {})
        try:
            self.tree = A.parse_function(entry["source"])
        except SyntaxError as e:
            line = self.line0 + (e.lineno or 1) - 1
            raise SpecializeError(f"cannot read the source of `{self.name}`: {e.msg}",
                                  Span(self.file, line, self.col0 + (e.offset or 1))) from None
        self.params = A.params(self.tree)
        self.anns = {p.arg: A.classify_annotation(p.annotation) for p in self.params}
        self.locals = A.local_names(self.tree)
        self.local_dyns = A.local_dynamics(self.tree)
        calls = entry.get("calls")
        if calls is None:
            calls = {n: n for n in names if n != self.name}
        self.calls = {k: v for k, v in calls.items() if k not in self.locals}
        self.constants = dict(spec.get("constants") or {})
        self.constants.update(entry.get("constants") or {})
        self.defaults = self._defaults()
        self.call_metas: dict[str, tuple] = {}     # param -> (meta, span of first call)

    def _defaults(self) -> dict[str, ast.AST]:
        a = self.tree.args
        pos = list(a.posonlyargs) + list(a.args)
        out = {}
        for p, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
            out[p.arg] = d
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                out[p.arg] = d
        return out

    def span(self, node) -> Span:
        return Span(self.file, self.line0 + node.lineno - 1, self.col0 + node.col_offset + 1)

    def marker(self, node) -> str:
        return f"  # @{self.span(node)}"

    def error(self, message, node, hint=None):
        raise SpecializeError(message, self.span(node) if node is not None else None, hint)


# ----------------------------------------------------------------------------- the specializer
class _Specializer:
    def __init__(self, spec: dict):
        for key in ("program", "functions"):
            if key not in spec:
                raise ValueError(f"specialization spec lacks {key!r}")
        self.program = spec["program"]
        names = [f["name"] for f in spec["functions"]]
        if not names:
            raise ValueError("specialization spec has no functions")
        if len(set(names)) != len(names):
            raise SpecializeError(f"two functions of program `{self.program}` share a name: "
                                  f"{', '.join(sorted({n for n in names if names.count(n) > 1}))}")
        self.fns = [_Fn(f, spec, names) for f in spec["functions"]]
        self.by_name = {f.name: f for f in self.fns}
        self.entry = self.fns[-1]
        self.args = dict(spec.get("args") or {})
        self.global_dyns = dict(spec.get("dynamic") or {})
        self.return_cache: dict = {}
        self.in_progress: set[str] = set()

    # ------------------------------------------------------------------ driver
    def run(self) -> str:
        texts = {}
        for fn in self._callers_first():
            texts[fn.name] = self._function(fn)
        out = [f"# pypto.program: {self.program}", "import pypto.language as pl", ""]
        dyns = self._dynamic_decls()
        for name in sorted(dyns):
            out.append(f'{name} = pl.dynamic("{dyns[name]}")')
        if dyns:
            out.append("")
        out += ["@pl.program", f"class {self.program}:"]
        for i, fn in enumerate(self.fns):
            if i:
                out.append("")
            out.extend(texts[fn.name])
        return "\n".join(out) + "\n"

    def _callees(self, fn: _Fn) -> list[_Fn]:
        out = []
        for name in A.called_names(fn.tree):
            target = fn.calls.get(name)
            if target is not None and target in self.by_name and target != self.entry.name:
                out.append(self.by_name[target])
        return out

    def _callers_first(self) -> list[_Fn]:
        """Every function after all of its callers, so call sites fix the shapes of
        bare-annotated dep parameters before the dep is written."""
        post: list[_Fn] = []
        state: dict[str, int] = {}

        def visit(fn: _Fn, chain: list[str]):
            if state.get(fn.name) == 2:
                return
            if state.get(fn.name) == 1:
                raise SpecializeError(f"recursive calls are not supported: "
                                      f"{' -> '.join(chain + [fn.name])}",
                                      fn.span(fn.tree))
            state[fn.name] = 1
            for callee in self._callees(fn):
                visit(callee, chain + [fn.name])
            state[fn.name] = 2
            post.append(fn)

        visit(self.entry, [])
        for fn in self.fns:          # functions the entry never reaches, in spec order
            visit(fn, [])
        order = list(reversed(post))
        return order

    def _dynamic_decls(self) -> dict[str, str]:
        decls: dict[str, str] = {}
        for fn in self.fns:
            for src, dyn in list(self.global_dyns.items()) + list(fn.local_dyns.items()):
                if decls.setdefault(src, dyn) != dyn:
                    raise SpecializeError(f"`{src}` names two dynamic dims, "
                                          f"\"{decls[src]}\" and \"{dyn}\"")
        return decls

    def dyn_names(self, fn: _Fn) -> set[str]:
        return set(self.global_dyns) | set(fn.local_dyns)

    # ------------------------------------------------------------------ parameters
    def ann_meta(self, fn: _Fn, ann: A.Ann):
        """The meta of a full annotation, or None when it cannot be evaluated."""
        if ann.kind == "tensor" and not ann.bare and ann.dtype is not None:
            dims = [self.eval_dim(fn, d, {}) for d in ann.shape]
            if all(d is not None for d in dims):
                return ("tensor", tuple(dims), ann.dtype)
        if ann.kind == "scalar" and ann.dtype is not None:
            return ("scalar", ann.dtype)
        return None

    def return_ann_meta(self, fn: _Fn, node):
        if isinstance(node, ast.Subscript) and A.last(node.value) in ("tuple", "Tuple"):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            metas = [self.return_ann_meta(fn, i) for i in items]
            return ("tuple", tuple(metas)) if all(metas) else None
        ann = A.classify_annotation(node)
        return None if ann.bare else self.ann_meta(fn, ann)

    def eval_dim(self, fn: _Fn, node, consts):
        if isinstance(node, ast.Name):
            if node.id in consts and isinstance(consts[node.id], (int, str)) \
                    and not isinstance(consts[node.id], bool):
                return consts[node.id]
            if node.id in self.dyn_names(fn) and node.id not in consts:
                return node.id
            if node.id in fn.constants and node.id not in fn.locals:
                v = fn.constants[node.id]
                return v if isinstance(v, int) and not isinstance(v, bool) else None
        v = _const(node, consts, fn)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def param_metas(self, fn: _Fn) -> dict:
        return {p.arg: self._param_meta(fn, p) for p in fn.params}

    def _param_meta(self, fn: _Fn, p: ast.arg):
        ann = fn.anns[p.arg]
        if fn is self.entry:
            return self._entry_param_meta(fn, p, ann)
        full = self.ann_meta(fn, ann) if not ann.bare else None
        if full is not None:
            return full
        if p.arg in fn.call_metas:
            meta = fn.call_metas[p.arg][0]
            if ann.kind == "scalar" and ann.dtype is not None:
                return ("scalar", ann.dtype)
            return meta
        if ann.kind == "scalar" and ann.dtype is not None:
            return ("scalar", ann.dtype)
        if ann.kind == "other":
            return None
        fn.error(f"cannot tell the shape of parameter `{p.arg}` of `{fn.name}`: no call of "
                 f"`{fn.name}` passes it a tensor of known shape", p,
                 hint="annotate it fully, e.g. pl.Tensor[[64, 64], pl.FP32], or pass it a "
                      "parameter or a pl.create_tensor result")

    def _entry_param_meta(self, fn: _Fn, p: ast.arg, ann: A.Ann):
        arg = self.args.get(p.arg)
        if arg is None:
            meta = self.ann_meta(fn, ann)
            if meta is None:
                fn.error(f"no argument for parameter `{p.arg}` of `{fn.name}` and its "
                         f"annotation does not give its type", p,
                         hint="pass a sample tensor or scalar, or annotate it fully")
            return meta
        if arg["kind"] == "tensor":
            if ann.kind == "scalar":
                fn.error(f"parameter `{p.arg}` is annotated as a scalar but the call passes "
                         f"a tensor", p)
            meta = ("tensor", tuple(arg["shape"]), arg["dtype"])
            if ann.kind == "tensor" and not ann.bare:
                self._check_tensor(fn, p, ann, meta)
            return meta
        if arg["kind"] == "scalar":
            if ann.kind == "tensor":
                fn.error(f"parameter `{p.arg}` is annotated as a tensor but the call passes "
                         f"a scalar ({arg.get('value')!r})", p)
            return ("scalar", ann.dtype or arg["dtype"])
        raise SpecializeError(f"argument `{p.arg}` has unknown kind {arg['kind']!r}")

    def _check_tensor(self, fn: _Fn, p: ast.arg, ann: A.Ann, meta):
        shape, dtype = meta[1], meta[2]
        want = [self.eval_dim(fn, d, {}) for d in ann.shape]
        text = ast.unparse(ann.inner)
        if len(want) != len(shape):
            fn.error(f"argument `{p.arg}` has {len(shape)} dims {list(shape)} but its "
                     f"annotation `{text}` has {len(want)}", p.annotation,
                     f"pass a tensor of rank {len(want)} as `{p.arg}`, or annotate it with "
                     f"{len(shape)} dims")
        for got, w in zip(shape, want):
            if isinstance(got, int) and isinstance(w, int) and got != w:
                fn.error(f"argument `{p.arg}` has shape {list(shape)} but its annotation "
                         f"`{text}` says {[ast.unparse(d) for d in ann.shape]}", p.annotation,
                         "pass a tensor of that shape, or use a pl.dynamic dim where the "
                         "size may vary")
        if ann.dtype is not None and ann.dtype != dtype:
            fn.error(f"argument `{p.arg}` has dtype {dtype} but its annotation `{text}` says "
                     f"{ann.dtype}", p.annotation,
                     f"convert the tensor to {ann.dtype}, or change the annotation's dtype")

    def param_text(self, fn: _Fn, p: ast.arg, meta) -> str:
        ann = fn.anns[p.arg]
        if ann.kind in ("tensor", "scalar") and not ann.bare:
            text = ast.unparse(_AnnSubst(self, fn).visit(copy.deepcopy(ann.inner)))
        elif ann.kind == "other":
            text = ast.unparse(_AnnSubst(self, fn).visit(copy.deepcopy(ann.inner)))
        else:
            if meta is None:
                fn.error(f"cannot tell the type of parameter `{p.arg}` of `{fn.name}`", p)
            if meta[0] == "tuple":
                fn.error(f"parameter `{p.arg}` of `{fn.name}` receives a tuple", p)
            if ann.kind == "tensor" and meta[0] != "tensor":
                fn.error(f"parameter `{p.arg}` of `{fn.name}` is annotated pl.Tensor but "
                         f"receives {_show(meta)}", p)
            text = type_text(meta)
        if ann.direction != "In" and fn.kind != "inline":
            text = f"pl.{ann.direction}[{text}]"
        return f"{p.arg}: {text}"

    # ------------------------------------------------------------------ return types of deps
    def dep_return(self, dep: _Fn, arg_metas: tuple):
        key = (dep.name, arg_metas)
        if key in self.return_cache:
            return self.return_cache[key]
        if dep.tree.returns is not None:
            meta = self.return_ann_meta(dep, dep.tree.returns)
        elif dep.name in self.in_progress:
            meta = None
        else:
            self.in_progress.add(dep.name)
            try:
                env = {}
                for p, m in zip(dep.params, arg_metas):
                    ann = dep.anns[p.arg]
                    full = None if ann.bare else self.ann_meta(dep, ann)
                    env[p.arg] = full if full is not None else m
                body = _Body(self, dep, env, dry=True)
                body.run()
                meta = _common(body.returns)
            finally:
                self.in_progress.discard(dep.name)
        self.return_cache[key] = meta
        return meta

    # ------------------------------------------------------------------ one function
    def _function(self, fn: _Fn) -> list[str]:
        metas = self.param_metas(fn)
        body = _Body(self, fn, dict(metas), dry=False)
        lines = body.run()
        params = [self.param_text(fn, p, metas[p.arg]) for p in fn.params]
        if fn.kind != "incore":
            params.insert(0, "self")
        if fn.tree.returns is not None:
            ret = " -> " + ast.unparse(_AnnSubst(self, fn).visit(copy.deepcopy(fn.tree.returns)))
        else:
            meta = _common(body.returns)
            ret = f" -> {type_text(meta)}" if meta is not None else ""
        deco = [f"type=pl.FunctionType.{_DECORATOR[fn.kind]}"]
        level = fn.options.get("level")
        if level:
            deco.append(f"level=pl.Level.{level}")
        if fn.options.get("auto_scope", True) is False:
            deco.append("auto_scope=False")
        head = [f"{_INDENT}@pl.function({', '.join(deco)})",
                f"{_INDENT}def {fn.name}({', '.join(params)}){ret}:{fn.marker(fn.tree)}"]
        return head + lines


def _common(metas):
    """The one type every `return` agrees on, else None."""
    if not metas or any(m is None for m in metas):
        return None
    first = metas[0]
    return first if all(m == first for m in metas) else None


# ----------------------------------------------------------------------------- constants
def _const(node, consts, fn: _Fn | None = None):
    """The compile-time value of an expression, or _NO."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, (int, float, bool)) else _NO
    if isinstance(node, ast.Name):
        if node.id in consts:
            v = consts[node.id]
            return v if isinstance(v, (int, float, bool)) else _NO
        if fn is not None and node.id not in fn.locals and node.id in fn.constants:
            v = fn.constants[node.id]
            return v if isinstance(v, (int, float, bool)) else _NO
        return _NO
    if isinstance(node, ast.UnaryOp):
        v = _const(node.operand, consts, fn)
        if v is _NO:
            return _NO
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Not):
            return not v
        return _NO
    if isinstance(node, ast.BinOp):
        lhs, rhs = _const(node.left, consts, fn), _const(node.right, consts, fn)
        if lhs is _NO or rhs is _NO:
            return _NO
        ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Mod: lambda a, b: a % b, ast.Div: lambda a, b: a / b}
        f = ops.get(type(node.op))
        if f is None:
            return _NO
        try:
            return f(lhs, rhs)
        except ArithmeticError:
            return _NO
    if isinstance(node, ast.Compare):
        left = _const(node.left, consts, fn)
        if left is _NO:
            return _NO
        cmp = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
               ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
               ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = _const(comp, consts, fn)
            f = cmp.get(type(op))
            if right is _NO or f is None:
                return _NO
            result = result and f(left, right)
            left = right
        return result
    if isinstance(node, ast.BoolOp):
        vals = [_const(v, consts, fn) for v in node.values]
        if any(v is _NO for v in vals):
            return _NO
        if isinstance(node.op, ast.And):
            return all(vals)
        return any(vals)
    if (isinstance(node, ast.Call) and A.last(node.func) == "const" and node.args
            and not node.keywords):
        return _const(node.args[0], consts, fn)
    return _NO


# ----------------------------------------------------------------------------- annotations
class _AnnSubst(ast.NodeTransformer):
    """Module constants inside a kept annotation (`pl.Tensor[[ROWS, 128], pl.FP32]`)."""

    def __init__(self, sp: _Specializer, fn: _Fn):
        self.sp, self.fn = sp, fn

    def visit_Name(self, node):
        if (isinstance(node.ctx, ast.Load) and node.id in self.fn.constants
                and node.id not in self.sp.dyn_names(self.fn)):
            return ast.copy_location(_literal(self.fn.constants[node.id]), node)
        return node


# ----------------------------------------------------------------------------- bodies
class _Body:
    """Walks one function body in order, rewriting and writing its statements."""

    def __init__(self, sp: _Specializer, fn: _Fn, env: dict, dry: bool):
        self.sp, self.fn, self.dry = sp, fn, dry
        self.env = env                       # name -> meta (tensors, scalars)
        self.consts: dict = {}               # name -> int/float/bool, or dyn dim name
        self.lines: list[str] = []
        self.returns: list = []
        self.subst: dict[str, ast.AST] = {}
        self.prelude: list[str] = []
        # locals bound once, on the straight-line path, to a compile-time constant are
        # folded into their uses (`K = a.shape[1]` ... `pl.create_tensor([M, K], ...)`)
        self.once = {n for n, k in A.store_counts(fn.tree).items() if k == 1} - \
            {p.arg for p in fn.params}
        self.nesting = 0
        if fn is sp.entry:
            self._scalar_params()

    def _scalar_params(self):
        """Scalar parameters with a value: the parameter stays, its uses become the value
        (or, when the body rebinds it, its first statement binds the value)."""
        rebound = A.assigned_names(self.fn.tree.body)
        for p in self.fn.params:
            arg = self.sp.args.get(p.arg)
            if not arg or arg.get("kind") != "scalar" or arg.get("value") is None:
                continue
            dtype = self.fn.anns[p.arg].dtype or arg["dtype"]
            lit = _scalar_literal(arg["value"], dtype)
            if p.arg in rebound:
                self.prelude.append(f"{p.arg} = {ast.unparse(lit)}")
                self.consts[p.arg] = _const(lit, {})
            else:
                self.subst[p.arg] = lit

    # ------------------------------------------------------------------ output
    def run(self) -> list[str]:
        for text in self.prelude:
            self.emit(2, text, self.fn.tree)
        if not self.block(self.fn.tree.body, 2):
            self.emit(2, "pass", self.fn.tree)
        return self.lines

    def emit(self, depth, text, node):
        self.lines.append(f"{_INDENT * depth}{_double_quotes(text)}{self.fn.marker(node)}")

    def block(self, stmts, depth) -> int:
        """Write a statement list; returns how many lines it produced."""
        before = len(self.lines)
        for s in stmts:
            self.stmt(s, depth)
        return len(self.lines) - before

    def body(self, stmts, depth, parent):
        if not self.block(stmts, depth):
            self.emit(depth, "pass", parent)

    # ------------------------------------------------------------------ statements
    def stmt(self, s, depth):
        fn = self.fn
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):      # docstrings, `...`
                return
            if A.bind_dynamic_call(s.value):           # folded into the annotation
                return
            self.emit(depth, _unparse(ast.Expr(self.x(s.value)), s), s)
        elif isinstance(s, ast.Assign):
            self.assign(s, depth)
        elif isinstance(s, ast.AnnAssign):
            value = self.x(s.value) if s.value is not None else None
            ann = _AnnSubst(self.sp, fn).visit(copy.deepcopy(s.annotation))
            target = self.x(s.target)
            self.emit(depth, _unparse(ast.AnnAssign(target, ann, value, s.simple), s), s)
            if isinstance(s.target, ast.Name):
                meta = self.sp.return_ann_meta(fn, s.annotation)
                self.bind(s.target.id, meta if meta is not None else
                          (self.meta(value) if value is not None else None), value, fold=False)
        elif isinstance(s, ast.AugAssign):
            self.emit(depth, _unparse(ast.AugAssign(self.x(s.target), s.op, self.x(s.value)), s), s)
            if isinstance(s.target, ast.Name):
                self.consts.pop(s.target.id, None)
        elif isinstance(s, ast.Return):
            value = self.x(s.value) if s.value is not None else None
            self.emit(depth, _unparse(ast.Return(value), s), s)
            self.returns.append(self.meta(value) if value is not None else None)
        elif isinstance(s, ast.If):
            self.if_(s, depth)
        elif isinstance(s, (ast.For, ast.While)):
            self.loop(s, depth)
        elif isinstance(s, ast.With):
            items = ", ".join(ast.unparse(ast.withitem(self.x(i.context_expr), i.optional_vars))
                              for i in s.items)
            self.emit(depth, f"with {items}:", s)
            for i in s.items:
                if i.optional_vars is not None:
                    for n in A.assigned_names([ast.Expr(i.optional_vars)]):
                        self.forget(n)
            self.body(s.body, depth + 1, s)
        elif isinstance(s, (ast.Pass, ast.Break, ast.Continue)):
            self.emit(depth, ast.unparse(s), s)
        else:
            what = type(s).__name__.lower()
            fn.error(f"`{what}` statements are not supported in a @pl.jit function", s,
                     hint="the body is compiled, not run: use pl.range / if / with pl.at "
                          "and pl operators")

    def assign(self, s: ast.Assign, depth):
        fn = self.fn
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                and A.dynamic_call(s.value) is not None:
            return                                     # hoisted to module level
        # `M, N = a.shape` -> one constant binding per name
        target = s.targets[0]
        shape_meta = self.shape_of(s.value)
        if (len(s.targets) == 1 and isinstance(target, (ast.Tuple, ast.List))
                and shape_meta is not None
                and all(isinstance(e, ast.Name) for e in target.elts)):
            dims = shape_meta[1]
            if len(dims) != len(target.elts):
                fn.error(f"cannot unpack {len(dims)} dims of `{ast.unparse(s.value)}` "
                         f"into {len(target.elts)} names", s)
            for name, dim in zip(target.elts, dims):
                self.env.pop(name.id, None)
                self.consts[name.id] = dim
                self.fold(name.id, _dim_node(dim))
                if isinstance(dim, str) and dim == name.id:
                    continue                           # the dynamic dim's own name
                self.emit(depth, f"{name.id} = {ast.unparse(_dim_node(dim))}", s)
            return
        value = self.x(s.value)
        targets = [self.x(t) for t in s.targets]
        if (len(targets) == 1 and isinstance(targets[0], ast.Name)
                and isinstance(value, ast.Name) and value.id == targets[0].id):
            return                                     # `M = M` after folding
        self.emit(depth, _unparse(ast.Assign(targets, value, type_comment=None), s), s)
        meta = self.meta(value)
        for t in s.targets:
            if isinstance(t, ast.Name):
                self.bind(t.id, meta, value)
            elif isinstance(t, (ast.Tuple, ast.List)):
                parts = meta[1] if (meta and meta[0] == "tuple"
                                    and len(meta[1]) == len(t.elts)) else [None] * len(t.elts)
                for e, m in zip(t.elts, parts):
                    if isinstance(e, ast.Name):
                        self.bind(e.id, m, None)
                    else:
                        for n in A.assigned_names([ast.Expr(e)]):
                            self.forget(n)

    def fold(self, name, node):
        if name in self.once and not self.nesting:
            self.subst[name] = node

    def bind(self, name, meta, value, fold=True):
        if meta is not None:
            self.env[name] = meta
        else:
            self.env.pop(name, None)
        v = _const(value, self.consts, self.fn) if value is not None else _NO
        if v is not _NO:
            self.consts[name] = v
            if fold and not any(isinstance(n, ast.Call) for n in ast.walk(value)):
                self.fold(name, _literal(v))
        elif isinstance(value, ast.Name) and value.id in self.consts:
            self.consts[name] = self.consts[value.id]
        else:
            self.consts.pop(name, None)

    def forget(self, name):
        self.env.pop(name, None)
        self.consts.pop(name, None)

    def if_(self, s: ast.If, depth):
        test = self.x(s.test)
        v = _const(test, self.consts, self.fn)
        if v is not _NO:                               # folded at specialization
            self.block(s.body if v else s.orelse, depth)
            return
        self.emit(depth, f"if {ast.unparse(test)}:", s)
        saved = dict(self.consts)
        self.nesting += 1
        self.body(s.body, depth + 1, s)
        if s.orelse:
            self.consts = dict(saved)
            self.lines.append(f"{_INDENT * depth}else:")
            self.body(s.orelse, depth + 1, s)
        self.nesting -= 1
        for n in A.assigned_names(s.body + s.orelse):
            saved.pop(n, None)
        self.consts = saved

    def loop(self, s, depth):
        if s.orelse:
            self.fn.error("`else` on a loop is not supported in a @pl.jit function", s)
        changed = A.assigned_names(s.body)
        if isinstance(s, ast.For):
            changed |= A.assigned_names([ast.Expr(s.target)])
        for n in changed:
            self.consts.pop(n, None)
        if isinstance(s, ast.For):
            for n in A.assigned_names([ast.Expr(s.target)]):
                self.env.pop(n, None)
            target = s.target
            names = (", ".join(ast.unparse(e) for e in target.elts)
                     if isinstance(target, ast.Tuple) and target.elts else ast.unparse(target))
            self.emit(depth, f"for {names} in {ast.unparse(self.x(s.iter))}:", s)
        else:
            self.emit(depth, f"while {ast.unparse(self.x(s.test))}:", s)
        self.nesting += 1
        self.body(s.body, depth + 1, s)
        self.nesting -= 1
        for n in changed:
            self.consts.pop(n, None)

    # ------------------------------------------------------------------ expressions
    def x(self, node):
        if node is None:
            return None
        return _Rewrite(self).visit(copy.deepcopy(node))

    def shape_of(self, node):
        """The tensor meta of `a` when node is `a.shape` for a tensor of known shape."""
        if (isinstance(node, ast.Attribute) and node.attr == "shape"
                and isinstance(node.value, ast.Name) and node.value.id in self.fn.locals):
            meta = self.env.get(node.value.id)
            if meta is not None and meta[0] == "tensor":
                return meta
        return None

    def meta(self, node):
        """What an already rewritten expression is, when the specializer can tell."""
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        v = _const(node, self.consts, self.fn)
        if v is not _NO:
            if isinstance(node, ast.Call) and len(node.args) == 2:   # pl.const(v, dtype)
                d = A.dtype_text(node.args[1])
                if d:
                    return ("scalar", d)
            if isinstance(v, bool):
                return ("scalar", "bool")
            return ("scalar", "index" if isinstance(v, int) else "fp32")
        if isinstance(node, ast.Tuple):
            metas = tuple(self.meta(e) for e in node.elts)
            return ("tuple", metas) if all(metas) else None
        if isinstance(node, ast.Call):
            return self.call_meta(node)
        return None

    def call_meta(self, node: ast.Call):
        f = node.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == "self" and f.attr in self.sp.by_name):
            dep = self.sp.by_name[f.attr]
            return self.sp.dep_return(dep, tuple(self.meta(a) for a in node.args))
        name = A.last(f)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if name in ("create_tensor", "full"):
            shape = node.args[0] if node.args else kw.get("shape")
            dtype = node.args[1] if len(node.args) > 1 else kw.get("dtype")
            return self._tensor_meta(shape, dtype)
        if name in ("reshape", "slice") and node.args:
            src = self.meta(node.args[0])
            shape = node.args[1] if len(node.args) > 1 else kw.get("shape")
            if src is not None and src[0] == "tensor":
                return self._tensor_meta(shape, None, src[2])
        return None

    def _tensor_meta(self, shape, dtype, default_dtype=None):
        if not isinstance(shape, (ast.List, ast.Tuple)):
            return None
        dims = [self.sp.eval_dim(self.fn, d, self.consts) for d in shape.elts]
        d = A.dtype_text(dtype) if dtype is not None else default_dtype
        if d is None or any(x is None for x in dims):
            return None
        return ("tensor", tuple(dims), d)

    def dep_call(self, node: ast.Call, dep: _Fn, rewrite) -> ast.Call:
        """`dep(a, b=x)` -> `self.dep(a, x)`; records the argument metas for dep."""
        fn = self.fn
        names = [p.arg for p in dep.params]
        usage = f"call it as {dep.name}({', '.join(names)})"
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            fn.error(f"`*args` / `**kwargs` in a call of `{dep.name}` are not supported", node,
                     hint=f"pass each argument: {usage}")
        if len(node.args) > len(names):
            fn.error(f"`{dep.name}` takes {len(names)} arguments but the call passes "
                     f"{len(node.args)}", node, hint=usage)
        bound = dict(zip(names, node.args))
        for k in node.keywords:
            if k.arg not in names:
                fn.error(f"`{dep.name}` got an unexpected keyword argument `{k.arg}`", node, hint=usage)
            if k.arg in bound:
                fn.error(f"`{dep.name}` got multiple values for argument `{k.arg}`", node, hint=usage)
            bound[k.arg] = k.value
        args = []
        for name in names:
            if name in bound:
                args.append(rewrite(bound[name]))
            elif name in dep.defaults:
                args.append(_Rewrite(_Body(self.sp, dep, {}, dry=True)).visit(
                    copy.deepcopy(dep.defaults[name])))
            else:
                fn.error(f"`{dep.name}` is missing argument `{name}`", node, hint=usage)
        metas = tuple(self.meta(a) for a in args)
        if not self.dry:
            for name, meta, a in zip(names, metas, args):
                ann = dep.anns[name]
                # a scalar annotated with its dtype (`i: pl.INDEX`) needs nothing from
                # the call: a loop variable or an expression may be passed
                typed_scalar = ann.kind == "scalar" and ann.dtype is not None
                needs = (ann.bare and not typed_scalar) or ann.kind is None
                if needs and meta is None:
                    fn.error(f"cannot tell the shape of argument `{ast.unparse(a)}` passed "
                             f"to parameter `{name}` of `{dep.name}`", node,
                             hint=f"annotate `{name}` fully in `{dep.name}`, or pass a "
                                  f"parameter or a pl.create_tensor result")
                seen = dep.call_metas.get(name)
                if seen is None:
                    dep.call_metas[name] = (meta, fn.span(node))
                elif needs and seen[0] != meta:
                    fn.error(f"`{dep.name}` is called with {_show(meta)} for `{name}` here "
                             f"but with {_show(seen[0])} at {seen[1]}; a dep is specialized "
                             f"once per program", node,
                             hint="annotate the parameter with a dynamic dim, or write two "
                                  "kernels")
        call = ast.Call(ast.Attribute(ast.Name("self", ast.Load()), dep.name, ast.Load()),
                        args, [])
        return ast.copy_location(call, node)


def _double_quotes(text: str) -> str:
    """Plain string literals in the printer's spelling: "x", not 'x'."""
    if "'" not in text:
        return text
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return text
    for tok in reversed(toks):
        raw = tok.string
        if tok.start[0] != 1 or tok.end[0] != 1 or not raw.startswith("'") or "\\" in raw:
            continue
        value = raw[1:-1]
        if '"' in value or "'" in value:
            continue
        text = text[:tok.start[1]] + '"' + value + '"' + text[tok.end[1]:]
    return text


def _unparse(node, like) -> str:
    """One statement's text (ast.unparse wants locations on statements)."""
    return ast.unparse(ast.copy_location(node, like))


def _dim_node(dim) -> ast.AST:
    return ast.Name(dim, ast.Load()) if isinstance(dim, str) else _literal(dim)


class _Rewrite(ast.NodeTransformer):
    """Expression rewrites: substitutions, shape folding, dep calls."""

    def __init__(self, body: _Body):
        self.b = body
        self.fn = body.fn

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            return node
        n, fn = node.id, self.fn
        if n in self.b.subst:
            return ast.copy_location(copy.deepcopy(self.b.subst[n]), node)
        if n in fn.locals:
            return node
        if n in fn.calls:
            return ast.copy_location(
                ast.Attribute(ast.Name("self", ast.Load()), fn.calls[n], ast.Load()), node)
        if n in fn.constants and n not in self.b.sp.dyn_names(fn):
            return ast.copy_location(_literal(fn.constants[n]), node)
        return node

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.attr in ("shape", "dtype") \
                and node.value.id in self.fn.locals:
            meta = self.b.env.get(node.value.id)
            if meta is not None and meta[0] == "tensor":
                if node.attr == "dtype":
                    return ast.copy_location(_dtype_node(meta[2]), node)
                return ast.copy_location(
                    ast.Tuple([_dim_node(d) for d in meta[1]], ast.Load()), node)
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        meta = self.b.shape_of(node.value)
        if meta is not None:
            i = _const(node.slice, self.b.consts, self.fn)
            if isinstance(i, int) and not isinstance(i, bool):
                dims = meta[1]
                if not -len(dims) <= i < len(dims):
                    self.fn.error(f"`{ast.unparse(node)}`: index {i} is out of range for a "
                                  f"tensor of {len(dims)} dims", node)
                return ast.copy_location(_dim_node(dims[i]), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "len" and f.id not in self.fn.locals
                and len(node.args) == 1 and not node.keywords):
            meta = self.b.shape_of(node.args[0])
            if meta is not None:
                return ast.copy_location(_literal(len(meta[1])), node)
        if isinstance(f, ast.Name) and f.id in self.fn.calls:
            dep = self.b.sp.by_name.get(self.fn.calls[f.id])
            if dep is not None and dep is not self.b.sp.entry:
                return self.b.dep_call(node, dep, self.visit)
        return self.generic_visit(node)
