"""Per-key single flight across processes and threads.

`KeyLocks` locks one byte per key in a single lock file (Linux open-file-description
locks, F_OFD_SETLKW): a cold build takes a lock per task, and creating a lock file
per key was one file creation per task; opening the one existing file costs a
tenth of that. Where OFD locks are missing (not Linux) or refused by the file
system, it falls back to one flock file per key (`acquire` below).

Both kinds belong to an open file and die with the process, so a crashed builder
never leaves a stale lock behind. Each acquisition opens its own descriptor, so
threads of one process exclude each other too, and a forked child never shares
its parent's locks. Lock files are only ever unlinked by someone holding them; a
waiter that wakes up holding an unlinked inode retries on the current file, so
unlinking never lets two holders in at once.
Not reentrant: taking the same key twice in one thread deadlocks.
"""
from __future__ import annotations

import errno
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

RANGE_FILE = "keys.lock"
_OFD_WAIT = getattr(fcntl, "F_OFD_SETLKW", None)
_OFD_TRY = getattr(fcntl, "F_OFD_SETLK", None)
# struct flock on Linux: l_type, l_whence, (pad), l_start, l_len, l_pid, (pad); an
# OFD lock needs l_pid 0
_FLOCK = "hhxxxxqqixxxx"
_REFUSED = (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOLCK, errno.ENOSYS)


class KeyLocks:
    """Exclusive per-key locks for the keys of one store (`folder` holds them)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = os.fspath(folder)
        self._range = os.path.join(self.folder, RANGE_FILE)
        self._ofd = _OFD_WAIT is not None

    def _file(self, key: str) -> str:
        return os.path.join(self.folder, key)

    def acquire(self, key: str, blocking: bool = True):
        """A handle holding `key`, or None if it is busy (non-blocking)."""
        if self._ofd:
            try:
                return self._acquire_range(key, blocking)
            except OSError as e:
                if e.errno not in _REFUSED:
                    raise
                self._ofd = False          # this file system has no OFD locks
        return acquire(Path(self._file(key)), blocking)

    def _acquire_range(self, key: str, blocking: bool):
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        try:
            fd = os.open(self._range, flags, 0o644)
        except FileNotFoundError:
            os.makedirs(self.folder, exist_ok=True)
            fd = os.open(self._range, flags, 0o644)
        # the key's first 60 bits name its byte: a collision (2**-60 per pair) only
        # makes two builds wait for each other
        import struct              # (only a build that runs a task takes a lock)
        lock = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, int(key[:15], 16), 1, 0)
        try:
            fcntl.fcntl(fd, _OFD_WAIT if blocking else _OFD_TRY, lock)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EAGAIN, errno.EACCES) and not blocking:
                return None
            raise
        except BaseException:
            os.close(fd)
            raise
        return fd

    def release(self, handle: int) -> None:
        os.close(handle)

    def drop(self, key: str) -> None:
        """Remove what holding `key` left on disk (call while holding it): the key's
        own file in the fallback; nothing in the shared range file."""
        if not self._ofd:
            try:
                os.unlink(self._file(key))
            except FileNotFoundError:
                pass

    @contextmanager
    def hold(self, key: str):
        handle = self.acquire(key)
        try:
            yield
        finally:
            self.release(handle)

    def busy(self, key: str) -> bool:
        handle = self.acquire(key, blocking=False)
        if handle is None:
            return True
        self.release(handle)
        return False


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
