"""The compare form of gather (issue 11.5): dst, cdst = pl.gather(x, kvalue=k, cmp_mode=...,
out_cols=K) and pl.tile.gather_compare(src, kvalue, tmp, ...): per row, the column indices
(+ offset) of the elements comparing true with the scalar kvalue, the first K of them
(int32 [rows, K], the slots past the matches 0), and how many compared true ([1, rows],
int32 or uint32). One pto.tgather writes both results. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

TENSOR = """
import pypto.language as pl

@pl.program
class GC:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[{R}, {C}], pl.{DT}], kv: pl.Tensor[[1], pl.{DT}],
             o_dst: pl.Out[pl.Tensor[[{R}, {K}], pl.INT32]],
             o_cnt: pl.Out[pl.Tensor[[1, {R}], pl.{CNT}]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gc"):
            k: pl.Scalar[pl.{DT}] = pl.tensor.read(kv, [0])
            dst, cnt = pl.tensor.gather(src, kvalue=k, cmp_mode={MODE}, out_cols={K}{KW})
            o_dst = pl.assemble(o_dst, dst, [0, 0])
            o_cnt = pl.assemble(o_cnt, cnt, [0, 0])
        return o_dst, o_cnt
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "INT16": torch.int16,
         "UINT32": torch.uint32}
COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
           "ge": torch.ge}


def _compile(src, tmp_path, monkeypatch, name="/u/gc.py"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename=name), output_dir=tmp_path / "out", platform="a2a3sim")


def expected(src, k, mode, cols, offset=0):
    hit = COMPARE[mode](src, torch.tensor(k, dtype=src.dtype))
    dst = torch.zeros(src.shape[0], cols, dtype=torch.int32)
    for r in range(src.shape[0]):
        where = hit[r].nonzero().flatten()[:cols].to(torch.int32) + offset
        dst[r, :len(where)] = where
    return dst, hit.sum(dim=1, dtype=torch.int64).reshape(1, -1)


def _data(rows, cols, dtype):
    """Small integers (ties with the threshold happen), some rows with more matches than K,
    some with fewer."""
    return torch.randint(-4, 5, (rows, cols)).to(TORCH[dtype])


