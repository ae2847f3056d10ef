"""fmod / rem and their scalar forms (issue 11.4): the remainder with the dividend's sign
(torch.fmod) and with the divisor's (torch.remainder), fp32 and int32, on the
simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.{D}], b: pl.Tensor[[16, 64], pl.{D}],
             f: pl.Out[pl.Tensor[[16, 64], pl.{D}]], r: pl.Out[pl.Tensor[[16, 64], pl.{D}]],
             fs: pl.Out[pl.Tensor[[16, 64], pl.{D}]], rs: pl.Out[pl.Tensor[[16, 64], pl.{D}]]
             ) -> pl.Tensor[[16, 64], pl.{D}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rem"):
            ta = pl.load(a, [0, 0], [16, 64])
            tb = pl.load(b, [0, 0], [16, 64])
            f = pl.store(pl.fmod(ta, tb), [0, 0], f)
            r = pl.store(pl.tile.rem(ta, tb), [0, 0], r)
            fs = pl.store(pl.fmods(ta, {S}), [0, 0], fs)
            rs = pl.store(pl.rem(ta, {S}), [0, 0], rs)
        return f
"""


@pytest.mark.parametrize("d, tdt, s", [("FP32", torch.float32, "-2.5"), ("INT32", torch.int32, "-7")])
def test_fmod_and_rem_match_torch(d, tdt, s, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC.replace("{D}", d).replace("{S}", s), filename="/u/rem.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(11)
    if tdt.is_floating_point:
        a = torch.randn(16, 64, generator=g) * 10
        b = torch.randn(16, 64, generator=g) * 3 + 0.1
    else:
        a = torch.randint(-100, 100, (16, 64), generator=g, dtype=tdt)
        b = torch.randint(1, 13, (16, 64), generator=g, dtype=tdt) * (1 - 2 * (a % 2 == 0).to(tdt))
    outs = [torch.zeros(16, 64, dtype=tdt) for _ in range(4)]
    run(a, b, *outs)
    sv = float(s) if tdt.is_floating_point else int(s)
    want = [torch.fmod(a, b), torch.remainder(a, b), torch.fmod(a, torch.tensor(sv, dtype=tdt)),
            torch.remainder(a, torch.tensor(sv, dtype=tdt))]
    for got, exp in zip(outs, want):
        assert torch.allclose(got, exp, atol=1e-5) if tdt.is_floating_point else torch.equal(got, exp)
