"""HiFloat8 conversions (issue 11.6, a5): fp32 / fp16 -> HF8 and HF8 -> fp32, as the
reference's cast table has them. torch has no HiFloat8, so this test carries its own
model of the format, built from its definition (the dot-field layouts, packed field by
field) rather than from the tile library's decoder, and picks the expected code for
every value by searching all 256 codes under each round mode."""
from __future__ import annotations

import math

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError


def _hif8_codes() -> dict[int, float]:
    """code -> value of every positive HiF8 code, packed from the format's fields."""
    codes = {0x00: 0.0}
    for k in range(1, 8):                                   # denormals: 0000 + k -> 2^(k-23)
        codes[k] = 2.0 ** (k - 23)
    for m in range(8):                                      # dot 0001: E = 0, 3 mantissa bits
        codes[0b0001_000 | m] = 1 + m / 8
    for neg in (0, 1):
        for m in range(8):                                  # dot 001: E = +-1, 3 mantissa bits
            codes[0b001_0_000 | neg << 3 | m] = (1 + m / 8) * 2.0 ** (-1 if neg else 1)
        layouts = ((0b01, 1, 3, 2), (0b10, 2, 2, 4), (0b11, 3, 1, 8))    # (dot, exp bits, mant bits, implied)
        for dot, ebits, mbits, implied in layouts:
            for ex in range(1 << ebits):
                for m in range(1 << mbits):
                    code = dot << 5 | neg << 4 | ex << mbits | m
                    mag = implied + ex
                    codes[code] = (1 + m / (1 << mbits)) * 2.0 ** (-mag if neg else mag)
    codes[0x6F] = math.inf                                  # where 1.5 * 2^15 would be
    return codes


CODES = _hif8_codes()
PLACE = {c: (49152.0 if v == math.inf else v) for c, v in CODES.items()}   # infinity's place


def _expect(x: float, mode: str) -> int:
    if math.isnan(x):
        return 0x80
    if math.isinf(x):
        return 0x6F | (0x80 if x < 0 else 0)
    a, sign = abs(x), (0x80 if x < 0 else 0)
    below = max((c for c in PLACE if PLACE[c] <= a and c != 0x6F), key=PLACE.get)   # (finite)
    above = [c for c in PLACE if PLACE[c] >= a]
    above = min(above, key=PLACE.get) if above else 0x6F
    if PLACE[below] == a:
        pick = below
    elif mode == "trunc" or mode == ("floor" if x > 0 else "ceil"):
        pick = below
    elif mode in ("floor", "ceil"):
        pick = above
    elif mode == "odd":                                     # (short of infinity)
        pick = above if above % 2 and above != 0x6F else below
    elif a - PLACE[below] != PLACE[above] - a:
        pick = below if a - PLACE[below] < PLACE[above] - a else above
    else:
        pick = above if mode == "round" else (below if below % 2 == 0 else above)
    return pick | sign if pick else 0


def test_the_format_as_published():
    assert len(CODES) == 128 and len(set(CODES.values())) == 128
    finite = sorted(v for v in CODES.values() if 0 < v < math.inf)
    assert (finite[0], finite[-1]) == (2.0 ** -22, 32768.0)
    assert _expect(1.0, "round") == 0x08 and _expect(0.125, "round") == 0b0_01_11_000
    assert _expect(-32768.0, "round") == 0b1_11_0111_0 and _expect(2.0 ** -15, "round") == 0b0_11_1111_0


SRC = """
import pypto.language as pl

@pl.program
class H:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.{SRC}], q: pl.Out[pl.Tensor[[16, 64], pl.HF8]],
          y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        h = pl.cast(pl.load(x, [0, 0], [16, 64]), pl.HF8, mode="{MODE}")
        q = pl.store(h, [0, 0], q)
        y = pl.store(pl.cast(h, pl.FP32), [0, 0], y)
        return q, y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.{SRC}], q: pl.Out[pl.Tensor[[16, 64], pl.HF8]],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        q, y = self.k(x, q, y)
        return q, y
"""
EDGES = [1.0, 32768.0, 40959.0, 40960.0, 49152.0, 1e9, 0.125, 1.9375, -1.9375, 2.0 ** -22, 2.0 ** -23,
         1.5 * 2.0 ** -17, 3 * 2.0 ** -24, 1e-12, 0.0, -0.0, -0.3, 17.0, 0.046875, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("src,mode", [("FP32", "round"), ("FP32", "rint"), ("FP32", "trunc"), ("FP32", "floor"),
                                      ("FP32", "ceil"), ("FP32", "odd"), ("FP16", "round")])
def test_casts_into_and_out_of_hifloat8(src, mode, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(SRC=src, MODE=mode), filename="/u/h.py"), output_dir=tmp_path / "out",
                     platform="a5sim")
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 64, generator=g) * torch.exp2(torch.randint(-24, 17, (16, 64), generator=g).float())
    x[0, :len(EDGES)] = torch.tensor(EDGES)
    x = x.to(torch.float16) if src == "FP16" else x
    q, y = torch.zeros(16, 64, dtype=torch.uint8), torch.zeros(16, 64)
    run(x, q, y)
    want = torch.tensor([_expect(float(v), mode) for v in x.flatten()], dtype=torch.uint8).view(16, 64)
    assert torch.equal(q, want)
    values = torch.tensor([math.copysign(CODES[b & 0x7F], -1.0 if b & 0x80 else 1.0) if b != 0x80 else math.nan
                           for b in want.flatten().tolist()]).view(16, 64)
    assert torch.equal(y.nan_to_num(), values.nan_to_num())
    assert "!pto.hif8" in (tmp_path / "out" / "ptoas" / "k.pto").read_text()


@pytest.mark.parametrize("src,target,msg", [("BF16", "HF8", r"HF8 is made from fp32 or fp16, not bfloat16"),
                                            ("HF8", "FP16", r"HF8 casts to fp32, not fp16")])
def test_the_conversion_units_paths_only(src, target, msg):
    text = f"""
import pypto.language as pl

@pl.program
class H:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.{src}], y: pl.Out[pl.Tensor[[16, 64], pl.{target}]]):
        y = pl.store(pl.cast(pl.load(x, [0, 0], [16, 64]), pl.{target}), [0, 0], y)
        return y
"""
    with pytest.raises(TypeCheckError, match=msg) as exc:
        pl.parse(text, filename="/u/h.py")
    assert "h.py:8" in str(exc.value)
