"""Operators that change a shape or look at part of one: reshape, transpose, concat,
assemble into a tile, slices of a tensor."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import (MemorySpace, PtrType, ScalarType, TensorType, TileType, Const, TupleExpr,
                            TupleType)
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _dims_at_run_time, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, reg)


def _reshape(args, kw, span):
    a = _shaped("reshape", args[0], span)
    whole("reshape", a, span)
    shape = _dims("reshape", args[1], span)
    n_old = 1
    for d in a.shape:
        n_old *= d if isinstance(d, int) else 1
    n_new = 1
    for d in shape:
        n_new *= d
    dynamic = any(not isinstance(d, int) for d in a.shape)      # (the runtime checks the count)
    if n_old != n_new and not dynamic:
        _err(f"reshape: {list(a.shape)} has {n_old} elements, {shape} has {n_new}", span)
    return _same_kind(a, shape, a.dtype) if isinstance(a, TensorType) else \
        TileType(tuple(shape), a.dtype, a.memory_space)



for _ns in ("tensor", "tile"):
    reg(f"{_ns}.reshape", (2, 2), _reshape, params=("x", "shape"), sig="pl.reshape(x, [M, N])")


def _transpose(args, kw, span):
    a = _shaped("transpose", args[0], span)
    rank = len(a.shape)
    axes = (kw.get("axis1", 0), kw.get("axis2", 1))
    if any(not isinstance(x, int) or isinstance(x, bool) or not -rank <= x < rank for x in axes):
        _err(f"transpose: axis1/axis2 are dims of the rank-{rank} tile, got {list(axes)}", span)
    axes = sorted(x % rank for x in axes)
    if axes[0] == axes[1]:
        _err(f"transpose: axis1 and axis2 are two different dims (for a 2-D tile, 0 and 1), got "
             f"{[kw.get('axis1', 0), kw.get('axis2', 1)]}", span)
    if axes != [rank - 2, rank - 1]:
        from pypto.errors import NotBuiltError
        raise NotBuiltError(f"transpose: swapping dims {axes} of a rank-{rank} tile is not supported "
                            f"by this pypto yet (the last two are)", span,
                            "reshape the tile so the dims to swap are the last two")
    if isinstance(a, TensorType):  # in a kernel: its tile transposed (ConvertTensorToTileOps)
        whole("transpose", a, span)
        return TensorType((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype)
    if rank > 2:                   # the last two dims per batch (FlattenTileNdTo2D lays it out)
        whole("transpose", a, span)
        return TileType((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype, a.memory_space)
    if a.memory_space not in (None, MemorySpace.Vec):
        _err(f"transpose runs on Vec tiles, not {a.memory_space.name}", span,
             "transpose a matmul operand with pl.matmul(..., a_trans=/b_trans=) on tensors")
    v = valid_of(a)
    return TileType((a.shape[1], a.shape[0]), a.dtype, a.memory_space, None,
                    None if a.valid is None else (v[1], v[0]))


def _transpose_view(args, kw, span):
    a = _shaped("transpose_view", args[0], span, (TileType,))
    if len(a.shape) not in (2, 3):
        _err(f"transpose_view: a 2-D tile (or a 3-D one for pl.batch_matmul), got shape "
             f"{list(a.shape)}", span)
    whole("transpose_view", a, span)
    if a.memory_space not in (None, MemorySpace.Mat, MemorySpace.Vec):
        _err(f"transpose_view works on Mat (or Vec) tiles, not {a.memory_space.name}", span,
             "transpose the operand in Mat, then pl.move it to Left/Right")
    return TileType((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype, a.memory_space)


reg("tile.transpose_view", (1, 1), _transpose_view, params=("tile",), pto="ttrans",
    sig="pl.tile.transpose_view(tile)  (a Mat tile seen transposed, for pl.move to Left/Right; "
        "the simulator's ptoas copies it; a 3-D tile's last two dims, for pl.batch_matmul)")
reg("tile.transpose", (1, 1), _transpose, ("axis1", "axis2"), params=("x",), pto="ttrans",
    sig="pl.transpose(x, axis1=0, axis2=1)  (a Vec tile: [M, N] -> [N, M]; a 3-D one's last two "
        "dims, batch by batch)")
reg("tensor.transpose", (1, 1), _transpose, ("axis1", "axis2"), params=("x",),
    sig="pl.transpose(t, 0, 1)  (a tensor in a kernel: its tile transposed, the last two dims; "
        "in an orchestration: a strided view with the two dims swapped, no data moved)")


def _concat(args, kw, span):
    a, b = _shaped("concat", args[0], span, (TileType,)), _shaped("concat", args[1], span, (TileType,))
    _check_dtype("concat", a, b, span)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[0] != b.shape[0]:
        _err(f"concat: {_tname(a)} and {_tname(b)} do not stand side by side (2-D, same rows)", span)
    whole("concat", a, span, "first operand")
    whole("concat", b, span, "second operand")
    return TileType((a.shape[0], a.shape[1] + b.shape[1]), a.dtype, a.memory_space)


reg("tile.concat", (2, 2), _concat, params=("lhs", "rhs"), pto="tconcat",
    sig="pl.concat(a, b)  (column-wise: [M, N1] and [M, N2] -> [M, N1 + N2])")


def _tile_assemble(args, kw, span):
    dst = _shaped("assemble", args[0], span, (TileType,))
    src = _shaped("assemble", args[1], span, (TileType,))
    vec = (None, MemorySpace.Vec)
    # Vec into Vec (tinsert), or a matmul result (Acc) into a Mat tile (a converting move
    # into the window); the other spaces have no such data path
    if not ((dst.memory_space in vec and src.memory_space in vec) or
            (dst.memory_space is MemorySpace.Mat and src.memory_space is MemorySpace.Acc)):
        name = lambda t: t.memory_space.name if t.memory_space else "Vec"   # noqa: E731
        _err(f"assemble: {name(src)} into {name(dst)} is not a data path (Vec into Vec and Acc "
             f"into Mat are)", span, "move the tile to the target's space first, or go through GM")
    # the cube's write-back converts an fp32 result on its way into Mat
    if not (src.memory_space is MemorySpace.Acc and src.dtype == dt.FP32
            and dst.dtype in (dt.FP32, dt.FP16, dt.BF16)):
        _check_dtype("assemble", dst, src, span)
    offs = _indices("assemble", args[2], span)
    if len(dst.shape) != 2 or len(src.shape) != 2 or len(offs) != 2:
        _err(f"assemble: 2-D tiles and a 2-D offset, got {_tname(dst)}, {_tname(src)}", span)
    whole("assemble", dst, span, "target")
    _check_window("assemble", offs, list(src.valid_shape), dst.shape, span)
    return TileType(dst.shape, dst.dtype, dst.memory_space)


reg("tile.assemble", (3, 3), _tile_assemble, params=("target", "src", "offset"), pto="tinsert",
    sig="pl.tile.assemble(target, src, [row, col])  (target with src written at the offset; Acc "
        "into Mat, or "
        "Vec tiles)")


def _slice(args, kw, span):
    """A view of a window of a tensor: its shape (static), at offsets (scalars)."""
    t = _shaped("slice", args[0], span, (TensorType,))
    shape = _dims_at_run_time("slice", args[1], span)
    offs = _indices("slice", args[2], span)
    if len(shape) != len(t.shape) or len(offs) != len(t.shape):
        _err(f"slice: tensor has rank {len(t.shape)} but the window has {len(shape)} extents and "
             f"{len(offs)} offsets", span, "give one extent and one offset per dimension")
    ext = list(shape)
    if len(args) >= 4:
        # a view with only a corner valid: each extent a constant or, when it is known
        # only at run time, None; the kernels that read it say which part they load
        valid = _indices("slice", args[3], span)
        if len(valid) != len(shape):
            _err(f"slice: valid_shape has {len(valid)} extents for a window of rank {len(shape)}",
                 span)
        for i, (v, s) in enumerate(zip(valid, shape)):
            if isinstance(v, Const):
                if not 0 <= v.value <= (s if isinstance(s, int) else v.value):
                    _err(f"slice: valid extent {v.value} of dim {i} lies outside the window's {s}",
                         span)
                ext[i] = v.value
            else:
                ext[i] = None
    # only the valid part is read: a box may overhang the tensor (a 16-row tile over a
    # 5-row tensor) when its valid extent stays inside
    inside = [e if isinstance(e, int) else s for e, s in zip(ext, shape)]
    for i, (s, d) in enumerate(zip(inside, t.shape)):
        if isinstance(d, int) and isinstance(s, int) and s > d:
            _err(f"slice: extent {s} of dim {i} is larger than the tensor's {d}", span,
                 "give valid_shape= the part of the window that lies in the tensor")
    _check_window("slice", offs, inside, t.shape, span)
    return TensorType(tuple(shape), t.dtype, None, None if tuple(ext) == tuple(shape) else tuple(ext))


def _window_valid(op, t, shape, offs, span):
    """What of a window of a partial tile is valid (None: all of it): along a wholly valid
    axis the window, at any offset; along a partial one, at a known offset, the part left."""
    if t.valid is None:
        return None
    if any(v is None or (v != d and not isinstance(o, Const)) for v, d, o in zip(t.valid, t.shape, offs)):
        whole(op, t, span)
    valid = tuple(s if v == d else max(0, min(s, v - o.value)) for s, v, d, o in zip(shape, t.valid, t.shape, offs))
    return None if valid == tuple(shape) else valid


def _tile_slice(args, kw, span):
    """A window of a tile (a view over its bytes): its shape (static), at offsets."""
    t = _shaped("slice", args[0], span, (TileType,))
    shape = _dims("slice", args[1], span)
    offs = _indices("slice", args[2], span)
    if len(t.shape) != 2 or len(shape) != 2 or len(offs) != 2:
        _err(f"slice: a 2-D tile, a 2-D shape and a 2-D offset, got {_tname(t)}, {shape}, "
             f"{len(offs)} offsets", span)
    if t.memory_space not in (None, MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Acc):
        _err(f"slice: a window of a {t.memory_space.name} tile is not addressable (Vec, Mat and "
             f"Acc tiles are)", span)
    valid = _window_valid("slice", t, shape, offs, span)
    for i, (s, d) in enumerate(zip(shape, t.shape)):
        if s > d:
            _err(f"slice: extent {s} of dim {i} is larger than the tile's {d}", span)
    _check_window("slice", offs, shape, t.shape, span)
    return TileType(tuple(shape), t.dtype, t.memory_space, None, valid)


reg("tile.slice", (3, 3), _tile_slice, params=("tile", "shape", "offset"), pto="subview",
    unbuilt={"valid_shape": "slice a window whose whole extent is valid"},
    sig="pl.slice(tile, [M, N], [row, col])  (a window of a Vec, Mat or Acc tile: a view of its "
        "bytes, offsets known when compiling or at run time; matmul_acc may accumulate into an "
        "Acc window)")
reg("tensor.slice", (3, 4), _slice, params=("tensor", "shape", "offset", "valid_shape"),
    sig="pl.slice(tensor, [M, N], [row, col][, valid_shape=[r, c]])  (or "
        "tensor[row:row+M, col:col+N]; a view: no copy, the ops that read it read the "
        "tensor's window; in a kernel valid_shape= marks the part of a 2-D window that holds "
        "data, r and c known when compiling or at run time; an orchestration's view carries "
        "it to the kernels it is passed to, which load that part with pl.load(..., "
        "valid_shape=...))")


def _dim(args, kw, span):
    """The extent of one dim of a tensor: a constant the parser folds, or (a dynamic dim)
    the extent the tensor has at run time."""
    t = _shaped("dim", args[0], span, (TensorType,))
    a = args[1]
    axis = a.value if isinstance(a, Const) and isinstance(a.value, int) else None
    if axis is None or isinstance(a.value, bool):
        _err("dim: the axis must be an integer constant", span, "write pl.tensor.dim(t, 0)")
    if not -len(t.shape) <= axis < len(t.shape):
        _err(f"dim: axis {axis} is out of range for a rank-{len(t.shape)} tensor", span)
    return ScalarType(dt.INDEX)


reg("tensor.dim", (2, 2), _dim, params=("tensor", "axis"),
    sig="pl.tensor.dim(tensor, axis)  (the extent of that dim: a constant index, or for a "
        "pl.dynamic dim its extent at run time; also t.shape[axis])")


def _reinterpret_view(args, kw, span):
    """The same bytes read as another dtype: the last dim scales by the size ratio."""
    t = _shaped("reinterpret_view", args[0], span, (TileType,))
    to = kw.get("dtype")
    if not isinstance(to, dt.DataType):
        _err("reinterpret_view: the dtype to read the bytes as is required", span,
             "pl.reinterpret_view(tile, pl.INT32)")
    whole("reinterpret_view", t, span)
    if t.memory_space not in (None, MemorySpace.Vec):
        _err(f"reinterpret_view: a {t.memory_space.name} tile is boxed; only a flat Vec tile's "
             f"bytes can be read as another dtype", span)
    *lead, last = t.shape
    nbytes = last * t.dtype.nbytes
    if nbytes % to.nbytes:
        _err(f"reinterpret_view: a row of {last} {t.dtype} ({nbytes} bytes) is not a whole number "
             f"of {to}", span)
    return TileType(tuple(lead) + (nbytes // to.nbytes,), to, t.memory_space)


reg("tile.reinterpret_view", (1, 1), _reinterpret_view, ("dtype",), params=("tile",),
    pto="treshape",
    sig="pl.reinterpret_view(tile, pl.INT32)  (the same bytes as another dtype; the last dim "
        "scales by the size ratio)")


def tuple_get_type(args, kw, span):
    """Element i of a tuple of values (what a function returning several values gives):
    `t[i]`, the `tuple.get` call the parser makes of `a, b = self.f(...)`. Not an operator
    of the language (there is no pl.tuple), so not in the table."""
    t = getattr(args[0], "type", None)
    i = args[1]
    if not isinstance(t, TupleType):
        _err(f"indexing a value that holds one {_tname(t)}, not several", span)
    if not (isinstance(i, Const) and isinstance(i.value, int) and not isinstance(i.value, bool)):
        _err("a tuple is indexed by an integer constant", span)
    if not -len(t.types) <= i.value < len(t.types):
        _err(f"index {i.value} of a tuple of {len(t.types)} values", span)
    return t.types[i.value]



def _extract(args, kw, span):
    """A window of a tile copied into a tile of its own, in target_memory (Vec, or Mat ->
    Left / Right for the cube)."""
    src = _shaped("extract", args[0], span, (TileType,))
    offs = _indices("extract", TupleExpr(list(args[1:3]), span), span)
    shape = _dims("extract", args[3], span)
    if len(src.shape) != 2 or len(shape) != 2:
        _err(f"extract: a 2-D window of a 2-D tile, got {_tname(src)} and {shape}", span)
    valid = _window_valid("extract", src, shape, offs, span)
    for i, (s, d) in enumerate(zip(shape, src.shape)):
        if s > d:
            _err(f"extract: extent {s} of dim {i} is larger than the tile's {d}", span)
    _check_window("extract", offs, shape, src.shape, span)
    target = kw.get("target_memory", MemorySpace.Vec)
    pairs = {(None, MemorySpace.Vec), (MemorySpace.Vec, MemorySpace.Vec), (MemorySpace.Mat, MemorySpace.Left),
             (MemorySpace.Mat, MemorySpace.Right), (MemorySpace.Mat, MemorySpace.Mat)}
    if (src.memory_space, target) not in pairs:
        _err(f"extract: {getattr(src.memory_space, 'name', 'Vec')} -> {target.name} is not a path "
             f"TEXTRACT takes (Vec -> Vec, Mat -> Left / Right / Mat)", span)
    if kw.get("transpose"):       # the window read transposed into L0 (the cube's b_trans)
        if target not in (MemorySpace.Left, MemorySpace.Right):
            _err(f"extract(transpose=True) reads a Mat window into Left or Right, not {target.name}", span)
        shape = list(reversed(shape))
        valid = valid and tuple(reversed(valid))
    return TileType(tuple(shape), src.dtype, target, None, valid)


reg("tile.extract", (4, 4), _extract, ("target_memory", "transpose"),
    params=("src", "index_row", "index_col", "shape"),
    pto="textract",
    sig="pl.tile.extract(src, row, col, [M, N], target_memory=pl.Mem.Vec)  (a copy of the window "
        "at (row, col); Vec -> Vec, Mat -> Left / Right / Mat)")
