"""dodo.py exposes the same task definitions: `doit list` shows them and a single
target builds only the part of the pipeline it needs."""
import os
import subprocess
import sys

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


def test_doit_list_and_partial_pipeline(tmp_path):
    r = _doit(["list"], tmp_path)
    assert r.returncode == 0, r.stderr
    for group in ("build", "build_1", "check", "frontend", "specialize"):
        assert group in r.stdout
    target = str(tmp_path / "out" / "quickstart" / "passes_dump" / _dump_name("OutlineIncoreScopes"))
    r = _doit(["run", target], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(target)
    out = tmp_path / "out" / "quickstart"
    assert not (out / "passes_dump" / _dump_name("ConvertTensorToTileOps")).exists()
    assert not (out / "kernel_config.py").exists()
    r = _doit(["list", "--all"], tmp_path)
    assert "pass:quickstart:" + _dump_name("OutlineIncoreScopes")[:2] + "_OutlineIncoreScopes" in r.stdout
