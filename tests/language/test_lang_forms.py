"""Less common forms, each parsed, checked and round-tripped through the printer."""
import pytest

import pypto.language as pl
from pypto import dtype as dt
from pypto.errors import ParserError, TypeCheckError
from pypto.ir.equal import assert_structural_equal
from pypto.ir.nodes import For, Function, If, Program, RuntimeScope, TupleType, Yield


def roundtrip(text):
    prog = pl.parse(text, filename="forms.py")
    if isinstance(prog, Function):      # the printer prints programs: wrap a lone function
        prog = Program("W", [prog], "forms.py")
        again = pl.parse(prog.as_python())
        assert_structural_equal(prog, again)
        return prog.functions[0]
    out = prog.as_python()
    again = pl.parse(out)
    assert_structural_equal(prog, again)
    assert again.as_python() == out
    return prog


HEAD = "import pypto.language as pl\n\n"


def test_call_before_definition_and_inferred_return():
    prog = roundtrip(HEAD + '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        o = self.kern(a, o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def kern(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        o = pl.store(pl.abs(pl.load(a, [0, 0], [16, 16])), [0, 0], o)
        return o
''')
    main, kern = prog.functions
    assert main.body[0].value.type == kern.return_types[0]
    assert main.return_types == kern.return_types


def test_recursive_call_is_an_error_annotated_or_not():
    # recursion is refused outright (a return annotation would not make it compile)
    with pytest.raises(ParserError, match="recursion is not supported: 'f' calls itself") as exc:
        pl.parse(HEAD + '''
@pl.program
class P:
    @pl.function
    def f(self, a: pl.Tensor[[16, 16], pl.FP32]):
        b = self.f(a)
        return b
''')
    assert exc.value.hint and "pl.range" in exc.value.hint and "annotate" not in exc.value.hint


def test_tuple_return_and_tuple_binding():
    prog = roundtrip(HEAD + '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def two(self, a: pl.Tensor[[16, 16], pl.FP32], o1: pl.Out[pl.Tensor[[16, 16], pl.FP32]], o2: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
        t = pl.load(a, [0, 0], [16, 16])
        o1 = pl.store(t, [0, 0], o1)
        o2 = pl.store(pl.neg(t), [0, 0], o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], o1: pl.Out[pl.Tensor[[16, 16], pl.FP32]], o2: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        r: tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]] = self.two(a, o1, o2)
        self.two(a, o1, o2)
        return o1
''')
    two, main = prog.functions
    assert len(two.return_types) == 2
    assert isinstance(main.body[0].var.type, TupleType)


