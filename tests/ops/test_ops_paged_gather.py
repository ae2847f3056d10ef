"""Rows gathered from GM straight into on-chip memory (issue 11.5): pl.paged_gather (the
physical row of each logical index through a page table), pl.create_l1 + pl.gather_row
(the kernel computes the rows itself; a run-time valid extent moves only part of the
window). Into Mat (read back through an identity matmul, as a matmul operand is meant to
be consumed) or Vec. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, NotBuiltError, TypeCheckError

B, PB, POOL, H, N = 16, 16, 256, 128, 16

PAGED = """
import pypto.language as pl

@pl.program
class PG:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[256, {W}], pl.{DT}], idx: pl.Tensor[{ISHAPE}, pl.INT32],
             bt: pl.Tensor[[16], pl.INT32], eye: pl.Tensor[[16, 16], pl.{DT}],
             output: pl.Out[pl.Tensor[[16, {S}], pl.{OUT}]]) -> pl.Tensor[[16, {S}], pl.{OUT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="pg"):
            g = pl.paged_gather(src, idx, bt, block_size=16, size={S}, max_indices=16,
                                space=pl.MemorySpace.{SPACE}{KW})
            {USE}
            output = pl.assemble(output, r, [0, 0])
        return output
"""
TORCH = {"FP16": torch.float16, "FP32": torch.float32, "BF16": torch.bfloat16}


def _compile(src, tmp_path, monkeypatch, name="/u/pg.py"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename=name), output_dir=tmp_path / "out", platform="a2a3sim")


def golden(src, idx, table, block, size, col_off=0):
    out = torch.empty(idx.numel(), size, dtype=src.dtype)
    for i, li in enumerate(idx.flatten().tolist()):
        out[i] = src[table[li // block] * block + li % block, col_off:col_off + size]
    return out


def _inputs(width, dtype, n=16):
    torch.manual_seed(0)
    src = torch.randn(256, width).to(TORCH[dtype])
    table = torch.randperm(16).to(torch.int32)                 # no page is where it is logically
    idx = torch.randint(0, 256, (n,), dtype=torch.int32)
    return src, idx, table


@pytest.mark.parametrize("space, dtype, width, size, kw, ishape", [
    ("Vec", "FP16", 128, 128, "", "[16]"),
    ("Vec", "FP32", 96, 64, ", col_off=32", "[1, 16]"),
    ("Mat", "FP16", 128, 128, ", is_b_matrix=True", "[16]"),
    ("Mat", "BF16", 160, 64, ", col_off=64", "[1, 16]"),
])
def test_paged_gather_is_the_page_table_lookup(space, dtype, width, size, kw, ishape, tmp_path, monkeypatch):
    mat = space == "Mat"
    use = "r = pl.matmul(eye, g, out_dtype=pl.FP32)" if mat else "r = g"
    run = _compile(PAGED.format(W=width, DT=dtype, S=size, SPACE=space, KW=kw, ISHAPE=ishape,
                                OUT="FP32" if mat else dtype, USE=use), tmp_path, monkeypatch)
    src, idx, table = _inputs(width, dtype)
    off = int(kw.split("col_off=")[1]) if "col_off" in kw else 0
    out = torch.zeros(16, size, dtype=torch.float32 if mat else TORCH[dtype])
    run(src, idx.reshape(eval(ishape)), table, torch.eye(16, dtype=TORCH[dtype]), out)
    want = golden(src, idx, table, 16, size, off)
    assert torch.equal(out, want.float() if mat else want)
    pto = (tmp_path / "out" / "ptoas" / "pg.pto").read_text()
    assert "pto.subview" in pto and "pto.load_scalar" in pto
    if mat:   # a whole fractal of the boxed L1 tile, one row of it valid
        assert f"sizes [16, {size}] valid [%c1_index, %c{size}_index]" in pto


ROWS = """
import pypto.language as pl

@pl.program
class GR:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[256, 64], pl.FP16], n: pl.Tensor[[1], pl.INT32],
             eye: pl.Tensor[[64, 64], pl.FP16],
             output: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gr"):
            r = pl.cast(pl.read(n, [0]), pl.INDEX)
            kv = pl.create_l1([64, 64], pl.FP16)
            {BODY}
            result = pl.matmul(eye, kv, out_dtype=pl.FP32)
            output = pl.assemble(output, result, [0, 0])
        return output
