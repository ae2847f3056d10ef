"""Row softmax of a 64x64 tile: row_max with a scratch tile, row_expand_sub, exp, row_sum,
row_expand_div."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def softmax(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 64])
        scratch = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_max(t, scratch)
        e = pl.exp(pl.row_expand_sub(t, m))
        s = pl.row_sum(e, scratch)
        pl.store(pl.row_expand_div(e, s), [0, 0], y)
    return y


ENTRY = softmax
SAMPLE = (TensorSpec((64, 64), pl.FP32),) * 2
RTOL, ATOL = 1e-5, 1e-6


def inputs():
    import torch
    g = torch.Generator().manual_seed(12)
    return [torch.randn(64, 64, generator=g) * 3, torch.zeros(64, 64)]


def expected(x, y):
    import torch
    return {1: torch.softmax(x, dim=-1)}
