"""A @pl.program calling @pl.function kernels defined at module level, in this file or
imported from another module: they become functions of the program (the reference's
paged-attention tests build their programs that way)."""
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from module_kernels import N, row_exp, scaled_add
from prog_helpers import close, randn, tagged_line

FILE = __file__


@pl.function(type=pl.FunctionType.InCore)
def negate(a: pl.Tensor[[N, N], pl.FP32],
           out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
    out = pl.store(pl.neg(pl.load(a, [0, 0], [N, N])), [0, 0], out)
    return out


@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
             out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
        mid = pl.create_tensor([N, N], dtype=pl.FP32)
        mid = scaled_add(a, b, mid)
        lo: pl.Scalar[pl.FP32] = -1.0
        mid2 = pl.create_tensor([N, N], dtype=pl.FP32)
        mid2 = row_exp(mid, lo, mid2)
        out = negate(mid2, out)
        return out


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
             out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
        mid = pl.create_tensor([N, N], dtype=pl.FP32)
        mid = scaled_add(a, b, mid)
        out = scaled_add(mid, b, out)
        return out


def test_module_level_kernels_become_functions_of_the_program(tmp_path):
    assert [f.name for f in Chain.functions] == ["main", "scaled_add", "row_exp", "negate"]
    compiled = ir.compile(Chain, output_dir=str(tmp_path / "chain"), platform="a2a3sim")
    a, b = randn(N, N, seed=1), randn(N, N, seed=2)
    out = torch.zeros(N, N)
    compiled(a, b, out)
    close(out, -torch.exp(torch.clamp(2 * a + b, min=-1.0)), 1e-5, 1e-5)


def test_one_module_level_kernel_called_twice_and_by_two_programs(tmp_path):
    assert [f.name for f in Twice.functions] == ["main", "scaled_add"]
    assert Twice.get("scaled_add") is Chain.get("scaled_add")
    compiled = ir.compile(Twice, output_dir=str(tmp_path / "twice"), platform="a2a3sim")
    a, b = randn(N, N, seed=3), randn(N, N, seed=4)
    out = torch.zeros(N, N)
    compiled(a, b, out)
    close(out, 2 * (2 * a + b) + b, 1e-5, 1e-5)


def test_a_module_level_kernel_whose_name_the_program_has_is_an_error():
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Clash:
            @pl.function(type=pl.FunctionType.InCore)
            def negate(self, a: pl.Tensor[[N, N], pl.FP32],
                       out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
                out = pl.store(pl.load(a, [0, 0], [N, N]), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[N, N], pl.FP32],
                     out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
                out = negate(a, out)  # CLASH
                return out
    err = e.value
    assert (err.span.file, err.span.line) == ("test_prog_module_functions.py", tagged_line(FILE, "CLASH"))
    assert "already has a function named 'negate'" in err.message and "rename" in err.hint


def test_a_lone_function_cannot_call_a_module_level_kernel():
    with pytest.raises(E.ParserError) as e:
        @pl.function(type=pl.FunctionType.Orchestration)
        def lone(a: pl.Tensor[[N, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
            out = negate(a, out)  # LONE
            return out
    assert e.value.span.line == tagged_line(FILE, "LONE")
    assert "@pl.program" in e.value.hint
