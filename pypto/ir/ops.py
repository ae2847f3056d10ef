"""The operator table: which ops exist, how `pl.<name>` dispatches on its arguments,
and the result type of each op (with typed errors for wrong arity, shapes, dtypes).

One table drives the parser, the passes and the verifier, so adding an op is one entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pypto import dtype as dt
from pypto.errors import TypeCheckError, Span
from pypto.ir.nodes import (MemorySpace, PtrType, ScalarType, TensorType, TileType,
                            Const, TupleExpr)

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
SCALAR_FORM = {"add": "adds", "sub": "subs", "mul": "muls", "div": "divs",
               "maximum": "maximums", "minimum": "minimums"}
UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu")
ROW_REDUCE = ("row_sum", "row_max", "row_min")
COL_REDUCE = ("col_sum", "col_max", "col_min")
ROW_EXPAND = ("row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div")
COL_EXPAND = ("col_expand_add", "col_expand_sub", "col_expand_mul", "col_expand_div")


@dataclass(frozen=True)
class OpDef:
    name: str                      # IR name, e.g. "tile.add"
    nargs: tuple[int, int]         # min, max positional args
    infer: Callable                # (args, kwargs, span) -> type
    kwargs: tuple[str, ...] = ()
    pure: bool = True              # no side effect on memory (store is not)


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
    return type(t).__name__ if t is not None else "nothing"


def _same_kind(t, shape, dtype):
    if isinstance(t, TensorType):
        return TensorType(tuple(shape), dtype)
    return TileType(tuple(shape), dtype, None)


def _check_dtype(op, a, b, span):
    if a.dtype != b.dtype:
        _err(f"{op}: dtype mismatch {a.dtype} vs {b.dtype}", span,
             "insert pl.cast(x, dtype) to convert one operand; there is no implicit promotion")


_MIX_HINT = ("operands are both tiles or both tensors: load the tensor's window into a tile first "
             "(pl.load(tensor, offsets, shapes)), or use the tensors on both sides")


def _binary(op):
    def infer(args, kw, span):
        a, b = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(b):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(b)}", span, _MIX_HINT)
        _check_dtype(op, a, b, span)
        if tuple(a.shape) != tuple(b.shape):
            bcast = op.split(".")[1] in ("add", "sub", "mul", "div") and len(a.shape) == 2 and \
                len(b.shape) == 2 and ((b.shape[0] == a.shape[0] and b.shape[1] == 1) or
                                       (b.shape[0] == 1 and b.shape[1] == a.shape[1]))
            if not bcast:
                _err(f"{op}: shape mismatch {list(a.shape)} vs {list(b.shape)}", span,
                     "operands must have equal shapes (add/sub/mul/div also broadcast an [M,1] or [1,N] second operand)")
        return _same_kind(a, a.shape, a.dtype)
    return infer


def _scalar_binary(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        s = getattr(args[1], "type", None)
        if not isinstance(s, ScalarType):
            _err(f"{op}: second operand must be a scalar, got {_tname(s)}", span)
        return _same_kind(a, a.shape, a.dtype)
    return infer


FLOAT_ONLY = ("exp", "log", "sqrt", "rsqrt", "recip")


def _unary(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        name = op.split(".")[1]
        if name in FLOAT_ONLY and not a.dtype.is_float:
            _err(f"{op} needs a floating-point operand, got {a.dtype}", span,
                 f"convert it first: pl.{name}(pl.cast(x, pl.FP32))")
        return _same_kind(a, a.shape, a.dtype)
    return infer


def _ints(op, x, span, what):
    if isinstance(x, TupleExpr):
        return x.items
    like = "[64, 64]" if what.startswith("shape") else "[0, 0]"
    got = repr(x.value) if isinstance(x, Const) else _tname(getattr(x, "type", None))
    _err(f"{op}: {what} must be a list like {like}, got {got}", span)


def _static(op, items, span, what):
    out = []
    for i in items:
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


def _load(args, kw, span):
    t = _shaped("load", args[0], span, (TensorType,))
    offs = _indices("load", args[1], span)
    shapes = _dims("load", args[2], span, "shapes")
    if len(offs) != len(t.shape) or len(shapes) != len(t.shape):
        _err(f"load: tensor has rank {len(t.shape)} but offsets/shapes have "
             f"{len(offs)}/{len(shapes)} entries", span)
    space = kw.get("target_memory", MemorySpace.Vec)
    if space not in (MemorySpace.Vec, MemorySpace.Mat):
        _err(f"load: a load from DDR lands in Vec or Mat, not {space.name}", span,
             "load into Mat and use pl.move(tile, target_memory=...) for Left/Right")
    for d, s in zip(t.shape, shapes):
        if isinstance(d, int) and s > d:
            _err(f"load: window {shapes} exceeds tensor shape {list(t.shape)}", span)
    _check_window("load", offs, shapes, t.shape, span)
    if kw.get("flatten") and len(shapes) > 2:      # FlattenTileNdTo2D: an N-D window, a 2-D tile
        lead = 1
        for s in shapes[:-1]:
            lead *= s
        return TileType((lead, shapes[-1]), t.dtype, space)
    return TileType(tuple(shapes), t.dtype, space)


def _store(args, kw, span):
    tile = _shaped("store", args[0], span, (TileType,))
    if isinstance(args[2], TupleExpr) and isinstance(getattr(args[1], "type", None), TensorType):
        _err("store: the offsets and the tensor are swapped", span,
             "the tensor comes last: pl.store(tile, offsets, out_tensor)")
    out = _shaped("store", args[2], span, (TensorType,))
    _check_dtype("store", tile, out, span) if tile.memory_space != MemorySpace.Acc else None
    offs = _indices("store", args[1], span)
    if len(offs) != len(out.shape):
        _err(f"store: tensor has rank {len(out.shape)} but offsets have {len(offs)} entries", span)
    if len(args) > 3:          # the window in the tensor's rank, for a flattened 2-D tile
        window = _static("store", _ints("store", args[3], span, "shapes"), span, "shapes")
        n = 1
        for w in window:
            n *= w
        if len(window) != len(out.shape) or n != tile.nbytes() // tile.dtype.nbytes:
            _err(f"store: window {window} does not hold tile {list(tile.shape)} in a rank-"
                 f"{len(out.shape)} tensor", span)
    elif len(tile.shape) == len(out.shape):
        _check_window("store", offs, list(tile.shape), out.shape, span)
    return TensorType(out.shape, out.dtype)


def _move(args, kw, span):
    t = _shaped("move", args[0], span, (TileType,))
    space = kw.get("target_memory")
    if not isinstance(space, MemorySpace):
        _err("move: target_memory=pl.Mem.<space> is required", span)
    return TileType(t.shape, t.dtype, space)


def _create_tile(args, kw, span):
    shape = _dims("create_tile", args[0], span)
    dtype = kw.get("dtype")
    if not isinstance(dtype, dt.DataType):
        _err("create_tile: dtype=pl.<DTYPE> is required", span)
    if kw.get("target_memory") is MemorySpace.DDR:
        _err("create_tile: a tile lives on chip, not in DDR", span,
             "create DDR tensors with pl.create_tensor in the orchestration; a tile's target_memory "
             "is Vec, Mat, Left, Right or Acc")
    return TileType(tuple(shape), dtype, kw.get("target_memory", MemorySpace.Vec))


def _create_tensor(args, kw, span):
    shape = _dims("create_tensor", args[0], span)
    dtype = kw.get("dtype")
    if not isinstance(dtype, dt.DataType):
        _err("create_tensor: dtype=pl.<DTYPE> is required", span)
    return TensorType(tuple(shape), dtype)


def _alloc(args, kw, span):
    return PtrType()


def _row_reduce(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D operand, got shape {list(a.shape)}", span)
        if isinstance(a, TileType):
            if len(args) < 2:
                _err(f"{op} on a tile needs a scratch tile: {op.split('.')[1]}(t, tmp)", span,
                     "pass tmp = pl.create_tile(shape_of_t, dtype=..., target_memory=pl.Mem.Vec)")
            tmp = _shaped(op, args[1], span, (TileType,))
            if len(tmp.shape) != 2 or tmp.shape[0] < a.shape[0] or tmp.shape[1] < a.shape[1] \
                    or tmp.dtype != a.dtype:
                _err(f"{op}: the scratch tile is {_tname(tmp)} but x is {_tname(a)}", span,
                     f"the scratch tile has x's shape and dtype: tmp = pl.create_tile("
                     f"{list(a.shape)}, dtype={a.dtype!r}, target_memory=pl.Mem.Vec)")
        return _same_kind(a, (a.shape[0], 1), a.dtype)
    return infer


def _col_reduce(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D operand", span)
        return _same_kind(a, (1, a.shape[1]), a.dtype)
    return infer


def _expand(op, row):
    def infer(args, kw, span):
        a, v = _shaped(op, args[0], span), _shaped(op, args[1], span)
        _check_dtype(op, a, v, span)
        want = (a.shape[0], 1) if row else (1, a.shape[1])
        if tuple(v.shape) != tuple(want):
            _err(f"{op}: vector operand must have shape {list(want)}, got {list(v.shape)}", span)
        return _same_kind(a, a.shape, a.dtype)
    return infer


def _broadcast(op, row):
    """row_expand(target, v[M,1]) / col_expand(target, v[1,N]): v broadcast to target's
    shape (target's values are not read)."""
    def infer(args, kw, span):
        a, v = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(v):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(v)}", span)
        _check_dtype(op, a, v, span)
        if len(a.shape) != 2:
            _err(f"{op} expects a 2-D target, got shape {list(a.shape)}", span)
        want = (a.shape[0], 1) if row else (1, a.shape[1])
        if tuple(v.shape) != tuple(want):
            _err(f"{op}: vector operand must have shape {list(want)}, got {list(v.shape)}", span,
                 f"{op.split('.')[1]}(target, v) broadcasts v to target's shape")
        return _same_kind(a, a.shape, a.dtype)
    return infer


