import json
import os
import stat
from pathlib import Path

import pytest
import xxhash

from pypto_cache import CacheError, MemoryStore, Store, digest_bytes, open_store
from cache_helpers import damage, object_path

KEY = "0123456789abcdef0123456789abcdef"
KEY2 = "fedcba9876543210fedcba9876543210"


# -- objects --

def test_digest_is_xxh3_128_hex():
    assert digest_bytes(b"abc") == xxhash.xxh3_128(b"abc").hexdigest()
    assert len(digest_bytes(b"")) == 32


def test_put_get_roundtrip(store):
    for data in (b"", b"x", os.urandom(3 << 20)):
        d = store.put_bytes(data)
        assert d == digest_bytes(data)
        assert store.has(d)
        assert store.get_bytes(d) == data


def test_put_is_deduplicated(store):
    d1 = store.put_bytes(b"same")
    d2 = store.put_bytes(bytearray(b"same"))
    assert d1 == d2
    s = store.stats()
    assert (s["objects"], s["object_bytes"]) == (1, 4)


def test_put_file_streams_same_digest(store, tmp_path):
    src = tmp_path / "big.bin"
    data = os.urandom((2 << 20) + 17)  # more than one read chunk
    src.write_bytes(data)
    d = store.put_file(src)
    assert d == store.put_bytes(data) == digest_bytes(data)
    assert store.get_bytes(d) == data
    assert store.stats()["objects"] == 1


def test_missing_object(store):
    d = digest_bytes(b"never stored")
    assert not store.has(d)
    assert store.get_bytes(d) is None
    assert store.materialize(d, "/nonexistent/never/written") is False


def test_disk_layout_and_no_temp_leftovers(disk):
    d = disk.put_bytes(b"layout")
    assert object_path(disk, d) == disk.root / "v2" / "objects" / d[:1] / d
    disk.put_action(KEY, {"outputs": {"o": d}})
    assert (disk.root / "v2" / "actions" / KEY[:1] / KEY).is_file()
    assert list((disk.root / "v2" / "tmp").iterdir()) == []


@pytest.mark.parametrize("bad", [
    "../../etc/passwd", "0" * 31, "0" * 33, "A" * 32, "g" * 32, "", None, 42,
    "ab/" + "0" * 29, "0" * 31 + "\n",
])
def test_object_digest_validation(store, bad, tmp_path):
    for call in (store.get_bytes, store.has, lambda d: store.materialize(d, tmp_path / "x")):
        with pytest.raises(CacheError):
            call(bad)


@pytest.mark.parametrize("bad", ["../x", "a", "", "AB12", "ab/cd", "ab\x00", ".." + "a" * 30,
                                 "a" * 129, None, 12])
def test_key_validation(store, bad):
    with pytest.raises(CacheError):
        store.get_action(bad)
    with pytest.raises(CacheError):
        store.put_action(bad, {"outputs": {}})
    with pytest.raises(CacheError):
        with store.lock(bad):
            pass


# -- materialize --

@pytest.mark.parametrize("executable", [False, True])
def test_materialize(store, tmp_path, executable):
    d = store.put_bytes(b"\x7fELF pretend")
    dest = tmp_path / "new" / "dir" / "k.so"
    assert store.materialize(d, dest, executable=executable)
    assert dest.read_bytes() == b"\x7fELF pretend"
    mode = stat.S_IMODE(dest.stat().st_mode)
    assert mode == (0o555 if executable else 0o444)      # artifacts are read-only
    assert [p.name for p in dest.parent.iterdir()] == ["k.so"]  # no temp file left behind


@pytest.mark.parametrize("executable", [False, True])
def test_materialize_links_the_object(disk, tmp_path, executable):
    """On the store's file system an artifact is a hard link to its object: one
    inode, no copy of the bytes."""
    d = disk.put_bytes(b"kernel bytes")
    a, b = tmp_path / "a" / "k.so", tmp_path / "b" / "k.so"
    assert disk.materialize(d, a, executable=executable)
    assert disk.materialize(d, b, executable=executable)
    obj = object_path(disk, d)
    assert a.stat().st_ino == b.stat().st_ino == obj.stat().st_ino
    assert obj.stat().st_nlink == 3
    # materialising over the same link again is a no-op that leaves no temp file
    assert disk.materialize(d, a, executable=executable)
    assert sorted(p.name for p in a.parent.iterdir()) == ["k.so"]


