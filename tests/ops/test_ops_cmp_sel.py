"""Compare and select (issue 11.4): pl.tile.cmp / cmps write a bit mask (a UINT8 tile,
one bit per element), pl.tile.sel / sels pick by it; all six comparisons, fp32 and
int32, on the simulator against torch.where."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class C:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.{D}], b: pl.Tensor[[16, 64], pl.{D}],
             o: pl.Out[pl.Tensor[[16, 64], pl.{D}]], s: pl.Out[pl.Tensor[[16, 64], pl.{D}]]
             ) -> pl.Tensor[[16, 64], pl.{D}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="cmpsel"):
            ta = pl.load(a, [0, 0], [16, 64])
            tb = pl.load(b, [0, 0], [16, 64])
            tmp = pl.tile.create([1, 32], dtype=pl.UINT8)
            m: pl.Tile[[16, 32], pl.UINT8] = pl.tile.cmp(ta, tb, cmp_type={T})
            o = pl.store(pl.tile.sel(m, ta, tb, tmp), [0, 0], o)
            ms = pl.cmps(ta, {Z}, cmp_type={T})
            s = pl.store(pl.sels(ms, ta, tmp, {Z}), [0, 0], s)
        return o
"""
OPS = [torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge]


@pytest.mark.parametrize("d, tdt, z", [("FP32", torch.float32, "0.0"), ("INT32", torch.int32, "3")])
@pytest.mark.parametrize("t", range(6))
def test_cmp_then_sel_is_torch_where(t, d, tdt, z, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC.replace("{D}", d).replace("{T}", str(t)).replace("{Z}", z),
                    filename="/u/cmp.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(t)
    a = torch.randint(-4, 8, (16, 64), generator=g).to(tdt)   # ties, so == and != matter
    b = torch.randint(-4, 8, (16, 64), generator=g).to(tdt)
    o, s = torch.zeros(16, 64, dtype=tdt), torch.zeros(16, 64, dtype=tdt)
    run(a, b, o, s)
    zv = torch.tensor(float(z) if tdt.is_floating_point else int(z), dtype=tdt)
    assert torch.equal(o, torch.where(OPS[t](a, b), a, b))
    assert torch.equal(s, torch.where(OPS[t](a, zv), a, zv))


def test_a_bad_cmp_type_or_mask_is_a_typed_error():
    src = SRC.replace("{D}", "FP32").replace("{Z}", "0.0")
    with pytest.raises(TypeCheckError, match=r"cmp_type is 0\.\.5"):
        pl.parse(src.replace("{T}", "6"), filename="/u/cmp.py")
    bad = src.replace("{T}", "0").replace("pl.tile.sel(m, ta, tb, tmp)", "pl.tile.sel(ta, ta, tb, tmp)")
    with pytest.raises(TypeCheckError, match=r"not a UINT8 bit mask"):
        pl.parse(bad, filename="/u/cmp.py")
