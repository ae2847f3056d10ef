"""A K loop: [64, 128] x [128, 64] in K chunks of 32, pl.matmul for the first chunk and
pl.matmul_acc for the rest, the accumulator carried explicitly (init_values / pl.yield_)."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit
def matmul_acc(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        first = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
        for k, (acc,) in pl.range(1, 4, init_values=(first,)):
            ka = pl.load(a, [0, k * 32], [64, 32], target_memory=pl.Mem.Mat)
            kb = pl.load(b, [k * 32, 0], [32, 64], target_memory=pl.Mem.Mat)
            nxt = pl.matmul_acc(acc, pl.move(ka, target_memory=pl.Mem.Left),
                                pl.move(kb, target_memory=pl.Mem.Right))
            result = pl.yield_(nxt)
        pl.store(result, [0, 0], c)
    return c


ENTRY = matmul_acc
SAMPLE = (TensorSpec((64, 128), pl.FP32), TensorSpec((128, 64), pl.FP32), TensorSpec((64, 64), pl.FP32))
RTOL, ATOL = 1e-4, 1e-4


def inputs():
    import torch
    g = torch.Generator().manual_seed(17)
    return [torch.randn(64, 128, generator=g), torch.randn(128, 64, generator=g), torch.zeros(64, 64)]


def expected(a, b, c):
    return {2: a @ b}
