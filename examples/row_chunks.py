"""A loop over row chunks: `for i in pl.range(4)` with load/store offsets computed from
the loop variable, and a value carried through the loop by rebinding (`acc = pl.add(acc, t)`)."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def row_chunks(x: pl.Tensor, y: pl.Out[pl.Tensor], total: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [32, 64])
        pl.store(pl.exp(acc), [0, 0], y)
        for i in pl.range(1, 4):
            t = pl.load(x, [i * 32, 0], [32, 64])
            pl.store(pl.exp(t), [i * 32, 0], y)
            acc = pl.add(acc, t)
        pl.store(acc, [0, 0], total)
    return y, total


ENTRY = row_chunks
SAMPLE = (TensorSpec((128, 64), pl.FP32), TensorSpec((128, 64), pl.FP32), TensorSpec((32, 64), pl.FP32))
RTOL, ATOL = 1e-5, 1e-5


def inputs():
    import torch
    g = torch.Generator().manual_seed(15)
    return [torch.randn(128, 64, generator=g), torch.zeros(128, 64), torch.zeros(32, 64)]


def expected(x, y, total):
    import torch
    return {1: torch.exp(x), 2: x.view(4, 32, 64).sum(0)}
