"""JIT composition (issue 12.1): @pl.jit.inline kernels imported from a package's other
modules (relative imports, module constants), a kernel's result rebound and passed on,
slice bounds affine in a loop variable, shapes from constant arithmetic."""
import torch

from jitpkg.config import COLS, PAD, ROWS
from jitpkg.model import model

from pypto.runtime import RunConfig


def test_a_model_composed_from_a_package_of_kernels():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(ROWS, COLS, generator=g), torch.randn(1, COLS, generator=g)
    out = torch.full((PAD, COLS), 7.0)
    model(x, w, out, config=RunConfig(platform="a2a3sim"))
    want = torch.zeros(PAD, COLS)
    want[:ROWS] = x * w
    assert torch.allclose(out, want, atol=1e-6)


import pypto.language as pl


@pl.jit.inline
def plus_one(x: pl.Tensor, c: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        pl.store(pl.add(t, 1.0), [0, 0], c)
    return c


@pl.jit
def lower_half(src: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    view = src[32:]                  # an open upper bound: 64 - 32 rows
    c = plus_one(view, c)
    return c


@pl.jit
def upper_half(src: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    view = src[0:32, 0:64]
    c = plus_one(view, c)
    return c


def test_a_subscript_view_passed_on_has_the_windows_shape():
    src = torch.randn(64, 64)
    for entry, rows in ((lower_half, slice(32, 64)), (upper_half, slice(0, 32))):
        c = torch.zeros(32, 64)
        entry(src, c, config=RunConfig(platform="a2a3sim"))
        assert torch.allclose(c, src[rows] + 1), entry.__name__
