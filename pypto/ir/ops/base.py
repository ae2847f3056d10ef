"""What every operator family shares: the op record and registry, and the checks of
operand kinds, dtypes, shapes and windows that the families' type rules use.

An operator has one home, its family's module (memory, elementwise, reduction,
matmul, shape): there it is registered with its operands' names, its options, its
type rule and the call form users see in errors and in docs/operators.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pypto import dtype as dt
from pypto.errors import TypeCheckError, Span
from pypto.ir.nodes import (MemorySpace, PtrType, ScalarType, TensorType, TileType,
                            BinOp, Call, Const, DynDim, TupleExpr, TupleType, Var)


@dataclass(frozen=True)
class OpDef:
    name: str                      # IR name, e.g. "tile.add"
    nargs: tuple[int, int]         # min, max operands
    infer: Callable                # (args, kwargs, span) -> type
    kwargs: tuple[str, ...] = ()   # options: compile-time values
    pure: bool = True              # no side effect on memory (store is not)
    params: tuple[str, ...] = ()   # the operands' names, so they can be passed by keyword
    sig: str = ""                  # the call form users see (hints, docs/operators.md)
    aliases: dict = field(default_factory=dict)   # another keyword for an option: its name
    unbuilt: dict = field(default_factory=dict)   # the reference's keywords not built yet: why
    pto: str = ""                  # the pto op a tile op lowers to (codegen reads it here)


OPS: dict[str, OpDef] = {}


def reg(name, nargs, infer, kwargs=(), pure=True, params=(), sig="", aliases=None, unbuilt=None,
        pto=""):
    OPS[name] = OpDef(name, nargs, infer, tuple(kwargs), pure, tuple(params), sig,
                      dict(aliases or {}), dict(unbuilt or {}), pto)


def int_only(op, t, span):
    """Bitwise operators work on integer elements."""
    if t.dtype.is_float or t.dtype == dt.BOOL:
        _err(f"{op} works on integer elements, got {t.dtype}", span,
             "cast to an integer dtype first, e.g. pl.cast(x, pl.INT32)")


def _err(msg, span, hint=None):
    raise TypeCheckError(msg, span, hint)


def _shaped(op, x, span, kinds=(TensorType, TileType)):
    t = getattr(x, "type", None)
    if not isinstance(t, kinds):
        want = " or ".join(k.__name__.replace("Type", "") for k in kinds)
        _err(f"{op} expects a {want} argument, got {_tname(t)}", span)
    return t


def _tname(t) -> str:
    if isinstance(t, TensorType):
        return f"Tensor[{', '.join(map(str, t.shape))}] {t.dtype}"
    if isinstance(t, TileType):
        return f"Tile{list(t.shape)} {t.dtype}"
    if isinstance(t, ScalarType):
        return f"Scalar {t.dtype}"
    if isinstance(t, TupleType):
        return f"{len(t.types)} values (unpack them: a, b = ...)"
    return type(t).__name__ if t is not None else "nothing"


def _same_kind(t, shape, dtype, valid=None):
    if isinstance(t, TensorType):
        return TensorType(tuple(shape), dtype, None, _partial(shape, valid))
    return TileType(tuple(shape), dtype, None, None, _partial(shape, valid))


def _partial(shape, valid):
    """`valid` if it is smaller than `shape`, else None (the whole tile)."""
    return None if valid is None or tuple(valid) == tuple(shape) else tuple(valid)


def valid_of(t):
    """The part of a tile or tensor that holds data (all of it unless narrowed)."""
    return t.valid_shape


def same_valid(op, a, b, span):
    """Element-wise operands hold data over the same region (a dim known only when the
    kernel runs is checked there)."""
    if type(a) is type(b) and a.shape == b.shape and a.valid_shape != b.valid_shape:
        _err(f"{op}: the operands' valid shapes differ: {list(a.valid_shape)} vs "
             f"{list(b.valid_shape)}", span,
             "load both with the same valid_shape, or pl.fillpad the partial one first")


def whole(op, t, span, what="operand"):
    """Operators not built for partial tiles refuse them instead of reading padding."""
    if isinstance(t, (TileType, TensorType)) and t.valid is not None:
        from pypto.errors import NotBuiltError
        kind = "tile" if isinstance(t, TileType) else "tensor"
        raise NotBuiltError(f"{op}: a {kind} with a valid shape smaller than the {kind} "
                            f"({list(t.valid)} of {list(t.shape)}) as its {what} is not supported "
                            f"by this pypto yet", span,
                            "pl.fillpad it first (pl.fillpad(t, pad_value=pl.PadValue.zero))")


def _check_dtype(op, a, b, span):
    if a.dtype != b.dtype:
        _err(f"{op}: dtype mismatch {a.dtype} vs {b.dtype}", span,
             "insert pl.cast(x, dtype) to convert one operand; there is no implicit promotion")


MIX_HINT = ("operands are both tiles or both tensors: load the tensor's window into a tile first "
             "(pl.load(tensor, offsets, shapes)), or use the tensors on both sides")



def _ints(op, x, span, what):
    if isinstance(x, TupleExpr):
        return x.items
    like = "[64, 64]" if what.startswith("shape") else "[0, 0]"
    got = repr(x.value) if isinstance(x, Const) else _tname(getattr(x, "type", None))
    _err(f"{op}: {what} must be a list like {like}, got {got}", span)


_INT_FOLD = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "//": lambda a, b: a // b if b else None, "%": lambda a, b: a % b if b else None,
             "min": min, "max": max, "<<": lambda a, b: a << b if b >= 0 else None,
             ">>": lambda a, b: a >> b if b >= 0 else None, "&": lambda a, b: a & b,
             "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}


def const_int(e):
    """The integer value of a constant expression (a literal, or literals joined by
    integer operators: a printed `16 - 8` stays a BinOp), or None."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, BinOp) and e.op in _INT_FOLD and not e.dtype.is_float:
        a, b = const_int(e.lhs), const_int(e.rhs)
        if a is not None and b is not None:
            return _INT_FOLD[e.op](a, b)
    return None


