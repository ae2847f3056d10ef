"""FlattenCallExpr: three-address form, temporaries in evaluation order."""
import pypto.language as pl
from pypto.ir.nodes import Assign, Call, TupleExpr, Var
from pypto.ir.visit import stmt_exprs, walk

from pass_helpers import body_text, fn, loops, roundtrip, run, text


def flat(prog):
    return run(prog, "ConvertToSSA", "FlattenCallExpr")


def nested_calls(f):
    """Calls that sit inside another expression (not a statement's top-level call)."""
    out = []

    def inner(e):
        for a in (e.args if isinstance(e, Call) else e.items if isinstance(e, TupleExpr) else []):
            if isinstance(a, Call):
                out.append(a)
            inner(a)
    for s in walk(f.body):
        for e in stmt_exprs(s):
            top = isinstance(s, Assign) or type(s).__name__ == "Eval"
            if isinstance(e, Call) and not top:
                out.append(e)
            inner(e)
    return out


def _nested():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64])
            tb = pl.load(b, [0, 0], [64, 64])
            y = pl.store(pl.add(pl.exp(ta), pl.mul(tb, tb)), [0, 0], y)
            return y
    return P


def test_nested_calls_are_hoisted_in_evaluation_order():
    out = flat(_nested())
    assert body_text(out, "k")[2:] == [
        "exp__tmp_v0: pl.Tile[[64, 64], pl.FP32] = pl.tile.exp(ta)",
        "mul__tmp_v0: pl.Tile[[64, 64], pl.FP32] = pl.tile.mul(tb, tb)",
        "add__tmp_v0: pl.Tile[[64, 64], pl.FP32] = pl.tile.add(exp__tmp_v0, mul__tmp_v0)",
        "y__ssa_v0: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(add__tmp_v0, [0, 0], y)",
        "return y__ssa_v0",
    ]
    assert nested_calls(fn(out, "k")) == []
    roundtrip(out)


def test_no_nesting_left_in_yields_returns_and_loop_inits():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i, (a,) in pl.range(4, init_values=(pl.exp(pl.load(x, [0, 0], [64, 64])),)):
                a_out = pl.yield_(pl.add(a, pl.exp(a)))
            if n > 1:
                b = pl.yield_(pl.relu(pl.exp(a_out)))
            else:
                b = pl.yield_(a_out)
            return pl.store(pl.add(pl.exp(b), pl.mul(b, b)), [0, 0], y)

    out = flat(P)
    f = fn(out, "k")
    assert nested_calls(f) == []
    (loop,) = loops(f)
    # the loop's initial value is computed just before the loop
    assert isinstance(loop.iter_args[0].init, Var)
    i = f.body.index(loop)
    assert [s.value.op for s in f.body[i - 2:i]] == ["tile.load", "tile.exp"]
    assert f.body[i - 1].var is loop.iter_args[0].init
    # a yielded call is computed inside its body
    assert [s.value.op for s in loop.body if isinstance(s, Assign)] == ["tile.exp", "tile.add"]
    roundtrip(out)


def test_each_temporary_is_used_exactly_once():
    out = flat(_nested())
    f = fn(out, "k")
    temps = [s.var for s in walk(f.body) if isinstance(s, Assign) and "__tmp_" in s.var.name]
    assert len(temps) == 3
    for t in temps:
        uses = [a for c in (s.value for s in walk(f.body) if isinstance(s, Assign))
                if isinstance(c, Call) for a in c.args if a is t]
        assert len(uses) == 1, t.name


def test_dead_code_is_kept():
    # the pass introduces no dead temporaries, and it does not remove the user's
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64])
            unused = pl.exp(pl.relu(ta))
            y = pl.store(ta, [0, 0], y)
            return y

    out = flat(P)
    assert "unused: pl.Tile[[64, 64], pl.FP32] = pl.tile.exp(relu__tmp_v0)" in body_text(out, "k")


def test_fresh_names_avoid_user_names():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            exp__tmp_v0 = pl.load(a, [0, 0], [64, 64])
            y = pl.store(pl.exp(exp__tmp_v0), [0, 0], y)
            return y

    out = flat(P)
    assert "exp__tmp_v1: pl.Tile[[64, 64], pl.FP32] = pl.tile.exp(exp__tmp_v0)" in body_text(out, "k")
    roundtrip(out)


def test_flat_input_is_unchanged():
    once = flat(_nested())
    assert run(once, "FlattenCallExpr").as_python() == once.as_python()
    assert text(run(pl.parse(once.as_python()), "FlattenCallExpr")) == text(once)
