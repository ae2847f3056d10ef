"""pl.full compiles, and computes, everywhere it is accepted: at tensor level inside a
pl.at region (whole, tiled when large, as a loop's initial value, positional form),
as pl.tile.full in a @pl.jit.incore kernel and in a @pl.program InCore function, for
float and integer dtypes. Where it is refused (the orchestration body) and how its
value is checked: tests/programs/test_prog_errors_issue9.py."""
import pytest
import torch

import pypto.language as pl
from pypto import ir

from prog_helpers import CFG, close, randn


def run(fn, *args):
    compiled = fn.compile(*args, config=CFG)
    out = torch.zeros_like(args[-1])
    compiled(*args[:-1], out)
    return out


@pl.jit
def add_filled(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.FP32, value=2.5)
        o[:] = pl.add(a, x)
    return o


def test_full_at_tensor_level_in_a_region():
    a = randn(64, 64)
    close(run(add_filled, a, torch.zeros(64, 64)), a + 2.5, 1e-6, 1e-6)


@pl.jit
def store_filled(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.full([64, 64], dtype=pl.FP32, value=-1.5)
    return o


def test_full_written_straight_into_an_output():
    assert torch.equal(run(store_filled, randn(64, 64), torch.zeros(64, 64)),
                       torch.full((64, 64), -1.5))


@pl.jit
def scale_positional(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.mul(a, pl.full([64, 64], pl.FP32, 3.0))
    return o


def test_full_with_positional_dtype_and_value():
    a = randn(64, 64)
    close(run(scale_positional, a, torch.zeros(64, 64)), a * 3.0, 1e-6, 1e-6)


@pl.jit
def add_filled_big(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([256, 256], dtype=pl.FP32, value=2.0)
        o[:] = pl.add(a, x)
    return o


def test_full_larger_than_ub_is_filled_chunk_by_chunk():
    a = randn(256, 256)
    close(run(add_filled_big, a, torch.zeros(256, 256)), a + 2.0, 1e-6, 1e-6)


@pl.jit
def accumulate(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([64, 64], dtype=pl.FP32, value=0.0)
        for i in pl.range(4):
            acc = pl.add(acc, a)
        o[:] = acc
    return o


def test_full_as_a_loop_carried_initial_value():
    a = randn(64, 64)
    close(run(accumulate, a, torch.zeros(64, 64)), 4 * a, 1e-5, 1e-5)


@pl.jit
def add_int(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.add(a, pl.full([64, 64], dtype=pl.INT32, value=-7))
    return o


@pl.jit
def add_half(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.add(a, pl.full([64, 64], dtype=pl.FP16, value=0.5))
    return o


@pytest.mark.parametrize("fn, dtype, value", [(add_int, torch.int32, -7), (add_half, torch.float16, 0.5)])
def test_full_of_other_dtypes(fn, dtype, value):
    a = (randn(64, 64) * 10).to(dtype)
    got = run(fn, a, torch.zeros(64, 64, dtype=dtype))
    assert got.dtype == dtype and torch.equal(got, a + torch.tensor(value, dtype=dtype))


@pl.jit.incore
def tile_full_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [64, 64])
    x = pl.tile.full([64, 64], dtype=pl.FP32, value=3.0)
    pl.store(pl.add(t, x), [0, 0], o)
    return o


@pl.jit
def calls_tile_full_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = tile_full_kernel(a, o)
    return o


def test_tile_full_in_a_jit_incore_kernel():
    a = randn(64, 64)
    close(run(calls_tile_full_kernel, a, torch.zeros(64, 64)), a + 3.0, 1e-6, 1e-6)


@pl.program
class FullProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [64, 64])
        x = pl.tile.full([64, 64], dtype=pl.FP32, value=5.0)
        o = pl.store(pl.sub(t, x), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        o = self.k(a, o)
        return o


def test_tile_full_in_a_program(tmp_path):
    compiled = ir.compile(FullProgram, output_dir=tmp_path / "out", platform="a2a3sim")
    assert "pto.texpands" in (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    a, out = randn(64, 64), torch.zeros(64, 64)
    compiled(a, out)
    close(out, a - 5.0, 1e-6, 1e-6)
