"""Integer scalar bit operators in kernels (issue 11): << >> & | ^ on index and int
scalars (arith.shli / shrsi / andi / ori / xori), folded when both sides are known, at
run time otherwise; float operands are a typed error. Against Python's own operators."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ParserError

SRC = """
import pypto.language as pl

@pl.program
class Bits:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 64], pl.INT32], y: pl.Out[pl.Tensor[[4, 64], pl.INT32]]):
        for i in pl.range(4):
            v = pl.read(x, [i, 0])
            s = ((v << 2) | (i & 1)) ^ (v >> 1)
            t = pl.load(x, [i, 0], [1, 64])
            y = pl.store(pl.adds(t, s), [i, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 64], pl.INT32], y: pl.Out[pl.Tensor[[4, 64], pl.INT32]]):
        y = self.k(x, y)
        return y
"""


def test_bit_operators_on_scalars_match_python(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC, filename="/u/b.py")
    assert pl.parse(prog.as_python()).as_python() == prog.as_python()
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randint(-1000, 1000, (4, 64), dtype=torch.int32)
    y = torch.zeros(4, 64, dtype=torch.int32)
    run(x, y)
    for i in range(4):
        v = int(x[i, 0])
        s = ((v << 2) | (i & 1)) ^ (v >> 1)
        assert torch.equal(y[i], x[i] + s), i
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    for op in ("shli", "shrsi", "andi", "ori", "xori"):
        assert f"arith.{op}" in pto


def test_bit_operators_on_floats_are_refused():
    with pytest.raises(ParserError, match=r"operator `\^` works on integer scalars, not fp32"):
        pl.parse(SRC.replace("s = ((v << 2) | (i & 1)) ^ (v >> 1)",
                             "s = pl.cast(v, pl.FP32) ^ pl.cast(v, pl.FP32)"), filename="/u/b.py")
