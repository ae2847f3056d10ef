"""Windows of tiles and matmul results assembled into Mat (issue 11.2, 11.3): pl.slice on
a Vec or Mat tile is a pto.subview of its bytes (offsets known when compiling or at run
time); pl.tile.assemble of an Acc tile into a Mat tile moves it into the window (subview
+ tmov). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError

ROWS = """
import pypto.language as pl

@pl.program
class Rows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32], src: pl.Tensor[[32, 16], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            tx = pl.load(x, [0, 0], [32, 32])
            ts = pl.load(src, [0, 0], [32, 16])
            for b in pl.range(4):
                for i in pl.range(8):
                    r = b * 8 + i
                    tx = pl.tile.assemble(tx, pl.slice(ts, [1, 16], [31 - r, 0]), [r, {COL}])
            y = pl.store(tx, [0, 0], y)
        return y
"""


@pytest.mark.parametrize("col", [0, 8, 16])
def test_rows_of_a_tile_sliced_at_run_time_offsets(col, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(ROWS.format(COL=col), filename="/u/rows.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x, src, y = torch.randn(32, 32), torch.randn(32, 16), torch.zeros(32, 32)
    run(x, src, y)
    want = x.clone()
    want[:, col:col + 16] = src.flip(0)
    assert torch.equal(y, want)
    assert "pto.subview" in (tmp_path / "out" / "ptoas" / "rows.pto").read_text()


HALVES = """
import pypto.language as pl

@pl.program
class Halves:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             x: pl.Tensor[[32, 64], pl.FP32], eye: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="halves"):
            ta = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
            tb = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            target = pl.load(x, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            for h in pl.range(2):
                lhs = pl.move(pl.slice(ta, [32, 32], [h * 32, 0]), target_memory=pl.Mem.Left)
                target = pl.tile.assemble(target, pl.matmul(lhs, tb), [0, {COLS}])
            # read the Mat tile back through the cube, window by window: W @ I
            ident = pl.move(pl.load(eye, [0, 0], [32, 32], target_memory=pl.Mem.Mat),
                            target_memory=pl.Mem.Right)
            y = pl.store(pl.matmul(pl.move(pl.slice(target, [32, 32], [0, 0]), target_memory=pl.Mem.Left), ident), [0, 0], y)
            y = pl.store(pl.matmul(pl.move(pl.slice(target, [32, 32], [0, 32]), target_memory=pl.Mem.Left), ident), [0, 32], y)
        return y
"""


def test_mat_windows_feed_the_cube_and_take_its_results(tmp_path, monkeypatch):
    """Halves of a Mat tile (subviews) multiply; each product (Acc) is moved into a
    window of another Mat tile; that tile, read back through the cube, holds them."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(HALVES.format(COLS="h * 32"), filename="/u/halves.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    a, b, x = torch.randn(64, 32), torch.randn(32, 32), torch.randn(32, 64)
    y = torch.zeros(32, 64)
    run(a, b, x, torch.eye(32), y)
    want = torch.cat([a[:32] @ b, a[32:] @ b], dim=1)
    assert torch.allclose(y, want, rtol=1e-4, atol=1e-4), (y - want).abs().max()


def test_a_window_outside_the_tile_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"slice: the window \[24, 40\) of dim 1 lies outside"):
        pl.parse(ROWS.format(COL=0).replace("pl.slice(ts, [1, 16], [31 - r, 0])",
                                            "pl.slice(ts, [1, 16], [0, 24])"), filename="/u/rows.py")


def test_vec_into_mat_is_not_a_data_path():
    src = ROWS.format(COL=0).replace("tx = pl.load(x, [0, 0], [32, 32])",
                                     "tx = pl.load(x, [0, 0], [32, 32], target_memory=pl.Mem.Mat)")
    with pytest.raises(TypeCheckError, match=r"assemble: Vec into Mat is not a data path"):
        pl.parse(src, filename="/u/rows.py")


def test_a_mat_target_read_again_after_the_insert_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = HALVES.format(COLS="h * 32").replace(
        "target = pl.tile.assemble(target, pl.matmul(lhs, tb), [0, h * 32])",
        "t2 = pl.tile.assemble(target, pl.matmul(lhs, tb), [0, h * 32])\n"
        "                target = pl.tile.assemble(t2, pl.matmul(pl.move(pl.slice(target, [32, 32], "
        "[0, 0]), target_memory=pl.Mem.Left), tb), [0, 0])")
    with pytest.raises(CodegenError, match=r"needs a Mat -> Mat copy"):
        ir.compile(pl.parse(src, filename="/u/halves.py"), output_dir=tmp_path / "out",
                   platform="a2a3sim")
