"""AutoDeriveTaskDependencies: compile-time edges between kernel calls of an
orchestration, from their argument directions, in MANUAL scopes (and AUTO ones when
asked)."""
import pypto.language as pl
from pypto.ir.nodes import RuntimeScope
from pypto.passes.base import PassOptions

from pass_helpers import PASSES, calls, fn, roundtrip, run, upto

NAME = "AutoDeriveTaskDependencies"
AUTO = PassOptions(analyze_auto_scopes_for_deps=True)


def chain(manual=True):
    mode = pl.ScopeMode.MANUAL if manual else pl.ScopeMode.AUTO

    @pl.program
    class C:
        @pl.function(type=pl.FunctionType.InCore)
        def inc(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.InCore)
        def acc(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.add(pl.load(x, [0, 0], [16, 64]), pl.load(y, [0, 0], [16, 64]))
            y = pl.store(t, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
        def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.create_tensor([16, 64], dtype=pl.FP32)
            u = pl.create_tensor([16, 64], dtype=pl.FP32)
            with pl.scope(mode=mode):
                t1 = self.inc(a, t)         # 0: writes t
                u1 = self.inc(b, u)         # 1: writes u (independent of 0)
                t2 = self.acc(u1, t1)       # 2: reads u (RAW on 1), reads+writes t (RAW/WAW on 0)
                a2 = self.inc(t2, a)        # 3: reads t (RAW on 2), writes a (WAR on 0)
                y = self.inc(a2, y)         # 4: reads a (RAW on 3)
            return y
    return C


def deps(prog, fname="main"):
    return [(c.callee, c.attrs.get("deps"), c.attrs.get("loop_deps"))
            for c in calls(fn(prog, fname)) if c.callee]


def test_raw_war_waw_edges_in_a_manual_scope():
    out = upto(chain(), NAME)
    assert deps(out) == [("inc", [], None), ("inc", [], None), ("acc", [0, 1], None),
                         ("inc", [0, 2], None), ("inc", [3], None)]
    roundtrip(out)
    assert '"deps": [0, 2]' in out.as_python()


def test_auto_scopes_are_left_to_the_runtime_unless_asked():
    src = upto(chain(manual=False), "DeriveCallDirections")
    assert deps(run(src, NAME)) == [(n, None, None) for n in ("inc", "inc", "acc", "inc", "inc")]
    asked = run(src, NAME, opts=AUTO)
    assert [d for _, d, _ in deps(asked)] == [[], [], [0, 1], [0, 2], [3]]


def test_function_scope_counts_as_auto_and_tasks_number_per_scope():
    @pl.program
    class S:
        @pl.function(type=pl.FunctionType.InCore)
        def inc(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
        def main(self, a: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.create_tensor([16, 64], dtype=pl.FP32)
            t = self.inc(a, t)                          # function scope, task 0
            with pl.scope(mode=pl.ScopeMode.MANUAL):
                u = pl.create_tensor([16, 64], dtype=pl.FP32)
                u = self.inc(t, u)                      # manual scope, task 0
                y = self.inc(u, y)                      # manual scope, task 1
            y = self.inc(t, y)                          # function scope, task 1
            return y

    src = upto(S, "DeriveCallDirections")
    assert deps(run(src, NAME)) == [("inc", None, None), ("inc", [], None), ("inc", [0], None),
                                    ("inc", None, None)]
    # in the function scope, task 1 reads the t task 0 wrote; the manual scope's tasks are
    # numbered on their own and not edges of the function scope
    assert [d for _, d, _ in deps(run(src, NAME, opts=AUTO))] == [[], [], [0], [0]]


def test_loop_carried_edges_and_exclusive_branches():
    @pl.program
    class L:
        @pl.function(type=pl.FunctionType.InCore)
        def inc(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.create_tensor([16, 64], dtype=pl.FP32)
            with pl.scope(mode=pl.ScopeMode.MANUAL):
                t = self.inc(a, t)                      # 0
                for i in pl.range(4):
                    if n > 1:
                        y = self.inc(t, y)              # 1: RAW on 0; previous iteration: WAW on 1, 2
                    else:
                        y = self.inc(a, y)              # 2: not on 1 (other branch); carried WAW on 1, 2, WAR on 3
                    t = self.inc(y, t)                  # 3: RAW on 1, 2; WAR on ... 0 wrote t: WAW on 0
            return y

    out = upto(L, NAME)
    assert deps(out) == [("inc", [], None), ("inc", [0], [1, 2, 3]), ("inc", [], [1, 2, 3]),
                         ("inc", [0, 1, 2], [3])]
    # the loop carries y and t: the aliases through iter_args and if results are followed
    roundtrip(out)


def test_calls_of_an_unscoped_orchestration_get_no_attrs_by_default():
    import pipeline_programs as pp
    out = upto(pp.two_kernels(), NAME)
    assert all("deps" not in c.attrs for c in calls(fn(out, "main")) if c.callee)
    asked = run(upto(pp.two_kernels(), "DeriveCallDirections"), NAME, opts=AUTO)
    assert [d for _, d, _ in deps(asked)] == [[], [0]]
    assert PASSES[NAME].name == NAME and not isinstance(fn(asked, "main").body[0], RuntimeScope)


def test_the_option_is_in_the_pass_key():
    assert PASSES[NAME].reads == ("analyze_auto_scopes_for_deps",)
