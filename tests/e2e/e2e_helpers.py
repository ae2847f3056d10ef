"""Helpers of the end-to-end tests (a module name of its own: every test dir has a conftest)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


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
