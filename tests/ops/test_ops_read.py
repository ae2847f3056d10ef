"""pl.read(tensor, [i, j]) in a kernel (issue 11.1): one element of a tensor as a scalar,
read through a 1x1 partition (pto.load_scalar, bounds-checked), usable in arithmetic and
in control flow; on the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class Rd:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], cfg: pl.Tensor[[2, 8], pl.FP32],
          o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        scale = pl.read(cfg, [1, 3])
        if scale > 0.0:
            pl.store(pl.muls(t, scale), [0, 0], o)
        else:
            pl.store(pl.adds(t, pl.read(cfg, [0, 0])), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], cfg: pl.Tensor[[2, 8], pl.FP32],
             o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = self.k(x, cfg, o)
        return o
"""


@pytest.mark.parametrize("scale", [2.5, -1.0])
def test_read_feeds_arithmetic_and_a_branch(scale, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/rd.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randn(16, 64)
    cfg = torch.zeros(2, 8)
    cfg[1, 3], cfg[0, 0] = scale, 0.75
    o = torch.zeros(16, 64)
    run(x, cfg, o)
    assert torch.allclose(o, x * scale if scale > 0 else x + 0.75)
    assert "pto.load_scalar" in next((tmp_path / "out" / "ptoas").glob("*.pto")).read_text()


def test_read_outside_the_tensor_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"outside the tensor"):
        pl.parse(SRC.replace("pl.read(cfg, [1, 3])", "pl.read(cfg, [2, 0])"), filename="/u/rd.py")
