"""What the `@pl.jit` specializer reasons with: the metadata of values (tensor, scalar,
tuple), their types and literals in the printer's dialect, and the constant expressions it
folds (shapes, scalar parameters, module-level constants)."""
from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING

from pypto.errors import ParserError
from pypto.jit import analysis as A

if TYPE_CHECKING:
    from pypto.jit.specialize import _Fn, _Specializer

_NO = object()          # "not a compile-time constant"
_INDENT = "    "


class SpecializeError(ParserError):
    """The `@pl.jit` source cannot be specialized against these arguments."""


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
