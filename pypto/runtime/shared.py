"""The worker `compiled(...)` runs on outside any `with ChipWorker(...)`.

One per (platform, runtime, device id), started on first use and kept for the process:
a call then pays for no thread pool start, no registration and no digest check after
the first (a one-shot worker per call cost most of a small kernel's call). It holds
the last MAX_PROGRAMS programs it ran; older ones are unregistered (and reloaded if
called again).
"""
from __future__ import annotations

import atexit
import os
import threading

from .config import RunConfig

MAX_PROGRAMS = 64

_LOCK = threading.Lock()
_WORKERS: dict = {}


def shared_worker(platform: str, runtime: str, device_id: int = 0):
    key = (platform, runtime, device_id)
    worker = _WORKERS.get(key)
    if worker is not None and not worker.closed:
        return worker
    from .worker import ChipWorker
    with _LOCK:
        worker = _WORKERS.get(key)
        if worker is None or worker.closed:
            worker = ChipWorker(RunConfig(platform=platform, runtime=runtime, device_id=device_id))
            worker.init()
            _WORKERS[key] = worker
    return worker


def handle_for(worker, compiled):
    """The program's registration on a shared worker, the oldest ones dropped past
    MAX_PROGRAMS."""
    regs = worker._registrations
    handle = regs.get(id(compiled))
    if handle is not None and handle.compiled is compiled and handle.active:
        return handle
    handle = worker.register(compiled)
    while len(regs) > MAX_PROGRAMS:
        oldest = next(iter(regs.values()))
        oldest.unregister()
    return handle


def close_all() -> None:
    with _LOCK:
        workers = list(_WORKERS.values())
        _WORKERS.clear()
    for w in workers:
        w.close()


def _forget_after_fork() -> None:
    # the pool threads did not survive the fork: the child starts its own workers
    global _LOCK
    _LOCK = threading.Lock()
    _WORKERS.clear()


atexit.register(close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
