"""ConvertToSSA: versions, loop carries, phis, and that SSA input is left alone."""
import pytest

import pypto.language as pl
from pypto.errors import ParserError
from pypto.ir.nodes import Assign, Yield
from pypto.ir.visit import defs, walk

from pass_helpers import body_text, fn, ifs, loops, roundtrip, run, text, var


def ssa(prog):
    return run(prog, "ConvertToSSA")


def assert_single_assignment(f):
    names = [p.var.name for p in f.params] + [v.name for s in walk(f.body) for v in defs(s)]
    assert len(names) == len(set(names)), names


def test_reassignment_gets_fresh_versions_and_params_keep_names():
    @pl.program
    class P:
        @pl.function
        def f(self, a: pl.Tensor[[64, 64], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            x = pl.add(a, a)
            x = pl.mul(x, a)
            x = pl.exp(x)
            out = pl.add(x, a)
            return out

    f = fn(ssa(P), "f")
    assert [p.var.name for p in f.params] == ["a", "out"]
    assert body_text(ssa(P), "f") == [
        "x: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.add(a, a)",
        "x__ssa_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.mul(x, a)",
        "x__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.exp(x__ssa_v0)",
        "out__ssa_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.add(x__ssa_v1, a)",
        "return out__ssa_v0",
    ]
    # the param itself is still the Var the body's first statement reads
    assert f.body[0].value.args[0] is f.params[0].var
    assert_single_assignment(f)
    roundtrip(ssa(P))


def _tile_carry():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 64])
            for i in pl.range(4):
                t = pl.load(x, [i * 16, 0], [16, 64])
                acc = pl.add(acc, t)
            y = pl.store(acc, [0, 0], y)
            return y
    return P


def test_implicit_loop_carry_becomes_iter_args_yield_and_return_var():
    # `acc` is rebound from a Vec load to an (unplaced) tile.add: the parser makes a
    # second Var for the new type, and it is still the one carried variable `acc`
    out = ssa(_tile_carry())
    f = fn(out, "k")
    (loop,) = loops(f)
    init = var(f, "acc")
    assert len(loop.iter_args) == 1 and len(loop.return_vars) == 1
    it = loop.iter_args[0]
    assert it.init is init
    assert it.var.name == "acc__iter_v0"
    add = next(s for s in loop.body if isinstance(s, Assign) and s.value.op == "tile.add")
    assert add.value.args[0] is it.var               # the body reads the carried value
    assert isinstance(loop.body[-1], Yield) and loop.body[-1].values == [add.var]
    rv = loop.return_vars[0]
    store = next(s for s in f.body if isinstance(s, Assign) and s.value.op == "tile.store")
    assert store.value.args[0] is rv                 # after the loop: the loop's result
    assert "for i, (acc__iter_v0,) in pl.range(4, init_values=(acc,)):" in text(out)
    assert "acc__rv_v0 = pl.yield_(acc__ssa_v0)" in text(out)
    assert_single_assignment(f)
    roundtrip(out)


def test_loop_local_values_are_not_carried():
    out = ssa(_tile_carry())
    (loop,) = loops(fn(out, "k"))
    assert [a.var.name for a in loop.iter_args] == ["acc__iter_v0"]   # not `t`


def test_carry_in_tensor_orchestration_loop():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    y[i * 16:i * 16 + 16, :] = pl.relu(pl.load(x, [i * 16, 0], [16, 64]))
            return y

    out = ssa(P)
    f = fn(out, "main")
    (loop,) = loops(f)
    assert loop.iter_args[0].init is f.params[1].var
    assert f.body[-1].values == [loop.return_vars[0]]
    roundtrip(out)


def test_explicit_init_values_and_yield_are_preserved():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i, (a,) in pl.range(1, 4, init_values=(acc,)):
                t = pl.load(x, [0, 0], [64, 64])
                nxt = pl.add(a, t)
                a_out = pl.yield_(nxt)
            y = pl.store(a_out, [0, 0], y)
            return y

    out = ssa(P)
    assert body_text(out, "k") == body_text(P, "k")[:-2] + [
        "y__ssa_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(a_out, [0, 0], y)",
        "return y__ssa_v0",
    ]
    (loop,) = loops(fn(out, "k"))
    assert [a.var.name for a in loop.iter_args] == ["a"]
    assert [v.name for v in loop.return_vars] == ["a_out"]
    roundtrip(out)


