"""8-bit floats (issue 11.6): pl.FP8E4M3FN, pl.FP8E5M2 and pl.FP8E8M0 as the reference
exports them -- on a5, tiles of them are loaded, stored and cast (pto.tcvt), not computed
with; conversions round as torch's (bit for bit, edge cases included: e4m3fn saturates,
e5m2 overflows to infinity, e8m0 keeps a power of two). HiFloat8 is moved and gathered as
its bits (its conversions: test_ops_hif8.py); the other 4-bit types are named and refused
as not built."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, NotBuiltError, TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class F:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], q: pl.Out[pl.Tensor[[16, 64], pl.{D}]],
          y: pl.Out[pl.Tensor[[16, 64], pl.{BACK}]]):
        f8 = pl.cast(pl.load(x, [0, 0], [16, 64]), pl.{D})
        q = pl.store(f8, [0, 0], q)
        y = pl.store(pl.cast(f8, pl.{BACK}), [0, 0], y)
        return q, y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], q: pl.Out[pl.Tensor[[16, 64], pl.{D}]],
             y: pl.Out[pl.Tensor[[16, 64], pl.{BACK}]]):
        q, y = self.k(x, q, y)
        return q, y
"""
TORCH = {"FP8E4M3FN": torch.float8_e4m3fn, "FP8E5M2": torch.float8_e5m2, "FP8E8M0": torch.float8_e8m0fnu,
         "FP32": torch.float32, "FP16": torch.float16}
EDGES = [1000., 448., 449., 464., 500., 57344., 61440., 70000., 0.3, 3.0, 2.5, 0.75, 1e-9, 1e-3,
         -2.5, 0.0, -0.0, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("d", ["FP8E4M3FN", "FP8E5M2", "FP8E8M0"])
@pytest.mark.parametrize("back", ["FP32", "FP16"])
def test_casts_round_as_torch(d, back, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(D=d, BACK=back), filename="/u/f.py"), output_dir=tmp_path / "out",
                     platform="a5sim")
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(3)) * 64
    x[0, :len(EDGES)] = torch.tensor(EDGES)
    q, y = torch.zeros(16, 64, dtype=TORCH[d]), torch.zeros(16, 64, dtype=TORCH[back])
    run(x, q, y)
    want = x.to(TORCH[d])
    nan = want.float().isnan()
    assert torch.equal(q.view(torch.uint8)[~nan], want.view(torch.uint8)[~nan])
    assert q.float()[nan].isnan().all()
    assert torch.equal(y.float().nan_to_num(), want.float().to(TORCH[back]).float().nan_to_num())


def test_8bit_floats_exist_on_a5_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(CodegenError, match=r"8-bit floats exist on a5, not a2a3"):
        ir.compile(pl.parse(SRC.format(D="FP8E4M3FN", BACK="FP32"), filename="/u/f.py"),
                   output_dir=tmp_path / "out", platform="a2a3sim")


def test_computing_with_8bit_floats_is_refused():
    src = SRC.format(D="FP8E5M2", BACK="FP32").replace("q = pl.store(f8,", "q = pl.store(pl.add(f8, f8),")
    with pytest.raises(TypeCheckError, match=r"does not compute with fp8_e5m2") as exc:
        pl.parse(src, filename="/u/f.py")
    assert "f.py:10" in str(exc.value)


HF8_SRC = """
import pypto.language as pl

@pl.program
class H:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.HF8], o: pl.Out[pl.Tensor[[16, 64], pl.HF8]]):
        t = pl.load(x, [8, 0], [8, 64])
        o = pl.store(t, [0, 0], o)
        o = pl.store(pl.load(x, [0, 0], [8, 64]), [8, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.HF8], o: pl.Out[pl.Tensor[[16, 64], pl.HF8]]):
        o = self.k(x, o)
        return o
"""


def test_hifloat8_moves_as_its_bits(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(HF8_SRC, filename="/u/h.py"), output_dir=tmp_path / "out", platform="a5sim")
    x = torch.randint(0, 256, (16, 64), dtype=torch.uint8)     # (torch has no HiFloat8: its bits)
    o = torch.zeros(16, 64, dtype=torch.uint8)
    run(x, o)
    assert torch.equal(o, torch.cat([x[8:], x[:8]]))
    assert "dtype=!pto.hif8" in (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    with pytest.raises(TypeCheckError, match=r"does not work on HF8"):
        pl.parse(HF8_SRC.replace("o = pl.store(t,", "o = pl.store(pl.add(t, t),"), filename="/u/h.py")


@pytest.mark.parametrize("d", ["HF4", "INT4", "UINT4"])
def test_the_other_narrow_types_are_named_and_not_built(d):
    assert repr(getattr(pl, d)) == f"pl.{d}"
    with pytest.raises(NotBuiltError, match=r"is not supported by this pypto yet"):
        pl.parse(SRC.format(D=d, BACK="FP32"), filename="/u/f.py")


GATHER_SRC = """
import pypto.language as pl

@pl.program
class G:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, mem: pl.Tensor[[64, 32], pl.{D}], idx: pl.Tensor[[1, 16], pl.INT32],
          out: pl.Out[pl.Tensor[[16, 32], pl.{D}]]):
        it = pl.load(idx, [0, 0], [1, 16])
        out = pl.store(pl.tile.mgather(mem, it, coalesce="row", gather_oob="zero"), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, mem: pl.Tensor[[64, 32], pl.{D}], idx: pl.Tensor[[1, 16], pl.INT32],
             out: pl.Out[pl.Tensor[[16, 32], pl.{D}]]):
        out = self.k(mem, idx, out)
        return out
"""


@pytest.mark.parametrize("d", ["HF8", "FP8E5M2"])
def test_8bit_rows_gathered_as_bits(d, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(GATHER_SRC.format(D=d), filename="/u/g.py"), output_dir=tmp_path / "out",
                     platform="a5sim")
    bits = torch.randint(0, 256, (64, 32), dtype=torch.uint8)
    mem = bits if d == "HF8" else bits.view(torch.float8_e5m2)
    idx = torch.randint(0, 64, (1, 16), dtype=torch.int32)
    idx[0, 3] = 70                                  # outside: gather_oob="zero" gives zero bits
    out = torch.zeros(16, 32, dtype=mem.dtype)
    run(mem, idx, out)
    want = bits[idx[0].clamp(max=63).long()].clone()
    want[3] = 0
    assert torch.equal(out.view(torch.uint8), want)
