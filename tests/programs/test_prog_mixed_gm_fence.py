"""A Group whose cube half stores a tensor that its vector half then loads (PyPTO's
issue #1564 shape: a matmul into a scratch tensor, scattered row by row): the halves run
at once, so ExpandMixedKernel fences the hand-off: the stored tile crosses to the vector
core after the store (a push), and the vector half pops it before its loads."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir
from pypto.ir.nodes import Eval, For
from pypto.passes.expand_mixed_kernel import halves

B, K, H, CACHE = 16, 256, 128, 4


@pl.program
class MatmulScatter:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B, K], pl.FP32], w: pl.Tensor[[K, H], pl.FP32],
             cache: pl.InOut[pl.Tensor[[B * CACHE, H], pl.FP32]]) -> pl.Tensor[[B * CACHE, H], pl.FP32]:
        kv = pl.create_tensor([B, H], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fused"):
            kv[:, :] = pl.matmul(x, w)
            for b in pl.range(B):
                cache[b * CACHE:b * CACHE + 1, :] = pl.mul(kv[b:b + 1, :], 2.0)
        return cache


def _lowered():
    """The program after ExpandMixedKernel, the passes run as the build graph runs them."""
    from pypto.passes import pipeline, run_pass
    from pypto.passes.base import PassOptions
    opts, prog, done = PassOptions(), MatmulScatter, []
    for p in pipeline(opts):
        prog = run_pass(p, prog, opts, True, list(done))
        done.append(p.name)
        if p.name == "ExpandMixedKernel":
            return prog
    raise AssertionError("no ExpandMixedKernel in the pipeline")


def test_the_store_is_followed_by_a_push_and_the_loads_preceded_by_a_pop():
    group = next(f for f in _lowered().functions if f.func_type is pl.FunctionType.Group)
    aic, aiv = halves(group)
    top = [s.expr.op if isinstance(s, Eval) else getattr(getattr(s, "value", None), "op", "")
           for s in aic.body]
    assert top.index("tile.store") < top.index("tile.tpush")
    loop = next(i for i, s in enumerate(aiv.body) if isinstance(s, For)
                and any(getattr(getattr(x, "value", None), "op", "") == "tile.load" for x in s.body))
    pops = [i for i, s in enumerate(aiv.body) if getattr(getattr(s, "value", None), "op", "") == "tile.tpop"]
    assert pops and pops[0] < loop            # the vector half waits before its loads


def test_every_row_reads_the_stored_product(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(MatmulScatter, output_dir=tmp_path / "o", platform="a2a3sim")
    x, w = torch.randn(B, K), torch.randn(K, H)
    for _ in range(5):                         # a race would show on some run
        cache = torch.full((B * CACHE, H), -1.0)
        run(x, w, cache)
        want = torch.full((B * CACHE, H), -1.0)
        want[::CACHE] = 2.0 * (x @ w)
        torch.testing.assert_close(cache, want, rtol=1e-4, atol=1e-4)
