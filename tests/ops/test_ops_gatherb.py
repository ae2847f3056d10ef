"""pl.tile.gatherb (issue 11.5): 32-byte blocks of a tile picked by UINT32 byte offsets
(pto.tgatherb), one offset per 32-byte block of the result, read as the source's dtype
or another (output_dtype); only the valid offsets are gathered. Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError
from pypto.runtime.errors import KernelExecutionError

SRC = """
import pypto.language as pl

@pl.program
class B:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, src: pl.Tensor[[1, {SC}], pl.{D}], off: pl.Tensor[[{R}, {K}], pl.UINT32],
          out: pl.InOut[pl.Tensor[[{R}, {OC}], pl.{O}]]) -> pl.Tensor[[{R}, {OC}], pl.{O}]:
        s = pl.load(src, [0, 0], [1, {SC}])
        o = pl.load(off, [0, 0], [{R}, {K}], valid_shape={VALID})
        out = pl.store(pl.tile.gatherb(s, o, output_dtype=pl.{O}), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[1, {SC}], pl.{D}], off: pl.Tensor[[{R}, {K}], pl.UINT32],
             out: pl.InOut[pl.Tensor[[{R}, {OC}], pl.{O}]]) -> pl.Tensor[[{R}, {OC}], pl.{O}]:
        out = self.k(src, off, out)
        return out
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT8": torch.int8,
         "INT16": torch.int16, "INT32": torch.int32, "UINT8": torch.uint8}


def _case(d, o, r, k, valid, offsets, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    blocks = r * k
    sc = blocks * 32 // TORCH[d].itemsize
    oc = k * 32 // TORCH[o].itemsize
    src = SRC.format(D=d, O=o, R=r, K=k, SC=sc, OC=oc, VALID=list(valid))
    run = ir.compile(pl.parse(src, filename="/u/b.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    source = (torch.arange(sc) % 120).reshape(1, sc).to(TORCH[d])
    off = offsets(blocks).to(torch.int32).reshape(r, k)
    out = torch.zeros(r, oc, dtype=TORCH[o])
    run(source, off.view(torch.uint32), out)
    return source, off, out


@pytest.mark.parametrize("d, o", [("FP32", "FP32"), ("FP16", "FP16"), ("INT8", "INT8"),
                                  ("FP32", "INT32"), ("INT16", "BF16"), ("UINT8", "FP16")])
@pytest.mark.parametrize("r, k, valid", [(2, 8, (2, 8)), (4, 16, (3, 11))])
def test_blocks_by_byte_offset_match_torch(d, o, r, k, valid, tmp_path, monkeypatch):
    reverse = lambda n: (n - 1 - torch.arange(n)) * 32      # noqa: E731
    source, off, out = _case(d, o, r, k, valid, reverse, tmp_path, monkeypatch)
    raw = source.contiguous().view(torch.uint8).reshape(-1)
    want = torch.zeros_like(out)
    wbytes = want.view(torch.uint8).reshape(r, -1)
    for i in range(valid[0]):
        for b in range(valid[1]):
            at = int(off[i, b])
            wbytes[i, b * 32:(b + 1) * 32] = raw[at:at + 32]
    assert torch.equal(out.view(torch.uint8), want.view(torch.uint8))


def test_an_offset_past_the_source_fails_when_the_kernel_runs(tmp_path, monkeypatch):
    past = lambda n: torch.arange(n) * 32 + 32               # noqa: E731  (the last runs off)
    with pytest.raises(KernelExecutionError, match=r"tgatherb offset 512 .* outside the 512-byte source"):
        _case("FP32", "FP32", 2, 8, (2, 8), past, tmp_path, monkeypatch)


def test_offsets_not_a_whole_block_row_are_a_typed_error():
    src = SRC.format(D="FP32", O="FP32", R=2, K=6, SC=96, OC=48, VALID=[2, 6])
    with pytest.raises(TypeCheckError, match=r"a multiple of 8 offsets\), got 6") as exc:
        pl.parse(src, filename="/u/b.py")
    assert "b.py:11" in str(exc.value)
