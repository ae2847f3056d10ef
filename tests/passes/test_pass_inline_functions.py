"""InlineFunctions: Inline functions are spliced into their callers with fresh names and
leave the program; the result computes what the call did."""
import shutil

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import CodegenError, ParserError
from pypto.ir.nodes import Call, FunctionType, InCoreScope

from pass_helpers import body_text, calls, fn, ops, roundtrip, run, upto

NAME = "InlineFunctions"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def scale_program():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Inline)
        def scale(self, x: pl.Tensor[[64, 64], pl.FP32],
                  out: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.mul(x, 2.0)
            out[:] = pl.add(t, x)
            return out

        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out = self.scale(a, out)
            return out
    return P


def test_inline_body_is_spliced_with_fresh_names_and_the_function_leaves():
    out = run(scale_program(), NAME)
    assert [f.name for f in out.functions] == ["main"]
    assert body_text(out, "main") == [
        "with pl.at(level=pl.Level.CORE_GROUP):",
        # `out` is rebound in the body: a local initialised from the argument
        "out__inl_v0: pl.Tensor[[64, 64], pl.FP32] = out",
        # `x` is not: the argument itself is used
        "t__inl_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.muls(a, 2.0)",
        "out__inl_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.assemble(out__inl_v0, pl.tensor.add(t__inl_v0, a), [0, 0])",
        "out: pl.Tensor[[64, 64], pl.FP32] = out__inl_v0",
        "return out",
    ]
    roundtrip(out)


def test_copies_fold_away_after_ssa():
    out = upto(scale_program(), "Simplify")
    assert body_text(out, "main") == [
        "with pl.at(level=pl.Level.CORE_GROUP):",
        "t__inl_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.muls(a, 2.0)",
        "out__ssa_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.assemble(out, pl.tensor.add(t__inl_v0, a), [0, 0])",
        "return out__ssa_v0",
    ]


def nested_program():
    """Inline calls inline; a loop carries a value by rebinding inside the inline body;
    the helper is called twice, once nested in an expression."""
    @pl.program
    class N:
        @pl.function(type=pl.FunctionType.Inline)
        def twice(self, t: pl.Tensor[[32, 64], pl.FP32]) -> pl.Tensor[[32, 64], pl.FP32]:
            r = pl.add(t, t)
            return r

        @pl.function(type=pl.FunctionType.Inline)
        def pow2(self, x: pl.Tensor[[32, 64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[32, 64], pl.FP32]:
            acc = self.twice(x)
            for i in pl.range(n):
                acc = self.twice(acc)
            return acc

        @pl.function
        def main(self, a: pl.Tensor[[32, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.sub(self.pow2(a, 2), self.twice(a))
            return out
    return N


def test_nested_inline_calls_and_loop_carry_by_rebinding():
    out = run(nested_program(), NAME)
    assert [f.name for f in out.functions] == ["main"]
    main = fn(out, "main")
    assert not any(c.callee for c in calls(main))
    # two inlined `twice` in pow2, one in main: three adds, each binding its own name
    adds = [line for line in body_text(out, "main") if "pl.tensor.add(" in line]
    assert len(adds) == 3 and len({line.split(":")[0] for line in adds}) == 3
    # the loop body rebinds `acc` (renamed once for the whole inline body), so ConvertToSSA
    # makes it a carried value
    ssa = upto(nested_program(), "ConvertToSSA")
    (loop,) = [s for s in fn(ssa, "main").body[0].body if hasattr(s, "iter_args")]
    assert [a.var.name.split("__")[0] for a in loop.iter_args] == ["acc"]
    roundtrip(out)


def test_scalar_argument_expression_is_evaluated_once_into_a_local():
    out = run(nested_program(), NAME)
    lines = body_text(out, "main")
    assert "n__inl_v0: pl.Scalar[pl.INDEX] = 2" in lines
    assert any(line.startswith("for i__inl_v0 in pl.range(n__inl_v0)") for line in lines)


def test_recursive_inline_functions_are_an_error():
    # the frontend refuses the cycle at the call that closes it ...
    with pytest.raises(ParserError) as e:
        @pl.program
        class R:
            @pl.function(type=pl.FunctionType.Inline)
            def f(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
                return self.g(x)

            @pl.function(type=pl.FunctionType.Inline)
            def g(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
                return self.f(x)

            @pl.function
            def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = self.f(a)
                return out
    assert "recursion is not supported" in e.value.message and "f -> g -> f" in e.value.message

    # ... and the pass still refuses a cycle in IR built without the frontend
    @pl.program
    class R:
        @pl.function(type=pl.FunctionType.Inline)
        def f(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            return self.g(x)

        @pl.function(type=pl.FunctionType.Inline)
        def g(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            return x

        @pl.function
        def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = self.f(a)
            return out

    g = R.get("g")
    g.body[-1].values[0] = Call("@f", [g.params[0].var], {}, g.return_types[0])
    with pytest.raises(CodegenError) as e:
        run(R, NAME)
    assert "calls itself" in e.value.message and "f -> g -> f" in e.value.message


def test_early_return_in_an_inline_function_is_an_error():
    @pl.program
    class E:
        @pl.function(type=pl.FunctionType.Inline)
        def f(self, x: pl.Tensor[[16, 16], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[16, 16], pl.FP32]:
            if n > 0:
                return pl.exp(x)
            return x

        @pl.function
        def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = self.f(a, 1)
            return out

    with pytest.raises(CodegenError) as e:
        run(E, NAME)
    assert "returns before its end" in e.value.message and e.value.span is not None


def test_inline_with_a_region_is_outlined_in_its_caller():
    @pl.program
    class S:
        @pl.function(type=pl.FunctionType.Inline)
        def stage(self, x: pl.Tensor[[16, 64], pl.FP32],
                  y: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x)
            return y

        @pl.function
        def main(self, a: pl.Tensor[[16, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            tmp = pl.create_tensor([16, 64], dtype=pl.FP32)
            tmp = self.stage(a, tmp)
            out = self.stage(tmp, out)
            return out

    inlined = run(S, NAME)
    roundtrip(inlined)
    assert sum(isinstance(s, InCoreScope) for s in fn(inlined, "main").body) == 2
    out = upto(S, "OutlineIncoreScopes")
    assert sorted(f.name for f in out.functions) == ["main", "main_incore_0", "main_incore_1"]
    assert fn(out, "main").func_type is FunctionType.Orchestration
    assert ops(fn(out, "main")) == ["tensor.create", "@main_incore_0", "@main_incore_1"]


@pytest.fixture
def iso(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@needs_gxx
def test_inlined_programs_compute_what_the_calls_did(iso):
    torch = pytest.importorskip("torch")
    from pypto import ir
    a = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    out = torch.zeros(32, 64)
    ir.compile(nested_program(), output_dir=iso / "n", platform="a2a3sim")(torch.from_numpy(a), out)
    np.testing.assert_allclose(out.numpy(), 8 * a - 2 * a, rtol=1e-5, atol=1e-5)
    out = torch.zeros(64, 64)
    b = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    compiled = ir.compile(scale_program(), output_dir=iso / "s", platform="a2a3sim")
    compiled(torch.from_numpy(b), out)
    np.testing.assert_allclose(out.numpy(), 3 * b, rtol=1e-5, atol=1e-5)
    assert (iso / "s" / "passes_dump" / "01_after_InlineFunctions.py").is_file()


@needs_gxx
def test_jit_inline_dependency_is_spliced(iso):
    torch = pytest.importorskip("torch")
    from pypto.runtime import RunConfig
    from jit_inline_program import axpy_entry
    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    compiled = axpy_entry.compile(a, b, out, config=RunConfig(platform="a2a3sim", dump_passes=True))
    compiled(a, b, out)
    torch.testing.assert_close(out, 3.0 * a + b)
    text = (compiled.output_dir / "passes_dump" / "01_after_InlineFunctions.py").read_text()
    assert "FunctionType.Inline" not in text and "t__inl_v0" in text
    # the spliced statement keeps the helper's source line (it reaches the .pto)
    assert "jit_inline_program.py:9:" in text
