"""UnrollLoops: pl.unroll loops become one copy of the body per iteration, with the loop
variable a constant."""
import shutil

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import CodegenError
from pypto.ir.nodes import For, ForKind

from pass_helpers import body_text, calls, fn, loops, roundtrip, run, upto

NAME = "UnrollLoops"


def accumulate():
    @pl.program
    class U:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 64])
            for i in pl.unroll(1, 4):
                t = pl.load(x, [i * 16, 0], [16, 64])
                acc = pl.add(acc, t)
            y = pl.store(acc, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return U


def test_body_is_copied_per_iteration_with_the_loop_variable_constant():
    out = run(accumulate(), NAME)
    k = fn(out, "k")
    assert not loops(k)
    assert body_text(out, "k") == [
        "acc: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64])",
        "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [1 * 16, 0], [16, 64])",
        "acc: pl.Tile[[16, 64], pl.FP32] = pl.tile.add(acc, t)",
        "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [2 * 16, 0], [16, 64])",
        "acc: pl.Tile[[16, 64], pl.FP32] = pl.tile.add(acc, t)",
        "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [3 * 16, 0], [16, 64])",
        "acc: pl.Tile[[16, 64], pl.FP32] = pl.tile.add(acc, t)",
        "y: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(acc, [0, 0], y)",
        "return y",
    ]
    # the copies are new statements, not shared ones
    stmts = k.body
    assert len({id(s) for s in stmts}) == len(stmts)
    roundtrip(out)


def test_ssa_chains_the_copies_and_simplify_folds_the_offsets():
    out = upto(accumulate(), "Simplify")
    k = fn(out, "k")
    adds = [s for s in k.body if getattr(getattr(s, "value", None), "op", "") == "tile.add"]
    assert len(adds) == 3
    assert adds[1].value.args[0] is adds[0].var and adds[2].value.args[0] is adds[1].var
    offsets = [c.args[1].items[0].value for c in calls(k, "tile.load")]
    assert offsets == [0, 16, 32, 48]


def test_nested_unroll_and_a_range_loop_inside():
    @pl.program
    class N:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.unroll(2):
                for j in pl.unroll(0, 64, 32):
                    for r in pl.range(2):
                        t = pl.load(x, [i * 32 + r * 16, j], [16, 32])
                        y = pl.store(pl.exp(t), [i * 32 + r * 16, j], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = self.k(x, y)
            return y

    roundtrip(run(N, NAME))        # pre-SSA: the copies' range loops bind their own variables
    out = upto(N, "Simplify")
    k = fn(out, "k")
    ranges = [s for s in k.body if isinstance(s, For)]
    assert len(ranges) == 4 and all(lp.kind is ForKind.Sequential for lp in ranges)
    # (i, j) = (0, 0), (0, 32), (1, 0), (1, 32): the column offset is folded to a constant
    cols = [c.args[1].items[1].value for c in calls(k, "tile.load")]
    assert cols == [0, 32, 0, 32]
    roundtrip(out)


def test_empty_and_descending_unrolls():
    @pl.program
    class D:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.unroll(4, 4):
                y = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], y)
            for i in pl.unroll(3, 0, -1):
                y = pl.store(pl.load(x, [i * 16, 0], [16, 64]), [i * 16, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = self.k(x, y)
            return y

    k = fn(upto(D, "Simplify"), "k")
    assert [c.args[1].items[0].value for c in calls(k, "tile.store")] == [48, 32, 16]


def test_unrolled_orchestration_loop_submits_each_call():
    @pl.program
    class O:
        @pl.function(type=pl.FunctionType.InCore)
        def inc(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.inc(x, y)
            for i in pl.unroll(3):
                y = self.inc(y, y)
            return y

    roundtrip(run(O, NAME))
    out = upto(O, "Simplify")
    main = fn(out, "main")
    inc = calls(main)
    assert [c.callee for c in inc] == ["inc"] * 4 and not loops(main)
    for prev, nxt in zip(inc, inc[1:]):       # each call reads the previous call's result
        (s,) = [s for s in main.body if getattr(s, "value", None) is prev]
        assert nxt.args[0] is s.var


def test_too_many_copies_is_an_error():
    @pl.program
    class T:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.unroll(5000):
                y = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = self.k(x, y)
            return y

    with pytest.raises(CodegenError) as e:
        run(T, NAME)
    assert "5000 copies" in e.value.message and "pl.range" in e.value.hint


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_unrolled_kernel_computes_the_sum(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    y = torch.zeros(16, 64)
    compiled = ir.compile(accumulate(), output_dir=tmp_path / "out", platform="a2a3sim")
    compiled(torch.from_numpy(x), y)
    np.testing.assert_allclose(y.numpy(), x.reshape(4, 16, 64).sum(0), rtol=1e-5, atol=1e-5)
    assert (tmp_path / "out" / "passes_dump" / "02_after_UnrollLoops.py").is_file()
