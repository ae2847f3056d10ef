"""A corpus of malformed programs (beyond test_prog_errors.py): each one is a mistake a
kernel author really makes. Every test asserts

1. the exact error class (a pypto.errors.* typed error; TypeError/ValueError where the
   API's contract says so: @pl.jit argument binding and ir.compile options),
2. that the error names this file and the line of the mistake (tagged `# BAD-C<n>`):
   the error's span for typed errors, the raising call's frame for Python errors,
3. a hint saying what to do,
4. that nothing was cached for the failing step: no action entry of the store names
   it (entries of steps that succeeded before it may appear), no whole-compile entry
   was stored, and no target of the failing step (nor a half-written temp file) is left
   in the output directory.
"""
import json
import os
import re
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
import pypto_pipeline.run as graph_run
from pypto import ir
from pypto.ir.compiling import UnsupportedOptionError
from pypto.runtime import RunConfig

FILE = "test_prog_errors_corpus.py"
A, O = torch.zeros(64, 64), torch.zeros(64, 64)
H = torch.zeros(64, 64, dtype=torch.float16)
I32 = torch.zeros(64, 64, dtype=torch.int32)
M = pl.dynamic("M")
T64 = pl.Tensor[[64, 64], pl.FP32]


def line_of(tag: str) -> int:
    with open(__file__) as f:
        for i, ln in enumerate(f, 1):
            if ln.rstrip().endswith(f"# {tag}"):
                return i
    raise AssertionError(f"no line tagged {tag}")


class Watch:
    """Compiles into a fresh output directory and watches the store's action entries
    and the build graph's failing steps while it does."""

    def __init__(self, monkeypatch, tmp_path):
        self.out = tmp_path / "out"
        self.actions = Path(os.environ["PYPTO_CACHE_DIR"]) / "v1" / "actions"
        self.before = self._entries()
        self.failed = []                      # the Steps whose stage raised
        orig = graph_run._fail

        def spy(ctx, step, exc):
            self.failed.append(step)
            return orig(ctx, step, exc)
        monkeypatch.setattr(graph_run, "_fail", spy)
        self.cfg = RunConfig(platform="a2a3sim", save_kernels_dir=str(self.out))

    def _entries(self) -> dict:
        if not self.actions.is_dir():
            return {}
        return {p: p.read_bytes() for p in self.actions.glob("*/*") if p.is_file()}

    def jit(self, fn, *args, **kwargs):
        return fn.compile(*args, config=self.cfg, **kwargs)

    def program(self, prog, **options):
        return ir.compile(prog, output_dir=self.out, platform="a2a3sim", **options)

    def nothing_cached(self, stage):
        """`stage`: None when the error must come before any build step ran, else the
        stage of the step that fails ("frontend", "specialize", "pto", or
        "pass:<PassName>")."""
        after = self._entries()
        new = [json.loads(data) for p, data in after.items() if self.before.get(p) != data]
        whole = [m for m in new if "stage" not in m]
        assert not whole, f"a whole-compile entry was stored for a failed compile: {whole}"
        temps = [p for p in self.out.rglob(".tmp-*")] if self.out.exists() else []
        assert not temps, f"half-written files left behind: {temps}"
        if stage is None:
            assert not self.failed, f"a build step ran and failed: {[s.name for s in self.failed]}"
            assert not new, f"action entries stored: {[m['step'] for m in new]}"
            return
        assert self.failed, "no build step failed"
        kind, _, pname = stage.partition(":")
        for step in self.failed:
            assert step.stage == kind and pname in step.name, f"failing step {step.name} is not {stage}"
            named = [m["step"] for m in new if m.get("step") == step.name]
            assert not named, f"the failing step {step.name} was cached"
            left = [t for t in step.targets.values() if Path(t).exists()]
            assert not left, f"targets of the failing step {step.name} were written: {left}"


@pytest.fixture
def w(monkeypatch, tmp_path):
    return Watch(monkeypatch, tmp_path)