"""
SENTINEL = """kv = pl.gather_row(kv, src, [0, 0], [128, 0], [64, 64])
            kv = pl.gather_row(kv, src, [0, 0], [0, 0], [64, 64], valid_shape=[r, 64])"""
TWO_RUNS = """kv = pl.gather_row(kv, src, [0, 0], [0, 0], [64, 64], valid_shape=[r, 64])
            kv = pl.gather_row(kv, src, [r, 0], [128, 0], [64, 64], valid_shape=[64 - r, 64])"""
LOOP = """for i in pl.range(64):
                kv = pl.gather_row(kv, src, [i, 0], [255 - 2 * i, 0], [1, 64])"""


@pytest.mark.parametrize("rows", [1, 31, 64])
def test_gather_row_moves_only_its_run_time_extent(rows, tmp_path, monkeypatch):
    run = _compile(ROWS.format(BODY=SENTINEL), tmp_path, monkeypatch, "/u/gr.py")
    src = torch.randn(256, 64).to(torch.float16)
    out = torch.zeros(64, 64)
    run(src, torch.tensor([rows], dtype=torch.int32), torch.eye(64, dtype=torch.float16), out)
    want = src[128:192].clone()
    want[:rows] = src[:rows]
    assert torch.equal(out, want.float())


@pytest.mark.parametrize("split", [0, 17, 64])
def test_two_runs_split_at_a_run_time_row(split, tmp_path, monkeypatch):
    run = _compile(ROWS.format(BODY=TWO_RUNS), tmp_path, monkeypatch, "/u/gr.py")
    src = torch.randn(256, 64).to(torch.float16)
    out = torch.zeros(64, 64)
    run(src, torch.tensor([split], dtype=torch.int32), torch.eye(64, dtype=torch.float16), out)
    want = torch.cat([src[:split], src[128:128 + 64 - split]])
    assert torch.equal(out, want.float())


def test_rows_the_kernel_computes_in_a_loop(tmp_path, monkeypatch):
    run = _compile(ROWS.format(BODY=LOOP), tmp_path, monkeypatch, "/u/gr.py")
    src = torch.randn(256, 64).to(torch.float16)
    out = torch.zeros(64, 64)
    run(src, torch.tensor([0], dtype=torch.int32), torch.eye(64, dtype=torch.float16), out)
    assert torch.equal(out, src[255 - 2 * torch.arange(64)].float())


def test_typed_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    base = dict(W=128, DT="FP16", S=128, SPACE="Vec", KW="", ISHAPE="[16]", OUT="FP16", USE="r = g")
    with pytest.raises(TypeCheckError, match=r"16 indices exceed max_indices=8"):
        pl.parse(PAGED.format(**base).replace("max_indices=16", "max_indices=8"), filename="/u/pg.py")
    with pytest.raises(TypeCheckError, match=r"space= is pl.Mem.Mat .* or pl.Mem.Vec"):
        pl.parse(PAGED.format(**{**base, "SPACE": "Left"}), filename="/u/pg.py")
    with pytest.raises(TypeCheckError, match=r"block_size= is a positive integer constant, got 0"):
        pl.parse(PAGED.format(**base).replace("block_size=16", "block_size=0"), filename="/u/pg.py")
    with pytest.raises(TypeCheckError, match=r"columns \[64, 192\) lie outside the pool's 128"):
        pl.parse(PAGED.format(**{**base, "KW": ", col_off=64"}), filename="/u/pg.py")
    with pytest.raises(NotBuiltError, match=r"is_trans= is not supported by this pypto yet"):
        pl.parse(PAGED.format(**{**base, "SPACE": "Mat", "KW": ", is_trans=True"}), filename="/u/pg.py")
    with pytest.raises(TypeCheckError, match=r"accumulator holds fp32, the source fp16"):
        pl.parse(ROWS.format(BODY=SENTINEL).replace("pl.create_l1([64, 64], pl.FP16)",
                                                    "pl.create_l1([64, 64], pl.FP32)"), filename="/u/gr.py")
    with pytest.raises(TypeCheckError, match=r"a \[64, 128\] window does not fit the \[64, 64\] accumulator"):
        pl.parse(ROWS.format(BODY=LOOP).replace("[1, 64])", "[64, 128])"), filename="/u/gr.py")
    with pytest.raises(CodegenError, match=r"'eye', which is not an on-chip accumulator of this kernel"):
        ir.compile(pl.parse(ROWS.format(BODY="kv = pl.gather_row(eye, src, [0, 0], [0, 0], [1, 64])"),
                            filename="/u/gr.py"), output_dir=tmp_path / "o1", platform="a2a3sim")
