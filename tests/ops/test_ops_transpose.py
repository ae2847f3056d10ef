"""pl.transpose of a 2-D Vec tile (issue 11.3), whole and partial, against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class Tr:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tr"):
            t = pl.load(x, [0, 0], [32, 64])
            y = pl.store(pl.transpose(t, axis1=0, axis2=1), [0, 0], y)
            p = pl.load(x, [0, 0], [32, 64], valid_shape=[24, 40])
            z = pl.store(pl.tile.transpose(p, axis1=1, axis2=0), [0, 0], z)
        return y
"""


def test_transpose_matches_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/tr.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randn(32, 64)
    y, z = torch.zeros(64, 32), torch.full((64, 32), 5.0)
    run(x, y, z)
    assert torch.equal(y, x.T)
    assert torch.equal(z[:40, :24], x[:24, :40].T) and (z[40:] == 5.0).all() and (z[:, 24:] == 5.0).all()


def test_bad_axes_and_3d():
    with pytest.raises(TypeCheckError, match=r"are 0 and 1"):
        pl.parse(SRC.replace("axis1=0, axis2=1", "axis1=0, axis2=0"), filename="/u/tr.py")
