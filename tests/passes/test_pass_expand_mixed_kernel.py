"""ExpandMixedKernel: an InCore kernel becomes AIV (vector) or AIC (cube); mixed is an error."""
import pytest

import pypto.language as pl
from pypto.backend import BackendType
from pypto.errors import CodegenError
from pypto.ir.nodes import FunctionType, Level, Role
from pypto.passes.base import PassOptions

from pass_helpers import before, fn, roundtrip, run

NAME = "ExpandMixedKernel"


def expand(prog, opts=None):
    opts = opts or PassOptions()
    return run(before(prog, NAME, opts), NAME, opts=opts)


def _vector():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
            return out
    return P


def _cube():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.matmul(a, b, out_dtype=pl.FP32)
            return out
    return P


def _mixed():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(ta, ta)
            y = pl.store(pl.exp(c), [0, 0], y)
            return y
    return P


def test_vector_only_kernel_becomes_aiv():
    out = expand(_vector())
    k = fn(out, "main_incore_0")
    assert (k.func_type, k.level, k.role) == (FunctionType.AIV, Level.AIV, Role.SubWorker)
    assert fn(out, "main").func_type is FunctionType.Orchestration
    assert "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)" in out.as_python()
    roundtrip(out)


def test_cube_only_kernel_becomes_aic():
    out = expand(_cube())
    k = fn(out, "main_incore_0")
    assert (k.func_type, k.level, k.role) == (FunctionType.AIC, Level.AIC, Role.SubWorker)
    roundtrip(out)


def test_body_is_kept_as_it_is():
    src = before(_cube(), NAME)
    out = run(src, NAME)
    strip = lambda p: [l for l in p.as_python().splitlines() if "@pl.function" not in l]
    assert strip(out) == strip(src)


def test_mixed_kernel_is_an_error_with_a_hint():
    # on Ascend950 the Acc -> Vec move exists, so the kernel reaches this pass
    with pytest.raises(CodegenError) as e:
        expand(_mixed(), PassOptions(backend_type=BackendType.Ascend950))
    msg = e.value.message
    assert "'k'" in msg and "cube" in msg and "vector" in msg and "line" in msg
    assert "pl.create_tensor" in e.value.hint
    assert e.value.span is not None


def test_non_kernels_are_untouched():
    out = expand(_vector())
    src = before(_vector(), NAME)
    assert out.as_python().split("def main(")[1] == src.as_python().split("def main(")[1]
