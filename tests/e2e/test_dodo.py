"""dodo.py (one user of pypto_pipeline.project) exposes the examples' graphs: `doit list`
shows them and a single target builds only the part of its program's pipeline it needs."""
import json
import os
import subprocess
import sys
from pathlib import Path

from e2e_helpers import ROOT


def _doit(args, tmp_path):
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "store"),
               PYPTO_EXAMPLES_OUT=str(tmp_path / "out"), PYTHONPATH=str(ROOT))
    cmd, *rest = args
    return subprocess.run([sys.executable, "-m", "doit", cmd, "--db-file", str(tmp_path / "db"), *rest],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _dump_name(pass_name: str) -> str:
    from pypto.passes import pipeline
    from pypto.passes.base import PassOptions
    names = [p.name for p in pipeline(PassOptions())]
    return f"{names.index(pass_name) + 1:02d}_after_{pass_name}.py"


def _ran(stdout: str) -> list[str]:
    """The task names of the progress lines ("ran"/"cached" <stage> <seconds> <name>)."""
    return [line.split()[-1] for line in stdout.splitlines()
            if line.split()[:1] in (["ran"], ["cached"])]


def test_doit_list_and_partial_pipeline(tmp_path):
    r = _doit(["list"], tmp_path)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    assert {"build", "check", "build:quickstart", "build:matmul"} <= listed
    target = str(tmp_path / "out" / "quickstart" / "passes_dump" / _dump_name("OutlineIncoreScopes"))
    r = _doit(["run", target], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(target)
    assert {n.split(":")[1] for n in _ran(r.stdout)} == {"quickstart"}
    out = tmp_path / "out" / "quickstart"
    assert not (out / "passes_dump" / _dump_name("ConvertTensorToTileOps")).exists()
    assert not (out / "kernel_config.py").exists()
    assert not (tmp_path / "out" / "matmul").exists()
    r = _doit(["list", "--all"], tmp_path)
    assert "pass:quickstart:" + _dump_name("OutlineIncoreScopes")[:2] + "_OutlineIncoreScopes" in r.stdout


def test_one_pto_runs_only_its_programs_chain(tmp_path):
    """`doit <out>/quickstart/ptoas/<kernel>.pto` runs what `pypto build --target` runs for
    it: each earlier phase only what the next is laid out from, then the target's own
    step; no other example's task (it used to run every example's earlier phases)."""
    from pypto_pipeline.driver import build, build_partial
    from pypto_cache import open_store
    from examples.harness import load, source
    from pypto.ir.compiling import build_options
    pto = tmp_path / "out" / "quickstart" / "ptoas" / "add_incore_0.pto"
    r = _doit(["run", str(pto)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = _ran(r.stdout)
    assert pto.is_file() and ran and all(n.split(":")[1] == "quickstart" for n in ran)
    src, from_spec = source(load("quickstart"))
    opts = build_options(platform="a2a3sim", dump_passes=True)
    store = open_store(tmp_path / "other-store")
    part = build_partial("quickstart", src, opts, tmp_path / "partial", target=str(
        tmp_path / "partial" / "ptoas" / "add_incore_0.pto"), from_spec=from_spec, store=store)
    assert sorted(ran) == sorted(rec.name for rec in part.records)
    full = build("quickstart", src, opts, tmp_path / "full", from_spec=from_spec, store=store)
    assert len(ran) < len(full.records)
    assert pto.read_bytes() == (tmp_path / "full" / "ptoas" / "add_incore_0.pto").read_bytes()
