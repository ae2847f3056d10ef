"""The `@pl.jit` specializer's walk over one function body: each statement rewritten
(annotations filled in from the arguments, shapes and scalar parameters folded, dep calls
made `self.dep(...)`) and written as one line with a marker pointing at the user's source."""
from __future__ import annotations

import ast
import copy
import io
import tokenize
from typing import TYPE_CHECKING

from pypto.jit import analysis as A
from pypto.jit.literals import (_NO, _INDENT, _AnnSubst, _const, _dtype_node, _literal, _scalar_literal,
                                _show)


if TYPE_CHECKING:
    from pypto.jit.specialize import _Fn, _Specializer


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
        if isinstance(node, ast.Subscript):
            return self.view_meta(node)
        return None

    def view_meta(self, node: ast.Subscript):
        """`t[a:b, ...]` of a tensor of known shape: the window's shape (each dim's slice,
        an open bound at the dim's end, dims not sliced kept whole)."""
        src = self.meta(node.value)
        if src is None or src[0] != "tensor":
            return None
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) > len(src[1]) or not all(isinstance(i, ast.Slice) and i.step is None
                                               for i in items):
            return None
        dims = list(src[1])
        for k, sl in enumerate(items):
            full = dims[k]
            lo = 0 if sl.lower is None else self.sp.eval_dim(self.fn, sl.lower, self.consts)
            if sl.upper is None:
                hi = full
            elif (isinstance(sl.upper, ast.BinOp) and isinstance(sl.upper.op, ast.Add)
                    and sl.lower is not None and ast.dump(sl.upper.left) == ast.dump(sl.lower)):
                step = self.sp.eval_dim(self.fn, sl.upper.right, self.consts)   # i : i + c
                dims[k] = step if isinstance(step, int) else None
                continue
            else:
                hi = self.sp.eval_dim(self.fn, sl.upper, self.consts)
            if not (isinstance(lo, int) and isinstance(hi, int)):
                return None
            dims[k] = hi - lo
        if any(not isinstance(d, int) or d <= 0 for d in dims):
            return None
        return ("tensor", tuple(dims), src[2])

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
        # ops that write into a tensor argument and return it: that tensor's meta
        written = {"assemble": 0, "write": 0, "store": 2}.get(name)
        if written is not None and len(node.args) > written:
            target = self.meta(node.args[written])
            if target is not None and target[0] == "tensor":
                return target
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
