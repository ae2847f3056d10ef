"""Negative tests: the typed error, the user's file:line in the message, and a hint."""
import re

import pytest

import pypto.language as pl
from pypto.errors import (MisplacedTensorOpError, ParserError, PyptoError, TypeCheckError,
                          UnknownOpError)

HERE = "test_lang_errors.py"


def line_of(tag: str) -> int:
    with open(__file__) as f:
        for i, ln in enumerate(f, 1):
            if ln.rstrip().endswith(f"# {tag}"):
                return i
    raise AssertionError(tag)


def check(exc, cls, file, line, hint_re, msg_re=None):
    e = exc.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    text = str(e)
    assert f"{file}:{line}:" in text, text
    assert e.span is not None and e.span.file == file and e.span.line == line
    assert e.hint and re.search(hint_re, e.hint, re.I), e.hint
    assert "hint:" in text
    if msg_re:
        assert re.search(msg_re, e.message, re.I), e.message
    # never an internal traceback chained onto ours
    assert e.__cause__ is None


KERNEL = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], h: pl.Tensor[[64, 64], pl.FP16],
          o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        t = pl.load(a, [0, 0], [64, 64])
        th = pl.load(h, [0, 0], [64, 64])
        small = pl.load(a, [0, 0], [32, 32])
{body}
        return o
