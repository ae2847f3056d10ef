"""Per-key single flight with fcntl.flock.

flock locks belong to an open file and die with the process, so a crashed
builder never leaves a stale lock behind. Lock files are only ever unlinked by
someone holding them; a waiter that wakes up holding an unlinked inode retries
on the current file, so unlinking never lets two holders in at once.
Not reentrant: taking the same key twice in one thread deadlocks.
"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path


def acquire(path: Path, blocking: bool = True) -> int | None:
    """Return an fd holding an exclusive lock on `path`, or None if busy (non-blocking)."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:          # its folder is not there yet
            os.makedirs(os.path.dirname(path), exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            st = os.stat(path)
            fst = os.fstat(fd)
            if (st.st_ino, st.st_dev) == (fst.st_ino, fst.st_dev):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # we locked an unlinked file: it excludes nobody, try again


def release(fd: int) -> None:
    os.close(fd)


@contextmanager
def hold(path: Path):
    fd = acquire(path)
    try:
        yield
    finally:
        release(fd)


def remove_if_free(path: Path) -> bool:
    """Unlink a lock file unless someone holds it."""
    try:
        fd = acquire(path, blocking=False)
    except FileNotFoundError:
        return False
    if fd is None:
        return False
    try:
        os.unlink(path)
        return True
    finally:
        release(fd)
