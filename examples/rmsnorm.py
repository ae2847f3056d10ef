"""RMSNorm of 32x64 rows with a weight row vector [1, 64]: the mean square and its rsqrt
are computed on the [32, 1] column vector directly (pl.mul / pl.add / pl.rsqrt on it),
then row_expand_mul and col_expand_mul."""
import pypto.language as pl

from examples._spec import TensorSpec

EPS = 1e-6


@pl.jit
def rmsnorm(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        gamma = pl.load(w, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        ms = pl.mul(pl.row_sum(pl.mul(t, t), tmp), 1.0 / 64)
        r = pl.rsqrt(pl.add(ms, EPS))
        pl.store(pl.col_expand_mul(pl.row_expand_mul(t, r), gamma), [0, 0], y)
    return y


ENTRY = rmsnorm
SAMPLE = (TensorSpec((32, 64), pl.FP32), TensorSpec((1, 64), pl.FP32), TensorSpec((32, 64), pl.FP32))
RTOL, ATOL = 1e-5, 1e-5


def inputs():
    import torch
    g = torch.Generator().manual_seed(13)
    return [torch.randn(32, 64, generator=g), torch.randn(1, 64, generator=g), torch.zeros(32, 64)]


def expected(x, w, y):
    import torch
    return {2: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w}
