"""verify.py: each IR property catches a hand-broken program and names the pass."""
import types

import pytest

import pypto.language as pl
from pypto.errors import VerificationError
from pypto.ir.nodes import Assign, Call, FunctionType, If, TileType
from pypto.passes import Pass, run_pass
from pypto.passes.base import PassOptions
from pypto.passes.verify import ESTABLISHED_BY, verify

from pass_helpers import ORDER, assigns, fn, upto


def _prog():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
    return P


def done_through(name):
    return ORDER[:ORDER.index(name) + 1]


def check_raises(prog, after, prop):
    with pytest.raises(VerificationError) as e:
        verify(prog, after, done_through(after))
    assert f"after pass {after}" in e.value.message and f"property {prop}" in e.value.message
    assert "compiler bug" in e.value.hint
    return e.value


def test_valid_programs_pass_after_every_pass():
    every = PassOptions(l0c_double_buffer=True)     # the pipeline with every pass in it
    for name in ORDER:
        prog = upto(_prog(), name, every)
        verify(prog, name, done_through(name))


def test_defined_before_use():
    prog = upto(_prog(), "FlattenCallExpr")
    scope = fn(prog, "add").body[0]
    scope.body.reverse()                  # the assemble now reads the add before it exists
    err = check_raises(prog, "FlattenCallExpr", "defined_before_use")
    assert "used before it is defined in add" in err.message


def test_defined_before_use_a_branch_value_does_not_escape_its_if():
    @pl.program
    class P:
        @pl.function
        def f(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            v = pl.add(x, x)
            if n > 2:
                v = pl.exp(v)
            return v

    prog = upto(P, "ConvertToSSA")
    f = fn(prog, "f")
    br = next(s for s in f.body if isinstance(s, If))
    f.body[-1].values = [br.then_body[0].var]          # read the then-branch value after the if
    check_raises(prog, "ConvertToSSA", "defined_before_use")


def test_ssa():
    prog = upto(_prog(), "ConvertToSSA")
    scope = fn(prog, "add").body[0]
    scope.body.append(scope.body[0])      # the same variable assigned twice
    err = check_raises(prog, "ConvertToSSA", "ssa")
    assert "assigned more than once" in err.message
    # not checked before ConvertToSSA has run
    verify(prog, "Frontend", [])


def test_no_kernel_tensor_ops():
    prog = upto(_prog(), "ConvertTensorToTileOps")
    k = fn(prog, "add_incore_0")
    a, b = (p.var for p in k.params[:2])
    k.body.insert(0, Assign(type(a)("t", a.type), Call("tensor.add", [a, b], type=a.type)))
    err = check_raises(prog, "ConvertTensorToTileOps", "no_kernel_tensor_ops")
    assert "tensor.add" in err.message and "add_incore_0" in err.message
    verify(prog, "OutlineIncoreScopes", done_through("OutlineIncoreScopes"))


def test_tiles_placed():
    prog = upto(_prog(), "InferTileMemorySpace")
    v = assigns(fn(prog, "add_incore_0"), "tile.add")[0].var
    v.type = TileType(v.type.shape, v.type.dtype, None)
    err = check_raises(prog, "InferTileMemorySpace", "tiles_placed")
    assert repr(v.name) in err.message


def test_kernels_typed():
    prog = upto(_prog(), "ExpandMixedKernel")
    fn(prog, "add_incore_0").func_type = FunctionType.InCore
    err = check_raises(prog, "ExpandMixedKernel", "kernels_typed")
    assert "add_incore_0" in err.message


def test_every_property_is_established_by_a_real_pass():
    assert set(ESTABLISHED_BY.values()) - {None} <= set(ORDER)


def test_run_pass_names_the_pass_that_broke_the_ir():
    def run(prog, opts):
        k = fn(prog, "add_incore_0")
        k.func_type = FunctionType.InCore
        return prog
    broken = Pass("Breaker", types.SimpleNamespace(run=run), ())
    prog = upto(_prog(), "ExpandMixedKernel")
    with pytest.raises(VerificationError, match="after pass Breaker"):
        run_pass(broken, prog, PassOptions(), True, done_through("ExpandMixedKernel"))
    run_pass(broken, prog, PassOptions(), verify=False)
