"""An fp32 matmul on the simulated cube sums each element's products in K order, one
IEEE multiply and one IEEE add per step (never fused), whatever blocks of the result
the tile library computes at a time -- 4 x 24 and 8-wide column blocks here, 6 x 32 on
AVX-512: the bits equal torch's step-by-step sum."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class MM:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{M}, {K}], pl.FP32], b: pl.Tensor[[{K}, {N}], pl.FP32],
          c: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        l = pl.move(pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        r = pl.move(pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(l, r), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.FP32], b: pl.Tensor[[{K}, {N}], pl.FP32],
             c: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""


def k_order(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]      # a rounded product, then a rounded sum
    return acc


@pytest.mark.parametrize("m, k, n", [(16, 32, 16), (16, 64, 80), (64, 32, 128), (48, 48, 80)])
def test_fp32_products_sum_in_k_order_bit_for_bit(m, k, n, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(M=m, K=k, N=n), filename="/u/mm.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    g = torch.Generator().manual_seed(m * k + n)
    a, b = torch.randn(m, k, generator=g) * 100, torch.randn(k, n, generator=g) / 3
    c = torch.zeros(m, n)
    run(a, b, c)
    assert torch.equal(c.view(torch.int32), k_order(a, b).view(torch.int32))
