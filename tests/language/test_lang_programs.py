"""Parsing whole programs: the IR they produce, and print -> parse round trips."""
import os

import pytest

import lang_programs as lp
import pypto.language as pl
from pypto import dtype as dt
from pypto.ir.equal import assert_structural_equal, structural_equal
from pypto.ir.nodes import (Assign, Call, Const, DynDim, Eval, For, ForKind, FunctionType, If,
                            InCoreScope, Level, MemorySpace, ParamDirection, Program, PtrType,
                            Return, Role, RuntimeScope, ScalarType, TensorType, TileType, Var,
                            Yield, BinOp, ArgDir)
from pypto.ir.visit import walk

DATA = os.path.join(os.path.dirname(__file__), "data")


def calls(fn):
    out = []
    for s in walk(fn.body):
        e = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if isinstance(e, Call):
            out.append(e.op)
    return out


@pytest.mark.parametrize("build", lp.ALL, ids=lambda b: b.__name__)
def test_roundtrip(build):
    prog = build()
    text = prog.as_python()
    again = pl.parse(text)
    assert isinstance(again, Program)
    assert_structural_equal(prog, again)
    assert again.as_python() == text
    # without location comments too
    bare = prog.as_python(locs=False)
    again2 = pl.parse(bare)
    assert_structural_equal(prog, again2)
    assert again2.as_python(locs=False) == bare


def test_quickstart_tensor_level():
    prog = lp.quickstart_tensor()
    assert prog.name == "QuickTensor"
    assert prog.source == "lang_programs.py"
    (f,) = prog.functions
    assert f.func_type is FunctionType.Orchestration
    assert (f.level, f.role) == (Level.CHIP, Role.Orchestrator)     # derived from the type
    assert [p.var.name for p in f.params] == ["a", "b", "out"]
    assert [p.direction for p in f.params] == [ParamDirection.In, ParamDirection.In, ParamDirection.Out]
    scope, ret = f.body
    assert isinstance(scope, InCoreScope) and scope.name_hint == ""
    (asg,) = scope.body
    assert isinstance(asg, Assign)
    # out[:] = v  ->  out = tensor.assemble(out, v, [0, 0]) rebinding the parameter's Var
    assert asg.var is f.params[2].var
    assert asg.value.op == "tensor.assemble"
    assert asg.value.args[0] is f.params[2].var
    assert asg.value.args[1].op == "tensor.add"
    offs = asg.value.args[2]
    assert [(c.value, c.dtype) for c in offs.items] == [(0, dt.INDEX), (0, dt.INDEX)]
    assert isinstance(ret, Return) and ret.values[0] is asg.var
    assert f.return_types == [TensorType((128, 128), dt.FP32)]


def test_quickstart_tile_level():
    prog = lp.quickstart_tile()
    k, main = prog.functions
    assert k.func_type is FunctionType.InCore and k.role is Role.SubWorker
    assert calls(k) == ["tile.load", "tile.load", "tile.add", "tile.store"]
    ta = k.body[0].var
    assert ta.type == TileType((128, 128), dt.FP32, MemorySpace.Vec)
    assert k.body[1].value.kwargs == {"target_memory": MemorySpace.Vec}
    call = main.body[0].value
    assert call.op == "@add_kernel" and call.callee == "add_kernel"
    assert call.type == TensorType((128, 128), dt.FP32)
    assert "self" not in k.as_python() if hasattr(k, "as_python") else True


def test_softmax():
    prog = lp.softmax()
    (f,) = prog.functions
    scope = f.body[0]
    ops_ = [s.value.op if isinstance(s, Assign) else s.expr.op for s in scope.body]
    assert ops_ == ["tile.load", "tile.create", "tile.row_max", "tile.exp", "tile.row_sum", "tile.store"]
    m = scope.body[2].var
    assert m.type.shape == (64, 1)                 # N folded from the module constant
    create = scope.body[1].value
    assert create.kwargs == {"dtype": dt.FP32, "target_memory": MemorySpace.Vec}
    assert isinstance(scope.body[5], Eval)


