"""An index constant beside a scalar of another dtype keeps its dtype in the printed
program: a pass that puts a constant in place of a variable (`n - start` -> `n - 64`)
must not change the expression's dtype when the next stage parses the text back."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import dtype as dt
from pypto import ir
from pypto.ir.nodes import BinOp, Const, ScalarType, Var


def test_an_index_constant_beside_an_int32_scalar_prints_its_dtype():
    n = Var("n", ScalarType(dt.INT32))
    e = BinOp("-", n, Const(64, dt.INDEX), dt.INDEX)
    from pypto.ir.printer import _Printer
    assert _Printer(False, False).expr(e) == "n - pl.const(64, pl.INDEX)"
    same = BinOp("-", Var("i", ScalarType(dt.INDEX)), Const(64, dt.INDEX), dt.INDEX)
    assert _Printer(False, False).expr(same) == "i - 64"        # plain where it changes nothing


@pl.program
class Tail:
    """The valid width of a row block: what is left of an int32 length past a start
    that Simplify folds to a constant."""
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, s: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
          lens: pl.Tensor[[1], pl.INT32]) -> pl.Tensor[[16, 64], pl.FP32]:
        cur = pl.tensor.read(lens, [0])
        start = 1 * 16
        remaining = cur - start
        valid = pl.max(pl.min(remaining, 64), 0)
        t = pl.load(s, [0, 0], [16, 64], valid_shape=[16, valid])
        t = pl.tile.fillpad(t, pad_value=pl.PadValue.zero)
        o = pl.store(t, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, s: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             lens: pl.Tensor[[1], pl.INT32]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = self.k(s, o, lens)
        return o


def test_the_folded_program_compiles_and_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(Tail, output_dir=tmp_path / "out", platform="a2a3sim")
    s, o = torch.randn(16, 64), torch.zeros(16, 64)
    run(s, o, torch.tensor([16 + 40], dtype=torch.int32))
    want = torch.zeros(16, 64)
    want[:, :40] = s[:, :40]
    torch.testing.assert_close(o, want)
