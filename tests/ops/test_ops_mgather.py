"""pl.tile.mgather (issue 11.5): rows (coalesce="row", [1, R] INT32 indices) or elements
(coalesce="elem", a tile of positions) of a GM tensor gathered into a fresh Vec tile
(pto.mgather), gather_oob="clamp" / "wrap" / "zero" for indices outside the tensor,
"undefined" an error when the kernel runs. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError
from pypto.runtime.errors import KernelExecutionError

SRC = """
import pypto.language as pl

@pl.program
class G:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, mem: pl.Tensor[[64, 32], pl.{D}], idx: pl.Tensor[{ISHAPE}, pl.INT32],
          flat: pl.Tensor[[256], pl.{D}], eidx: pl.Tensor[[8, 16], pl.INT32],
          out: pl.Out[pl.Tensor[[16, 32], pl.{D}]], eout: pl.Out[pl.Tensor[[8, 16], pl.{D}]]):
        it = pl.load(idx, [0, 0], {ISHAPE}, valid_shape={IVALID})
        out = pl.store(pl.tile.mgather(mem, it, coalesce="row", gather_oob="{OOB}"), [0, 0], out)
        et = pl.load(eidx, [0, 0], [8, 16])
        eout = pl.store(pl.tile.mgather(flat, et, coalesce="elem", gather_oob="{OOB}"), [0, 0], eout)
        return out, eout

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, mem: pl.Tensor[[64, 32], pl.{D}], idx: pl.Tensor[{ISHAPE}, pl.INT32],
             flat: pl.Tensor[[256], pl.{D}], eidx: pl.Tensor[[8, 16], pl.INT32],
             out: pl.Out[pl.Tensor[[16, 32], pl.{D}]], eout: pl.Out[pl.Tensor[[8, 16], pl.{D}]]):
        out, eout = self.k(mem, idx, flat, eidx, out, eout)
        return out, eout
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "INT16": torch.int16}


def _src(d="FP32", oob="clamp", column=False):
    ishape, ivalid = ("[16, 1]", "[12, 1]") if column else ("[1, 16]", "[1, 12]")
    return SRC.format(D=d, OOB=oob, ISHAPE=ishape, IVALID=ivalid)


def _fix(f, n, oob):
    """What an index f reads of n under the out-of-bounds mode (None: zero). The hardware
    reads indices as unsigned 32-bit values: -1 is 4294967295, past the end."""
    u = f & 0xFFFFFFFF
    if u < n:
        return u
    return {"clamp": n - 1, "wrap": u % n, "zero": None}[oob]


def _run(src, platform, d, tmp_path, monkeypatch, seed=0, lo=-6, hi=70, elo=-20, ehi=280, column=False):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/g.py"), output_dir=tmp_path / "out", platform=platform)
    g = torch.Generator().manual_seed(seed)
    mem = (torch.randn(64, 32, generator=g) * 100).to(TORCH[d])
    flat = (torch.randn(256, generator=g) * 100).to(TORCH[d])
    idx = torch.randint(lo, hi, (16, 1) if column else (1, 16), generator=g, dtype=torch.int32)
    eidx = torch.randint(elo, ehi, (8, 16), generator=g, dtype=torch.int32)
    out = torch.full((16, 32), 5).to(TORCH[d])
    eout = torch.zeros(8, 16, dtype=TORCH[d])
    run(mem, idx, flat, eidx, out, eout)
    return mem, flat, idx.flatten(), eidx, out, eout


@pytest.mark.parametrize("oob", ["clamp", "wrap", "zero"])
@pytest.mark.parametrize("d", ["FP32", "FP16", "INT16"])
def test_rows_and_elements_match_torch(oob, d, tmp_path, monkeypatch):
    mem, flat, idx, eidx, out, eout = _run(_src(d, oob), "a2a3sim", d, tmp_path, monkeypatch)
    for r in range(12):                          # the valid indices; the rest is not written
        f = _fix(int(idx[r]), 64, oob)
        assert torch.equal(out[r], mem[f] if f is not None else torch.zeros(32, dtype=mem.dtype)), r
    assert torch.equal(out[12:], torch.full((4, 32), 5).to(mem.dtype))
    for i in range(8):
        for j in range(16):
            f = _fix(int(eidx[i, j]), 256, oob)
            assert eout[i, j] == (flat[f] if f is not None else 0), (i, j)


def test_row_indices_in_a_column_on_a5(tmp_path, monkeypatch):
    mem, _, idx, _, out, _ = _run(_src(column=True), "a5sim", "FP32", tmp_path, monkeypatch, column=True)
    assert torch.equal(out[:12], mem[idx[:12].clamp(0, 63).long()])


def test_row_indices_in_a_column_are_refused_on_a2a3(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(CodegenError, match=r"row mode on a2a3 takes \[1, R\] indices") as exc:
        ir.compile(pl.parse(_src(column=True), filename="/u/g.py"), output_dir=tmp_path / "out",
                   platform="a2a3sim")
    assert "g.py:11" in str(exc.value)


def test_an_undefined_index_outside_the_tensor_fails_when_the_kernel_runs(tmp_path, monkeypatch):
    with pytest.raises(KernelExecutionError, match=r"mgather index 99 .* outside the tensor's 64 rows"):
        _run(_src(oob="undefined").replace("valid_shape=[1, 12]", "valid_shape=[1, 16]"), "a2a3sim",
             "FP32", tmp_path, monkeypatch, lo=99, hi=100, elo=0, ehi=10)


def test_gathering_into_mat_takes_gm_indices():
    """(Into Mat the indices are a GM tensor: tests/ops/test_ops_mgather_mat.py.)"""
    src = _src().replace('coalesce="row", gather_oob="clamp")', 'coalesce="row", target_memory=pl.Mem.Mat)')
    with pytest.raises(TypeCheckError, match=r"mgather expects a Tensor argument, got Tile"):
        pl.parse(src, filename="/u/g.py")
