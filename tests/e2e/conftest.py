import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@pytest.fixture
def iso(tmp_path, monkeypatch):
    """A private store and build base for one test."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("PYPTO_CACHE_DISABLE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_py(script: Path | str, env_extra: dict, cwd: Path, args=()):
    """Run a Python file in a fresh interpreter; return its stdout (fails on error)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
    proc = subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def tasks(out_dir) -> list[dict]:
    import json
    return json.loads((Path(out_dir) / "report" / "tasks.json").read_text())


def artifacts(out_dir) -> dict[str, bytes]:
    """Every artifact of a compile, by relative path (the report is about the run)."""
    out = Path(out_dir)
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.relative_to(out).parts[0] != "report"}
