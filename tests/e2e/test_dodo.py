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


def test_doit_list_and_partial_pipeline(tmp_path):
    r = _doit(["list"], tmp_path)
    assert r.returncode == 0, r.stderr
    for group in ("build", "build_1", "check", "frontend", "specialize"):
        assert group in r.stdout
    target = str(tmp_path / "out" / "quickstart" / "passes_dump" / "04_after_OutlineIncoreScopes.py")
    r = _doit(["run", target], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(target)
    out = tmp_path / "out" / "quickstart"
    assert not (out / "passes_dump" / "05_after_ConvertTensorToTileOps.py").exists()
    assert not (out / "kernel_config.py").exists()
    r = _doit(["list", "--all"], tmp_path)
    assert "pass:quickstart:04_OutlineIncoreScopes" in r.stdout
