"""An FFN across three kernel calls: `@pl.jit.incore` kernels (a 64x64 cube matmul and a
SiLU vector kernel) called from a `@pl.jit` entry, intermediates from pl.create_tensor."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit.incore
def matmul_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
    pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def silu_kernel(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [64, 64])
    pl.store(pl.mul(t, pl.recip(pl.add(pl.exp(pl.neg(t)), 1.0))), [0, 0], y)
    return y


@pl.jit
def ffn(hidden: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, out: pl.Out[pl.Tensor]):
    up = pl.create_tensor([64, 64], dtype=pl.FP32)
    up = matmul_kernel(hidden, w_up, up)
    act = pl.create_tensor([64, 64], dtype=pl.FP32)
    act = silu_kernel(up, act)
    out = matmul_kernel(act, w_down, out)
    return out


ENTRY = ffn
SAMPLE = (TensorSpec((64, 64), pl.FP32),) * 4
RTOL, ATOL = 1e-4, 1e-4


def inputs():
    import torch
    g = torch.Generator().manual_seed(18)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g) * 0.125,
            torch.randn(64, 64, generator=g) * 0.125, torch.zeros(64, 64)]


def expected(hidden, w_up, w_down, out):
    import torch
    return {3: torch.nn.functional.silu(hidden @ w_up) @ w_down}
