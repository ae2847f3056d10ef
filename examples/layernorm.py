"""LayerNorm of 32x64 rows with weight and bias row vectors [1, 64], in the reference's
form: the [32, 1] row statistics are reshaped to [1, 32] for the scalar ops and back,
then row_expand_sub/div, col_expand_mul, and col_expand + add for the bias."""
import pypto.language as pl

from examples._spec import TensorSpec

EPS = 1e-5


@pl.jit
def layernorm(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        gamma = pl.load(w, [0, 0], [1, 64])
        beta = pl.load(b, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        mean = pl.reshape(pl.mul(pl.reshape(pl.row_sum(t, tmp), [1, 32]), 1.0 / 64), [32, 1])
        c = pl.row_expand_sub(t, mean)
        var = pl.reshape(pl.row_sum(pl.mul(c, c), tmp), [1, 32])
        std = pl.reshape(pl.sqrt(pl.add(pl.mul(var, 1.0 / 64), EPS)), [32, 1])
        n = pl.col_expand_mul(pl.row_expand_div(c, std), gamma)
        pl.store(pl.add(n, pl.col_expand(n, beta)), [0, 0], y)
    return y


ENTRY = layernorm
SAMPLE = (TensorSpec((32, 64), pl.FP32), TensorSpec((1, 64), pl.FP32), TensorSpec((1, 64), pl.FP32),
          TensorSpec((32, 64), pl.FP32))
RTOL, ATOL = 1e-5, 1e-5


def inputs():
    import torch
    g = torch.Generator().manual_seed(14)
    return [torch.randn(32, 64, generator=g) * 2 + 1, torch.randn(1, 64, generator=g),
            torch.randn(1, 64, generator=g), torch.zeros(32, 64)]


def expected(x, w, b, y):
    import torch
    return {3: torch.nn.functional.layer_norm(x, (64,), w[0], b[0], EPS)}
