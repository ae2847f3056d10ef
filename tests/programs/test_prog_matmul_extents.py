"""Tensor-level matmuls whose extents are not whole 16 x 16 fractals (the one row of a
decode step, 17 rows, K = 100): the operands are loaded into the next fractal box with
only their window valid, the cube multiplies the valid parts, a store writes the valid
part and the vector ops work on the tensor's own shape. Operands too large for L0 are
blocked over the valid part: the loops walk the whole blocks inside it, the block at its
edge is peeled with its valid part, blocks of padding only are not computed."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close, randn

STORE = """
import pypto.language as pl

@pl.program
class MM:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{D}], w: pl.Tensor[{W}, pl.{D}],
             out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm"):
            out[:] = pl.matmul(a, w, b_trans={T}, out_dtype=pl.FP32)
        return out
"""

VECTOR = """
import pypto.language as pl

@pl.program
class MV:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{M}, 128], pl.BF16], w: pl.Tensor[[128, 128], pl.BF16],
             bias: pl.Tensor[[{M}, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[{M}, 128], pl.FP32]]) -> pl.Tensor[[{M}, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mv"):
            out[:] = pl.add(pl.exp(pl.matmul(a, w, b_trans=True, out_dtype=pl.FP32)), bias)
        return out
"""


def _compile(src, tmp_path):
    return ir.compile(pl.parse(src, filename="/u/mm.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim",
                      verification_level="roundtrip")


@pytest.mark.parametrize("m, k, n, trans, dtype", [
    (1, 128, 64, False, "BF16"),       # a decode step's one row
    (17, 40, 24, False, "FP32"),
    (5, 100, 72, True, "FP32"),
    (3, 33, 7, True, "FP32"),
])
def test_a_matmul_of_any_extents_matches_torch(m, k, n, trans, dtype, tmp_path):
    w_shape = [n, k] if trans else [k, n]
    c = _compile(STORE.format(M=m, K=k, N=n, W=w_shape, T=trans, D=dtype), tmp_path)
    tdt = torch.float32 if dtype == "FP32" else torch.bfloat16
    a, w, out = randn(m, k, seed=m + k).to(tdt), randn(*w_shape, seed=n).to(tdt), torch.full((m, n), 7.0)
    c(a, w, out)
    close(out, a.float() @ (w.float().T if trans else w.float()), 1e-3, 1e-3)


@pytest.mark.parametrize("m", [1, 17])
def test_vector_ops_on_such_a_result_take_the_tensors_shape(m, tmp_path):
    c = _compile(VECTOR.format(M=m), tmp_path)
    a = (randn(m, 128, seed=1) * 0.1).to(torch.bfloat16)
    w = (randn(128, 128, seed=2) * 0.1).to(torch.bfloat16)
    bias, out = randn(m, 128, seed=3), torch.zeros(m, 128)
    c(a, w, bias, out)
    close(out, torch.exp(a.float() @ w.float().T) + bias, 1e-4, 1e-4)


@pytest.mark.parametrize("m, k, n, trans", [
    (17, 1000, 64, False),     # K steps over 1000 of a 1008 box: the last one valid to 232
    (100, 256, 300, False),    # a grid of result blocks, partial along both M and N
    (33, 500, 120, True),      # the right operand read transposed
])
def test_l0_blocks_walk_the_valid_part_of_partial_operands(m, k, n, trans, tmp_path):
    w_shape = [n, k] if trans else [k, n]
    c = _compile(STORE.format(M=m, K=k, N=n, W=w_shape, T=trans, D="FP32"), tmp_path)
    a, w, out = randn(m, k, seed=k), randn(*w_shape, seed=n), torch.full((m, n), 7.0)
    c(a, w, out)
    close(out, a @ (w.T if trans else w), 1e-4, 1e-4)
    pto = next((tmp_path / "o").rglob("*.pto")).read_text()
    assert "scf.for" in pto and "pto.textract" in pto          # (blocked for L0 indeed)
