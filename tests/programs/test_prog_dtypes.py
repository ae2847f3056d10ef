"""fp16 and bf16 programs on a2a3sim: matmul of fp16/bf16 tiles accumulating in fp32,
pl.cast between dtypes, and tensor-level ops on fp16/bf16 tensors. Tolerances per dtype:
the fp32 accumulation of exact half products is checked at 1e-4, results rounded to
fp16 at one fp16 ulp (~1e-3 relative), bf16 at one bf16 ulp (~8e-3 relative)."""
import pytest
import torch

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn

TOL = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (8e-3, 8e-3)}


def test_fp16_matmul_then_cast_example():
    check_example("matmul_fp16")


@pl.jit
def matmul_half(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right)),
                 [0, 0], c)
    return c


@pl.jit
def cast_round_trip(a: pl.Tensor, b: pl.Tensor, wide: pl.Out[pl.Tensor], narrow: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(pl.cast(pl.load(a, [0, 0], [64, 64]), pl.FP32), pl.cast(pl.load(b, [0, 0], [64, 64]), pl.FP32))
        pl.store(s, [0, 0], wide)
        pl.store(pl.cast(pl.mul(s, 0.5), a.dtype), [0, 0], narrow)
    return wide, narrow


@pl.jit
def half_tensor_ops(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximum(pl.add(pl.mul(a, 2.0), b), pl.neg(b))
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_matmul_accumulates_in_fp32(dtype):
    a, b = randn(64, 64, seed=50, dtype=dtype), randn(64, 64, seed=51, dtype=dtype)
    c = torch.zeros(64, 64)
    matmul_half(a, b, c, config=CFG)
    close(c, a.float() @ b.float(), 1e-4, 1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_cast_between_dtypes(dtype):
    a, b = randn(64, 64, seed=52, dtype=dtype), randn(64, 64, seed=53, dtype=dtype)
    wide, narrow = torch.zeros(64, 64), torch.zeros(64, 64, dtype=dtype)
    cast_round_trip(a, b, wide, narrow, config=CFG)
    s = a.float() + b.float()
    close(wide, s, 1e-6, 1e-6, "fp32 sum")
    close(narrow, (s * 0.5).to(dtype), *TOL[dtype], "narrowed")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_tensor_ops_on_half_tensors(dtype):
    a, b = randn(64, 64, seed=54, dtype=dtype), randn(64, 64, seed=55, dtype=dtype)
    out = torch.zeros(64, 64, dtype=dtype)
    half_tensor_ops(a, b, out, config=CFG)
    close(out, torch.maximum(a * 2 + b, -b), *TOL[dtype])


@pl.jit
def fp32_times_fp16(a: pl.Tensor, h: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.mul(a, h)                      # tensors promote: fp16 is cast to fp32
    return o


@pl.jit
def fp32_sum_of_bf16_products(x: pl.Tensor, w: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([16, 64], dtype=pl.FP32, value=0.0)
        for kb in pl.range(4):                   # fp32 + a bf16 matmul result: fp32
            acc = pl.add(acc, pl.matmul(x[:, kb * 64:(kb + 1) * 64], w[kb * 64:(kb + 1) * 64, :]))
        o[:] = acc
    return o


def test_tensor_ops_promote_two_float_dtypes_to_the_wider():
    g = torch.Generator().manual_seed(21)
    a, h = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g).half()
    o = torch.zeros(64, 64)
    fp32_times_fp16(a, h, o)
    assert torch.allclose(o, a * h.float(), rtol=1e-6, atol=1e-6)
    x, w = torch.randn(16, 256, generator=g).bfloat16(), torch.randn(256, 64, generator=g).bfloat16()
    o2 = torch.zeros(16, 64)
    fp32_sum_of_bf16_products(x, w, o2)
    assert torch.allclose(o2, x.float() @ w.float(), rtol=2e-2, atol=2e-1)


def test_the_wider_float_wins_and_fp16_bf16_keep_the_first():
    from pypto.ir.ops.elementwise import promoted
    assert promoted(pl.FP16, pl.FP32) is pl.FP32 and promoted(pl.BF16, pl.FP16) is pl.BF16
