"""run_pipeline end to end: each program's final IR is verified, round-trips, and looks
like what codegen expects (AIV/AIC kernels with planned memory, an orchestration with
directed calls)."""
import pytest

from pypto.backend import BackendType
from pypto.ir.nodes import (ArgDir, Assign, FunctionType, MemorySpace as M, Program, PtrType,
                            Return, RuntimeScope)
from pypto.passes import pipeline, run_pass, run_pipeline
from pypto.passes.base import PassOptions
from pypto.passes.verify import verify

import pipeline_programs as pp
from pass_helpers import ORDER, calls, fn, loops, roundtrip, tiles
from placement import check_kernel, check_ptoas

OPTIONS = {
    "pypto": PassOptions(),
    "ptoas": PassOptions(memory_planner="PTOAS"),
    "a5": PassOptions(backend_type=BackendType.Ascend950),
}


def allocs(f):
    return [s for s in f.body if isinstance(s, Assign) and isinstance(s.var.type, PtrType)]


def check_final(prog, opts):
    verify(prog, "DeriveCallDirections", ORDER)
    roundtrip(prog)
    c = opts.chip
    for f in prog.functions:
        if f.is_kernel:
            assert f.func_type in (FunctionType.AIV, FunctionType.AIC)
            for t in tiles(f):
                assert t.type.memory_space is not None and t.type.memref is not None, t.name
            if opts.memory_planner == "PTOAS":          # ptoas plans memory itself
                check_ptoas(Program(prog.name, [f], prog.source), c)
            else:
                check_kernel(f, c)
        else:
            assert f.func_type is FunctionType.Orchestration
            for call in calls(f):
                if call.callee:
                    callee = fn(prog, call.callee)
                    assert len(call.attrs["arg_directions"]) == len(callee.params)


@pytest.mark.parametrize("opts", OPTIONS.values(), ids=OPTIONS.keys())
@pytest.mark.parametrize("build", pp.ALL, ids=lambda b: b.__name__)
def test_pipeline_final_program_is_verified_and_round_trips(build, opts):
    check_final(run_pipeline(build(), opts), opts)


@pytest.mark.parametrize("build", pp.ALL, ids=lambda b: b.__name__)
def test_every_intermediate_program_round_trips(build):
    prog, opts = build(), PassOptions()
    for p in pipeline(opts):
        prog = run_pass(p, prog, opts)
        roundtrip(prog)


@pytest.mark.parametrize("build", pp.ALL, ids=lambda b: b.__name__)
def test_pipeline_is_deterministic_and_leaves_its_input_alone(build):
    src = build()
    before = src.as_python()
    first = run_pipeline(src, PassOptions()).as_python()
    assert src.as_python() == before
    assert run_pipeline(build(), PassOptions()).as_python() == first


def test_quickstart_final_kernel():
    prog = run_pipeline(pp.quickstart(), PassOptions())
    k = fn(prog, "add_incore_0")
    assert k.func_type is FunctionType.AIV
    assert [(a.value.kwargs["target_memory"], a.value.args[0].value) for a in allocs(k)] == \
        [(M.Vec, 65536), (M.Vec, 65536)]
    assert [t.type.memref.offset for t in tiles(k)] == [0, 65536, 0]
    (call,) = calls(fn(prog, "add"))
    assert call.attrs["arg_directions"] == [ArgDir.input, ArgDir.input, ArgDir.output_existing]


def test_softmax_final_kernel():
    prog = run_pipeline(pp.softmax(), PassOptions())
    k = fn(prog, "softmax_incore_0")
    assert k.func_type is FunctionType.AIV
    assert [c.op for c in calls(k) if c.op != "tile.alloc"] == [
        "tile.load", "tile.create", "tile.row_max", "tile.row_expand_sub", "tile.exp",
        "tile.row_sum", "tile.row_expand_div", "tile.store"]
    assert sum(a.value.args[0].value for a in allocs(k)) == 2 * 16384 + 256


def test_matmul_k_loop_final_kernel():
    prog = run_pipeline(pp.matmul_k(), PassOptions())
    k = fn(prog, "matmul_incore_0")
    assert k.func_type is FunctionType.AIC
    (loop,) = loops(k)
    acc = [t for t in tiles(k) if t.type.memory_space is M.Acc]
    assert len({id(t.type.memref.base) for t in acc}) == 1          # one accumulator buffer
    assert loop.iter_args[0].var.type.memory_space is M.Acc
    # the in-loop operands are moved to Left/Right by InferTileMemorySpace
    moves = [c.kwargs["target_memory"] for c in calls(k, "tile.move")]
    assert moves == [M.Left, M.Right, M.Left, M.Right]


def test_two_kernels_final_program():
    prog = run_pipeline(pp.two_kernels(), PassOptions())
    assert [f.name for f in prog.functions] == ["main_incore_0", "scale", "main"]
    main = fn(prog, "main")
    assert [c.op for c in calls(main)] == ["tensor.create", "@main_incore_0", "@scale"]
    create, first, second = calls(main)
    scope, ret = main.body                                          # one AUTO runtime scope
    assert isinstance(scope, RuntimeScope) and not scope.manual and isinstance(ret, Return)
    assert first.args[2] is scope.body[0].var                       # the created tensor is written...
    assert second.args[0] is scope.body[1].var                      # ...and then read by `scale`
    assert first.attrs["arg_directions"][2] is ArgDir.output_existing
    assert second.attrs["arg_directions"] == [ArgDir.input, ArgDir.output_existing]


def test_dsa_rp_pipeline_fits_small_programs():
    for build in (pp.softmax, pp.matmul_k, pp.two_kernels):
        opts = PassOptions(memory_planner="DSA_RP")
        check_final(run_pipeline(build(), opts), opts)
