"""ctypes mirror of pypto/include/pypto_abi.h (keep the two in step)."""
from __future__ import annotations

import ctypes
import re
from typing import Any, NamedTuple

MAX_DIMS = 5

# Argument directions (PYPTO_DIR_*).
DIR_INPUT, DIR_OUTPUT, DIR_INOUT, DIR_OUTPUT_EXISTING, DIR_NO_DEP = range(5)
DIR_DUMP = 0x100      # ORed into a direction: dump this argument (pl.dump_tag)
DIR_NAMES = {DIR_INPUT: "input", DIR_OUTPUT: "output", DIR_INOUT: "inout",
             DIR_OUTPUT_EXISTING: "output_existing", DIR_NO_DEP: "no_dep"}
READS = frozenset({DIR_INPUT, DIR_INOUT})
WRITES = frozenset({DIR_OUTPUT, DIR_INOUT, DIR_OUTPUT_EXISTING})

KERNEL_ENTRY = "pypto_kernel_entry"
MOVE_NS = "pypto_kernel_move_ns"
ORCHESTRATION_ENTRY = "pypto_orchestration_entry"
ERR_LEN = 1024
KERNEL_STOPPED = 2     # a core group's half that stopped because the other half failed (pto::kStopped)


class PyptoTensor(ctypes.Structure):
    _fields_ = [
        ("addr", ctypes.c_void_p),
        ("start_offset", ctypes.c_int64),
        ("ndims", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    ]


ctx_t = ctypes.c_void_p
i64p = ctypes.POINTER(ctypes.c_int64)
i32p = ctypes.POINTER(ctypes.c_int32)
u64p = ctypes.POINTER(ctypes.c_uint64)

ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int32, ctypes.c_int32, i64p)
VIEW_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int64, ctypes.c_int32, i64p, i64p)
SUBMIT_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctx_t, ctypes.c_int32, ctypes.c_int32, i64p,
                             i32p, ctypes.c_int32, u64p)
SCOPE_BEGIN_FN = ctypes.CFUNCTYPE(None, ctx_t, ctypes.c_int32)
SCOPE_END_FN = ctypes.CFUNCTYPE(None, ctx_t)
READ_SCALAR_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctx_t, ctypes.c_int64, ctypes.c_int32, i64p, u64p)
FAIL_FN = ctypes.CFUNCTYPE(None, ctx_t, ctypes.c_char_p)
TENSOR_DIM_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int64, ctypes.c_int32)
SUBMIT_TASK_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int32, ctypes.c_int32, i64p,
                                  i32p, ctypes.c_int32, u64p, ctypes.c_int32, i64p, ctypes.c_int32,
                                  ctypes.c_int32)
PREDICATE_FN = ctypes.CFUNCTYPE(None, ctx_t, ctypes.c_int64, ctypes.c_int32, i64p, ctypes.c_int32,
                                ctypes.c_double)
VIEW_SHAPE_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int64, ctypes.c_int32, i64p)
TRANSPOSE_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctx_t, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32)
# every kernel's args end with its place in its launch: block index, block count, the
# vector core's index in its core group (read by kernels that use pl.tile.get_block_idx ...)
# the address of the launch's barrier (pl.system.syncall) and that of a Group's pipe (the
# memory its cube and vector halves pass tiles through; 0 for other kernels), and that
# of the block's SDMA workspace (pl.prefetch: its prefetches issued, landed, bytes)
HIDDEN_ARGS = 6
SDMA_WORKSPACE_WORDS = 4
# a Group's pipe: a 64-byte header, a 64-byte (head, tail) per channel -- (to the AIVs, to
# the AIC) x (AIV 0, AIV 1) -- then per channel PIPE_DEPTH slots of a 64-byte header and
# PIPE_SLOT_BYTES of tile data (the largest buffer a tile is pushed from: UB or L0C,
# 256 KiB at most; pl.cross_core_slot(slot_num=n) asks for n slots)
PIPE_DEPTH = 2
PIPE_SLOT_BYTES = 256 * 1024
PIPE_CHANNELS = 4
PIPE_EVENT_BYTES = 16 * 8 * 8    # after the slots: 16 cross-core events, 8 counters each


