"""Reading `@pl.jit` source: what the parameters are, which names the body uses.

Shared by the decorator (which builds the specialization spec from live Python objects)
and the specializer (which only sees the spec). Everything here works on the AST of the
function's source; nothing executes user code.
"""
from __future__ import annotations

import ast

from pypto import pyast
from dataclasses import dataclass, field

from pypto import dtype as _dt

DIRECTIONS = ("Out", "InOut")
PY_SCALARS = {"int": "index", "float": "fp32", "bool": "bool"}


def dotted(node) -> str | None:
    """`pl.jit.incore` -> "pl.jit.incore"; None for anything that is not a dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def last(node) -> str | None:
    name = dotted(node)
    return name.rsplit(".", 1)[-1] if name else None


def dtype_text(node) -> str | None:
    """`pl.FP32` (or `FP32`) -> "fp32"; None when the node names no dtype."""
    name = last(node)
    if name in _dt.BY_NAME:
        return _dt.BY_NAME[name].text
    return None


def dtype_by_text(text: str) -> _dt.DataType:
    for d in _dt.ALL:
        if d.text == text:
            return d
    raise ValueError(f"unknown dtype {text!r}")


@dataclass
class Ann:
    """What a parameter annotation says.

    kind: "tensor", "scalar", "other" (kept verbatim) or None (no annotation).
    bare: the annotation leaves shape/dtype to the call's argument (`pl.Tensor`,
    `pl.Scalar`, `int`), or is a bare dtype (`pl.INDEX`) that must be rewritten.
    """
    kind: str | None
    direction: str = "In"
    bare: bool = False
    shape: list = field(default_factory=list)     # ast nodes of a full tensor annotation
    dtype: str | None = None                       # dtype text when the annotation names one
    node: ast.AST | None = None                    # the whole annotation
    inner: ast.AST | None = None                   # without the Out/InOut wrapper
    window: bool = False                           # pld.DistributedTensor[...]


def classify_annotation(node) -> Ann:
    if node is None:
        return Ann(None)
    direction = "In"
    inner = node
    if isinstance(node, ast.Subscript) and last(node.value) in DIRECTIONS:
        direction = last(node.value)
        inner = node.slice
    ann = _classify_inner(inner)
    ann.direction, ann.node, ann.inner = direction, node, inner
    return ann


def _classify_inner(node) -> Ann:
    name = last(node)
    if name == "Tensor":
        return Ann("tensor", bare=True)
    if name == "Scalar":
        return Ann("scalar", bare=True)
    if isinstance(node, ast.Name) and node.id in PY_SCALARS:
        return Ann("scalar", bare=True, dtype=PY_SCALARS[node.id])
    if name is not None and dtype_text(node) is not None:
        return Ann("scalar", bare=True, dtype=dtype_text(node))
    if isinstance(node, ast.Subscript):
        head = last(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("Tensor", "DistributedTensor") and len(items) >= 2 \
                and isinstance(items[0], (ast.List, ast.Tuple)):
            return Ann("tensor", shape=list(items[0].elts), dtype=dtype_text(items[1]),
                       window=head == "DistributedTensor")
        if head == "Scalar" and len(items) == 1:
            return Ann("scalar", dtype=dtype_text(items[0]))
    return Ann("other")


def parse_function(source: str) -> ast.FunctionDef:
    tree = pyast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
        if isinstance(node, ast.AsyncFunctionDef):
            raise SyntaxError("a @pl.jit function cannot be `async def`")
    raise SyntaxError("no function definition found in the source")


def params(fn: ast.FunctionDef) -> list[ast.arg]:
    a = fn.args
    return list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)


def _walk_body(fn: ast.FunctionDef):
    for stmt in fn.body:
        yield from ast.walk(stmt)


def local_names(fn: ast.FunctionDef) -> set[str]:
    """Parameters and every name the body binds (they shadow globals everywhere)."""
    names = {p.arg for p in params(fn)}
    for node in _walk_body(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def assigned_names(stmts) -> set[str]:
    out = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


def store_counts(fn: ast.FunctionDef) -> dict[str, int]:
    """How many places in the body bind each name."""
    counts: dict[str, int] = {}
    for node in _walk_body(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def loaded_names(fn: ast.FunctionDef) -> list[str]:
    """Names read by the body and the parameter annotations, first use first."""
    seen: dict[str, None] = {}
    nodes = []
    for p in params(fn):
        if p.annotation is not None:
            nodes.append(p.annotation)
    if fn.returns is not None:
        nodes.append(fn.returns)
    nodes.extend(fn.args.defaults)
    nodes.extend(d for d in fn.args.kw_defaults if d is not None)
    nodes.extend(fn.body)
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                seen.setdefault(node.id, None)
    return list(seen)


def called_names(fn: ast.FunctionDef) -> list[str]:
    """Plain names in call position (`k(a, b)`) and names passed where a callee is
    expected (`pl.submit(k, ...)`), first use first."""
    seen: dict[str, None] = {}
    for node in _walk_body(fn):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                seen.setdefault(node.func.id, None)
            for a in node.args[:1]:
                if isinstance(a, ast.Name) and last(node.func) in ("submit", "spmd_submit"):
                    seen.setdefault(a.id, None)
    return list(seen)


def dynamic_call(node) -> str | None:
    """`pl.dynamic("M")` -> "M"."""
    if (isinstance(node, ast.Call) and last(node.func) == "dynamic" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def local_dynamics(fn: ast.FunctionDef) -> dict[str, str]:
    """`M = pl.dynamic("M")` statements in the body: source name -> dynamic dim name."""
    out = {}
    for node in _walk_body(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            dyn = dynamic_call(node.value)
            if dyn is not None:
                out[node.targets[0].id] = dyn
    return out


def bind_dynamic_call(node) -> tuple[str, int, str] | None:
    """`a.bind_dynamic(0, M)` -> ("a", 0, "M")."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "bind_dynamic" and isinstance(node.func.value, ast.Name)
            and len(node.args) == 2):
        return None
    dim, name = node.args
    if isinstance(dim, ast.Constant) and isinstance(dim.value, int) and isinstance(name, ast.Name):
        return node.func.value.id, dim.value, name.id
    return None


def bind_dynamics(fn: ast.FunctionDef) -> list[tuple[str, int, str]]:
    out = []
    for node in _walk_body(fn):
        if isinstance(node, ast.Expr):
            found = bind_dynamic_call(node.value)
            if found:
                out.append(found)
    return out


def jit_kind(fn: ast.FunctionDef) -> str | None:
    """The kind a `@pl.jit...` decorator in the source names, if any."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = dotted(target) or ""
        parts = name.split(".")
        if "jit" in parts:
            tail = parts[parts.index("jit") + 1:]
            return tail[0] if tail else "orchestration"
    return None
