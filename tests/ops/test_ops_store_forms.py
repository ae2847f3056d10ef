"""pl.store's older argument order (issue 11.1): pl.store(tile, offsets, shapes, tensor),
as the reference's published programs write it, is pl.store(tile, offsets, tensor,
shapes). Against torch."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for b in pl.range(4):
            t = pl.load(x, [b * 16, 0], [16, 32])
            y = pl.store(pl.exp(t), [b * 16, 0], {TAIL})
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k(x, y)
        return y
"""


def test_shapes_before_the_tensor_is_the_same_store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    old = pl.parse(SRC.format(TAIL="[16, 32], y"), filename="/u/s.py")
    new = pl.parse(SRC.format(TAIL="y, [16, 32]"), filename="/u/s.py")
    assert old.as_python() == new.as_python()
    run = ir.compile(old, output_dir=tmp_path / "out", platform="a2a3sim")
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    run(x, y)
    assert torch.allclose(y, x.exp())
