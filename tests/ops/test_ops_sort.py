"""The sort family (issue 11.5): pl.sort32 sorts each 32-element block of a row
descending into (value, index) pairs (two fp32 columns, the index's bits in the second);
pl.mrgsort merges sorted runs -- of one tile four by four (block_len, known when
compiling or at run time), or 2-4 lists into one. Tile and tensor level, on the
simulator against torch.sort."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, ParserError, TypeCheckError


def _unique(n, seed):
    """Distinct values (the order of ties is the hardware's business, not the test's)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randperm(n, generator=g).float() - n / 2) / 8


def _pairs(t):
    """(values, indices) of a [R, 2C] pair tile."""
    return t[:, 0::2], t.contiguous().view(torch.int32)[:, 1::2]


def _u32(t):
    return t.contiguous().view(torch.uint32)


BLOCKS = """
import pypto.language as pl

@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, src: pl.Tensor[[{R}, {C}], pl.FP32], idx: pl.Tensor[[{R}, {C}], pl.UINT32],
          out: pl.Out[pl.Tensor[[{R}, {C2}], pl.FP32]]) -> pl.Tensor[[{R}, {C2}], pl.FP32]:
        s = pl.load(src, [0, 0], [{R}, {C}])
        i = pl.load(idx, [0, 0], [{R}, {C}])
        out = pl.store(pl.tile.sort32(s, i), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[{R}, {C}], pl.FP32], idx: pl.Tensor[[{R}, {C}], pl.UINT32],
             out: pl.Out[pl.Tensor[[{R}, {C2}], pl.FP32]]) -> pl.Tensor[[{R}, {C2}], pl.FP32]:
        out = self.k(src, idx, out)
        return out
"""


