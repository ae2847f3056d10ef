"""The simulated chip: core slots, a pool of host threads, and launches.

A Device owns a pool of Python threads (as many as the host has CPUs, at least 2).
Each thread takes a ready task whose core type (aic/aiv) has a free modelled core
slot, calls the kernel through ctypes (which releases the GIL, so kernels really run
in parallel), then releases the task's successors. A Launch is one run of a program on
the device: its tasks, its intermediate buffers, its records and its first error.
"""
from __future__ import annotations

import ctypes
import functools
import heapq
import queue
import struct
import os
import threading
import time
from collections import deque

from pypto import dtype as _dt

from . import abi
from .config import CORE_SLOTS
from .errors import KernelExecutionError, SimulatorError
from .orchestration import DUMMY_KERNEL, BufferSpec, Graph, TaskSpec
from .records import RunRecord, TaskRecord


def host_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(2, n)


ALL_BLOCKS = -1        # a ready-queue entry running every block of a sync_start task


def _call(task, block: int, err=None, entry=None, args=None) -> tuple:
    """Run one block of a task: (status, message, start ns, end ns, ns of data movement)."""
    err = err if err is not None else ctypes.create_string_buffer(abi.ERR_LEN)
    err[0] = b"\0"
    message = ""
    moves = task.kernel.move_ns if task.launch.record.measure_moves else None
    if moves is not None:
        moves()             # (clears what this thread's earlier calls left)
    start = time.perf_counter_ns()
    try:
        status = int((entry or task.kernel.entry)(task.args[block] if args is None else args,
                                                  err, abi.ERR_LEN))
    except BaseException as e:  # a ctypes-level failure, not a kernel status
        status, message = -1, f"{type(e).__name__}: {e}"
    end = time.perf_counter_ns()
    moved = moves() if moves is not None else 0
    if status != 0 and not message:
        message = err.value.decode("utf-8", "replace")
    return status, message, start, end, moved


class _Helpers:
    """Threads kept for the parts of a block that must run at once (a core group's halves,
    the blocks of a sync_start task): starting a thread per part per launch cost more
    than a small kernel. Each part gets an idle helper of its own (a new one when none is
    idle), so the parts really run together."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: list = []

    def run_all(self, fns: list) -> list:
        """Run every fn at once, the last on the calling thread; their results in order."""
        results = [None] * len(fns)
        done = []
        for i, fn in enumerate(fns[:-1]):
            with self._lock:
                jobs = self._idle.pop() if self._idle else None
            if jobs is None:
                jobs = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(jobs,), daemon=True,
                                 name="pypto-helper").start()
            finished = threading.Event()
            jobs.put((fn, results, i, finished))
            done.append(finished)
        try:
            results[-1] = fns[-1]()
        finally:
            for finished in done:
                finished.wait()
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results

    def _serve(self, jobs) -> None:
        while True:
            fn, results, i, finished = jobs.get()
            try:
                results[i] = fn()
            except BaseException as e:      # handed to the caller; the helper lives on
                results[i] = e
            finally:
                with self._lock:
                    self._idle.append(jobs)
                finished.set()


_HELPERS = _Helpers()


def _gang(task) -> list:
    """Every block of a sync_start task, each on a thread of its own, released together
    (ctypes drops the GIL in the kernel call, so they run at once)."""
    n = task.spec.blocks
    gate = threading.Barrier(n)

    def one(b):
        try:
            gate.wait()
        except threading.BrokenBarrierError:
            pass
        return _group_call(task, b) if getattr(task.kernel, "group", ()) else _call(task, b)

    return _HELPERS.run_all([functools.partial(one, b) for b in range(n)])


def _group_call(task, block: int) -> tuple:
    """One block of a kernel that runs on a core group: a Group's cube half and its vector
    half (on one AIV, or on two when split), or a split vector kernel's two AIVs -- at once,
    each on a thread of its own (a Group's halves pass tiles through the block's pipe);
    the first failure is the block's."""
    group = task.kernel.group
    per_aiv = task.args[block]             # one argument array per AIV (its index differs)
    runs = ([(group.cube, per_aiv[0])] if group.cube is not None else []) + \
        [(group.vector, a) for a in per_aiv]

    def one(i):
        err = ctypes.create_string_buffer(abi.ERR_LEN)
        return _call(task, block, err, *runs[i])

    results = _HELPERS.run_all([functools.partial(one, i) for i in range(len(runs))])
    failed = [r for r in results if r[0] != 0]
    # the half that failed first, not one that then stopped because its pipe did
    first = [r for r in failed if r[0] != abi.KERNEL_STOPPED] or failed
    status, message = (first[0][0], first[0][1]) if first else (0, "")
    return (status, message, min(r[2] for r in results), max(r[3] for r in results),
            sum(r[4] for r in results))


