"""pl.tile.extract (issue 11.2, 11.3): a window of a tile copied into a tile of its own at
offsets known when compiling or at run time (pto.textract): Vec -> Vec, and Mat -> Left /
Right feeding the cube. Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Tensor[[64, 32], pl.FP32],
             b: pl.Tensor[[32, 32], pl.FP32], o: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
             o2: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="v"):
            t = pl.load(x, [0, 0], [16, 64])
            for i in pl.range(2):
                w = pl.tile.extract(t, 4 * i + 2, {COL}, [4, 16], target_memory=pl.Mem.Vec)
                o = pl.store(pl.add(w, w), [4 * i, 0], o)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="c"):
            ta = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
            left = pl.tile.extract(ta, 32, 0, [32, 32], target_memory=pl.Mem.Left)
            right = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            o2 = pl.store(pl.matmul(left, right), [0, 0], o2)
        return o
"""


@pytest.mark.parametrize("col", [0, 16, 48])
def test_windows_of_vec_and_mat_tiles(col, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(COL=col), filename="/u/e.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x, a, b = torch.randn(16, 64), torch.randn(64, 32), torch.randn(32, 32)
    o, o2 = torch.zeros(8, 16), torch.zeros(32, 32)
    run(x, a, b, o, o2)
    want = torch.cat([2 * x[2:6, col:col + 16], 2 * x[6:10, col:col + 16]])
    assert torch.equal(o, want) and torch.allclose(o2, a[32:] @ b, atol=1e-4)


def test_a_window_outside_the_tile_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"extract: the window \[56, 72\) of dim 1 lies outside"):
        pl.parse(SRC.format(COL=56), filename="/u/e.py")


def test_vec_to_left_is_not_a_path():
    src = SRC.format(COL=0).replace("[4, 16], target_memory=pl.Mem.Vec", "[4, 16], target_memory=pl.Mem.Left")
    with pytest.raises(TypeCheckError, match=r"Vec -> Left is not a path"):
        pl.parse(src, filename="/u/e.py")
