"""fp16 inputs: a cube kernel multiplies fp16 tiles accumulating in fp32 (stored as fp32),
then a vector kernel scales the result and casts it back to fp16 with pl.cast."""
import pypto.language as pl

from examples._spec import TensorSpec


@pl.jit.incore
def scale_to_fp16(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [64, 64])
    pl.store(pl.cast(pl.mul(t, 0.5), pl.FP16), [0, 0], y)
    return y


@pl.jit
def matmul_fp16_out(a: pl.Tensor, b: pl.Tensor, c32: pl.Out[pl.Tensor], c16: pl.Out[pl.Tensor]):
    c32 = matmul_fp16_kernel(a, b, c32)
    c16 = scale_to_fp16(c32, c16)
    return c32, c16


@pl.jit.incore
def matmul_fp16_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
    pl.store(acc, [0, 0], c)
    return c


ENTRY = matmul_fp16_out
SAMPLE = (TensorSpec((64, 64), pl.FP16), TensorSpec((64, 64), pl.FP16), TensorSpec((64, 64), pl.FP32),
          TensorSpec((64, 64), pl.FP16))
RTOL, ATOL = 1e-3, 1e-3


def inputs():
    import torch
    g = torch.Generator().manual_seed(20)
    return [torch.randn(64, 64, generator=g).half(), torch.randn(64, 64, generator=g).half(),
            torch.zeros(64, 64), torch.zeros(64, 64, dtype=torch.float16)]


def expected(a, b, c32, c16):
    ref = a.float() @ b.float()
    return {2: ref, 3: (ref * 0.5).half()}
