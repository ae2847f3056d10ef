"""pl.tile.row_expand_add's forms (issue 11.4): the per-row operand as a column [M, 1] or as
a packed 32-byte block per row [M, 32/bytes] whose lanes repeat across the row, with or
without the hardware's scratch tile, over partial tiles (the vector's valid rows are the
tile's); every dtype the op takes. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

PROG = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{M}, {N}], pl.{DT}], v: pl.Tensor[[{M}, {L}], pl.{DT}],
          o: pl.InOut[pl.Tensor[[{M}, {N}], pl.{DT}]]) -> pl.Tensor[[{M}, {N}], pl.{DT}]:
        t = pl.load(x, [0, 0], [{M}, {N}], valid_shape=[{VR}, {VC}])
        w = pl.load(v, [0, 0], [{M}, {L}], valid_shape=[{VR}, {L}])
        {TMP}
        r = pl.tile.row_expand_add(t, w{TMPARG})
        return pl.store(r, [0, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{M}, {N}], pl.{DT}], v: pl.Tensor[[{M}, {L}], pl.{DT}],
             o: pl.InOut[pl.Tensor[[{M}, {N}], pl.{DT}]]) -> pl.Tensor[[{M}, {N}], pl.{DT}]:
        return self.k(x, v, o)
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "INT16": torch.int16,
         "INT8": torch.int8}


def _src(dtype, m, n, packed, valid, tmp):
    lanes = 32 // TORCH[dtype].itemsize if packed else 1
    tmp_line = f"s = pl.tile.create([{m}, {n}], dtype=pl.{dtype}, target_memory=pl.Mem.Vec)" if tmp else ""
    return PROG.format(M=m, N=n, L=lanes, DT=dtype, VR=valid[0], VC=valid[1], TMP=tmp_line,
                       TMPARG=", tmp=s" if tmp else ""), lanes


@pytest.mark.parametrize("dtype", ["FP32", "FP16", "INT32", "INT16", "INT8"])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("valid, tmp", [((32, 64), False), ((20, 40), True)])
def test_per_row_value_or_repeated_block(dtype, packed, valid, tmp, tmp_path, monkeypatch):
    m, n = 32, 64
    if dtype == "INT8" and n * 1 % 32:
        pytest.skip("rows of 32 bytes")
    src, lanes = _src(dtype, m, n, packed, valid, tmp)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/r.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    torch.manual_seed(4)
    x = torch.randint(-20, 20, (m, n)).to(TORCH[dtype])
    v = torch.randint(-20, 20, (m, lanes)).to(TORCH[dtype])
    o = torch.zeros(m, n, dtype=TORCH[dtype])
    run(x, v, o)
    vr, vc = valid
    want = torch.zeros_like(o)
    rep = v[:vr].repeat(1, -(-n // lanes))[:, :vc] if packed else v[:vr]
    want[:vr, :vc] = x[:vr, :vc] + rep
    assert torch.equal(o, want)


def test_typed_errors():
    src, _ = _src("FP32", 32, 64, True, (32, 64), False)
    with pytest.raises(TypeCheckError, match=r"must have shape \[32, 1\] .* or \[32, 8\] .*got \[32, 4\]"):
        pl.parse(src.replace("[32, 8]", "[32, 4]"), filename="/u/r.py")
    with pytest.raises(TypeCheckError, match=r"valid shape \[16, 8\] must cover x's valid rows 32"):
        pl.parse(src.replace("valid_shape=[32, 8]", "valid_shape=[16, 8]"), filename="/u/r.py")
    with pytest.raises(TypeCheckError, match=r"adds int8, int16, int32, fp16 or fp32 elements, got bfloat16"):
        pl.parse(_src("FP16", 32, 64, False, (32, 64), False)[0].replace("FP16", "BF16"), filename="/u/r.py")


def test_the_scratch_may_be_of_another_shape_and_dtype(tmp_path, monkeypatch):
    """The scratch is the hardware's workspace: any Vec tile (a5 ignores it)."""
    src, lanes = _src("FP32", 32, 64, True, (32, 64), True)
    src = src.replace("s = pl.tile.create([32, 64], dtype=pl.FP32", "s = pl.tile.create([16, 128], dtype=pl.INT16")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    for platform in ("a2a3sim", "a5sim"):
        run = ir.compile(pl.parse(src, filename="/u/r.py"), output_dir=tmp_path / platform, platform=platform)
        x, v = torch.randn(32, 64), torch.randn(32, lanes)
        o = torch.zeros(32, 64)
        run(x, v, o)
        assert torch.equal(o, x + v.repeat(1, 64 // lanes))
