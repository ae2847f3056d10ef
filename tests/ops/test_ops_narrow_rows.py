"""Vec tiles whose rows are narrower than a 32-byte block (an int8 [2, 16] tile, an fp32
[16, 4] one) are allocated with their rows padded to whole blocks; ops read and write only
the tile's shape, so results are those of the unpadded tensors."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class Narrow:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2, 16], pl.INT8], y: pl.Tensor[[2, 16], pl.INT8], f: pl.Tensor[[16, 4], pl.FP32],
          o: pl.Out[pl.Tensor[[2, 16], pl.INT8]], r: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
        s = pl.add(pl.load(x, [0, 0], [2, 16]), pl.load(y, [0, 0], [2, 16]))
        o = pl.store(s, [0, 0], o)
        t = pl.load(f, [0, 0], [16, 4])
        r = pl.store(pl.row_sum(pl.muls(t, 2.0), pl.create_tile([16, 4], dtype=pl.FP32)), [0, 0], r)
        return o, r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[2, 16], pl.INT8], y: pl.Tensor[[2, 16], pl.INT8], f: pl.Tensor[[16, 4], pl.FP32],
             o: pl.Out[pl.Tensor[[2, 16], pl.INT8]], r: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
        o, r = self.k(x, y, f, o, r)
        return o, r
"""


def test_tiles_with_narrow_rows_are_padded_and_compute_their_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/n.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x, y = (torch.randint(-60, 60, (2, 16), dtype=torch.int8) for _ in range(2))
    f = torch.randn(16, 4)
    o, r = torch.zeros(2, 16, dtype=torch.int8), torch.zeros(16, 1)
    run(x, y, f, o, r)
    assert torch.equal(o, x + y)
    assert torch.allclose(r, (f * 2).sum(1, keepdim=True), atol=1e-5)
    assert "rows=2, cols=32, v_row=2, v_col=16" in (tmp_path / "out" / "ptoas" / "k.pto").read_text()
