"""What a Store keeps in memory once its directory turns out unwritable.

A read-only mount (EROFS), a store the user may not write (EACCES, EPERM) or a full
disk is not a reason to fail a build: the store keeps serving what is on disk, and
what this process builds lives here until it exits. The switch is announced once
per store and process, on one line of stderr.
"""
from __future__ import annotations

import errno
import sys
import threading
from contextlib import contextmanager

# The errors that mean "this store cannot take writes", as opposed to a bug.
UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})

_WARNED: set[str] = set()
_WARNED_GUARD = threading.Lock()


def cannot_write(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in UNWRITABLE


def warn_once(root, exc: OSError) -> None:
    with _WARNED_GUARD:
        if str(root) in _WARNED:
            return
        _WARNED.add(str(root))
    reason = exc.strerror or type(exc).__name__
    sys.stderr.write(f"pypto: warning: the cache at {root} cannot be written ({reason}); "
                     f"reading it, but new results are not cached\n")


class Overlay:
    """Objects and action manifests of this process (bytes, already verified by the
    caller's digest), and in-process locks in place of lock files."""

    def __init__(self):
        self._mu = threading.Lock()
        self.objects: dict[str, bytes] = {}
        self.actions: dict[str, bytes] = {}
        self._locks: dict[str, threading.Lock] = {}

    def put_object(self, digest: str, data: bytes) -> None:
        with self._mu:
            self.objects.setdefault(digest, data)

    def get_object(self, digest: str) -> bytes | None:
        return self.objects.get(digest)

    def put_action(self, key: str, data: bytes) -> None:
        with self._mu:
            self.actions[key] = data

    def get_action(self, key: str) -> bytes | None:
        return self.actions.get(key)

    @contextmanager
    def lock(self, key: str):
        with self._mu:
            lk = self._locks.setdefault(key, threading.Lock())
        with lk:
            yield
