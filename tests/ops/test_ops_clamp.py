"""pl.load(..., clamp=True) (issue 11.1): a window running off the tensor's end reads
what is there, its valid region cut back to the edge -- when compiling for constant
offsets, when the kernel runs otherwise (a loop's ragged last chunk, a dynamic dim);
the store writes that valid region back. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

CHUNKS = """
import pypto.language as pl
M = pl.dynamic("M")

@pl.program
class Chunks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{ROWS}, 64], pl.FP32], y: pl.Out[pl.Tensor[[{ROWS}, 64], pl.FP32]]
          ) -> pl.Tensor[[{ROWS}, 64], pl.FP32]:
        for i in pl.range(5):
            t = pl.load(x, [i * 32, 0], [32, 64], clamp=True)
            y = pl.store(pl.exp(t), [i * 32, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{ROWS}, 64], pl.FP32], y: pl.Out[pl.Tensor[[{ROWS}, 64], pl.FP32]]
             ) -> pl.Tensor[[{ROWS}, 64], pl.FP32]:
        y = self.k(x, y)
        return y
"""


def _run(src, tmp_path, monkeypatch, name="c.py"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(src, filename=f"/u/{name}")
    assert "clamp=True" in prog.as_python()
    return ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")


def test_ragged_last_chunk_of_a_static_tensor(tmp_path, monkeypatch):
    """100 rows in chunks of 32: the fourth chunk holds 4 rows, the fifth none."""
    run = _run(CHUNKS.format(ROWS=100), tmp_path, monkeypatch)
    x, y = torch.randn(100, 64), torch.zeros(100, 64)
    run(x, y)
    assert torch.allclose(y, x.exp())
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    assert "arith.minsi" in pto and "arith.maxsi" in pto      # the extent, when the kernel runs


def test_one_artifact_for_every_size_of_a_dynamic_dim(tmp_path, monkeypatch):
    run = _run(CHUNKS.format(ROWS="M"), tmp_path, monkeypatch)
    for m in (160, 128, 100, 37, 1):
        x = torch.randn(m, 64, generator=torch.Generator().manual_seed(m))
        y = torch.full((m, 64), 7.0)
        run(x, y)
        assert torch.allclose(y, x.exp()), m


STATIC = """
import pypto.language as pl

@pl.program
class Tail:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[100, 64], pl.FP32], y: pl.Out[pl.Tensor[[100, 64], pl.FP32]]
             ) -> pl.Tensor[[100, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tail"):
            t = pl.load(x, [{OFF}, 0], [32, 64], valid_shape=[32, 48], clamp=True)
            y = pl.store(pl.adds(t, 1.0), [{OFF}, 0], y)
        return y
"""


def test_constant_offset_cuts_the_valid_region_when_compiling(tmp_path, monkeypatch):
    run = _run(STATIC.format(OFF=80), tmp_path, monkeypatch, "t.py")
    x, y = torch.randn(100, 64), torch.zeros(100, 64)
    run(x, y)
    want = torch.zeros(100, 64)
    want[80:, :48] = x[80:, :48] + 1            # 20 of the 32 rows, the 48 requested columns
    assert torch.equal(y, want)
    assert "partition_tensor_view<20x48xf32>" in (tmp_path / "out" / "ptoas" / "tail.pto").read_text()


def test_a_window_past_the_end_reads_nothing_and_is_an_error():
    with pytest.raises(TypeCheckError, match=r"clamp=True, but the window starts at 100 in dim 0, "
                                             r"past the tensor's extent 100") as exc:
        pl.parse(STATIC.format(OFF=100), filename="/u/t.py")
    assert "t.py:10" in str(exc.value)


def test_without_clamp_the_overhanging_window_is_refused():
    with pytest.raises(TypeCheckError, match=r"lies outside the tensor's extent 100"):
        pl.parse(STATIC.format(OFF=80).replace(", clamp=True", ""), filename="/u/t.py")
