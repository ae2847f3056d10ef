"""Memory operators: moving data between DDR and on-chip tiles and between on-chip
spaces, creating tiles and tensors, filling, assembling."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import (SCALE_SPACES, AtomicType, MemorySpace, PadValue, PtrType, ScalarType, TensorType, TileType, Const,
                            TupleExpr)
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _dims_at_run_time, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, reg)


def _valid_shape(op, x, shapes, span):
    """A valid_shape inside the window: each dim an integer constant, or an integer scalar
    computed in the kernel (None in the type: known when the kernel runs, and checked
    there against the tile's extent)."""
    items = _ints(op, x, span, "valid_shape")
    valid = []
    for i in items:
        if isinstance(i, Const) and isinstance(i.value, int) and not isinstance(i.value, bool):
            valid.append(i.value)
            continue
        t = getattr(i, "type", None)
        if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
            _err(f"{op}: valid_shape entries are integers, got {_tname(t)}", span)
        valid.append(None)
    if len(valid) != len(shapes) or any(v is not None and (v <= 0 or v > s)
                                        for v, s in zip(valid, shapes)):
        _err(f"{op}: valid_shape {['?' if v is None else v for v in valid]} does not lie inside "
             f"the window {shapes}", span, "each valid extent is between 1 and the window's "
                                           "extent in that dim")
    return valid


def _clamped(op, t, offs, valid, span):
    """clamp=True: what of the requested valid region lies inside the tensor, dim by dim
    min(valid, max(dim - offset, 0)); known when compiling where the offset and the dim
    are, else when the kernel runs (None). A window that provably reads nothing is an
    error."""
    out = []
    for i, (o, d, v) in enumerate(zip(offs, t.shape, valid)):
        off = o.value if isinstance(o, Const) and isinstance(o.value, int) else None
        if off is not None and off < 0:
            _err(f"{op}: offset {off} in dim {i} is negative", span,
                 "offsets count elements from the start of the tensor: 0 <= offset")
        if off is None or not isinstance(d, int):
            out.append(None)
            continue
        if off >= d:
            _err(f"{op}: clamp=True, but the window starts at {off} in dim {i}, past the tensor's "
                 f"extent {d}: it reads nothing", span, "start the window inside the tensor")
        out.append(None if v is None else min(v, d - off))
    return out


def partial_lead(shape, valid) -> tuple:
    """(i, after): the first leading dim of an N-D window whose valid extent is not the
    window's (None: all whole) and the product of the window's leading dims after it (all
    of them when whole) -- the valid rows, once the leading dims merge, are dim i's valid
    extent times `after`."""
    lead = shape[:-1]
    i = next((j for j, (d, v) in enumerate(zip(lead, valid[:-1])) if v != d), None)
    after = 1
    for d in lead[(0 if i is None else i + 1):]:
        after *= d
    return i, after


def flat_valid(shape, valid):
    """The valid part of an N-D window once its leading dims merge into rows (a tile is
    2-D): (rows, cols), rows None when known only at run time; None when it is no 2-D
    rectangle -- the leading dims must be whole but one, with only 1s before it."""
    i, after = partial_lead(shape, valid)
    if i is None:
        return (after, valid[-1])
    if any(v != d for d, v in zip(shape[i + 1:-1], valid[i + 1:-1])) or any(d != 1 for d in shape[:i]):
        return None
    return (None if valid[i] is None else valid[i] * after, valid[-1])


def row_block(window) -> tuple[int, int]:
    """(i, after): the rows of a flattened N-D window's valid part (flat_valid) are dim i's
    valid extent times `after`, the whole dims after it; i is its first leading dim
    that is not 1."""
    lead = list(window[:-1])
    i = next((j for j, w in enumerate(lead) if w != 1), len(lead) - 1)
    after = 1
    for w in lead[i + 1:]:
        after *= w
    return i, after


def _load(args, kw, span):
    t = _shaped("load", args[0], span, (TensorType,))
    offs = _indices("load", args[1], span)
    shapes = _dims("load", args[2], span, "shapes")
    if len(offs) != len(t.shape) or len(shapes) != len(t.shape):
        _err(f"load: tensor has rank {len(t.shape)} but offsets/shapes have "
             f"{len(offs)}/{len(shapes)} entries", span)
    valid = _valid_shape("load", args[3], shapes, span) if len(args) > 3 else list(shapes)
    if kw.get("transpose"):        # the window is one of the tensor's transpose
        if len(t.shape) != 2 or not all(isinstance(d, int) for d in t.shape):
            _err(f"load: transpose=True reads a static 2-D tensor, got {_tname(t)}", span)
        t = TensorType(tuple(reversed(t.shape)), t.dtype)
    partial = None if valid == list(shapes) else tuple(valid)
    if partial is not None and len(shapes) > 2 and flat_valid(shapes, valid) is None:
        from pypto.errors import NotBuiltError
        raise NotBuiltError(f"load: valid_shape {['?' if v is None else v for v in valid]} of a "
                            f"{list(shapes)} window is not a block of whole rows once its leading "
                            f"dims merge (a tile is 2-D); this pypto does not build it", span,
                            "narrow one leading dim (with only 1s before it) and the last")
    space = kw.get("target_memory", MemorySpace.Vec)
    if space not in (MemorySpace.Vec, MemorySpace.Mat):
        _err(f"load: a load from DDR lands in Vec or Mat, not {space.name}", span,
             "load into Mat and use pl.move(tile, target_memory=...) for Left/Right")
    if kw.get("clamp"):
        valid = _clamped("load", t, offs, valid, span)
        partial = None if valid == list(shapes) else tuple(valid)
        if partial is not None and len(shapes) != 2:
            from pypto.errors import NotBuiltError
            raise NotBuiltError(f"load: clamp=True on a rank-{len(shapes)} window is not supported "
                                f"by this pypto yet", span, "clamp 2-D windows")
        if kw.get("transpose"):
            from pypto.errors import NotBuiltError
            raise NotBuiltError("load: clamp=True with transpose=True is not supported by this "
                                "pypto yet", span, "keep a transposed window inside the tensor")
    for d, s in zip(t.shape, valid):        # only the valid region is read
        if isinstance(d, int) and isinstance(s, int) and s > d:
            _err(f"load: window {valid} exceeds tensor shape {list(t.shape)}", span)
    _check_window("load", offs, [0 if v is None else v for v in valid] if kw.get("clamp") else valid,
                  t.shape, span)
    if kw.get("flatten") and len(shapes) > 2:      # FlattenTileNdTo2D: an N-D window, a 2-D tile
        lead = 1
        for s in shapes[:-1]:
            lead *= s
        merged = None if partial is None else flat_valid(shapes, valid)
        return TileType((lead, shapes[-1]), t.dtype, space, None,
                        None if merged == (lead, shapes[-1]) else merged)
    return TileType(tuple(shapes), t.dtype, space, None, partial)


# the dtypes the store pipe can add into GM (bf16 only on a2a3)
ATOMIC_ADD_DTYPES = (dt.FP32, dt.FP16, dt.BF16, dt.INT32, dt.INT16, dt.INT8)


def _atomic(op, kw, dtype, span):
    """The atomic= keyword: pl.AtomicType.None_ (overwrite) or .Add (add into the tensor)."""
    a = kw.get("atomic", AtomicType.None_)
    if not isinstance(a, AtomicType):
        _err(f"{op}: atomic= must be pl.AtomicType.None_ or pl.AtomicType.Add, got {a!r}", span)
    if a is AtomicType.Add and dtype not in ATOMIC_ADD_DTYPES:
        _err(f"{op} with atomic=pl.AtomicType.Add needs a {'/'.join(map(str, ATOMIC_ADD_DTYPES))} "
             f"destination (what the store pipe can add into), got {dtype}", span,
             "accumulate into an fp32 tensor and pl.cast the sum afterwards")


def _store(args, kw, span):
    tile = _shaped("store", args[0], span, (TileType,))
    if isinstance(args[2], TupleExpr) and isinstance(getattr(args[1], "type", None), TensorType):
        _err("store: the offsets and the tensor are swapped", span,
             "the tensor comes last: pl.store(tile, offsets, out_tensor)")
    out = _shaped("store", args[2], span, (TensorType,))
    _check_dtype("store", tile, out, span) if tile.memory_space != MemorySpace.Acc else None
    _atomic("store", kw, out.dtype, span)
    offs = _indices("store", args[1], span)
    if len(offs) != len(out.shape):
        _err(f"store: tensor has rank {len(out.shape)} but offsets have {len(offs)} entries", span)
    if len(args) > 3:          # the window in the tensor's rank, for a flattened 2-D tile
        window = _static("store", _ints("store", args[3], span, "shapes"), span, "shapes")
        n = 1
        for w in window:
            n *= w
        rows = tile.valid_shape[0]
        if rows is not None and rows % row_block(window)[1]:
            _err(f"store: {rows} valid rows of a tile flattened from a {window} window are no "
                 f"block of its leading dims", span)
        if len(window) != len(out.shape) or n != tile.nbytes() // tile.dtype.nbytes:
            _err(f"store: window {window} does not hold tile {list(tile.shape)} in a rank-"
                 f"{len(out.shape)} tensor", span)
    elif len(tile.shape) == len(out.shape):         # the valid region is written
        _check_window("store", offs, list(tile.valid_shape), out.shape, span)
    return TensorType(out.shape, out.dtype, window=out.window)


def _move(args, kw, span):
    t = _shaped("move", args[0], span, (TileType,))
    space = kw.get("target_memory")
    if not isinstance(space, MemorySpace):
        _err("move: target_memory=pl.Mem.<space> is required", span)
    if space in SCALE_SPACES:         # an MX matmul's scales: E8M0 exponents from Mat
        if len(t.shape) != 2 or t.memory_space not in (None, MemorySpace.Mat) \
                or t.dtype not in (dt.FP8E8M0, dt.UINT8):
            _err(f"move: {space.name} takes 2-D FP8E8M0 (or UINT8) scales from Mat, got {_tname(t)}"
                 f"{' in ' + t.memory_space.name if t.memory_space else ''}", span,
                 "pl.load the scales with target_memory=pl.Mem.Mat first")
        return TileType(t.shape, dt.FP8E8M0, space, None, t.valid)    # (UINT8: the same bits)
    if kw.get("transpose"):           # the cube reads a Mat tile transposed into L0A / L0B
        if space not in (MemorySpace.Left, MemorySpace.Right) or len(t.shape) != 2 \
                or t.memory_space not in (None, MemorySpace.Mat):
            _err(f"move(transpose=True) reads a 2-D Mat tile into Left or Right, got {_tname(t)}"
                 f"{' in ' + t.memory_space.name if t.memory_space else ''} -> {space.name}", span)
        valid = None if t.valid is None else tuple(reversed(t.valid))
        return TileType(tuple(reversed(t.shape)), t.dtype, space, None, valid)
    return TileType(t.shape, t.dtype, space, None, t.valid)


def _generated(op, args, kw, span, what, flag, dtype=None):
    """A 2-D Vec tile made from one integer scalar (tri's diagonal, ci's start):
    checks the scalar, the shape, dtype= and the boolean option; (shape, dtype)."""
    t = getattr(args[0], "type", None)
    if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
        _err(f"{op}: the {what} is an integer, got {_tname(t)}", span,
             f"pl.tile.{op}(0, [M, N], dtype=...)")
    shape = _dims(op, args[1], span)
    if len(shape) != 2:
        _err(f"{op}: the shape is 2-D, got {shape}", span)
    dtype = kw.get("dtype", dtype)
    if not isinstance(dtype, dt.DataType):
        _err(f"{op}: dtype=pl.<DTYPE> is required", span)
    if not isinstance(kw.get(flag, False), bool):
        _err(f"{op}: {flag} is True or False", span)
    return shape, dtype


def _tri(args, kw, span):
    shape, dtype = _generated("tri", args, kw, span, "diagonal", "upper")
    valid = _valid_shape("tri", args[2], shape, span) if len(args) > 2 else None
    if valid is not None and None in valid:
        from pypto.errors import NotBuiltError
        raise NotBuiltError("tri: a valid_shape computed in the kernel is not supported by this "
                            "pypto yet", span, "give it as integer constants")
    return TileType(tuple(shape), dtype, MemorySpace.Vec, None,
                    None if valid is None or valid == shape else tuple(valid))


def _ci(args, kw, span):
    shape, dtype = _generated("ci", args, kw, span, "start", "descending", dt.INT32)
    if dtype.is_float or dtype == dt.BOOL:
        _err(f"ci: an index ramp has an integer dtype, got {dtype!r}", span)
    return TileType(tuple(shape), dtype, MemorySpace.Vec)


def _fillpad_expand(args, kw, span):
    t = _fillpad(args[:1], kw, span)
    shape = _dims("fillpad_expand", args[1], span)
    if len(shape) != len(t.shape) or any(n < o for n, o in zip(shape, t.shape)):
        _err(f"fillpad_expand: {shape} does not hold the {list(t.shape)} tile", span,
             "the new shape is at least the tile's in every dim")
    return TileType(tuple(shape), t.dtype, t.memory_space)


def _element(op, args, span, kinds):
    """The tensor or tile and the indices of one of its elements (one per dim, inside it)."""
    t = _shaped(op, args[0], span, kinds)
    what = "tensor" if isinstance(t, TensorType) else "tile"
    idx = _indices(op, args[1] if isinstance(args[1], TupleExpr) else TupleExpr([args[1]], span), span)
    if len(idx) != len(t.shape):
        _err(f"{op}: {what} has rank {len(t.shape)} but {len(idx)} indices are given", span)
    _check_window(op, idx, [1] * len(idx), t.shape, span)
    if isinstance(t, TileType) and t.memory_space not in (None, MemorySpace.Vec):
        _err(f"{op}: a {t.memory_space.name} tile's elements are not addressable; {op} works on "
             f"Vec tiles", span, "move it to Vec first, or read it from its tensor")
    return t


def _read(args, kw, span):
    return ScalarType(_element("read", args, span, (TensorType, TileType)).dtype)


def _write(args, kw, span):
    t = _element("write", args, span, (TensorType, TileType))
    v = getattr(args[2], "type", None)
    if not isinstance(v, ScalarType):
        _err(f"write: the value is a scalar, got {_tname(v)}", span,
             "write one element: pl.write(t, [i, j], value)")
    if v.dtype != t.dtype and not (isinstance(args[2], Const)):
        _err(f"write: a {v.dtype} value into {t.dtype} elements", span,
             f"pl.cast(value, {t.dtype!r}) first")
    return t


def _valid_dims(op, t, rows, cols, span):
    """The (rows, cols) pl.set_validshape gives: integer constants inside the shape, or
    integer scalars (None: known when the kernel runs)."""
    if len(t.shape) != 2:
        _err(f"{op}: a 2-D {'tile' if isinstance(t, TileType) else 'tensor'}, got {_tname(t)}", span)
    out = []
    for x, extent in zip((rows, cols), t.shape):
        if isinstance(x, Const) and isinstance(x.value, int) and not isinstance(x.value, bool):
            if not 0 < x.value <= (extent if isinstance(extent, int) else x.value):
                _err(f"{op}: a valid extent of {x.value} does not lie inside {list(t.shape)}", span,
                     "each valid extent is between 1 and the dim's extent")
            out.append(x.value)
            continue
        xt = getattr(x, "type", None)
        if not (isinstance(xt, ScalarType) and not xt.dtype.is_float and xt.dtype != dt.BOOL):
            _err(f"{op}: valid extents are integers, got {_tname(xt)}", span)
        out.append(None)
    return None if tuple(out) == tuple(t.shape) else tuple(out)


def _set_validshape(args, kw, span):
    t = _shaped("set_validshape", args[0], span)
    valid = _valid_dims("set_validshape", t, args[1], args[2], span)
    if isinstance(t, TileType):
        return TileType(t.shape, t.dtype, t.memory_space, None, valid)
    return TensorType(t.shape, t.dtype, None, valid, window=t.window)


def _tensor_fillpad_expand(args, kw, span):
    t = _tensor_fillpad(args[:1], kw, span)
    shape = _dims("fillpad_expand", args[1], span)
    if len(shape) != len(t.shape) or any(n < o for n, o in zip(shape, t.shape)):
        _err(f"fillpad_expand: {shape} does not hold the {list(t.shape)} tensor", span,
             "the new shape is at least the tensor's in every dim")
    return TensorType(tuple(shape), t.dtype)


def _tensor_fillpad(args, kw, span):
    t = _shaped("fillpad", args[0], span, (TensorType,))
    pad = kw.get("pad_value", PadValue.zero)
    if not isinstance(pad, PadValue):
        _err(f"fillpad: pad_value must be pl.PadValue.zero, .max or .min, got {pad!r}", span)
    return TensorType(t.shape, t.dtype)


def _tensor_ci(args, kw, span):
    t = _ci(args, kw, span)
    return TensorType(t.shape, t.dtype)


def _fillpad(args, kw, span):
    t = _shaped("fillpad", args[0], span, (TileType,))
    pad = kw.get("pad_value", PadValue.zero)
    if not isinstance(pad, PadValue):
        _err(f"fillpad: pad_value must be pl.PadValue.zero, .max or .min, got {pad!r}", span)
    if t.memory_space not in (None, MemorySpace.Vec):
        _err(f"fillpad works on a Vec tile, not {t.memory_space.name}", span)
    return TileType(t.shape, t.dtype, t.memory_space)


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
    shape = _dims_at_run_time("create_tensor", args[0], span)
    dtype = kw.get("dtype")
    if not isinstance(dtype, dt.DataType):
        _err("create_tensor: dtype=pl.<DTYPE> is required", span)
    return TensorType(tuple(shape), dtype)


def _alloc(args, kw, span):
    return PtrType()



def _assemble(args, kw, span):
    dst = _shaped("assemble", args[0], span, (TensorType,))
    src = _shaped("assemble", args[1], span)
    # an fp32 matmul result is converted to fp16 / bf16 on its way to GM (the fix-pipe);
    # ConvertTensorToTileOps refuses any other fp32 source into a narrower tensor
    if not (isinstance(src, TensorType) and src.dtype == dt.FP32 and dst.dtype in (dt.FP16, dt.BF16)):
        _check_dtype("assemble", dst, src, span)
    _atomic("assemble", kw, dst.dtype, span)
    if isinstance(args[2], TupleExpr) and len(src.shape) == len(dst.shape):   # what is written
        _check_window("assemble", args[2].items, list(src.valid_shape), dst.shape, span)
    return TensorType(dst.shape, dst.dtype, window=dst.window)



_INT_RANGE = {dt.INT8: (-2**7, 2**7 - 1), dt.INT16: (-2**15, 2**15 - 1), dt.INT32: (-2**31, 2**31 - 1),
              dt.INT64: (-2**63, 2**63 - 1), dt.UINT8: (0, 2**8 - 1), dt.UINT16: (0, 2**16 - 1),
              dt.UINT32: (0, 2**32 - 1), dt.UINT64: (0, 2**64 - 1), dt.INDEX: (-2**63, 2**63 - 1)}
_FULL_DTYPES = (dt.FP32, dt.FP16, dt.BF16, dt.INT8, dt.INT16, dt.INT32, dt.INT64) + dt.UNSIGNED


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



reg("tile.load", (3, 4), _load, ("target_memory", "flatten", "transpose", "clamp"),
    params=("tensor", "offsets", "shapes", "valid_shape"),
    sig="pl.load(tensor, offsets, shapes, valid_shape=None, target_memory=pl.Mem.Vec, "
        "transpose=False, clamp=False)  (Vec or Mat; valid_shape: the part of the window read, "
        "the rest is padding; transpose: the window is one of the 2-D tensor's transpose; "
        "clamp=True: a window running off the tensor's end reads what is there, its valid "
        "region cut back to the edge, when compiling or when the kernel runs)",
    pto="tload")
reg("tile.tri", (2, 3), _tri, ("dtype", "upper"), params=("diagonal", "shape", "valid_shape"),
    sig="pl.tile.tri(diagonal, [M, N], valid_shape=None, dtype=pl.FP32, upper=False)  (ones on "
        "and below the diagonal, or on and above it with upper=True; zeros elsewhere)", pto="ttri")
reg("tensor.read", (2, 2), _read, params=("tensor", "indices"),
    sig="pl.read(tensor, [i, j])  (one element of a tensor, in a kernel: a scalar)")
reg("tile.read", (2, 2), _read, params=("tile", "indices"), pto="tgetval",
    sig="pl.read(tile, [i, j])  (one element of a Vec tile: a scalar)")
reg("tensor.write", (3, 3), _write, pure=False, params=("tensor", "indices", "value"),
    sig="pl.write(tensor, [i, j], value)  (one element of a tensor, in a kernel; returns the "
        "tensor)")
reg("tile.write", (3, 3), _write, pure=False, params=("tile", "indices", "value"), pto="tsetval",
    sig="pl.write(tile, [i, j], value)  (one element of a Vec tile, in place; returns the tile)")
for _ns in ("tensor", "tile"):
    reg(f"{_ns}.set_validshape", (3, 3), _set_validshape, params=(_ns, "rows", "cols"),
        sig=f"pl.set_validshape({_ns}, rows, cols)  (the same data, of which only the leading "
            f"rows x cols hold values: later reads read that part, pl.fillpad pads the rest)")
reg("tensor.fillpad_expand", (2, 2), _tensor_fillpad_expand, ("pad_value",), params=("tensor", "shape"),
    sig="pl.fillpad_expand(tensor, [M, N], pad_value=pl.PadValue.zero)  (in a kernel: a larger "
        "tensor, the data then the pad value)")
reg("tensor.fillpad", (1, 1), _tensor_fillpad, ("pad_value",), params=("tensor",),
    sig="pl.fillpad(tensor, pad_value=pl.PadValue.zero)  (in a kernel: outside the valid region "
        "the pad value)")
reg("tensor.ci", (2, 2), _tensor_ci, ("dtype", "descending"), params=("start", "shape"),
    sig="pl.tensor.ci(start, [M, N], dtype=pl.INT32, descending=False)  (or pl.arange; in a "
        "kernel: start + k at row-major position k)")
reg("tile.ci", (2, 2), _ci, ("dtype", "descending"), params=("start", "shape"), pto="tci",
    sig="pl.tile.ci(start, [M, N], dtype=pl.INT32, descending=False)  (start + k at row-major "
        "position k, or start - k)")
reg("tile.fillpad_expand", (2, 2), _fillpad_expand, ("pad_value",), params=("tile", "shape"),
    pto="tfillpad_expand",
    sig="pl.tile.fillpad_expand(tile, [M, N], pad_value=pl.PadValue.zero)  (a larger tile: the "
        "tile's valid region, the pad value elsewhere)")
reg("tile.fillpad_inplace", (1, 1), _fillpad, ("pad_value",), params=("tile",), pto="tfillpad",
    sig="pl.tile.fillpad_inplace(tile, pad_value=pl.PadValue.zero)  (pl.fillpad that may "
        "write the tile's own buffer)")
reg("tile.fillpad", (1, 1), _fillpad, ("pad_value",), params=("tile",),
    sig="pl.fillpad(tile, pad_value=pl.PadValue.zero)  (fills outside the valid region; the "
        "result is valid over the whole tile)", pto="tfillpad")
reg("tile.store", (3, 4), _store, ("atomic",), pure=False, params=("tile", "offsets", "output_tensor"),
    sig="pl.store(tile, offsets, output_tensor, atomic=pl.AtomicType.None_)  (atomic=pl.AtomicType."
        "Add adds the tile into the tensor: parallel kernels may accumulate into one window)",
    pto="tstore")
reg("tile.move", (1, 1), _move, ("target_memory", "transpose"), params=("tile",),
    sig="pl.move(tile, target_memory=pl.Mem.Left[, transpose=True])  (transpose: a Mat tile read "
        "transposed into Left / Right)")
reg("tile.create", (1, 1), _create_tile, ("dtype", "target_memory"), params=("shape",),
    sig="pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)")
reg("tile.alloc", (1, 1), _alloc, ("target_memory",), params=("size",),
    sig="pl.tile.alloc(pl.Mem.Vec, size_in_bytes)")
reg("tensor.create", (1, 1), _create_tensor, ("dtype",), params=("shape",),
    sig="pl.create_tensor([M, N], dtype=pl.FP32)  (orchestration only)")
reg("tensor.full", (1, 1), _full, ("dtype", "value"), params=("shape",),
    sig="pl.full([M, N], dtype=pl.FP32, value=0.0)")
reg("tile.full", (1, 1), _tile_full, ("dtype", "value", "target_memory"), params=("shape",),
    sig="pl.tile.full([M, N], dtype=pl.FP32, value=0.0)")
def _expand_clone(args, kw, span):
    """src broadcast over the target's shape (each dim of src the target's or 1), written
    into the target."""
    src = _shaped("expand_clone", args[0], span, (TensorType,))
    dst = _shaped("expand_clone", args[1], span, (TensorType,))
    _check_dtype("expand_clone", dst, src, span)
    if len(src.shape) != len(dst.shape) or any(s not in (1, d) for s, d in zip(src.shape, dst.shape)):
        _err(f"expand_clone: {list(src.shape)} does not broadcast to {list(dst.shape)} (each dim the "
             f"target's or 1)", span)
    if not all(isinstance(d, int) for d in dst.shape):
        from pypto.errors import NotBuiltError
        raise NotBuiltError("expand_clone: a dynamic dim is not supported by this pypto yet", span,
                            "expand into a static tensor")
    return TensorType(dst.shape, dst.dtype)


reg("tensor.expand_clone", (2, 2), _expand_clone, pure=False, params=("src", "target"),
    sig="pl.expand_clone(src, target)  (src repeated along its size-1 dims to the target's shape, "
        "written into the target tensor)")
reg("tensor.assemble", (3, 3), _assemble, ("atomic",), pure=False, params=("dst", "src", "offset"),
    sig="pl.assemble(dst, src, [row_offset, col_offset], atomic=pl.AtomicType.None_)  (or "
        "dst[i:i+m, :] = src; atomic=pl.AtomicType.Add adds src into the region)")


def _random(args, kw, span):
    """A tile of counter-based pseudo-random 32-bit values (Philox): key (2 words),
    counter (4 words), the element's position."""
    for i, a in enumerate(args[:6]):
        t = getattr(a, "type", None)
        if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
            what = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")[i]
            _err(f"random: {what} is an integer, got {_tname(t)}", span,
                 "pl.tile.random(key0, key1, c0, c1, c2, c3, [M, N])")
    shape = _dims("random", args[6], span)
    if len(shape) != 2:
        _err(f"random: the shape is 2-D, got {shape}", span)
    valid = _valid_shape("random", args[7], shape, span) if len(args) > 7 else None
    if valid is not None and None in valid:
        from pypto.errors import NotBuiltError
        raise NotBuiltError("random: a valid_shape computed in the kernel is not supported by this "
                            "pypto yet", span, "give it as integer constants")
    dtype = kw.get("dtype", dt.UINT32)
    if dtype not in (dt.UINT32, dt.INT32):
        _err(f"random: the values are uint32 or int32, got {dtype!r}", span)
    if kw.get("rounds", 10) not in (7, 10):
        _err(f"random: rounds is 7 or 10, got {kw.get('rounds')!r}", span)
    valid = None if valid is None or tuple(valid) == tuple(shape) else tuple(valid)
    return TileType(tuple(shape), dtype, MemorySpace.Vec, None, valid)


def _tensor_random(args, kw, span):
    t = _random(args, kw, span)
    if t.valid is not None:
        _err("random: a tensor has no valid_shape; narrow the tile form", span)
    return TensorType(t.shape, t.dtype)


_RANDOM_PARAMS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3", "shape")
reg("tile.random", (7, 8), _random, ("dtype", "rounds"), params=_RANDOM_PARAMS + ("valid_shape",),
    pto="trandom",
    sig="pl.tile.random(key0, key1, c0, c1, c2, c3, [M, N], valid_shape=None, dtype=pl.UINT32, "
        "rounds=10)  (a5: counter-based pseudo-random words, the same for the same seeds)")
reg("tensor.random", (7, 7), _tensor_random, ("dtype", "rounds"), params=_RANDOM_PARAMS,
    sig="pl.random(key0, key1, c0, c1, c2, c3, [M, N], dtype=pl.UINT32, rounds=10)  (in a kernel "
        "on a5)")