@pytest.mark.parametrize("r, c", [(8, 32), (4, 96)])
def test_sort32_sorts_each_block_with_its_indices(r, c, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(BLOCKS.format(R=r, C=c, C2=2 * c), filename="/u/s.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    src = _unique(r * c, 1).reshape(r, c)
    idx = torch.arange(r * c, dtype=torch.int32).reshape(r, c) + 1000      # any 32-bit tags
    out = torch.zeros(r, 2 * c)
    run(src, _u32(idx), out)
    vals, tags = _pairs(out)
    blocks = src.reshape(r, c // 32, 32)
    want, order = torch.sort(blocks, dim=-1, descending=True)
    assert torch.equal(vals, want.reshape(r, c))
    assert torch.equal(tags, torch.gather(idx.reshape(r, c // 32, 32), -1, order).reshape(r, c))


WHOLE = """
import pypto.language as pl

@pl.program
class Whole:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, src: pl.Tensor[[1, 2048], pl.FP32], idx: pl.Tensor[[1, 2048], pl.UINT32],
          vals: pl.Out[pl.Tensor[[1, 2048], pl.FP32]], ids: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]]):
        t = pl.tile.sort32(pl.load(src, [0, 0], [1, 2048]), pl.load(idx, [0, 0], [1, 2048]))
        # runs of 32 pairs (64 columns) merged four by four: 64 -> 256 -> 1024 -> 4096 columns
        for r, (acc,) in pl.range(3, init_values=(t,)):
            merged = pl.tile.mrgsort(acc, block_len=1 << (6 + r * 2))
            out = pl.yield_(merged)
        vals = pl.store(pl.tile.gather_mask(out, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0], vals)
        ids = pl.store(pl.tile.gather_mask(out, mask_pattern=pl.tile.MaskPattern.P1010,
                                           output_dtype=pl.UINT32), [0, 0], ids)
        return vals, ids

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[1, 2048], pl.FP32], idx: pl.Tensor[[1, 2048], pl.UINT32],
             vals: pl.Out[pl.Tensor[[1, 2048], pl.FP32]], ids: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]]):
        vals, ids = self.k(src, idx, vals, ids)
        return vals, ids
"""


def test_merging_runs_with_a_run_length_computed_in_the_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(WHOLE, filename="/u/w.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    src = _unique(2048, 2).reshape(1, 2048)
    vals, ids = torch.zeros(1, 2048), torch.zeros(1, 2048, dtype=torch.int32)
    run(src, _u32(torch.arange(2048, dtype=torch.int32).reshape(1, 2048)), vals, _u32(ids))
    want, order = torch.sort(src[0], descending=True)
    assert torch.equal(vals[0], want) and torch.equal(ids[0], order.int())
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    assert "arith.shli" in pto and "pto.tmrgsort" in pto        # the run length, in the kernel


TENSOR = """
import pypto.language as pl

@pl.program
class Halves:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[1, 1024], pl.FP32], idx: pl.Tensor[[1, 1024], pl.UINT32],
             vals: pl.Out[pl.Tensor[[1, 1024], pl.FP32]], ids: pl.Out[pl.Tensor[[1, 1024], pl.UINT32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="halves"):
            lo = pl.mrgsort(pl.mrgsort(pl.sort32(src[:, 0:512], idx[:, 0:512]), block_len=64), block_len=256)
            hi = pl.mrgsort(pl.mrgsort(pl.sort32(src[:, 512:], idx[:, 512:]), block_len=64), block_len=256)
            merged = pl.mrgsort(lo, hi)
            vals = pl.assemble(vals, pl.gather(merged, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0])
            ids = pl.assemble(ids, pl.gather(merged, mask_pattern=pl.tile.MaskPattern.P1010,
                                             output_dtype=pl.UINT32), [0, 0])
        return vals, ids
"""


def test_tensor_level_sort_and_two_way_merge(tmp_path, monkeypatch):
    """Each half sorted by sort32 and two format-1 merges, then the halves merged (the
    merge's scratch tile is made by ConvertTensorToTileOps)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(TENSOR, filename="/u/t.py")
    assert "tensor.mrgsort_2way" in prog.as_python() or "mrgsort_2way" in prog.as_python()
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    src = _unique(1024, 3).reshape(1, 1024)
    vals, ids = torch.zeros(1, 1024), torch.zeros(1, 1024, dtype=torch.int32)
    run(src, _u32(torch.arange(1024, dtype=torch.int32).reshape(1, 1024)), vals, _u32(ids))
    want, order = torch.sort(src[0], descending=True)
    assert torch.equal(vals[0], want) and torch.equal(ids[0], order.int())


WAYS = """
import pypto.language as pl

@pl.program
class Ways:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, src: pl.Tensor[[2, {C}], pl.FP32], idx: pl.Tensor[[2, {C}], pl.UINT32],
          out: pl.Out[pl.Tensor[[2, {C2}], pl.FP32]]) -> pl.Tensor[[2, {C2}], pl.FP32]:
        {LISTS}
        tmp = pl.create_tile([2, {C2}], dtype=pl.FP32)
        out = pl.store(pl.tile.mrgsort({ARGS}, tmp=tmp, exhausted={EX}), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[2, {C}], pl.FP32], idx: pl.Tensor[[2, {C}], pl.UINT32],
             out: pl.Out[pl.Tensor[[2, {C2}], pl.FP32]]) -> pl.Tensor[[2, {C2}], pl.FP32]:
        out = self.k(src, idx, out)
        return out
"""


def _ways_src(n, exhausted=False):
    lists = "\n        ".join(
        f"l{i} = pl.tile.sort32(pl.load(src, [0, {32 * i}], [2, 32]), pl.load(idx, [0, {32 * i}], [2, 32]))"
        for i in range(n))
    return WAYS.format(C=32 * n, C2=64 * n, LISTS=lists, ARGS=", ".join(f"l{i}" for i in range(n)),
                       EX=exhausted)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_merging_two_to_four_lists(n, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(_ways_src(n), filename="/u/m.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    src = _unique(64 * n, n).reshape(2, 32 * n)
    idx = torch.arange(64 * n, dtype=torch.int32).reshape(2, 32 * n)
    out = torch.zeros(2, 64 * n)
    run(src, _u32(idx), out)
    vals, tags = _pairs(out)
    want, order = torch.sort(src, dim=1, descending=True)
    assert torch.equal(vals, want) and torch.equal(tags, torch.gather(idx, 1, order))


def test_an_exhausted_merge_stops_at_the_first_list_to_run_out(tmp_path, monkeypatch):
    """(What follows in the row is not written by the merge.)"""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(_ways_src(2, exhausted=True), filename="/u/m.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    src = torch.cat([torch.arange(32, 0, -1).float(), torch.arange(32, 0, -1).float() - 100])
    src = src.reshape(1, 64).expand(2, 64).contiguous()       # list 0 wins every comparison
    out = torch.zeros(2, 128)
    run(src, _u32(torch.arange(128, dtype=torch.int32).reshape(2, 64)), out)
    vals, tags = _pairs(out)
    idx = torch.arange(128, dtype=torch.int32).reshape(2, 64)
    assert torch.equal(vals[:, :32], src[:, :32])             # list 0 ...
    assert torch.equal(tags[:, :32], idx[:, :32])
    assert not torch.equal(vals[:, 32:], src[:, 32:])         # ... and list 1 is not merged after it


@pytest.mark.parametrize("src, err, msg", [
    (BLOCKS.format(R=8, C=48, C2=96), TypeCheckError, r"blocks of 32, got 48 columns"),
    (BLOCKS.format(R=8, C=32, C2=64).replace("pl.FP32], idx", "pl.FP16], idx").replace(
        "pl.Tensor[[8, 32], pl.FP32]", "pl.Tensor[[8, 32], pl.FP16]"), NotBuiltError, r"fp16 sorting"),
    (WHOLE.replace("block_len=1 << (6 + r * 2)", "block_len=100"), TypeCheckError,
     r"block_len is a positive multiple of 64"),
    (WHOLE.replace("block_len=1 << (6 + r * 2)", "block_len=pl.cast(r, pl.FP32) << pl.cast(r, pl.FP32)"),
     ParserError, r"operator `<<` works on integer scalars, not fp32"),
])
def test_misuse_is_a_typed_error(src, err, msg):
    with pytest.raises(err, match=msg):
        pl.parse(src, filename="/u/bad.py")
