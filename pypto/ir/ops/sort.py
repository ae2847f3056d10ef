"""The sort family: pto.tsort32 sorts 32-element blocks of each row descending into
(value, index) pairs; pto.tmrgsort merges sorted runs, of one tile (format 1: groups of
four runs of `block_len` columns) or of 2-4 tiles (format 2, into the scratch tile's
shape). A pair is two fp32 columns: the value, then the index's 32 bits."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import NotBuiltError
from pypto.ir.nodes import Const, MemorySpace, ScalarType, TensorType, TileType
from pypto.ir.ops.base import _err, _shaped, _tname, reg, whole

MERGE_WAYS = (2, 3, 4)


def _kinds(ns):
    return (TileType,) if ns == "tile" else (TensorType,)


def _like(ns, t, shape):
    if ns == "tile":
        return TileType(tuple(shape), t.dtype, t.memory_space)
    return TensorType(tuple(shape), t.dtype)


def _pairs_of(op, t, span, what="source"):
    """A sort operand: a 2-D fp32 tile or tensor (fp16 pairs are not built)."""
    if len(t.shape) != 2:
        _err(f"{op}: the {what} is 2-D, got {_tname(t)}", span)
    if t.dtype == dt.FP16:
        raise NotBuiltError(f"{op}: fp16 sorting is not supported by this pypto yet (fp32 is)", span,
                            "pl.cast the values to pl.FP32 before sorting")
    if t.dtype != dt.FP32:
        _err(f"{op} sorts fp32 values, got {t.dtype}", span)
    whole(op, t, span, what)


def _sort32(ns):
    op = f"{ns}.sort32"

    def infer(args, kw, span):
        src, idx = (_shaped(op, a, span, _kinds(ns)) for a in args)
        _pairs_of(op, src, span)
        if src.shape[1] % 32:
            _err(f"{op}: rows are sorted in blocks of 32, got {src.shape[1]} columns", span,
                 "use a multiple of 32 columns")
        if tuple(idx.shape) != tuple(src.shape) or idx.dtype not in (dt.UINT32, dt.INT32):
            _err(f"{op}: the indices are a UINT32 (or INT32) {'tile' if ns == 'tile' else 'tensor'} "
                 f"shaped like the values {list(src.shape)}, got {_tname(idx)}", span,
                 "give each element its index: pl.arange, or an index tensor")
        return _like(ns, src, (src.shape[0], 2 * src.shape[1]))
    return infer


def _mrgsort_format1(ns):
    op = f"{ns}.mrgsort_format1"

    def infer(args, kw, span):
        src = _shaped(op, args[0], span, _kinds(ns))
        _pairs_of(op, src, span)
        b = args[1]
        t = getattr(b, "type", None)
        if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
            _err(f"{op}: block_len is an integer, got {_tname(t)}", span)
        if isinstance(b, Const) and (b.value <= 0 or b.value % 64):
            _err(f"{op}: block_len is a positive multiple of 64 (columns: 32 pairs), got {b.value}", span)
        return _like(ns, src, src.shape)
    return infer


def _mrgsort_ways(ns, ways):
    op = f"{ns}.mrgsort_{ways}way"

    def infer(args, kw, span):
        srcs = [_shaped(op, a, span, _kinds(ns)) for a in args[:ways]]
        for i, s in enumerate(srcs):
            _pairs_of(op, s, span, f"list {i}")
            if s.shape[0] != srcs[0].shape[0]:
                _err(f"{op}: the lists have {srcs[0].shape[0]} and {s.shape[0]} rows", span)
        if not isinstance(kw.get("exhausted", False), bool):
            _err(f"{op}: exhausted is True or False", span)
        total = sum(s.shape[1] for s in srcs)
        if ns == "tensor":
            return _like(ns, srcs[0], (srcs[0].shape[0], total))
        tmp = _shaped(op, args[ways], span, (TileType,))
        if tmp.dtype != dt.FP32 or tuple(tmp.shape) != (srcs[0].shape[0], total):
            _err(f"{op}: the scratch tile is the merged result's shape, [{srcs[0].shape[0]}, {total}] "
                 f"fp32, got {_tname(tmp)}", span)
        return TileType(tuple(tmp.shape), dt.FP32, srcs[0].memory_space)
    return infer


_PAIRS = "(value, index) pairs: two fp32 columns each, the index's bits in the second"
for _ns in ("tile", "tensor"):
    reg(f"{_ns}.sort32", (2, 2), _sort32(_ns), params=("src", "idx"), pto="tsort32",
        sig="pl.sort32(src, idx)  ([R, C] fp32 values, C a multiple of 32, and their UINT32 "
            f"indices -> [R, 2C]: each 32-block of a row sorted descending, as {_PAIRS})")
    reg(f"{_ns}.mrgsort_format1", (2, 2), _mrgsort_format1(_ns), params=("src", "block_len"),
        pto="tmrgsort", sig="pl.mrgsort(src, block_len=64)  (each row's sorted runs of block_len "
                            "columns merged four by four, descending; block_len a multiple of 64, "
                            "known when compiling or at run time)")
    for _w in MERGE_WAYS:
        _srcs = tuple(f"src{i}" for i in range(_w))
        if _ns == "tile":
            reg(f"tile.mrgsort_{_w}way", (_w + 1, _w + 1), _mrgsort_ways("tile", _w),
                ("exhausted",), params=_srcs + ("tmp",), pto="tmrgsort",
                sig=f"pl.tile.mrgsort({', '.join(_srcs)}, tmp=tmp, exhausted=False)  ({_w} sorted "
                    f"lists merged descending into tmp's shape, [R, sum of their columns])")
        else:
            reg(f"tensor.mrgsort_{_w}way", (_w, _w), _mrgsort_ways("tensor", _w), ("exhausted",),
                params=_srcs, sig=f"pl.mrgsort({', '.join(_srcs)})  ({_w} sorted lists merged "
                                  f"descending; the scratch tile is made for it)")


def mrgsort_form(keywords, nargs: int) -> str:
    """pl.mrgsort(src, block_len=...) is format 1; pl.mrgsort(a, b[, c, d], ...) a merge of
    that many lists."""
    if "block_len" in keywords or nargs <= 1:
        return "mrgsort_format1"
    return f"mrgsort_{nargs}way"
