"""Row softmax, RMSNorm and LayerNorm on a2a3sim against torch. The norms take a weight
(and bias) row vector [1, N]; their [M, 1] row statistics are handled both ways: the
reference's reshape to [1, M] around the scalar ops, and scalar/elementwise ops applied
to the [M, 1] column vector directly."""
import torch
import torch.nn.functional as F

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn

EPS = 1e-6


def test_softmax_example():
    check_example("softmax")


def test_rmsnorm_example_on_the_column_vector():
    check_example("rmsnorm")


def test_layernorm_example_reshape_workaround():
    check_example("layernorm")


@pl.jit
def softmax_tensor(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        y[:] = pl.row_expand_div(e, pl.row_sum(e))
    return y


@pl.jit
def rmsnorm_reshape(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        gamma = pl.load(w, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        ss = pl.reshape(pl.row_sum(pl.mul(t, t), tmp), [1, 32])
        r = pl.reshape(pl.rsqrt(pl.add(pl.mul(ss, 1.0 / 64), EPS)), [32, 1])
        pl.store(pl.col_expand_mul(pl.row_expand_mul(t, r), gamma), [0, 0], y)
    return y


@pl.jit
def layernorm_column(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        gamma = pl.load(w, [0, 0], [1, 64])
        beta = pl.load(b, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        mean = pl.mul(pl.row_sum(t, tmp), 1.0 / 64)
        c = pl.row_expand_sub(t, mean)
        var = pl.mul(pl.row_sum(pl.mul(c, c), tmp), 1.0 / 64)
        n = pl.row_expand_mul(c, pl.recip(pl.sqrt(pl.add(var, EPS))))
        pl.store(pl.add(pl.col_expand_mul(n, gamma), beta), [0, 0], y)     # [1, N] broadcast add
    return y


def test_softmax_on_tensors():
    x = randn(64, 64, seed=4, scale=3.0)
    y = torch.zeros(64, 64)
    softmax_tensor(x, y, config=CFG)
    close(y, torch.softmax(x, dim=-1), 1e-5, 1e-6)


def test_rmsnorm_reshape_workaround():
    x, w = randn(32, 64, seed=5), randn(1, 64, seed=6)
    y = torch.zeros(32, 64)
    rmsnorm_reshape(x, w, y, config=CFG)
    close(y, x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w, 1e-5, 1e-5)


def test_layernorm_on_the_column_vector():
    x, w, b = randn(32, 64, seed=7, scale=2.0) + 1, randn(1, 64, seed=8), randn(1, 64, seed=9)
    y = torch.zeros(32, 64)
    layernorm_column(x, w, b, y, config=CFG)
    close(y, F.layer_norm(x, (64,), w[0], b[0], EPS), 1e-5, 1e-5)