'''
BODY_LINE = 12      # first line of {body} in KERNEL


def parse_body(body: str):
    body = "\n".join("        " + ln for ln in body.strip("\n").splitlines())
    return pl.parse(KERNEL.format(body=body), filename="/work/user/kern.py")


def test_unknown_op_suggests_closest():
    with pytest.raises(UnknownOpError) as exc:
        parse_body("x = pl.row_summ(t, t)")
    check(exc, UnknownOpError, "kern.py", BODY_LINE, r"pl\.row_sum", r"pl\.row_summ is not an operator")


def test_unknown_qualified_op():
    with pytest.raises(UnknownOpError) as exc:
        parse_body("x = pl.tile.lod(a, [0, 0], [64, 64])")
    check(exc, UnknownOpError, "kern.py", BODY_LINE, r"pl\.tile\.load", r"pl\.tile\.lod is not an operator")


def test_misplaced_tensor_op_in_orchestration():
    with pytest.raises(MisplacedTensorOpError) as exc:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                     out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
                out[:] = pl.add(a, b)  # TAG-MISPLACED
                return out
    line = line_of("TAG-MISPLACED")
    check(exc, MisplacedTensorOpError, HERE, line, r"with pl\.at\(level=pl\.Level\.CORE_GROUP\)",
          rf"pl\.add.*line {line}")


def test_misplaced_sugar_and_allowed_orchestration_forms():
    with pytest.raises(MisplacedTensorOpError) as exc:
        @pl.program
        class Bad2:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
                t = pl.create_tensor([64, 64], dtype=pl.FP32)
                n = 4 * 16
                out[:] = a  # TAG-MISPLACED-2
                return out
    check(exc, MisplacedTensorOpError, HERE, line_of("TAG-MISPLACED-2"), r"pl\.at", r"assemble")


def test_wrong_arity():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x = pl.add(t, t, t)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"pl\.add\(a, b\)", r"takes 2")


def test_shape_mismatch():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x = t\ny = pl.sub(t, small)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE + 1, r"equal shapes|broadcast", r"shape mismatch")


def test_col_expand_needs_a_row_vector():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("s = pl.row_sum(t, t)\nx = pl.col_expand(t, s)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE + 1, r"broadcasts v to target's shape",
          r"tile\.col_expand: vector operand must have shape \[1, 64\], got \[64, 1\]")


def test_create_tensor_in_a_kernel_is_a_local_tensor():
    """(It lives on chip: tests/ops/test_ops_local_tensor.py runs it.)"""
    prog = parse_body("x = pl.create_tensor([64, 64], dtype=pl.FP32)")
    ops = [getattr(getattr(s, "value", None), "op", None) for s in prog.functions[0].body]
    assert "tensor.create" in ops


def test_float_only_unary_op_on_ints():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("i = pl.cast(t, pl.INT32)\nx = pl.sqrt(i)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE + 1, r"pl\.sqrt\(pl\.cast\(x, pl\.FP32\)\)",
          r"needs a floating-point operand, got int32")


def test_dtype_mismatch():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x = pl.mul(t, th)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"pl\.cast", r"dtype mismatch fp32 vs fp16")


def test_undefined_name():
    with pytest.raises(ParserError) as exc:
        parse_body("x = pl.exp(tt)")
    check(exc, ParserError, "kern.py", BODY_LINE, r"'t'|'th'", r"name 'tt' is not defined")


def test_unsupported_while():
    with pytest.raises(ParserError) as exc:
        parse_body("while True:\n    pass")
    check(exc, ParserError, "kern.py", BODY_LINE, r"pl\.range", r"`while True:` never ends")


def test_load_into_left():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Left)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"pl\.move", r"Vec or Mat")


def test_bad_annotation():
    with pytest.raises(ParserError) as exc:
        pl.parse(
            "import pypto.language as pl\n"
            "@pl.program\n"
            "class P:\n"
            "    @pl.function\n"
            "    def k(self, a: pl.Tensor[64, pl.FP32]):\n"
            "        return a\n", filename="ann.py")
    check(exc, ParserError, "ann.py", 5, r"pl\.Tensor\[\[64, 128\], pl\.FP16\]", r"bad type annotation")


def test_bad_annotation_in_body_and_dtype():
    with pytest.raises(ParserError) as exc:
        parse_body("x: pl.Tile[[64, 64], pl.FP99] = t")
    check(exc, UnknownOpError, "kern.py", BODY_LINE, r"pl\.FP\d+", r"pl\.FP99")


def test_annotation_disagrees_with_value():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x: pl.Tile[[32, 64], pl.FP32] = pl.exp(t)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"annotation", r"shape \[64, 64\]")


def test_row_sum_on_tile_without_scratch():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("s = pl.row_sum(t)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"create_tile", r"scratch")


def test_lambda_and_comprehension():
    with pytest.raises(ParserError) as exc:
        parse_body("f = lambda v: v")
    check(exc, ParserError, "kern.py", BODY_LINE, r"inline", r"Lambda")
    with pytest.raises(ParserError) as exc:
        parse_body("x = t\noffs = [i for i in pl.range(2)]")
    check(exc, ParserError, "kern.py", BODY_LINE + 1, r"comprehension", r"ListComp")


def test_star_args():
    with pytest.raises(ParserError) as exc:
        parse_body("x = pl.add(*[t, t])")
    check(exc, ParserError, "kern.py", BODY_LINE, r"explicitly", r"star")


def test_augmented_assign_on_tile():
    with pytest.raises(ParserError) as exc:
        parse_body("t += t")
    check(exc, ParserError, "kern.py", BODY_LINE, r"t = pl\.<op>", r"augmented")


def test_python_range_and_yield_misuse():
    with pytest.raises(ParserError) as exc:
        parse_body("for i in range(4):\n    pass")
    check(exc, ParserError, "kern.py", BODY_LINE, r"pl\.range", r"range")
    with pytest.raises(ParserError) as exc:
        parse_body("for i, (c,) in pl.range(4, init_values=(t,)):\n    c2 = pl.exp(c)")
    check(exc, ParserError, "kern.py", BODY_LINE, r"last statement", r"must end with")
    with pytest.raises(ParserError) as exc:
        parse_body("x = t\nr = pl.yield_(x)\ny = t")
    check(exc, ParserError, "kern.py", BODY_LINE + 1, r"end of the body", r"last statement")


def test_unknown_self_function_and_call_arity():
    with pytest.raises(ParserError) as exc:
        @pl.program
        class P2:
            @pl.function(type=pl.FunctionType.InCore)
            def kern(self, a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
                return a

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[16, 16], pl.FP32]):
                b = self.kernn(a)  # TAG-SELF
                return b
    check(exc, ParserError, HERE, line_of("TAG-SELF"), r"self\.kern\b", r"no function 'kernn'")
    with pytest.raises(TypeCheckError) as exc:
        @pl.program
        class P3:
            @pl.function(type=pl.FunctionType.InCore)
            def kern(self, a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
                return a

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[16, 16], pl.FP32]):
                b = self.kern(a, a)  # TAG-ARITY
                return b
    check(exc, TypeCheckError, HERE, line_of("TAG-ARITY"), r"def kern\(a\)", r"takes 1 arguments, got 2")


def test_scalar_dtype_mismatch_and_missing_param_annotation():
    with pytest.raises(TypeCheckError) as exc:
        pl.parse(
            "import pypto.language as pl\n"
            "@pl.function\n"
            "def f(x: pl.Scalar[pl.INT32], y: pl.Scalar[pl.FP32]):\n"
            "    z = x + y\n"
            "    return z\n", filename="s.py")
    check(exc, TypeCheckError, "s.py", 4, r"pl\.cast", r"dtype mismatch")
    # signed integers of two widths meet in the wider one (index wins a 64-bit tie)
    f = pl.parse("import pypto.language as pl\n"
                 "@pl.function\n"
                 "def f(x: pl.Scalar[pl.INT32], y: pl.Scalar[pl.INT64], i: pl.Scalar[pl.INDEX]):\n"
                 "    z = x + y\n"
                 "    w = y * i\n"
                 "    return z\n", filename="s.py")
    assert [s.var.type.dtype for s in f.body[:2]] == [pl.INT64, pl.INDEX]
    with pytest.raises(ParserError) as exc:
        pl.parse(
            "import pypto.language as pl\n"
            "@pl.function\n"
            "def f(x):\n"
            "    return x\n", filename="s.py")
    check(exc, ParserError, "s.py", 3, r"pl\.Tensor", r"needs a type annotation")


def test_errors_in_dumps_point_to_the_user_source():
    text = (
        "import pypto.language as pl\n"
        "@pl.program\n"
        "class P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        "    def k(a: pl.Tensor[[16, 16], pl.FP32]):  # @model.py:10:5\n"
        "        t: pl.Tile[[16, 16], pl.FP32] = pl.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Acc)  # @model.py:12:9\n"
        "        return a\n")
    with pytest.raises(TypeCheckError) as exc:
        pl.parse(text, filename="03_after_X.py")
    check(exc, TypeCheckError, "model.py", 12, r"pl\.move", r"Vec or Mat")


def test_syntax_error_is_a_parser_error():
    with pytest.raises(ParserError) as exc:
        pl.parse("import pypto.language as pl\n@pl.program\nclass P:\n    def (:\n", filename="syn.py")
    assert "syn.py:4:" in str(exc.value) and exc.value.hint


def test_all_errors_are_pypto_errors():
    for body in ("x = pl.foo(t)", "x = a.shape", "x = t[0:16:2, :]", "x = pl.add(t, 2.0, extra=1)",
                 "with open('f'):\n    pass", "x = pl.min(t, t)", "x, *y = t, t",
                 "x = pl.load(a, [0, 0], [128, 64])", "x = pl.cast(t)", "pl.at(level=pl.Level.CORE_GROUP)",
                 "x = 1 if t else 2", "x = t and t", "x = t < t", "import os", "x = print(t)",
                 "x = pl.matmul(t, small)", "o[0:32, :] = t", "with pl.at(level=pl.Level.HOST):\n    pass"):
        with pytest.raises(PyptoError) as exc:
            parse_body(body)
        assert exc.value.span is not None and exc.value.span.file == "kern.py", body
        assert "internal parser error" not in str(exc.value), (body, str(exc.value))
        assert exc.value.hint, (body, str(exc.value))


def test_qualified_op_on_the_wrong_level():
    with pytest.raises(TypeCheckError) as exc:
        parse_body("x = pl.tensor.exp(t)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE, r"pl\.tile\.exp", r"works on tensors")


def test_reserved_names_and_division_by_zero():
    with pytest.raises(ParserError) as exc:
        parse_body("pl = pl.exp(t)")
    check(exc, ParserError, "kern.py", BODY_LINE, r"another", r"reserved")
    with pytest.raises(ParserError) as exc:
        parse_body("for i in pl.range(4):\n    j = i // 0")
    check(exc, ParserError, "kern.py", BODY_LINE + 1, r"non-zero", r"division by zero")
