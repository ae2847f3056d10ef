"""OutlineIncoreScopes: pl.at regions become InCore functions called from the parent."""
import pytest

import pypto.language as pl
from pypto.errors import CodegenError
from pypto.ir.nodes import (Assign, Eval, FunctionType, InCoreScope, Level,
                            ParamDirection as PD, Return, Role, ScalarType, TensorType)
from pypto.ir.visit import walk

from pass_helpers import before, body_text, calls, fn, loops, roundtrip, run, text

NAME = "OutlineIncoreScopes"


def outline(prog):
    return run(before(prog, NAME), NAME)


def kernel_calls(f):
    return [c for c in calls(f) if c.callee]


def _three_scopes():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
                z[:] = pl.add(y, x)
            with pl.at(level=pl.Level.CORE_GROUP):
                z[:] = pl.add(z, y)
            return z
    return P


def test_kernel_names_count_from_zero_and_name_hint_wins():
    # as the reference numbers them: a named region counts too
    out = outline(_three_scopes())
    assert [f.name for f in out.functions] == ["main_incore_0", "stage", "main_incore_2", "main"]
    assert [c.callee for c in kernel_calls(fn(out, "main"))] == ["main_incore_0", "stage", "main_incore_2"]
    roundtrip(out)


def test_a_repeated_name_hint_takes_a_numeric_suffix_and_a_functions_name_its_parents():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def other(self, x: pl.Tensor[[64, 64], pl.FP32],
                  y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)
            return y

        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
                y[:] = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
                z[:] = pl.add(y, x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
                z[:] = pl.add(z, y)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="main"):
                z[:] = pl.add(z, x)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="other"):
                z[:] = pl.sub(z, x)
            return z

    out = outline(P)
    assert [c.callee for c in kernel_calls(fn(out, "main"))] == \
        ["stage", "stage_0", "stage_1", "main_main", "main_other"]
    roundtrip(out)


def test_kernel_names_skip_names_already_taken():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def main_incore_0(self, x: pl.Tensor[[64, 64], pl.FP32],
                          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)
            return y

        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x)
            return y

    out = outline(P)      # taken by another function: named under its parent
    assert sorted(f.name for f in out.functions) == ["main", "main_incore_0", "main_main_incore_0"]
    assert kernel_calls(fn(out, "main"))[0].callee == "main_main_incore_0"


def test_opaque_parent_becomes_orchestration_and_kernel_is_incore():
    out = outline(_three_scopes())
    main = fn(out, "main")
    assert (main.func_type, main.level, main.role) == (FunctionType.Orchestration, Level.CHIP, Role.Orchestrator)
    k = fn(out, "main_incore_0")
    assert (k.func_type, k.level, k.role) == (FunctionType.InCore, Level.CHIP_DIE, Role.SubWorker)
    assert not any(isinstance(s, InCoreScope) for f in out.functions for s in walk(f.body))


def test_functions_without_scopes_are_untouched():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)
            return y

    src = before(P, NAME)
    assert run(src, NAME).as_python() == src.as_python()


def test_params_in_order_of_first_use_with_directions():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 acc: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.mul(b, a)
                acc[:] = pl.add(acc, b)
            return out

    out = outline(P)
    k = fn(out, "main_incore_0")
    assert [(p.var.name, p.direction) for p in k.params] == [
        ("b", PD.In), ("a", PD.In), ("out", PD.Out), ("acc", PD.InOut)]
    # the written tensors are returned, in parameter order
    ret = k.body[-1]
    assert isinstance(ret, Return) and [v.name for v in ret.values] == ["out__ssa_v0", "acc__ssa_v0"]
    assert len(k.return_types) == 2
    # the call passes the parent's values in the same order
    main = fn(out, "main")
    (call,) = kernel_calls(main)
    assert [a.name for a in call.args] == ["b", "a", "out", "acc"]
    assert call.args[0] is main.params[1].var
    roundtrip(out)


def test_one_written_tensor_is_returned_and_bound_in_the_parent():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out

    out = outline(P)
    assert body_text(out, "main") == [
        "out__ssa_v0: pl.Tensor[[128, 128], pl.FP32] = self.main_incore_0(a, b, out)",
        "return out__ssa_v0",
    ]
    assert body_text(out, "main_incore_0") == [
        "add__tmp_v0: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.add(a, b)",
        "out__ssa_v0: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.assemble(out, add__tmp_v0, [0, 0])",
        "return out__ssa_v0",
    ]
    k = fn(out, "main_incore_0")
    assert [p.direction for p in k.params] == [PD.In, PD.In, PD.Out]
    assert k.return_types == [TensorType((128, 128), k.params[2].var.type.dtype)]
    roundtrip(out)


def test_store_without_result_still_returns_the_written_param():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.exp(pl.load(x, [0, 0], [64, 64])), [0, 0], y)
            return y

    out = outline(P)
    k = fn(out, "main_incore_0")
    assert k.params[1].direction is PD.Out
    assert k.body[-1].values == [k.params[1].var]
    roundtrip(out)


