"""The on-disk store, shared by many processes.

<root>/v2/objects/a/<digest>    immutable blobs named by the xxh3_128 of their bytes
<root>/v2/actions/a/<key>       JSON manifest {"outputs": {name: digest}, ...}
<root>/v2/locks/keys.lock       per-key single flight: one locked byte per key (OFD
                                locks); where those are missing, one flock file per key
                                <root>/v2/locks/<key>
<root>/v2/tmp/                  temp files, same filesystem, renamed into place
<root>/v2/stats/                persistent hit/miss counters (and the remote tier's)

Sixteen shards per kind, named by the first hex digit (v1 had 256): a new directory
costs as much as a new file, and a fresh store's first compile made two hundred of
them; sixteen keep a 100k-object store at ~6k entries a folder, which ext4's hashed
directories look up as fast.

Correctness never depends on the locks, nor on fsync: every file appears by an
atomic rename, objects are published before the action that names them, and every
read re-hashes the bytes, so the worst a crash, a race or a power loss can cause is
a miss. Writes are therefore not fsynced one by one; `sync()` flushes the store's
file system once, when a build is done (durability per build, not per object), on a
background thread the interpreter waits for at exit: a compile returns without
waiting on the disk (syncfs flushes the whole file system, other tenants' writes
included), and its results are durable by the time the process ends.

A remote tier (remote.py, given by open_store from $PYPTO_REMOTE_CACHE) is asked only
when the local store misses: an action entry found there comes with every object it
names, each checked, into the local store and then its entry; a lone object read or
placed here comes the same way; an entry put here goes there too, objects first. With
no remote, no path of the store does anything more than it did without one.
"""
from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from . import locks
from .overlay import Overlay, cannot_write, warn_once
from .counters import Counters, deferred
from .fsutil import (EXECUTABLE, READ_ONLY, Mismatch, discard, link_into, publish, publish_bytes,
                     read_chunks, write_temp)
from .names import (CacheError, check_digest, check_key, check_manifest, digest_bytes,
                    is_digest, is_key, named_digests, new_hasher)

LAYOUT = "v2"
# what the remote tier did for this store: look-ups it answered or not, bytes each
# way, failures (each switched it off for a process), objects or entries refused
REMOTE_COUNTERS = ("remote_hits", "remote_misses", "remote_bytes_up", "remote_bytes_down",
                   "remote_errors", "remote_rejected")
SHARD = 1                  # hex digits naming an object's or action's folder


