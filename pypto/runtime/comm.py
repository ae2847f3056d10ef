"""The comm context of a rank process (pypto.runtime.rank_main): which rank it is, how
many ranks run, where every rank's window is mapped in this process and how long a
signal wait may take. Each kernel library that uses cross-rank ops exports
pypto_set_comm; a library loaded while a context is set is given it (a process outside a
distributed run has none, and those ops fail saying so)."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass


@dataclass(frozen=True)
class CommContext:
    rank: int
    nranks: int
    base: int              # address of rank 0's window in this process
    window_bytes: int
    wait_s: float


_current: CommContext | None = None


def set_context(ctx: CommContext | None) -> None:
    global _current
    _current = ctx


def give(lib) -> None:
    """Hand the context to a just-loaded kernel library that takes one."""
    ctx = _current
    if ctx is None:
        return
    try:
        fn = lib.pypto_set_comm
    except AttributeError:
        return
    fn.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_double]
    fn.restype = None
    fn(ctx.rank, ctx.nranks, ctx.base, ctx.window_bytes, ctx.wait_s)
