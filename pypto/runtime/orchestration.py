"""The runtime API a host orchestration calls (PyptoRuntimeApi), and what it records.

A Recorder answers the orchestration's callbacks: it hands out tensor handles,
creates views, tracks scopes and turns each submit into a TaskSpec whose
dependencies come from the TensorMap. Task specs refer to memory by buffer slot
(external parameters first, then intermediates), never by address, so a recorded
Graph can be bound to new arguments and replayed.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from pypto import dtype as _dt

from . import abi
from .tensormap import Access, Region, TensorMap

MAX_TENSOR_ARGS = 256
DUMMY_KERNEL = -1          # submit_task's kernel id of a task that runs nothing
MAX_BLOCKS = 4096          # blocks of one SPMD launch
MAX_SCALAR_ARGS = 128


class BufferSpec(NamedTuple):
    """One allocation: an external parameter (slot < n_external) or an intermediate."""
    dtype: int                 # DataType code
    shape: tuple
    nbytes: int
    group: int                 # memory group (aliasing externals share one)
    group_offset: int          # byte offset of this buffer within its group


class TensorDesc(NamedTuple):
    """A task's tensor argument: a strided window of a buffer (in elements)."""
    buffer: int
    start_offset: int
    shape: tuple
    strides: tuple
    dtype: int
    direction: int
    dump: bool = False         # tagged for the argument dump (pl.dump_tag, dumps=[...])


class TaskSpec(NamedTuple):
    index: int
    func_id: int
    tensors: tuple             # TensorDesc, ...
    scalars: tuple             # uint64 bit patterns
    deps: tuple                # indices of earlier tasks
    scope: int                 # id of the innermost scope at submit (0: none)
    blocks: int = 1            # an SPMD task runs as this many blocks (pl.spmd(n))
    sync_start: bool = False   # its blocks start together
    predicate: tuple | None = None   # (buffer, byte offset, dtype code, cmp, value): run only if


@dataclass
class Graph:
    """A whole task graph (HOST_BUILD_GRAPH), replayable against new arguments with
    the same binding key."""
    key: Any
    buffers: list[BufferSpec]
    n_external: int
    tasks: list[TaskSpec] = field(default_factory=list)
    scopes: list = field(default_factory=list)
    build_ns: int = 0
    reads_data: bool = False      # the orchestration read tensor elements: not replayable
    prepared: Any = None          # (addresses, per task (kernel, descs, args)) of the last run

    @property
    def intermediates(self) -> list[BufferSpec]:
        return self.buffers[self.n_external:]


class _Ref:
    """A handle's window. `offsets` are in the coordinates of its layout: the buffer's own
    (layout None), or that of a reshape, whose windows are compared by bytes with others."""
    __slots__ = ("buffer", "dtype", "offsets", "shape", "strides", "start", "layout")

    def __init__(self, buffer, dtype, offsets, shape, strides, start=0, layout=None):
        self.buffer, self.dtype, self.offsets = buffer, dtype, offsets
        self.shape, self.strides, self.start = shape, strides, start
        self.layout = layout            # None, or (layout key, its full shape)


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


