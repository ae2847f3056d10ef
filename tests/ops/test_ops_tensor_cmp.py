"""pl.cmp on tensors (issue 11.4): 1 where the comparison holds, 0 elsewhere, in the
operands' dtype (a tile.cmp / tile.cmps bit mask selecting between filled tiles), against
another tensor or a scalar; every cmp_type against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class C:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, lhs: pl.Tensor[[16, 64], pl.{DT}], rhs: pl.Tensor[[16, 64], pl.{DT}],
             o: pl.Out[pl.Tensor[[16, 64], pl.{DT}]]) -> pl.Tensor[[16, 64], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="c"):
            o = pl.assemble(o, pl.cmp(lhs, {RHS}, cmp_type={CT}), [0, 0])
        return o
"""
TORCH = {0: torch.eq, 1: torch.ne, 2: torch.lt, 3: torch.le, 4: torch.gt, 5: torch.ge}


@pytest.mark.parametrize("ct", range(6))
@pytest.mark.parametrize("rhs", ["rhs", "0.5"])
def test_compares_give_one_or_zero(ct, rhs, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(DT="FP32", RHS=rhs, CT=ct), filename="/u/c.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    lhs = torch.randint(-2, 3, (16, 64)).float() * 0.5      # ties with rhs and with 0.5
    other = torch.randint(-2, 3, (16, 64)).float() * 0.5
    o = torch.full((16, 64), 7.0)
    run(lhs, other, o)
    want = TORCH[ct](lhs, other if rhs == "rhs" else torch.tensor(0.5)).float()
    assert torch.equal(o, want)


def test_integer_tensors(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(DT="INT32", RHS="rhs", CT=4), filename="/u/c.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    lhs, rhs = torch.randint(-5, 5, (16, 64), dtype=torch.int32), torch.randint(-5, 5, (16, 64), dtype=torch.int32)
    o = torch.zeros(16, 64, dtype=torch.int32)
    run(lhs, rhs, o)
    assert torch.equal(o, (lhs > rhs).to(torch.int32))