def _reshape(args, kw, span):
    a = _shaped("reshape", args[0], span)
    shape = _dims("reshape", args[1], span)
    n_old = 1
    for d in a.shape:
        n_old *= d if isinstance(d, int) else 1
    n_new = 1
    for d in shape:
        n_new *= d
    if n_old != n_new:
        _err(f"reshape: {list(a.shape)} has {n_old} elements, {shape} has {n_new}", span)
    return _same_kind(a, shape, a.dtype) if isinstance(a, TensorType) else \
        TileType(tuple(shape), a.dtype, a.memory_space)


def _matmul_acc_dtype(a, b, op, span):
    _check_dtype(op, a, b, span)
    if a.dtype in (dt.FP32, dt.FP16, dt.BF16):
        return dt.FP32
    if a.dtype == dt.INT8:
        return dt.INT32
    _err(f"{op}: no matmul for {a.dtype} inputs (fp16, bf16, fp32 or int8)", span)


def _matmul(args, kw, span):
    a, b = _shaped("matmul", args[0], span), _shaped("matmul", args[1], span)
    if type(a) is not type(b):
        _err(f"matmul: cannot mix {_tname(a)} and {_tname(b)}", span, _MIX_HINT)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        _err(f"matmul: shapes {list(a.shape)} x {list(b.shape)} do not chain", span)
    acc = _matmul_acc_dtype(a, b, "matmul", span)
    if isinstance(a, TensorType):
        out = kw.get("out_dtype") or a.dtype
        return TensorType((a.shape[0], b.shape[1]), out)
    return TileType((a.shape[0], b.shape[1]), acc, MemorySpace.Acc)


