"""ExpandMixedKernel: an InCore kernel becomes AIV (vector) or AIC (cube); mixed, a Group
whose halves (`halves`) split its work by core and meet at a pipe."""
import pytest

import pypto.language as pl
from pypto.backend import BackendType
from pypto.errors import CodegenError
from pypto.ir.nodes import Assign, Call, Eval, FunctionType, Level, Role
from pypto.ir.visit import walk
from pypto.passes.expand_mixed_kernel import halves
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


@pytest.mark.parametrize("backend", [BackendType.Ascend910B, BackendType.Ascend950])
def test_mixed_kernel_becomes_a_group(backend):
    out = expand(_mixed(), PassOptions(backend_type=backend))
    k = fn(out, "k")
    assert (k.func_type, k.level, k.role) == (FunctionType.Group, Level.CORE_GROUP, Role.SubWorker)
    roundtrip(out)


def _ops(f):
    return [(s.value.op if isinstance(s, Assign) else s.expr.op) for s in walk(f.body)
            if isinstance(s, (Assign, Eval)) and isinstance(getattr(s, "value", getattr(s, "expr", None)), Call)]


def test_the_halves_of_a_group_split_its_work_by_core():
    cube, vector = halves(fn(expand(_mixed()), "k"))
    assert (cube.name, cube.func_type, vector.name, vector.func_type) == \
        ("k_aic", FunctionType.AIC, "k_aiv", FunctionType.AIV)
    # the matmul result crosses: pushed by the cube half, popped by the vector half
    assert _ops(cube) == ["tile.load", "tile.move", "tile.move", "tile.matmul", "tile.tpush"]
    assert _ops(vector) == ["tile.tpop", "tile.exp", "tile.store"]
    assert [p.var.name for p in cube.params] == [p.var.name for p in vector.params] == ["a", "y"]


def test_non_kernels_are_untouched():
    out = expand(_vector())
    src = before(_vector(), NAME)
    assert out.as_python().split("def main(")[1] == src.as_python().split("def main(")[1]