class Recorder:
    """Answers one orchestration run's API calls.

    on_task(spec) receives every accepted task; on_alloc(slot, spec) every new
    intermediate; alive(task) (optional) tells the TensorMap which earlier tasks can
    still constrain new ones; on_read(buffer, byte offset, nbytes, writers) answers an
    element read of the orchestration once the tasks `writers` are done (None: the
    run cannot read tensor data).
    """

    def __init__(self, chip, buffers: list[BufferSpec],
                 on_task: Callable[[TaskSpec], None],
                 on_alloc: Callable[[int, BufferSpec], None] | None = None,
                 alive: Callable[[int], bool] | None = None,
                 next_group: int = 0,
                 on_read: Callable[[int, int, int, list], bytes] | None = None):
        self.chip = chip
        self.buffers = list(buffers)
        self.n_external = len(buffers)
        self.on_task, self.on_alloc, self.alive = on_task, on_alloc, alive
        self.on_read = on_read
        self.reads = 0                  # elements the orchestration read
        self.pending_predicate = None   # predicate_next's, for the next submit
        self._layouts = 0               # reshapes made (each a layout of its own)
        self.tensormap = TensorMap({slot: tuple(b.shape) for slot, b in enumerate(buffers)})
        self.refs: dict[int, _Ref] = {}
        for slot, b in enumerate(buffers):
            self.refs[slot + 1] = _Ref(slot, b.dtype, (0,) * len(b.shape), tuple(b.shape),
                                       contiguous_strides(b.shape))
        self._next_handle = len(buffers) + 1
        self._next_group = max([b.group for b in buffers], default=-1) + 1
        self._next_group = max(self._next_group, next_group)
        self.n_tasks = 0
        self.scopes: list[int] = []
        self.manual: list[bool] = []          # per open scope: is it a manual one
        self._scope_ids = itertools.count(1)
        self.scope_log: list[tuple] = []      # (scope id, parent, manual, first task, end task)
        self.error: str | None = None
        self.interrupt: BaseException | None = None

    # -- errors ------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message

    # -- API ---------------------------------------------------------------------------
    def alloc_tensor(self, dtype: int, ndims: int, shape_ptr) -> int:
        if dtype not in _dt.BY_CODE:
            raise ValueError(f"alloc_tensor: unknown dtype code {dtype}")
        if not 0 <= ndims <= abi.MAX_DIMS:
            raise ValueError(f"alloc_tensor: ndims {ndims} outside 0..{abi.MAX_DIMS}")
        shape = tuple(int(shape_ptr[i]) for i in range(ndims))
        if any(n < 0 for n in shape):
            raise ValueError(f"alloc_tensor: negative dimension in shape {list(shape)}")
        count = 1
        for n in shape:
            count *= n
        nbytes = count * _dt.BY_CODE[dtype].nbytes
        spec = BufferSpec(dtype, shape, nbytes, self._next_group, 0)
        self._next_group += 1
        slot = len(self.buffers)
        self.buffers.append(spec)
        self.tensormap.set_root_shape(slot, shape)
        if self.on_alloc is not None:
            self.on_alloc(slot, spec)
        return self._new_handle(_Ref(slot, dtype, (0,) * ndims, shape, contiguous_strides(shape)))

    def view(self, handle: int, ndims: int, shape_ptr, offsets_ptr) -> int:
        base = self._ref(handle, "view")
        if ndims != len(base.shape):
            raise ValueError(f"view: tensor {handle} has {len(base.shape)} dims, view asks for {ndims}")
        shape = tuple(int(shape_ptr[i]) for i in range(ndims))
        offs = tuple(int(offsets_ptr[i]) for i in range(ndims)) if offsets_ptr else (0,) * ndims
        for d, (n, o, full) in enumerate(zip(shape, offs, base.shape)):
            if n < 0 or o < 0 or o > full:
                raise ValueError(
                    f"view: dim {d} window [{o}, {o + n}) is outside tensor {handle} of shape {list(base.shape)}")
        # A window may run past the end, as on the device: the reference's programs slice
        # a fixed-size window of a table and read only its first n entries. The kernel
        # sees the window asked for; dependencies count only the part inside the tensor.
        offsets = tuple(a + b for a, b in zip(base.offsets, offs))
        start = base.start
        for o, st in zip(offs, base.strides):
            start += o * st
        return self._new_handle(_Ref(base.buffer, base.dtype, offsets, shape, base.strides, start,
                                     base.layout))

    def reshape(self, handle: int, ndims: int, shape_ptr) -> int:
        """The same elements, in row-major order, as another shape (a contiguous window)."""
        base = self._ref(handle, "reshape")
        if not 1 <= ndims <= abi.MAX_DIMS:
            raise ValueError(f"reshape: {ndims} dims (1 .. {abi.MAX_DIMS})")
        shape = tuple(int(shape_ptr[i]) for i in range(ndims))
        if any(n < 0 for n in shape) or _count(shape) != _count(base.shape):
            raise ValueError(f"reshape: tensor {handle} of shape {list(base.shape)} has "
                             f"{_count(base.shape)} elements, not the {_count(shape)} of {list(shape)}")
        if tuple(base.strides) != contiguous_strides(base.shape):
            raise ValueError(f"reshape: tensor {handle} is a window with gaps (shape "
                             f"{list(base.shape)}, strides {list(base.strides)}); reshape a "
                             f"contiguous tensor")
        self._layouts += 1
        return self._new_handle(_Ref(base.buffer, base.dtype, (0,) * ndims, shape,
                                     contiguous_strides(shape), base.start,
                                     ((base.buffer, "reshape", self._layouts), shape)))

    def transpose(self, handle: int, axis1: int, axis2: int) -> int:
        """The same window with two dims swapped: a strided view (kernels read it through
        its strides). Its windows are a layout of their own, compared with others by bytes."""
        base = self._ref(handle, "transpose")
        n = len(base.shape)
        if not (0 <= axis1 < n and 0 <= axis2 < n):
            raise ValueError(f"transpose: axes {axis1}, {axis2} of a {n}-dim tensor {handle}")
        perm = list(range(n))
        perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
        root_shape = self.buffers[base.buffer].shape if base.layout is None else base.layout[1]
        swap = lambda xs: tuple(xs[p] for p in perm)     # noqa: E731
        self._layouts += 1
        layout = ((base.buffer, "transpose", self._layouts),
                  swap(root_shape) if len(root_shape) == n else tuple(root_shape))
        return self._new_handle(_Ref(base.buffer, base.dtype, swap(base.offsets), swap(base.shape),
                                     swap(base.strides), base.start, layout))

    def submit(self, kernel_id: int, n_tensors: int, tensors_ptr, dirs_ptr,
               n_scalars: int, scalars_ptr, n_deps: int = 0, deps_ptr=None,
               blocks: int = 1, sync_start: int = 0) -> int:
        """Accept one task; returns its id. kernel_id -1 is a task that runs nothing."""
        if self.error is not None:
            raise _Refused(f"submit of kernel {kernel_id} refused after an earlier error")
        if not 1 <= blocks <= MAX_BLOCKS:
            raise ValueError(f"submit: {blocks} blocks (an SPMD launch runs 1 .. {MAX_BLOCKS})")
        predicate, self.pending_predicate = self.pending_predicate, None
        explicit = set()
        for i in range(n_deps):
            d = int(deps_ptr[i])
            if d >= self.n_tasks:
                raise ValueError(f"submit: dependency {d} names no task submitted before "
                                 f"(tasks so far: {self.n_tasks})")
            if d >= 0:
                explicit.add(d)
        if kernel_id == DUMMY_KERNEL:
            index = self.n_tasks
            spec = TaskSpec(index, DUMMY_KERNEL, (), (), tuple(sorted(explicit)),
                            self.scopes[-1] if self.scopes else 0)
            self.n_tasks += 1
            self.on_task(spec)
            return index
        kernel = self.chip.kernel(kernel_id)
        if kernel is None:
            known = ", ".join(str(k) for k in sorted(self.chip.kernels)) or "none"
            raise ValueError(f"submit: unknown kernel id {kernel_id} (known: {known})")
        if not 0 <= n_tensors <= MAX_TENSOR_ARGS or not 0 <= n_scalars <= MAX_SCALAR_ARGS:
            raise ValueError(f"submit of '{kernel.name}': {n_tensors} tensors / {n_scalars} scalars "
                             f"(limits {MAX_TENSOR_ARGS} / {MAX_SCALAR_ARGS})")
        if kernel.signature and len(kernel.signature) != n_tensors:
            raise ValueError(f"submit of '{kernel.name}': {n_tensors} tensor arguments, its signature "
                             f"has {len(kernel.signature)}")
        descs, accesses = [], []
        for i in range(n_tensors):
            handle = int(tensors_ptr[i])
            direction = int(dirs_ptr[i])
            dump = bool(direction & abi.DIR_DUMP)
            direction &= ~abi.DIR_DUMP
            if direction not in abi.DIR_NAMES:
                raise ValueError(f"submit of '{kernel.name}': argument {i} has unknown direction {direction}")
            ref = self._ref(handle, f"submit of '{kernel.name}' argument {i}")
            descs.append(TensorDesc(ref.buffer, ref.start, ref.shape, ref.strides, ref.dtype, direction,
                                    dump))
            if direction != abi.DIR_NO_DEP:
                region = self._region(ref)
                if region is not None:
                    accesses.append(Access(region, direction in abi.READS, direction in abi.WRITES))
        scalars = tuple(int(scalars_ptr[i]) for i in range(n_scalars))
        index = self.n_tasks
        derived = self.tensormap.add(index, accesses, self.alive)   # (kept for later tasks)
        # a manual scope's tasks wait only for what the orchestration names
        deps = explicit if self.manual[-1:] == [True] else explicit.union(derived)
        pred = None
        if predicate is not None:        # the element is read at dispatch: after its writers
            buffer, offset, dtype, cmp, value, writers = predicate
            deps = deps.union(writers)
            pred = (buffer, offset, dtype, cmp, value)
        spec = TaskSpec(index, kernel_id, tuple(descs), scalars, tuple(sorted(deps)),
                        self.scopes[-1] if self.scopes else 0, int(blocks), bool(sync_start),
                        pred)
        self.n_tasks += 1
        self.on_task(spec)
        return index

    def predicate_next(self, handle: int, ndims: int, idx_ptr, cmp: int, value: float) -> None:
        """The next task runs only if the element compares true with value at dispatch."""
        if not 0 <= cmp <= 5:
            raise ValueError(f"predicate_next: unknown comparison {cmp}")
        ref, elem, region = self._element(handle, ndims, idx_ptr, "predicate_next")
        writers = self.tensormap.writers(region, self.alive) if region is not None else []
        esize = _dt.BY_CODE[ref.dtype].nbytes
        self.pending_predicate = (ref.buffer, elem * esize, ref.dtype, cmp, float(value), writers)

    def _element(self, handle: int, ndims: int, idx_ptr, what: str):
        """(ref, element offset, region) of one element of a handle's window."""
        ref = self._ref(handle, what)
        if ndims != len(ref.shape):
            raise ValueError(f"{what}: tensor {handle} has {len(ref.shape)} dims, got {ndims} indices")
        idx = tuple(int(idx_ptr[i]) for i in range(ndims))
        for d, (i, n) in enumerate(zip(idx, ref.shape)):
            if not 0 <= i < n:
                raise ValueError(f"{what}: index {list(idx)} is outside the tensor's shape "
                                 f"{list(ref.shape)} (dim {d})")
        elem = ref.start + sum(i * st for i, st in zip(idx, ref.strides))
        one = _Ref(ref.buffer, ref.dtype, tuple(o + i for o, i in zip(ref.offsets, idx)),
                   (1,) * ndims, ref.strides, elem, ref.layout)
        return ref, elem, self._region(one)

    def read_scalar(self, handle: int, ndims: int, idx_ptr) -> int:
        """The bits of one element (zero-extended), after its writers so far are done."""
        ref, elem, region = self._element(handle, ndims, idx_ptr, "read_scalar")
        writers = self.tensormap.writers(region, self.alive) if region is not None else []
        if self.on_read is None:
            raise ValueError("read_scalar: this run cannot read tensor data")
        esize = _dt.BY_CODE[ref.dtype].nbytes
        data = self.on_read(ref.buffer, elem * esize, esize, writers)
        self.reads += 1
        return int.from_bytes(data, "little")

    def tensor_dim(self, handle: int, axis: int) -> int:
        ref = self._ref(handle, "tensor_dim")
        if not 0 <= axis < len(ref.shape):
            raise ValueError(f"tensor_dim: axis {axis} of a rank-{len(ref.shape)} tensor")
        return int(ref.shape[axis])

    def scope_begin(self, manual: int) -> None:
        sid = next(self._scope_ids)
        self.scope_log.append([sid, self.scopes[-1] if self.scopes else 0, bool(manual),
                               self.n_tasks, None])
        self.scopes.append(sid)
        self.manual.append(bool(manual))

    def scope_end(self) -> None:
        if not self.scopes:
            raise ValueError("scope_end without a matching scope_begin")
        self.manual.pop()
        sid = self.scopes.pop()
        self.scope_log[sid - 1][4] = self.n_tasks      # scope ids count from 1 in log order

    def finish(self) -> None:
        if self.scopes and self.error is None:
            self.fail(f"orchestration returned with {len(self.scopes)} scope(s) still open "
                      "(scope_begin without scope_end)")

    # -- helpers -----------------------------------------------------------------------
    def _new_handle(self, ref: _Ref) -> int:
        handle = self._next_handle
        self._next_handle += 1
        self.refs[handle] = ref
        return handle

    def _ref(self, handle: int, what: str) -> _Ref:
        ref = self.refs.get(handle)
        if ref is None:
            raise ValueError(f"{what}: {handle} is not a tensor handle")
        return ref

    def _region(self, ref: _Ref) -> Region | None:
        buf = self.buffers[ref.buffer]
        shape = ref.shape
        root, root_shape = (ref.buffer, buf.shape) if ref.layout is None else ref.layout
        if len(root_shape) == len(shape) and any(o + n > full for o, n, full in
                                                 zip(ref.offsets, shape, root_shape)):
            shape = tuple(max(0, min(n, full - o)) for o, n, full in zip(ref.offsets, shape, root_shape))
        if any(n == 0 for n in shape):
            return None
        esize = _dt.BY_CODE[buf.dtype].nbytes
        box = tuple(zip(ref.offsets, map(int.__add__, ref.offsets, shape)))
        first = last = ref.start
        for n, st in zip(shape, ref.strides):
            last += (n - 1) * st
        lo = buf.group_offset + first * esize
        hi = buf.group_offset + (last + 1) * esize
        return Region(buf.group, root, box, lo, hi)


