"""The Compiling page's quickstart: `out = a + b` written on tensors; the compiler places
it (loads, a tile add, a store) in one vector kernel."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


ENTRY = add
SAMPLE = (TensorSpec((128, 128), pl.FP32),) * 3


def inputs():
    import torch
    g = torch.Generator().manual_seed(0)
    return [torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g),
            torch.zeros(128, 128)]


def expected(a, b, out):
    return {2: a + b}