class Store:
    # A hit refreshes its action's mtime (the LRU clock) at most this often: one
    # utime per minute per entry is cheap, and it stays well inside the gc grace.
    TOUCH_INTERVAL = 60.0

    def __init__(self, root: str | os.PathLike, link: bool | None = None, remote=None):
        """`link`: place artifacts as hard links to their objects (default: unless
        $PYPTO_LINK_ARTIFACTS is 0), else as copies. `remote`: a remote.RemoteTier
        asked on a local miss and told of every new action entry (None: this disk only)."""
        self.root = Path(root).expanduser().absolute()
        if link is None:
            link = os.environ.get("PYPTO_LINK_ARTIFACTS", "1").strip().lower() not in (
                "0", "false", "no", "off")
        self._link = link
        base = self.root / LAYOUT
        self._objects = base / "objects"
        self._actions = base / "actions"
        self._objects_s, self._actions_s = f"{self._objects}{os.sep}", f"{self._actions}{os.sep}"
        self._locks = base / "locks"
        self._keylocks = locks.KeyLocks(self._locks)
        self._tmp = base / "tmp"
        self._tmp_s = str(self._tmp)
        self._counters = Counters(base / "stats")
        self._overlay: Overlay | None = None   # set once the directory refuses a write
        self._remote = remote

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # -- paths (every name is validated before it touches the filesystem) --
    def _object_path(self, digest: str) -> Path:
        check_digest(digest)
        return self._objects / digest[:SHARD] / digest

    def _action_path(self, key: str) -> Path:
        check_key(key)
        return self._actions / key[:SHARD] / key

    # the same paths as str, for the lookups a build makes thousands of (pathlib's
    # joins were a tenth of serving a warm graph)
    def _obj(self, digest: str) -> str:
        check_digest(digest)
        return f"{self._objects_s}{digest[:SHARD]}{os.sep}{digest}"

    def _act(self, key: str) -> str:
        check_key(key)
        return f"{self._actions_s}{key[:SHARD]}{os.sep}{key}"

    def _in_memory(self, digest: str) -> bytes | None:
        """The object's bytes if this process keeps it in memory (unwritable store)."""
        return self._overlay.get_object(digest) if self._overlay is not None else None

    def _unwritable(self, exc: BaseException) -> bool:
        """Switch to the in-memory overlay if `exc` says the directory cannot be
        written; False for any other error (which the caller re-raises)."""
        if not cannot_write(exc):
            return False
        if self._overlay is None:
            self._overlay = Overlay()
            warn_once(self.root, exc)
        return True

    # -- objects --
    def put_bytes(self, data: bytes) -> str:
        data = bytes(data)
        digest = digest_bytes(data)
        path = self._obj(digest)
        # An object file already there is trusted only once its bytes are checked: a
        # damaged one would otherwise stay damaged for every later build.
        if self._holds(path, digest, len(data)) and _touch_existing(path):
            return digest
        if self._overlay is None:
            try:
                publish_bytes(data, path, tmp_dir=self._tmp_s)
                return digest
            except OSError as e:
                if not self._unwritable(e):
                    raise
        self._overlay.put_object(digest, data)
        return digest

    def put_file(self, path) -> str:
        if self._overlay is not None:
            with open(path, "rb") as f:
                return self.put_bytes(f.read())
        with open(path, "rb") as f:
            try:
                tmp, digest = write_temp(read_chunks(f), self._tmp, durable=False)
            except OSError as e:
                if not self._unwritable(e):
                    raise
                return self.put_file(path)
        try:
            dest = self._object_path(digest)
            if self._holds(dest, digest, os.path.getsize(tmp)) and _touch_existing(dest):
                discard(tmp)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, dest)
        except BaseException:
            discard(tmp)
            raise
        return digest

    def has(self, digest: str) -> bool:
        path = self._obj(digest)
        return self._in_memory(digest) is not None or os.path.isfile(path)

    def get_bytes(self, digest: str) -> bytes | None:
        data = self._get_local(digest)
        if data is None and self._remote is not None:
            return self._object_from_remote(digest)
        return data

    def _get_local(self, digest: str) -> bytes | None:
        path = self._obj(digest)
        if (data := self._in_memory(digest)) is not None:
            return data
        try:
            fd = os.open(path, _RDONLY)
        except FileNotFoundError:
            return None
        try:
            data = _read_fd(fd)
            if digest_bytes(data) == digest:
                return data
            _drop_damaged(path, fd)
        finally:
            os.close(fd)
        return None

    def verify(self, digest: str) -> bool:
        """True if the object is present and its bytes hash to `digest`; a damaged
        object is removed (the next put writes it again)."""
        path = self._obj(digest)
        return self._in_memory(digest) is not None or self._check(path, digest)

    def _holds(self, path: Path, digest: str, size: int) -> bool:
        try:
            if os.stat(path).st_size != size:
                try:
                    _unlink(path)          # truncated or overgrown
                except OSError:            # a store we cannot write
                    pass
                return False
        except FileNotFoundError:
            return False
        return self._check(path, digest)

    def _check(self, path: Path, digest: str) -> bool:
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            return False
        with f:
            h = new_hasher()
            for chunk in read_chunks(f):
                h.update(chunk)
            if h.hexdigest() == digest:
                return True
            _drop_damaged(path, f.fileno())
        return False

    def materialize(self, digest: str, dest, executable: bool = False,
                    writable: bool = False) -> bool:
        """Put the object at `dest`, read-only (executable if asked): a hard link to
        the store's file where the file system allows, else a copy; its bytes are
        checked against `digest` either way (a damaged object is dropped, False).
        `writable`: a file meant to be edited, always a copy of its own, owner-writable."""
        if self._materialize(digest, dest, executable, writable):
            return True
        return (self._remote is not None and self._object_from_remote(digest) is not None
                and self._materialize(digest, dest, executable, writable))

    def _materialize(self, digest: str, dest, executable: bool, writable: bool = False) -> bool:
        path = self._obj(digest)
        mode = EXECUTABLE if executable else READ_ONLY
        if writable:              # a file meant to be edited: a copy of its own (0644/0755)
            mode |= 0o200
            link = False
        else:
            link = self._link
        if (data := self._in_memory(digest)) is not None:
            publish_bytes(data, dest, mode)
            return True
        try:
            fd = os.open(path, _RDONLY)
        except FileNotFoundError:
            return False
        try:
            st = os.fstat(fd)
            if st.st_size <= _WHOLE:
                # the common case, read at once: a few system calls a file, which is
                # what serving an unchanged compile into a new directory costs
                data = _read_view(fd, st.st_size)
                if digest_bytes(data) != digest:
                    _drop_damaged(path, fd)
                    return False
                if not (link and _linkable(fd, st, mode) and link_into(path, dest, st)):
                    publish_bytes(data, dest, mode)
                return True
            h = new_hasher()
            with os.fdopen(os.dup(fd), "rb") as f:
                for chunk in read_chunks(f):
                    h.update(chunk)
            if h.hexdigest() != digest:
                raise Mismatch(h.hexdigest())
            if link and _linkable(fd, st, mode) and link_into(path, dest, st):
                return True
            with os.fdopen(os.dup(fd), "rb") as f:
                # Temp file next to dest so the final rename stays on one filesystem.
                # No fsync: a materialised copy can always be made again from the
                # store; the rename alone keeps readers from seeing half a file.
                publish(read_chunks(f), Path(dest), Path(dest).parent, mode=mode, expect=digest,
                        durable=False)
        except Mismatch:
            _drop_damaged(path, fd)
            return False
        finally:
            os.close(fd)
        return True

    # -- actions --
    def get_action(self, key: str, verify: bool = True, present: bool = True) -> dict | None:
        """The manifest under `key` if every object it names is in the store: hashed
        (`verify`), or only found, for a caller that reads or copies each object with
        a check of its own (get_bytes, materialize) and would notice damage there; or,
        with `present=False`, not even looked for (the caller reads every one of them)."""
        path = self._act(key)
        if self._overlay is not None and (raw := self._overlay.get_action(key)) is not None:
            return json.loads(raw)
        manifest, mtime = _load_manifest(path)
        found = self.verify if verify else self.has
        if manifest is None or (present and not all(found(d) for d in set(manifest["outputs"].values()))):
            self._counters.bump("misses")
            if self._remote is not None:
                return self._action_from_remote(key, found)
            return None
        self._counters.bump("hits")
        if time.time() - mtime > self.TOUCH_INTERVAL:
            try:
                os.utime(path)
            except OSError:
                pass  # lost an LRU refresh: harmless
        return manifest

    def put_action(self, key: str, manifest: dict) -> None:
        data = self._put_action_local(key, manifest)
        remote = self._remote
        if remote is not None and remote.writable and not remote.disabled:
            # the outputs, and what else the entry names that is here (a report...)
            outputs = set(manifest["outputs"].values())
            named = outputs | {d for d in named_digests(manifest) - outputs if self.has(d)}
            remote.publish(key, data, named, self._get_local, self._counters)

    def _put_action_local(self, key: str, manifest: dict) -> bytes:
        path = self._act(key)
        data = _encode_manifest(manifest)
        missing = sorted(d for d in set(manifest["outputs"].values()) if not self.has(d))
        if missing:
            raise CacheError(f"put_action({key}): objects not in the store: {missing}")
        if self._overlay is None:
            try:
                publish_bytes(data, path, tmp_dir=self._tmp_s)
                return data
            except OSError as e:
                if not self._unwritable(e):
                    raise
        self._overlay.put_action(key, data)
        return data

    def publish_objects(self, digests) -> bool:
        """Put these objects of this store into the remote tier (those it lacks, asked
        afresh: it may have evicted some), for another machine to read; False with no
        writable remote, or if it failed."""
        remote = self._remote
        if remote is None or not remote.writable or remote.disabled:
            return False
        return remote.publish_objects(digests, self._get_local, self._counters, recheck=True)

    @property
    def remote(self):
        """The remote tier behind this store (None: this disk only)."""
        return self._remote

    # -- the remote tier, asked on a local miss --
    def _action_from_remote(self, key: str, found) -> dict | None:
        """The remote's entry under `key` once every object it names is here: each is
        fetched (those missing here, in a few round trips), checked and put into this
        store, then the entry; None if the remote lacks any of its outputs."""
        remote = self._remote
        if remote.disabled:
            return None
        manifest = remote.fetch_action(key, self._counters)
        if manifest is None:
            return None
        outputs = set(manifest["outputs"].values())
        need = sorted(d for d in outputs if not found(d))
        # other objects it names come along if the remote has them (never required)
        extra = sorted(d for d in named_digests(manifest) - outputs if not self.has(d))
        got = remote.fetch_objects(need + extra, self._counters)
        if got is None:
            return None
        if any(d not in got for d in need):
            self._counters.bump("remote_misses")
            return None
        for data in got.values():
            self.put_bytes(data)
        self._put_action_local(key, manifest)
        self._counters.bump("remote_hits")
        return manifest

    def _object_from_remote(self, digest: str) -> bytes | None:
        remote = self._remote
        if remote.disabled:
            return None
        got = remote.fetch_objects([digest], self._counters)
        if got is None:
            return None
        data = got.get(digest)
        if data is None:
            self._counters.bump("remote_misses")
            return None
        self.put_bytes(data)
        self._counters.bump("remote_hits")
        return data

    def sync(self) -> None:
        """Flush what this store's file system holds in memory to disk, once (syncfs;
        os.sync where that is missing). Nothing to do for a store that cannot be written."""
        if self._overlay is not None:
            return
        _sync_later(self.root)

    @contextmanager
    def lock(self, key: str):
        """Per-key single flight across processes and threads; in-process only once
        the store cannot be written (no lock file can be made)."""
        check_key(key)
        handle = None
        if self._overlay is None:
            try:
                handle = self._keylocks.acquire(key)
            except OSError as e:
                if not self._unwritable(e):
                    raise
        if handle is not None:
            try:
                yield
            finally:
                self._keylocks.release(handle)
            return
        with self._overlay.lock(key):
            yield

    # -- bookkeeping --
    def stats(self) -> dict:
        objects = list(_files(self._objects, is_digest))
        actions = list(_files(self._actions))
        object_bytes = sum(_size(p) for p in objects)
        action_bytes = sum(_size(p) for p in actions)
        return {
            "objects": len(objects), "object_bytes": object_bytes,
            "actions": len(actions), "action_bytes": action_bytes,
            "bytes": object_bytes + action_bytes,
            "hits": self._counters.read("hits"), "misses": self._counters.read("misses"),
            **{name: self._counters.read(name) for name in REMOTE_COUNTERS},
            "root": str(self.root),
        }

    def gc(self, max_size: int, grace: float | None = None) -> dict:
        from .gc import DEFAULT_GRACE, collect
        grace = DEFAULT_GRACE if grace is None else grace
        result = collect(self, max_size, grace)
        cutoff = time.time() - grace
        # Leftovers of killed writers, and lock files of keys that have no entry.
        result["tmp"] = sum(1 for p in _flat_files(self._tmp) if _older(p, cutoff) and _unlink(p))
        result["locks"] = sum(
            1 for p in _flat_files(self._locks)
            if is_key(p.name) and not os.path.exists(self._act(p.name))
            and _older(p, cutoff) and locks.remove_if_free(p))
        return result

    def clear(self) -> None:
        for p in [*_files(self._actions), *_files(self._objects, is_digest),
                  *_flat_files(self._tmp)]:
            _unlink(p)
        for p in _flat_files(self._locks):
            if is_key(p.name):
                locks.remove_if_free(p)
        for name in ("hits", "misses", *REMOTE_COUNTERS):
            self._counters.reset(name)

    # -- primitives for gc.collect --
    def _gc_scan(self):
        from .gc import ActionInfo, ObjectInfo
        actions = []
        for p in _files(self._actions):
            manifest, mtime = _load_manifest(p)
            if mtime is None:
                continue
            outputs = frozenset(manifest["outputs"].values()) if manifest else frozenset()
            actions.append(ActionInfo(p.name, _size(p), mtime if manifest else 0.0, outputs))
        objects = {}
        for p in _files(self._objects, is_digest):
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            objects[p.name] = ObjectInfo(p.name, st.st_size, st.st_mtime)
        return actions, objects

    def _gc_remove_action(self, key: str, cutoff: float) -> bool:
        handle = self._keylocks.acquire(key, blocking=False)
        if handle is None:
            return False  # a build holds this key
        try:
            path = self._action_path(key)
            if not _older(path, cutoff):
                return False  # used since the scan
            return _unlink(path)
        finally:
            self._keylocks.drop(key)  # safe: we hold it
            self._keylocks.release(handle)

    def _gc_remove_object(self, digest: str, cutoff: float) -> bool:
        path = self._object_path(digest)
        return _older(path, cutoff) and _unlink(path)


