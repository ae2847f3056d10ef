import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from pypto_cache import MemoryStore, Store, digest_bytes
from pypto_cache import locks

WORKER = str(Path(__file__).with_name("cache_worker.py"))
KEYS = [f"{i:02x}" * 16 for i in range(12)]


def test_four_processes_build_each_key_exactly_once(tmp_path):
    root, log = tmp_path / "store", tmp_path / "builds.log"
    start = time.time() + 1.5  # after every interpreter has started
    procs = []
    for w in range(4):
        order = KEYS[w * 3:] + KEYS[:w * 3]  # different orders: real contention, no lockstep
        procs.append(subprocess.Popen(
            [sys.executable, WORKER, "build", str(root), str(log), str(start), *order],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out))

    built = Counter(line.split()[1] for line in log.read_text().splitlines())
    assert built == Counter({k: 1 for k in KEYS})
    assert all(o == outs[0] for o in outs)
    store = Store(root)
    s = store.stats()
    assert s["actions"] == len(KEYS)
    assert s["objects"] == len(KEYS) + 1  # one per key plus the shared one
    # Each worker asks twice per key; only the one build per key missed.
    assert (s["hits"], s["misses"]) == (4 * 2 * len(KEYS) - len(KEYS), len(KEYS))
    assert list((root / "v2" / "tmp").iterdir()) == []


def test_counters_exact_under_concurrent_processes(tmp_path):
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from pypto_cache.counters import Counters\n"
            "c = Counters(%r)\n"
            "for _ in range(300): c.bump('hits')\n") % (str(Path(__file__).parents[2]), str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 4
    from pypto_cache.counters import Counters
    assert Counters(tmp_path).read("hits") == 1200


@pytest.mark.parametrize("kind", ["disk", "memory"])
def test_threads_single_flight(tmp_path, kind):
    store = Store(tmp_path / "s") if kind == "disk" else MemoryStore()
    builds = Counter()
    mu = threading.Lock()

    def worker():
        for key in KEYS[:4]:
            with store.lock(key):
                if store.get_action(key) is None:
                    with mu:
                        builds[key] += 1
                    time.sleep(0.01)
                    store.put_action(key, {"outputs": {"o": store.put_bytes(key.encode())}})

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == Counter({k: 1 for k in KEYS[:4]})
    assert store.stats()["misses"] == 4 and store.stats()["hits"] == 12


def _wait_for(predicate, timeout=30.0):
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.01)


def test_sigkill_mid_write_releases_lock_and_leaves_no_partial_object(tmp_path):
    root, fifo, key = tmp_path / "store", tmp_path / "feed", KEYS[0]
    os.mkfifo(fifo)
    payload = os.urandom(3 << 20)  # more than one 1 MiB read chunk
    proc = subprocess.Popen([sys.executable, WORKER, "hold", str(root), key, str(fifo)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        store = Store(root)
        assert store._keylocks.busy(key)  # held by the worker
        with open(fifo, "wb") as feed:
            feed.write(payload[:3 << 19])  # half: the first chunk reaches the temp file
            feed.flush()
            tmp_dir = root / "v2" / "tmp"
            # The worker is now blocked inside put_file with a partial temp file on disk.
            _wait_for(lambda: any(p.stat().st_size > 0 for p in tmp_dir.iterdir())
                      if tmp_dir.exists() else False)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    # The lock died with its holder.
    assert not store._keylocks.busy(key)
    # No object, partial or whole, became visible.
    assert store.stats()["objects"] == 0
    assert not store.has(digest_bytes(payload)) and not store.has(digest_bytes(payload[:1 << 20]))
    assert store.get_action(key) is None
    # The next build goes through, and gc sweeps the dead writer's temp file.
    with store.lock(key):
        assert store.get_action(key) is None
        store.put_action(key, {"outputs": {"o": store.put_bytes(payload)}})
    assert store.get_bytes(store.get_action(key)["outputs"]["o"]) == payload
    assert store.gc(10 ** 9, grace=0)["tmp"] == 1
    assert list((root / "v2" / "tmp").iterdir()) == []


def test_waiter_survives_lock_file_removal(tmp_path):
    # gc removes lock files it holds; someone already waiting on the old file must
    # not end up "holding" an unlinked inode alongside a newcomer on the new file.
    path = tmp_path / "locks" / "ab" / ("ab" * 16)
    first = locks.acquire(path)
    got = []

    def waiter():
        fd = locks.acquire(path)
        got.append(fd)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    os.unlink(path)  # as gc does, while holding it
    newcomer = locks.acquire(path)  # creates a fresh file and takes it
    locks.release(first)
    time.sleep(0.2)
    assert got == []  # the waiter retried on the fresh file and is still waiting
    locks.release(newcomer)
    t.join(timeout=10)
    assert len(got) == 1
    locks.release(got[0])
