"""pl.tile.matmul_bias (issue 11.2): lhs @ rhs plus a [1, N] bias in every row; the bias
goes GM -> Mat (one row, ND) -> Bias (pl.Mem.Bias) and pto.tmatmul.bias adds it. Against
torch in fp32, fp16 and bf16; a bias of the wrong shape is a typed error."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class MB:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
             bias: pl.Tensor[[1, {N}], pl.FP32],
             out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mb"):
            a_mat = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
            bias_mat = pl.load(bias, [0, 0], [1, {BN}], target_memory=pl.Mem.Mat)
            out = pl.store(pl.tile.matmul_bias(a_mat, b_mat, bias_mat), [0, 0], out)
        return out
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}


@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16"])
@pytest.mark.parametrize("m, k, n", [(64, 32, 64), (16, 64, 128)])
def test_the_bias_is_added_to_every_row(dtype, m, k, n, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(M=m, K=k, N=n, BN=n, DT=dtype), filename="/u/mb.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    a, b = torch.randn(m, k).to(TORCH[dtype]), torch.randn(k, n).to(TORCH[dtype])
    bias, out = torch.randn(1, n), torch.zeros(m, n)
    run(a, b, bias, out)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-4, atol=1e-4)
    assert "pto.tmatmul.bias" in (tmp_path / "out" / "ptoas" / "mb.pto").read_text()


def test_a_bias_of_another_width_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"the bias is one fp32 row of 64, got Tile\[1, 32\]"):
        pl.parse(SRC.format(M=64, K=32, N=64, BN=32, DT="FP32").replace(
            "bias: pl.Tensor[[1, 64], pl.FP32]", "bias: pl.Tensor[[1, 32], pl.FP32]"), filename="/u/mb.py")
