"""A matmul result carried through a loop as the accumulator of pl.matmul_acc, at tensor
level inside a pl.at region (issue 11.2): the first product starts it before the loop,
each iteration adds one K slice. The carried value stays in Acc; on the simulator
against torch."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class Carried:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, {K}], pl.FP32], w: pl.Tensor[[{K}, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj"):
            acc = pl.matmul(pl.slice(x, [16, 32], [0, 0]), pl.slice(w, [32, 64], [0, 0]))
            for kb in pl.range(1, {CHUNKS}):
                k0 = kb * 32
                acc = pl.matmul_acc(acc, pl.slice(x, [16, 32], [0, k0]), pl.slice(w, [32, 64], [k0, 0]))
            out = pl.assemble(out, pl.add(acc, 1.0), [0, 0])
        return out
"""


def test_a_carried_matmul_result_accumulates_in_acc(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    chunks = 4
    prog = pl.parse(SRC.format(K=32 * chunks, CHUNKS=chunks), filename="/u/carried.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    x, w, out = torch.randn(16, 32 * chunks), torch.randn(32 * chunks, 64), torch.zeros(16, 64)
    run(x, w, out)
    torch.testing.assert_close(out, x @ w + 1.0, rtol=1e-4, atol=1e-4)
    pto = "".join(p.read_text() for p in (tmp_path / "out" / "ptoas").glob("*.pto"))
    assert pto.count("pto.tmatmul.acc") == 1 and "scf.for" in pto
