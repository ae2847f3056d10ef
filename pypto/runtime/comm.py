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
_takers: list = []          # pypto_set_comm of every kernel library loaded that has one


def set_context(ctx: CommContext | None) -> None:
    """This rank's context for the dispatch that starts (None when it ends: no windows)."""
    global _current
    _current = ctx
    for fn in _takers:
        _apply(fn, ctx)


def _apply(fn, ctx: CommContext | None) -> None:
    if ctx is None:
        fn(-1, 0, 0, 0, 0.0)
    else:
        fn(ctx.rank, ctx.nranks, ctx.base, ctx.window_bytes, ctx.wait_s)


def give(lib) -> None:
    """Remember a just-loaded kernel library that takes a context, and hand it the current one."""
    try:
        fn = lib.pypto_set_comm
    except AttributeError:
        return
    fn.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_double]
    fn.restype = None
    _takers.append(fn)
    _apply(fn, _current)
