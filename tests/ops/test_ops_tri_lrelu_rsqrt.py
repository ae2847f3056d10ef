"""pl.tile.tri, pl.lrelu, and rsqrt/recip with their scratch tile and precision
keyword (issue 11.4), on the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], lo: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
             up: pl.Out[pl.Tensor[[32, 64], pl.INT32]], part: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
             lr: pl.Out[pl.Tensor[[32, 64], pl.FP32]], rs: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
             rc: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tri"):
            lo = pl.store(pl.tile.tri(2, [32, 64], valid_shape=None, dtype=pl.FP32), [0, 0], lo)
            up = pl.store(pl.tri(-3, [32, 64], dtype=pl.INT32, upper=True), [0, 0], up)
            part = pl.store(pl.tile.tri(0, [32, 64], valid_shape=[16, 40], dtype=pl.FP32), [0, 0], part)
            t = pl.load(x, [0, 0], [32, 64])
            lr = pl.store(pl.lrelu(t, 0.1), [0, 0], lr)
            a = pl.abs(t)
            tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            rs = pl.store(pl.tile.rsqrt(a, tmp=tmp), [0, 0], rs)
            rc = pl.store(pl.recip(a, high_precision=True), [0, 0], rc)
        return lo
"""


def test_tri_lrelu_rsqrt_recip_match_torch(tmp_path, monkeypatch):
    """(valid_shape=None, as parametrised programs pass it: the whole tile.)"""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/tri.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(2)) + 0.01
    lo, lr, rs, rc = (torch.zeros(32, 64) for _ in range(4))
    up, part = torch.zeros(32, 64, dtype=torch.int32), torch.full((32, 64), 9.0)
    run(x, lo, up, part, lr, rs, rc)
    ones = torch.ones(32, 64)
    assert torch.equal(lo, torch.tril(ones, diagonal=2))
    assert torch.equal(up, torch.triu(ones, diagonal=-3).to(torch.int32))
    want = torch.full((32, 64), 9.0)
    want[:16, :40] = torch.tril(torch.ones(16, 40))
    assert torch.equal(part, want)                     # only the valid region is stored
    assert torch.allclose(lr, torch.nn.functional.leaky_relu(x, 0.1))
    assert torch.allclose(rs, x.abs().rsqrt(), rtol=1e-6)
    assert torch.allclose(rc, x.abs().reciprocal(), rtol=1e-6)


@pytest.mark.parametrize("line, msg", [
    ("lo = pl.store(pl.tile.tri(1.5, [32, 64], dtype=pl.FP32), [0, 0], lo)", r"the diagonal is an integer"),
    ("lo = pl.store(pl.tile.rsqrt(pl.load(x, [0, 0], [32, 64]), tmp=pl.create_tile([16, 64], dtype=pl.FP32, "
     "target_memory=pl.Mem.Vec)), [0, 0], lo)", r"the scratch tile is"),
])
def test_misuse(line, msg):
    src = SRC.replace("lo = pl.store(pl.tile.tri(2, [32, 64], valid_shape=None, dtype=pl.FP32), [0, 0], lo)",
                      line)
    with pytest.raises(TypeCheckError, match=msg):
        pl.parse(src, filename="/u/tri.py")
