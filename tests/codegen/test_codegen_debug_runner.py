"""debug/run.py: every runnable compile writes a re-runner next to its artifacts, made
from the orchestration's signature; it runs the folder again on its own."""
from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys

import pypto.language as pl
from pypto import ir
from pypto.codegen.debug_runner import run_script

PARAMS = [
    {"name": "x", "kind": "tensor", "direction": "In", "dtype": "fp32", "shape": [128, 128]},
    {"name": "idx", "kind": "tensor", "direction": "In", "dtype": "int32", "shape": [-1]},
    {"name": "s", "kind": "scalar", "direction": "In", "dtype": "fp32", "shape": []},
    {"name": "y", "kind": "tensor", "direction": "Out", "dtype": "bf16", "shape": [128, 128]},
]


def test_the_script_is_python_made_from_the_signature():
    text = run_script("P", PARAMS, "a5sim")
    tree = ast.parse(text)
    assert {f.name for f in tree.body if isinstance(f, ast.FunctionDef)} >= {
        "_inline_inputs", "_user_compare", "main"}
    assert "'x': torch.randn((128, 128), dtype=torch.float32)" in text
    assert "'idx': torch.randint(0, 8, (dyn,), dtype=torch.int32)" in text   # a dynamic dim
    assert "'s': 1.0" in text
    assert "'y': torch.zeros((128, 128), dtype=torch.bfloat16)" in text
    assert "OUTPUTS = ['y']" in text and "default='a5sim'" in text


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
            t = pl.load(a, [0, 0], [32, 64])
            out = pl.store(pl.add(t, t), [0, 0], out)
        return out


def test_a_compile_writes_a_runner_that_runs_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    out = tmp_path / "build"
    ir.compile(Twice, output_dir=str(out), platform="a2a3sim")
    script = out / "debug" / "run.py"
    # meant to be edited: a writable copy of its own, not a link into the store
    assert stat.S_IMODE(script.stat().st_mode) == 0o644 and script.stat().st_nlink == 1
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "store"))
    r = subprocess.run([sys.executable, str(script), "--seed", "3"], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("out: (32, 64) torch.float32 sum=")
    # an edit of the inputs is the user's to make: here, all ones, so out is all twos
    script.write_text(script.read_text().replace("torch.randn((32, 64), dtype=torch.float32)",
                                                 "torch.ones((32, 64), dtype=torch.float32)"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0 and "sum=4096 max|x|=2" in r.stdout, r.stdout + r.stderr
