"""Run as a separate process by test_cache_concurrency.py.

build ROOT LOG START KEY...   single-flight "build" of each key, print results as JSON
hold ROOT KEY FIFO            take lock(KEY), then put_file(FIFO) -- blocks mid-write
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pypto_cache import Store, digest_bytes  # noqa: E402


def output_for(key: str) -> bytes:
    return (f"compiled {key}\n" * 5000).encode()


def build(root, log, start, keys):
    store = Store(root)
    time.sleep(max(0.0, float(start) - time.time()))  # line the workers up
    results = {}
    for key in keys:
        with store.lock(key):
            if store.get_action(key) is None:
                # Record the build in an append-only log: one short O_APPEND write.
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                os.write(fd, f"{os.getpid()} {key}\n".encode())
                os.close(fd)
                time.sleep(0.02)  # a build takes a while; others must wait, not redo it
                out = store.put_bytes(output_for(key))
                common = store.put_bytes(b"shared by every action")
                store.put_action(key, {"outputs": {"out": out, "common": common}})
        manifest = store.get_action(key)
        data = store.get_bytes(manifest["outputs"]["out"])
        assert digest_bytes(data) == manifest["outputs"]["out"]
        results[key] = manifest["outputs"]
    print(json.dumps(results, sort_keys=True))


def hold(root, key, fifo):
    store = Store(root)
    with store.lock(key):
        print("locked", flush=True)
        store.put_file(fifo)  # the test feeds part of the data, then kills us
    print("unreachable", flush=True)


if __name__ == "__main__":
    {"build": lambda *a: build(a[0], a[1], a[2], a[3:]), "hold": hold}[sys.argv[1]](*sys.argv[2:])
