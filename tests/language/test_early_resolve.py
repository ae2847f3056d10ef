"""allow_early_resolve= on pl.at / pl.submit / pl.spmd (issue 12): the scheduler may stage a
launch's consumers before it completes. The simulator stages every task when it is
submitted, so the hint holds for every launch; it is checked (a bool) and the program runs
as without it."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class Early:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        return pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             z: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y, t = pl.submit(self.inc, x, y, allow_early_resolve=FLAG)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="twice", allow_early_resolve=FLAG):
            z = pl.store(pl.muls(pl.load(y, [0, 0], [16, 64]), 2.0), [0, 0], z)
        return z
"""


def test_the_hint_is_accepted_and_the_program_runs(tmp_path):
    c = ir.compile(pl.parse(SRC.replace("FLAG", "True"), filename="/u/early.py"), output_dir=tmp_path / "o",
                   platform="a2a3sim")
    x, y, z = torch.randn(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    c(x, y, z)
    torch.testing.assert_close(z, (x + 1) * 2)


def test_the_hint_is_a_bool():
    with pytest.raises(E.PyptoError, match=r"allow_early_resolve is True or False, got 1") as e:
        pl.parse(SRC.replace("FLAG", "1"), filename="/u/early.py")
    assert e.value.span.line == 13
