"""pl.tile.assemble (issue 11.3): one Vec tile written into a region of another, against
torch; other spaces are refused until built."""
from __future__ import annotations

import torch

from pypto.runtime import RunConfig


def test_vec_into_vec(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from assemble_jit import insert_vec
    x, src, y = torch.randn(32, 32), torch.randn(16, 16), torch.zeros(32, 32)
    insert_vec(x, src, y, config=RunConfig(platform="a2a3sim"))
    want = x.clone()
    want[8:24, 16:32] = src
    assert torch.equal(y, want + want)


def test_mat_into_mat_is_not_a_data_path():
    import pytest
    import pypto.language as pl
    from pypto.errors import TypeCheckError
    src = """
import pypto.language as pl

@pl.program
class As:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 32], pl.FP32], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        tx = pl.load(x, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        r = pl.tile.assemble(tx, tx, [0, 0])
        return o
"""
    with pytest.raises(TypeCheckError, match=r"assemble: Mat into Mat is not a data path"):
        pl.parse(src, filename="/u/as.py")
