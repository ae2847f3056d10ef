"""fillpad_expand, fillpad_inplace, the expdif expand forms and ci index ramps
(issue 11), on the simulator against torch."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class F:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[48, 64], pl.FP32], v: pl.Tensor[[48, 1], pl.FP32],
             w: pl.Tensor[[1, 64], pl.FP32], big: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             inpl: pl.Out[pl.Tensor[[64, 64], pl.FP32]], er: pl.Out[pl.Tensor[[48, 64], pl.FP32]],
             ec: pl.Out[pl.Tensor[[48, 64], pl.FP32]], up: pl.Out[pl.Tensor[[8, 32], pl.INT32]],
             down: pl.Out[pl.Tensor[[8, 32], pl.INT32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fx"):
            t = pl.load(x, [0, 0], [48, 64])
            big = pl.store(pl.tile.fillpad_expand(t, [64, 64], pad_value=pl.PadValue.min), [0, 0], big)
            p = pl.load(x, [0, 0], [64, 64], valid_shape=[48, 64])
            p = pl.tile.fillpad_inplace(p, pad_value=pl.PadValue.max)
            inpl = pl.store(p, [0, 0], inpl)
            tv = pl.load(v, [0, 0], [48, 1])
            tw = pl.load(w, [0, 0], [1, 64])
            er = pl.store(pl.row_expand_expdif(t, tv), [0, 0], er)
            ec = pl.store(pl.tile.col_expand_expdif(t, tw), [0, 0], ec)
            up = pl.store(pl.tile.ci(10, [8, 32], dtype=pl.INT32), [0, 0], up)
            down = pl.store(pl.tile.ci(255, [8, 32], dtype=pl.INT32, descending=True), [0, 0], down)
        return big
"""


def test_fillpad_expand_inplace_expdif_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/fx.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(9)
    x, v, w = torch.randn(48, 64, generator=g), torch.randn(48, 1, generator=g), torch.randn(1, 64, generator=g)
    big, inpl = torch.zeros(64, 64), torch.zeros(64, 64)
    er, ec = torch.zeros(48, 64), torch.zeros(48, 64)
    up, down = torch.zeros(8, 32, dtype=torch.int32), torch.zeros(8, 32, dtype=torch.int32)
    run(x, v, w, big, inpl, er, ec, up, down)
    want = torch.full((64, 64), float("-inf"))
    want[:48] = x
    assert torch.equal(big, want)
    want = torch.full((64, 64), float("inf"))
    want[:48] = x
    assert torch.equal(inpl, want)
    assert torch.allclose(er, torch.exp(x - v), rtol=1e-6)
    assert torch.allclose(ec, torch.exp(x - w), rtol=1e-6)
    assert torch.equal(up, torch.arange(10, 10 + 256, dtype=torch.int32).reshape(8, 32))
    assert torch.equal(down, torch.arange(255, -1, -1, dtype=torch.int32).reshape(8, 32))
