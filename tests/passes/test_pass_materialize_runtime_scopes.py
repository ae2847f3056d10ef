"""MaterializeRuntimeScopes: AUTO runtime scopes around an orchestration's body and each
for/if body, unless the function opts out."""
import shutil

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.nodes import For, If, Return, RuntimeScope, Yield

from pass_helpers import body_text, fn, roundtrip, run, upto

NAME = "MaterializeRuntimeScopes"


def loops_and_ifs(auto_scope=True):
    @pl.program
    class L:
        @pl.function(type=pl.FunctionType.InCore)
        def add1(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration, auto_scope=auto_scope)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.create_tensor([16, 64], dtype=pl.FP32)
            t = self.add1(x, t)
            for i in pl.range(3):
                t = self.add1(t, t)
            if n > 2:
                y = self.add1(t, y)
            else:
                y = self.add1(x, y)
            return y
    return L


def test_body_loops_and_branches_get_auto_scopes():
    out = upto(loops_and_ifs(), NAME)
    main = fn(out, "main")
    scope, ret = main.body
    assert isinstance(scope, RuntimeScope) and not scope.manual and isinstance(ret, Return)
    loop = next(s for s in scope.body if isinstance(s, For))
    inner, y = loop.body                                   # the yield stays outside the scope
    assert isinstance(inner, RuntimeScope) and isinstance(y, Yield)
    branch = next(s for s in scope.body if isinstance(s, If))
    for b in (branch.then_body, branch.else_body):
        assert isinstance(b[0], RuntimeScope) and isinstance(b[-1], Yield) and len(b) == 2
    assert main.attrs["auto_scope"] is False               # scopes are explicit now
    assert "auto_scope=False" in out.as_python()
    # kernels never get runtime scopes
    assert not any(isinstance(s, RuntimeScope) for s in fn(out, "add1").body)
    roundtrip(out)


def test_running_it_again_changes_nothing():
    once = upto(loops_and_ifs(), NAME)
    assert run(once, NAME).as_python() == once.as_python()


def test_auto_scope_false_keeps_the_users_scopes():
    @pl.program
    class M:
        @pl.function(type=pl.FunctionType.InCore)
        def add1(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.create_tensor([16, 64], dtype=pl.FP32)
            with pl.scope():
                t = self.add1(x, t)
            for i in pl.range(2):
                t = self.add1(t, t)
            y = self.add1(t, y)
            return y

    src = upto(M, "DeriveCallDirections")
    out = run(src, NAME)
    assert out.as_python() == src.as_python()
    assert [type(s).__name__ for s in fn(out, "main").body] == ["Assign", "RuntimeScope", "For", "Assign", "Return"]


def test_nothing_is_wrapped_inside_a_manual_scope():
    @pl.program
    class M:
        @pl.function(type=pl.FunctionType.InCore)
        def add1(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = pl.store(pl.adds(pl.load(x, [0, 0], [16, 64]), 1.0), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.scope(mode=pl.ScopeMode.MANUAL):
                for i in pl.range(2):
                    y = self.add1(x, y)
            return y

    out = upto(M, NAME)
    (auto, _ret) = fn(out, "main").body
    assert isinstance(auto, RuntimeScope) and not auto.manual
    (manual,) = auto.body
    assert manual.manual
    (loop,) = manual.body
    assert not any(isinstance(s, RuntimeScope) for s in loop.body)
    assert body_text(out, "main")[:3] == ["with pl.scope():", "with pl.scope(mode=pl.ScopeMode.MANUAL):",
                                          "for i, (y__iter_v0,) in pl.range(2, init_values=(y,)):"]
    roundtrip(out)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_scoped_orchestration_runs(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    x = np.random.default_rng(5).standard_normal((16, 64)).astype(np.float32)
    compiled = ir.compile(loops_and_ifs(), output_dir=tmp_path / "out", platform="a2a3sim")
    for n, want in ((3, x + 5), (1, x + 1)):
        y = torch.zeros(16, 64)
        compiled(torch.from_numpy(x), n, y)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
    cpp = next((tmp_path / "out" / "orchestration").glob("*.cpp")).read_text()
    assert cpp.count("api->scope_begin(api->ctx, 0);") == 4      # body, loop body, two branches