def test_explicit_and_implicit_carries_share_one_yield():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            other = pl.load(x, [0, 0], [64, 64])
            for i, (a,) in pl.range(4, init_values=(acc,)):
                other = pl.exp(other)
                a_out = pl.yield_(pl.add(a, other))
            y = pl.store(pl.add(a_out, other), [0, 0], y)
            return y

    out = ssa(P)
    f = fn(out, "k")
    (loop,) = loops(f)
    assert [a.var.name for a in loop.iter_args] == ["a", "other__iter_v0"]
    assert [v.name for v in loop.return_vars] == ["a_out", "other__rv_v0"]
    ys = [s for s in loop.body if isinstance(s, Yield)]
    assert len(ys) == 1 and len(ys[0].values) == 2 and loop.body[-1] is ys[0]
    assert "pl.tile.add(a_out, other__rv_v0)" in text(out)
    roundtrip(out)


def test_nested_loops_carry_through_both():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i in pl.range(2):
                for j in pl.range(3):
                    acc = pl.mul(acc, acc)
            y = pl.store(acc, [0, 0], y)
            return y

    out = ssa(P)
    f = fn(out, "k")
    outer, inner = loops(f)
    assert outer.iter_args[0].init is var(f, "acc")
    assert inner.iter_args[0].init is outer.iter_args[0].var
    assert outer.body[-1].values == [inner.return_vars[0]]
    assert_single_assignment(f)
    roundtrip(out)


def test_if_else_assignments_merge_into_a_phi():
    @pl.program
    class P:
        @pl.function
        def f(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            v = pl.add(x, x)
            if n > 2:
                v = pl.mul(v, x)
            else:
                v = pl.sub(v, x)
            out = pl.add(v, x)
            return out

    out = ssa(P)
    f = fn(out, "f")
    (br,) = ifs(f)
    assert [r.name for r in br.return_vars] == ["v__phi_v0"]
    assert isinstance(br.then_body[-1], Yield) and isinstance(br.else_body[-1], Yield)
    assert br.then_body[-1].values == [br.then_body[0].var]
    assert br.else_body[-1].values == [br.else_body[0].var]
    assert br.then_body[0].value.args[0] is var(f, "v")
    final = next(s for s in f.body if isinstance(s, Assign) and s.var.name == "out__ssa_v0")
    assert final.value.args[0] is br.return_vars[0]
    assert_single_assignment(f)
    roundtrip(out)


def test_if_without_else_yields_the_old_value():
    @pl.program
    class P:
        @pl.function
        def f(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            v = pl.add(x, x)
            if n > 2:
                v = pl.exp(v)
            return v

    out = ssa(P)
    f = fn(out, "f")
    (br,) = ifs(f)
    assert len(br.else_body) == 1 and br.else_body[0].values == [var(f, "v")]
    assert f.body[-1].values == [br.return_vars[0]]
    roundtrip(out)


def test_name_first_bound_in_both_branches_merges():
    @pl.program
    class P:
        @pl.function
        def f(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            if n > 2:
                z = pl.add(x, x)
            else:
                z = pl.sub(x, x)
            return z

    out = ssa(P)
    f = fn(out, "f")
    (br,) = ifs(f)
    assert len(br.return_vars) == 1
    assert f.body[-1].values == [br.return_vars[0]]
    assert_single_assignment(f)
    roundtrip(out)


@pytest.mark.parametrize("where", ["loop", "if"])
def test_name_bound_only_inside_a_body_cannot_be_used_after_it(where):
    if where == "loop":
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
                for i in pl.range(4):
                    t = pl.exp(x)
                return t
    else:
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
                if n > 2:
                    t = pl.exp(x)
                return t
    with pytest.raises(ParserError) as e:
        ssa(P)
    assert "'t'" in e.value.message and e.value.hint
    assert e.value.span is not None and e.value.span.line > 0


def test_loop_vars_of_two_loops_stay_distinct():
    @pl.program
    class P:
        @pl.function
        def f(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    y[i * 16:i * 16 + 16, :] = pl.load(x, [i * 16, 0], [16, 64])
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    y[i * 16:i * 16 + 16, :] = pl.exp(pl.load(y, [i * 16, 0], [16, 64]))
            return y

    out = ssa(P)
    f = fn(out, "f")
    assert_single_assignment(f)
    first, second = loops(f)
    assert second.iter_args[0].init is first.return_vars[0]
    roundtrip(out)


def test_idempotent_on_ssa_input():
    once = ssa(_tile_carry())
    twice = ssa(once)
    assert twice.as_python() == once.as_python()
    # also from text: the printed SSA form parses back and is left as it is
    reparsed = pl.parse(once.as_python())
    assert ssa(reparsed).as_python() == once.as_python()


def test_input_program_is_not_modified():
    prog = _tile_carry()
    before = prog.as_python()
    ssa(prog)
    assert prog.as_python() == before
