"""Elementwise tile ops in one vector kernel: add/sub/mul/div, the scalar forms
(`t * 2.0`, `pl.add(t, 1.0)` -> muls/adds), maximum/minimum and the unary ops
exp/log/sqrt/rsqrt/recip/neg/abs/relu."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def elementwise(a: pl.Tensor, b: pl.Tensor, arith: pl.Out[pl.Tensor], unary: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        y = pl.load(b, [0, 0], [64, 64])
        pos = pl.add(pl.abs(y), 1.0)                      # > 0: safe to divide by, log, sqrt
        q = pl.div(pl.mul(pl.add(x, y), pl.sub(x, y)), pos)
        r = pl.maximum(q * 2.0, pl.minimum(x, y))
        pl.store(pl.sub(r, 0.5), [0, 0], arith)
        u = pl.add(pl.exp(pl.neg(x)), pl.log(pos))
        u = pl.add(u, pl.sqrt(pos))
        u = pl.add(u, pl.rsqrt(pos))
        u = pl.add(u, pl.recip(pos))
        u = pl.add(u, pl.relu(x))
        pl.store(u, [0, 0], unary)
    return arith, unary


ENTRY = elementwise
SAMPLE = (TensorSpec((64, 64), pl.FP32),) * 4
RTOL, ATOL = 1e-5, 1e-5


def inputs():
    import torch
    g = torch.Generator().manual_seed(10)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g),
            torch.zeros(64, 64), torch.zeros(64, 64)]


def expected(a, b, arith, unary):
    import torch
    pos = b.abs() + 1
    r = torch.maximum((a + b) * (a - b) / pos * 2, torch.minimum(a, b)) - 0.5
    u = torch.exp(-a) + torch.log(pos) + torch.sqrt(pos) + torch.rsqrt(pos) + 1 / pos + torch.relu(a)
    return {2: r, 3: u}
