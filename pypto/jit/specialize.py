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

from pypto.errors import Span
from pypto.jit import analysis as A
from pypto.jit.body import _Body
from pypto.jit.literals import (SpecializeError, _INDENT, _AnnSubst, _common, _const, _show,  # noqa: F401
                                type_text)

_DECORATOR = {"orchestration": "Orchestration", "incore": "InCore", "inline": "Inline"}


def specialize(spec: dict) -> str:
    """The `@pl.program` source text for one specialization (see the module docstring)."""
    return _Specializer(spec).run()


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
        out = [f"# pypto.program: {self.program}", "import pypto.language as pl"]
        if any("pld." in ln for lines in texts.values() for ln in lines):
            from pypto.ir.printer import PLD_IMPORT
            out.append(PLD_IMPORT)
        out.append("")
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
            inner = _AnnSubst(self, fn).visit(copy.deepcopy(ann.inner))
            if ann.window:        # (however the user spelled the module: the printer's name)
                inner.value = ast.Attribute(ast.Name("pld", ast.Load()), "DistributedTensor", ast.Load())
            text = ast.unparse(inner)
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
