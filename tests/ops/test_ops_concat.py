"""pl.concat of two tiles side by side (issue 11.3), against torch.cat."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.errors import TypeCheckError


def test_concat_matches_torch_cat(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from concat_jit import tile_concat
    from pypto.runtime import RunConfig
    a, b, c = torch.randn(32, 16), torch.randn(32, 24), torch.zeros(32, 40)
    tile_concat(a, b, c, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(c, torch.cat([a, b], dim=1))


def test_rows_must_agree():
    src = """
import pypto.language as pl

@pl.program
class Cc:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 16], pl.FP32], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        ta = pl.load(a, [0, 0], [32, 16])
        tb = pl.load(a, [0, 0], [16, 16])
        t = pl.concat(ta, tb)
        return o
"""
    with pytest.raises(TypeCheckError, match=r"do not stand side by side"):
        pl.parse(src, filename="/u/cc.py")
