"""Gathers (issue 11.5): pl.gather(x, dim=, index=) with torch.gather's meaning on 2-D
tensors (a tile.gather at flat positions computed from a ramp), pl.tile.gather at row-major
positions, and the mask form (pl.tile.MaskPattern: the kept columns of each row, optionally
read as another dtype of the same width). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError

INDEX = """
import pypto.language as pl

@pl.program
class G:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{R}, {C}], pl.{DT}], idx: pl.Tensor[[{IR}, {IC}], pl.INT32],
             o: pl.Out[pl.Tensor[[{IR}, {IC}], pl.{DT}]]) -> pl.Tensor[[{IR}, {IC}], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="g"):
            o = pl.assemble(o, pl.gather(x, dim={DIM}, index=idx), [0, 0])
        return o
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "INT16": torch.int16}


def _compile(src, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename="/u/g.py"), output_dir=tmp_path / "out", platform="a2a3sim")


@pytest.mark.parametrize("dim, shape, ishape", [(-1, (4, 32), (4, 16)), (1, (8, 32), (2, 16)),
                                                (0, (16, 16), (4, 16)), (-2, (8, 16), (32, 16))])
@pytest.mark.parametrize("dtype", ["FP32", "INT32", "FP16"])
def test_gather_along_a_dim_is_torch_gather(dim, shape, ishape, dtype, tmp_path, monkeypatch):
    (r, c), (ir_, ic) = shape, ishape
    run = _compile(INDEX.format(R=r, C=c, IR=ir_, IC=ic, DIM=dim, DT=dtype), tmp_path, monkeypatch)
    x = (torch.randn(r, c) * 100).to(TORCH[dtype])
    idx = torch.randint(0, shape[dim % 2], ishape, dtype=torch.int32)
    o = torch.zeros(ishape, dtype=TORCH[dtype])
    run(x, idx, o)
    assert torch.equal(o, torch.gather(x, dim, idx.long()))


MASK = """
import pypto.language as pl

@pl.program
class M:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 32], pl.FP32],
             o: pl.Out[pl.Tensor[[8, {N}], pl.{OUT}]]) -> pl.Tensor[[8, {N}], pl.{OUT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="m"):
            t = pl.load(x, [0, 0], [8, 32])
            o = pl.store(pl.tile.gather_mask(t, pl.tile.MaskPattern.{P}{KW}), [0, 0], o)
        return o
"""


@pytest.mark.parametrize("pattern, stride, first", [("P0101", 2, 0), ("P1010", 2, 1), ("P0001", 4, 0),
                                                    ("P0010", 4, 1), ("P0100", 4, 2), ("P1000", 4, 3),
                                                    ("P1111", 1, 0)])
def test_mask_patterns_keep_their_columns(pattern, stride, first, tmp_path, monkeypatch):
    n = 32 // stride
    run = _compile(MASK.format(N=n, OUT="FP32", P=pattern, KW=""), tmp_path, monkeypatch)
    x, o = torch.randn(8, 32), torch.zeros(8, n)
    run(x, o)
    assert torch.equal(o, x[:, first::stride])
    assert f"#pto.mask_pattern<{pattern}>" in (tmp_path / "out" / "ptoas" / "m.pto").read_text()


def test_the_kept_bits_read_as_another_dtype(tmp_path, monkeypatch):
    run = _compile(MASK.format(N=16, OUT="UINT32", P="P1010", KW=", output_dtype=pl.UINT32"),
                   tmp_path, monkeypatch)
    x, o = torch.randn(8, 32), torch.zeros(8, 16, dtype=torch.uint32)
    run(x, o)
    assert torch.equal(o, x[:, 1::2].contiguous().view(torch.uint32))


TILE = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32], idx: pl.Tensor[[4, 8], pl.INT32],
             o: pl.Out[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="t"):
            tx = pl.load(x, [0, 0], [8, 16])
            ti = pl.load(idx, [0, 0], [4, 8])
            tmp = pl.create_tile([4, 8], dtype=pl.INT32)
            o = pl.store(pl.tile.gather(tx, ti, tmp), [0, 0], o)
        return o
"""


def test_tile_gather_picks_row_major_positions(tmp_path, monkeypatch):
    run = _compile(TILE, tmp_path, monkeypatch)
    x = torch.randn(8, 16)
    idx = torch.randint(0, 128, (4, 8), dtype=torch.int32)
    o = torch.zeros(4, 8)
    run(x, idx, o)
    assert torch.equal(o, x.flatten()[idx.long()])


def test_an_index_outside_the_source_stops_the_kernel(tmp_path, monkeypatch):
    run = _compile(TILE, tmp_path, monkeypatch)
    idx = torch.zeros(4, 8, dtype=torch.int32)
    idx[2, 3] = 128
    with pytest.raises(Exception, match=r"gather index 128 at \[2, 3\] is outside the 8x16 source"):
        run(torch.randn(8, 16), idx, torch.zeros(4, 8))


def test_typed_errors():
    with pytest.raises(TypeCheckError, match=r"dim 2 is out of range for a rank-2 tensor"):
        pl.parse(INDEX.format(R=4, C=16, IR=4, IC=8, DIM=2, DT="FP32"), filename="/u/g.py")
    with pytest.raises(TypeCheckError, match=r"picks fp16, fp32, int16 or int32 elements, got int8"):
        pl.parse(INDEX.format(R=4, C=32, IR=4, IC=8, DIM=1, DT="INT8"), filename="/u/g.py")
    with pytest.raises(TypeCheckError, match=r"keeps one column of every 4, but the source has 30"):
        pl.parse(MASK.format(N=8, OUT="FP32", P="P0001", KW="").replace("[8, 32]", "[8, 30]"),
                 filename="/u/m.py")


ND = """
import pypto.language as pl

@pl.program
class G:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, inp: pl.Tensor[{S}, pl.FP32], idx: pl.Tensor[{I}, pl.INT32],
             out: pl.Out[pl.Tensor[{I}, pl.FP32]]) -> pl.Tensor[{I}, pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            g = pl.tensor.gather(inp, dim={D}, index=idx)
            out = pl.assemble(out, g, [0, 0, 0])
        return out
"""


@pytest.mark.parametrize("s, i, d", [([2, 3, 16], [2, 3, 8], -1), ([2, 8, 8], [2, 3, 8], 1),
                                     ([4, 3, 8], [2, 3, 8], 0), ([4, 3, 8], [2, 3, 8], -3)])
def test_gather_along_any_dim_of_a_rank3_tensor(s, i, d, tmp_path, monkeypatch):
    """torch.gather's rule: out[a, b, c] = inp at idx[a, b, c] along dim d (flat positions
    from the other coordinates and the strides)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(ND.format(S=s, I=i, D=d), filename="/u/g.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    g = torch.Generator().manual_seed(len(s) + d)
    inp = torch.randn(*s, generator=g)
    idx = torch.randint(0, s[d], tuple(i), generator=g, dtype=torch.int32)
    out = torch.zeros(*i)
    run(inp, idx, out)
    assert torch.equal(out, torch.gather(inp, d, idx.long()))
