"""A tensor a kernel creates for itself (issue 11.3): pl.create_tensor inside pl.at (or
an InCore function) lives on chip -- a Vec tile ConvertTensorToTileOps makes; writes
into it (pl.assemble) are tile writes, its slices windows of the tile. Against torch."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class L:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, inp: pl.Tensor[[16, 128], pl.FP32], idx: pl.Tensor[[16, 64], pl.INT32],
             a: pl.Tensor[[16, 64], pl.FP32], output: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
             ) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            local = pl.create_tensor([16, 128], dtype=pl.FP32)
            local = pl.assemble(local, inp, [0, 0])
            local = pl.assemble(local, a, [0, 0])          # the left half replaced
            rope = local[:, 64:128]
            left = local[:, 0:64]
            picked = pl.tensor.gather(rope, dim=-1, index=idx)
            output = pl.assemble(output, pl.add(picked, left), [0, 0])
        return output
"""


def test_a_kernel_local_tensor_is_written_and_sliced_on_chip(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/l.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    inp, a = torch.randn(16, 128), torch.randn(16, 64)
    idx = torch.randint(0, 64, (16, 64), dtype=torch.int32)
    out = torch.zeros(16, 64)
    run(inp, idx, a, out)
    assert torch.equal(out, torch.gather(inp[:, 64:], 1, idx.long()) + a)
    orch = next((tmp_path / "out" / "orchestration").glob("*.cpp")).read_text()
    assert "local" not in orch                      # nothing of it in DDR