class _Refused(Exception):
    """A submit refused because the run already failed (not a new error)."""


# -- the C callbacks -------------------------------------------------------------------
_ACTIVE: dict[int, Recorder] = {}
_ACTIVE_LOCK = threading.Lock()
_CTX_IDS = itertools.count(1)


def _guard(ctx, what: str, call, failed):
    rec = _ACTIVE.get(ctx or 0)
    if rec is None:
        return failed
    try:
        return call(rec)
    except _Refused:
        return failed
    except Exception as e:  # never let an exception cross into C
        rec.fail(f"{what}: {e}" if not str(e).startswith(what) else str(e))
        return failed
    except BaseException as e:  # KeyboardInterrupt & co: stop the run, re-raised later
        rec.interrupt = rec.interrupt or e
        rec.fail(f"{what}: interrupted ({type(e).__name__})")
        return failed


def _c_alloc(ctx, dtype, ndims, shape):
    return _guard(ctx, "alloc_tensor", lambda r: r.alloc_tensor(dtype, ndims, shape), 0)


def _c_view(ctx, tensor, ndims, shape, offsets):
    return _guard(ctx, "view", lambda r: r.view(tensor, ndims, shape, offsets), 0)


def _c_submit(ctx, kernel_id, n_tensors, tensors, dirs, n_scalars, scalars):
    def call(r):
        r.submit(kernel_id, n_tensors, tensors, dirs, n_scalars, scalars)
        return 0
    return _guard(ctx, "submit", call, 1)


