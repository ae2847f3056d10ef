"""An in-memory Store for PYPTO_CACHE_DISABLE=1: same API and semantics, no disk.

Manifests are kept as JSON text, exactly like on disk, so a caller mutating a
returned manifest cannot change what the store holds. Only materialize writes
a file, because writing `dest` is what it is for.
"""
from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .fsutil import EXECUTABLE, READ_ONLY, Mismatch, publish
from .gc import DEFAULT_GRACE, ActionInfo, ObjectInfo, collect
from .names import CacheError, check_digest, check_key, check_manifest, digest_bytes
from .store import _encode_manifest


class MemoryStore:
    root = None

    def __init__(self):
        self._mu = threading.RLock()
        self._objects: dict[str, tuple[bytes, float]] = {}   # digest -> (data, written)
        self._actions: dict[str, tuple[bytes, float]] = {}   # key -> (json, last used)
        self._locks: dict[str, threading.Lock] = {}
        self._hits = self._misses = 0

    def __repr__(self) -> str:
        return "MemoryStore()"

    # -- objects --
    def put_bytes(self, data: bytes) -> str:
        data = bytes(data)
        digest = digest_bytes(data)
        with self._mu:
            old = self._objects.get(digest)
            self._objects[digest] = (old[0] if old else data, time.time())
        return digest

    def put_file(self, path) -> str:
        return self.put_bytes(Path(path).read_bytes())

    def has(self, digest: str) -> bool:
        check_digest(digest)
        return digest in self._objects

    def sync(self) -> None:
        """Nothing to flush: it lives in memory."""

    def verify(self, digest: str) -> bool:
        return self.get_bytes(digest) is not None

    def get_bytes(self, digest: str) -> bytes | None:
        check_digest(digest)
        with self._mu:
            entry = self._objects.get(digest)
            if entry is None:
                return None
            if digest_bytes(entry[0]) != digest:
                del self._objects[digest]  # damaged: drop it, report a miss
                return None
            return entry[0]

    def materialize(self, digest: str, dest, executable: bool = False,
                    writable: bool = False) -> bool:
        data = self.get_bytes(digest)
        if data is None:
            return False
        dest = Path(dest)
        try:
            publish([data], dest, dest.parent, mode=(EXECUTABLE if executable else READ_ONLY) | (0o200 if writable else 0),
                    expect=digest)
        except Mismatch:  # cannot happen after get_bytes verified; be explicit anyway
            return False
        return True

    # -- actions --
    def get_action(self, key: str, verify: bool = True, present: bool = True) -> dict | None:
        # objects in memory are never damaged: `verify` changes nothing here, and
        # looking for them is cheap (`present` too)
        check_key(key)
        with self._mu:
            entry = self._actions.get(key)
            manifest = None
            if entry is not None:
                try:
                    manifest = check_manifest(json.loads(entry[0]))
                except (ValueError, CacheError):
                    manifest = None
            if manifest is None or not all(self.get_bytes(d) is not None
                                           for d in set(manifest["outputs"].values())):
                self._misses += 1
                return None
            self._hits += 1
            self._actions[key] = (entry[0], time.time())
            return manifest

    def put_action(self, key: str, manifest: dict) -> None:
        check_key(key)
        data = _encode_manifest(manifest)
        with self._mu:
            missing = sorted(d for d in set(manifest["outputs"].values())
                             if d not in self._objects)
            if missing:
                raise CacheError(f"put_action({key}): objects not in the store: {missing}")
            self._actions[key] = (data, time.time())

    @contextmanager
    def lock(self, key: str):
        check_key(key)
        with self._mu:
            lk = self._locks.setdefault(key, threading.Lock())
        with lk:
            yield

    # -- bookkeeping --
    def stats(self) -> dict:
        with self._mu:
            object_bytes = sum(len(d) for d, _ in self._objects.values())
            action_bytes = sum(len(d) for d, _ in self._actions.values())
            return {
                "objects": len(self._objects), "object_bytes": object_bytes,
                "actions": len(self._actions), "action_bytes": action_bytes,
                "bytes": object_bytes + action_bytes,
                "hits": self._hits, "misses": self._misses, "root": None,
            }

    def gc(self, max_size: int, grace: float = DEFAULT_GRACE) -> dict:
        with self._mu:
            # tmp/locks: nothing to sweep in memory; keys kept for parity with Store.gc
            return {**collect(self, max_size, grace), "tmp": 0, "locks": 0}

    def clear(self) -> None:
        with self._mu:
            self._objects.clear()
            self._actions.clear()
            self._hits = self._misses = 0

    # -- primitives for gc.collect (called with self._mu held) --
    def _gc_scan(self):
        actions = []
        for key, (data, used) in self._actions.items():
            try:
                outputs = frozenset(check_manifest(json.loads(data))["outputs"].values())
            except (ValueError, CacheError):
                outputs, used = frozenset(), 0.0
            actions.append(ActionInfo(key, len(data), used, outputs))
        objects = {d: ObjectInfo(d, len(data), t) for d, (data, t) in self._objects.items()}
        return actions, objects

    def _gc_remove_action(self, key: str, cutoff: float) -> bool:
        lk = self._locks.get(key)
        if lk is not None and not lk.acquire(blocking=False):
            return False  # a build holds this key
        try:
            entry = self._actions.get(key)
            if entry is None or entry[1] > cutoff:
                return False
            del self._actions[key]
            return True
        finally:
            if lk is not None:
                lk.release()

    def _gc_remove_object(self, digest: str, cutoff: float) -> bool:
        entry = self._objects.get(digest)
        if entry is None or entry[1] > cutoff:
            return False
        del self._objects[digest]
        return True
