"""End to end: our .pto through pypto.ptoas into kernels, our orchestration and
kernel_config.py / compiled_meta.json into the simulator runtime, and the numbers."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import cg_programs as P
from cg_build import build_dir, run_dir
from pypto import dtype as dt
from pypto.ir.nodes import (ArgDir, Assign, Call, Const, For, Function, FunctionType, IterArg,
                            Level, MemorySpace as M, Param, ParamDirection as PD, Program,
                            Return, Role, RuntimeScope, ScalarType, TensorType, Var, Yield)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def orch_calling(kernel: Function, name: str) -> Function:
    """An orchestration that calls `kernel` once with its own parameters."""
    params = [Param(Var(p.var.name, TensorType(p.var.type.shape, p.var.type.dtype)), p.direction)
              for p in kernel.params]
    dirs = [ArgDir.input if p.direction is PD.In else
            ArgDir.output_existing if p.direction is PD.Out else ArgDir.inout for p in params]
    call = Call("@" + kernel.name, [p.var for p in params], {}, None, {"arg_directions": dirs})
    rets = [p.var.type for p in params if p.direction is not PD.In]
    return Function(name, params, rets, [RuntimeScope([Assign(Var("r", rets[0]), call)])],
                    FunctionType.Orchestration, Level.CHIP, Role.Orchestrator)


def test_quickstart(tmp_path):
    out = build_dir(tmp_path, P.quickstart(), "add")
    a = np.random.default_rng(0).standard_normal((128, 128), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((128, 128), dtype=np.float32)
    o = np.zeros((128, 128), np.float32)
    run_dir(out, a, b, o)
    np.testing.assert_array_equal(o, a + b)


def test_softmax(tmp_path):
    prog = P.softmax()
    prog.functions.append(orch_calling(prog.functions[0], "softmax64"))
    out = build_dir(tmp_path, prog, "softmax64")
    x = np.random.default_rng(2).standard_normal((64, 64), dtype=np.float32)
    y = np.zeros_like(x)
    run_dir(out, x, y)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("planned", [True, False])
def test_matmul_k_loop(tmp_path, planned):
    prog = P.matmul_k(planned)
    prog.functions.append(orch_calling(prog.functions[0], "matmul_k"))
    out = build_dir(tmp_path, prog, "matmul_k")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 128), dtype=np.float32)
    b = rng.standard_normal((128, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    run_dir(out, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _chain() -> Program:
    """scale(x, t, alpha): t = x * alpha + 1.5;  accum(t, y): y = y + t;
    orchestration: tmp = create; for i in range(n): scope { scale(x, tmp, alpha); accum(tmp, y) }"""
    sc = P.scale_add().functions[0]
    sc.name = "scale"
    ty, yy = P.tensor("t", [32, 64]), P.tensor("y", [32, 64])
    m0, s0 = P.alloc("mem_vec_0", M.Vec, 16384)
    t1 = P.tile("t1", [32, 64], M.Vec, m0, 0)
    y1 = P.tile("y1", [32, 64], M.Vec, m0, 8192)
    y2 = P.tile("y2", [32, 64], M.Vec, m0, 8192)
    ys = Var("y__ssa_v1", yy.type)
    acc = P.kernel("accum", [Param(ty), Param(yy, PD.InOut)], [
        s0, Assign(t1, P.load(ty, [0, 0], [32, 64])), Assign(y1, P.load(yy, [0, 0], [32, 64])),
        Assign(y2, Call("tile.add", [y1, t1])), Assign(ys, Call("tile.store", [y2, P.tup(0, 0), yy])),
        Return([ys])])
    x, y = P.tensor("x", [32, 64]), P.tensor("y", [32, 64])
    alpha = Var("alpha", ScalarType(dt.FP32))
    n = Var("n", ScalarType(dt.INT32))
    tmp = Var("tmp", TensorType((32, 64), dt.FP32))
    t2 = Var("tmp__ssa_v1", tmp.type)
    i = Var("i", ScalarType(dt.INDEX))
    y_it, y_new, y_rv = (Var(nm, y.type) for nm in ("y__iter_v1", "y__ssa_v2", "y__rv_v3"))
    body = [Assign(tmp, Call("tensor.create", [P.tup(32, 64)], {"dtype": dt.FP32})),
            For(i, Const(0, dt.INDEX), n, Const(1, dt.INDEX), [
                RuntimeScope([
                    Assign(t2, Call("@scale", [x, tmp, alpha], {}, tmp.type,
                                    {"arg_directions": [ArgDir.input, ArgDir.output_existing, ArgDir.scalar]})),
                    Assign(y_new, Call("@accum", [t2, y_it], {}, y.type,
                                       {"arg_directions": [ArgDir.input, ArgDir.inout]}))]),
                Yield([y_new])], [IterArg(y_it, y)], [y_rv]),
            Return([y_rv])]
    orch = Function("chain", [Param(x), Param(y, PD.InOut), Param(alpha), Param(n)], [y.type], body,
                    FunctionType.Orchestration, Level.CHIP, Role.Orchestrator)
    return Program("chain", [sc, acc, orch], "chain.py")


def test_chain_with_intermediate_loop_and_scalars(tmp_path):
    out = build_dir(tmp_path, _chain(), "chain")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 64), dtype=np.float32)
    y0 = rng.standard_normal((32, 64), dtype=np.float32)
    y = y0.copy()
    run_dir(out, x, y, 0.5, 3)
    np.testing.assert_allclose(y, y0 + 3 * (x * np.float32(0.5) + np.float32(1.5)), rtol=1e-6, atol=1e-5)


def test_dynamic_rows(tmp_path):
    """A kernel over tensors with a dynamic leading dim, looping over row blocks."""
    prog = P.dyn_kernel()
    k = prog.functions[0]
    x = Var("x", TensorType((P.DynDim("M"), 64), dt.FP32))
    y = Var("y", TensorType((P.DynDim("M"), 64), dt.FP32))
    nblk = Var("nblk", ScalarType(dt.INT32))
    call = Call("@relu_rows", [x, y, nblk], {}, None,
                {"arg_directions": [ArgDir.input, ArgDir.output_existing, ArgDir.scalar]})
    from pypto.ir.nodes import Eval
    prog.functions.append(Function("relu", [Param(x), Param(y, PD.Out), Param(nblk)], [y.type],
                                   [Eval(call), Return([y])], FunctionType.Orchestration,
                                   Level.CHIP, Role.Orchestrator))
    assert k.name == "relu_rows"
    out = build_dir(tmp_path, prog, "relu")
    xs = np.random.default_rng(5).standard_normal((48, 64), dtype=np.float32)
    ys = np.full_like(xs, 7.0)
    run_dir(out, xs, ys, 3)
    np.testing.assert_array_equal(ys, np.maximum(xs, 0))
