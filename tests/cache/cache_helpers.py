"""Test-only access to where each store keeps things, to damage or age entries."""
import os
import time

from pypto_cache import MemoryStore


def object_path(store, digest):
    return store._object_path(digest)


def damage(store, digest, how):
    """Corrupt a stored object in place: 'truncate' or 'flip' one byte."""
    if isinstance(store, MemoryStore):
        data, t = store._objects[digest]
        store._objects[digest] = (data[:-1] if how == "truncate" else _flip(data), t)
        return
    path = object_path(store, digest)
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[:-1] if how == "truncate" else _flip(data))


def _flip(data):
    i = len(data) // 2
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


def set_age(store, kind, name, seconds_ago, now=None):
    """Pretend an object was written / an action was last used `seconds_ago`."""
    t = (now or time.time()) - seconds_ago
    if isinstance(store, MemoryStore):
        table = store._objects if kind == "object" else store._actions
        table[name] = (table[name][0], t)
        return
    path = store._object_path(name) if kind == "object" else store._action_path(name)
    os.utime(path, (t, t))
