"""Simplify: constant folding, scalar constant propagation, dead code removal."""
import pypto.language as pl
from pypto.ir.nodes import Const

from pass_helpers import body_text, calls, fn, roundtrip, run, text


def simplify(prog):
    return run(prog, "ConvertToSSA", "Simplify")


def _prog():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            k = 2 * 8
            j = k + n
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [64, 64])
                unused = pl.exp(pl.relu(ta))
                tb = pl.load(a, [k, 0], [16, 64])
                out[0:16, :] = pl.exp(tb)
            return out
    return P


def test_constants_fold_and_propagate():
    out = simplify(_prog())
    (load,) = calls(fn(out, "main"), "tile.load")
    assert isinstance(load.args[1].items[0], Const) and load.args[1].items[0].value == 16
    assert not any(line.startswith(("k:", "j:")) for line in body_text(out, "main"))


def test_dead_chains_inside_a_region_are_removed_to_the_end():
    # `unused` is dead; then the relu it read, then the load of `ta` behind that
    out = simplify(_prog())
    assert [c.op for c in calls(fn(out, "main"))] == ["tile.load", "tensor.assemble"]
    roundtrip(out)


def test_writes_and_kernel_calls_are_kept():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64])
            pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ignored = self.k(a, out)
            return out

    out = simplify(P)
    assert [c.op for c in calls(fn(out, "k"))] == ["tile.load", "tile.store"]
    assert [c.op for c in calls(fn(out, "main"))] == ["@k"]


def test_idempotent():
    once = simplify(_prog())
    assert text(run(once, "Simplify")) == text(once)


def test_an_unused_statement_leaves_the_same_program_as_without_it():
    # the build graph's early cutoff relies on this
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                tb = pl.load(a, [16, 0], [16, 64])
                out[0:16, :] = pl.exp(tb)
            return out

    strip = lambda p: [l.split("  # @")[0] for l in text(p).splitlines()[4:]]
    assert strip(simplify(_prog())) == strip(simplify(P))