def _matmul_acc(args, kw, span):
    acc = _shaped("matmul_acc", args[0], span, (TileType,))
    a, b = _shaped("matmul_acc", args[1], span), _shaped("matmul_acc", args[2], span)
    if a.shape[1] != b.shape[0] or (acc.shape[0], acc.shape[1]) != (a.shape[0], b.shape[1]):
        _err(f"matmul_acc: {list(acc.shape)} += {list(a.shape)} x {list(b.shape)} does not chain", span)
    want = _matmul_acc_dtype(a, b, "matmul_acc", span)
    if acc.dtype != want:
        _err(f"matmul_acc: the accumulator is {acc.dtype} but {a.dtype} x {b.dtype} accumulates in "
             f"{want}", span, f"accumulate into a {want} tile: start it with pl.matmul of operands "
                              f"of the same dtypes")
    return acc


def _cast(args, kw, span):
    a = _shaped("cast", args[0], span)
    target = kw.get("dtype") if "dtype" in kw else None
    if not isinstance(target, dt.DataType):
        _err("cast: the target dtype is required: pl.cast(x, pl.FP16)", span)
    return _same_kind(a, a.shape, target) if isinstance(a, TensorType) else \
        TileType(a.shape, target, a.memory_space)


def _assemble(args, kw, span):
    dst = _shaped("assemble", args[0], span, (TensorType,))
    src = _shaped("assemble", args[1], span)
    _check_dtype("assemble", dst, src, span)
    if isinstance(args[2], TupleExpr) and len(src.shape) == len(dst.shape):
        _check_window("assemble", args[2].items, list(src.shape), dst.shape, span)
    return TensorType(dst.shape, dst.dtype)