def test_matmul_k_loop():
    prog = lp.matmul()
    k = prog.get("matmul_k")
    assert prog.get_function("matmul_k") is k and prog.get_function("nope") is None   # (the reference's name)
    spaces = [s.var.type.memory_space for s in k.body if isinstance(s, Assign) and isinstance(s.var.type, TileType)]
    assert spaces == [MemorySpace.Mat, MemorySpace.Left, MemorySpace.Mat, MemorySpace.Right, MemorySpace.Acc]
    loop = next(s for s in k.body if isinstance(s, For))
    assert loop.kind is ForKind.Sequential
    assert (loop.start.value, loop.stop.value, loop.step.value) == (1, 4, 1)   # 128 // TILE folded
    (ia,) = loop.iter_args
    acc = k.body[4].var
    assert ia.init is acc and ia.var is not acc and ia.var.type == acc.type
    y = loop.body[-1]
    assert isinstance(y, Yield) and y.values[0] is loop.body[-2].var
    (rv,) = loop.return_vars
    assert rv.name == "acc_out" and rv.type == acc.type
    store = k.body[-2].value
    assert store.op == "tile.store" and store.args[0] is rv
    # k * TILE is index math on the loop variable
    off = loop.body[0].value.args[1].items[1]
    assert isinstance(off, BinOp) and off.op == "*" and off.lhs is loop.loop_var
    assert off.dtype == dt.INDEX and off.rhs.value == 32
    # positional target memory goes to the keyword
    assert loop.body[3].value.kwargs == {"target_memory": MemorySpace.Right}


def test_multi_function_program():
    prog = lp.multi()
    assert [f.name for f in prog.functions] == ["add_k", "scale_k", "main"]
    add_k = prog.get("add_k")
    assert add_k.return_types == [TensorType((64, 64), dt.FP32)]      # inferred
    main = prog.get("main")
    create = main.body[0]
    assert create.value.op == "tensor.create"
    c1 = main.body[1].value
    assert c1.op == "@add_k" and c1.attrs == {"arg_directions": [ArgDir.input, ArgDir.input, ArgDir.output]}
    assert main.body[1].var is create.var          # same name, same type: one Var
    scale = prog.get("scale_k")
    muls = scale.body[1].value
    assert muls.op == "tile.muls" and muls.args[1].value == 2.0 and muls.args[1].dtype == dt.FP32
    assert scale.body[2].value.op == "tile.add"


def test_loops_scopes_and_dynamic_dims():
    prog = lp.loops()
    (f,) = prog.functions
    assert f.func_type is FunctionType.Opaque and f.level is None and f.role is None
    x = f.params[0].var
    assert x.type.shape == (DynDim("M"), 64)
    loop, par, unr, scope, ret = f.body
    assert loop.kind is ForKind.Sequential and loop.stop is f.params[2].var
    inner = loop.body[0]
    assert isinstance(inner, InCoreScope) and inner.name_hint == "row_block"
    asm = inner.body[1].value
    assert asm.op == "tensor.assemble"
    o0 = asm.args[2].items[0]
    assert isinstance(o0, BinOp) and o0.lhs is loop.loop_var
    assert par.kind is ForKind.Parallel and unr.kind is ForKind.Unroll
    cond = par.body[0]
    assert isinstance(cond, If) and cond.cond.op == "==" and cond.cond.dtype == dt.BOOL
    assert isinstance(scope, RuntimeScope) and not scope.manual
    k, h = scope.body
    assert k.var.type == ScalarType(dt.INDEX) and k.value.op == "+"
    assert h.value.op == "max"
    assert "M = pl.dynamic(\"M\")" in prog.as_python()


