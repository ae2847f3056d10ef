"""`import pypto.language.distributed as pld` -- the HOST level of the language.

Host-level names run in a `@pl.jit.host` body (executed as Python at compile time,
pypto.language.host_trace): `pld.world_size()`, `pld.alloc_window_buffer(shape, dtype=)`
and `pld.window(buf, shape, dtype=)`. The device-level names (`pld.get_comm_ctx`,
`pld.rank`, `pld.system.notify` / `wait`, `pld.tensor.put` / `get` / `barrier`,
`pld.tile.remote_load` / `remote_store`, `pld.DistributedTensor`) are parsed inside
kernels into the comm.* operators (pypto.ir.ops.comm).
"""
from __future__ import annotations

import enum
import types

from pypto.errors import PyptoError
from pypto.dtype import UINT8 as _UINT8
from pypto.ir.nodes import AtomicType as _AtomicType
from pypto.language.host_trace import Window, WindowBuffer, active, caller_line


class HostLevelError(PyptoError, RuntimeError):
    """A host-level name used outside a @pl.jit.host body (or with wrong arguments)."""


class NotifyOp(enum.Enum):
    AtomicAdd = 0
    Set = 1


class WaitCmp(enum.Enum):
    Eq = 0
    Ge = 1


def _trace(name: str):
    t = active()
    if t is None:
        raise HostLevelError(f"pld.{name}() is a host-level call: it runs in a @pl.jit.host function "
                             f"while it is compiled", hint="call it in the body of a @pl.jit.host "
                             "function, e.g. `for r in pl.range(pld.world_size()):`")
    return t


def world_size() -> int:
    """The number of ranks the program is compiled for (len(DistributedConfig.device_ids))."""
    return _trace("world_size").world_size


def _dims(name, shape) -> tuple:
    if isinstance(shape, int) or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                                         for d in shape):
        raise HostLevelError(f"pld.{name}: shape must be a list of positive ints, got {shape!r}")
    return tuple(shape)


def alloc_window_buffer(shape, *, dtype=None, name: str = "") -> WindowBuffer:
    """Reserve a buffer of `shape` x `dtype` (or of `shape` bytes, an int and no dtype) in
    every rank's window memory."""
    t = _trace("alloc_window_buffer")
    line = caller_line(t)
    if isinstance(shape, int) and not isinstance(shape, bool):
        if dtype is not None:
            raise HostLevelError("pld.alloc_window_buffer(size_in_bytes) takes no dtype: give a shape with a "
                                 "dtype, or a byte count alone")
        shape, dtype = [shape], _UINT8
    elif dtype is None:
        raise HostLevelError("pld.alloc_window_buffer(shape, dtype=...) requires dtype= (or give a byte count)")
    buf = WindowBuffer(len(t.windows), _dims("alloc_window_buffer", shape), dtype, line,
                       name or _assigned_name(t.filename, line) or f"window{len(t.windows)}")
    if any(w.name == buf.name for w in t.windows):
        raise HostLevelError(f"{t.filename}:{line}: a window buffer named {buf.name!r} is already allocated: "
                             f"window buffer names are unique in a program")
    t.windows.append(buf)
    return buf


def _assigned_name(filename: str, line: int) -> str | None:
    """The variable `name = pld.alloc_window_buffer(...)` binds (the buffer's name, as in the
    reference's dumps)."""
    import linecache
    import re
    m = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*", linecache.getline(filename, line))
    return m.group(1) if m else None


def window(buffer, shape, *, dtype) -> Window:
    """This rank's view of a window buffer, passed to a device program as a
    pld.DistributedTensor argument."""
    _trace("window")
    if not isinstance(buffer, WindowBuffer):
        raise HostLevelError(f"pld.window: the first argument is a pld.alloc_window_buffer(...) result, got "
                             f"{type(buffer).__name__}")
    return Window(buffer, _dims("window", shape), dtype)


def _device_name(display: str, kind: str, **marks):
    """A device-level name: the parser reads it inside kernels (`kind`: "op", found as
    comm.<name>; "not_built"); Python never calls it."""
    def fn(*args, **kwargs):
        raise HostLevelError(f"{display} is a device-level operator: it is parsed inside a kernel, "
                             f"never called by Python")
    fn.__name__ = display.rsplit(".", 1)[-1]
    fn.__qualname__ = display
    fn._pl_kind = kind
    for k, v in marks.items():
        setattr(fn, k, v)
    return fn


def _op(display: str, name: str):
    return _device_name(display, "op", _pl_op=(name, "comm"), _pl_display=display)


def _not_built(display: str, what: str):
    return _device_name(display, "not_built", _pl_hint=f"not built yet: {what}")


get_comm_ctx = _op("pld.get_comm_ctx", "get_comm_ctx")
rank = _op("pld.rank", "rank")
nranks = _op("pld.nranks", "nranks")
remote_load = _op("pld.remote_load", "remote_load")
remote_store = _op("pld.remote_store", "remote_store")
system = types.SimpleNamespace(world_size=world_size, get_comm_ctx=get_comm_ctx, rank=rank, nranks=nranks,
                               notify=_op("pld.system.notify", "notify"),
                               wait=_op("pld.system.wait", "wait"))
tensor = types.SimpleNamespace(alloc_window_buffer=alloc_window_buffer, window=window,
                               put=_op("pld.tensor.put", "put"), get=_op("pld.tensor.get", "get"),
                               barrier=_op("pld.tensor.barrier", "barrier"),
                               remote_store=_not_built("pld.tensor.remote_store",
                                                       "the tensor form of remote_store (load the tile and "
                                                       "use pld.tile.remote_store)"))
tile = types.SimpleNamespace(remote_load=remote_load, remote_store=remote_store)
AtomicType = _AtomicType


class DistributedTensor:
    """`pld.DistributedTensor[[shape], dtype]`: a parameter that is this rank's copy of a
    window buffer (every rank holds one, at the same offset of its window)."""
    _pl_kind = "distributed_tensor"

    def __class_getitem__(cls, item):
        from pypto.language.typing import Annotation
        return Annotation("DistributedTensor", item if isinstance(item, tuple) else (item,))


__all__ = ["AtomicType", "DistributedTensor", "HostLevelError", "NotifyOp", "WaitCmp", "alloc_window_buffer", "get_comm_ctx",
           "nranks", "rank", "remote_load", "remote_store", "system", "tensor", "tile", "window", "world_size"]
