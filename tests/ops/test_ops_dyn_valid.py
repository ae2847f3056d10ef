"""Valid shapes known only when the kernel runs (issue 11.1): an extent read from a
tensor (pl.read), picked by an if/else (an scf.if with a scalar result), flows into
pl.load(..., valid_shape=[...]); element-wise ops and reductions keep it, stores
write it, fillpad fills around it. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


@pytest.mark.parametrize("is_last, vlen", [(1, 40), (0, 64)])
def test_if_else_picks_the_valid_extent(is_last, vlen, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from dyn_valid_jit import pick_valid
    data, out = torch.randn(64, 64), torch.zeros(64, 64)
    pick_valid(data, torch.tensor([is_last, 40, 64]), out, config=CFG)
    want = torch.full((64, 64), float("-inf"))
    want[:, :vlen] = 2 * data[:, :vlen]
    assert torch.equal(out, want)


@pytest.mark.parametrize("rows", [32, 7])
def test_a_run_time_row_count_reaches_the_reduction_and_the_store(rows, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from dyn_valid_jit import ragged_rows
    data, sums = torch.randn(32, 64), torch.full((32, 1), 5.0)
    ragged_rows(data, torch.tensor([rows], dtype=torch.int32), sums, config=CFG)
    assert torch.allclose(sums[:rows], data[:rows].exp().sum(dim=1, keepdim=True), rtol=1e-5)
    assert (sums[rows:] == 5.0).all()


@pytest.mark.parametrize("n_blocks, last", [(4, 20), (2, 64)])
def test_ragged_tail_loop_with_scalar_casts(n_blocks, last, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from dyn_valid_jit import ragged_tail
    buf, out = torch.randn(64, 64), torch.full((64, 64), 3.0)
    ragged_tail(buf, torch.tensor([n_blocks, last, 64]), out, config=CFG)
    want = torch.full((64, 64), 3.0)
    for i in range(n_blocks):
        v = last if i == n_blocks - 1 else 64
        want[i * 16:(i + 1) * 16] = 0.0
        want[i * 16:(i + 1) * 16, :v] = buf[i * 16:(i + 1) * 16, :v]
    assert torch.equal(out, want)
