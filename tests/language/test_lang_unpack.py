"""Unpacking the values a function returns, and parallel assignment (issue 11/12): `a, b =
self.kernel(...)` binds the call to one tuple value read back element by element
(`t[0]`, printed and parsed as such); the orchestration's a and b are the tensors the
kernel wrote; `x, y = u, v` assigns each name. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ParserError
from pypto.ir.equal import assert_structural_equal

SRC = """
import pypto.language as pl

@pl.program
class U:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
          s: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
          d: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> tuple[pl.Tensor[[32, 64], pl.FP32],
                                                            pl.Tensor[[32, 64], pl.FP32]]:
        ta, tb = pl.load(a, [0, 0], [32, 64]), pl.load(b, [0, 0], [32, 64])
        s = pl.store(pl.add(ta, tb), [0, 0], s)
        d = pl.store(pl.sub(ta, tb), [0, 0], d)
        return s, d

    @pl.function(type=pl.FunctionType.InCore)
    def m(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Tensor[[32, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        o = pl.store(pl.mul(pl.load(x, [0, 0], [32, 64]), pl.load(y, [0, 0], [32, 64])), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        s0 = pl.create_tensor([32, 64], dtype=pl.FP32)
        d0 = pl.create_tensor([32, 64], dtype=pl.FP32)
        s1, d1 = self.k(a, b, s0, d0)
        o = self.m({FIRST}, o)
        return o
"""


@pytest.mark.parametrize("first, want", [("s1, d1", lambda a, b: (a + b) * (a - b)),
                                         ("d1, d1", lambda a, b: (a - b) * (a - b))])
def test_the_returned_tensors_feed_the_next_kernel(first, want, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC.replace("{FIRST}", first), filename="/u/u.py")
    text = prog.as_python()
    assert "s1_d1__ret[0]" in text and "s1_d1__ret[1]" in text
    assert_structural_equal(pl.parse(text, filename="/u/u.py"), prog)     # prints and parses back
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    a, b, o = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    run(a, b, o)
    assert torch.allclose(o, want(a, b))


def test_unpacking_errors_say_what_to_do():
    with pytest.raises(ParserError, match=r"gives 2 values but 3 names receive them"):
        pl.parse(SRC.replace("s1, d1 = self.k", "s1, d1, e1 = self.k").replace("{FIRST}", "s1, d1"),
                 filename="/u/u.py")
    with pytest.raises(ParserError, match=r"a, b = b, a"):
        pl.parse(SRC.replace("ta, tb = pl.load(a, [0, 0], [32, 64]), pl.load(b, [0, 0], [32, 64])",
                             "ta, tb = pl.load(a, [0, 0], [32, 64]), pl.load(b, [0, 0], [32, 64])\n"
                             "        ta, tb = tb, ta").replace("{FIRST}", "s1, d1"), filename="/u/u.py")
