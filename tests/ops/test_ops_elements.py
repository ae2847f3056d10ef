"""One element at a time, and index ramps (issue 11.1, 11.4): pl.read / pl.write on
tensors (pto.load_scalar / pto.store_scalar through a 1x1 partition) and on Vec tiles
(pto.tgetval / pto.tsetval at a row-major offset), and pl.tensor.ci / pl.arange inside a
kernel (a tile.ci ramp). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import MisplacedTensorOpError, TypeCheckError

TRANSPOSE = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, vals: pl.Tensor[[{N}], pl.{DT}],
             table: pl.Out[pl.Tensor[[{R}, {C}], pl.{DT}]]) -> pl.Tensor[[{R}, {C}], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scatter"):
            for k in pl.range({C}):
                for t in pl.range({R}):
                    val = pl.read(vals, [k * {R} + t])
                    table = pl.write(table, [t, k], val)
        return table
"""


@pytest.mark.parametrize("r, c, dtype", [(8, 4, "FP32"), (16, 3, "INT32")])
def test_tensor_elements_written_one_by_one(r, c, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = TRANSPOSE.format(N=r * c, R=r, C=c, DT=dtype)
    run = ir.compile(pl.parse(src, filename="/u/t.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    tdt = torch.float32 if dtype == "FP32" else torch.int32
    vals = (torch.randn(r * c) * 100).to(tdt)
    table = torch.zeros(r, c, dtype=tdt)
    run(vals, table)
    assert torch.equal(table, vals.reshape(c, r).T)
    assert "pto.store_scalar" in (tmp_path / "out" / "ptoas" / "scatter.pto").read_text()


TILE = """
import pypto.language as pl

@pl.program
class TE:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, idx: pl.Tensor[[1, 8], pl.INT32], x: pl.Tensor[[8, 8], pl.FP32],
             o: pl.Out[pl.Tensor[[8, 8], pl.FP32]],
             o2: pl.Out[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="diag"):
            tile = pl.tile.full([8, 8], dtype=pl.FP32, value=-1.0)
            it = pl.load(idx, [0, 0], [1, 8])
            for t in pl.range(8):
                r = pl.tile.read(it, [0, t])
                pl.write(tile, [t, t], pl.cast(r, pl.FP32))
            o = pl.store(tile, [0, 0], o)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
            tx = pl.load(x, [0, 0], [8, 8])
            ty = pl.write(tx, [2, 5], pl.read(tx, [7, 0]))
            o2 = pl.store(pl.add(tx, ty), [0, 0], o2)
        return o
"""


def test_tile_elements_read_and_written(tmp_path, monkeypatch):
    """In place as a statement; into a copy when the written tile is still read after."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(TILE, filename="/u/te.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    idx = torch.arange(8, dtype=torch.int32).reshape(1, 8) * 3
    x = torch.randn(8, 8)
    o, o2 = torch.zeros(8, 8), torch.zeros(8, 8)
    run(idx, x, o, o2)
    want = torch.full((8, 8), -1.0)
    want[range(8), range(8)] = idx[0].float()
    assert torch.equal(o, want)
    y = x.clone()
    y[2, 5] = x[7, 0]
    assert torch.equal(o2, x + y)                 # tx itself kept its element
    pto = (tmp_path / "out" / "ptoas" / "copy.pto").read_text()
    assert "pto.tgetval" in pto and "pto.tsetval" in pto and "pto.tmov" in pto


RAMP = """
import pypto.language as pl

@pl.program
class CI:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 64], pl.INT32], o: pl.Out[pl.Tensor[[8, 64], pl.INT32]],
             d: pl.Out[pl.Tensor[[8, 64], pl.INT32]]) -> pl.Tensor[[8, 64], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            o[:] = pl.add(pl.arange(5, [8, 64], dtype=pl.INT32), x)
            d[:] = pl.tensor.ci(100, [8, 64], dtype=pl.INT32, descending=True)
        return o
"""


def test_tensor_ramps_in_a_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(RAMP, filename="/u/ci.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randint(-5, 5, (8, 64), dtype=torch.int32)
    o, d = torch.zeros(8, 64, dtype=torch.int32), torch.zeros(8, 64, dtype=torch.int32)
    run(x, o, d)
    ramp = torch.arange(512, dtype=torch.int32).reshape(8, 64)
    assert torch.equal(o, x + 5 + ramp) and torch.equal(d, 100 - ramp)


def test_writing_a_value_of_another_dtype_is_a_typed_error():
    src = TRANSPOSE.format(N=32, R=8, C=4, DT="FP32").replace(
        "table = pl.write(table, [t, k], val)", "table = pl.write(table, [t, k], k)")
    with pytest.raises(TypeCheckError, match=r"write: a index value into fp32 elements"):
        pl.parse(src, filename="/u/t.py")


def test_elements_of_a_mat_tile_are_not_addressable():
    src = TILE.replace("tx = pl.load(x, [0, 0], [8, 8])",
                       "tx = pl.load(x, [0, 0], [8, 8], target_memory=pl.Mem.Mat)")
    with pytest.raises(TypeCheckError, match=r"Mat tile's elements are not addressable"):
        pl.parse(src, filename="/u/te.py")


def test_element_writes_and_ramps_belong_in_a_kernel():
    src = TRANSPOSE.format(N=32, R=8, C=4, DT="FP32").replace(
        '        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scatter"):\n', "        if True:\n")
    with pytest.raises(MisplacedTensorOpError, match=r"pl.write"):
        pl.parse(src, filename="/u/t.py")
    with pytest.raises(MisplacedTensorOpError, match=r"fills a tensor on the device"):
        pl.parse(RAMP.replace('        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):\n',
                              "        if True:\n"), filename="/u/ci.py")


def test_tile_arange_is_tile_ci():
    src = TILE.replace("tile = pl.tile.full([8, 8], dtype=pl.FP32, value=-1.0)",
                       "ramp = pl.tile.arange(0, [8, 8], dtype=pl.INT32)\n"
                       "            tile = pl.tile.full([8, 8], dtype=pl.FP32, value=-1.0)")
    assert "pl.tile.ci(0, [8, 8], dtype=pl.INT32)" in pl.parse(src, filename="/u/te.py").as_python()
