"""Persistent hit/miss counters shared by all processes using one store.

One small file per counter, always exactly one fixed-width record, read and
rewritten in place under flock. A single pwrite of 21 bytes cannot be torn by a
killed process, and the file is never replaced, so the lock always guards the
one real file. Anything unparsable reads as 0 instead of failing a build.

Inside `deferred()` (a build: a thousand lookups, where a locked write each was a
tenth of a warm build) a process adds its bumps up in memory and writes them when
the outermost `deferred()` ends, at a read of that counter, or at exit.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import threading
from contextlib import contextmanager
from pathlib import Path

_WIDTH = 20


def _parse(raw: bytes) -> int:
    if len(raw) == _WIDTH + 1 and raw[-1:] == b"\n" and raw[:-1].isdigit():
        return int(raw[:-1])
    return 0


def _record(value: int) -> bytes:
    return b"%0*d\n" % (_WIDTH, value)


_pending: dict[tuple[Path, str], int] = {}    # (directory, counter) -> not yet written
_lock = threading.Lock()
_depth = 0                                     # open deferred() blocks, process-wide


def flush_all() -> None:
    """Write every count this process has not written yet."""
    with _lock:
        todo = list(_pending.items())
        _pending.clear()
    for (directory, name), n in todo:
        Counters(directory)._add(name, n)


atexit.register(flush_all)


@contextmanager
def deferred():
    """Bumps inside are written once, when the outermost block ends."""
    global _depth
    with _lock:
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0
        if last:
            flush_all()


class Counters:
    def __init__(self, directory: Path):
        self.dir = Path(directory)

    def bump(self, name: str, n: int = 1) -> None:
        with _lock:
            if _depth:
                k = (self.dir, name)
                _pending[k] = _pending.get(k, 0) + n
                return
        self._add(name, n)

    def flush(self) -> None:
        with _lock:
            todo = [(k, _pending.pop(k)) for k in list(_pending) if k[0] == self.dir]
        for (_, name), n in todo:
            self._add(name, n)

    def _add(self, name: str, n: int) -> None:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.dir / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return  # statistics must never break a build (e.g. read-only store)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, _record(_parse(os.pread(fd, _WIDTH + 1, 0)) + n), 0)
        except OSError:
            pass
        finally:
            os.close(fd)

    def read(self, name: str) -> int:
        self.flush()
        try:
            fd = os.open(self.dir / name, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return _parse(os.pread(fd, _WIDTH + 1, 0))
        finally:
            os.close(fd)

    def reset(self, name: str) -> None:
        with _lock:
            _pending.pop((self.dir, name), None)
        try:
            fd = os.open(self.dir / name, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, _record(0), 0)
        finally:
            os.close(fd)