def _element_value(raw: bytes, d) -> float:
    """One tensor element's value, from its bytes."""
    if d.name == "FP32":
        return struct.unpack("<f", raw)[0]
    if d.name == "FP16":
        return struct.unpack("<e", raw)[0]
    if d.name == "BF16":
        return struct.unpack("<f", b"\0\0" + raw)[0]
    if d.name == "BOOL":
        return float(raw != b"\0")
    return float(int.from_bytes(raw, "little", signed=not (d.name.startswith("UINT") or d.is_float)))


def _new_pipe(group):
    """Zeroed memory for one block of a Group (pto_sim's tpush/tpop): its header says the
    slot size, the slots per channel and the number of pipes."""
    from .tensors import aligned_buffer
    buf = aligned_buffer(abi.pipe_bytes(group.slots, group.slot_bytes, group.ids))
    header = (ctypes.c_int64 * 5).from_address(buf.ctypes.data)
    header[0], header[1], header[3], header[4] = group.slot_bytes, group.slots, group.ids, group.aivs
    return buf


class _Dummy:
    """The 'kernel' of a task that runs nothing (pl.system.task_dummy)."""
    name, core_type, entry, needs, move_ns = "task_dummy", "aiv", None, (("aiv", 1),), None


_DUMMY = _Dummy()


class Task:
    """One submitted task; an SPMD task runs as `blocks` instances, one argument array each
    (they differ in the hidden block index), and is done when all of them are."""
    __slots__ = ("launch", "spec", "kernel", "pending", "successors", "done", "started",
                 "descs", "args", "deps", "ready_ns", "left", "first_start", "last_end",
                 "status", "message", "slot", "thread", "active", "times", "skipped", "moved")

    def __init__(self, launch: "Launch", spec: TaskSpec, kernel, descs, args):
        self.launch, self.spec, self.kernel = launch, spec, kernel
        self.descs, self.args = descs, args      # args: one ctypes array per block
        self.pending = 0
        self.successors: list[Task] = []
        self.done = False
        self.started = False
        self.deps: tuple = ()
        self.ready_ns = 0
        self.left = spec.blocks                 # blocks not finished yet
        self.first_start = self.last_end = 0
        self.status, self.message = 0, ""
        self.slot = self.thread = 0
        self.active = 0                         # blocks running now
        self.times: dict = {}                   # block -> (start, end)
        self.skipped = False                    # its predicate was false at dispatch
        self.moved = 0                          # ns its blocks spent moving data


