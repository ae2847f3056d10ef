"""The shortest launch: a registered program of one kernel, called again with the very
tensors of its last replay.

Once a handle's launch was a graph replay (executor.py) of one task on one core per
block (its blocks not started together), with no intermediate buffers, a Plan keeps
what that launch worked out: the
arguments' identity (data address, dtype, shape, contiguity; scalar values), the
kernel and its argument array. A later call whose arguments show the same identity
would bind to the same buffers and replay the same task, so it calls the kernel on the
calling thread straight away (an SPMD task's blocks spread over n_threads lanes, the
calling thread one of them) and records the launch as the replay it is -- no binding,
no Launch, no queue (the device is idle: the worker's run lock is held).
Anything else (other tensors, DFX files asked for) takes the full path.
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import operator
import sys
import time

from . import abi, lanes
from .device import _HELPERS
from .errors import KernelExecutionError
from .records import RunRecord, TaskRecord


def identity(args: tuple):
    """What binding these arguments depends on, or None for arguments the plan does not
    cover (anything but contiguous CPU torch tensors and Python scalars)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    tensor = torch.Tensor
    out = []
    for a in args:
        t = type(a)
        if t is tensor:
            if not a.is_cpu or not a.is_contiguous():
                return None
            out.append((a.data_ptr(), a.dtype, a.shape))
        elif t is float:
            out.append((t, a.hex()))          # (0.0 == -0.0, their bits are not)
        elif t is int or t is bool:
            out.append((t, a))
        else:
            return None
    return tuple(out)


class Plan:
    __slots__ = ("identity", "kernel", "spec", "args", "barrier", "errs", "scopes", "n_threads", "lanes",
                 "program", "returned")

    def __init__(self, ident, kernel, spec, args, barrier, scopes, n_threads, program, returned):
        self.identity, self.kernel, self.spec = ident, kernel, spec
        self.args, self.barrier, self.scopes = args, barrier, scopes     # args: one per block
        self.n_threads = n_threads
        self.program = program
        # what a call returns from its arguments (the arguments of that call: the same tensors
        # by identity, maybe other Python objects)
        self.returned = (None if not returned else operator.itemgetter(*returned))
        self.errs = [ctypes.create_string_buffer(abi.ERR_LEN)
                     for _ in range(min(n_threads, spec.blocks))]
        self.lanes = lanes.make(kernel.entry, args, len(self.errs)) if spec.blocks > 1 else None


def make_plan(args: tuple, graph, n_threads: int, program: str, returned: list) -> Plan | None:
    """A Plan from a launch that replayed `graph` with `args`, if it is of the kind;
    `returned`: the indices of the arguments a call returns."""
    ident = identity(args)
    prep = graph.prepared
    if ident is None or prep is None or len(graph.tasks) != 1 or \
            len(graph.buffers) != graph.n_external:
        return None
    spec = graph.tasks[0]
    kernel, descs, per_block = prep[1][0]
    if (spec.sync_start and spec.blocks > 1) or spec.predicate is not None or descs is None or \
            getattr(kernel, "group", ()) or kernel.entry is None:
        return None
    return Plan(ident, kernel, spec, per_block, descs[1], list(graph.scopes), n_threads, program, returned)


def _lane(plan: Plan, lane: int, claim, times: list, statuses: list) -> None:
    """Blocks claimed from `claim` (shared by the lanes) one after another, as on the C lanes:
    a slow block holds back no other, and no block starts after one failed."""
    entry, args, err = plan.kernel.entry, plan.args, plan.errs[lane]
    clock = time.perf_counter_ns
    for b in claim:                      # (next() on a count is atomic under the GIL)
        if b >= len(args) or statuses:
            return
        err[0] = b"\0"
        start = clock()
        status = int(entry(args[b], err, abi.ERR_LEN))
        times[b] = (start, clock())
        if status != 0:
            statuses.append((times[b][1], b, status, err.value.decode("utf-8", "replace")))


def _blocks(plan: Plan):
    """(start, end, per-block times, status, message) of an SPMD task's blocks on the lanes."""
    c_lanes = plan.lanes
    ran = lanes.run_blocks(c_lanes) if c_lanes is not None else None
    if ran is not None:
        times, failed = ran
        start, end = c_lanes.launch.first, c_lanes.launch.last
    else:
        times, failed = [(0, 0)] * plan.spec.blocks, []
        claim = itertools.count()
        _HELPERS.run_all([functools.partial(_lane, plan, i, claim, times, failed)
                          for i in range(len(plan.errs))])
        start, end = min(t[0] for t in times if t[0]), max(t[1] for t in times)
        times = tuple(times)
    if not failed:
        return start, end, times, 0, ""
    first = min(failed)                  # the block that failed first is the task's failure
    return start, end, times, first[2], first[3]


def call(worker, plan: Plan, args: tuple, call_ns: int):
    """Run the plan's kernel once with `args` (whose identity is the plan's): (what the call
    returns, the launch's record); raises the KernelExecutionError a full launch would."""
    record = RunRecord(plan.program, worker.platform, worker.runtime)
    record.call_ns = call_ns
    record.replayed = True
    record.n_threads = plan.n_threads
    record.scopes = list(plan.scopes)
    kernel, spec = plan.kernel, plan.spec
    with worker._run_lock:               # (the device is idle while it is held)
        worker._check_open()
        stats = worker.stats
        stats["launches"] += 1
        stats["graph_replays"] += 1
        plan.barrier[0] = plan.barrier[1] = 0
        record.start_ns = time.perf_counter_ns()
        if spec.blocks == 1:             # (the common case, without the lanes' bookkeeping)
            err = plan.errs[0]
            err[0] = b"\0"
            start = time.perf_counter_ns()
            status = kernel.entry(plan.args[0], err, abi.ERR_LEN)
            end = time.perf_counter_ns()
            times = ()
            message = err.value.decode("utf-8", "replace") if status else ""
        else:
            start, end, times, status, message = _blocks(plan)
        # as the device records a task run by the launching thread on the first free core
        record.tasks = [TaskRecord(spec.index, spec.func_id, kernel.name, kernel.core_type, 0, start,
                                   end, (), plan.n_threads, spec.scope, status, (), (), record.start_ns,
                                   times)]
        record.end_ns = time.perf_counter_ns()
        worker.last_run = record
    if status:
        error = KernelExecutionError(kernel.name, spec.func_id, spec.index, status, message,
                                     kernel.core_type)
        record.error = str(error)
        raise error
    returned = plan.returned
    return (returned(args) if returned is not None else None), record
