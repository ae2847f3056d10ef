"""`pypto build` / `python -m pypto build`: the build graph for a user's own files."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TWO_KERNELS = textwrap.dedent('''
    import pypto.language as pl

    T = pl.Tensor[[64, 64], pl.FP32]


    @pl.program
    class Pair:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 x: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="left"):
                ta = pl.load(a, [0, 0], [64, 64])
                tb = pl.load(b, [0, 0], [64, 64])
                x = pl.store(pl.add(ta, tb), [0, 0], x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="right"):
                ua = pl.load(a, [0, 0], [64, 64])
                ub = pl.load(b, [0, 0], [64, 64])
                y = pl.store(pl.mul(ua, ub), [0, 0], y)
            return y
''')

JIT = textwrap.dedent('''
    import pypto.language as pl


    @pl.jit
    def scale_exp(a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out


    @pl.jit
    def needs_a_sample(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.neg(a)
        return out
''')

BAD = textwrap.dedent('''
    import pypto.language as pl


    @pl.program
    class Broken:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [0, 0], [64, 64])
                c = pl.store(pl.sort(t), [0, 0], c)
            return c
''')


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "pair.py").write_text(TWO_KERNELS)
    (tmp_path / "kernels" / "jitted.py").write_text(JIT)
    (tmp_path / "kernels" / "broken.py").write_text(BAD)
    return tmp_path


def pypto(proj: Path, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("PYPTO_CACHE_DISABLE", "PYTHONPATH")}
    env["PYPTO_CACHE_DIR"] = str(proj / "store")
    return subprocess.run([sys.executable, "-m", "pypto", *args], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=300)


def tasks(out: Path) -> list[dict]:
    return json.loads((out / "report" / "tasks.json").read_text())


def test_build_files_runs_every_program_and_reports_the_broken_one(proj):
    r = pypto(proj, "build", "kernels/pair.py", "kernels/broken.py", "kernels/jitted.py",
              "-o", "build", "-j", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "broken.py:12:" in r.stderr and "pl.sort is not an operator" in r.stderr
    assert "Traceback" not in r.stderr
    assert "needs_a_sample" in r.stderr and "not fully annotated" in r.stderr
    assert sorted(p.name for p in (proj / "build").iterdir()) == ["Pair", "scale_exp"]
    assert "-- " in r.stdout and " ran, " in r.stdout          # progress summary
    import torch
    from pypto.runtime import CompiledProgram
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    x, y = torch.zeros(64, 64), torch.zeros(64, 64)
    CompiledProgram.from_dir(proj / "build" / "Pair")(a, b, x, y)
    assert torch.allclose(x, a + b) and torch.allclose(y, a * b)
    s, o = torch.randn(32, 64), torch.zeros(32, 64)
    CompiledProgram.from_dir(proj / "build" / "scale_exp")(s, o)
    assert torch.allclose(o, s.exp(), rtol=1e-5, atol=1e-6)
    # again: served from the store, nothing runs, exit 0 without the broken file
    r = pypto(proj, "build", "kernels/pair.py", "-o", "build")
    assert r.returncode == 0, r.stderr
    assert not [t for t in tasks(proj / "build" / "Pair") if t["status"] == "ran"]


def test_target_builds_only_what_the_artifact_needs(proj):
    r = pypto(proj, "build", "kernels/pair.py", "-o", "build", "--list")
    assert r.returncode == 0, r.stderr
    listed = r.stdout.splitlines()
    pto = [ln for ln in listed if ln.startswith("pto ")]
    assert len(pto) == 2 and any("Pair/ptoas/left.pto" in ln for ln in pto), r.stdout
    assert any(ln.startswith("kernel ") for ln in listed)
    assert not (proj / "build" / "Pair" / "ptoas").exists()       # --list built no backend

    r = pypto(proj, "build", "kernels/pair.py", "-o", "build",
              "--target", "build/Pair/ptoas/left.pto")
    assert r.returncode == 0, r.stderr
    out = proj / "build" / "Pair"
    assert (out / "ptoas" / "left.pto").is_file()
    assert not (out / "ptoas" / "right.pto").exists()
    stages = {t["stage"] for t in tasks(out)}
    assert stages == {"frontend", "pass", "layout", "pto"}, stages
    assert [t["name"] for t in tasks(out) if t["stage"] == "pto"] == ["pto:Pair:left"]

    r = pypto(proj, "build", "kernels/pair.py", "-o", "build", "--target", "build/Pair/nope.pto")
    assert r.returncode == 2 and "no task of Pair writes" in r.stderr


def test_explain_and_options(proj):
    r = pypto(proj, "build", "kernels/pair.py", "-o", "build", "-q", "--dump-passes", "none")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""                                           # -q
    assert not (proj / "build" / "Pair" / "passes_dump").exists()   # the option reached the graph
    r = pypto(proj, "build", "kernels/pair.py", "-o", "build", "-q", "--dump-passes", "none",
              "--memory-planner", "DSA_RP", "--explain")
    assert r.returncode == 0, r.stderr
    assert "option memory_planner changed" in r.stdout, r.stdout


def test_console_script_is_installed():
    exe = shutil.which("pypto", path=os.path.dirname(sys.executable))
    assert exe, "the pypto console script is not installed next to this python"
    r = subprocess.run([exe, "build", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--target" in r.stdout