class Device:
    def __init__(self, arch: str, n_threads: int | None = None):
        self.arch = arch
        self.slots = dict(CORE_SLOTS[arch])
        # one lock, two conditions: `cond` wakes pool threads when there is work,
        # `done` wakes a launch waiting for its tasks (so neither wakes the other's
        # sleepers: each wake-up is a GIL hand-off)
        lock = threading.RLock()
        self.cond = threading.Condition(lock)
        self.done = threading.Condition(lock)
        self._ready = {t: deque() for t in (*self.slots, "mix")}   # mix: an AIC and its AIV(s)
        self._types = list(self._ready)
        self._free = {t: list(range(n)) for t, n in self.slots.items()}
        total = sum(self.slots.values())
        self.n_threads = max(1, min(n_threads or host_threads(), total))
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._turn = 0
        # entries running now: at most n_threads, whether pool threads or the launching
        # thread run them (one more runner than CPUs would only time-slice them)
        self._busy = 0
        self._caller_err = ctypes.create_string_buffer(abi.ERR_LEN)

    # -- pool lifetime -----------------------------------------------------------------
    def start(self) -> None:
        with self.cond:
            if self._threads or self._stopping:
                return
            for i in range(self.n_threads):
                t = threading.Thread(target=self._loop, args=(i,), daemon=True,
                                     name=f"pypto-core-{i}")
                self._threads.append(t)
                t.start()

    def stop(self) -> None:
        with self.cond:
            self._stopping = True
            self.cond.notify_all()
            self.done.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
        self._threads = []

    # -- scheduling (call with self.cond held) -------------------------------------------
    def push_ready(self, task: Task) -> None:
        """Queue a task's blocks (a sync_start task as one entry: its blocks start together)."""
        task.ready_ns = time.perf_counter_ns()
        q = self._ready[task.kernel.core_type]
        if task.spec.sync_start and task.spec.blocks > 1:
            q.append((task, ALL_BLOCKS))
        else:
            q.extend((task, b) for b in range(task.spec.blocks))

    def purge(self, launch: "Launch") -> None:
        for q in self._ready.values():
            kept = [e for e in q if e[0].launch is not launch]
            q.clear()
            q.extend(kept)

    def _takeable(self) -> bool:
        if self._busy >= self.n_threads:
            return False
        for ctype, q in self._ready.items():
            if q and self._has_free(ctype):
                return True
        return False

    def _take(self):
        """(queue entry, core slot): an entry is (task, block index | ALL_BLOCKS)."""
        if self._busy >= self.n_threads:
            return None
        types = self._types
        n = len(types)
        self._turn = turn = (self._turn + 1) % n
        for i in range(n):
            ctype = types[(turn + i) % n]
            q = self._ready[ctype]
            if q and self._has_free(ctype):
                entry = q.popleft()
                return entry, [(t, heapq.heappop(self._free[t]))
                               for t, k in entry[0].kernel.needs for _ in range(k)]
        return None

    def _has_free(self, ctype: str) -> bool:
        q = self._ready[ctype]
        if not q:
            return False
        free = self._free
        for t, k in q[0][0].kernel.needs:
            if len(free[t]) < k:
                return False
        return True

    def _loop(self, index: int) -> None:
        err = ctypes.create_string_buffer(abi.ERR_LEN)
        while True:
            with self.cond:
                while True:
                    if self._stopping:
                        return
                    got = self._take()
                    if got is not None:
                        break
                    self.cond.wait()
                self._started(got)
            self._run(got, index, err)

    def _started(self, got) -> None:
        """A taken entry is about to run (with self.cond held)."""
        (task, block), _ = got
        self._busy += 1
        if not task.started:
            task.started = True
            task.launch.running += 1
            if task.launch.record.arg_dumps is not None:     # what it reads, before
                from .arg_dump import capture
                capture(task.launch, task, "before_dispatch")
        task.active += task.spec.blocks if block == ALL_BLOCKS else 1
        if self._takeable():        # pass the baton: more work than this thread
            self.cond.notify()

    def _run(self, got, index: int, err) -> None:
        """Run a taken entry (without the lock), then hand back its cores and finish it."""
        (task, block), slot = got
        if block == ALL_BLOCKS:
            results = list(enumerate(_gang(task)))
        elif getattr(task.kernel, "group", ()):
            results = [(block, _group_call(task, block))]
        else:
            results = [(block, _call(task, block, err))]
        with self.cond:
            self._busy -= 1
            for t, i in slot:
                heapq.heappush(self._free[t], i)
            slot = slot[0][1]           # (the record names its first core)
            for b, (status, message, start, end, moved) in results:
                task.times[b] = (start, end)
                task.moved += moved
                task.launch.block_finished(task, status, message, start, end, slot, index)

    def help_until(self, done) -> None:
        """The launching thread runs ready entries itself until `done()` (with self.cond
        held on entry and exit): a small launch then needs no hand-off to a pool thread
        and back. It counts as thread n_threads in the records."""
        err = self._caller_err       # (one launch at a time: its worker's run lock)
        while not done():
            got = self._take() if not self._stopping else None
            if got is None:
                self.done.wait()
                continue
            self._started(got)
            self.cond.release()
            try:
                self._run(got, self.n_threads, err)
            finally:
                self.cond.acquire()