def pipe_bytes(depth: int = PIPE_DEPTH, slot_bytes: int = PIPE_SLOT_BYTES, ids: int = 1) -> int:
    """(a hand-written group's pipes: `ids` pipes of PIPE_CHANNELS channels, slots of the
    largest size its pl.*_initialize_pipe declare)"""
    channels = PIPE_CHANNELS * ids
    return 64 + channels * 64 + channels * depth * (64 + slot_bytes) + PIPE_EVENT_BYTES


class PyptoRuntimeApi(ctypes.Structure):
    _fields_ = [
        ("ctx", ctx_t),
        ("alloc_tensor", ALLOC_FN),
        ("view", VIEW_FN),
        ("submit", SUBMIT_FN),
        ("scope_begin", SCOPE_BEGIN_FN),
        ("scope_end", SCOPE_END_FN),
        ("read_scalar", READ_SCALAR_FN),
        ("fail", FAIL_FN),
        ("tensor_dim", TENSOR_DIM_FN),
        ("submit_task", SUBMIT_TASK_FN),
        ("predicate_next", PREDICATE_FN),
        ("reshape", VIEW_SHAPE_FN),
        ("transpose", TRANSPOSE_FN),
    ]


def bind_kernel_entry(lib: ctypes.CDLL, symbol: str = KERNEL_ENTRY):
    fn = getattr(lib, symbol)
    fn.argtypes = [i64p, ctypes.c_char_p, ctypes.c_int32]
    fn.restype = ctypes.c_int
    return fn


def bind_move_ns(lib: ctypes.CDLL):
    """The kernel's pypto_kernel_move_ns (read-and-clear the calling thread's data-movement
    ns, pto_sim_base.hpp), or None for a kernel built without it."""
    fn = getattr(lib, MOVE_NS, None)
    if fn is None:
        return None
    fn.argtypes = []
    fn.restype = ctypes.c_int64
    return fn


def bind_orchestration_entry(lib: ctypes.CDLL, name: str = ORCHESTRATION_ENTRY):
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.POINTER(PyptoRuntimeApi), i64p, u64p]
    fn.restype = ctypes.c_int32
    return fn


class CoreGroup(NamedTuple):
    """How a kernel runs on a core group: a Group (`mix`: its <name>_aic and <name>_aiv
    halves) or a vector kernel split over two AIVs (pl.split, no cube half)."""
    cube: Any                  # the cube half's entry, or None
    vector: Any                # the vector half's entry
    aivs: int                  # how many AIVs run the vector half
    slots: int                 # the pipe's slots per channel
    slot_bytes: int = PIPE_SLOT_BYTES    # the largest tile a slot holds
    ids: int = 1               # how many pipes (a hand-written group's pipe ids)
    events: bool = False       # it raises or awaits cross-core events (their counters: in a pipe)


def core_needs(core_type: str, group) -> tuple:
    """The modelled cores one block of a kernel takes, ((core type, count), ...): a core
    of its type, or, on a core group, an AIC (a Group) and its AIVs."""
    if not group:
        return ((core_type, 1),)
    return (("aic", 1), ("aiv", group.aivs)) if group.cube is not None else (("aiv", group.aivs),)


def kernel_info(lib: ctypes.CDLL) -> dict:
    """What ptoas wrote of the kernel (pypto_kernel_info); {} for a hand-written kernel that
    says nothing of itself."""
    import json
    if not hasattr(lib, "pypto_kernel_info"):
        return {}
    info_fn = getattr(lib, "pypto_kernel_info")
    info_fn.restype = ctypes.c_char_p
    return json.loads(info_fn().decode("utf-8"))


def core_group(lib: ctypes.CDLL, name: str, core_type: str, info: dict | None = None) -> tuple:
    """The kernel's CoreGroup, from its info (read here when not given); () for a kernel that
    runs on one core."""
    info = kernel_info(lib) if info is None else info
    if core_type == "aic" or (core_type == "aiv" and not info):
        return ()
    subs, slots = int(info.get("vector_halves", 1)), int(info.get("pipe_slots", PIPE_DEPTH))
    slot_bytes, ids = int(info.get("pipe_slot_bytes") or PIPE_SLOT_BYTES), int(info.get("pipe_ids", 1))
    if core_type == "aiv":
        return () if subs == 1 else CoreGroup(None, bind_kernel_entry(lib), subs, slots,
                                              events=bool(info.get("events")))
    base = KERNEL_ENTRY + "__" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    return CoreGroup(bind_kernel_entry(lib, base + "_aic"), bind_kernel_entry(lib, base + "_aiv"),
                     subs, slots, slot_bytes, ids)
