"""pl.tensor.dim / pl.dim (issue 11.1): the extent of a tensor's dim, a constant the
parser folds, usable for loop bounds and window shapes; of a pl.dynamic dim, the extent
at run time (the orchestration asks the runtime, a kernel reads its tensor's
descriptor), so one artifact serves every size."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class D:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{R}, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[{R}, 64], pl.FP32]]) -> pl.Tensor[[{R}, 64], pl.FP32]:
        rows = pl.tensor.dim(x, 0)
        for i in pl.range(rows // 32):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
                t = pl.load(x, [i * 32, 0], [32, pl.dim(x, {AXIS})])
                o = pl.store(pl.muls(t, 2.0), [i * 32, 0], o)
        return o
"""


@pytest.mark.parametrize("rows", [64, 160])
def test_dims_drive_loop_bounds_and_windows(rows, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC.format(R=rows, AXIS=-1), filename="/u/d.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randn(rows, 64)
    o = torch.zeros(rows, 64)
    run(x, o)
    assert torch.equal(o, 2 * x)
    assert "dim(" not in prog.as_python() and f"= {rows}" in prog.as_python()   # folded


def test_an_axis_out_of_range_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"axis 2 is out of range for a rank-2 tensor"):
        pl.parse(SRC.format(R=64, AXIS=2), filename="/u/d.py")


DYN = """
import pypto.language as pl
N = pl.dynamic("N")

@pl.program
class D:
    @pl.function(type=pl.FunctionType.InCore)
    def rows_x3(self, x: pl.Tensor[[N, 64], pl.FP32],
                o: pl.Out[pl.Tensor[[N, 64], pl.FP32]]) -> pl.Tensor[[N, 64], pl.FP32]:
        for i in pl.range(0, x.shape[0], 16):         # the kernel reads its tensor's extent
            t = pl.load(x, [i, 0], [16, 64])
            o = pl.store(pl.muls(t, 3.0), [i, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[N, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[N, 64], pl.FP32]]) -> pl.Tensor[[N, 64], pl.FP32]:
        rows: pl.Scalar[pl.INT64] = pl.tensor.dim(x, 0)  # the orchestration asks the runtime
        for i in pl.range(rows // 32):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
                t = pl.load(x, [i * 32, 0], [32, 64])
                o = pl.store(pl.muls(t, 2.0), [i * 32, 0], o)
        half = pl.slice(o, [16, 64], [0, 0])
        half = self.rows_x3(half, half)
        return o
"""


def test_a_dynamic_dim_is_read_at_run_time(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(DYN, filename="/u/d.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    orch = next((tmp_path / "out" / "orchestration").glob("*.cpp")).read_text()
    assert "api->tensor_dim(api->ctx" in orch
    for rows in (64, 160):                              # one artifact, two sizes
        x = torch.randn(rows, 64)
        o = torch.zeros(rows, 64)
        run(x, o)
        want = 2 * x
        want[:16] *= 3
        assert torch.equal(o, want)