def test_materialize_other_mode_copies(disk, tmp_path):
    """The same bytes wanted executable and not: the second way is a copy, each with
    its own mode."""
    d = disk.put_bytes(b"same bytes")
    exe, plain = tmp_path / "x", tmp_path / "p"
    assert disk.materialize(d, exe, executable=True)
    assert disk.materialize(d, plain)
    assert stat.S_IMODE(exe.stat().st_mode) == 0o555
    assert stat.S_IMODE(plain.stat().st_mode) == 0o444
    assert exe.stat().st_ino != plain.stat().st_ino
    assert plain.read_bytes() == exe.read_bytes() == b"same bytes"


def test_materialize_older_writable_object(disk, tmp_path):
    """An object an older pypto wrote writable is made read-only before it is linked:
    no artifact can be edited in place into the store."""
    d = disk.put_bytes(b"old object")
    obj = object_path(disk, d)
    os.chmod(obj, 0o644)
    dest = tmp_path / "o"
    assert disk.materialize(d, dest)
    assert stat.S_IMODE(obj.stat().st_mode) == 0o444 and dest.stat().st_ino == obj.stat().st_ino


def test_materialize_copies_when_links_are_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_LINK_ARTIFACTS", "0")
    st = Store(tmp_path / "store")
    d = st.put_bytes(b"copied")
    dest = tmp_path / "o"
    assert st.materialize(d, dest)
    assert dest.stat().st_ino != object_path(st, d).stat().st_ino
    assert dest.read_bytes() == b"copied" and stat.S_IMODE(dest.stat().st_mode) == 0o444


def test_damaged_object_is_not_linked(disk, tmp_path):
    d = disk.put_bytes(b"A" * 1000)
    obj = object_path(disk, d)
    os.chmod(obj, 0o644)
    with open(obj, "r+b") as f:
        f.write(b"B")
    dest = tmp_path / "o"
    assert not disk.materialize(d, dest)
    assert not dest.exists() and not obj.exists()


def test_materialize_replaces_existing_dest(store, tmp_path):
    dest = tmp_path / "out.bin"
    dest.write_bytes(b"old")
    assert store.materialize(store.put_bytes(b"new"), dest)
    assert dest.read_bytes() == b"new"


# -- damage --

@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_damaged_object_is_a_miss_and_removed(store, how):
    data = os.urandom(4096)
    d = store.put_bytes(data)
    damage(store, d, how)
    assert store.get_bytes(d) is None
    assert not store.has(d)
    assert store.put_bytes(data) == d  # the next put heals it
    assert store.get_bytes(d) == data


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_damaged_object_fails_its_action(store, how):
    good = store.put_bytes(b"fine")
    bad = store.put_bytes(b"about to be damaged" * 10)
    store.put_action(KEY, {"outputs": {"a": good, "b": bad}})
    assert store.get_action(KEY) is not None
    damage(store, bad, how)
    assert store.get_action(KEY) is None
    assert not store.has(bad) and store.has(good)
    s = store.stats()
    assert (s["hits"], s["misses"]) == (1, 1)


def test_unverified_lookup_only_looks_for_the_objects(tmp_path):
    """get_action(verify=False) trusts what it finds; the copy out checks the bytes."""
    store = Store(tmp_path / "s")
    bad = store.put_bytes(b"about to be damaged" * 10)
    store.put_action(KEY, {"outputs": {"b": bad}})
    damage(store, bad, "flip")
    assert store.get_action(KEY, verify=False) == {"outputs": {"b": bad}}
    assert not store.materialize(bad, tmp_path / "b")
    assert store.get_action(KEY, verify=False) is None          # gone now: a miss


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_materialize_refuses_damaged(store, tmp_path, how):
    d = store.put_bytes(b"payload" * 100)
    damage(store, d, how)
    dest = tmp_path / "out" / "k.so"
    dest.parent.mkdir()
    dest.write_bytes(b"previous build")
    assert store.materialize(d, dest, executable=True) is False
    assert dest.read_bytes() == b"previous build"  # untouched, never half-written
    assert [p.name for p in dest.parent.iterdir()] == ["k.so"]
    assert not store.has(d)


