"""A dynamic leading dim: `M = pl.dynamic("M")` in the annotations, and the number of
32-row blocks a runtime scalar (compiled with pl.RUNTIME), so one artifact serves every M."""
import pypto.language as pl

from examples._spec import TensorSpec

M = pl.dynamic("M")


@pl.jit
def dynamic_rows(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]], blocks: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(blocks):
            t = pl.load(x, [i * 32, 0], [32, 64])
            pl.store(pl.add(pl.mul(t, 2.0), 1.0), [i * 32, 0], y)
    return y


ENTRY = dynamic_rows
SAMPLE = (TensorSpec((96, 64), pl.FP32), TensorSpec((96, 64), pl.FP32), pl.RUNTIME)
RTOL, ATOL = 1e-5, 1e-5


def inputs():
    import torch
    g = torch.Generator().manual_seed(21)
    return [torch.randn(96, 64, generator=g), torch.zeros(96, 64), 3]


def expected(x, y, blocks):
    return {1: x * 2 + 1}
