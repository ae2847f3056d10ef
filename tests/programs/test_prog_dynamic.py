"""Dynamic dims and scalar parameters on a2a3sim: a `pl.dynamic("M")` leading dim serves
several M from one compiled artifact (the same CompiledProgram, the same output dir);
a scalar parameter specialises (another value, another compile) or stays a runtime
argument with pl.RUNTIME."""
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import CompiledProgram

from prog_helpers import CFG, close, compile_example, randn

M = pl.dynamic("M")


@pl.jit
def scale_rows(x: pl.Tensor, y: pl.Out[pl.Tensor], s: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        pl.store(pl.mul(t, s), [0, 0], y)
    return y


@pytest.fixture(scope="module")
def dyn():
    mod, compiled = compile_example("dynamic_rows")      # compiled at M = 96, blocks runtime
    return mod, compiled


@pytest.mark.parametrize("m", [32, 96, 160])
def test_one_artifact_serves_every_m(dyn, m):
    mod, compiled = dyn
    x, y = randn(m, 64, seed=m), torch.zeros(m, 64)
    again = mod.ENTRY.compile(x, y, pl.RUNTIME, config=CFG)
    assert again is compiled                     # dynamic dims are not in the key
    compiled(x, y, m // 32)
    close(y, x * 2 + 1, 1e-6, 1e-6)


def test_saved_output_dir_runs_two_m(dyn):
    _, compiled = dyn
    reloaded = CompiledProgram.from_dir(compiled.output_dir)
    assert Path(reloaded.output_dir) == Path(compiled.output_dir)
    for m in (64, 128):
        x, y = randn(m, 64, seed=m + 1), torch.zeros(m, 64)
        reloaded(x, y, m // 32)
        close(y, x * 2 + 1, 1e-6, 1e-6)


def test_scalar_parameters_specialise():
    x = randn(32, 64, seed=60)
    y = torch.zeros(32, 64)
    two = scale_rows.compile(x, y, 2.0, config=CFG)
    three = scale_rows.compile(x, y, 3.0, config=CFG)
    assert two is not three and two.output_dir != three.output_dir
    assert scale_rows.compile(x, y, 2.0, config=CFG) is two
    two(x, y, 2.0)
    close(y, x * 2, 0, 0)
    three(x, y, 3.0)
    close(y, x * 3, 0, 0)


def test_runtime_scalar_is_an_argument():
    x = randn(32, 64, seed=61)
    y = torch.zeros(32, 64)
    rt = scale_rows.compile(x, y, pl.RUNTIME, config=CFG)
    for s in (0.5, -4.0):
        rt(x, y, s)
        close(y, x * s, 0, 0)


@pl.jit
def copy_dynamic_rows(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    rows = x.shape[0]                 # a dynamic dim read as a value: its extent at run time
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(rows // 32):
            pl.store(pl.load(x, [i * 32, 0], [32, 64]), [i * 32, 0], y)
    return y


def test_a_dynamic_dim_read_as_a_value_serves_every_size():
    first = None
    for m in (64, 160):
        x, y = randn(m, 64, seed=m), torch.zeros(m, 64)
        compiled = copy_dynamic_rows.compile(x, y, config=CFG)
        first = first or compiled
        assert compiled is first                   # one artifact for every M
        compiled(x, y)
        close(y, x, 0, 0)


B = pl.dynamic("B")


@pl.jit
def copy_valid_rows(a: pl.Tensor[[B, 64], pl.FP32], out: pl.Out[pl.Tensor[[B, 64], pl.FP32]]):
    rows = pl.tensor.dim(a, 0)
    for r0 in pl.parallel(0, 48, 16):                 # up to 48 rows, 16 at a time
        n = pl.max(pl.min(16, rows - r0), 0)          # the part of this chunk that exists
        with pl.at(level=pl.Level.CORE_GROUP):
            chunk = pl.slice(a, [16, 64], [r0, 0], valid_shape=[n, 64])
            out = pl.assemble(out, pl.mul(chunk, 2.0), [r0, 0])
    return out


def test_a_slice_with_a_valid_part_computed_in_the_kernel():
    first = None
    for m in (48, 20):                                # one artifact; 20 rows: a ragged chunk
        a = randn(m, 64, seed=m)
        out = torch.full((m, 64), -1.0)
        compiled = copy_valid_rows.compile(a, out, config=CFG)
        first = first or compiled
        assert compiled is first
        compiled(a, out)
        close(out, 2 * a, 0, 0)


CM, CN = pl.dynamic("CM"), pl.dynamic("CN")


@pl.program
class CompositeDims:
    @pl.function(type=pl.FunctionType.InCore)
    def add_kernel(self, a: pl.Tensor[[CM * 2, CN], pl.FP32], b: pl.Tensor[[CM * 2, CN], pl.FP32],
                   c: pl.Out[pl.Tensor[[CM * 2, CN], pl.FP32]]) -> pl.Tensor[[CM * 2, CN], pl.FP32]:
        out = pl.store(pl.add(pl.load(a, [0, 0], [32, 16]), pl.load(b, [0, 0], [32, 16])), [0, 0], c)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[CM * 2, CN], pl.FP32], b: pl.Tensor[[CM * 2, CN], pl.FP32],
             c: pl.Out[pl.Tensor[[CM * 2, CN], pl.FP32]]) -> pl.Tensor[[CM * 2, CN], pl.FP32]:
        c = self.add_kernel(a, b, c)
        return c


def test_a_composite_dynamic_dim(tmp_path):
    """`CM * 2` is a dynamic extent of its own (read from the tensor when the kernel runs),
    printed as its expression, its declared dims declared in the dumps."""
    from pypto.ir.nodes import DynDim
    d = CM * 2
    assert d == DynDim("(CM * 2)", ("CM",)) and 2 * CM == DynDim("(2 * CM)", ("CM",))
    text = CompositeDims.as_python()
    assert 'CM = pl.dynamic("CM")' in text and "pl.Tensor[[(CM * 2), CN], pl.FP32]" in text
    assert pl.parse(text, filename="<dump>").as_python() == text
    a, b, c = randn(32, 16, seed=1), randn(32, 16, seed=2), torch.zeros(32, 16)
    ir.compile(CompositeDims, output_dir=tmp_path)(a, b, c)
    close(c, a + b, 1e-6, 1e-6)
