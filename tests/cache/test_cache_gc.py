import os
import time

import pytest

from pypto_cache import MemoryStore, Store
from cache_helpers import set_age

KEYS = ["aa" * 16, "bb" * 16, "cc" * 16, "dd" * 16]


def build(store, key, payload, age):
    """One action with one private object, last used `age` seconds ago."""
    d = store.put_bytes(payload)
    store.put_action(key, {"outputs": {"out": d}})
    set_age(store, "object", d, age)
    set_age(store, "action", key, age)
    return d


def entry_size(store, key, d):
    return len(store.get_bytes(d)) + action_bytes(store, key)


def action_bytes(store, key):
    if isinstance(store, MemoryStore):
        return len(store._actions[key][0])
    return store._action_path(key).stat().st_size


def test_evicts_least_recently_used_first(store):
    ds = [build(store, k, bytes([i]) * 1000, age=1000 - 100 * i) for i, k in enumerate(KEYS[:3])]
    # Using the oldest entry makes it the newest: now "bb" is least recently used.
    assert store.get_action(KEYS[0])
    keep_two = entry_size(store, KEYS[0], ds[0]) * 2 + 10
    r = store.gc(keep_two, grace=0)
    assert r["actions"] == [KEYS[1]]
    assert r["objects"] == [ds[1]]
    assert store.stats()["bytes"] <= keep_two
    assert store.get_action(KEYS[0]) and store.get_action(KEYS[2])
    assert store.get_action(KEYS[1]) is None


def test_size_bound_honoured_and_noop_when_under(store):
    for i, k in enumerate(KEYS):
        build(store, k, os.urandom(2000 + i), age=500 + i)
    total = store.stats()["bytes"]
    r = store.gc(total, grace=0)
    assert r["actions"] == r["objects"] == [] and r["freed"] == 0
    for limit in (total - 1, 5000, 0):
        r = store.gc(limit, grace=0)
        assert store.stats()["bytes"] <= limit
        assert r["bytes"] == store.stats()["bytes"]
    assert store.stats()["objects"] == store.stats()["actions"] == 0


def test_unreferenced_objects_go_before_actions(store):
    d = build(store, KEYS[0], b"referenced" * 100, age=50)
    orphan = store.put_bytes(b"orphan" * 100)
    set_age(store, "object", orphan, 10)  # newer than the action, still goes first
    r = store.gc(store.stats()["bytes"] - 1, grace=0)
    assert r["objects"] == [orphan] and r["actions"] == []
    assert store.get_action(KEYS[0]) and store.has(d)


def test_shared_object_survives_until_last_reference(store):
    shared = store.put_bytes(b"shared" * 200)
    for i, k in enumerate(KEYS[:2]):
        store.put_action(k, {"outputs": {"s": shared}})
        set_age(store, "action", k, 100 - i)
    set_age(store, "object", shared, 100)
    r = store.gc(store.stats()["bytes"] - 1, grace=0)
    assert r["actions"] == [KEYS[0]] and r["objects"] == []
    assert store.get_action(KEYS[1])
    set_age(store, "action", KEYS[1], 100)
    r = store.gc(0, grace=0)
    assert r["actions"] == [KEYS[1]] and r["objects"] == [shared]


def test_locked_action_is_kept_with_its_objects(store):
    ds = [build(store, k, bytes([i]) * 500, age=100) for i, k in enumerate(KEYS[:3])]
    with store.lock(KEYS[1]):
        r = store.gc(0, grace=0)
    assert sorted(r["actions"]) == sorted([KEYS[0], KEYS[2]])
    assert sorted(r["objects"]) == sorted([ds[0], ds[2]])
    assert store.get_action(KEYS[1]) and store.has(ds[1])
    with store.lock(KEYS[1]):  # the lock still works after gc
        pass


def test_young_entries_are_kept(store):
    old = build(store, KEYS[0], b"old" * 300, age=3600)
    young = build(store, KEYS[1], b"young" * 300, age=5)
    unpublished = store.put_bytes(b"written by a build whose action is not in yet")
    r = store.gc(0, grace=600)
    assert r["actions"] == [KEYS[0]] and r["objects"] == [old]
    assert store.get_action(KEYS[1]) and store.has(young) and store.has(unpublished)


def test_reput_refreshes_object_age(store):
    d = store.put_bytes(b"again")
    set_age(store, "object", d, 3600)
    assert store.put_bytes(b"again") == d  # a build about to reference it again
    assert store.gc(0, grace=600)["objects"] == []
    assert store.has(d)


def test_broken_action_is_evicted_first(disk):
    build(disk, KEYS[0], b"good" * 100, age=3600)
    path = disk._action_path(KEYS[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    r = disk.gc(disk.stats()["bytes"] - 1, grace=0)
    assert r["actions"] == [KEYS[1]]
    assert disk.get_action(KEYS[0])


def test_gc_sweeps_temp_files_and_stale_locks(disk):
    disk._keylocks._ofd = False  # one lock file per key, as where OFD locks are missing
    build(disk, KEYS[0], b"x" * 100, age=0)
    with disk.lock(KEYS[1]):  # a key that never got an entry
        pass
    held = disk.lock(KEYS[2])
    held.__enter__()
    tmp = disk.root / "v2" / "tmp" / ".tmp-killed-writer"
    tmp.write_bytes(b"half")
    try:
        r = disk.gc(10 ** 9, grace=0)
        assert r["tmp"] == 1 and r["locks"] == 1
        assert not tmp.exists()
        locks = disk.root / "v2" / "locks"
        assert not (locks / KEYS[1]).exists()
        assert (locks / KEYS[2]).exists()  # held: untouchable
        assert disk.get_action(KEYS[0])
    finally:
        held.__exit__(None, None, None)


def test_gc_keeps_the_shared_lock_file(disk):
    with disk.lock(KEYS[1]):
        pass
    build(disk, KEYS[0], b"x" * 100, age=3600)
    r = disk.gc(0, grace=0)
    assert r["actions"] == [KEYS[0]] and r["locks"] == 0
    if disk._keylocks._ofd:
        assert os.listdir(disk.root / "v2" / "locks") == ["keys.lock"]


def test_gc_with_default_grace_keeps_fresh_store(disk):
    build(disk, KEYS[0], b"x" * 100, age=0)
    tmp = disk.root / "v2" / "tmp" / ".tmp-in-flight"
    tmp.write_bytes(b"being written")
    r = disk.gc(0)
    assert r["actions"] == [] and r["tmp"] == 0 and tmp.exists()


def test_gc_rejects_negative_size(store):
    with pytest.raises(ValueError):
        store.gc(-1)