def test_tensor_ops_dispatch():
    prog = lp.tensor_ops()
    assert calls(prog.functions[0]) == [
        "tensor.matmul", "tensor.row_sum", "tensor.row_expand_div", "tensor.cast",
        "tensor.assemble"]
    scope = prog.functions[0].body[0]
    assert scope.body[0].value.kwargs == {"out_dtype": dt.FP32}
    cast = scope.body[3].value
    assert cast.kwargs == {"dtype": dt.FP32} and cast.args[0].kwargs == {"dtype": dt.FP16}
    adds = scope.body[4].value.args[1]
    assert adds.op == "tensor.adds" and adds.args[0].op == "tensor.neg"


def test_reference_final_dump_roundtrip():
    path = os.path.join(DATA, "quickstart_final_dump.py")
    prog = pl.loads(path)
    assert prog.name == "_jit_add"
    k, orch = prog.functions
    assert k.role is Role.SubWorker and k.func_type is FunctionType.AIV
    assert orch.attrs == {"auto_scope": False}
    ptr = k.body[0].var
    assert isinstance(ptr.type, PtrType)
    alloc = k.body[0].value
    assert alloc.op == "tile.alloc" and alloc.kwargs == {"target_memory": MemorySpace.Vec}
    assert alloc.args[0].value == 65536
    a_tile = k.body[2].var
    assert a_tile.type.memref.base is ptr and a_tile.type.memref.offset == 0
    assert k.body[3].var.type.memref.offset == 65536
    assert k.body[4].var.type.memref.base is ptr          # reuse of the first buffer
    assert k.params[0].var.type.memref.base == "mem_ddr_0"
    assert isinstance(orch.body[0], RuntimeScope)
    call = orch.body[0].body[0].value
    assert call.attrs["arg_directions"] == [ArgDir.input, ArgDir.input, ArgDir.output_existing]
    # spans point into the dump itself (it carries no markers)
    assert k.body[2].span.file == "quickstart_final_dump.py" and k.body[2].span.line == 10
    text = prog.as_python()
    again = pl.parse(text)
    assert_structural_equal(prog, again)
    assert again.as_python() == text
    # the re-parse keeps the original locations through the markers
    assert again.functions[0].body[2].span == k.body[2].span
    assert again.source == "quickstart_final_dump.py"


def test_reference_frontend_dump():
    prog = pl.loads(os.path.join(DATA, "quickstart_00_frontend.py"))
    ref = lp.quickstart_tensor()
    # same program up to names
    assert not structural_equal(prog, ref)            # the program names differ
    assert_structural_equal(prog.functions[0], ref.functions[0])


def test_text_with_dynamic_and_constants():
    text = '''
import pypto.language as pl

M = pl.dynamic("M")
K = 16

@pl.program
class Dyn:
    @pl.function(type=pl.FunctionType.InCore)
    def k(x: pl.Tensor[[M, K * 4], pl.FP16], y: pl.Out[pl.Tensor[[M, 64], pl.FP16]]):
        t = pl.load(x, [0, 0], [K, 64])
        y = pl.store(t, [0, 0], y)
        return y
'''
    prog = pl.parse(text, filename="/some/dir/dyn.py")
    f = prog.functions[0]
    assert f.params[0].var.type.shape == (DynDim("M"), 64)
    assert f.body[0].var.type.shape == (16, 64)
    assert f.body[0].span.file == "dyn.py" and f.body[0].span.line == 11
    assert prog.source == "dyn.py"


