"""Structural equality: spans and names do not matter, structure and types do."""
import pytest

import pypto.language as pl
from pypto import dtype as dt
from pypto.errors import Span
from pypto.ir.equal import assert_structural_equal, structural_equal
from pypto.ir.nodes import (Assign, BinOp, Call, Const, Function, MemRef, MemorySpace, Param,
                            PtrType, Return, ScalarType, TensorType, TileType, Var)

BASE = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        t = pl.load(a, [0, 0], [64, 64])
        u = pl.exp(t)
        o = pl.store(u, [0, 0], o)
        return o
'''


def parse(text=BASE, **repl):
    for k, v in repl.items():
        text = text.replace(k, v)
    return pl.parse(text)


def test_names_and_spans_do_not_matter():
    a = parse()
    b = parse(BASE.replace("t = ", "tile0 = ").replace("(t)", "(tile0)").replace("\n", "\n\n"))
    assert a.functions[0].body[0].span != b.functions[0].body[0].span
    assert_structural_equal(a, b)
    assert structural_equal(a, b)


@pytest.mark.parametrize("old,new,where", [
    ("pl.exp(t)", "pl.log(t)", "body[1].value: call of tile.exp vs tile.log"),
    ("[0, 0], [64, 64])", "[0, 0], [64, 64], target_memory=pl.Mem.Mat)", "body[0]"),
    ("pl.store(u, [0, 0], o)", "pl.store(u, [0, pl.const(0, pl.INT32)], o)", "body[2].value.args[1].items[1]"),
    ("pl.exp(t)", "pl.exp(pl.exp(t))", "body[1].value.args[0]"),
    ("a: pl.Tensor[[64, 64], pl.FP32]", "a: pl.Tensor[[128, 64], pl.FP32]", "params[0]<a>.type: shape [64, 64] vs [128, 64]"),
    ("o: pl.Out[", "o: pl.InOut[", "params[1]: direction Out vs InOut"),
    ("type=pl.FunctionType.InCore", "type=pl.FunctionType.AIV", "func_type"),
])
def test_differences_are_reported_with_a_path(old, new, where):
    a, b = parse(), parse(BASE.replace(old, new))
    assert not structural_equal(a, b)
    with pytest.raises(AssertionError) as exc:
        assert_structural_equal(a, b)
    assert "Program(P).functions[0](k)" in str(exc.value)
    assert where in str(exc.value), str(exc.value)


def test_variables_must_correspond_one_to_one():
    s = Span("x.py", 1, 1)
    t = TileType((16,), dt.FP32, MemorySpace.Vec)
    x, y = Var("x", t), Var("y", t)
    f1 = Function("f", [Param(x), Param(y)], [t], [Return([Call("tile.add", [x, x], {}, t)], s)])
    x2, y2 = Var("x", t), Var("y", t)
    f2 = Function("f", [Param(x2), Param(y2)], [t], [Return([Call("tile.add", [x2, y2], {}, t)], s)])
    assert not structural_equal(f1, f2)
    with pytest.raises(AssertionError, match="does not correspond"):
        assert_structural_equal(f1, f2)
    f3 = Function("f", [Param(y2), Param(x2)], [t], [Return([Call("tile.add", [y2, y2], {}, t)], s)])
    assert_structural_equal(f1, f3)        # renamed, same structure


def test_constants_compare_value_and_dtype():
    assert structural_equal(Const(1, dt.INDEX), Const(1, dt.INDEX))
    assert not structural_equal(Const(1, dt.INDEX), Const(1, dt.INT32))
    assert not structural_equal(Const(1, dt.FP32), Const(1.0, dt.FP32))
    assert structural_equal(Const(float("nan"), dt.FP32), Const(float("nan"), dt.FP32))
    i = Var("i", ScalarType(dt.INDEX))
    assert structural_equal(BinOp("*", i, Const(2, dt.INDEX), dt.INDEX), BinOp("*", i, Const(2, dt.INDEX), dt.INDEX))
    assert not structural_equal(BinOp("*", i, Const(2, dt.INDEX), dt.INDEX), BinOp("+", i, Const(2, dt.INDEX), dt.INDEX))


def test_memref_bases_are_mapped_like_variables():
    def build(swap: bool):
        p1, p2 = Var("m0", PtrType()), Var("m1", PtrType())
        t1 = TileType((16, 16), dt.FP32, MemorySpace.Vec, MemRef(p1, 0, 1024))
        t2 = TileType((16, 16), dt.FP32, MemorySpace.Vec, MemRef(p2 if swap else p1, 1024, 1024))
        a = Var("a", TensorType((16, 16), dt.FP32, MemRef("mem_ddr_0", 0, 1024)))
        alloc = lambda: Call("tile.alloc", [Const(4096, dt.INDEX)], {"target_memory": MemorySpace.Vec}, PtrType())  # noqa: E731
        v1, v2 = Var("v1", t1), Var("v2", t2)
        body = [Assign(p1, alloc()), Assign(p2, alloc()),
                Assign(v1, Call("tile.load", [a], {}, t1)), Assign(v2, Call("tile.exp", [v1], {}, t2)),
                Return([a])]
        return Function("k", [Param(a)], [a.type], body)
    assert_structural_equal(build(False), build(False))
    with pytest.raises(AssertionError, match="memref.base"):
        assert_structural_equal(build(False), build(True))


def test_program_vs_function_and_kwargs_attrs():
    p = parse()
    assert not structural_equal(p, p.functions[0])
    c1 = Call("@k", [], {}, None, {"arg_directions": [pl.adir.input]})
    c2 = Call("@k", [], {}, None, {"arg_directions": [pl.adir.output]})
    with pytest.raises(AssertionError, match="attrs"):
        assert_structural_equal(c1, c2)