def _c_read_scalar(ctx, tensor, ndims, indices, bits):
    def call(r):
        bits[0] = r.read_scalar(tensor, ndims, indices)
        return 0
    return _guard(ctx, "read_scalar", call, 1)


def _c_fail(ctx, message):
    def call(r):
        r.fail((message or b"").decode("utf-8", "replace"))
    _guard(ctx, "fail", call, None)


def _c_submit_task(ctx, kernel_id, n_tensors, tensors, dirs, n_scalars, scalars, n_deps, deps,
                   blocks, sync_start):
    return _guard(ctx, "submit", lambda r: r.submit(kernel_id, n_tensors, tensors, dirs, n_scalars,
                                                      scalars, n_deps, deps, blocks, sync_start), -1)


def _c_reshape(ctx, tensor, ndims, shape):
    return _guard(ctx, "reshape", lambda r: r.reshape(tensor, ndims, shape), 0)


def _c_transpose(ctx, tensor, axis1, axis2):
    return _guard(ctx, "transpose", lambda r: r.transpose(tensor, axis1, axis2), 0)


def _c_predicate(ctx, tensor, ndims, indices, cmp, value):
    _guard(ctx, "predicate", lambda r: r.predicate_next(tensor, ndims, indices, cmp, value), None)


def _c_tensor_dim(ctx, tensor, axis):
    return _guard(ctx, "tensor_dim", lambda r: r.tensor_dim(tensor, axis), -1)


