"""Content-addressed object store plus action cache, shared by concurrent builds.

Knows nothing about what it stores: objects are bytes named by their xxh3_128
digest, actions are small JSON manifests naming objects under a caller's key.
"""
from __future__ import annotations

import os
from pathlib import Path

from .counters import deferred as deferred_stats
from .fsutil import file_holds
from .names import CacheError, digest_bytes
from .store import Store

__all__ = ["Store", "file_holds", "MemoryStore", "open_store", "digest_bytes", "CacheError", "default_root",
           "deferred_stats"]


def __getattr__(name: str):
    # the in-memory store is for PYPTO_CACHE_DISABLE and tests: imported when used
    if name == "MemoryStore":
        from .memory import MemoryStore
        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_root() -> Path:
    """$PYPTO_CACHE_DIR, else <XDG_CACHE_HOME or ~/.cache>/pypto."""
    if os.environ.get("PYPTO_CACHE_DIR"):
        return Path(os.environ["PYPTO_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) \
        else Path.home() / ".cache"  # the XDG spec says to ignore a relative value
    return base / "pypto"


def _disabled() -> bool:
    return os.environ.get("PYPTO_CACHE_DISABLE", "").strip().lower() in ("1", "true", "yes", "on")


def open_store(root: str | os.PathLike | None = None):
    """The store at `root` (default_root()), or an in-memory one when disabled; with
    $PYPTO_REMOTE_CACHE set (and its mode not off), backed by that remote tier."""
    if _disabled():
        from .memory import MemoryStore
        return MemoryStore()
    remote = None
    if os.environ.get("PYPTO_REMOTE_CACHE"):
        from .remote import from_env
        remote = from_env()
    return Store(root if root is not None else default_root(), remote=remote)
