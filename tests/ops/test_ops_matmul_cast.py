"""A matmul result cast for the next matmul (issue 11.2): the cube's write-back to Mat
converts it (pto.tmov Acc -> Mat, rounding to nearest even): a2/a3 have no Acc -> Vec path
to cast it on, and a cast on the vector unit would make a cube kernel mixed. (a @ b) @ e
against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError

TILE = """
import pypto.language as pl

@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.{DT}], b: pl.Tensor[[64, 128], pl.{DT}],
          e: pl.Tensor[[128, 32], pl.{DT}], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.{DT}{MODE})
        te = pl.load(e, [0, 0], [128, 32], target_memory=pl.Mem.Mat)
        return pl.store(pl.matmul(cb, te, out_dtype=pl.FP32), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.{DT}], b: pl.Tensor[[64, 128], pl.{DT}],
             e: pl.Tensor[[128, 32], pl.{DT}], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        return self.k(a, b, e, out)
"""
TENSOR = """
import pypto.language as pl

@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[64, 64], pl.{DT}], b: pl.Tensor[[64, 128], pl.{DT}],
             e: pl.Tensor[[128, 32], pl.{DT}], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            out = pl.assemble(out, pl.matmul(pl.cast(c, pl.{DT}{MODE}), e, out_dtype=pl.FP32), [0, 0])
        return out
"""
TORCH = {"BF16": torch.bfloat16, "FP16": torch.float16}


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("level", ["tile", "tensor"])
@pytest.mark.parametrize("dtype", ["BF16", "FP16"])
def test_chained_matmul_through_a_cast(platform, level, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = (TILE if level == "tile" else TENSOR).format(DT=dtype, MODE=", mode='rint'" if level == "tile" else "")
    run = ir.compile(pl.parse(src, filename="/u/chain.py"), output_dir=tmp_path / "out", platform=platform)
    torch.manual_seed(5)
    a, b, e = (torch.randn(*s).to(TORCH[dtype]) for s in ((64, 64), (64, 128), (128, 32)))
    out = torch.zeros(64, 32)
    run(a, b, e, out)
    mid = (a.float() @ b.float()).to(TORCH[dtype]).float()       # rounded once, to nearest even
    assert torch.allclose(out, mid @ e.float(), rtol=1e-5, atol=1e-4)
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    moved = [l for l in pto.splitlines() if "pto.tmov" in l and "loc=acc" in l.split("outs(")[0]]
    # converted on the cube's write-back, straight into Mat
    assert any("loc=mat" in l.split("outs(")[1] and "f32" in l.split("outs(")[0] for l in moved)
    assert "pto.tcvt" not in pto


def test_another_rounding_mode_is_refused_at_the_users_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(TILE.format(DT="BF16", MODE=", mode='floor'"), filename="/u/chain.py")
    with pytest.raises(CodegenError, match=r"cube's write-back to Mat, which rounds to nearest even") as e:
        ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    assert e.value.span.line == 12

CAST_STORED = """
import pypto.language as pl

@pl.program
class Out:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[64, 64], pl.BF16], b: pl.Tensor[[64, 32], pl.BF16],
             out: pl.Out[pl.Tensor[[64, 32], pl.BF16]]) -> pl.Tensor[[64, 32], pl.BF16]:
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[0:64, 0:32] = pl.cast(acc, target_type=pl.BF16, mode="rint")
        return out
"""


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_matmul_result_cast_and_stored_converts_on_the_way_out(platform, tmp_path, monkeypatch):
    """The cast of a result that is only stored folds into the store: the cube's write-back
    to GM converts (pto.tstore from Acc into bf16), so the kernel needs no Mat hop (which
    has no path to GM) and no vector work: a cube kernel alone."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(CAST_STORED, filename="/u/cs.py"), output_dir=tmp_path / "out", platform=platform)
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(64, 32).bfloat16()
    out = torch.zeros(64, 32, dtype=torch.bfloat16)
    run(a, b, out)
    assert torch.equal(out, (a.float() @ b.float()).bfloat16())
    pto = "".join(p.read_text() for p in (tmp_path / "out" / "ptoas").glob("*.pto"))
    assert "loc=acc" in pto and "partition_tensor_view<64x32xbf16>" in pto
    assert "pto.tcvt" not in pto and "loc=vec" not in pto
