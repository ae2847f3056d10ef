"""The cross-core pipe family: a Group written by hand, as an AIC function and an AIV
function the Group calls, passes tiles between its cores through pipes it sets up itself.

    buf = pl.reserve_buffer(name="v2c", size=SLOT * 8, base=pl.AUTO)        # AIC: its slots
    pl.aic_initialize_pipe(0, buf, dir_mask=2, slot_size=SLOT, id=0)
    t: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
    ...                                                                      # use t
    pl.tfree_to_aiv(t, id=0)                                                 # its slot is free

    peer = pl.import_peer_buffer(name="v2c", peer_func="cube")               # AIV
    pl.aiv_initialize_pipe(0, peer, dir_mask=2, slot_size=SLOT, id=0)
    pl.tpush_to_aic(tile, split=0, id=0)

dir_mask: 1 cube -> vector (C2V), 2 vector -> cube (V2C), 3 both. A pipe is a ring of
slot_num slots of slot_size bytes per direction (and per AIV when both run); a push
waits for a free slot, a pop for a full one, and a popped slot stays taken until its
tfree. A pop's tile may hold less than its shape: the annotation's valid_shape, whose
run-time extents (scalars the kernel holds) become the pop's operands -- in a split group
each AIV's part of them. The consumer reserves the slots in its local memory (Mat on the cube, Vec on the
vector core); the producer imports that buffer by name from its peer function. `id`
tells a function's pipes apart (0 when omitted)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import Const, MemorySpace, ScalarType, TileType, TupleExpr
from pypto.ir.ops.base import _err, _tname, reg

AUTO = -1                      # reserve_buffer(base=pl.AUTO): the planner picks the address
DIRECTIONS = {1: "C2V", 2: "V2C", 3: "both"}
MAX_PIPE_IDS = 4
# what the ops are on the side they run on: (the core, the direction, the peer's space)
PUSH = {"tile.tpush_to_aic": "vector", "tile.tpush_to_aiv": "cube"}
POP = {"tile.tpop_from_aiv": ("cube", MemorySpace.Mat), "tile.tpop_from_aic": ("vector", MemorySpace.Vec)}
FREE = {"system.tfree_to_aiv": "cube", "system.tfree_to_aic": "vector"}
INIT = {"system.aic_initialize_pipe": "cube", "system.aiv_initialize_pipe": "vector"}
CROSS_CORE_OPS = (*PUSH, *POP, *FREE, *INIT, "system.reserve_buffer", "system.import_peer_buffer")
# a pop's tile type may come from its assignment's annotation
ANNOTATION_TYPED = tuple(POP)


def _int(op, kw, key, span, *, low=0, default=None):
    v = kw.get(key, default)
    v = v.value if isinstance(v, Const) else v
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        _err(f"{op}: {key}= is an integer >= {low}, got {v!r}", span)
    return v


def _pipe_id(op, kw, span):
    if kw.get("id") is not None:
        i = _int(op, kw, "id", span)
        if i >= MAX_PIPE_IDS:
            _err(f"{op}: pipe id {i}: a function has pipes 0 to {MAX_PIPE_IDS - 1}", span)


def _split(op, kw, span):
    s = _int(op, kw, "split", span, default=0)
    if s not in (0, 1, 2):
        _err(f"{op}: split={s}; 0 sends the tile whole, 1 up-down, 2 left-right", span)


def _push(op):
    def infer(args, kw, span):
        t = getattr(args[0], "type", None)
        want = MemorySpace.Vec if PUSH[op] == "vector" else MemorySpace.Acc
        if not isinstance(t, TileType) or t.memory_space not in (None, want):
            _err(f"{op} sends a {want.name} tile (the {PUSH[op]} core's), got {_tname(t)}", span)
        _split(op, kw, span)
        _pipe_id(op, kw, span)
        return None
    return infer


def _pop(op):
    def infer(args, kw, span):
        shape, d = kw.get("shape"), kw.get("dtype")
        if shape is None or d is None:
            _err(f"{op}: the tile received needs its shape and dtype: shape=[...], dtype=... or "
                 f"an annotation (t: pl.Tile[[16, 16], pl.FP32, pl.Mem.{POP[op][1].name}] = ...)", span)
        items = shape.items if isinstance(shape, TupleExpr) else shape
        dims = [i.value if isinstance(i, Const) else i for i in items]
        if not all(isinstance(x, int) and x > 0 for x in dims) or len(dims) != 2:
            _err(f"{op}: shape= is two positive integers, got {dims}", span)
        if not isinstance(d, dt.DataType):
            _err(f"{op}: dtype= is a dtype, got {d!r}", span)
        _split(op, kw, span)
        _pipe_id(op, kw, span)
        valid = kw.get("valid_shape")          # (an annotation's valid shape)
        if args:                               # its extents known at run time: operands
            for a in args:
                t = getattr(a, "type", None)
                if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
                    _err(f"{op}: a valid extent is an integer scalar, got {_tname(t)}", span)
            valid = [a.value if isinstance(a, Const) else None for a in args]
        if valid is not None and tuple(valid) == tuple(dims):
            valid = None
        return TileType(tuple(dims), d, POP[op][1], None, tuple(valid) if valid is not None else None)
    return infer


def _free(op):
    def infer(args, kw, span):
        t = getattr(args[0], "type", None)
        want = MemorySpace.Mat if FREE[op] == "cube" else MemorySpace.Vec
        if not isinstance(t, TileType) or t.memory_space not in (None, want):
            _err(f"{op} frees the slot of a tile popped on the {FREE[op]} core ({want.name}), got "
                 f"{_tname(t)}", span)
        _pipe_id(op, kw, span)
        return None
    return infer


def _init(op):
    def infer(args, kw, span):
        for i, a in enumerate(args):
            t = getattr(a, "type", None)
            if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
                _err(f"{op}: the {('C2V', 'V2C')[i]} consumer buffer is an integer (a reserve_buffer / "
                     f"import_peer_buffer result, or 0 for none), got {_tname(t)}", span)
        mask = _int(op, kw, "dir_mask", span, low=1)
        if mask not in DIRECTIONS:
            _err(f"{op}: dir_mask={mask}; 1 is cube -> vector, 2 vector -> cube, 3 both", span)
        _int(op, kw, "slot_size", span, low=1)
        if kw.get("slot_num") is not None:
            _int(op, kw, "slot_num", span, low=1)
        if kw.get("local_slot_num") is not None:
            n = _int(op, kw, "local_slot_num", span, low=1)
            if kw.get("slot_num") is not None and n > _int(op, kw, "slot_num", span, low=1):
                _err(f"{op}: local_slot_num={n} is more than slot_num={kw['slot_num']}", span)
        _pipe_id(op, kw, span)
        return None
    return infer


def _reserve(args, kw, span):
    if not isinstance(kw.get("name"), str) or not kw["name"]:
        _err("reserve_buffer: name= is the buffer's name (its peer imports it by it)", span)
    _int("reserve_buffer", kw, "size", span, low=1)
    base = kw.get("base", AUTO)
    base = base.value if isinstance(base, Const) else base
    if not isinstance(base, int) or base < AUTO:
        _err(f"reserve_buffer: base= is pl.AUTO or a byte address, got {base!r}", span)
    return ScalarType(dt.INT32)


def _import(args, kw, span):
    for key in ("name", "peer_func"):
        if not isinstance(kw.get(key), str) or not kw[key]:
            _err(f"import_peer_buffer: {key}= is a name (the buffer's, and the peer function's that "
                 f"reserves it)", span)
    return ScalarType(dt.INT32)


for _op, _core in PUSH.items():
    reg(_op, (1, 1), _push(_op), ("split", "id"), pure=False, params=("tile",),
        sig=f"pl.{_op.split('.')[1]}(tile, split=0, id=0)  (the {_core} core sends a tile through pipe id; "
            f"split 1 / 2: each AIV its half)", pto=_op.split(".")[1])
for _op, (_core, _space) in POP.items():
    reg(_op, (0, 2), _pop(_op), ("shape", "dtype", "split", "id", "valid_shape"), pure=False,
        params=("valid_rows", "valid_cols"),
        sig=f"pl.{_op.split('.')[1]}(split=0, id=0)  (the {_core} core receives a tile -- its type from the "
            f"annotation, t: pl.Tile[[M, N], dtype, pl.Mem.{_space.name}] = ..., or shape=, dtype= -- and its "
            f"slot stays taken until the tfree)", pto=_op.split(".")[1])
for _op, _core in FREE.items():
    reg(_op, (1, 1), _free(_op), ("split", "id"), pure=False, params=("tile",),
        sig=f"pl.{_op.split('.')[1]}(tile, id=0)  (the {_core} core is done with a popped tile: its "
            f"slot is free)", pto=_op.split(".")[1].replace("_to_", "_from_"))
for _op, _core in INIT.items():
    reg(_op, (0, 2), _init(_op), ("dir_mask", "slot_size", "slot_num", "local_slot_num", "id"), pure=False,
        params=("c2v_consumer_buf", "v2c_consumer_buf"),
        sig=f"pl.{_op.split('.')[1]}(c2v_buf, v2c_buf, dir_mask=2, slot_size=BYTES, slot_num=None, id=0)  "
            f"(the {_core} core's end of pipe id; 0 for a direction it does not consume)",
        pto=_op.split(".")[1])
reg("system.reserve_buffer", (0, 0), _reserve, ("name", "size", "base"), pure=False,
    sig="pl.reserve_buffer(name=..., size=BYTES, base=pl.AUTO)  (a consumer's pipe slots in its local "
        "memory: Mat on the cube, Vec on the vector core; its base address)", pto="reserve_buffer")
reg("system.import_peer_buffer", (0, 0), _import, ("name", "peer_func"), pure=False,
    sig="pl.import_peer_buffer(name=..., peer_func=...)  (the base of the buffer the peer function "
        "reserved)", pto="import_reserved_buffer")