@pytest.mark.parametrize("mode", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_each_compare_mode(mode, tmp_path, monkeypatch):
    run = _compile(TENSOR.format(R=8, C=32, DT="FP32", CNT="INT32", MODE=repr(mode), K=8, KW=""),
                   tmp_path, monkeypatch)
    torch.manual_seed(1)
    src = _data(8, 32, "FP32")
    dst, cnt = torch.zeros(8, 8, dtype=torch.int32), torch.zeros(1, 8, dtype=torch.int32)
    run(src, torch.tensor([1.0]), dst, cnt)
    want_dst, want_cnt = expected(src, 1.0, mode, 8)
    assert torch.equal(dst, want_dst) and torch.equal(cnt.long(), want_cnt)
    assert f"{{cmpMode = #pto<cmp {mode}>, offset = 0 : i32}}" in \
        (tmp_path / "out" / "ptoas" / "gc.pto").read_text()


@pytest.mark.parametrize("dtype, shape, k, kw", [
    ("INT32", (16, 64), 2, ""),
    ("FP16", (16, 64), -1.5, ", offset=100"),
    ("INT16", (8, 48), 0, ", count_dtype=pl.UINT32"),
    ("FP32", (16, 40), 3.0, ", offset=-3, count_dtype=pl.INT32"),
])
def test_every_source_dtype_offset_and_count_dtype(dtype, shape, k, kw, tmp_path, monkeypatch):
    (rows, cols), cnt_dt = shape, ("UINT32" if "UINT32" in kw else "INT32")
    run = _compile(TENSOR.format(R=rows, C=cols, DT=dtype, CNT=cnt_dt, MODE=1 if dtype == "INT16" else "'gt'",
                                 K=16, KW=kw), tmp_path, monkeypatch)
    mode = "ne" if dtype == "INT16" else "gt"     # (cmp_mode=1 is "ne", the reference's numbering)
    torch.manual_seed(2)
    src = _data(rows, cols, dtype)
    if dtype == "FP16":
        src = src / 2               # halves: exact in fp16, -1.5 among them
    offset = int(kw.split("offset=")[1].split(",")[0]) if "offset=" in kw else 0
    dst = torch.zeros(rows, 16, dtype=torch.int32)
    cnt = torch.zeros(1, rows, dtype=TORCH[cnt_dt])
    run(src, torch.tensor([k], dtype=TORCH[dtype]), dst, cnt)
    want_dst, want_cnt = expected(src, k, mode, 16, offset)
    assert torch.equal(dst, want_dst)
    assert torch.equal(cnt.to(torch.int64), want_cnt)


TILE = """
import pypto.language as pl

@pl.program
class GT:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 32], pl.FP32], o_dst: pl.Out[pl.Tensor[[8, 8], pl.INT32]],
             o_cnt: pl.Out[pl.Tensor[[1, 8], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gt"):
            t = pl.load(x, [0, 0], [8, 32])
            tmp = pl.tile.create([8, 32], dtype=pl.UINT8, target_memory=pl.Mem.Vec)
            d, c = pl.tile.gather_compare(t, 0.5, tmp, cmp_mode="lt", offset=1, out_cols=8)
            o_dst = pl.store(d, [0, 0], o_dst)
            o_cnt = pl.store(c, [0, 0], o_cnt)
        return o_dst, o_cnt
"""


def test_tile_form_with_a_literal_threshold(tmp_path, monkeypatch):
    run = _compile(TILE, tmp_path, monkeypatch, "/u/gt.py")
    x = torch.randn(8, 32)
    dst, cnt = torch.zeros(8, 8, dtype=torch.int32), torch.zeros(1, 8, dtype=torch.int32)
    run(x, dst, cnt)
    want_dst, want_cnt = expected(x, 0.5, "lt", 8, 1)
    assert torch.equal(dst, want_dst) and torch.equal(cnt.long(), want_cnt)


def _parse_error(src, match, exc=TypeCheckError):
    with pytest.raises(exc, match=match) as e:
        pl.parse(src, filename="/u/gc.py")
    assert e.value.span is not None and e.value.span.line > 0
    return e.value


def test_typed_errors():
    base = dict(R=8, C=32, DT="FP32", CNT="INT32", MODE="'eq'", K=8, KW="")
    _parse_error(TENSOR.format(**{**base, "MODE": "'between'"}), r"cmp_mode is one of 'eq', 'ne'")
    _parse_error(TENSOR.format(**{**base, "MODE": "9"}), r"cmp_mode is one of .*got 9")
    _parse_error(TENSOR.format(**base).replace("out_cols=8", "out_cols=0"), r"out_cols= .* positive integer constant, got 0")
    _parse_error(TENSOR.format(**{**base, "KW": ", count_dtype=pl.INT16"}),
                 r"count_dtype is pl.INT32 or pl.UINT32")
    _parse_error(TENSOR.format(**base).replace("k: pl.Scalar[pl.FP32] = pl.tensor.read(kv, [0])",
                                               "k: pl.Scalar[pl.INT32] = 1"),
                 r"kvalue is a fp32 scalar like the source, got int32")
    _parse_error(TENSOR.format(**{**base, "DT": "BF16"}),
                 r"picks fp16, fp32, int16 or int32 elements, got bfloat16")
    _parse_error(TENSOR.format(**base).replace("dst, cnt = ", "dst = "),
                 r"assemble expects a Tensor or Tile argument, got 2 values \(unpack them")
    _parse_error(TILE.replace("t, 0.5, tmp,", "t, 0.5,"), r"operand 'tmp' is missing|takes 3")


def test_ptoas_checks_the_compare_form(tmp_path, monkeypatch):
    """Our ptoas reads the reference's spelling of the compare form and refuses a wrong
    threshold type, an unknown mode or a missing offset, at the op's source line."""
    from pypto.ptoas import PtoasError, compile_pto
    _compile(TILE, tmp_path, monkeypatch, "/u/gt.py")
    text = (tmp_path / "out" / "ptoas" / "gt.pto").read_text()
    line = next(l for l in text.splitlines() if "pto.tgather" in l)
    assert "outs(" in line and "{cmpMode = #pto<cmp lt>, offset = 1 : i32}" in line
    level = "level3" if "addr = " in text else "level2"
    compile_pto(text, arch="a2a3", level=level)
    cases = [(line.replace("#pto<cmp lt>", "#pto<cmp within>"), "cmpMode is #pto<cmp X>"),
             (line.replace(", offset = 1 : i32", ""), r"carries \{offset = N : i32\}"),
             (line.replace(", f32, !pto.tile_buf", ", i32, !pto.tile_buf"), "declared as i32 here but defined as f32")]
    for new, msg in cases:
        assert new != line
        with pytest.raises(PtoasError, match=msg) as e:
            compile_pto(text.replace(line, new), arch="a2a3", level=level)
        assert "gt.py:" in str(e.value)
