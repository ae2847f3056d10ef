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


SUBSCRIPT = """
import pypto.language as pl

@pl.program
class Sub:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 128], pl.FP32], g: pl.Tensor[[1, 64], pl.FP32],
          lo: pl.Out[pl.Tensor[[16, 64], pl.FP32]], hi: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
          ) -> tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        t: pl.Tile[[16, 128], pl.FP32] = pl.load(x, [0, 0], [16, 128])
        tg: pl.Tile[[1, 64], pl.FP32] = pl.load(g, [0, 0], [1, 64])
        left: pl.Tile[[16, 64], pl.FP32] = t[:, 0:64]
        right: pl.Tile[[16, 64], pl.FP32] = t[{ROWS}, 64:]
        s = t[3, 70]
        lo = pl.store(pl.tile.col_expand_mul(left, tg), [0, 0], lo)
        hi = pl.store(pl.adds(right, s), [0, 0], hi)
        return lo, hi

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 128], pl.FP32], g: pl.Tensor[[1, 64], pl.FP32],
             lo: pl.Out[pl.Tensor[[16, 64], pl.FP32]], hi: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        lo, hi = self.k(x, g, lo, hi)
        return lo, hi
"""


def test_subscript_of_a_tile_is_a_window_or_an_element(tmp_path, monkeypatch):
    """t[:, 0:64] / t[0:16, 64:] of a tile: views of its column halves (pto.subview, read
    through the parent's row stride); t[3, 70]: one element (a scalar)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SUBSCRIPT.format(ROWS="0:16"), filename="/u/sub.py")
    body = prog.functions[0].body
    assert [s.value.op for s in body[2:5]] == ["tile.slice", "tile.slice", "tile.read"]
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    x, g = torch.randn(16, 128), torch.randn(1, 64)
    lo, hi = torch.zeros(16, 64), torch.zeros(16, 64)
    run(x, g, lo, hi)
    assert torch.equal(lo, x[:, :64] * g)
    assert torch.equal(hi, x[:, 64:] + x[3, 70])


def test_subscript_of_a_tile_out_of_bounds_is_an_error_at_the_line():
    with pytest.raises(TypeCheckError, match="slice") as exc:
        pl.parse(SUBSCRIPT.format(ROWS="8:24"), filename="/u/sub.py")
    assert "sub.py:13" in str(exc.value)
