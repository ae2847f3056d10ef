"""The AIV-lane family: the crossings of a `for aiv_id in pl.split_aiv(2, mode=...)` region,
where each of the two vector cores (AIVs) of a core group runs the region's body as its
own lane (aiv_id = pl.tile.get_subblock_idx()).

    qk = pl.matmul(q, k)                      # cube, outside the region
    for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
        h = pl.aiv_shard(qk)                  # this lane's half: [M/2, N] in Vec
        ...
        g = pl.aic_gather(v)                  # the lanes' halves, rejoined for the cube

`split` is the region's SplitMode value (the parser fills it from the region): UP_DOWN
halves rows, LEFT_RIGHT columns, NONE crosses whole (both lanes get the whole tile)."""
from __future__ import annotations

from pypto.ir.nodes import MemorySpace, TensorType, TileType
from pypto.ir.ops.base import _err, _shaped, _tname, reg, whole

CROSSINGS = ("tile.aiv_shard", "tile.aic_gather", "tensor.aiv_shard", "tensor.aic_gather")
# the call the parser binds a region's lane index with carries its mode in this attr
REGION_ATTR = "split_aiv"


def _mode(op, kw, span) -> int:
    m = kw.get("split")
    if m not in (0, 1, 2):
        _err(f"{op}: split is the region's mode (0 none, 1 up-down, 2 left-right), got {m!r}", span,
             "use it inside `for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):`")
    return m


def split_point(t, m, kw) -> int | None:
    """Where a shard divides the split axis: lane 0 takes [0, h), lane 1 [h, 2h) of it.
    ceil(n / 2) of the extent n -- an odd box gives lanes of h and h - 1 -- unless the
    crossing names it (`half`: a tensor's split point kept on the larger fractal box its
    tile lives in)."""
    if not m:
        return None
    n = t.shape[m - 1]
    return int(kw["half"]) if kw.get("half") is not None else (n + 1) // 2 if isinstance(n, int) else None


def _scaled(op, t, m, factor, span, h=None):
    """t's shape with the split axis halved (factor 1/2: to the split point h) or doubled
    (factor 2)."""
    if len(t.shape) != 2:
        _err(f"{op}: a 2-D tile, got {_tname(t)}", span)
    shape = list(t.shape)
    if m:
        axis = m - 1
        if factor < 1 and not isinstance(h, int):
            _err(f"{op}: a {('row', 'column')[axis]} extent known at run time does not split over "
                 f"the two lanes", span, "shard a tile of static shape")
        if factor < 1 and not 0 < h <= shape[axis]:
            _err(f"{op}: a split point of {h} does not divide {_tname(t)} into two lanes", span)
        shape[axis] = h if factor < 1 else shape[axis] * 2
    return tuple(shape)


def _lane_valid(op, t, m, factor, span, h=None):
    """The valid part of a lane's share: on the split axis lane i holds
    max(min(valid - i * h, h), 0) of its h -- the same for both lanes only when the valid
    extent covers both shares (then whole), else known with the lane index (None); the
    other axis keeps its extent. Re-joining partial lanes (a gather) would leave holes
    between their bands: refused."""
    if factor > 1:
        if t.valid is not None:
            whole(op, t, span, "operand")
        return None
    if not m:
        return t.valid
    if t.valid is not None and None in t.valid:
        whole(op, t, span, "operand")
    axis = m - 1
    valid = list(t.valid or t.shape)
    if valid[axis] > 2 * h:
        _err(f"{op}: two lanes of {h} do not hold the {valid[axis]} valid "
             f"{('rows', 'columns')[axis]} of {_tname(t)}", span)
    valid[axis] = h if valid[axis] >= 2 * h else None
    return None if tuple(valid) == _scaled(op, t, m, factor, span, h) else tuple(valid)


def _crossing(op, src, dst, factor, what):
    """The type rule of a crossing from space src to dst, scaling the split axis."""
    def infer(args, kw, span):
        t = _shaped(op, args[0], span, (TileType,))
        m = _mode(op, kw, span)
        h = split_point(t, m, kw) if factor < 1 else None
        valid = _lane_valid(op, t, m, factor, span, h)
        if t.memory_space not in (None, src):
            _err(f"{op}: {what}, got {_tname(t)} in {t.memory_space.name}", span)
        return TileType(_scaled(op, t, m, factor, span, h), t.dtype, dst, None, valid)
    return infer


_aiv_shard = _crossing("aiv_shard", MemorySpace.Acc, MemorySpace.Vec, 0.5,
                       "brings a cube result (an Acc tile) to the vector lanes")
_aic_gather = _crossing("aic_gather", MemorySpace.Vec, MemorySpace.Mat, 2,
                        "hands a vector lane's tile to the cube")


reg("tile.aiv_shard", (1, 1), _aiv_shard, ("split", "half"), params=("x",),
    sig="pl.aiv_shard(x)  (in a pl.split_aiv region: this lane's part of a cube result, in Vec -- "
        "its half on the split axis, of an odd extent n ceil(n/2) on lane 0 and the rest on lane 1; "
        "the whole under SplitMode.NONE)")
reg("tile.aic_gather", (1, 1), _aic_gather, ("split",), params=("x",),
    sig="pl.aic_gather(x)  (in a pl.split_aiv region: the lanes' parts rejoined for the cube, in "
        "Mat; under SplitMode.NONE both lanes send the whole, which must agree)")


def _tensor_crossing(op, factor):
    """The author-facing form, on a kernel's tensor values (a matmul result, a pl.full):
    ConvertTensorToTileOps makes it the tile crossing of their tiles."""
    def infer(args, kw, span):
        t = _shaped(op, args[0], span, (TensorType,))
        m = _mode(op, kw, span)
        h = split_point(t, m, kw) if factor < 1 else None
        valid = _lane_valid(op, t, m, factor, span, h)
        return TensorType(_scaled(op, t, m, factor, span, h), t.dtype, None, valid)
    return infer


reg("tensor.aiv_shard", (1, 1), _tensor_crossing("aiv_shard", 0.5), ("split",), params=("x",),
    sig="pl.aiv_shard(x)  (in a pl.split_aiv region: this lane's part of a cube result -- its half "
        "on the split axis, of an odd extent n ceil(n/2) on lane 0 and the rest on lane 1; the whole "
        "under SplitMode.NONE)")
reg("tensor.aic_gather", (1, 1), _tensor_crossing("aic_gather", 2), ("split",), params=("x",),
    sig="pl.aic_gather(x)  (in a pl.split_aiv region: the lanes' parts rejoined for the cube)")