_INT_RANGE = {dt.INT8: (-2**7, 2**7 - 1), dt.INT16: (-2**15, 2**15 - 1), dt.INT32: (-2**31, 2**31 - 1),
              dt.INT64: (-2**63, 2**63 - 1), dt.UINT8: (0, 2**8 - 1), dt.INDEX: (-2**63, 2**63 - 1)}
_FULL_DTYPES = (dt.FP32, dt.FP16, dt.BF16, dt.INT8, dt.INT16, dt.INT32, dt.INT64, dt.UINT8)


def _full_value(op, kw, span):
    """pl.full's dtype and value: a number the dtype holds (an integer for int dtypes)."""
    dtype = kw.get("dtype")
    hint = "call it as pl.full([M, N], dtype=pl.FP32, value=0.0)"
    if not isinstance(dtype, dt.DataType):
        _err(f"{op}: dtype=pl.<DTYPE> is required", span, hint)
    if dtype not in _FULL_DTYPES:
        _err(f"{op}: cannot fill a {dtype} tile (a tile holds {', '.join(map(str, _FULL_DTYPES))})",
             span, "pick one of those dtypes, e.g. dtype=pl.INT32 with value=1")
    if "value" not in kw:
        _err(f"{op}: value= is required", span, hint)
    v = kw["value"]
    if isinstance(v, Const):
        v = v.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        what = f"the string {v!r}" if isinstance(v, str) else (repr(v) if isinstance(v, bool) or v is None
                                                                else type(v).__name__)
        _err(f"{op}: value must be a number, got {what}", span, hint)
    if not dtype.is_float:
        if isinstance(v, float):
            _err(f"{op}: value {v!r} is a float but the dtype is {dtype}", span,
                 f"write an integer value for {dtype} (value=1, not 1.0), or fill a float dtype "
                 f"and pl.cast it")
        lo, hi = _INT_RANGE[dtype]
        if not lo <= v <= hi:
            _err(f"{op}: value {v} does not fit {dtype} ([{lo}, {hi}])", span,
                 "use a value in the dtype's range, or a wider dtype")
    return dtype


def _full(args, kw, span):
    shape = _dims("full", args[0], span)
    dtype = _full_value("full", kw, span)
    return TensorType(tuple(shape), dtype)


def _tile_full(args, kw, span):
    shape = _dims("tile.full", args[0], span)
    dtype = _full_value("tile.full", kw, span)
    space = kw.get("target_memory", MemorySpace.Vec)
    if space is not MemorySpace.Vec:
        _err(f"tile.full: a filled tile lives in Vec, not {getattr(space, 'name', space)}", span,
             "fill it in Vec and pl.move it (or load into Mat from a tensor)")
    return TileType(tuple(shape), dtype, MemorySpace.Vec)


OPS: dict[str, OpDef] = {}


def _reg(name, nargs, infer, kwargs=(), pure=True):
    OPS[name] = OpDef(name, nargs, infer, kwargs, pure)


for _ns in ("tensor", "tile"):
    for _o in BINARY:
        _reg(f"{_ns}.{_o}", (2, 2), _binary(f"{_ns}.{_o}"))
        _reg(f"{_ns}.{SCALAR_FORM[_o]}", (2, 2), _scalar_binary(f"{_ns}.{SCALAR_FORM[_o]}"))
    for _o in UNARY:
        _reg(f"{_ns}.{_o}", (1, 1), _unary(f"{_ns}.{_o}"))
    for _o in ROW_REDUCE:
        _reg(f"{_ns}.{_o}", (1, 2), _row_reduce(f"{_ns}.{_o}"))
    for _o in COL_REDUCE:
        _reg(f"{_ns}.{_o}", (1, 2), _col_reduce(f"{_ns}.{_o}"))
    for _o in ROW_EXPAND:
        _reg(f"{_ns}.{_o}", (2, 2), _expand(f"{_ns}.{_o}", True))
    for _o in COL_EXPAND:
        _reg(f"{_ns}.{_o}", (2, 2), _expand(f"{_ns}.{_o}", False))
    _reg(f"{_ns}.row_expand", (2, 2), _broadcast(f"{_ns}.row_expand", True))
    _reg(f"{_ns}.col_expand", (2, 2), _broadcast(f"{_ns}.col_expand", False))
    _reg(f"{_ns}.reshape", (2, 2), _reshape)
    _reg(f"{_ns}.matmul", (2, 2), _matmul, ("out_dtype",))
    _reg(f"{_ns}.matmul_acc", (3, 3), _matmul_acc)
    _reg(f"{_ns}.cast", (1, 1), _cast, ("dtype", "mode"))

