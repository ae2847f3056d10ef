"""The system family: task ids in an orchestration. `pl.submit(...)` and
`with pl.at(...) as tid` keep the id of the task they launch; `deps=[...]` makes a
launch wait for the tasks named (ids, or arrays of ids: pl.array.create(n, pl.TASK_ID),
whose unset entries name no task). In the IR a launch with deps is preceded by
`pl.system.after(deps)` and its id read right after it with `pl.system.task_id()`;
`pl.system.task_dummy(deps=[...])` is a task that runs nothing and finishes once those
have (a fan-in point to wait for)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import ArrayType, Const, ScalarType, TupleExpr
from pypto.ir.ops.base import _err, _tname, reg

# a kernel's place in an SPMD launch (pl.spmd(n)): op -> the hidden kernel argument
BLOCK_IDENTITY = {"tile.get_block_idx": "__pypto_spmd_block_idx",
                  "tile.get_block_num": "__pypto_spmd_block_num",
                  "tile.get_subblock_idx": "__pypto_spmd_subblock_idx"}


def task_deps(op, x, span) -> list:
    """The deps operand: a list of task ids and arrays of task ids."""
    items = x.items if isinstance(x, TupleExpr) else [x]
    for i in items:
        t = getattr(i, "type", None)
        if not (isinstance(t, (ScalarType, ArrayType)) and t.dtype == dt.TASK_ID):
            _err(f"{op}: deps are task ids (a pl.submit's or `pl.at(...) as tid`'s) or arrays of "
                 f"them, got {_tname(t)}", span,
                 "deps=[tid, tids] with tids = pl.array.create(n, pl.TASK_ID)")
    return items


def _after(args, kw, span):
    task_deps("system.after", args[0], span)
    return None


def _task_id(args, kw, span):
    return ScalarType(dt.TASK_ID)


def _dummy(args, kw, span):
    task_deps("system.task_dummy", args[0], span)
    return ScalarType(dt.TASK_ID)


reg("system.after", (1, 1), _after, pure=False, params=("deps",),
    sig="pl.system.after([tid, tids])  (the next kernel launched waits for these tasks; what "
        "deps=[...] of pl.submit / pl.at is in the IR)")
reg("system.task_id", (0, 0), _task_id, pure=False,
    sig="pl.system.task_id()  (the id of the task the kernel call just before launched; what "
        "`as tid` is in the IR)")
reg("system.task_dummy", (1, 1), _dummy, pure=False, params=("deps",),
    sig="pl.system.task_dummy(deps=[tid, tids])  (a task that runs nothing, done once those are: "
        "its id)")


def _identity(args, kw, span):
    return ScalarType(dt.INDEX)


for _op in BLOCK_IDENTITY:
    reg(_op, (0, 0), _identity, pure=False,
        sig=f"pl.{_op}()  (in a kernel launched by pl.spmd(n): "
            + {"tile.get_block_idx": "this block's index, 0 .. n-1",
               "tile.get_block_num": "n, the number of blocks",
               "tile.get_subblock_idx": "this vector core's index in its core group"}[_op] + ")")


def _blocks(args, kw, span):
    n = args[0]
    t = getattr(n, "type", None)
    if not (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype != dt.BOOL):
        _err(f"system.blocks: the block count is an integer, got {_tname(t)}", span,
             "pl.spmd(4)")
    if isinstance(n, Const) and n.value <= 0:
        _err(f"system.blocks: the block count must be positive, got {n.value}", span)
    return None


reg("system.blocks", (1, 1), _blocks, ("sync_start",), pure=False, params=("core_num",),
    sig="pl.system.blocks(n, sync_start=False)  (the next kernel launched runs as n blocks; what "
        "pl.spmd(n) is in the IR)")


CMP_CODES = {"==": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}


def _predicate(args, kw, span):
    from pypto.ir.nodes import TensorType
    t = getattr(args[0], "type", None)
    if not isinstance(t, TensorType):
        _err(f"system.predicate reads an element of a tensor, got {_tname(t)}", span)
    idx = args[1].items if isinstance(args[1], TupleExpr) else [args[1]]
    if len(idx) != len(t.shape):
        _err(f"system.predicate: {len(idx)} indices for a rank-{len(t.shape)} tensor", span)
    rt = getattr(args[2], "type", None)
    if not isinstance(rt, ScalarType):
        _err(f"system.predicate compares with a scalar, got {_tname(rt)}", span)
    if kw.get("cmp") not in CMP_CODES:
        _err(f"system.predicate: cmp is one of {', '.join(CMP_CODES)}, got {kw.get('cmp')!r}", span)
    return None


reg("system.predicate", (3, 3), _predicate, ("cmp",), pure=False,
    params=("tensor", "indices", "value"),
    sig="pl.system.predicate(t, [i, j], v, cmp=\">\")  (the next kernel launched runs only if "
        "t[i, j] cmp v holds when it is dispatched, its deps done; else it is skipped: what "
        "predicate=(t[i, j] > v) of pl.spmd is in the IR)")


def _syncall(args, kw, span):
    from pypto.ir.nodes import TensorType
    mode = kw.get("mode", "hard")
    if mode not in ("hard", "soft"):
        _err(f"syncall: mode is \"hard\" or \"soft\", got {mode!r}", span)
    if kw.get("core_type", "aiv_only") not in ("aiv_only", "aic_only", "mix"):
        _err(f"syncall: core_type is \"aiv_only\", \"aic_only\" or \"mix\", got "
             f"{kw.get('core_type')!r}", span)
    if mode == "soft":
        ws = getattr(args[0], "type", None) if args else None
        if not isinstance(ws, TensorType):
            _err("syncall(mode=\"soft\") keeps its count in gm_workspace=, a tensor parameter "
                 "of the kernel", span, "pl.system.syncall(mode=\"soft\", gm_workspace=ws, "
                                        "used_cores=4)")
        n = kw.get("used_cores")
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            _err(f"syncall(mode=\"soft\"): used_cores is the positive number of blocks that meet, "
                 f"got {n!r}", span)
    elif args:
        _err("syncall: gm_workspace= belongs to mode=\"soft\"", span)
    return None


reg("system.syncall", (0, 1), _syncall, ("core_type", "mode", "used_cores"), pure=False,
    params=("gm_workspace",),
    sig="pl.system.syncall(core_type=\"aiv_only\"[, mode=\"soft\", gm_workspace=ws, used_cores=n])  "
        "(in a kernel of an SPMD launch: wait until every block (or the used_cores blocks of a "
        "soft barrier, counting in ws) has reached it; the launch's blocks then run at once)")


def _dump_tag(args, kw, span):
    from pypto.ir.nodes import TensorType
    if not isinstance(getattr(args[0], "type", None), TensorType):
        _err(f"pl.dump_tag marks a tensor for the argument dump, got {_tname(getattr(args[0], 'type', None))}",
             span, "pl.dump_tag(t) with t a tensor the orchestration passes to a kernel")
    return None


# RunConfig(enable_dump_args=...) dumps the arguments of the kernels launched; once a
# program tags values, only the tagged ones (by value: the kernel calls that take this
# very value -- a value rebound after a call is another one)
reg("system.dump_tag", (1, 1), _dump_tag, pure=False, params=("tensor",),
    sig="pl.dump_tag(t)  (with RunConfig(enable_dump_args=1), the kernel launches that take this "
        "value dump it; pl.submit(..., dumps=[t, ...]) tags one launch's arguments)")


# Cross-core events: a hand-written protocol between the cube and the vector cores of a
# core group. Each event id is a counter per core: pl.system.sync_set raises it on the
# cores the FFTS mode names (2: from the AIC, on both AIVs; from the AIVs, on the AIC
# once both have set it; 1: on both AIVs once both have set it) and sync_wait blocks until
# the caller's counter is positive, then takes one off. Ids 14 and 15 are the runtime's.
USER_EVENT_IDS = 14
FFTS_MODES = {1: "between the two AIVs of the core group",
              2: "between the AIC and the AIVs of the core group"}
FFTS_WORKSPACE_MIN = 256
_EVENT_HINT = "pl.system.sync_set(4, pipe=pl.PipeType.MTE3, ffts_mode=2, core_type=\"aiv\")"


def _sync(op, args, kw, span, setting: bool):
    from pypto.errors import NotBuiltError
    from pypto.ir.nodes import PipeType
    ev = args[0]
    if isinstance(ev, Const):
        if not isinstance(ev.value, int) or isinstance(ev.value, bool) or not 0 <= ev.value < USER_EVENT_IDS:
            _err(f"{op}: the event id is 0 to {USER_EVENT_IDS - 1} (14 and 15 are the runtime's), got "
                 f"{ev.value!r}", span, _EVENT_HINT)
    elif not (isinstance(getattr(ev, "type", None), ScalarType) and not ev.type.dtype.is_float and ev.type.dtype != dt.BOOL):
        _err(f"{op}: the event id is an integer or a pl.Scalar[pl.INDEX], got {_tname(getattr(ev, 'type', None))}",
             span, _EVENT_HINT)
    if not isinstance(kw.get("pipe"), PipeType):
        _err(f"{op} names the pipe the event is {'raised' if setting else 'awaited'} on: pipe=pl.PipeType.X, "
             f"got {kw.get('pipe')!r}", span, _EVENT_HINT)
    if kw.get("core_type") not in (None, "aic", "aiv"):
        _err(f"{op}: core_type is \"aic\" or \"aiv\", got {kw.get('core_type')!r}", span)
    if not setting:
        return None
    mode = kw.get("ffts_mode", 2)
    if mode == 0:
        raise NotBuiltError(f"{op}: ffts_mode=0 (an event over every core of the launch) is not built on "
                            f"the simulator", span, "meet all blocks with pl.system.syncall(), or use "
                            "ffts_mode=2 (AIC <-> AIVs) / 1 (AIV <-> AIV) within a core group")
    if mode not in FFTS_MODES:
        _err(f"{op}: ffts_mode is 0, 1 or 2, got {mode!r}", span)
    if mode == 1 and kw.get("core_type") == "aic":
        _err(f"{op}: ffts_mode=1 is an event {FFTS_MODES[1]}; the AIC cannot raise it", span)
    return None


def _set_ffts(args, kw, span):
    from pypto.ir.nodes import TensorType
    t = getattr(args[0], "type", None)
    n = t.shape[0] if isinstance(t, TensorType) and len(t.shape) == 1 else None
    if not (isinstance(t, TensorType) and t.dtype == dt.INT64 and isinstance(n, int)
            and n >= FFTS_WORKSPACE_MIN):
        _err(f"set_ffts: the FFTS workspace is a 1-D INT64 tensor of at least {FFTS_WORKSPACE_MIN} "
             f"elements, got {_tname(t)}", span, "a parameter ws: pl.Tensor[[256], pl.INT64]")
    return None


reg("system.set_ffts", (1, 1), _set_ffts, pure=False, params=("workspace",),
    sig="pl.system.set_ffts(ws)  (A3: every core taking part in cross-core events names its FFTS "
        "workspace, a [>= 256] INT64 tensor, before its first sync_set / sync_wait)")
reg("system.sync_set", (1, 1), lambda a, k, s: _sync("sync_set", a, k, s, True),
    ("pipe", "ffts_mode", "core_type"), pure=False, params=("event_id",),
    sig="pl.system.sync_set(event_id, pipe=pl.PipeType.MTE3, ffts_mode=2, core_type=\"aiv\")  (raise "
        "a cross-core event: mode 2 from the AIC on both AIVs, from the AIVs on the AIC once both "
        "raised it; mode 1 between the two AIVs)")
reg("system.sync_wait", (1, 1), lambda a, k, s: _sync("sync_wait", a, k, s, False),
    ("pipe", "core_type"), pure=False, params=("event_id",),
    sig="pl.system.sync_wait(event_id, pipe=pl.PipeType.MTE2, core_type=\"aic\")  (wait until the "
        "event was raised on this core, then consume it)")