def test_loop_var_becomes_a_scalar_param_inside_a_range_loop():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(x, [i * 16, 0], [16, 64])
                    y[i * 16:i * 16 + 16, :] = pl.exp(t)
            return y

    out = outline(P)
    k = fn(out, "main_incore_0")
    assert [p.var.name for p in k.params] == ["x", "i", "y__iter_v0"]
    assert isinstance(k.params[1].var.type, ScalarType) and k.params[1].direction is PD.In
    # the kernel reads its own parameter, not the orchestration's loop var
    (loop,) = loops(fn(out, "main"))
    assert all(v is not loop.loop_var for c in calls(k) for v in c.args)
    (call,) = kernel_calls(fn(out, "main"))
    assert call.args[1] is loop.loop_var
    # the written iter_arg: the call result is what the loop yields
    assign = next(s for s in loop.body if isinstance(s, Assign))
    assert loop.body[-1].values == [assign.var]
    roundtrip(out)


def test_a_tensor_computed_inside_and_used_after_leaves_through_a_created_tensor():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.exp(x)
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.add(t, x)
            return y

    out = outline(P)
    main, k0 = fn(out, "main"), fn(out, "main_incore_0")
    # the parent makes the tensor, the first kernel writes t into it (an Out parameter),
    # the second reads it
    creates = [s for s in main.body if isinstance(s, Assign) and getattr(s.value, "op", "") == "tensor.create"]
    assert len(creates) == 1 and creates[0].var.type.shape == (64, 64)
    assert [(p.var.name, p.direction) for p in k0.params] == [("x", PD.In),
                                                               ("t__out", PD.Out)]
    assert any(getattr(s, "value", None) is not None and getattr(s.value, "op", "") == "tensor.assemble"
               for s in k0.body)
    roundtrip(out)


def test_a_tile_computed_inside_and_used_after_is_an_error():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [64, 64])
            with pl.at(level=pl.Level.CORE_GROUP):
                y = pl.store(pl.exp(t), [0, 0], y)
            return y

    with pytest.raises(CodegenError) as e:
        outline(P)
    assert "'t'" in e.value.message and "pl.at" in e.value.message
    assert "pl.create_tensor" in e.value.hint
    assert e.value.span is not None


def test_kernel_gets_its_own_param_vars():
    out = outline(_three_scopes())
    main = fn(out, "main")
    parent_vars = {id(p.var) for p in main.params} | {id(v) for s in walk(main.body)
                                                      for v in getattr(s, "values", [])}
    for k in out.functions[:-1]:
        assert not any(id(p.var) in parent_vars for p in k.params), k.name


def test_two_outputs_later_uses_read_the_written_arguments():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x)
                z[:] = pl.relu(x)
            with pl.at(level=pl.Level.CORE_GROUP):
                z[:] = pl.add(y, z)
            return z

    out = outline(P)
    main = fn(out, "main")
    first, second = main.body[0], main.body[1]
    assert isinstance(first, Eval) and first.expr.callee == "main_incore_0"
    y, z = main.params[1].var, main.params[2].var
    assert second.value.args == [y, z]
    assert [p.direction for p in fn(out, "main_incore_1").params] == [PD.In, PD.InOut]
    roundtrip(out)


def test_output_text_after_outlining():
    out = outline(_three_scopes())
    assert "def stage(y__ssa_v0: pl.Tensor[[64, 64], pl.FP32], x: pl.Tensor[[64, 64], pl.FP32], " \
           "z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:" in text(out)


def test_loop_inside_the_region_writing_a_tensor_returns_the_loops_result():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(4):
                    y[i * 16:i * 16 + 16, :] = pl.exp(pl.load(x, [i * 16, 0], [16, 64]))
            return y

    out = outline(P)
    k = fn(out, "main_incore_0")
    (loop,) = loops(k)
    assert [(p.var.name, p.direction) for p in k.params] == [("y", PD.Out), ("x", PD.In)]
    assert k.body[-1].values == [loop.return_vars[0]]           # not the body's value
    main = fn(out, "main")
    assert main.body[-1].values == [main.body[0].var]
    roundtrip(out)


def test_reading_a_written_tensor_through_its_new_version_makes_it_inout():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[0:32, :] = pl.exp(pl.load(x, [0, 0], [32, 64]))
                y[32:64, :] = pl.exp(pl.load(y, [16, 0], [32, 64]))   # rows 32..47 are the input's
            return y

    k = fn(outline(P), "main_incore_0")
    assert [(p.var.name, p.direction) for p in k.params] == [("x", PD.In), ("y", PD.InOut)]


def test_a_name_hint_naming_a_function_gets_a_suffix():
    """`@pl.jit def f: with pl.at(name_hint="f")` (the reference's examples do it)."""
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="main"):
                y[:] = pl.exp(x)
            return y

    assert fn(outline(P), "main_main").params