_reg("tile.load", (3, 4), _load, ("target_memory", "flatten"))
_reg("tile.store", (3, 4), _store, (), pure=False)
_reg("tile.move", (1, 1), _move, ("target_memory",))
_reg("tile.create", (1, 1), _create_tile, ("dtype", "target_memory"))
_reg("tile.alloc", (1, 1), _alloc, ("target_memory",))
_reg("tensor.create", (1, 1), _create_tensor, ("dtype",))
_reg("tensor.full", (1, 1), _full, ("dtype", "value"))
_reg("tile.full", (1, 1), _tile_full, ("dtype", "value", "target_memory"))
_reg("tensor.assemble", (3, 3), _assemble, (), pure=False)

# Names a user may write as pl.<name>, and which namespaces they exist in.
TILE_ONLY = {"load": "tile.load", "store": "tile.store", "move": "tile.move",
             "create_tile": "tile.create", "relu": None}
TENSOR_ONLY = {"create_tensor": "tensor.create", "full": "tensor.full",
               "assemble": "tensor.assemble"}


def dsl_names() -> set[str]:
    names = set(TILE_ONLY) | set(TENSOR_ONLY)
    for k in OPS:
        names.add(k.split(".", 1)[1])
    names.discard("alloc")
    names.discard("create")
    return names


def resolve(name: str, args: list, span: Span | None) -> str:
    """`pl.<name>(*args)` -> IR op name, dispatching on the first shaped argument."""
    if name in TILE_ONLY and TILE_ONLY[name]:
        return TILE_ONLY[name]
    if name in TENSOR_ONLY:
        return TENSOR_ONLY[name]
    first = getattr(args[0], "type", None) if args else None
    ns = "tile" if isinstance(first, TileType) else "tensor"
    if name in SCALAR_FORM and len(args) == 2 and isinstance(getattr(args[1], "type", None), ScalarType):
        name = SCALAR_FORM[name]
    return f"{ns}.{name}"


def infer_type(op: str, args: list, kwargs: dict, span: Span | None):
    d = OPS.get(op)
    if d is None:
        _err(f"unknown operator {op}", span)
    lo, hi = d.nargs
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        _err(f"{op} takes {want} arguments, got {len(args)}", span)
    for k in kwargs:
        if k not in d.kwargs:
            _err(f"{op} got an unexpected keyword argument {k!r}", span)
        _check_kwarg_kind(op, k, kwargs[k], span)
    return d.infer(args, kwargs, span)


_KWARG_KINDS = {"target_memory": (MemorySpace, "a memory space", "target_memory=pl.Mem.Vec"),
                "dtype": (dt.DataType, "a dtype", "dtype=pl.FP32"),
                "out_dtype": (dt.DataType, "a dtype", "out_dtype=pl.FP32"),
                "flatten": (bool, "True or False", "flatten=True")}


def _check_kwarg_kind(op, key, value, span):
    kind = _KWARG_KINDS.get(key)
    if kind is None or value is None or isinstance(value, kind[0]):
        return
    got = f"the string {value!r}" if isinstance(value, str) else repr(value)
    _err(f"{op}: {key}= must be {kind[1]}, got {got}", span, f"write {kind[2]}")


def is_tensor_op(op: str) -> bool:
    return op.startswith("tensor.") and op not in ("tensor.create", "tensor.full")


def is_tile_op(op: str) -> bool:
    return op.startswith("tile.")


CUBE_OPS = {"tile.matmul", "tile.matmul_acc"}
