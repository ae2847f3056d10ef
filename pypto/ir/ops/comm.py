"""Cross-rank operators (`pld.*` inside kernels): the rank's comm context, signals and
remote access to another rank's copy of a window buffer (a pld.DistributedTensor).

    ctx = pld.get_comm_ctx(dt); r = pld.rank(ctx); n = pld.nranks(ctx)
    pld.system.notify(dt, peer, offsets, value, op=pld.NotifyOp.AtomicAdd | Set)
    pld.system.wait(dt, offsets, expected, cmp=pld.WaitCmp.Eq | Ge)
    t = pld.tile.remote_load(dt, peer, offsets, shape)           (the peer's copy -> a Vec tile)
    pld.tile.remote_store(tile, dt, peer, offsets[, atomic=])    (a tile -> the peer's copy)
    dt = pld.tensor.barrier(dt)                                  (every rank meets; [world] or [world, 1] INT32)
    pld.tensor.put(dst, peer, src[, dst_offsets, src_offsets, shape]) / pld.tensor.get(...)

A notify writes a cell of the peer's copy, a wait reads this rank's own; nothing orders
remote data but these signals (or a barrier)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import AtomicType, MemorySpace, ScalarType, TensorType, TileType
from pypto.ir.ops.base import _check_window, _dims, _err, _indices, _shaped, _tname, reg

NOTIFY_OPS = {0: "AtomicAdd", 1: "Set"}
WAIT_CMPS = {0: "Eq", 1: "Ge"}
# remote_store(atomic=Add) element types
ATOMIC_DTYPES = (dt.FP32, dt.FP16, dt.BF16, dt.INT32, dt.INT16, dt.INT8)


def _window(op, x, span, what="target") -> TensorType:
    t = getattr(x, "type", None)
    if not (isinstance(t, TensorType) and t.window):
        _err(f"{op} expects a pld.DistributedTensor {what} (a window every rank holds), got {_tname(t)}",
             span, "pass a parameter annotated pld.DistributedTensor[[...], dtype], given pld.window(...) "
                   "by the host function")
    return t


def _int_scalar(op, x, span, what):
    t = getattr(x, "type", None)
    if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
        _err(f"{op}: {what} is an integer scalar, got {_tname(t)}", span)


def _cell(op, t: TensorType, offs, span):
    items = _indices(op, offs, span)
    if len(items) != len(t.shape):
        _err(f"{op}: the window has rank {len(t.shape)} but the offsets have {len(items)} entries", span)
    _check_window(op, items, [1] * len(items), t.shape, span)
    return items


def _enum(op, kw, key, table, span):
    v = kw.get(key)
    v = getattr(v, "value", v)
    if v not in table:
        _err(f"{op}: {key}= is one of {', '.join(table.values())}, got {kw.get(key)!r}", span)
    return v


def _ctx(args, kw, span):
    _window("get_comm_ctx", args[0], span, "argument")
    return ScalarType(dt.INT64)


def _rank(op):
    def infer(args, kw, span):
        t = getattr(args[0], "type", None)
        if not (isinstance(t, ScalarType) and t.dtype == dt.INT64):
            _err(f"{op} takes the comm context pld.get_comm_ctx(dt) gives, got {_tname(t)}", span)
        return ScalarType(dt.INT32)
    return infer


def _signal(op, target, offs, value, value_what, kw, key, table, span):
    """A signal op: an INT32 cell of a window at `offs`, an integer `value`, a `key=` mode."""
    t = _window(op, target, span, "target" if op == "notify" else "signal")
    _cell(op, t, offs, span)
    _int_scalar(op, value, span, value_what)
    if t.dtype != dt.INT32:
        _err(f"{op}: a signal window holds INT32 cells, got {t.dtype}", span)
    _enum(op, kw, key, table, span)


def _notify(args, kw, span):
    _int_scalar("notify", args[1], span, "peer")
    _signal("notify", args[0], args[2], args[3], "value", kw, "op", NOTIFY_OPS, span)


def _wait(args, kw, span):
    _signal("wait", args[0], args[1], args[2], "expected", kw, "cmp", WAIT_CMPS, span)


def _region(op, t: TensorType, offs, shape, span):
    items = _indices(op, offs, span)
    dims = _dims(op, shape, span)
    if len(items) != len(t.shape) or len(dims) != len(t.shape):
        _err(f"{op}: the window has rank {len(t.shape)}; offsets and shape need as many entries", span)
    _check_window(op, items, dims, t.shape, span)
    return dims


def _remote_load(args, kw, span):
    t = _window("remote_load", args[0], span)
    _int_scalar("remote_load", args[1], span, "peer")
    dims = _region("remote_load", t, args[2], args[3], span)
    if len(dims) != 2:
        _err(f"remote_load: a 2-D window region ([rows, cols]), got {dims}", span)
    return TileType(tuple(dims), t.dtype, MemorySpace.Vec)


def _atomic(op, kw, d, span):
    a = kw.get("atomic", AtomicType.None_)
    if a not in (AtomicType.None_, AtomicType.Add):
        _err(f"{op}: atomic= is pl.AtomicType.None_ or Add, got {a!r}", span)
    if a == AtomicType.Add and d not in ATOMIC_DTYPES:
        _err(f"{op}: atomic=Add accumulates {', '.join(map(str, ATOMIC_DTYPES))}, not {d}", span)


def _remote_store(args, kw, span):
    src = _shaped("remote_store", args[0], span, (TileType,))
    t = _window("remote_store", args[1], span)
    _int_scalar("remote_store", args[2], span, "peer")
    if src.dtype != t.dtype:
        _err(f"remote_store: the tile holds {src.dtype}, the window {t.dtype}", span)
    items = _indices("remote_store", args[3], span)
    if len(items) != len(t.shape) or len(src.shape) != 2:
        _err(f"remote_store: a 2-D tile into a window of rank {len(t.shape)} at as many offsets", span)
    _check_window("remote_store", items, list(src.valid_shape), t.shape, span)
    _atomic("remote_store", kw, t.dtype, span)
    return t


def _barrier(args, kw, span):
    t = _window("barrier", args[0], span, "signal")
    if t.dtype != dt.INT32 or not (len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[1] == 1)):
        _err(f"barrier: the signal is an INT32 window of shape [world_size] or [world_size, 1], got "
             f"{_tname(t)}", span)
    return t


def _transfer(op, local_dst: bool):
    """put: the peer's dst <- this rank's src; get: this rank's dst <- the peer's src."""
    def infer(args, kw, span):
        dst, src = args[0], args[2]
        if local_dst:
            st = _window(op, src, span, "src")
            d = _shaped(op, dst, span, (TensorType,))
        else:
            d = _window(op, dst, span, "dst")
            st = _shaped(op, src, span, (TensorType,))
        _int_scalar(op, args[1], span, "peer")
        if d.dtype != st.dtype:
            _err(f"{op}: dst holds {d.dtype}, src {st.dtype}", span)
        region = args[3:6]
        if region and len(region) != 3:
            _err(f"{op}: dst_offsets, src_offsets and shape must be provided together", span)
        if region:
            shape = _region(op, d, region[0], region[2], span)
            _region(op, st, region[1], region[2], span)
        else:
            if list(d.shape) != list(st.shape):
                _err(f"{op}: dst {list(d.shape)} and src {list(st.shape)} differ; give dst_offsets, "
                     f"src_offsets and shape to move a region", span)
            shape = list(d.shape)
        if len(shape) != 2 or not all(isinstance(x, int) for x in shape):
            _err(f"{op}: moves a static 2-D region, got {shape}", span)
        for k in ("chunk_rows", "chunk_cols"):
            c = kw.get(k, 0)
            if not isinstance(c, int) or isinstance(c, bool) or c < 0:
                _err(f"{op}: {k} is a non-negative int, got {c!r}", span)
        if kw.get("pipeline") and not (kw.get("chunk_rows", 0) > 0 and kw.get("chunk_cols", 0) > 0):
            _err(f"{op}: pipeline=True requires both chunk_rows>0 and chunk_cols>0", span)
        if not local_dst:
            _atomic(op, kw, d.dtype, span)
        return d
    return infer


reg("comm.get_comm_ctx", (1, 1), _ctx, params=("dist_tensor",),
    sig="pld.get_comm_ctx(dt)  (the rank's comm context, for pld.rank / pld.nranks)")
reg("comm.rank", (1, 1), _rank("rank"), params=("ctx",), sig="pld.rank(ctx)  (this rank, INT32)")
reg("comm.nranks", (1, 1), _rank("nranks"), params=("ctx",), sig="pld.nranks(ctx)  (the rank count, INT32)")
reg("comm.notify", (4, 4), _notify, ("op",), pure=False, params=("target", "peer", "offsets", "value"),
    sig="pld.system.notify(dt, peer, offsets, value, op=pld.NotifyOp.AtomicAdd)  (a cell of the peer's "
        "copy: += value, or = value with Set)")
reg("comm.wait", (3, 3), _wait, ("cmp",), pure=False, params=("signal", "offsets", "expected"),
    sig="pld.system.wait(dt, offsets, expected, cmp=pld.WaitCmp.Ge)  (until this rank's cell == / >= "
        "expected; a wait never satisfied is an error naming the rank, cell and value)")
reg("comm.remote_load", (4, 4), _remote_load, params=("target", "peer", "offsets", "shape"),
    sig="pld.tile.remote_load(dt, peer, offsets, shape)  (a region of the peer's copy as a Vec tile)")
reg("comm.remote_store", (4, 4), _remote_store, ("atomic",), pure=False,
    params=("src", "target", "peer", "offsets"),
    sig="pld.tile.remote_store(tile, dt, peer, offsets, atomic=pl.AtomicType.None_)  (the tile into the "
        "peer's copy; atomic=Add accumulates)")
reg("comm.barrier", (1, 1), _barrier, pure=False, params=("signal",),
    sig="pld.tensor.barrier(signal)  (every rank meets; the INT32 [world] signal clears itself; rebind it: "
        "signal = pld.tensor.barrier(signal))")
reg("comm.put", (3, 6), _transfer("put", False), ("atomic", "chunk_rows", "chunk_cols", "pipeline"), pure=False,
    params=("dst", "peer", "src", "dst_offsets", "src_offsets", "shape"),
    sig="pld.tensor.put(dst, peer, src[, dst_offsets, src_offsets, shape], atomic=pl.AtomicType.None_)  "
        "(this rank's src into the peer's copy of dst)")
reg("comm.get", (3, 6), _transfer("get", True), ("chunk_rows", "chunk_cols", "pipeline"), pure=False,
    params=("dst", "peer", "src", "dst_offsets", "src_offsets", "shape"),
    sig="pld.tensor.get(dst, peer, src[, dst_offsets, src_offsets, shape])  (the peer's copy of src into "
        "this rank's dst)")

COMM_OPS = ("comm.get_comm_ctx", "comm.rank", "comm.nranks", "comm.notify", "comm.wait", "comm.remote_load",
            "comm.remote_store", "comm.barrier", "comm.put", "comm.get")
