"""The same add at tile level, under @pl.jit: explicit loads into UB, a tile add, a store."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def tile_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        tc = pl.add(ta, tb)
        pl.store(tc, [0, 0], c)
    return c


ENTRY = tile_add
SAMPLE = (TensorSpec((128, 128), pl.FP32),) * 3


def inputs():
    import torch
    g = torch.Generator().manual_seed(1)
    return [torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g),
            torch.zeros(128, 128)]


def expected(a, b, c):
    return {2: a + b}