# -- helpers --
def _encode_manifest(manifest: dict) -> bytes:
    check_manifest(manifest)
    try:
        return json.dumps(manifest, sort_keys=True, separators=(",", ":"),
                          allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise CacheError(f"manifest is not plain JSON: {e}") from None


def _load_manifest(path: Path) -> tuple[dict | None, float | None]:
    """(manifest or None if unusable, mtime or None if absent)."""
    try:
        fd = os.open(path, _RDONLY)
    except FileNotFoundError:
        return None, None
    try:
        mtime = os.fstat(fd).st_mtime
        raw = _read_fd(fd)
    finally:
        os.close(fd)
    try:
        return check_manifest(json.loads(raw)), mtime
    except (ValueError, CacheError):
        return None, mtime


def _touch_existing(path: Path) -> bool:
    """True if `path` exists; refreshes its mtime so gc's grace protects a re-put object."""
    try:
        os.utime(path)
        return True
    except FileNotFoundError:
        return False
    except OSError:            # read-only store, or not ours to touch: it is there
        return os.path.exists(path)


def _syncfs(root: Path) -> None:
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    except OSError:
        os.sync()
    finally:
        os.close(fd)


_syncing: dict[Path, threading.Thread] = {}   # root -> its flusher while one runs
_sync_guard = threading.Lock()


def _sync_later(root: Path) -> None:
    """syncfs(root) on a non-daemon thread (joined by the interpreter at exit). A
    request made while a flush of the same file system is under way runs another one
    after it: a flush only covers what was written before it started."""
    with _sync_guard:
        pending = _syncing.get(root)
        if pending is not None:
            pending.again = True
            return
        worker = threading.Thread(target=_flush, args=(root,), name="pypto-store-sync")
        worker.again = False
        _syncing[root] = worker
    worker.start()


def _flush(root: Path) -> None:
    me = _syncing[root]
    while True:
        _syncfs(root)
        with _sync_guard:
            if not me.again:
                del _syncing[root]
                return
            me.again = False


def wait_for_sync() -> None:
    """Block until every flush started by this process is done (tests, benchmarks)."""
    for t in list(_syncing.values()):
        t.join()


# raw descriptors: a lookup reads thousands of small files per build, and the
# buffered file object costs more than the read itself
_RDONLY = os.O_RDONLY | os.O_CLOEXEC
_WHOLE = 64 << 20          # objects up to this size are copied in one read and one write


_buffers = threading.local()
_BUFFERED = 1 << 20        # objects below this size are read into a reused buffer


def _read_view(fd: int, size: int) -> memoryview:
    """The whole file, in this thread's reusable buffer (valid until its next call).
    A fresh process pays a page fault per page of every new bytes object (glibc gives
    freed memory back): reading a warm compile's objects into new bytes cost 6x this."""
    if size >= _BUFFERED:
        return memoryview(_read_fd(fd, size))
    buf = getattr(_buffers, "buf", None)
    if buf is None or len(buf) <= size:
        buf = _buffers.buf = bytearray(max(size + 1, 1 << 16))
    view = memoryview(buf)
    # one read of a byte more than fstat said: a regular file returns less only at
    # its end, so a whole object takes a single call
    n = os.readv(fd, [view[:size + 1]])
    if n == size:
        return view[:n]
    os.lseek(fd, 0, os.SEEK_SET)   # it changed since fstat: read it as it is now
    return memoryview(_read_fd(fd))


def _read_fd(fd: int, size: int | None = None) -> bytes:
    """The whole file. Sized reads: os.read(fd, n) allocates n bytes before it shrinks
    them, and a 1 MiB buffer per small object was most of a warm compile's reads."""
    if size is None:
        size = os.fstat(fd).st_size
    parts = []
    while chunk := os.read(fd, size + 1 if not parts else 1 << 20):
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _linkable(fd: int, st: os.stat_result, mode: int) -> bool:
    """The object can be linked as an artifact of `mode`: it has that mode, or is
    given it now (a new object is read-only, a kernel's becomes executable when first
    placed; a writable object of an older store becomes read-only). The same bytes
    wanted once executable and once not are copied the second way."""
    have = st.st_mode & 0o777
    if have == mode:
        return True
    if have & 0o222 == 0 and not (have == READ_ONLY and mode == EXECUTABLE):
        return False
    try:
        os.fchmod(fd, mode)
        return True
    except OSError:                # not ours: copy
        return False


def _drop_damaged(path: Path, fd: int) -> None:
    # Only unlink the file we actually read: a writer may have just replaced it.
    try:
        st, fst = os.stat(path), os.fstat(fd)
        if (st.st_ino, st.st_dev) == (fst.st_ino, fst.st_dev):
            os.unlink(path)
    except OSError:            # gone already, or a store we cannot write
        pass


def _scandir(top):
    try:
        return list(os.scandir(top))
    except FileNotFoundError:
        return []


def _files(top: Path, valid=is_key):
    """Entries of a <top>/<shard>/<name> tree, skipping anything we did not write."""
    for shard in _scandir(top):
        if len(shard.name) == SHARD and shard.is_dir(follow_symlinks=False):
            for e in _scandir(shard.path):
                if (valid(e.name) and e.name.startswith(shard.name)
                        and e.is_file(follow_symlinks=False)):
                    yield Path(e.path)


def _flat_files(top: Path):
    return [Path(e.path) for e in _scandir(top) if e.is_file(follow_symlinks=False)]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime <= cutoff
    except FileNotFoundError:
        return False


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
