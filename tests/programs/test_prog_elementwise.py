"""Elementwise programs on a2a3sim against torch: tile ops (examples/elementwise.py),
the same ops on tensors inside pl.at, operator sugar, and activations built from them."""
import pytest
import torch
import torch.nn.functional as F

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn


def test_tile_elementwise_example():
    check_example("elementwise")


def test_activations_example():
    check_example("activations")       # SiLU, GELU (tanh via exp), SwiGLU, GeGLU at 1e-4


@pl.jit
def tensor_elementwise(a: pl.Tensor, b: pl.Tensor, arith: pl.Out[pl.Tensor], unary: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pos = pl.add(pl.abs(b), 1.0)
        q = pl.div(pl.mul(pl.add(a, b), pl.sub(a, b)), pos)
        arith[:] = pl.maximum(q * 2.0, pl.minimum(a, b))
        u = pl.exp(pl.neg(a)) + pl.log(pos)
        u = u + pl.sqrt(pos) + pl.rsqrt(pos)
        unary[:] = u + pl.recip(pos) + pl.relu(a) - 0.25
    return arith, unary


@pl.jit
def tensor_silu(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = x * pl.recip(pl.exp(-x) + 1.0)
    return y


@pytest.fixture(scope="module")
def ab():
    return randn(64, 64, seed=1), randn(64, 64, seed=2)


def test_tensor_level_elementwise(ab):
    a, b = ab
    arith, unary = torch.zeros(64, 64), torch.zeros(64, 64)
    tensor_elementwise(a, b, arith, unary, config=CFG)
    pos = b.abs() + 1
    close(arith, torch.maximum((a + b) * (a - b) / pos * 2, torch.minimum(a, b)), 1e-5, 1e-5, "arith")
    want = torch.exp(-a) + torch.log(pos) + torch.sqrt(pos) + torch.rsqrt(pos) + 1 / pos + torch.relu(a) - 0.25
    close(unary, want, 1e-5, 1e-5, "unary")


def test_tensor_level_silu_with_operator_sugar():
    x = randn(32, 128, seed=3, scale=3.0)
    y = torch.zeros(32, 128)
    tensor_silu(x, y, config=CFG)
    close(y, F.silu(x), 1e-5, 1e-5)


@pl.jit
def big_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_tensor_op_larger_than_one_tile():
    """[256, 256] fp32 tensors: three 256 KiB operands do not fit UB; the compiler tiles the op."""
    a, b = randn(256, 256, seed=5), randn(256, 256, seed=6)
    out = torch.zeros(256, 256)
    big_add(a, b, out, config=CFG)
    close(out, a + b, 0, 0)
