"""What the parser's parts share: the imports, tables and helper functions of
pypto.language.parser (the Parser class is assembled from one mixin per kind of
construct: functions.py, annotations.py, values.py, calls.py, statements.py)."""
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
from pypto.ir.nodes import (ArrayType, HandleType, Assign, BinOp, Call, Const, DynDim, Eval, Expr, For,
                            MaskPattern, PadValue, ForKind, Function, FunctionType, If, InCoreScope, IterArg, Level,
                            MemorySpace, MemRef, Param, ParamDirection, Program, PtrType,
                            Return, Role, RuntimeScope, ScalarType, Slot, TensorType, TileType,
                            TupleExpr, TupleType, Var, While, Yield, derived_level_role)
from pypto.ir.visit import walk
from pypto.language.parser.source import Source
from pypto.language.signatures import signature

# pl.pipeline(..., stage=k) asks the reference's scheduler to overlap k stages of the loop;
# its iterations run in order here, which gives the same values
_LOOP_KINDS = {"range": ForKind.Sequential, "parallel": ForKind.Parallel, "unroll": ForKind.Unroll,
               "pipeline": ForKind.Sequential}
_SCALAR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
               ast.BitXor: "^"}
INT_ONLY_SCALAR_OPS = ("<<", ">>", "&", "|", "^")     # bitwise: integer scalars only
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
        "Try": "exceptions do not exist on the device; remove try/except",
        "Lambda": "lambdas are not supported inside a kernel; write the expression inline",
        "ListComp": "comprehensions are not supported; write a pl.range loop or list the values",
        "SetComp": "comprehensions are not supported",
        "DictComp": "comprehensions are not supported",
        "GeneratorExp": "generator expressions are not supported",
        "Break": "break works in a plain pl.range loop (one without init_values)",
        "Continue": "continue works inside the ifs of a loop body; elsewhere use if/else",
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
    lane_mode: int | None = None       # in a pl.split_aiv region: its SplitMode value


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


def _operand_params(name: str, ns: str | None, args=()) -> tuple:
    """The operand names of `pl.[ns.]name`: of the op its positional arguments pick
    (pl.gather on a tensor is tensor.gather), else of either namespace's."""
    exprs = [a for a in args if isinstance(a, Expr)]
    if ns is None and exprs:
        d = ops.OPS.get(ops.resolve(name, exprs, None))
        if d is not None and d.params:
            return d.params
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
    elif isinstance(a, MaskPattern):
        order = ["mask_pattern"] if "mask_pattern" in d.kwargs else []
    elif isinstance(a, PadValue):
        order = ["pad_value"] if "pad_value" in d.kwargs else []
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
