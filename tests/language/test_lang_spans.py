"""Source locations: the user's file basename, line and 1-based column."""
import pypto.language as pl
from pypto.errors import Span
from pypto.ir.nodes import Assign, For
from pypto.ir.visit import walk

HERE = "test_lang_spans.py"


def line_of(tag: str) -> int:
    with open(__file__) as f:
        for i, ln in enumerate(f, 1):
            if ln.rstrip().endswith(f"# {tag}"):
                return i
    raise AssertionError(tag)


def test_decorated_program_spans():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)  # TAG-DECO
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):  # TAG-DEF
            t = pl.load(a, [0, 0], [16, 16])  # TAG-LOAD
            for i in pl.range(2):  # TAG-FOR
                t = pl.exp(t)  # TAG-EXP
            o = pl.store(t, [0, 0], o)
            return o

    f = P.functions[0]
    assert P.source == HERE
    assert f.span == Span(HERE, line_of("TAG-DEF"), 9)
    load = f.body[0]
    assert load.span == Span(HERE, line_of("TAG-LOAD"), 13)
    assert load.value.span.line == line_of("TAG-LOAD")
    assert load.var.span.line == line_of("TAG-LOAD")
    loop = f.body[1]
    assert isinstance(loop, For) and loop.span == Span(HERE, line_of("TAG-FOR"), 13)
    assert loop.body[0].span == Span(HERE, line_of("TAG-EXP"), 17)
    assert f.params[0].var.span.file == HERE


def test_spans_survive_print_and_parse():
    @pl.program
    class Q:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 16])  # TAG-Q-LOAD
            o = pl.store(t, [0, 0], o)
            return o

    text = Q.as_python()
    assert f"# @{HERE}:{line_of('TAG-Q-LOAD')}:13" in text
    again = pl.parse(text, filename="dump.py")
    assert again.functions[0].body[0].span == Span(HERE, line_of("TAG-Q-LOAD"), 13)
    assert again.functions[0].span == Q.functions[0].span
    assert again.source == HERE


def test_markers_in_text_and_fallback_positions():
    text = (
        "import pypto.language as pl\n"
        "\n"
        "@pl.program\n"
        "class P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        "    def k(a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):  # @user_kernels.py:40:5\n"
        "        t = pl.load(a, [0, 0], [16, 16])  # @user_kernels.py:42:9\n"
        "        s = pl.exp(t)\n"
        "        o = pl.store(t, [0, 0], o)\n"
        "        return o  # @user_kernels.py:44:9\n"
    )
    f = pl.parse(text, filename="/tmp/x/dump_07.py").functions[0]
    assert f.span == Span("user_kernels.py", 40, 5)
    assert f.body[0].span == Span("user_kernels.py", 42, 9)
    # no marker: the statement's own place in the parsed text
    assert f.body[1].span == Span("dump_07.py", 8, 9)
    assert f.body[2].span == Span("dump_07.py", 9, 9)
    assert f.body[3].span == Span("user_kernels.py", 44, 9)


def test_indented_text_keeps_columns():
    text = (
        "    import pypto.language as pl\n"
        "    @pl.function\n"
        "    def f(x: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n"
        "        y = x + 1\n"
        "        return y\n"
    )
    fn = pl.parse(text, filename="ind.py")
    assert fn.body[0].span == Span("ind.py", 4, 9)


def test_every_statement_has_a_span():
    import lang_programs as lp
    for build in lp.ALL:
        prog = build()
        for f in prog.functions:
            assert f.span is not None and f.span.file == "lang_programs.py"
            for s in walk(f.body):
                assert s.span is not None and s.span.file == "lang_programs.py", (f.name, s)
                if isinstance(s, Assign):
                    assert s.var.span is not None
