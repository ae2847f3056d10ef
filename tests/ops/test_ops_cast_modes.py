"""The round modes of a narrowing float cast (issue 11.4): `pl.cast(x, pl.FP16, mode=...)`
rounds as the mode says -- rint (to nearest, ties to even: torch's), round (to nearest,
ties away from zero: the default, as the hardware's), floor, ceil, trunc and odd (an
inexact result takes the neighbour whose last bit is odd). The expected codes come from
searching every code of the target type, sorted by value, for the two around each input."""
from __future__ import annotations

import bisect
import math

import pytest
import torch

import pypto.language as pl
from pypto import ir

TARGETS = {"FP16": (torch.float16, torch.int16), "BF16": (torch.bfloat16, torch.int16),
           "FP8E4M3FN": (torch.float8_e4m3fn, torch.uint8), "FP8E5M2": (torch.float8_e5m2, torch.uint8)}

SRC = """
import pypto.language as pl

@pl.program
class C:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Out[pl.Tensor[[16, 64], pl.FP16]],
          b: pl.Out[pl.Tensor[[16, 64], pl.BF16]], c: pl.Out[pl.Tensor[[16, 64], pl.FP8E4M3FN]],
          d: pl.Out[pl.Tensor[[16, 64], pl.FP8E5M2]]):
        t = pl.load(x, [0, 0], [16, 64])
        a = pl.store(pl.cast(t, pl.FP16, mode="{MODE}"), [0, 0], a)
        b = pl.store(pl.cast(t, pl.BF16, mode="{MODE}"), [0, 0], b)
        c = pl.store(pl.cast(t, pl.FP8E4M3FN, mode="{MODE}"), [0, 0], c)
        d = pl.store(pl.cast(t, pl.FP8E5M2, mode="{MODE}"), [0, 0], d)
        return a, b, c, d

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Out[pl.Tensor[[16, 64], pl.FP16]],
             b: pl.Out[pl.Tensor[[16, 64], pl.BF16]], c: pl.Out[pl.Tensor[[16, 64], pl.FP8E4M3FN]],
             d: pl.Out[pl.Tensor[[16, 64], pl.FP8E5M2]]):
        a, b, c, d = self.k(x, a, b, c, d)
        return a, b, c, d
"""


def _codes(name):
    """(sorted positive finite values, their codes) of a target type, from all its codes."""
    tdt, bits = TARGETS[name]
    n = 1 << (8 * torch.empty(0, dtype=bits).element_size() - 1)
    codes = torch.arange(n, dtype=torch.int32).to(bits)
    vals = codes.view(tdt).double()
    keep = vals.isfinite()
    vals, codes = vals[keep], codes[keep].int()
    order = vals.argsort()
    return vals[order].tolist(), codes[order].tolist()


def _expect(x: float, mode: str, table) -> int:
    vals, codes = table
    sign_bit = 0x80 if len(vals) < 256 else 0x8000
    sign = sign_bit if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if a > vals[-1]:                             # past the largest finite
        toward_inf = mode == ("ceil" if x > 0 else "floor") or (mode in ("rint", "round") and
                                                                a >= vals[-1] + (vals[-1] - vals[-2]) / 2)
        return sign | (codes[-1] + 1 if toward_inf else codes[-1])     # (the code after it: infinity)
    i = bisect.bisect_right(vals, a) - 1        # the largest value <= a (vals are sorted)
    if vals[i] == a:
        return sign | codes[i]
    lo, hi = codes[i], codes[i + 1]
    up = mode == ("ceil" if x > 0 else "floor")
    if mode in ("trunc", "floor", "ceil"):
        pick = hi if up else lo
    elif mode == "odd":
        pick = lo if lo & 1 else hi
    elif a - vals[i] != vals[i + 1] - a:
        pick = lo if a - vals[i] < vals[i + 1] - a else hi
    else:
        pick = hi if mode == "round" else (lo if lo % 2 == 0 else hi)
    return sign | pick


def _inputs():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(16, 64, generator=g) * torch.exp2(torch.randint(-20, 12, (16, 64), generator=g).float())
    for r, name in enumerate(TARGETS):          # a row of exact ties for each target
        vals, _ = _codes(name)
        top = len(vals) - 2 if name != "FP8E4M3FN" else len(vals) - 3
        k = torch.randint(1, top, (64,), generator=g)
        mids = torch.tensor([(vals[j] + vals[j + 1]) / 2 for j in k.tolist()], dtype=torch.float64)
        x[r] = (mids * torch.where(torch.rand(64, generator=g) < 0.5, -1.0, 1.0)).float()
    x = x.clamp(-440.0, 440.0)                  # (e4m3fn has no infinity: its overflow is not a mode's)
    x[5, :4] = torch.tensor([70000.0, 65510.0, 1e-30, -1e-30])
    return x


@pytest.mark.parametrize("mode", ["rint", "round", "floor", "ceil", "trunc", "odd"])
def test_narrowing_casts_round_by_the_mode(mode, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(MODE=mode), filename="/u/c.py"), output_dir=tmp_path / "out",
                     platform="a5sim")
    x = _inputs()
    outs = [torch.zeros(16, 64, dtype=TARGETS[n][0]) for n in TARGETS]
    run(x, *outs)
    for name, out in zip(TARGETS, outs):
        table = _codes(name)
        keep = torch.ones(16, 64, dtype=torch.bool)
        if name == "FP8E4M3FN":
            keep[5, :2] = False                 # (70000 and 65510 are past e4m3fn's range)
        want = [_expect(float(v), mode, table) for v in x[keep].tolist()]
        got = out.view(TARGETS[name][1])[keep].int() & (0xFF if out.element_size() == 1 else 0xFFFF)
        assert got.tolist() == want, name
        if mode == "rint":                      # ties to even: torch's own conversion
            assert torch.equal(out[keep].float(), x[keep].to(out.dtype).float()), name
