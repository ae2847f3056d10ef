"""pypto.testing: a user's `pytest -n 2` compiles the same programs in both workers
against one store, and each task is built once across the workers."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from test_cli import JIT, TWO_KERNELS

CONFTEST = 'pytest_plugins = ["pypto.testing"]\n'

TEST = textwrap.dedent('''
    import os

    import torch
    from pypto.runtime import RunConfig

    from kernels import Pair
    from jitted import scale_exp


    def test_pair_{n}(pypto_compile):
        compiled = pypto_compile(Pair, platform="a2a3sim")
        a, b = torch.randn(64, 64), torch.randn(64, 64)
        x, y = torch.zeros(64, 64), torch.zeros(64, 64)
        compiled(a, b, x, y)
        assert torch.allclose(x, a + b) and torch.allclose(y, a * b)


    def test_scale_exp_{n}(pypto_compile, pypto_store):
        compiled = pypto_compile(scale_exp, config=RunConfig(platform="a2a3sim"))
        assert os.environ["PYPTO_CACHE_DIR"] == str(pypto_store)
        a, out = torch.randn(32, 64), torch.zeros(32, 64)
        compiled(a, out)
        assert torch.allclose(out, a.exp(), rtol=1e-5, atol=1e-6)
''')


def _run(proj: Path, *args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k not in ("PYPTO_CACHE_DIR", "PYPTO_CACHE_DISABLE",
                                                         "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=300)


def _project(tmp_path: Path, n_files: int) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pytest.ini").write_text("[pytest]\n")
    (proj / "conftest.py").write_text(CONFTEST)
    (proj / "kernels.py").write_text(TWO_KERNELS)
    (proj / "jitted.py").write_text(JIT)
    for n in range(n_files):
        (proj / f"test_k{n}.py").write_text(TEST.format(n=n))
    return proj


def test_xdist_workers_share_one_store_and_build_each_task_once(tmp_path):
    proj = _project(tmp_path, 4)
    base = tmp_path / "bt"
    r = _run(proj, "-n", "2", "--basetemp", str(base))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 passed" in r.stdout, r.stdout

    reports = [p for p in sorted(base.glob("popen-gw*/*/*/report/tasks.json"))
               if not p.parts[-4].endswith("current")]      # pytest's "...current" links
    assert len(reports) == 8                                   # one compile per test
    assert {p.relative_to(base).parts[0] for p in reports} == {"popen-gw0", "popen-gw1"}
    ran = Counter(t["name"] for p in reports for t in json.loads(p.read_text())
                  if t["status"] == "ran")
    assert ran and max(ran.values()) == 1, ran.most_common(3)  # no task built twice
    assert {n.split(":")[1] for n in ran} == {"Pair", "_jit_scale_exp"}

    # one store for the run: every action in it was built by exactly one of those tasks
    store = base / "pypto-store"
    actions = [json.loads(p.read_text()) for p in (store / "v2" / "actions").glob("*/*")]
    assert sum(1 for a in actions if "stage" in a) == sum(ran.values())
    assert not list(base.glob("popen-gw*/pypto-store"))        # none per worker


def test_store_option_and_no_xdist(tmp_path):
    """Without xdist the store is in the run's base temp; --pypto-store puts it anywhere
    (a copy of that store there: the run builds nothing)."""
    proj = _project(tmp_path, 1)
    r = _run(proj, "--basetemp", str(tmp_path / "bt"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "bt" / "pypto-store" / "v2" / "actions").is_dir()
    kept = tmp_path / "ci-cache"
    shutil.copytree(tmp_path / "bt" / "pypto-store", kept)
    r = _run(proj, "--basetemp", str(tmp_path / "bt2"), f"--pypto-store={kept}")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [t for p in (tmp_path / "bt2").glob("*/*/report/tasks.json")
            if not p.parts[-4].endswith("current") for t in json.loads(p.read_text())]
    assert rows and {t["status"] for t in rows} == {"cached"}
    assert not (tmp_path / "bt2" / "pypto-store").exists()
