"""Benchmark of the stage implementation digests (a script, not a test).

    .venv/bin/python bench/bench_impl.py [--repeat N]

What one process pays for `stage_impl` of every stage a compile keys (the 7 stages
and every pass: what pipeline/driver.py's program_key asks for), each in a FRESH
child process, on a copy of the tree (so it can be edited) with its own index dir:

    cold        no index: every module of the closures parsed
    warm        the index of the previous run: a stat per file
    after edit  one pass module edited (mtime set 10 s back, past the racy window):
                that file re-read, every stage's closure recomputed from the index
The machine may be shared: best and median of --repeat runs, and the load average.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import time
import pypto_cache  # noqa: F401  (a compile opens the store before it keys anything)
from pypto_pipeline import stages
from pypto.passes import ALL_PASSES
t = time.perf_counter()
for s in ("specialize", "frontend", "pto", "ptoas", "kernel", "orchestration", "config", "pass"):
    stages.stage_impl(s)
for p in ALL_PASSES:
    stages.stage_impl("pass", p.module_name)
print((time.perf_counter() - t) * 1e3)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_impl_") as tmp:
        tmp = Path(tmp)
        for folder in ("pypto", "pipeline", "cache"):
            shutil.copytree(ROOT / folder, tmp / folder,
                            ignore=shutil.ignore_patterns("__pycache__"))
        shim = tmp / "shim"       # the copy's cache/ and pipeline/ under their import names
        shim.mkdir()
        (shim / "pypto_cache").symlink_to(tmp / "cache")
        (shim / "pypto_pipeline").symlink_to(tmp / "pipeline")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), str(tmp)]),
                   PYPTO_IMPL_INDEX_DIR=str(tmp / "index"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def child() -> float:
            out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                                 text=True, check=True, cwd=tmp)
            return float(out.stdout.strip().splitlines()[-1])

        child()                    # bytecode for the copy, so every row pays the same imports
        edited = tmp / "pypto" / "passes" / "memory_reuse.py"
        rows: dict[str, list[float]] = {"cold": [], "warm": [], "after edit": []}
        for i in range(args.repeat):
            shutil.rmtree(tmp / "index", ignore_errors=True)
            rows["cold"].append(child())
            rows["warm"].append(child())
            with edited.open("a") as f:
                f.write(f"# edit {i}\n")
            past = time.time() - 10
            os.utime(edited, (past, past))
            rows["after edit"].append(child())
        load = os.getloadavg()[0]
        print(f"stage_impl of every stage, one fresh process each (ms; load {load:.1f})")
        for name, v in rows.items():
            print(f"  {name:11s} best {min(v):7.1f}   median {statistics.median(v):7.1f}")
        print(f"  warm / cold: {min(rows['warm']) / min(rows['cold']):.1%}")


if __name__ == "__main__":
    main()