def test_two_carried_values_nested_if_and_manual_scope():
    prog = roundtrip(HEAD + '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore, attrs={"note": "x", "n": 3})
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]], n: pl.Scalar[pl.INT32]):
        t = pl.load(a, [0, 0], [16, 16])
        s = pl.load(a, [0, 0], [16, 16])
        for i, (x, y) in pl.range(0, 8, 2, init_values=(t, s)):
            if i % 4 == 0:
                x2 = pl.add(x, y)
                r = pl.yield_(x2)
            elif n >= 3:
                r = pl.yield_(x)
            else:
                r = pl.yield_(y)
            x3, y3 = pl.yield_(r, y)
        o = pl.store(x3, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            o = self.k(a, o, pl.const(3, pl.INT32))
        return o
''')
    k, main = prog.functions
    assert k.attrs == {"note": "x", "n": 3}
    loop = k.body[2]
    assert isinstance(loop, For) and len(loop.iter_args) == 2 and len(loop.return_vars) == 2
    assert (loop.start.value, loop.stop.value, loop.step.value) == (0, 8, 2)
    br = loop.body[0]
    assert isinstance(br, If) and isinstance(br.else_body[0], If)
    inner = br.else_body[0]
    assert inner.cond.lhs.type.dtype == dt.INT32 and inner.cond.rhs.dtype == dt.INT32   # literal 3 adopts INT32
    assert br.return_vars[0] is not inner.return_vars[0]
    assert br.else_body[-1].values == [inner.return_vars[0]]     # elif yields the inner result
    assert isinstance(loop.body[-1], Yield)
    assert isinstance(main.body[0], RuntimeScope) and main.body[0].manual


def test_printed_yield_without_targets_roundtrips():
    prog = roundtrip(HEAD + '''
@pl.program
class P:
    @pl.function
    def k(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
        for i, (acc,) in pl.range(n, init_values=(0,)):
            pl.yield_(acc + i)
        return n
''')
    loop = prog.functions[0].body[0]
    assert loop.return_vars == [] and loop.iter_args[0].init.value == 0


def test_scalar_arithmetic_and_negation():
    prog = roundtrip(HEAD + '''
@pl.function
def f(i: pl.Scalar[pl.INDEX], x: pl.Scalar[pl.FP32]) -> pl.Scalar[pl.INDEX]:
    a = (i + 1) * 2 - i // 3 % 2
    b = -i
    c = x * 2 + 0.5
    d = pl.min(a, b)
    e = 2 * 3
    g = -4
    h = x / 2.0
    i += 1
    return a
''')
    body = prog.body
    assert body[0].value.op == "-" and body[0].value.dtype == dt.INDEX
    assert body[1].value.op == "-" and body[1].value.lhs.value == 0
    c = body[2].value
    assert c.dtype == dt.FP32 and c.lhs.rhs.value == 2.0 and c.lhs.rhs.dtype == dt.FP32
    assert body[4].value.op == "*"              # literal arithmetic stays as written
    assert body[5].value.value == -4
    assert body[7].var is prog.params[0].var    # i += 1 rebinds the parameter


def test_region_writes():
    prog = roundtrip(HEAD + '''
TILE = 16

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                o[i * TILE:i * TILE + TILE, :] = pl.exp(a)
            o[0:16, 0:64] = a
            o[16:32] = a
        return o
''')
    scope = prog.functions[0].body[0]
    asm = scope.body[0].body[0].value
    assert asm.op == "tensor.assemble" and asm.args[2].items[1].value == 0
    assert [c.value for c in scope.body[2].value.args[2].items] == [16, 0]
    with pytest.raises(TypeCheckError, match="selects 32"):
        pl.parse(HEAD + '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            o[0:32, :] = a
        return o
''')


def test_other_import_spellings():
    prog = pl.parse('''
from pypto import language as L
from pypto.language import Tensor, FP32

@L.program
class P:
    @L.function(type=L.FunctionType.InCore)
    def k(self, a: Tensor[[16, 16], FP32]) -> Tensor[[16, 16], FP32]:
        return a
''')
    assert prog.functions[0].params[0].var.type.dtype == dt.FP32


def test_closure_constants_from_the_enclosing_function():
    rows, cols, scale = 32, 16, 0.25
    shape = (rows, cols)

    @pl.program
    class C:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[rows, cols], pl.FP32], o: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]):
            t = pl.load(a, [0, 0], shape)
            o = pl.store(t * scale, [0, 0], o)
            return o

    f = C.functions[0]
    assert f.params[0].var.type.shape == (32, 16)
    assert f.body[0].var.type.shape == (32, 16)
    assert f.body[1].value.args[0].args[1].value == 0.25


def test_annotation_shape_from_a_variable():
    """pl.Tensor[shape, dtype] with `shape` a list or tuple the function can see (as
    parametrised tests write it); a bad one names the variable and its value."""
    shape, tile = (32, 16), [16, 16]

    @pl.program
    class C:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[shape, pl.FP32], o: pl.Out[pl.Tensor[shape, pl.FP32]]):
            t: pl.Tile[tile, pl.FP32] = pl.load(a, [0, 0], tile)
            o = pl.store(t, [0, 0], o)
            return o

    f = C.functions[0]
    assert f.params[0].var.type.shape == (32, 16) and f.params[1].var.type.shape == (32, 16)
    assert f.body[0].var.type.shape == (16, 16)
    for bad, why in (((32, 0), r"dimension shape \(0\) is not a positive integer"),
                     (7, r"the shape must be a list like \[64, 128\]; shape is 7"),
                     ((), "the shape must be a list")):
        shape = bad
        with pytest.raises(ParserError, match=why) as exc:
            @pl.program
            class D:
                @pl.function(type=pl.FunctionType.InCore)
                def k(self, a: pl.Tensor[shape, pl.FP32]) -> pl.Tensor[shape, pl.FP32]:
                    return a
        assert "test_lang_forms.py" in str(exc.value)


def test_rebinding_with_another_type_keeps_its_name():
    """`acc = pl.add(acc, t)` after `acc = pl.load(...)`: a new Var (the memory space is
    dropped) but one variable; the text keeps the name, so ConvertToSSA carries it."""
    prog = roundtrip(HEAD + '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(x, [0, 0], [32, 64])
            for i in pl.range(1, 4):
                t = pl.load(x, [i * 32, 0], [32, 64])
                acc = pl.add(acc, t)
            pl.store(acc, [0, 0], y)
        return y
''')
    text = prog.as_python()
    assert "acc_1" not in text
    assert "acc: pl.Tile[[32, 64], pl.FP32] = pl.tile.add(acc, t)" in text
    assert "pl.tile.store(acc, [0, 0], y)" in text
