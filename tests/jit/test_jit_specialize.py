"""The specialize stage: @pl.jit source + argument metadata -> @pl.program source text."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from jit_helpers import code_lines, marker_of, parse_or_skip, pl, where
from pypto.errors import ParserError, PyptoError
from pypto.jit import RUNTIME, SpecializeError, specialize

HERE = __file__
FILE = Path(HERE).name
SAMPLE = Path("/work/shared/reference/samples/quickstart_00_frontend.py")

ROWS = 64
COLS = 128
SCALE = 0.25
DEBUG = False
M = pl.dynamic("M")


# ----------------------------------------------------------------------------- kernels
@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def softmax(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 64])
        scratch = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        mx = pl.row_max(t, scratch)
        e = pl.exp(pl.row_expand_sub(t, mx))
        s = pl.row_sum(e, scratch)
        pl.store(pl.row_expand_div(e, s), [0, 0], y)
    return y


@pl.jit.incore
def matmul_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))
    pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def bias_kernel(x: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor], scale: pl.FP32 = 1.0):
    t = pl.load(x, [0, 0], [64, 64])
    bv = pl.load(bias, [0, 0], [1, 64])
    pl.store(pl.mul(pl.col_expand_add(t, bv), scale), [0, 0], y)
    return y


@pl.jit
def fused_linear(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)
    mm_out = matmul_kernel(a, b, mm_out)
    out = bias_kernel(mm_out, y=out, bias=bias)
    return out


@pl.jit
def shapes(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    M_, N_ = a.shape
    K_ = b.shape[-1]
    whole = pl.create_tensor(a.shape, dtype=b.dtype)
    rank = len(b.shape)
    tmp = pl.create_tensor([M_, K_], dtype=a.dtype)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sub(a, b)
    return out


@pl.jit
def scaled(x: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.INDEX, alpha: pl.Scalar[pl.FP32],
           flag: bool = True):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 16, 0], [16, 64])
            pl.store(pl.mul(t, alpha), [i * 16, 0], out)
    if n > 2:
        total = n * 2
    else:
        total = n + ROWS
    if flag:
        extra = n * 3
    if DEBUG:
        extra = n * 5
    return out


@pl.jit
def rebinds(x: pl.Tensor, n: pl.INDEX):
    n = n + 1
    return x


@pl.jit
def dyn_rows(a: pl.Tensor[[M, COLS], pl.FP32], out: pl.Out[pl.Tensor[[M, COLS], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def dyn_value(a: pl.Tensor[[M, COLS], pl.FP32]):
    rows, cols = a.shape
    first = a.shape[0]
    return a


@pl.jit
def dyn_local(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    N = pl.dynamic("N")
    a.bind_dynamic(0, N)
    out.bind_dynamic(0, N)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit
def uses_consts(a: pl.Tensor[[ROWS, COLS], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(ROWS // 16):
            t = pl.load(a, [i * 16, 0], [16, COLS])
            pl.store(pl.mul(t, SCALE), [i * 16, 0], out)
    return out


@pl.jit(auto_scope=False)
def manual(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
    return out


@pl.jit.inline
def twice(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y[:] = pl.add(x, x)
    return y


@pl.jit
def with_inline(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = twice(a, out)
    return out


@pl.jit
def bad_try(a: pl.Tensor):
    try:
        pass
    except Exception:
        pass
    return a


@pl.jit
def no_return(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A docstring is dropped."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)


@pl.jit
def chunked(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    R, C = a.shape
    for i in pl.range(R // 128):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1"):
            ta = pl.load(a, [i * 128, 0], [128, C])
            tb = pl.load(b, [i * 128, 0], [128, C])
            pl.store(pl.add(ta, tb), [i * 128, 0], c)
    return c


@pl.jit
def carry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc0 = pl.load(a, [0, 0], [32, 32])
        for k, (acc,) in pl.range(4, init_values=(acc0,)):
            nxt = pl.add(acc, pl.load(a, [0, 0], [32, 32]))
            res = pl.yield_(nxt)
        pl.store(res, [0, 0], out)
    return out


@pl.jit.incore
def add_rows(x: pl.Tensor, y: pl.InOut[pl.Tensor], i: pl.INDEX):
    t = pl.load(x, [i * 32, 0], [32, 64])
    pl.store(pl.add(t, 1.0), [i * 32, 0], y)
    return y


@pl.jit
def rows_loop(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        y = add_rows(x, y, i * 1)
    return y


def t(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def fn_lines(text: str, name: str) -> list[str]:
    """The decorator, def and body lines of one function of a specialized program."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith(f"def {name}("))
    end = start + 1
    while end < len(lines) and lines[end].startswith("        "):
        end += 1
    return lines[start - 1:end]


# ----------------------------------------------------------------------------- quickstart
def test_quickstart_matches_reference_frontend():
    text = add.specialize(t(128, 128), t(128, 128), t(128, 128))
    lines = code_lines(text)
    assert lines[:5] == ["# pypto.program: _jit_add", "import pypto.language as pl", "",
                         "@pl.program", "class _jit_add:"]
    assert lines[5] == "    @pl.function(type=pl.FunctionType.Orchestration)"
    sig = ("    def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], "
           "pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> "
           "pl.Tensor[[128, 128], pl.FP32]:")
    assert lines[6] == sig
    assert lines[7:] == ["        with pl.at(level=pl.Level.CORE_GROUP):",
                         "            out[:] = pl.add(a, b)",
                         "        return out"]
    if SAMPLE.exists():                     # the reference's own signature line
        ref = [ln for ln in SAMPLE.read_text().splitlines() if ln.strip().startswith("def add(")]
        assert ref == [sig]


def test_quickstart_markers_point_at_this_file():
    text = add.specialize(t(128, 128), t(128, 128), t(128, 128))
    lines = text.splitlines()
    assert marker_of(lines[6]) == (FILE, *where(HERE, "def add(a: pl.Tensor"))
    assert marker_of(lines[7]) == (FILE, where(HERE, "out[:] = pl.add(a, b)")[0] - 1, 5)
    assert marker_of(lines[8]) == (FILE, *where(HERE, "out[:] = pl.add(a, b)"))
    ret_line = where(HERE, "out[:] = pl.add(a, b)")[0] + 1
    assert marker_of(lines[9]) == (FILE, ret_line, 5)
    for line in lines[6:]:                  # every def and statement line carries one
        marker_of(line)


def test_spec_is_json_and_specialize_is_pure():
    spec = add.spec(t(128, 128), t(128, 128), t(128, 128))
    assert spec["program"] == "_jit_add"
    assert spec["args"] == {n: {"kind": "tensor", "shape": [128, 128], "dtype": "fp32"}
                            for n in ("a", "b", "out")}
    (fn,) = spec["functions"]
    assert fn["name"] == "add" and fn["kind"] == "orchestration" and fn["file"] == FILE
    assert fn["line"] == where(HERE, "def add(a: pl.Tensor")[0] - 1     # the decorator line
    assert fn["col_offset"] == 0 and fn["source"].startswith("@pl.jit\ndef add(")
    again = json.loads(json.dumps(spec))
    assert specialize(again) == specialize(spec)


def test_deterministic():
    args = (t(64, 64), t(64, 64), t(1, 64), t(64, 64))
    texts = {fused_linear.specialize(*args) for _ in range(3)}
    specs = {json.dumps(fused_linear.spec(*args), sort_keys=True) for _ in range(3)}
    assert len(texts) == 1 and len(specs) == 1


def test_dtypes_from_torch_and_numpy():
    text = add.specialize(t(16, 32, dtype=torch.float16), t(16, 32, dtype=torch.bfloat16),
                          np.zeros((16, 32), dtype=np.int32))
    sig = code_lines(text)[6]
    assert "a: pl.Tensor[[16, 32], pl.FP16]" in sig
    assert "b: pl.Tensor[[16, 32], pl.BF16]" in sig
    assert "out: pl.Out[pl.Tensor[[16, 32], pl.INT32]]" in sig
    assert add.spec(t(2, 2, dtype=torch.bfloat16), t(2, 2), t(2, 2))["args"]["a"]["dtype"] == "bfloat16"


# ----------------------------------------------------------------------------- kernels
def test_tile_level_kernel():
    text = softmax.specialize(t(64, 64), t(64, 64))
    body = code_lines(text)[6:]
    assert body[0] == ("    def softmax(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out["
                       "pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:")
    assert ("            scratch = pl.create_tile([64, 64], dtype=pl.FP32, "
            "target_memory=pl.Mem.Vec)") in body
    assert "            pl.store(pl.row_expand_div(e, s), [0, 0], y)" in body
    store = next(ln for ln in text.splitlines() if "pl.store(" in ln)
    assert marker_of(store) == (FILE, *where(HERE, "pl.store(pl.row_expand_div(e, s)"))


def test_incore_deps_and_create_tensor_intermediates():
    text = fused_linear.specialize(t(64, 64), t(64, 64), t(1, 64), t(64, 64))
    lines = code_lines(text)
    defs = [ln.strip() for ln in lines if ln.strip().startswith("def ")]
    assert [d.split("(")[0] for d in defs] == ["def matmul_kernel", "def bias_kernel",
                                               "def fused_linear"]        # deps first
    mm = fn_lines(text, "matmul_kernel")
    assert code_lines("\n".join(mm))[0] == "    @pl.function(type=pl.FunctionType.InCore)"
    # InCore kernels are SubWorkers: no `self`, as the printer writes them
    assert code_lines("\n".join(mm))[1] == (
        "    def matmul_kernel(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], "
        "pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:")
    bias_sig = code_lines("\n".join(fn_lines(text, "bias_kernel")))[1]
    assert "bias: pl.Tensor[[1, 64], pl.FP32]" in bias_sig
    assert "scale: pl.Scalar[pl.FP32]" in bias_sig and "= 1.0" not in bias_sig
    entry = code_lines("\n".join(fn_lines(text, "fused_linear")))
    assert entry[2:] == [
        "        mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)",
        "        mm_out = self.matmul_kernel(a, b, mm_out)",
        # keywords become positional, the default fills the rest
        "        out = self.bias_kernel(mm_out, bias, out, 1.0)",
        "        return out"]
    dep_def = next(ln for ln in text.splitlines() if "def matmul_kernel(" in ln)
    assert marker_of(dep_def) == (FILE, *where(HERE, "def matmul_kernel("))


def test_inline_dep_and_decorator_options():
    text = with_inline.specialize(t(32, 32), t(32, 32))
    inl = code_lines("\n".join(fn_lines(text, "twice")))
    assert inl[0] == "    @pl.function(type=pl.FunctionType.Inline)"
    # Inline deps keep `self` and lose Out/InOut (they are spliced into the caller)
    assert inl[1] == ("    def twice(self, x: pl.Tensor[[32, 32], pl.FP32], "
                      "y: pl.Tensor[[32, 32], pl.FP32]) -> pl.Tensor[[32, 32], pl.FP32]:")
    assert "            out = self.twice(a, out)" in code_lines(text)
    text = manual.specialize(t(32, 32), t(32, 32))
    assert ("    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)"
            in code_lines(text))


# ----------------------------------------------------------------------------- folding
def test_shape_folding():
    text = shapes.specialize(t(32, 64), t(32, 64), t(32, 64))
    body = code_lines(text)[7:]
    assert body[:6] == ["        M_ = 32", "        N_ = 64", "        K_ = 64",
                        "        whole = pl.create_tensor((32, 64), dtype=pl.FP32)", "        rank = 2",
                        "        tmp = pl.create_tensor([32, 64], dtype=pl.FP32)"]   # M_, K_ folded
    marks = [marker_of(ln) for ln in text.splitlines()[7:9]]
    assert marks[0] == marks[1] == (FILE, *where(HERE, "M_, N_ = a.shape"))


def test_scalar_substitution_and_branch_folding():
    text = scaled.specialize(t(64, 64), t(64, 64), 4, 0.5)
    lines = code_lines(text)
    assert lines[6] == ("    def scaled(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out["
                        "pl.Tensor[[64, 64], pl.FP32]], n: pl.Scalar[pl.INDEX], alpha: "
                        "pl.Scalar[pl.FP32], flag: pl.Scalar[pl.BOOL]) -> "
                        "pl.Tensor[[64, 64], pl.FP32]:")
    assert lines[7:] == [
        "        for i in pl.range(4):",
        "            with pl.at(level=pl.Level.CORE_GROUP):",
        "                t = pl.load(x, [i * 16, 0], [16, 64])",
        "                pl.store(pl.mul(t, 0.5), [i * 16, 0], out)",
        "        total = 4 * 2",                      # `if n > 2` folded: n is 4
        "        extra = 4 * 3",                      # `if flag` folded: default True
        "        return out"]                         # `if DEBUG` folded away
    kept = text.splitlines()[11]
    assert marker_of(kept) == (FILE, *where(HERE, "total = n * 2"))
    small = code_lines(scaled.specialize(t(64, 64), t(64, 64), 1, 0.5, flag=False))
    assert "        total = 1 + 64" in small and not any("extra" in ln for ln in small)


def test_runtime_scalar_stays_a_parameter():
    spec = scaled.spec(t(64, 64), t(64, 64), n=RUNTIME, alpha=2.0)
    assert spec["args"]["n"] == {"kind": "scalar", "dtype": "index", "value": None}
    lines = code_lines(specialize(spec))
    assert "        for i in pl.range(n):" in lines
    assert "        if n > 2:" in lines and "        else:" in lines
    assert "                pl.store(pl.mul(t, 2.0), [i * 16, 0], out)" in lines


def test_rebound_scalar_gets_its_value_first():
    text = rebinds.specialize(t(8, 8), 3)
    lines = code_lines(text)
    assert lines[7:] == ["        n = 3", "        n = n + 1", "        return x"]
    assert marker_of(text.splitlines()[7]) == (FILE, *where(HERE, "def rebinds("))


def test_module_constants_substituted():
    text = uses_consts.specialize(t(ROWS, COLS), t(ROWS, COLS))
    lines = code_lines(text)
    assert lines[6] == ("    def uses_consts(self, a: pl.Tensor[[64, 128], pl.FP32], out: "
                        "pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:")
    assert "            for i in pl.range(64 // 16):" in lines
    assert "                t = pl.load(a, [i * 16, 0], [16, 128])" in lines
    assert "                pl.store(pl.mul(t, 0.25), [i * 16, 0], out)" in lines
    assert uses_consts.spec(t(ROWS, COLS), t(ROWS, COLS))["constants"] == {
        "COLS": 128, "ROWS": 64, "SCALE": 0.25}


def test_dynamic_dims_hoisted():
    text = dyn_rows.specialize(t(48, COLS), t(48, COLS))
    lines = code_lines(text)
    assert lines[:6] == ["# pypto.program: _jit_dyn_rows", "import pypto.language as pl", "",
                         'M = pl.dynamic("M")', "", "@pl.program"]
    assert ("    def dyn_rows(self, a: pl.Tensor[[M, 128], pl.FP32], out: pl.Out[pl.Tensor["
            "[M, 128], pl.FP32]]) -> pl.Tensor[[M, 128], pl.FP32]:") in lines
    spec = dyn_rows.spec(t(48, COLS), t(48, COLS))
    assert spec["args"]["a"]["shape"] == ["M", 128] and spec["dynamic"] == {"M": "M"}
    assert dyn_rows.specialize(t(96, COLS), t(96, COLS)) == text


def test_dynamic_dim_as_a_value():
    # `M, cols = a.shape` with a dynamic first dim: the dim's own name stands for it
    text = dyn_value.specialize(t(48, COLS))
    lines = code_lines("\n".join(fn_lines(text, "dyn_value")))
    assert lines[2:] == ["        rows = M", "        cols = 128", "        first = M",
                         "        return a"]


def test_dynamic_dims_declared_in_the_body():
    text = dyn_local.specialize(t(48, 16), t(48, 16))
    lines = code_lines(text)
    assert 'N = pl.dynamic("N")' in lines[:5]
    assert ("    def dyn_local(self, a: pl.Tensor[[N, 16], pl.FP32], out: pl.Out[pl.Tensor["
            "[N, 16], pl.FP32]]) -> pl.Tensor[[N, 16], pl.FP32]:") in lines
    assert not any("bind_dynamic" in ln or "pl.dynamic" in ln for ln in lines[6:])


def test_loops_scopes_and_carries_in_the_printer_spelling():
    lines = code_lines(chunked.specialize(t(512, 128), t(512, 128), t(512, 128)))
    assert lines[7:] == [
        "        R = 512", "        C = 128",
        "        for i in pl.range(512 // 128):",
        '            with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1"):',
        "                ta = pl.load(a, [i * 128, 0], [128, 128])",
        "                tb = pl.load(b, [i * 128, 0], [128, 128])",
        "                pl.store(pl.add(ta, tb), [i * 128, 0], c)",
        "        return c"]
    lines = code_lines(carry.specialize(t(32, 32), t(32, 32)))
    assert "            for k, (acc,) in pl.range(4, init_values=(acc0,)):" in lines
    assert "                res = pl.yield_(nxt)" in lines


def test_docstring_dropped_and_no_return_annotation():
    lines = code_lines(no_return.specialize(t(8, 8), t(8, 8)))
    assert lines[6].endswith("out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):")
    assert not any("docstring" in ln for ln in lines)


# ----------------------------------------------------------------------------- errors
def test_annotation_mismatch_names_the_user_line():
    with pytest.raises(SpecializeError) as e:
        uses_consts.specialize(t(32, COLS), t(ROWS, COLS))
    err = e.value
    assert err.span.file == FILE
    assert err.span.line == where(HERE, "def uses_consts(")[0]
    assert "shape [32, 128]" in str(err) and isinstance(err, PyptoError)
    with pytest.raises(SpecializeError, match="dtype fp16"):
        uses_consts.specialize(t(ROWS, COLS, dtype=torch.float16), t(ROWS, COLS))


def test_unsupported_statement():
    with pytest.raises(ParserError) as e:
        bad_try.specialize(t(4, 4))
    assert "`try`" in str(e.value)
    assert (e.value.span.line, e.value.span.col) == where(HERE, "try:")


def test_dep_called_with_two_shapes():
    spec = fused_linear.spec(t(64, 64), t(64, 64), t(1, 64), t(64, 64))
    spec["functions"][-1]["source"] = spec["functions"][-1]["source"].replace(
        "mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)\n",
        "mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)\n"
        "    small = pl.create_tensor([32, 32], dtype=pl.FP32)\n"
        "    small = matmul_kernel(small, small, small)\n")
    with pytest.raises(SpecializeError, match="specialized once per program"):
        specialize(spec)


def test_dep_argument_of_unknown_shape():
    spec = fused_linear.spec(t(64, 64), t(64, 64), t(1, 64), t(64, 64))
    spec["functions"][-1]["source"] = spec["functions"][-1]["source"].replace(
        "mm_out = matmul_kernel(a, b, mm_out)", "mm_out = matmul_kernel(pl.exp(a), b, mm_out)")
    with pytest.raises(SpecializeError, match="cannot tell the shape of argument"):
        specialize(spec)


def test_dep_scalar_parameter_takes_a_loop_variable():
    # `i: pl.INDEX` is typed by its annotation: any index expression may be passed
    text = rows_loop.specialize(t(128, 64), t(128, 64))
    assert "    def add_rows(x: pl.Tensor[[128, 64], pl.FP32], y: pl.InOut[pl.Tensor[[128, 64], " \
           "pl.FP32]], i: pl.Scalar[pl.INDEX]) -> pl.Tensor[[128, 64], pl.FP32]:" in code_lines(text)
    assert "            y = self.add_rows(x, y, i * 1)" in code_lines(text)


def test_handwritten_spec():
    spec = {
        "program": "_jit_k",
        "functions": [{"name": "k", "kind": "orchestration", "file": "user.py", "line": 10,
                       "col_offset": 4,
                       "source": "@pl.jit\ndef k(x: pl.Tensor, n: pl.INDEX):\n"
                                 "    y = x\n    return y\n"}],
        "args": {"x": {"kind": "tensor", "shape": [4, 8], "dtype": "int32"},
                 "n": {"kind": "scalar", "dtype": "index", "value": 7}},
        "dynamic": {}, "constants": {},
    }
    lines = specialize(spec).splitlines()
    assert code_lines("\n".join(lines))[6] == (
        "    def k(self, x: pl.Tensor[[4, 8], pl.INT32], n: pl.Scalar[pl.INDEX]) -> "
        "pl.Tensor[[4, 8], pl.INT32]:")
    assert marker_of(lines[6]) == ("user.py", 11, 5)      # line 10 + 2 - 1, col 4 + 0 + 1
    assert marker_of(lines[7]) == ("user.py", 12, 9)


# ----------------------------------------------------------------------------- the parser
@pytest.mark.parametrize("build", [
    lambda: add.specialize(t(128, 128), t(128, 128), t(128, 128)),
    lambda: softmax.specialize(t(64, 64), t(64, 64)),
    lambda: fused_linear.specialize(t(64, 64), t(64, 64), t(1, 64), t(64, 64)),
    lambda: dyn_rows.specialize(t(48, COLS), t(48, COLS)),
    lambda: dyn_local.specialize(t(48, 16), t(48, 16)),
    lambda: uses_consts.specialize(t(ROWS, COLS), t(ROWS, COLS)),
    lambda: scaled.specialize(t(64, 64), t(64, 64), 4, 0.5),
    lambda: scaled.specialize(t(64, 64), t(64, 64), n=RUNTIME, alpha=0.5),
    lambda: shapes.specialize(t(32, 64), t(32, 64), t(32, 64)),
    lambda: with_inline.specialize(t(32, 32), t(32, 32)),
    lambda: manual.specialize(t(32, 32), t(32, 32)),
    lambda: no_return.specialize(t(8, 8), t(8, 8)),
    lambda: chunked.specialize(t(512, 128), t(512, 128), t(512, 128)),
    lambda: carry.specialize(t(32, 32), t(32, 32)),
], ids=["quickstart", "softmax", "fused_linear", "dynamic", "dynamic_local", "constants",
        "scalars", "runtime_scalar", "shapes", "inline", "auto_scope", "no_return",
        "chunked", "carry"])
def test_specialized_text_parses(build):
    text = build()
    prog = parse_or_skip(text)
    assert prog.name == text.splitlines()[0].split(": ")[1]


def test_parse_errors_point_at_the_user_source():
    text = scaled.specialize(t(64, 64), t(64, 64), 4, 0.5).replace("pl.mul(t, 0.5)",
                                                                  "pl.nosuchop(t, 0.5)")
    with pytest.raises(PyptoError) as e:
        parse_or_skip(text)
    span = e.value.span
    assert span is not None and span.file == FILE
    assert span.line == where(HERE, "pl.store(pl.mul(t, alpha)")[0]


@pl.jit
def bad_annotation(a: pl.Tensor[[64, 64]], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


@pl.jit
def missing_dep_arg(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = add_rows(a, out)
    return out


def test_bad_parameter_annotation_points_at_the_user_def():
    with pytest.raises(ParserError) as e:
        bad_annotation.lower(t(64, 64), t(64, 64))
    assert e.value.span.file == FILE
    assert e.value.span.line == where(HERE, "def bad_annotation(")[0]
    assert "needs a shape and a dtype" in e.value.message and e.value.hint


def test_dep_call_errors_say_how_to_call_it():
    with pytest.raises(SpecializeError) as e:
        missing_dep_arg.lower(t(128, 64), t(128, 64))
    assert e.value.span.line == where(HERE, "out = add_rows(a, out)")[0]
    assert "`add_rows` is missing argument `i`" in e.value.message
    assert e.value.hint == "call it as add_rows(x, y, i)"
