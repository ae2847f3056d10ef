"""An element of a Python constant (module level or a closure) indexed in a kernel is that
constant, folded when compiling: SHAPE[0], DIMS[-1], CFG["rows"], TILES[1][0]."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir
from pypto.ir.nodes import Const
from pypto.ir.visit import walk

SHAPE = [16, 64]
CFG = {"rows": 8}
TILES = ((4, 4), (8, 64))


def _program(valid):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [SHAPE[0], SHAPE[-1]], valid_shape=[valid[0], TILES[1][1]])
            t = pl.fillpad(t, pad_value=pl.PadValue.zero)
            s = pl.muls(t, CFG["rows"])
            return pl.store(s, [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            return self.k(a, o)
    return P


def test_constant_elements_fold(tmp_path, monkeypatch):
    prog = _program([12, 3])
    k = next(f for f in prog.functions if f.name == "k")
    load = next(s.value for s in walk(k.body) if getattr(getattr(s, "value", None), "op", "") == "tile.load")
    assert all(isinstance(x, Const) for x in load.args[2].items + load.args[3].items)
    assert [x.value for x in load.args[3].items] == [12, 64]
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    a, o = torch.randn(16, 64), torch.zeros(16, 64)
    run(a, o)
    want = torch.zeros(16, 64)
    want[:12] = a[:12] * 8
    assert torch.equal(o, want)
