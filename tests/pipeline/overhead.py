"""Per-task overhead of the runner (not a test; run by hand):

    .venv/bin/python tests/pipeline/overhead.py [kernels] [passes]

Graph: `kernels` chains of `passes` trivial pass steps; reports ms/task for a
cold build, a no-op in the same db (doit skips every task) and a warm build in
a fresh db (every task a store hit).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE)]

from pypto_cache import Store  # noqa: E402
from pypto_pipeline import Ref, Step, run_steps  # noqa: E402


def ident(inputs, options):
    return {"text": inputs["text"] + b"."}


def graph(store, kernels, passes):
    steps = []
    for k in range(kernels):
        prev = Ref(None, store.put_bytes(f"kernel {k}\n".encode()))
        for p in range(passes):
            name = f"pass:k{k}:{p:02d}"
            steps.append(Step(name, "pass", ident, "impl", {"p": p}, {"text": prev}, ("text",)))
            prev = Ref(name, "text")
    return steps


def timed(fn, n=9):
    """(best, median) of n runs: the machine may be shared, best is the floor."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out), statistics.median(out)


def main():
    kernels = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        store = Store(Path(tmp) / "store")
        steps = graph(store, kernels, passes)
        n = len(steps)
        db = str(Path(tmp) / "db.sqlite")
        t = time.perf_counter()
        run_steps(steps, store=store, db_path=db)
        cold = time.perf_counter() - t
        noop = timed(lambda: run_steps(steps, store=store, db_path=db))
        fresh = iter(range(100))
        warm = timed(lambda: run_steps(steps, store=store, db_path=str(Path(tmp) / f"w{next(fresh)}.sqlite")))
        warm_mem = timed(lambda: run_steps(steps, store=store, db_path=None))
        print(f"{n} tasks, ms/task: cold {cold / n * 1e3:.2f}")
        for label, (best, med) in (("no-op, same db", noop), ("warm, fresh db", warm),
                                   ("warm, db=None", warm_mem)):
            print(f"  {label:15s} best {best / n * 1e3:.3f}  median {med / n * 1e3:.3f}"
                  f"  ({best * 1e3:.0f} / {med * 1e3:.0f} ms total)")


if __name__ == "__main__":
    main()
