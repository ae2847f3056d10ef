"""matmul_acc(init_cond=...) and Acc windows (issue 11.2): where the condition holds the
accumulator is overwritten with lhs @ rhs (pto.tmatmul), elsewhere accumulated into
(pto.tmatmul.acc) -- an scf.if at run time, one op for a constant; matmul_acc may
accumulate into a window of an Acc tile (pl.tile.slice). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SPLIT_K = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
          c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        acc = pl.tile.create([64, 64], pl.FP32, target_memory=pl.MemorySpace.Acc)
        for rep in pl.range({REPS}):
            for k0 in pl.range(0, 128, 32):
                a_l0 = pl.move(pl.load(a, [0, k0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, a_l0, b_l0, init_cond={COND})
        return pl.store(acc, [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""


def _run(src, tmp_path, monkeypatch, shapes):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/p.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    a, b = torch.randn(*shapes[0]), torch.randn(*shapes[1])
    c = torch.zeros(shapes[0][0], shapes[1][1])
    run(a, b, c)
    return a, b, c, next((tmp_path / "out" / "ptoas").glob("k*.pto")).read_text()


def test_the_first_step_of_every_reduction_starts_afresh(tmp_path, monkeypatch):
    """Three reductions into one accumulator: each restarts where k0 == 0, so the result
    is one product, not three."""
    a, b, c, pto = _run(SPLIT_K.format(REPS=3, COND="(k0 == 0)"), tmp_path, monkeypatch,
                        ((64, 128), (128, 64)))
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "scf.if" in pto and "pto.tmatmul ins(" in pto and "pto.tmatmul.acc" in pto


@pytest.mark.parametrize("cond, reps, factor", [("True", 1, 0.25), ("False", 1, None)])
def test_a_constant_condition_picks_one_op(cond, reps, factor, tmp_path, monkeypatch):
    a, b, c, pto = _run(SPLIT_K.format(REPS=reps, COND=cond), tmp_path, monkeypatch,
                        ((64, 128), (128, 64)))
    assert "scf.if" not in pto
    if factor is not None:           # every step starts afresh: only the last K slice counts
        assert torch.allclose(c, a[:, 96:] @ b[96:], rtol=1e-4, atol=1e-4)
        assert "pto.tmatmul.acc" not in pto


WINDOWS = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
          c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        acc = pl.tile.create([32, 64], pl.FP32, target_memory=pl.MemorySpace.Acc)
        for t in pl.range(2):
            for k0 in pl.range(0, 64, 32):
                a_l0 = pl.move(pl.load(a, [0, k0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * 32], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                win = pl.tile.slice(acc, [32, 32], [0, t * 32])
                win = pl.matmul_acc(win, a_l0, b_l0, init_cond=(k0 == 0))
        return pl.store(acc, [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""


def test_column_windows_of_one_accumulator(tmp_path, monkeypatch):
    a, b, c, pto = _run(WINDOWS, tmp_path, monkeypatch, ((32, 64), (64, 64)))
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "pto.subview" in pto


def test_a_float_condition_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"init_cond is a condition \(a bool scalar\), got Scalar"):
        pl.parse(SPLIT_K.format(REPS=1, COND="1.5"), filename="/u/p.py")
