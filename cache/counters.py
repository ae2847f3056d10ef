"""Persistent hit/miss counters shared by all processes using one store.

One small file per counter, always exactly one fixed-width record, read and
rewritten in place under flock. A single pwrite of 21 bytes cannot be torn by a
killed process, and the file is never replaced, so the lock always guards the
one real file. Anything unparsable reads as 0 instead of failing a build.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

_WIDTH = 20


def _parse(raw: bytes) -> int:
    if len(raw) == _WIDTH + 1 and raw[-1:] == b"\n" and raw[:-1].isdigit():
        return int(raw[:-1])
    return 0


def _record(value: int) -> bytes:
    return b"%0*d\n" % (_WIDTH, value)


class Counters:
    def __init__(self, directory: Path):
        self.dir = Path(directory)

    def bump(self, name: str, n: int = 1) -> None:
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
        try:
            fd = os.open(self.dir / name, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, _record(0), 0)
        finally:
            os.close(fd)
