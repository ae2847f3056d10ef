"""Cube matmul 64x64: load into Mat, move to Left/Right, pl.matmul into Acc, store from Acc."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        left = pl.move(ta, target_memory=pl.Mem.Left)
        right = pl.move(tb, target_memory=pl.Mem.Right)
        acc = pl.matmul(left, right)
        pl.store(acc, [0, 0], c)
    return c


ENTRY = matmul
SAMPLE = (TensorSpec((64, 64), pl.FP32),) * 3
RTOL, ATOL = 1e-4, 1e-4


def inputs():
    import torch
    g = torch.Generator().manual_seed(16)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g), torch.zeros(64, 64)]


def expected(a, b, c):
    return {2: a @ b}
