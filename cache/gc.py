"""Size-capped eviction shared by Store and MemoryStore.

The store supplies a snapshot (`_gc_scan`) and removal primitives that re-check,
at the moment of deletion, that the entry is not locked and not younger than the
cutoff -- the snapshot may be stale by then. The policy lives here:

1. unreferenced objects, oldest first (no action can turn them into a hit);
2. actions, least recently used first, each followed by the objects it was the
   last reference to.

Anything used or written within `grace` seconds is kept, so a build that has
put its objects but not yet its action (or just got a hit and is about to
materialize) is never robbed.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

DEFAULT_GRACE = 600.0


@dataclass(frozen=True)
class ActionInfo:
    key: str
    size: int
    last_used: float  # 0.0 for an unreadable entry: evicted first
    outputs: frozenset


@dataclass(frozen=True)
class ObjectInfo:
    digest: str
    size: int
    mtime: float


def collect(store, max_size: int, grace: float = DEFAULT_GRACE, now: float | None = None) -> dict:
    if max_size < 0:
        raise ValueError("max_size must be >= 0")
    actions, objects = store._gc_scan()
    cutoff = (time.time() if now is None else now) - grace
    total = before = sum(a.size for a in actions) + sum(o.size for o in objects.values())
    refs = Counter(d for a in actions for d in a.outputs)
    gone_actions: list[str] = []
    gone_objects: list[str] = []

    def drop_object(digest: str) -> None:
        nonlocal total
        info = objects.get(digest)
        if info is None or refs[digest] > 0 or info.mtime > cutoff:
            return
        if store._gc_remove_object(digest, cutoff):
            total -= info.size
            gone_objects.append(digest)

    for info in sorted(objects.values(), key=lambda o: o.mtime):
        if total <= max_size:
            break
        drop_object(info.digest)

    for action in sorted(actions, key=lambda a: a.last_used):
        if total <= max_size or action.last_used > cutoff:
            break  # sorted by age: everything after this is younger still
        if not store._gc_remove_action(action.key, cutoff):
            continue  # locked, or used since the scan
        total -= action.size
        gone_actions.append(action.key)
        for digest in action.outputs:
            refs[digest] -= 1
            drop_object(digest)

    return {"actions": gone_actions, "objects": gone_objects,
            "freed": before - total, "bytes": total}
