"""The HOST level's control plane: a `@pl.jit.host` function is run as Python, once, at
compile time, with the caller's tensors -- the way a host orchestrator runs on the host
CPU. While it runs, `pl.range` is Python's range, `pld.world_size()` the rank count,
`pld.alloc_window_buffer` / `pld.window` declare window memory, and a `@pl.jit` call
with `device=r` records a launch on rank r instead of running. What it records (a
`HostTrace`) is the host plan the distributed compile builds and runs."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

_current: ContextVar["HostTrace | None"] = ContextVar("pypto_host_trace", default=None)


@dataclass(eq=False)
class WindowBuffer:
    """`pld.alloc_window_buffer(shape, dtype)`: the same buffer in every rank's window."""
    index: int
    shape: tuple
    dtype: Any
    line: int = 0
    name: str = ""


@dataclass(eq=False)
class Window:
    """`pld.window(buf, shape, dtype)`: a view of a window buffer passed to a device program."""
    buffer: WindowBuffer
    shape: tuple
    dtype: Any


@dataclass
class Launch:
    rank: int
    function: Any          # the @pl.jit function called
    args: tuple
    kwargs: dict
    line: int


@dataclass
class HostTrace:
    world_size: int
    filename: str = "<host>"
    windows: list = field(default_factory=list)
    launches: list = field(default_factory=list)
    undirected: int = 0          # launches made without device=r so far
    callbacks: list = field(default_factory=list)     # SubWorker calls (after so many launches)


@dataclass
class Callback:
    name: str
    args: tuple
    after: int             # the launches before it (it runs once they are done)
    line: int


def active() -> "HostTrace | None":
    return _current.get()


@contextmanager
def tracing(trace: HostTrace):
    token = _current.set(trace)
    try:
        yield trace
    finally:
        _current.reset(token)


def caller_line(trace: HostTrace) -> int:
    """The line of the host function's source that is running (for errors and the plan)."""
    import sys
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename != trace.filename:
        f = f.f_back
    return f.f_lineno if f is not None else 0


@dataclass(frozen=True, eq=False)
class TensorRef:
    """A host tensor parameter (or a contiguous part of one) while a @pl.program's HOST
    function is traced, where no tensors exist yet: its parameter, byte offset, shape and
    dtype. `x[r]` (ints on the leading dims, then whole dims) is the part rank r gets."""
    param: int
    offset: int
    shape: tuple
    dtype: object

    @property
    def nbytes(self) -> int:
        n = self.dtype.nbytes
        for d in self.shape:
            n *= d
        return n

    def __getitem__(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        off, shape = self.offset, list(self.shape)
        for k in keys:
            if isinstance(k, bool) or not isinstance(k, int):
                raise TypeError(f"a host tensor is indexed by ints on its leading dims (x[r], x[r, i]), got {k!r}")
            if not shape or not -shape[0] <= k < shape[0]:
                raise IndexError(f"index {k} is out of range for a host tensor of shape {list(self.shape)}")
            inner = self.dtype.nbytes
            for d in shape[1:]:
                inner *= d
            off += (k % shape[0]) * inner
            shape = shape[1:]
        return TensorRef(self.param, off, tuple(shape), self.dtype)