def _folded(items, span):
    return [Const(v, dt.INDEX, getattr(i, "span", span)) if not isinstance(i, Const)
            and (v := const_int(i)) is not None else i for i in items]


def _static(op, items, span, what):
    out = []
    for i in _folded(items, span):
        if isinstance(i, Call) and i.op == "tensor.dim":
            _err(f"{op}: {what} must be integer constants, but dim {i.args[1].value} of "
                 f"{getattr(i.args[0], 'name', 'the tensor')!r} is dynamic (known only at run time)",
                 span, "a tile's shape is fixed when compiling: work in fixed-size windows in a "
                       "loop up to the extent (pass the extent you need, or pl.RUNTIME under "
                       "@pl.jit), or give it as valid_shape= of a window of the largest size")
        if not (isinstance(i, Const) and isinstance(i.value, int)):
            _err(f"{op}: {what} must be integer constants", span)
        out.append(i.value)
    return out


def _dims(op, x, span, what="shape"):
    """A static shape: a list of positive integer constants."""
    dims = _static(op, _ints(op, x, span, what), span, what)
    for i, d in enumerate(dims):
        if d <= 0:
            _err(f"{op}: {what} {dims} has a non-positive dimension ({d} at index {i})", span,
                 "every dimension is a positive integer, e.g. [64, 64]")
    return dims


def _indices(op, x, span):
    """Offsets: a list of integer scalars (constants or index expressions)."""
    items = _ints(op, x, span, "offsets")
    for i in items:
        t = getattr(i, "type", None)
        if not (isinstance(t, ScalarType) and (t.dtype == dt.INDEX or
                                              (not t.dtype.is_float and t.dtype != dt.BOOL))):
            what = repr(i.value) if isinstance(i, Const) else _tname(t)
            _err(f"{op}: offsets must be integers, got {what}", span,
                 "offsets are element indices: integer constants or index expressions like i * 64")
    return items


def dyn_dim_of(e) -> DynDim:
    """The dynamic dim a tensor type gets for an extent `e` known only at run time (a
    scalar computed in the orchestration): named after the variable, so an annotation
    that names the same variable (pl.Tensor[[16, n], ...]) is the same type."""
    if isinstance(e, Var):
        head, sep, tail = e.name.rpartition("__ssa_v")
        return DynDim(head if sep and tail.isdigit() else e.name)
    text = "".join(ch if ch.isalnum() else "_" for ch in _expr_text(e)).strip("_")
    return DynDim("dyn_" + (text[:40] or "extent"))


def _expr_text(e) -> str:
    if isinstance(e, Var):
        return dyn_dim_of(e).name
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, BinOp):
        names = {"+": "plus", "-": "minus", "*": "times", "//": "div", "%": "mod"}
        return f"{_expr_text(e.lhs)}_{names.get(e.op, 'op')}_{_expr_text(e.rhs)}"
    return getattr(e, "op", type(e).__name__)


def _dims_at_run_time(op, x, span, what="shape"):
    """A shape whose extents are positive integer constants or integer scalars computed
    at run time (those become dynamic dims of the type)."""
    items = _folded(_ints(op, x, span, what), span)
    if all(isinstance(i, Const) for i in items):
        return _dims(op, TupleExpr(items, span), span, what)
    out = []
    for i in items:
        if isinstance(i, Const) and isinstance(i.value, int) and not isinstance(i.value, bool):
            if i.value <= 0:
                _err(f"{op}: {what} has a non-positive dimension ({i.value})", span)
            out.append(i.value)
            continue
        t = getattr(i, "type", None)
        if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
            _err(f"{op}: {what} must be integers, got {_tname(t)}", span)
        out.append(dyn_dim_of(i))
    return out


def _check_window(op, offs, shape, dims, span):
    """A window at constant offsets lies inside the tensor: 0 <= offset, offset + size <= dim."""
    for i, (o, s, d) in enumerate(zip(offs, shape, dims)):
        if not (isinstance(o, Const) and isinstance(o.value, int) and not isinstance(o.value, bool)):
            continue
        if o.value < 0:
            _err(f"{op}: offset {o.value} in dim {i} is negative", span,
                 "offsets count elements from the start of the tensor: 0 <= offset")
        if isinstance(d, int) and isinstance(s, int) and o.value + s > d:
            _err(f"{op}: the window [{o.value}, {o.value + s}) of dim {i} lies outside the tensor's "
                 f"extent {d}", span,
                 "keep offset + size <= the tensor's dim: use a smaller window or offset, or loop "
                 "over chunks with pl.range")


