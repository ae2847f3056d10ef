"""Which element dtypes an operator accepts, found by asking its own type rule: each op
is given sample operands ([16, 64] tiles or tensors named after its parameters) of every
dtype a tile may hold; what the rule refuses is not listed, so the operator page cannot
claim more than the compiler takes. Ops whose operands the samples cannot express are
reported as not probed. Where a tile op computes is InferTileMemorySpace's rule
(`placement`)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import Const, MemorySpace, TensorType, TileType, TupleExpr, Var

DTYPES = (dt.FP32, dt.FP16, dt.BF16, dt.INT8, dt.INT16, dt.INT32, dt.INT64, dt.UINT8, dt.UINT16,
          dt.UINT32, dt.UINT64) + dt.FP8 + (dt.HF8,)
_SHAPE = (16, 64)


def _tuple(*xs):
    return TupleExpr([Const(x, dt.INDEX) for x in xs])


def _operand(ns, shape, d, space):
    return Var("x", TileType(shape, d, space) if ns == "tile" else TensorType(shape, d))


def _sample(name, d, space, scalar_forms):
    """Operands for op `name` with element dtype d (its first operand in `space`)."""
    ns, op = name.split(".", 1)
    d_od = __import__("pypto.ir.ops", fromlist=["OPS"]).OPS[name]
    out = []
    for i, p in enumerate(d_od.params[:d_od.nargs[0]] + (("tmp",) if "tmp" in d_od.params[d_od.nargs[0]:]
                                                         and op.startswith("row_") else ())):
        if p in ("shape", "shapes"):
            out.append(_tuple(*_SHAPE))
        elif p in ("offsets", "offset"):
            out.append(_tuple(0, 0))
        elif i == 1 and op in scalar_forms:
            out.append(Const(1, d))
        elif p == "v":
            out.append(_operand(ns, (16, 1) if op.startswith("row") else (1, 64), d, MemorySpace.Vec))
        else:
            out.append(_operand(ns, _SHAPE, d, space if i == 0 else MemorySpace.Vec))
    return out


def _t(shape, d, space=MemorySpace.Vec):
    return Var("x", TileType(shape, d, space))


def _g(shape, d):
    return Var("x", TensorType(shape, d))


# operands the generic samples cannot express: op -> d -> (args, kwargs)
_SPECIAL = {
    "tile.matmul": lambda d: ([_t((16, 32), d, MemorySpace.Left), _t((32, 64), d, MemorySpace.Right)], {}),
    "tensor.matmul": lambda d: ([_g((16, 32), d), _g((32, 64), d)], {}),
    "tile.gemv": lambda d: ([_t((1, 32), d, MemorySpace.Left), _t((32, 64), d, MemorySpace.Right)], {}),
    "tile.matmul_bias": lambda d: ([_t((16, 32), d, MemorySpace.Left), _t((32, 64), d, MemorySpace.Right),
                                    _t((1, 64), dt.INT32 if not d.is_float else dt.FP32, MemorySpace.Bias)], {}),
    "tile.batch_matmul": lambda d: ([_t((2, 16, 32), d, MemorySpace.Mat), _t((2, 32, 64), d, MemorySpace.Mat)], {}),
    "tile.sort32": lambda d: ([_t((16, 32), d), _t((16, 32), dt.UINT32)], {}),
    "tensor.sort32": lambda d: ([_g((16, 32), d), _g((16, 32), dt.UINT32)], {}),
    "tile.gather": lambda d: ([_t((16, 64), d), _t((16, 32), dt.INT32), _t((16, 32), dt.INT32)], {}),
    "tile.gatherb": lambda d: ([_t((16, 64), d), _t((16, 8), dt.UINT32)], {}),
    "tile.gather_compare": lambda d: ([_t((16, 64), d), Const(1, d), _t((16, 64), dt.UINT8)],
                                      {"cmp_mode": "eq", "out_cols": 8}),
    "tensor.gather_compare": lambda d: ([_g((16, 64), d), Const(1, d)], {"cmp_mode": "eq", "out_cols": 8}),
    "tile.mgather": lambda d: ([_g((64, 64), d), _t((1, 16), dt.INT32)], {"coalesce": "row"}),
    "tile.scatter_update": lambda d: ([_t((16, 64), d), Const(-2, dt.INDEX), _t((1, 4), dt.INT32),
                                       _t((4, 64), d)], {}),
    "tile.read": lambda d: ([_t((16, 64), d), _tuple(0, 0)], {}),
    "tensor.read": lambda d: ([_g((16, 64), d), _tuple(0, 0)], {}),
    "tile.store": lambda d: ([_t((16, 64), d), _tuple(0, 0), _g((16, 64), d)], {}),
    "tile.extract": lambda d: ([_t((16, 64), d), Const(0, dt.INDEX), Const(0, dt.INDEX), _tuple(16, 32)], {}),
    "tile.move": lambda d: ([_t((16, 64), d)], {"target_memory": MemorySpace.Vec}),
    "tile.load": lambda d: ([_g((16, 64), d), _tuple(0, 0), _tuple(16, 64)], {}),
    "tile.mscatter": lambda d: ([_t((16, 64), d), _t((16, 64), dt.INT32), _g((4096,), d)], {}),
}
_SPECIAL["tile.gemv_bias"] = lambda d: (_SPECIAL["tile.gemv"](d)[0] + [
    _t((1, 64), dt.INT32 if not d.is_float else dt.FP32, MemorySpace.Bias)], {})


def accepts(name: str) -> tuple | None:
    """The dtypes op `name` accepts, or None if not probed."""
    from pypto.ir import ops
    scalar_forms = set(ops.SCALAR_FORM.values()) | set(ops.SCALAR_ONLY)
    if name.split(".", 1)[0] not in ("tile", "tensor") or not (ops.OPS[name].params or name in _SPECIAL):
        return None

    kwargs = ops.OPS[name].kwargs

    def ok(d):
        if name in _SPECIAL:
            args, kw = _SPECIAL[name](d)
            try:
                ops.infer_type(name, args, kw, None)
                return True
            except Exception:
                return False
        kw = {}
        if "dtype" in kwargs:        # a made tile: its dtype is the option (a cast: to fp32)
            kw["dtype"] = dt.FP32 if name.endswith(".cast") else d
        if "value" in kwargs:
            kw["value"] = 0.0 if d.is_float else 0
        try:
            ops.infer_type(name, _sample(name, d, MemorySpace.Vec, scalar_forms), kw, None)
            return True
        except Exception:       # the rule refused these operands (or they do not fit it)
            return False
    return tuple(d for d in DTYPES if ok(d)) or None


def placement(name: str) -> str:
    """Where a tile op computes, from InferTileMemorySpace's tables; tensor ops run on GM
    tensors, or in a kernel as the tile ops they are converted to."""
    from pypto.passes import infer_tile_memory_space as inf
    if not name.startswith("tile."):
        return "tensors"
    if name in inf._OPERANDS:
        return " x ".join(s.name for s in inf._OPERANDS[name]) + " -> " + inf._PRODUCES[name].name
    if name in ("tile.batch_matmul", "tile.batch_matmul_acc"):
        return "Mat operands, per batch Left x Right -> Acc"
    if name in inf._KEEP:
        return "target_memory" if name not in ("tile.store", "tile.mgather") else \
            ("Vec or Acc -> GM" if name == "tile.store" else "target_memory (Vec or Mat)")
    if name in inf.VIEWS:
        return "its source's"
    if name in inf.INTO_TARGET:
        return "the target's"
    if name == "tile.cast":
        return "Vec (a matmul result: Acc -> Mat)"
    return "Vec"
