"""pl.UINT16 / pl.UINT32 / pl.UINT64 (issue 11.6): tensors and tiles of them, bitwise
and arithmetic ops (wrapping like the hardware's unsigned lanes), casts to and from
them, scalars of them, checked against torch on the simulator."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class U:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.{D}], b: pl.Tensor[[16, 64], pl.{D}],
             s: pl.Out[pl.Tensor[[16, 64], pl.{D}]], x: pl.Out[pl.Tensor[[16, 64], pl.{D}]],
             f: pl.Out[pl.Tensor[[16, 64], pl.FP32]], c: pl.Out[pl.Tensor[[16, 64], pl.{D}]]
             ) -> pl.Tensor[[16, 64], pl.{D}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="u"):
            ta = pl.load(a, [0, 0], [16, 64])
            tb = pl.load(b, [0, 0], [16, 64])
            s = pl.store(pl.add(ta, tb), [0, 0], s)
            x = pl.store(pl.xor(pl.shrs(ta, 3), tb), [0, 0], x)
            tf = pl.cast(ta, pl.FP32)
            f = pl.store(tf, [0, 0], f)
            c = pl.store(pl.cast(pl.muls(tf, 0.5), target_type=pl.{D}, mode="floor"), [0, 0], c)
        return s
"""

TORCH = {"UINT16": torch.uint16, "UINT32": torch.uint32, "UINT64": torch.uint64}
BITS = {"UINT16": 16, "UINT32": 32, "UINT64": 64}


@pytest.mark.parametrize("d", ["UINT16", "UINT32", "UINT64"])
def test_unsigned_tiles_match_torch(d, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(SRC.replace("{D}", d), filename="/u/unsigned.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(7)
    top = min(1 << BITS[d], 1 << 24)          # exact in fp32 for the cast checks
    a = torch.randint(0, top, (16, 64), generator=g, dtype=torch.int64)
    b = torch.randint(0, top, (16, 64), generator=g, dtype=torch.int64)
    a[0, 0] = b[0, 0] = top - 1                # a sum that wraps for uint16
    outs = [torch.zeros(16, 64, dtype=TORCH[d]), torch.zeros(16, 64, dtype=TORCH[d]),
            torch.zeros(16, 64), torch.zeros(16, 64, dtype=TORCH[d])]
    run(a.to(TORCH[d]), b.to(TORCH[d]), *outs)
    mask = (1 << BITS[d]) - 1 if BITS[d] < 64 else -1
    got = [o.to(torch.int64) if o.dtype != torch.float32 else o for o in outs]
    assert torch.equal(got[0], (a + b) & mask)
    assert torch.equal(got[1], (a >> 3) ^ b)
    assert torch.equal(got[2], a.to(torch.float32))
    assert torch.equal(got[3], torch.floor(a.to(torch.float32) * 0.5).to(torch.int64))


def test_the_same_width_signed_tensor_carries_the_bits(tmp_path, monkeypatch):
    """uint16 / uint32 parameters take int16 / int32 tensors (torch computes little with
    its unsigned types): the kernel sees the bits as unsigned."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.replace("{D}", "UINT16"), filename="/u/unsigned.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    a = torch.full((16, 64), -1, dtype=torch.int16)        # 0xffff
    b = torch.ones(16, 64, dtype=torch.int16)
    outs = [torch.zeros(16, 64, dtype=torch.int16), torch.zeros(16, 64, dtype=torch.int16),
            torch.zeros(16, 64), torch.zeros(16, 64, dtype=torch.int16)]
    run(a, b, *outs)
    assert torch.equal(outs[0], torch.zeros(16, 64, dtype=torch.int16))    # 0xffff + 1 wraps
    assert torch.equal(outs[2], torch.full((16, 64), 65535.0))             # read as unsigned
    with pytest.raises(TypeError, match="expects dtype uint16, got int32"):
        run(a.int(), b, *outs)


def test_unsigned_names_and_errors():
    assert (pl.UINT16.nbytes, pl.UINT32.nbytes, pl.UINT64.nbytes) == (2, 4, 8)
    assert str(pl.UINT16) == "uint16" and pl.UINT32.mlir == "ui32"
    bad = SRC.replace("{D}", "UINT16").replace("pl.add(ta, tb)", "pl.add(ta, pl.cast(tb, pl.UINT32))")
    with pytest.raises(TypeCheckError, match=r"dtype mismatch uint16 vs uint32"):
        pl.parse(bad, filename="/u/unsigned.py")
