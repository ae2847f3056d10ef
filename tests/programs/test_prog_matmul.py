"""Cube matmul on a2a3sim: 64x64 through Mat/Left/Right/Acc, a K loop with matmul_acc
(chunks of 32 carried explicitly in examples/matmul_acc.py, chunks of 64 carried by
rebinding here), and a tensor-level pl.matmul inside pl.at."""
import torch

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn


def test_matmul_example():
    check_example("matmul")


def test_matmul_acc_example_k_chunks_of_32():
    check_example("matmul_acc")


@pl.jit
def matmul_k64(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
        for k in pl.range(1, 2):
            ta = pl.load(a, [0, k * 64], [64, 64], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [k * 64, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul_acc(acc, pl.move(ta, target_memory=pl.Mem.Left),
                                pl.move(tb, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def matmul_tensor(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


def test_k_loop_chunks_of_64_rebinding_the_accumulator():
    a, b = randn(64, 128, seed=40), randn(128, 64, seed=41)
    c = torch.zeros(64, 64)
    matmul_k64(a, b, c, config=CFG)
    close(c, a @ b, 1e-4, 1e-4)


def test_tensor_level_matmul():
    a, b = randn(64, 64, seed=42), randn(64, 64, seed=43)
    c = torch.zeros(64, 64)
    matmul_tensor(a, b, c, config=CFG)
    close(c, a @ b, 1e-4, 1e-4)