def test_standalone_function_and_text_function():
    @pl.function(type=pl.FunctionType.InCore)
    def kern(a: pl.Tensor[[32, 32], pl.FP32], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        t = pl.load(a, [0, 0], [32, 32])
        o = pl.store(pl.sqrt(t), [0, 0], o)
        return o

    from pypto.ir.nodes import Function
    assert isinstance(kern, Function)
    assert kern.name == "kern" and kern.func_type is FunctionType.InCore
    assert calls(kern) == ["tile.load", "tile.store"]
    assert kern.body[1].value.args[0].op == "tile.sqrt"
    text = '''
import pypto.language as pl

@pl.function
def f(x: pl.Scalar[pl.INT32]) -> pl.Scalar[pl.INT32]:
    y: pl.Scalar[pl.INT32] = x * 2 + 1
    return y
'''
    fn = pl.parse(text)
    assert isinstance(fn, Function)
    y = fn.body[0]
    assert y.value.dtype == dt.INT32 and y.value.rhs.dtype == dt.INT32  # literals take INT32
    assert isinstance(y.value.rhs, Const) and y.value.rhs.value == 1


def test_if_else_with_yield_and_explicit_scalar_consts():
    text = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]], n: pl.Scalar[pl.INDEX]):
        t = pl.load(a, [0, 0], [16, 16])
        if n > 2:
            u = pl.exp(t)
            r = pl.yield_(u)
        else:
            v = pl.log(t)
            r = pl.yield_(v)
        c = pl.const(3, pl.INT32)
        d = pl.const(1.5, pl.FP16)
        e = pl.const("inf", pl.FP32)
        o = pl.store(r, [0, 0], o)
        return o
'''
    prog = pl.parse(text)
    f = prog.functions[0]
    branch = f.body[1]
    assert isinstance(branch, If) and len(branch.return_vars) == 1
    assert branch.return_vars[0].name == "r"
    assert isinstance(branch.then_body[-1], Yield) and isinstance(branch.else_body[-1], Yield)
    assert f.body[-2].value.args[0] is branch.return_vars[0]
    assert (f.body[2].value.value, f.body[2].value.dtype) == (3, dt.INT32)
    assert (f.body[3].value.value, f.body[3].value.dtype) == (1.5, dt.FP16)
    assert f.body[4].value.value == float("inf")
    text2 = prog.as_python()
    assert 'pl.const("inf", pl.FP32)' in text2 and "pl.const(3, pl.INT32)" in text2
    again = pl.parse(text2)
    assert_structural_equal(prog, again)
    assert again.as_python() == text2


def test_multiple_assignment_reuses_var_of_same_type():
    text = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.load(a, [0, 0], [16, 16])
        s = pl.exp(t)
        s = pl.log(s)
        s = pl.row_sum(s, t)
        for i in pl.range(4):
            s = pl.row_sum(pl.exp(t), t)
        return o
'''
    f = pl.parse(text).functions[0]
    s1, s2, s3 = (f.body[i].var for i in (1, 2, 3))
    assert s1 is s2 and s3 is not s2 and s3.name == s2.name == "s"
    loop = f.body[4]
    assert loop.body[0].var is s3                    # implicit carry: same Var in the body


def test_tile_alloc_reference_spelling_and_explicit_tileview():
    text = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k(a: pl.Tensor[[64, 64], pl.FP32, pl.MemRef("mem_ddr_0", pl.const(0, pl.INT64), 16384)]):
        mem_vec_2: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384)
        t: pl.Tile[[64, 64], pl.FP32, pl.MemRef(mem_vec_2, 0, 16384), pl.Mem.Vec, pl.TileView(blayout="row_major", slayout="none_box", fractal=512)] = pl.tile.load(a, [0, 0], [64, 64], [64, 64], target_memory=pl.Mem.Vec)
        return a
'''
    f = pl.parse(text).functions[0]
    alloc = f.body[0].value
    assert alloc.kwargs == {"target_memory": MemorySpace.Vec} and alloc.args[0].value == 16384
    t = f.body[1].var
    assert t.type.memref.base is f.body[0].var and t.type.memory_space is MemorySpace.Vec
    assert len(f.body[1].value.args) == 4


def test_auto_scope_keyword_prints_like_the_reference():
    prog = pl.loads(os.path.join(DATA, "quickstart_final_dump.py"))
    text = prog.as_python()
    assert "role=pl.Role.Orchestrator, auto_scope=False)" in text
    assert pl.parse(text).functions[1].attrs == {"auto_scope": False}
