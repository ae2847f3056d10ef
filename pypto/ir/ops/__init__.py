"""The operator table: which ops exist, how `pl.<name>` dispatches on its arguments,
and the result type of each op (with typed errors for wrong arity, shapes, dtypes).

One table drives the parser, the passes and the verifier. Each operator lives in its
family's module (memory, elementwise, reduction, matmul, shape, indexing, sort,
array, system, prefetch, lanes, cross_core), registered with its
operands' names, options, type rule and call form; this package puts them together.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import NotBuiltError, Span
from pypto.ir.nodes import Const, MemorySpace, ScalarType, TileType
from pypto.ir.ops.base import OPS, OpDef, _err, _tname
from pypto.ir.ops.elementwise import (BINARY, SCALAR_FORM, SCALAR_ONLY, UNARY, FLOAT_ONLY, INT_ONLY, PART,  # noqa: F401
                                      PRECISION)
from pypto.ir.ops.reduction import ARG_REDUCE, ROW_REDUCE, COL_REDUCE, ROW_EXPAND, COL_EXPAND
from pypto.ir.ops import (indexing as _indexing, matmul as _matmul, memory as _memory,  # noqa: F401
                          shape as _shape, sort as _sort, array as _array,  # (register their ops)
                          system as _system, prefetch as _prefetch, lanes as _lanes,
                          cross_core as _cross_core, comm as _comm)

# Names a user may write as pl.<name>, and which namespaces they exist in.
TILE_ONLY = {"load": "tile.load", "store": "tile.store", "move": "tile.move",
             "matmul_mx": "tile.matmul_mx", "matmul_mx_acc": "tile.matmul_mx_acc",
             "matmul_mx_bias": "tile.matmul_mx_bias",
             "mscatter": "tile.mscatter", "create_tile": "tile.create", "tri": "tile.tri",
             "lrelu": "tile.lrelu", "sel": "tile.sel",
             "sels": "tile.sels", "concat": "tile.concat", "relu": None,
             **{op.split(".", 1)[1]: op for op in _cross_core.CROSS_CORE_OPS}}
TENSOR_ONLY = {"create_tensor": "tensor.create", "full": "tensor.full", "dim": "tensor.dim",
               "arange": "tensor.ci", "random": "tensor.random", "dump_tag": "system.dump_tag"}
# tensor ops a kernel keeps as they are (scalar reads/writes of GM) or that
# ConvertTensorToTileOps makes from nothing (filled tensors, ramps)
_NOT_CONVERTED = ("tensor.create", "tensor.full", "tensor.read", "tensor.write", "tensor.dim",
                  "tensor.ci", "tensor.random")   # (comm.put / comm.get: lowered by ConvertTensorToTileOps)


# ops that write into a tensor operand (in place) and return it: op -> that operand's index
WRITES = {"tensor.assemble": 0, "tile.store": 2, "tensor.write": 0, "tile.mscatter": 2,
          "tensor.expand_clone": 1,
          # a window every rank holds: this rank's copy (barrier, get) or a peer's (put, remote_store)
          "comm.barrier": 0, "comm.get": 0, "comm.put": 0, "comm.remote_store": 1}

# a call that passes this keyword is another op's form: pl.scatter(x, mask_pattern=..., dst=d)
# is scatter_mask
# (or a function of the keywords and the number of positional arguments)
KEYWORD_FORMS = {"scatter": ("mask_pattern", "scatter_mask"), "mrgsort": _sort.mrgsort_form,
                 "gather": _indexing.compare_form}


def keyword_form(name: str, keywords, nargs: int = 0) -> str:
    form = KEYWORD_FORMS.get(name)
    if callable(form):
        return form(keywords, nargs)
    return form[1] if form is not None and form[0] in keywords else name


# other names the reference gives an op (pl.tile.arange is pl.tile.ci)
OP_ALIASES = {"tile.arange": "tile.ci", "tensor.arange": "tensor.ci"}


def dsl_names() -> set[str]:
    names = set(TILE_ONLY) | set(TENSOR_ONLY) | set(KEYWORD_FORMS)
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
    elif name == "cmp" and len(args) == 2 and isinstance(getattr(args[1], "type", None), ScalarType):
        name = "cmps"                 # pl.cmp(x, 0.0): against a scalar
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
        if k in d.unbuilt:
            raise NotBuiltError(f"{op}: {k}= is not supported by this pypto yet", span, d.unbuilt[k])
        if k not in d.kwargs:
            _err(f"{op} got an unexpected keyword argument {k!r}", span)
        _check_kwarg_kind(op, k, kwargs[k], span)
    _check_narrow_floats(op, args, kwargs, span)
    return d.infer(args, kwargs, span)


# what 8-bit floats take part in: they are stored, moved, viewed and converted, not computed with
FP8_OPS = {f"{ns}.{o}" for ns in ("tile", "tensor") for o in (
    "load", "store", "cast", "move", "create", "slice", "reshape", "assemble", "extract",
    "transpose_view", "set_validshape", "reinterpret_view", "read", "fillpad", "full", "mgather")} \
    | {"tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"}


def _check_narrow_floats(op, args, kwargs, span):
    dtypes = [getattr(getattr(a, "type", None), "dtype", None) for a in args]
    dtypes += [v for v in kwargs.values() if isinstance(v, dt.DataType)]
    for d in dtypes:
        if d is not None and d.kind == "unbuilt":
            raise NotBuiltError(f"{op}: {d} ({d!r}) is not supported by this pypto yet", span,
                                "use fp16, bf16, fp32 or an 8-bit float (pl.FP8E4M3FN, pl.FP8E5M2)")
        if d is not None and d.kind == "fp8" and op not in FP8_OPS:
            _err(f"{op} does not compute with {d}: 8-bit floats are loaded, stored, moved and cast",
                 span, "pl.cast it to pl.FP16 or pl.FP32 first")
        if d is not None and d.kind == "fp4":
            _check_fp4(op, args, kwargs, span)
        if d is not None and d.kind == "hf8" and (op not in FP8_OPS or op in HF8_REFUSED):
            _err(f"{op} does not work on HF8: HiFloat8 data is loaded, stored, moved, gathered and cast",
                 span, "pl.cast it to pl.FP32 first")
    if op.endswith(".cast") and dt.HF8 in dtypes:
        _check_hf8_cast(op, args, kwargs, span)


HF8_REFUSED = ("tile.fillpad", "tensor.fillpad", "tile.full", "tensor.full",
               "tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias")
# the a5 conversion unit's HiFloat8 paths (the reference's cast table)
HF8_FROM = (dt.FP32, dt.FP16)
HF8_TO = (dt.FP32,)


def _check_hf8_cast(op, args, kwargs, span):
    src = getattr(getattr(args[0], "type", None), "dtype", None) if args else None
    target = kwargs.get("dtype")
    if target == dt.HF8 and src not in HF8_FROM + (dt.HF8,):
        _err(f"{op}: HF8 is made from {' or '.join(map(str, HF8_FROM))}, not {src}", span,
             "pl.cast it to pl.FP32 first")
    if src == dt.HF8 and target not in HF8_TO + (dt.HF8,):
        _err(f"{op}: HF8 casts to {', '.join(map(str, HF8_TO))}, not {target}", span,
             f"pl.cast(x, pl.FP32), then to {target}")


# what FP4 takes part in (a5): loaded into Vec, stored, and cast to a wider float
FP4_OPS = ("tile.load", "tile.store", "tile.cast", "tensor.cast")
FP4_CASTS = (dt.FP8E4M3FN, dt.FP8E5M2, dt.FP16, dt.BF16, dt.FP32)


def _check_fp4(op, args, kwargs, span):
    if op not in FP4_OPS:
        _err(f"{op} does not work on FP4: 4-bit floats are loaded, stored and cast to a wider float",
             span, "pl.cast it to pl.FP8E4M3FN (for pl.matmul_mx) or pl.FP16 / pl.FP32 first")
    src = getattr(getattr(args[0], "type", None), "dtype", None) if args else None
    if op.endswith(".cast") and kwargs.get("dtype") == dt.FP4 and src not in (dt.FP32, dt.FP16, dt.BF16):
        _err(f"{op}: FP4 is made from fp32, fp16 or bf16, not {src}", span)
    elif op.endswith(".cast") and src == dt.FP4 and kwargs.get("dtype") not in FP4_CASTS:
        _err(f"{op}: FP4 casts to {', '.join(map(str, FP4_CASTS))}, not {kwargs.get('dtype')}", span)
    if op == "tile.load" and kwargs.get("target_memory") not in (None, MemorySpace.Vec):
        _err(f"{op}: FP4 data is loaded into Vec (then cast), not {kwargs['target_memory'].name}", span,
             "pl.load(x, ..., target_memory=pl.Mem.Vec), then pl.cast to pl.FP8E4M3FN")
    if op in ("tile.load", "tile.store") and len(args) > 3:
        raise NotBuiltError(f"{op}: a valid shape on FP4 data is not supported by this pypto yet", span,
                            "load whole windows of FP4 data")
    if op in ("tile.load", "tile.store"):        # the window starts and ends on whole pairs
        ends = [args[1], args[2]] if op == "tile.load" else [args[1]]
        for e in ends:
            last = e.items[-1] if hasattr(e, "items") and e.items else None
            if isinstance(last, Const) and last.value % 2:
                _err(f"{op}: an FP4 window starts and ends on whole pairs: its last offset and size are "
                     f"even, got {last.value}", span)
    for a in args:
        t = getattr(a, "type", None)
        shape = getattr(t, "shape", None)
        if getattr(t, "dtype", None) == dt.FP4 and shape and \
                (not isinstance(shape[-1], int) or shape[-1] % 2):
            _err(f"{op}: an FP4 {_tname(t)} is stored in pairs: its last dim is even and static", span)


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


def tuple_get(tup, index: int, span: Span | None):
    """`tup[index]`: element `index` of the values a function call returned."""
    from pypto.ir.nodes import Call, Const
    from pypto.ir.ops.shape import tuple_get_type
    i = Const(index, dt.INDEX, span)
    return Call("tuple.get", [tup, i], {}, tuple_get_type([tup, i], {}, span), {}, span)


def is_tensor_op(op: str) -> bool:
    """A tensor-level op that ConvertTensorToTileOps turns into tile ops."""
    return op.startswith("tensor.") and op not in _NOT_CONVERTED


def is_tile_op(op: str) -> bool:
    return op.startswith("tile.")


CUBE_OPS = {"tile.matmul", "tile.matmul_acc", "tile.matmul_bias", "tile.gemv", "tile.gemv_acc",
            "tile.gemv_bias", "tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"}
