"""Positions in printed IR (`<ir>`, what build steps parse) map back to the user's
source: a line's own `# @file:line:col` marker, else the nearest enclosing one (host
statements print none), so no error and no IR node read from step text names `<ir>`."""
import pytest

import pypto.language as pl
from pypto.errors import ParserError, Span, TypeCheckError
from pypto.ir.nodes import Assign, InCoreScope
from pypto.ir.printer import print_program
from pypto.language.parser.source import SourceMap, remap_error

IR = '''\
# pypto.program: P
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:  # @user.py:10:5
        t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])  # @user.py:11:9
        o_1: pl.Tensor[[64, 64], pl.FP32] = pl.store(t, [0, 0], o)  # @user.py:12:9
        return o_1  # @user.py:13:9

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:  # @user.py:20:5
        for i in pl.range(2):
            if i == 0:
                o_1: pl.Tensor[[64, 64], pl.FP32] = self.k(a, o)
            else:
                o_1: pl.Tensor[[64, 64], pl.FP32] = self.k(a, o)
        with pl.at(level=pl.Level.CORE_GROUP):  # @user.py:30:9
            x: pl.Tensor[[64, 64], pl.FP32] = pl.exp(a)  # @user.py:31:13
            y: pl.Tensor[[64, 64], pl.FP32] = pl.exp(x)
            for j in pl.range(2):  # @user.py:33:13
                if j == 0:  # @user.py:34:17
                    z: pl.Tensor[[64, 64], pl.FP32] = pl.exp(x)
                else:
                    z: pl.Tensor[[64, 64], pl.FP32] = pl.exp(y)
        return o
'''


def line(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return hits[nth]


def test_own_marker_wins():
    m = SourceMap(IR)
    assert m.at(line(IR, "t: pl.Tile")) == Span("user.py", 11, 9)


def test_host_statement_maps_to_its_functions_def_line():
    m = SourceMap(IR)
    assert m.at(line(IR, "for i in pl.range(2)")) == Span("user.py", 20, 5)
    assert m.at(line(IR, "self.k(a, o)", 0)) == Span("user.py", 20, 5)
    assert m.at(line(IR, "self.k(a, o)", 1)) == Span("user.py", 20, 5)     # in an else branch
    assert m.at(line(IR, "        return o\n".strip(), -1)) == Span("user.py", 20, 5)


def test_unmarked_device_statement_maps_to_its_enclosing_header():
    m = SourceMap(IR)
    assert m.at(line(IR, "y: pl.Tensor")) == Span("user.py", 30, 9)      # the pl.at region
    assert m.at(line(IR, "pl.exp(x)", 1)) == Span("user.py", 34, 17)      # the if's then branch
    assert m.at(line(IR, "pl.exp(y)")) == Span("user.py", 34, 17)         # ... and its else branch


def test_lines_outside_every_function_have_no_user_position():
    m = SourceMap(IR)
    assert m.at(line(IR, "class P:")) is None
    assert m.at(1) is None and m.at(10_000) is None
    assert SourceMap("x = 1\n").at(1) is None


def test_remap_error_points_an_ir_position_at_the_user_file():
    err = TypeCheckError("tensor.full cannot run in an orchestration",
                         Span("<ir>", line(IR, "self.k(a, o)"), 17), "put it in a pl.at region")
    assert remap_error(err, IR.encode()) is err
    assert err.span == Span("user.py", 20, 5)
    assert str(err).startswith("user.py:20:5: error: tensor.full cannot run")
    assert str(err).endswith("\n  hint: put it in a pl.at region")
    # a user position, another text's name, or a line no marker encloses: untouched
    for span in (Span("user.py", 3, 1), Span("<jit>", 14, 1), Span("<ir>", 5, 1)):
        e = TypeCheckError("m", span)
        remap_error(e, IR)
        assert e.span == span and str(e) == f"{span}: error: m"


def test_nodes_parsed_from_ir_text_carry_user_spans():
    prog = pl.parse(IR, filename="<ir>")
    main = prog.get("main")
    spans = [s.span for s in main.body]
    assert all(s.file == "user.py" for s in spans), spans
    assert spans[0] == Span("user.py", 20, 5)                 # the host loop: the def line
    scope = next(s for s in main.body if isinstance(s, InCoreScope))
    y = next(s for s in scope.body if isinstance(s, Assign) and s.var.name == "y")
    assert y.span == Span("user.py", 30, 9)


def test_parse_errors_on_host_lines_of_ir_text_name_the_user_file():
    bad = IR.replace("for i in pl.range(2):", "for i in pl.range(2.5):")
    with pytest.raises(ParserError) as e:
        pl.parse(bad, filename="<ir>")
    assert e.value.span == Span("user.py", 20, 5) and "<ir>" not in str(e.value)


def test_a_users_own_dump_file_keeps_its_own_line_numbers(tmp_path):
    # a dump the user reads (a real file name, not `<ir>`) reports positions in that file
    bad = IR.replace("for i in pl.range(2):", "for i in pl.range(2.5):")
    path = tmp_path / "05_after_X.py"
    path.write_text(bad)
    with pytest.raises(ParserError) as e:
        pl.loads(path)
    assert e.value.span.file == "05_after_X.py" and e.value.span.line == line(bad, "pl.range(2.5)")


def test_printing_after_the_mapping_does_not_add_locations_to_host_statements():
    prog = pl.parse(IR, filename="<ir>")
    text = print_program(prog)
    host = [ln for ln in text.splitlines() if "self.k(a, o)" in ln or "for i in" in ln]
    assert host and all("# @" not in ln for ln in host)
    assert pl.parse(text, filename="<ir>").get("main") is not None
