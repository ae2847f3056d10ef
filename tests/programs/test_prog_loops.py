"""Loops on a2a3sim: row chunks with offsets from the loop variable, values carried by
rebinding and explicitly (init_values / pl.yield_), loops in the orchestration (around a
pl.at region, and calling an InCore kernel with the loop variable), and pl.unroll."""
import pytest
import torch

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn


def test_row_chunks_example_with_a_rebinding_carry():
    check_example("row_chunks")


@pl.jit
def explicit_carry(x: pl.Tensor, total: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.mul(pl.load(x, [0, 0], [32, 64]), 0.0)
        for i, (acc,) in pl.range(4, init_values=(z,)):
            t = pl.load(x, [i * 32, 0], [32, 64])
            acc_out = pl.yield_(pl.add(acc, pl.mul(t, t)))
        pl.store(acc_out, [0, 0], total)
    return total


@pl.jit
def loop_around_region(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 32, 0], [32, 64])
            pl.store(pl.relu(t), [i * 32, 0], y)
    return y


@pl.jit.incore
def shift_rows(x: pl.Tensor, y: pl.InOut[pl.Tensor], i: pl.INDEX):
    t = pl.load(x, [i * 32, 0], [32, 64])
    pl.store(pl.sub(t, 1.0), [i * 32, 0], y)
    return y


@pl.jit
def loop_over_kernel_calls(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        y = shift_rows(x, y, i)
    return y


@pl.jit
def unrolled(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.unroll(4):
            t = pl.load(x, [i * 32, 0], [32, 64])
            pl.store(pl.abs(t), [i * 32, 0], y)
    return y


@pytest.fixture(scope="module")
def x():
    return randn(128, 64, seed=30)


def test_explicit_init_values_and_yield(x):
    total = torch.zeros(32, 64)
    explicit_carry(x, total, config=CFG)
    close(total, (x * x).view(4, 32, 64).sum(0), 1e-5, 1e-5)


def test_orchestration_loop_around_a_region(x):
    y = torch.zeros(128, 64)
    loop_around_region(x, y, config=CFG)
    close(y, torch.relu(x), 0, 0)


def test_orchestration_loop_passing_the_loop_variable_to_a_kernel(x):
    y = torch.zeros(128, 64)
    loop_over_kernel_calls(x, y, config=CFG)
    close(y, x - 1, 0, 0)


def test_unroll(x):
    y = torch.zeros(128, 64)
    unrolled(x, y, config=CFG)
    close(y, x.abs(), 0, 0)