# -- actions --

def test_action_roundtrip_and_counters(store):
    d = store.put_bytes(b"kernel")
    manifest = {"outputs": {"k.so": d}, "tool": "g++ 12", "n": 3}
    assert store.get_action(KEY) is None
    store.put_action(KEY, manifest)
    got = store.get_action(KEY)
    assert got == manifest
    got["outputs"]["k.so"] = "0" * 32  # the caller's copy is not the store's
    assert store.get_action(KEY) == manifest
    s = store.stats()
    assert (s["actions"], s["hits"], s["misses"]) == (1, 2, 1)


def test_action_overwrite(store):
    a, b = store.put_bytes(b"a"), store.put_bytes(b"b")
    store.put_action(KEY, {"outputs": {"x": a}})
    store.put_action(KEY, {"outputs": {"x": b}})
    assert store.get_action(KEY) == {"outputs": {"x": b}}
    assert store.stats()["actions"] == 1


def test_put_action_requires_objects_first(store):
    with pytest.raises(CacheError, match="not in the store"):
        store.put_action(KEY, {"outputs": {"x": digest_bytes(b"not put")}})
    assert store.get_action(KEY) is None
    assert store.stats()["actions"] == 0


@pytest.mark.parametrize("manifest", [
    None, [], {}, {"outputs": []}, {"outputs": {"x": "nothex"}}, {"outputs": {1: "0" * 32}},
])
def test_put_action_validates_manifest(store, manifest):
    with pytest.raises(CacheError):
        store.put_action(KEY, manifest)


def test_put_action_rejects_non_json(store):
    d = store.put_bytes(b"x")
    with pytest.raises(CacheError):
        store.put_action(KEY, {"outputs": {"x": d}, "extra": object()})
    with pytest.raises(CacheError):
        store.put_action(KEY, {"outputs": {"x": d}, "nan": float("nan")})


def test_action_naming_missing_object_is_a_miss(disk):
    # As left behind by a writer that skipped the protocol, or a gc race.
    d = disk.put_bytes(b"present")
    path = disk.root / "v2" / "actions" / KEY[:1] / KEY
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"outputs": {"a": d, "b": digest_bytes(b"absent")}}))
    assert disk.get_action(KEY) is None
    assert disk.stats()["misses"] == 1


def test_action_object_deleted_later_is_a_miss(store):
    d = store.put_bytes(b"soon gone")
    store.put_action(KEY, {"outputs": {"a": d}})
    if isinstance(store, MemoryStore):
        del store._objects[d]
    else:
        object_path(store, d).unlink()
    assert store.get_action(KEY) is None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"outputs": 3}', '{"outputs": {"a": "zz"}}'])
def test_unparsable_action_is_a_miss(disk, text):
    path = disk.root / "v2" / "actions" / KEY[:1] / KEY
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert disk.get_action(KEY) is None
    assert disk.stats()["misses"] == 1


def test_hit_refreshes_last_use_at_most_once_per_interval(disk):
    d = disk.put_bytes(b"x")
    disk.put_action(KEY, {"outputs": {"x": d}})
    path = disk.root / "v2" / "actions" / KEY[:1] / KEY
    old = path.stat().st_mtime - 3600
    os.utime(path, (old, old))
    assert disk.get_action(KEY)
    fresh = path.stat().st_mtime
    assert fresh > old + 3000
    recent = fresh - 1  # within the interval: left alone
    os.utime(path, (recent, recent))
    assert disk.get_action(KEY)
    assert path.stat().st_mtime == recent


# -- stats / clear --