class Launch:
    """One execution of a program on a Device."""

    def __init__(self, device: Device, chip, buffers: list[BufferSpec], addrs: list[int],
                 record: RunRecord, keep_tensors: bool = False):
        self.device = device
        self.chip = chip
        self.buffers = list(buffers)
        self.addrs = list(addrs)
        self.record = record
        self.keep_tensors = keep_tensors
        self.tasks: list[Task] = []
        self.records: dict[int, TaskRecord] = {}
        self.owned = []               # intermediate host buffers (numpy)
        self.remaining = 0            # tasks added and neither finished nor cancelled
        self.running = 0
        self.submitting = True
        self.error: BaseException | None = None
        self.readers = 0              # orchestration reads waiting for tasks to finish

    # -- buffers -----------------------------------------------------------------------
    def alloc(self, slot: int, spec: BufferSpec) -> None:
        from .tensors import aligned_buffer
        while len(self.buffers) <= slot:
            self.buffers.append(None)
            self.addrs.append(0)
        arr = aligned_buffer(spec.nbytes)
        self.owned.append(arr)
        self.buffers[slot] = spec
        self.addrs[slot] = arr.ctypes.data

    def read(self, buffer: int, offset: int, nbytes: int, writers) -> bytes:
        """TENSORMAP_AND_RINGBUFFER: the orchestration reads `nbytes` at `offset` of a
        buffer once the tasks `writers` (those that write them) are done."""
        with self.device.cond:
            self.readers += 1
            try:
                while self.error is None and not all(self.tasks[w].done for w in writers):
                    self.device.done.wait()
            finally:
                self.readers -= 1
            if self.error is not None:
                raise SimulatorError(f"a task it waited for failed: {self.error}")
        return ctypes.string_at(self.addrs[buffer] + offset, nbytes)

    # -- tasks -------------------------------------------------------------------------
    def alive(self, index: int) -> bool:
        return not self.tasks[index].done

    def _make_task(self, spec: TaskSpec) -> Task:
        if spec.func_id == DUMMY_KERNEL:
            return Task(self, spec, _DUMMY, None, None)
        kernel = self.chip.kernel(spec.func_id)
        n_t = len(spec.tensors)
        descs = (abi.PyptoTensor * max(n_t, 1))()
        for d, t in zip(descs, spec.tensors):
            d.addr = self.addrs[t.buffer] or None
            d.start_offset = t.start_offset
            d.ndims = len(t.shape)
            d.dtype = t.dtype
            for i, (n, s) in enumerate(zip(t.shape, t.strides)):
                d.shape[i] = n
                d.strides[i] = s
        n = n_t + len(spec.scalars)
        args = (ctypes.c_int64 * (n + abi.HIDDEN_ARGS))()
        base = ctypes.addressof(descs)
        size = ctypes.sizeof(abi.PyptoTensor)
        for i in range(n_t):
            args[i] = base + i * size
        for j, bits in enumerate(spec.scalars):
            args[n_t + j] = bits - (1 << 64) if bits >= (1 << 63) else bits
        per_block = []
        barrier = (ctypes.c_int64 * 2)()   # the launch's syncall barrier: arrived, round
        pipes = []
        # the SDMA workspaces (pl.prefetch), one per vector core of every block
        aivs = kernel.group.aivs if kernel.group else 1
        words = abi.SDMA_WORKSPACE_WORDS
        sdma = (ctypes.c_int64 * (words * spec.blocks * aivs))() if getattr(kernel, "sdma", False) else None
        for b in range(spec.blocks):     # the hidden arguments: block index, count, subblock
            a = (ctypes.c_int64 * len(args))(*args)
            a[n], a[n + 1], a[n + 2], a[n + 3] = b, spec.blocks, 0, ctypes.addressof(barrier)
            if sdma is not None:
                a[n + 5] = ctypes.addressof(sdma) + b * aivs * words * 8
            group = kernel.group
            if group:      # on a core group: a pipe (a Group's), and an argument array per AIV
                if group.cube is not None or group.events:     # (events count in the pipe)
                    pipes.append(_new_pipe(group))
                    a[n + 4] = pipes[-1].ctypes.data
                subs = [a]
                for sub in range(1, group.aivs):
                    subs.append((ctypes.c_int64 * len(a))(*a))
                    subs[-1][n + 2] = sub
                    if sdma is not None:
                        subs[-1][n + 5] = a[n + 5] + sub * words * 8
                per_block.append(subs)
                continue
            per_block.append(a)
        task = Task(self, spec, kernel, (descs, barrier, pipes, sdma), per_block)   # (kept alive with it)
        return task

    def _graph_tasks(self, graph: Graph) -> list:
        """The graph's tasks; their argument arrays are those of its last run when every
        buffer is where it was then (a replay with the same tensors: nothing to rebuild)."""
        addrs = tuple(self.addrs)
        prep = graph.prepared
        if prep is not None and prep[0] == addrs:
            tasks = []
            for spec, (kernel, descs, args) in zip(graph.tasks, prep[1]):
                if descs is not None:
                    barrier = descs[1]
                    barrier[0] = barrier[1] = 0
                tasks.append(Task(self, spec, kernel, descs, args))
            return tasks
        tasks = [self._make_task(spec) for spec in graph.tasks]
        # a Group's pipes must start zeroed: those tasks are built afresh each run
        if not any(t.descs is not None and t.descs[2] for t in tasks):
            graph.prepared = (addrs, [(t.kernel, t.descs, t.args) for t in tasks])
        return tasks

    def submit(self, spec: TaskSpec) -> None:
        """TENSORMAP_AND_RINGBUFFER: add a task while the orchestration is running; it
        starts as soon as its producers are done."""
        task = self._make_task(spec)
        with self.device.cond:
            if self.error is not None:
                raise SimulatorError("launch already failed")
            self.tasks.append(task)
            self._link(task, spec.deps)
            self.remaining += 1
            if task.pending == 0 and self._ready(task):
                self.device.cond.notify()

    def run_graph(self, graph: Graph) -> None:
        """Add a whole recorded graph at once."""
        tasks = self._graph_tasks(graph)
        with self.device.cond:
            self.tasks = tasks
            for task in tasks:
                self._link(task, task.spec.deps)
            self.remaining += len(tasks)
            ready = sum(1 for task in tasks if task.pending == 0 and self._ready(task))
            # the launching thread takes one itself as it waits (Device.help_until)
            if ready > 1:
                self.device.cond.notify(ready - 1)

    def _ready(self, task: Task) -> bool:
        """A task whose producers are done: queued for a core (True), or, a task that runs
        nothing or whose predicate is false now, finished at once (with device.cond held)."""
        if task.spec.predicate is not None and not self._holds(task.spec.predicate):
            task.skipped = True
        elif task.kernel is not _DUMMY:
            self.device.push_ready(task)
            return True
        now = time.perf_counter_ns()
        task.ready_ns = now
        self.running += 1
        self.finished(task, 0, "", now, now, 0, -1)
        return False

    def _holds(self, predicate) -> bool:
        buffer, offset, dtype, cmp, value = predicate
        d = _dt.BY_CODE[dtype]
        raw = ctypes.string_at(self.addrs[buffer] + offset, d.nbytes)
        x = _element_value(raw, d)
        return (x == value, x != value, x < value, x <= value, x > value, x >= value)[cmp]

    def _link(self, task: Task, deps) -> None:
        live = []
        for d in deps:
            producer = self.tasks[d]
            live.append(d)
            if not producer.done:
                producer.successors.append(task)
                task.pending += 1
        task.deps = tuple(live)

    def block_finished(self, task: Task, status: int, message: str, start: int, end: int,
                       slot: int, thread: int) -> None:
        """One block of a task is done (device.cond held); the task, once all are (or, the
        launch having failed, once none of its blocks still runs: the rest were dropped)."""
        task.active -= 1
        if task.left == task.spec.blocks:
            task.first_start, task.slot, task.thread = start, slot, thread
        task.first_start = min(task.first_start, start)
        task.last_end = max(task.last_end, end)
        if status != 0 and task.status == 0:
            task.status, task.message = status, message
        task.left -= 1
        if not task.done and (task.left == 0 or (self.error is not None and task.active == 0)):
            self.finished(task, task.status, task.message, task.first_start, task.last_end,
                          task.slot, task.thread)

    def finished(self, task: Task, status: int, message: str, start: int, end: int,
                 slot: int, thread: int) -> None:
        """A whole task is done (device.cond held)."""
        task.done = True
        self.running -= 1
        self.remaining -= 1
        spec = task.spec
        try:
            if status == 0 and self.record.arg_dumps is not None and task.kernel is not _DUMMY \
                    and not task.skipped:               # what it wrote, after
                from .arg_dump import capture
                capture(self, task, "after_completion")
            tensors = ()
            if self.keep_tensors:
                tensors = tuple((self.addrs[t.buffer], t.start_offset, t.shape, t.strides, t.dtype,
                                 t.direction) for t in spec.tensors)
            self.records[spec.index] = TaskRecord(
                spec.index, spec.func_id, task.kernel.name, task.kernel.core_type, slot, start,
                end, task.deps, thread, spec.scope, status, tensors,
                spec.scalars if self.keep_tensors else (), task.ready_ns,
                tuple(task.times[b] for b in sorted(task.times)) if spec.blocks > 1 else (),
                task.skipped, task.moved)
            if status != 0:
                self.fail(KernelExecutionError(task.kernel.name, spec.func_id, spec.index, status,
                                               message, task.kernel.core_type))
            if self.error is None:
                ready = 0
                for succ in task.successors:
                    succ.pending -= 1
                    if succ.pending == 0 and self._ready(succ):
                        ready += 1
                if ready:
                    self.device.cond.notify(ready)
            task.successors = []
        except BaseException as e:  # a bug here must fail the launch, not hang it
            self.fail(SimulatorError(f"runtime error after task {spec.index}: {type(e).__name__}: {e}"))
        if self.remaining <= 0 or self.readers:
            self.device.done.notify_all()

    def fail(self, error: BaseException) -> None:
        """Record the first error and cancel every task that has not started (with
        device.cond held)."""
        if self.error is None:
            self.error = error
            self.device.purge(self)
            self.remaining = self.running
            self.device.done.notify_all()

    def fail_locked(self, error: BaseException) -> None:
        with self.device.cond:
            self.fail(error)

    def end_submitting(self) -> None:
        with self.device.cond:
            self.submitting = False
            self.device.done.notify_all()

    def wait(self) -> None:
        with self.device.cond:
            try:
                self.device.help_until(lambda: not self.submitting and self.remaining <= 0)
            except BaseException:   # e.g. KeyboardInterrupt: start nothing more
                self.fail(SimulatorError("launch interrupted"))
                raise
        rec = self.record
        rec.tasks = [self.records[i] for i in sorted(self.records)]
        rec.edges = [(d, t.task_id) for t in rec.tasks for d in t.deps]
        if self.error is not None:
            rec.error = str(self.error)