def _c_scope_begin(ctx, manual):
    _guard(ctx, "scope_begin", lambda r: r.scope_begin(manual), None)


def _c_scope_end(ctx):
    _guard(ctx, "scope_end", lambda r: r.scope_end(), None)


# Module-level callback objects: they must outlive every call into C.
_CALLBACKS = (abi.ALLOC_FN(_c_alloc), abi.VIEW_FN(_c_view), abi.SUBMIT_FN(_c_submit),
              abi.SCOPE_BEGIN_FN(_c_scope_begin), abi.SCOPE_END_FN(_c_scope_end),
              abi.READ_SCALAR_FN(_c_read_scalar), abi.FAIL_FN(_c_fail),
              abi.TENSOR_DIM_FN(_c_tensor_dim), abi.SUBMIT_TASK_FN(_c_submit_task),
              abi.PREDICATE_FN(_c_predicate), abi.VIEW_SHAPE_FN(_c_reshape),
              abi.TRANSPOSE_FN(_c_transpose))


def run_orchestration(recorder: Recorder, scalars: list[int]) -> int:
    """Call the orchestration entry with handles 1..T for the external tensors.
    Returns the entry's status; API misuse is left in recorder.error."""
    ctx = next(_CTX_IDS)
    api = abi.PyptoRuntimeApi(ctypes.c_void_p(ctx), *_CALLBACKS)
    n = recorder.n_external
    tensors = (ctypes.c_int64 * max(n, 1))(*range(1, n + 1))
    svals = (ctypes.c_uint64 * max(len(scalars), 1))(*scalars)
    with _ACTIVE_LOCK:
        _ACTIVE[ctx] = recorder
    try:
        return int(recorder.chip.orchestration.entry(ctypes.byref(api), tensors, svals))
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.pop(ctx, None)
        recorder.finish()