def check(w, exc_info, cls, tag, hint_re, msg_re, stage):
    """A typed error: class, span at the tagged line, message, hint, nothing cached."""
    e = exc_info.value
    assert type(e) is cls or (cls is E.ParserError and isinstance(e, cls)), f"{type(e).__name__}: {e}"
    assert isinstance(e, E.PyptoError)
    line = line_of(tag)
    assert e.span is not None and (e.span.file, e.span.line) == (FILE, line), f"{e.span} != {FILE}:{line}"
    assert f"{FILE}:{line}:" in str(e)
    assert re.search(msg_re, e.message, re.I), e.message
    assert e.hint and re.search(hint_re, e.hint, re.I), e.hint
    assert "\n  hint: " in str(e)
    assert "internal" not in e.message and "__ssa" not in e.message, e.message
    w.nothing_cached(stage)


def check_py(w, exc_info, cls, tag, msg_re):
    """A Python TypeError/ValueError of the API's contract: raised by the call on the
    tagged line (before anything is built), the message says what is wrong and what to
    do instead."""
    e = exc_info.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    frames = [(Path(f.filename).name, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
    assert (FILE, line_of(tag)) in frames, frames
    assert re.search(msg_re, str(e), re.I), str(e)
    w.nothing_cached(None)


# ============================================================================= operators: dtypes, shapes
@pl.jit
def matmul_on_int32(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(lhs, rhs), [0, 0], o)  # BAD-C1
    return o


def test_matmul_on_int32_tiles(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(matmul_on_int32, I32, I32)
    check(w, e, E.TypeCheckError, "BAD-C1", r"pl\.matmul\(lhs, rhs\)", r"no matmul for int32 inputs",
          "frontend")


@pl.jit
def matmul_acc_k_mismatch(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rhs2 = pl.move(pl.load(a, [32, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(lhs, rhs)
        acc = pl.matmul_acc(acc, lhs, rhs2)  # BAD-C2
        pl.store(acc, [0, 0], o)
    return o


def test_matmul_acc_into_an_accumulator_of_another_shape(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(matmul_acc_k_mismatch, A, O)
    check(w, e, E.TypeCheckError, "BAD-C2", r"pl\.matmul_acc\(acc, lhs, rhs\)",
          r"\[64, 64\] \+= \[64, 32\] x \[32, 32\] does not chain", "frontend")


@pl.jit
def scalar_form_with_a_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.adds(t, t), [0, 0], o)  # BAD-C3
    return o


def test_scalar_form_given_a_tile(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(scalar_form_with_a_tile, A, O)
    check(w, e, E.TypeCheckError, "BAD-C3", r"pl\.adds\(x, scalar\)", r"second operand must be a scalar, got Tile",
          "frontend")


@pl.jit
def tile_plus_tensor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.add(t, a), [0, 0], o)  # BAD-C4
    return o


def test_tile_plus_tensor(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(tile_plus_tensor, A, O)
    check(w, e, E.TypeCheckError, "BAD-C4", r"pl\.load", r"tile\.add: cannot mix Tile\[64, 64\] fp32 and Tensor",
          "frontend")


@pl.jit
def exp_of_the_loop_index(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 32, 0], [32, 64])
            pl.store(pl.muls(t, pl.exp(i)), [i * 32, 0], o)  # BAD-C5
    return o


def test_elementwise_op_on_a_scalar(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(exp_of_the_loop_index, A, O)
    check(w, e, E.TypeCheckError, "BAD-C5", r"pl\.exp\(x\)", r"expects a Tensor or Tile argument, got Scalar index",
          "frontend")


@pl.jit
def row_sum_of_3d(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.row_sum(a)  # BAD-C6
    return o


def test_row_reduction_of_a_3d_tensor(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(row_sum_of_3d, torch.zeros(4, 16, 64), torch.zeros(4, 16, 1))
    check(w, e, E.TypeCheckError, "BAD-C6", r"\[M,N\] -> \[M,1\]", r"expects a 2-D operand, got shape \[4, 16, 64\]",
          "frontend")


@pl.jit
def args_of_different_shapes(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)  # BAD-C7
    return o


def test_input_and_output_of_different_shapes(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(args_of_different_shapes, torch.zeros(32, 64), O)
    check(w, e, E.TypeCheckError, "BAD-C7", r"same shape", r"o\[:\] selects 64 along dim 0 but the value has shape \[32, 64\]",
          "frontend")


# ============================================================================= windows, regions, offsets
@pl.jit
def offsets_of_the_wrong_rank(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0], [64, 64])  # BAD-C8
        pl.store(t, [0, 0], o)
    return o


def test_load_offsets_of_the_wrong_rank(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(offsets_of_the_wrong_rank, A, O)
    check(w, e, E.TypeCheckError, "BAD-C8", r"pl\.load\(tensor, offsets, shapes", r"rank 2 but offsets/shapes have 1/2",
          "frontend")


@pl.jit
def load_shape_from_loop_index(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(1, 3):
            t = pl.load(a, [0, 0], [i * 16, 64])  # BAD-C9
            pl.store(t, [0, 0], o)
    return o


def test_load_window_that_depends_on_the_loop_index(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(load_shape_from_loop_index, A, O)
    check(w, e, E.TypeCheckError, "BAD-C9", r"pl\.load\(tensor, offsets, shapes", r"shapes must be integer constants",
          "frontend")


@pl.jit
def read_a_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[0:32, :] = pl.exp(a[0:32, :])  # BAD-C10
    return o


def test_reading_a_tensor_region_with_a_slice(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(read_a_region, A, O)
    check(w, e, E.ParserError, "BAD-C10", r"pl\.load\(t, offsets, shapes\)", r"reading a sub-region `a\[0:32, :\]`",
          "frontend")


@pl.jit
def write_a_tile_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        t[0:32, :] = pl.load(a, [32, 0], [32, 64])  # BAD-C11
        pl.store(t, [0, 0], o)
    return o


def test_writing_a_region_of_a_tile(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(write_a_tile_region, A, O)
    check(w, e, E.ParserError, "BAD-C11", r"pl\.store\(tile, offsets, tensor\)", r"writes into a tensor, but 't' is Tile",
          "frontend")


@pl.jit
def fill_with_a_number(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = 0.0  # BAD-C12
    return o


def test_writing_a_number_into_a_tensor(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(fill_with_a_number, A, O)
    check(w, e, E.ParserError, "BAD-C12", r"pl\.full", r"only a tensor or tile can be written into o\[\.\.\.\], got Scalar",
          "frontend")


# ============================================================================= memory spaces and capacity
@pl.jit
def acc_overflow(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-C13
        lhs = pl.move(pl.load(a, [0, 0], [256, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(b, [0, 0], [16, 256], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(lhs, rhs), [0, 0], o)
    return o


def test_matmul_result_over_acc_capacity(w):
    with pytest.raises(E.MemoryOverflowError) as e:
        w.jit(acc_overflow, torch.zeros(256, 16), torch.zeros(16, 256), torch.zeros(256, 256))
    check(w, e, E.MemoryOverflowError, "BAD-C13", r"smaller tiles", r"262144 bytes of Acc but a2a3 has 131072",
          "pass:AllocateMemoryAddr")


@pl.jit
def three_live_tiles(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-C14
        x = pl.load(a, [0, 0], [128, 128])
        y = pl.load(a, [0, 0], [128, 128])
        z = pl.load(a, [0, 0], [128, 128])
        pl.store(pl.add(pl.add(x, y), z), [0, 0], o)
    return o


def test_tiles_that_fit_alone_but_not_together(w):
    big = torch.zeros(128, 128)
    with pytest.raises(E.MemoryOverflowError) as e:
        w.jit(three_live_tiles, big, big)
    check(w, e, E.MemoryOverflowError, "BAD-C14", r"smaller tiles", r"196608 bytes of Vec but a2a3 has 188416",
          "pass:AllocateMemoryAddr")


@pl.jit
def load_into_acc(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Acc)  # BAD-C15
        pl.store(acc, [0, 0], o)
    return o


def test_load_straight_into_acc(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(load_into_acc, A, O)
    check(w, e, E.TypeCheckError, "BAD-C15", r"load into Mat and use pl\.move", r"lands in Vec or Mat, not Acc",
          "frontend")


@pl.jit
def exp_on_a_mat_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        pl.store(pl.exp(m), [0, 0], o)  # BAD-C16
    return o


def test_vector_op_on_a_mat_tile(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(exp_on_a_mat_tile, A, O)
    check(w, e, E.CodegenError, "BAD-C16", r"load the data from GM into the space you need",
          r"no data path from Mat to Vec", "pass:InferTileMemorySpace")


@pl.jit
def store_a_left_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        pl.store(lhs, [0, 0], o)  # BAD-C17
    return o


def test_store_from_left(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(store_a_left_tile, A, O)
    check(w, e, E.CodegenError, "BAD-C17", r"store the tile you loaded it from, or the matmul result",
          r"no data path from Left to GM", "pass:InferTileMemorySpace")


@pl.jit
def matmul_operands_swapped(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(rhs, lhs), [0, 0], o)  # BAD-C18
    return o


def test_matmul_with_left_and_right_swapped(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(matmul_operands_swapped, A, O)
    check(w, e, E.CodegenError, "BAD-C18", r"move it through Mat", r"no data path from Right to Left",
          "pass:InferTileMemorySpace")


# ============================================================================= loops
@pl.jit
def range_step_keyword(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(0, 64, step=32):  # BAD-C19
            pl.store(pl.load(a, [i, 0], [32, 64]), [i, 0], o)
    return o


def test_range_step_given_by_keyword(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(range_step_keyword, A, O)
    check(w, e, E.ParserError, "BAD-C19", r"pl\.range\(start, stop, step", r"unexpected keyword argument 'step'",
          "frontend")


@pl.jit
def range_without_bounds(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range():  # BAD-C20
            pl.store(pl.load(a, [0, 0], [32, 64]), [0, 0], o)
    return o


def test_range_without_bounds(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(range_without_bounds, A, O)
    check(w, e, E.ParserError, "BAD-C20", r"pl\.range\(stop\)", r"takes 1 to 3 bounds, got 0", "frontend")


@pl.jit
def unroll_a_runtime_count(a: pl.Tensor, o: pl.Out[pl.Tensor], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.unroll(n):  # BAD-C21
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_unroll_over_a_runtime_count(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(unroll_a_runtime_count, A, O, n=pl.RUNTIME)
    check(w, e, E.ParserError, "BAD-C21", r"use pl\.range for runtime bounds", r"pl\.unroll bounds must be constants",
          "frontend")


@pl.jit
def loop_over_a_list(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in [0, 32]:  # BAD-C22
            pl.store(pl.load(a, [i, 0], [32, 64]), [i, 0], o)
    return o


def test_loop_over_a_python_list(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(loop_over_a_list, A, O)
    check(w, e, E.ParserError, "BAD-C22", r"for i in pl\.range\(n\)", r"`for \.\.\. in \[0, 32\]` is not supported",
          "frontend")


@pl.jit
def two_loop_targets(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i, j in pl.range(2):  # BAD-C23
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_loop_binding_two_names_without_init_values(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(two_loop_targets, A, O)
    check(w, e, E.ParserError, "BAD-C23", r"init_values", r"loop target `\(i, j\)` is not supported", "frontend")


@pl.jit
def carried_without_yield(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i, (acc,) in pl.range(4, init_values=(z,)):  # BAD-C24
            acc = pl.add(acc, z)
        pl.store(z, [0, 0], o)
    return o


def test_carried_loop_without_yield(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(carried_without_yield, A, O)
    check(w, e, E.ParserError, "BAD-C24", r"yield the next value", r"must end with `r = pl\.yield_\(\.\.\.\)`",
          "frontend")


@pl.jit
def yield_changes_shape(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i, (acc,) in pl.range(4, init_values=(z,)):
            r = pl.yield_(pl.load(a, [0, 0], [32, 64]))  # BAD-C25
        pl.store(r, [0, 0], o)
    return o


def test_yield_of_another_shape(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(yield_changes_shape, A, O)
    check(w, e, E.TypeCheckError, "BAD-C25", r"keeps its shape and dtype",
          r"'acc' is Tile\[64, 64\] fp32 but the loop yields Tile\[32, 64\] fp32", "frontend")


@pl.jit
def yield_not_last(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i, (acc,) in pl.range(4, init_values=(z,)):
            r = pl.yield_(pl.add(acc, z))  # BAD-C26
            q = pl.exp(acc)
        pl.store(r, [0, 0], o)
    return o


def test_yield_before_the_end_of_the_body(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(yield_not_last, A, O)
    check(w, e, E.ParserError, "BAD-C26", r"move it to the end", r"must be the last statement", "frontend")


@pl.jit
def yield_without_init(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i in pl.range(4):  # BAD-C27
            z = pl.yield_(pl.add(z, z))
        pl.store(z, [0, 0], o)
    return o


def test_yield_in_a_loop_without_init_values(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(yield_without_init, A, O)
    check(w, e, E.ParserError, "BAD-C27", r"init_values=\(x,\)", r"pl\.yield_ in a loop without init_values",
          "frontend")


@pl.jit
def break_out(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            if i == 1:
                break  # BAD-C28
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_break(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(break_out, A, O)
    check(w, e, E.ParserError, "BAD-C28", r"restructure the loop bounds", r"unsupported statement: break", "frontend")


@pl.jit
def skip_with_continue(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            if i == 1:
                continue  # BAD-C29
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_continue(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(skip_with_continue, A, O)
    check(w, e, E.ParserError, "BAD-C29", r"if/else inside the loop", r"unsupported statement: continue", "frontend")


@pl.jit
def and_in_a_condition(a: pl.Tensor, o: pl.Out[pl.Tensor], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            if i > 0 and i < 3:  # BAD-C30
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


def test_and_in_an_if_condition(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(and_in_a_condition, A, O, n=pl.RUNTIME)
    check(w, e, E.ParserError, "BAD-C30", r"nest if statements", r"unsupported expression `i > 0 and i < 3`",
          "frontend")


# ============================================================================= pl.at regions
@pl.jit
def at_with_a_role(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker):  # BAD-C31
        o[:] = pl.exp(a)
    return o


def test_pl_at_with_a_role(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(at_with_a_role, A, O)
    check(w, e, E.ParserError, "BAD-C31", r"pl\.at\(level=pl\.Level\.CORE_GROUP, name_hint",
          r"pl\.at\(\) got an unsupported argument 'role'", "frontend")


@pl.jit
def at_as_task_id(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP) as tid:  # BAD-C32
        o[:] = pl.exp(a)
    return o


def test_pl_at_bound_with_as(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(at_as_task_id, A, O)
    check(w, e, E.ParserError, "BAD-C32", r"drop the `as \.\.\.` part", r"as tid` is not supported", "frontend")


@pl.jit
def at_not_called(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at:  # BAD-C33
        o[:] = pl.exp(a)
    return o


def test_pl_at_not_called(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(at_not_called, A, O)
    check(w, e, E.ParserError, "BAD-C33", r"with pl\.at\(\.\.\.\)", r"`with pl\.at` is not supported", "frontend")


@pl.jit
def two_regions_one_name(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
        o[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):  # BAD-C34
        o[:] = pl.exp(o)
    return o


def test_two_pl_at_regions_with_the_same_name_hint(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(two_regions_one_name, A, O)
    check(w, e, E.CodegenError, "BAD-C34", r"its own name_hint", r"a function named 'stage' already exists",
          "pass:OutlineIncoreScopes")


@pl.jit
def tile_leaves_its_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])  # BAD-C35
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(t, [0, 0], o)
    return o


def test_tile_used_in_another_region(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(tile_leaves_its_region, A, O)
    check(w, e, E.CodegenError, "BAD-C35", r"pl\.create_tensor", r"'t' is computed inside a pl\.at region and used after it",
          "pass:OutlineIncoreScopes")


# ============================================================================= names
@pl.jit
def used_before_assigned(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.add(t, t)  # noqa: F821  # BAD-C36
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(u, [0, 0], o)
    return o


def test_name_used_before_it_is_assigned(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(used_before_assigned, A, O)
    check(w, e, E.ParserError, "BAD-C36", r"assign it before use", r"name 't' is not defined", "frontend")


@pl.jit
def assigned_in_one_branch(a: pl.Tensor, o: pl.Out[pl.Tensor], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            if i == 0:
                t = pl.load(a, [0, 0], [64, 64])
            pl.store(t, [0, 0], o)  # BAD-C37
    return o


def test_name_assigned_in_one_branch_only(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(assigned_in_one_branch, A, O, n=pl.RUNTIME)
    check(w, e, E.ParserError, "BAD-C37", r"in both branches of the if", r"'t' is used after the loop or if that assigns it",
          "pass:ConvertToSSA")


@pl.jit
def memory_space_typo(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Vecc)  # BAD-C38
        pl.store(t, [0, 0], o)
    return o


def test_misspelled_memory_space(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(memory_space_typo, A, O)
    check(w, e, E.ParserError, "BAD-C38", r"members: DDR, Vec, Mat", r"pl\.Mem has no member 'Vecc'", "frontend")


@pl.jit
def print_a_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        print(t)  # BAD-C39
        pl.store(t, [0, 0], o)
    return o


def test_print_inside_a_kernel(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(print_a_tile, A, O)
    check(w, e, E.ParserError, "BAD-C39", r"only pl\.\* operators", r"the Python builtin print\(\) cannot be used",
          "frontend")
