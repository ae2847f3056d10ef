"""Scatters (issue 11.5): pl.scatter(x, dim=-1, index=, src=) with torch.scatter's meaning
on 2-D tensors (tile.scatter at row-major positions, pto.tscatter), the mask form
pl.scatter(values, mask_pattern=, dst=) (the hardware's spread, blended with dst), and
pl.mscatter (a tile stored element by element to positions of a tensor, pto.mscatter). On
the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError

INDEX = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, base: pl.Tensor[[{R}, {C}], pl.{DT}], idx: pl.Tensor[[{IR}, {IC}], pl.{IDT}],
             val: pl.Tensor[[{IR}, {IC}], pl.{DT}],
             o: pl.Out[pl.Tensor[[{R}, {C}], pl.{DT}]]) -> pl.Tensor[[{R}, {C}], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="s"):
            o = pl.assemble(o, pl.scatter(base, dim=-1, index=idx, src=val), [0, 0])
        return o
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32,
         "INT16": torch.int16, "INT32i": torch.int32, "INT16i": torch.int16}


def _compile(src, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename="/u/s.py"), output_dir=tmp_path / "out", platform="a2a3sim")


@pytest.mark.parametrize("dtype, idt, shape, ishape", [
    ("FP32", "INT32", (8, 16), (8, 8)), ("INT32", "INT32", (8, 16), (4, 8)),
    ("FP16", "INT16", (4, 32), (4, 16)), ("BF16", "INT16", (4, 32), (4, 16)),
    ("INT16", "INT16", (4, 32), (2, 16))])
def test_scatter_along_the_last_dim_is_torch_scatter(dtype, idt, shape, ishape, tmp_path, monkeypatch):
    (r, c), (ir_, ic) = shape, ishape
    run = _compile(INDEX.format(R=r, C=c, IR=ir_, IC=ic, DT=dtype, IDT=idt), tmp_path, monkeypatch)
    base = (torch.randn(r, c) * 50).to(TORCH[dtype])
    # distinct positions per row: the result does not depend on the order of the writes
    idx = torch.stack([torch.randperm(c)[:ic] for _ in range(ir_)]).to(TORCH[idt])
    val = (torch.randn(ir_, ic) * 50).to(TORCH[dtype])
    o = torch.zeros(r, c, dtype=TORCH[dtype])
    run(base, idx, val, o)
    assert torch.equal(o, base.scatter(1, idx.long(), val))


MASK = """
import pypto.language as pl

@pl.program
class M:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, even: pl.Tensor[[8, 8], pl.FP32], odd: pl.Tensor[[8, 8], pl.FP32],
             dst: pl.Tensor[[8, 16], pl.FP32],
             o: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="m"):
            out = pl.scatter(even, mask_pattern=pl.tile.MaskPattern.P0101, dst=dst)
            {SECOND}
            o = pl.assemble(o, out, [0, 0])
        return o
"""


def test_mask_scatters_write_the_marked_columns_and_keep_the_rest(tmp_path, monkeypatch):
    run = _compile(MASK.format(SECOND="pass"), tmp_path, monkeypatch)
    even, odd, dst = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 16)
    o = torch.zeros(8, 16)
    run(even, odd, dst, o)
    want = dst.clone()
    want[:, 0::2] = even
    assert torch.equal(o, want)


def test_two_mask_scatters_interleave(tmp_path, monkeypatch):
    run = _compile(MASK.format(SECOND="out = pl.scatter(odd, mask_pattern=pl.tile.MaskPattern.P1010, dst=out)"),
                   tmp_path, monkeypatch)
    even, odd, dst = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 16)
    o = torch.zeros(8, 16)
    run(even, odd, dst, o)
    assert torch.equal(o, torch.stack([even, odd], dim=2).reshape(8, 16))


MSCATTER = """
import pypto.language as pl

@pl.program
class MS:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[8, 32], pl.{DT}], idx: pl.Tensor[[8, 32], pl.INT32],
             out: pl.InOut[pl.Tensor[[{N}], pl.{DT}]]) -> pl.Tensor[[{N}], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ms"):
            ts = pl.load(src, [0, 0], [8, 32])
            ti = pl.load(idx, [0, 0], [8, 32])
            out = pl.mscatter(ts, ti, out)
        return out
"""


@pytest.mark.parametrize("dtype, n", [("FP32", 256), ("FP32", 512), ("FP16", 256), ("INT32", 300)])
def test_mscatter_stores_each_element_at_its_position(dtype, n, tmp_path, monkeypatch):
    run = _compile(MSCATTER.format(DT=dtype, N=n), tmp_path, monkeypatch)
    src = (torch.randn(8, 32) * 50).to(TORCH[dtype])
    idx = torch.randperm(n)[:256].to(torch.int32).reshape(8, 32)
    out = torch.full((n,), 3, dtype=TORCH[dtype])
    run(src, idx, out)
    want = torch.full((n,), 3, dtype=TORCH[dtype])
    want[idx.flatten().long()] = src.flatten()
    assert torch.equal(out, want)
    assert "pto.mscatter" in (tmp_path / "out" / "ptoas" / "ms.pto").read_text()


def test_typed_errors():
    with pytest.raises(TypeCheckError, match=r"fp16 elements take int16 indexes, got int32"):
        pl.parse(INDEX.format(R=4, C=32, IR=4, IC=16, DT="FP16", IDT="INT32"), filename="/u/s.py")
    with pytest.raises(NotBuiltError, match=r"scatter: dim=0 is not supported"):
        pl.parse(INDEX.format(R=8, C=16, IR=8, IC=8, DT="FP32", IDT="INT32").replace("dim=-1", "dim=0"),
                 filename="/u/s.py")
    with pytest.raises(TypeCheckError, match=r"P0101 writes 8x8 values into \[8, 16\], got Tensor\[8, 16\]"):
        pl.parse(MASK.format(SECOND="pass").replace("pl.scatter(even,", "pl.scatter(dst,"),
                 filename="/u/m.py")


UPDATE = """
import pypto.language as pl

@pl.program
class SU:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.{DT}], index: pl.Tensor[[2, 8], pl.INT32],
             src: pl.Tensor[[16, 32], pl.{DT}],
             o: pl.Out[pl.Tensor[[32, 32], pl.{DT}]]) -> pl.Tensor[[32, 32], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="su"):
{BODY}
        return o
"""
TILE_FORM = """\
            tx = pl.load(x, [0, 0], [32, 32])
            ti = pl.load(index, [0, 0], [2, 8])
            ts = pl.load(src, [0, 0], [16, 32])
            o = pl.store(pl.tile.scatter_update(tx, dim=-2, index=ti, src=ts), [0, 0], o)"""
TENSOR_FORM = """\
            o = pl.assemble(o, pl.scatter_update(x, -2, index, src), [0, 0])"""


@pytest.mark.parametrize("body", [TILE_FORM, TENSOR_FORM], ids=["tile", "tensor"])
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_scatter_update_replaces_rows(body, dtype, tmp_path, monkeypatch):
    run = _compile(UPDATE.replace("{BODY}", body).replace("{DT}", dtype), tmp_path, monkeypatch)
    x = torch.randn(32, 32).to(TORCH[dtype])
    index = torch.randperm(32)[:16].to(torch.int32).reshape(2, 8)
    src = torch.randn(16, 32).to(TORCH[dtype])
    o = torch.zeros(32, 32, dtype=TORCH[dtype])
    run(x, index, src, o)
    want = x.clone()
    want[index.flatten().long()] = src
    assert torch.equal(o, want)