def test_stats_and_clear(store):
    d = store.put_bytes(b"12345")
    store.put_action(KEY, {"outputs": {"x": d}})
    store.get_action(KEY)
    store.get_action(KEY2)
    s = store.stats()
    assert s["objects"] == 1 and s["actions"] == 1 and s["object_bytes"] == 5
    assert s["bytes"] == s["object_bytes"] + s["action_bytes"]
    assert (s["hits"], s["misses"]) == (1, 1)
    store.clear()
    s = store.stats()
    assert (s["objects"], s["actions"], s["bytes"], s["hits"], s["misses"]) == (0, 0, 0, 0, 0)
    assert store.get_bytes(d) is None


def test_counters_persist_across_instances(tmp_path):
    a = Store(tmp_path / "s")
    a.get_action(KEY)
    b = Store(tmp_path / "s")
    b.get_action(KEY)
    assert Store(tmp_path / "s").stats()["misses"] == 2


def test_stats_on_missing_root_creates_nothing(tmp_path):
    s = Store(tmp_path / "nothing").stats()
    assert (s["objects"], s["bytes"], s["hits"]) == (0, 0, 0)
    assert not (tmp_path / "nothing").exists()


def test_stray_files_are_ignored(disk):
    d = disk.put_bytes(b"x")
    (disk.root / "v2" / "objects" / d[:1] / "README").write_text("not an object")
    (disk.root / "v2" / "objects" / "zz").mkdir()
    s = disk.stats()
    assert s["objects"] == 1
    disk.gc(0, grace=0)
    assert (disk.root / "v2" / "objects" / d[:1] / "README").exists()


# -- open_store --

def test_open_store_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "from-env"))
    assert open_store().root == tmp_path / "from-env"
    assert open_store(tmp_path / "arg").root == tmp_path / "arg"

    monkeypatch.delenv("PYPTO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert open_store().root == tmp_path / "xdg" / "pypto"

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert open_store().root == tmp_path / "home" / ".cache" / "pypto"


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_open_store_disabled_is_memory_only(monkeypatch, tmp_path, value):
    monkeypatch.setenv("PYPTO_CACHE_DISABLE", value)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "env"))
    s = open_store(tmp_path / "arg")
    assert isinstance(s, MemoryStore) and s.root is None
    d = s.put_bytes(b"x")
    s.put_action(KEY, {"outputs": {"x": d}})
    assert s.get_action(KEY)
    assert not (tmp_path / "env").exists() and not (tmp_path / "arg").exists()


def test_open_store_disable_zero_means_enabled(monkeypatch, tmp_path):
    monkeypatch.setenv("PYPTO_CACHE_DISABLE", "0")
    assert isinstance(open_store(tmp_path), Store)


def test_counts_inside_deferred_are_written_once_at_its_end(tmp_path):
    from pypto_cache import deferred_stats
    store = Store(tmp_path / "s")
    stats = tmp_path / "s" / "v2" / "stats" / "misses"
    with deferred_stats():
        with deferred_stats():
            for _ in range(3):
                store.get_action(KEY)
        assert not stats.exists()                 # nothing written yet
    assert Store(tmp_path / "s").stats()["misses"] == 3
    store.get_action(KEY)                         # outside: written at once
    assert int(stats.read_text()) == 4


# -- durability --

def test_sync_flushes_off_the_caller_and_coalesces(disk, monkeypatch):
    """store.sync() returns at once; the flush runs on a non-daemon thread (the
    interpreter waits for it at exit), and a request made while one runs is served
    by one more flush after it, not lost and not run in parallel."""
    import threading
    import pypto_cache.store as store_mod
    started, release, calls = threading.Event(), threading.Event(), []

    def slow_syncfs(root):
        calls.append(root)
        started.set()
        release.wait(10)

    monkeypatch.setattr(store_mod, "_syncfs", slow_syncfs)
    disk.put_bytes(b"payload")
    disk.sync()
    assert started.wait(10)
    worker = store_mod._syncing[disk.root]
    assert not worker.daemon
    disk.sync()                      # during the flush: coalesced into one more
    disk.sync()
    assert len(calls) == 1
    release.set()
    store_mod.wait_for_sync()
    assert len(calls) == 2 and disk.root not in store_mod._syncing
