"""A corpus of malformed programs (beyond test_prog_errors.py): each one is a mistake a
kernel author really makes. Every test asserts

1. the exact error class (a pypto.errors.* typed error; TypeError/ValueError where the
   API's contract says so: @pl.jit argument binding and ir.compile options),
2. that the error names this file and the line of the mistake (tagged `# BAD-C<n>`):
   the error's span for typed errors, the raising call's frame for Python errors,
3. a hint saying what to do (for Python errors: the message says it),
4. that nothing was cached for the failing step: no action entry of the store names
   it (entries of steps that succeeded before it may appear), no whole-compile entry
   was stored, and no target of the failing step (nor a half-written temp file) is left
   in the output directory. Errors raised before any build step (at decoration, argument
   binding, option checks) must leave the store untouched.

The failing step is known exactly: the graph runner reports every step whose stage
raised through pypto_pipeline.run._fail, which the fixture wraps.
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
from pypto.runtime import RunConfig

from prog_helpers import tagged_line

FILE = "test_prog_errors_corpus.py"
A, O = torch.zeros(64, 64), torch.zeros(64, 64)
H = torch.zeros(64, 64, dtype=torch.float16)
I32 = torch.zeros(64, 64, dtype=torch.int32)
M = pl.dynamic("M")


def line_of(tag: str) -> int:
    return tagged_line(__file__, tag)


class Watch:
    """Compiles into a fresh output directory and watches the store's action entries
    and the build graph's failing steps while it does."""

    def __init__(self, monkeypatch, tmp_path):
        self.out = tmp_path / "out"
        self.actions = Path(os.environ["PYPTO_CACHE_DIR"]) / "v2" / "actions"
        self.before = self._entries()
        self.failed = []                      # the Steps whose stage raised
        orig = graph_run._fail                # the runner's one report of a stage's exception

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



def test_the_cache_check_fails_when_a_failing_step_is_stored(w):
    """The check is not vacuous: an entry naming the failing step, a whole-compile entry or
    a target the failing step wrote each make it fail."""
    from pypto_cache import open_store
    with pytest.raises(E.TypeCheckError):
        w.jit(window_past_the_end, A, O)
    w.nothing_cached("frontend")
    step = w.failed[0]
    store = open_store()
    store.put_action("0" * 31 + "1", {"outputs": {}, "stage": step.stage, "step": step.name})
    with pytest.raises(AssertionError, match="was cached"):
        w.nothing_cached("frontend")
    store.put_action("0" * 31 + "2", {"outputs": {}, "tasks": [], "meta": {}})
    with pytest.raises(AssertionError, match="whole-compile entry"):
        w.nothing_cached("frontend")
    w.before = w._entries()
    target = Path(next(iter(step.targets.values()), w.out / "passes_dump" / "00_frontend.py"))
    step.targets.setdefault("program", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("half")
    with pytest.raises(AssertionError, match="targets of the failing step"):
        w.nothing_cached("frontend")
    with pytest.raises(AssertionError, match="is not pass:AllocateMemoryAddr"):
        w.nothing_cached("pass:AllocateMemoryAddr")


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
    check(w, e, E.TypeCheckError, "BAD-C2", r"pl\.matmul_acc\(acc, lhs, rhs",
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
    check(w, e, E.TypeCheckError, "BAD-C7", r"same shape",
          r"o\[:\] selects 64 along dim 0 but the value has shape \[32, 64\]",
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
        t = pl.load(a, [0, 0], [64, 64])
        o[0:32, :] = pl.exp(t[0:64:2, :])  # BAD-C10
    return o


def test_reading_a_tile_region_with_a_slice(w):
    """Tiles and tensors slice into contiguous windows; a strided one is refused."""
    with pytest.raises(E.ParserError) as e:
        w.jit(read_a_region, A, O)
    check(w, e, E.ParserError, "BAD-C10", r"slice a contiguous window",
          r"slices with a step are not supported", "frontend")


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
    check(w, e, E.ParserError, "BAD-C11", r"pl\.store\(tile, offsets, tensor\)",
          r"writes into a tensor, but 't' is Tile",
          "frontend")


@pl.jit
def fill_with_a_number(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = 0.0  # BAD-C12
    return o


def test_writing_a_number_into_a_tensor(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(fill_with_a_number, A, O)
    check(w, e, E.ParserError, "BAD-C12", r"pl\.full",
          r"only a tensor or tile can be written into o\[\.\.\.\], got Scalar",
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
def exp_on_a_left_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        pl.store(pl.exp(m), [0, 0], o)  # BAD-C16
    return o


def test_vector_op_on_a_left_tile(w):
    # (a Mat tile crosses to the vector core through the group's pipe; a Left one cannot)
    with pytest.raises(E.CodegenError) as e:
        w.jit(exp_on_a_left_tile, A, O)
    check(w, e, E.CodegenError, "BAD-C16", r"load the data from GM into the space you need",
          r"no data path from Left to Vec", "pass:InferTileMemorySpace")


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
        for i, (t,) in pl.range(2, init_values=(pl.load(a, [0, 0], [32, 64]),)):
            if i == 1:
                break  # BAD-C28
            t2 = pl.yield_(pl.add(t, t))
        pl.store(t2, [0, 0], o)
    return o


def test_break(w):
    """(break in a plain loop works: tests/language/test_lang_control_flow.py)"""
    with pytest.raises(E.ParserError) as e:
        w.jit(break_out, A, O)
    check(w, e, E.ParserError, "BAD-C28", r"rebinding names", r"break in a loop with init_values is not supported",
          "frontend")


@pl.jit
def skip_with_continue(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            if i == 1:
                continue  # BAD-C29
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_continue_out_of_a_region(w):
    """continue works in the ifs of a loop body; out of a pl.at region it cannot."""
    with pytest.raises(E.ParserError) as e:
        w.jit(skip_with_continue, A, O)
    check(w, e, E.ParserError, "BAD-C29", r"continue works inside the ifs of a loop body",
          r"unsupported statement: continue", "frontend")


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


# (BAD-C32, `with pl.at(...) as tid`, is valid now: test_prog_task_graph.py)


@pl.jit
def at_not_called(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at:  # BAD-C33
        o[:] = pl.exp(a)
    return o


def test_pl_at_not_called(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(at_not_called, A, O)
    check(w, e, E.ParserError, "BAD-C33", r"with pl\.at\(\.\.\.\)", r"`with pl\.at` is not supported", "frontend")


# (BAD-C34, two regions with one name_hint, is valid now: the second kernel is stage_0)


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
    check(w, e, E.CodegenError, "BAD-C35", r"pl\.create_tensor",
          r"'t' is computed inside a pl\.at region and used after it",
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
    check(w, e, E.ParserError, "BAD-C37", r"in both branches of the if",
          r"'t' is used after the loop or if that assigns it",
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


# ============================================================================= Python that is not the language
@pl.jit
def try_except(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        try:  # BAD-C40
            o[:] = pl.exp(a)
        except Exception:
            o[:] = a
    return o


def test_try_except(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(try_except, A, O)
    check(w, e, E.ParserError, "BAD-C40", r"with pl\.at and pl operators", r"`try` statements are not supported",
          "specialize")


@pl.jit
def lambda_helper(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        f = lambda x: pl.exp(x)  # noqa: E731  # BAD-C41
        o[:] = f(a)
    return o


def test_lambda(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(lambda_helper, A, O)
    check(w, e, E.ParserError, "BAD-C41", r"write the expression inline", r"unsupported expression `lambda x",
          "frontend")


@pl.jit
def list_comprehension(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ts = [pl.load(a, [i * 32, 0], [32, 64]) for i in pl.range(2)]  # BAD-C42
        pl.store(ts[0], [0, 0], o)
    return o


def test_list_comprehension(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(list_comprehension, A, O)
    check(w, e, E.ParserError, "BAD-C42", r"write a pl\.range loop", r"\(ListComp\)", "frontend")


COUNTER = 0


@pl.jit
def global_statement(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    global COUNTER  # BAD-C43
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_global_statement(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(global_statement, A, O)
    check(w, e, E.ParserError, "BAD-C43", r"the body is compiled, not run", r"`global` statements are not supported",
          "specialize")


@pl.jit
def assert_a_shape(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    assert a.shape[0] == 64  # BAD-C44
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_assert_statement(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(assert_a_shape, A, O)
    check(w, e, E.ParserError, "BAD-C44", r"the body is compiled, not run", r"`assert` statements are not supported",
          "specialize")


@pl.jit
def nested_helper(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    def inner(x):  # BAD-C45
        return pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = inner(a)
    return o


def test_nested_function(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(nested_helper, A, O)
    check(w, e, E.ParserError, "BAD-C45", r"the body is compiled, not run", r"statements are not supported",
          "specialize")


@pl.jit
def augmented_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        t += t  # BAD-C46
        pl.store(t, [0, 0], o)
    return o


def test_augmented_assignment_on_a_tile(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(augmented_tile, A, O)
    check(w, e, E.ParserError, "BAD-C46", r"t = pl\.<op>\(t, \.\.\.\)", r"`t \+= t` on a tensor/tile is not supported",
          "frontend")


@pl.jit
def chained_assignment(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = u = pl.load(a, [0, 0], [64, 64])  # BAD-C47
        pl.store(t, [0, 0], o)
    return o


def test_chained_assignment(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(chained_assignment, A, O)
    check(w, e, E.ParserError, "BAD-C47", r"each name on its own line", r"chained assignment", "frontend")


@pl.jit
def import_in_body(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    import math  # noqa: F401  # BAD-C48
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_import_in_a_kernel(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(import_in_body, A, O)
    check(w, e, E.ParserError, "BAD-C48", r"the body is compiled, not run", r"`import` statements are not supported",
          "specialize")


@pl.jit
def with_open_file(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with open("weights.bin") as f:  # BAD-C49
        o[:] = pl.exp(a)
    return o


def test_with_open(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(with_open_file, A, O)
    check(w, e, E.ParserError, "BAD-C49", r"only pl\.\* operators", r"the Python builtin 'open' cannot be used",
          "frontend")


# ========================================================================== functions, calls, decorators (@pl.program)
def test_function_type_given_as_a_string(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type="InCore")  # BAD-C50
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(w, e, E.ParserError, "BAD-C50", r"type=pl\.FunctionType\.Orchestration",
          r"type= must be a pl\.FunctionType, got 'InCore'", None)


def test_parameter_with_a_default_value(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],  # BAD-C51
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]] = None) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(w, e, E.ParserError, "BAD-C51", r"declare each parameter with its type", r"default values are not supported",
          None)


def test_parameter_without_annotation(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a, o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:  # BAD-C52
                return o
    check(w, e, E.ParserError, "BAD-C52", r"x: pl\.Tensor\[\[64, 64\], pl\.FP32\]",
          r"parameter 'a' of 'main' needs a type annotation",
          None)


def test_kernel_called_with_a_tile(w):
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.InCore)
            def k2(self, a: pl.Tensor[[64, 64], pl.FP32],
                   o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                t = pl.load(a, [0, 0], [64, 64])
                o = self.k(t, o)  # BAD-C53
                return o
    check(w, e, E.TypeCheckError, "BAD-C53", r"parameter's kind and dtype",
          r"self\.k: argument 0 \(a\) expects Tensor\[64, 64\] fp32, got Tile\[64, 64\] fp32", None)


def test_kernel_called_with_a_number_for_a_tensor(w):
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(1.0, o)  # BAD-C54
                return o
    check(w, e, E.TypeCheckError, "BAD-C54", r"parameter's kind and dtype",
          r"argument 0 \(a\) expects Tensor\[64, 64\] fp32, got Scalar fp32", None)


def test_kernel_called_with_a_keyword_argument(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(a, o=o)  # BAD-C55
                return o
    check(w, e, E.ParserError, "BAD-C55", r"pass arguments positionally", r"unexpected keyword argument 'o'", None)


def test_kernel_returns_a_tile_for_a_tensor_annotation(w):
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                t = pl.load(a, [0, 0], [64, 64])
                return t  # BAD-C56
    check(w, e, E.TypeCheckError, "BAD-C56", r"fix the -> annotation or the returned value",
          r"k: return value 0 is Tile\[64, 64\] fp32 but the annotation says Tensor\[64, 64\] fp32", None)


# ============================================================================= annotations
def test_dtype_given_as_a_string(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], "fp32"],  # BAD-C57
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(w, e, E.ParserError, "BAD-C57", r"pl\.Tensor\[\[64, 128\], pl\.FP16\]", r"'fp32' is not a dtype", None)


def test_out_on_a_return_annotation(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Out[pl.Tensor[[64, 64], pl.FP32]]:  # BAD-C58
                return o
    check(w, e, E.ParserError, "BAD-C58", r"pl\.Out\[pl\.Tensor\[\.\.\.\]\]",
          r"pl\.Out\[\.\.\.\] is only allowed on parameters",
          None)


def test_scalar_annotation_with_a_value(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     n: pl.Scalar[pl.INDEX, 4],  # BAD-C59
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(w, e, E.ParserError, "BAD-C59", r"pl\.Scalar\[pl\.INDEX\]", r"pl\.Scalar takes one dtype", None)


def test_dynamic_dim_in_a_tile_annotation(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[M, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
                t: pl.Tile[[M, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])  # BAD-C60
                o = pl.store(t, [0, 0], o)
                return o
    check(w, e, E.ParserError, "BAD-C60", r"pl\.Tile\[\[64, 64\], pl\.FP32",
          r"tile shapes are static; a dynamic dim is only allowed on tensors", None)


# ============================================================================= dynamic dims
@pl.jit
def dynamic_dim_as_a_window(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [M, 64]), [0, 0], y)  # BAD-C61
    return y


def test_dynamic_dim_as_a_load_window(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(dynamic_dim_as_a_window, A, O)
    check(w, e, E.TypeCheckError, "BAD-C61", r"fixed-size windows in a loop.*pl\.RUNTIME",
          r"load: shapes must be integer constants, but dim 0 of 'x' is dynamic", "frontend")


@pl.jit
def tensor_op_on_a_dynamic_tensor(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.exp(x)  # BAD-C62
    return y


def test_tensor_op_on_a_dynamic_tensor(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(tensor_op_on_a_dynamic_tensor, A, O)
    check(w, e, E.CodegenError, "BAD-C62", r"pl\.load in a pl\.range loop",
          r"tensor 'x' has a dynamic shape; tensor ops on it need explicit tiling", "pass:ConvertTensorToTileOps")


# =========================================================================== @pl.jit arguments (TypeError by contract)
@pl.jit
def exp_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_jit_given_a_nested_list(w):
    with pytest.raises(TypeError) as e:
        w.jit(exp_kernel, [[1.0, 2.0]], O)  # BAD-C63
    check_py(w, e, TypeError, "BAD-C63", r"exp_kernel\(\): cannot pass list as 'a'; expected a torch tensor")


def test_jit_given_a_number_for_a_tensor(w):
    with pytest.raises(TypeError) as e:
        w.jit(exp_kernel, 3.0, O)  # BAD-C64
    check_py(w, e, TypeError, "BAD-C64", r"exp_kernel\(\): 'a' is a tensor parameter, got float 3\.0")


def test_runtime_marker_in_a_call(w):
    with pytest.raises(TypeError) as e:
        exp_kernel(pl.RUNTIME, O, config=w.cfg)  # BAD-C65
    check_py(w, e, TypeError, "BAD-C65",
             r"pl\.RUNTIME marks a scalar parameter in compile\(\)/lower\(\); a call passes the value")


def test_jit_given_a_complex_tensor(w):
    with pytest.raises(TypeError) as e:
        w.jit(exp_kernel, torch.zeros(64, 64, dtype=torch.complex64), O)  # BAD-C66
    check_py(w, e, TypeError, "BAD-C66", r"complex64 are not supported; use one of .*float32")


# =============================================================== ir.compile options (ValueError/TypeError by contract)
def _good_program():
    @pl.program
    class Good:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                o[:] = pl.exp(a)
            return o
    return Good


def test_compile_with_an_unknown_strategy(w):
    prog = _good_program()
    with pytest.raises(ValueError) as e:
        w.program(prog, strategy="Fast")  # BAD-C67
    check_py(w, e, ValueError, "BAD-C67", r"strategy='Fast' is not valid; choose one of Default")


def test_compile_with_an_unknown_memory_planner(w):
    prog = _good_program()
    with pytest.raises(ValueError) as e:
        w.program(prog, memory_planner="greedy")  # BAD-C68
    check_py(w, e, ValueError, "BAD-C68", r"memory_planner='greedy' is not valid; choose one of PYPTO, DSA_RP, PTOAS")


def test_compile_disabling_an_unknown_diagnostic(w):
    prog = _good_program()
    with pytest.raises(ValueError) as e:
        w.program(prog, disabled_diagnostics=["UnusedVar"])  # BAD-C69
    check_py(w, e, ValueError, "BAD-C69", r"unknown check 'UnusedVar'; checks are UnusedVariable")


def test_compile_with_a_distributed_config(w):
    prog = _good_program()
    with pytest.raises(ValueError) as e:
        w.program(prog, distributed_config={"ranks": 2})  # BAD-C70
    check_py(w, e, ValueError, "BAD-C70",
             r"distributed_config compiles a program with a HOST-level orchestrator .*this one has none")


def test_ir_compile_of_a_jit_function(w):
    with pytest.raises(TypeError) as e:
        ir.compile(exp_kernel, platform="a2a3sim")  # BAD-C71
    check_py(w, e, TypeError, "BAD-C71", r"got JITFunction; for a @pl\.jit function call \.compile\(\.\.\.\)")


# ======================================================================== fixed by this corpus: functions and programs
def test_method_decorated_with_staticmethod(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @staticmethod  # BAD-C72
            def k(a: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
                return a
    check(w, e, E.ParserError, "BAD-C72", r"decorated with @pl\.function\(\.\.\.\) only",
          r"unsupported decorator 'staticmethod' on 'k'", None)


def test_two_orchestrations_in_one_program(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def forward(self, a: pl.Tensor[[64, 64], pl.FP32],
                        o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.exp(a)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def backward(self, a: pl.Tensor[[64, 64], pl.FP32],  # BAD-C73
                         o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.log(a)
                return o
    check(w, e, E.ParserError, "BAD-C73", r"a @pl\.program of its own",
          r"2 orchestration functions \('forward', 'backward'\); a program has one entry point", None)


def test_missing_return_of_an_annotated_function(w):
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],  # BAD-C74
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.exp(a)
    check(w, e, E.TypeCheckError, "BAD-C74", r"end main with `return <value>`",
          r"main declares a return value \(-> pl\.Tensor\[\[64, 64\], pl\.FP32\]\) but has no return statement",
          None)


def test_tile_parameter_of_an_orchestration(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, t: pl.Tile[[64, 64], pl.FP32],  # BAD-C75
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.store(t, [0, 0], o)
                return o
    check(w, e, E.ParserError, "BAD-C75", r"declare it as a tensor .*pl\.load it",
          r"parameter 't' of the orchestration 'main' is a tile", None)


def test_out_on_a_scalar_parameter(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     total: pl.Out[pl.Scalar[pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:  # BAD-C76
                return a
    check(w, e, E.ParserError, "BAD-C76", r"pl\.Out\[pl\.Tensor\[\.\.\.\]\]",
          r"pl\.Out\[\.\.\.\] marks a tensor the function writes; a scalar cannot be an output", None)


SQUARE = pl.Tensor[[64, 64], pl.FP32]


def test_type_alias_in_an_annotation(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: SQUARE, o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> SQUARE:  # BAD-C77
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.exp(a)
                return o
    check(w, e, E.ParserError, "BAD-C77", r"spell the type out in the annotation: pl\.Tensor\[\[64, 64\], pl\.FP32\]",
          r"`SQUARE`: it names pl\.Tensor\[.*through a Python variable", None)


def test_program_function_called_without_self(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32],
                  o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = k(a, o)  # noqa: F821  # BAD-C78
                return o
    check(w, e, E.ParserError, "BAD-C78", r"write self\.k\(a, o\)", r"calls a function of the program without `self\.`",
          None)


def test_kernel_calling_another_kernel(w):
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def copy(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.InCore)
            def copy_twice(self, a: pl.Tensor[[64, 64], pl.FP32],
                           o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.copy(a, o)  # BAD-C79
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.copy_twice(a, o)
                return o
    check(w, e, E.TypeCheckError, "BAD-C79", r"call both from the orchestration.*Inline function",
          r"kernel 'copy_twice' calls kernel 'copy'", None)


# ============================================================================= fixed by this corpus: @pl.jit bodies
@pl.jit
def return_inside_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
        return o  # BAD-C80


def test_return_inside_a_pl_at_region(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(return_inside_region, A, O)
    check(w, e, E.ParserError, "BAD-C80", r"`return o` after the with block", r"return inside a pl\.at region",
          "frontend")


@pl.jit
def return_inside_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            o[i * 32:i * 32 + 32, :] = pl.exp(pl.load(a, [i * 32, 0], [32, 64]))
        return o  # BAD-C81
    return o


def test_return_inside_a_loop(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(return_inside_loop, A, O)
    check(w, e, E.ParserError, "BAD-C81", r"let the loop finish and return after it", r"return inside a loop",
          "frontend")


@pl.jit
def code_after_return(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-C82
        o[:] = pl.log(a)


def test_statement_after_return(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(code_after_return, A, O)
    check(w, e, E.ParserError, "BAD-C82", r"move the return to the end", r"comes after `return` and is never reached",
          "frontend")


@pl.jit
def out_rebound(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o = pl.exp(a)  # BAD-C83
    return o


def test_out_parameter_rebound_instead_of_written(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(out_rebound, A, O)
    check(w, e, E.ParserError, "BAD-C83", r"write into the parameter instead: o\[:\] = pl\.exp\(a\)",
          r"`o = pl\.exp\(a\)` rebinds the Out parameter 'o' to a new tensor; nothing is written", "frontend")


@pl.jit
def matmul_operator(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = a @ b  # BAD-C85
    return o


def test_matmul_written_with_the_at_operator(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(matmul_operator, A, A, O)
    check(w, e, E.ParserError, "BAD-C85", r"pl\.matmul\(a, b\)", r"operator `@` is not defined on tensors/tiles",
          "frontend")


def scale_rows(t):
    return pl.mul(t, 2.0)


@pl.jit
def plain_python_helper(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(scale_rows(t), [0, 0], o)  # BAD-C86
    return o


def test_plain_python_function_called_in_a_kernel(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(plain_python_helper, A, O)
    check(w, e, E.ParserError, "BAD-C86", r"@pl\.jit\.inline", r"`scale_rows` is not a function a kernel can call",
          "frontend")


@pl.jit
def op_without_pl_prefix(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(exp(t), [0, 0], o)  # noqa: F821  # BAD-C87
    return o


def test_operator_without_the_pl_prefix(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(op_without_pl_prefix, A, O)
    check(w, e, E.ParserError, "BAD-C87", r"write pl\.exp\(\.\.\.\)",
          r"`exp\(\.\.\.\)` is not defined; the operator is pl\.exp",
          "frontend")


@pl.jit
def dynamic_declared_in_body(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    rows = pl.dynamic(64)  # BAD-C88
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.exp(x)
    return y


def test_pl_dynamic_called_inside_a_kernel(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(dynamic_declared_in_body, A, O)
    check(w, e, E.ParserError, "BAD-C88", r'module level, M = pl\.dynamic\("M"\)',
          r"`pl\.dynamic\(64\)` declares a dynamic dim; it cannot be called inside a kernel", "frontend")


@pl.jit
def strided_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64])
        o[0:64:2, :] = t  # BAD-C89
    return o


def test_region_write_with_a_step(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(strided_region, A, O)
    check(w, e, E.ParserError, "BAD-C89", r"contiguous region", r"slices with a step are not supported", "frontend")


@pl.jit
def too_many_indices(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[0:32, :, 0] = pl.load(a, [0, 0], [32, 64])  # BAD-C90
    return o


def test_region_with_more_indices_than_dims(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(too_many_indices, A, O)
    check(w, e, E.ParserError, "BAD-C90", r"one index or slice per dimension: o\[i:i\+m, :\]",
          r"o has rank 2 but 3 indices are given", "frontend")


@pl.jit
def float_loop_bound(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2.0):  # BAD-C91
            pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], o)
    return o


def test_float_loop_bound(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(float_loop_bound, A, O)
    check(w, e, E.ParserError, "BAD-C91", r"write 2, not 2\.0",
          r"loop bound `2\.0` must be an integer scalar, got Scalar fp32",
          "frontend")


@pl.jit
def zero_step(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(0, 64, 0):  # BAD-C92
            pl.store(pl.load(a, [i, 0], [16, 64]), [i, 0], o)
    return o


def test_loop_step_of_zero(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(zero_step, A, O)
    check(w, e, E.ParserError, "BAD-C92", r"non-zero step", r"loop step must not be 0", "frontend")


@pl.jit
def init_values_not_a_tuple(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i, (acc,) in pl.range(4, init_values=z):  # BAD-C93
            r = pl.yield_(pl.add(acc, z))
        pl.store(r, [0, 0], o)
    return o


def test_init_values_without_a_tuple(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(init_values_not_a_tuple, A, O)
    check(w, e, E.ParserError, "BAD-C93", r"init_values=\(x,\)", r"init_values must be a tuple", "frontend")


@pl.jit
def name_hint_with_a_space(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage 1"):  # BAD-C94
        o[:] = pl.exp(a)
    return o


def test_name_hint_that_is_not_an_identifier(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(name_hint_with_a_space, A, O)
    check(w, e, E.ParserError, "BAD-C94", r'name_hint="stage1"',
          r"name_hint must be an identifier string, got 'stage 1'",
          "frontend")


@pl.jit.incore
def kernel_with_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-C95
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def calls_kernel_with_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = kernel_with_region(a, o)
    return o


def test_pl_at_inside_an_incore_kernel(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(calls_kernel_with_region, A, O)
    check(w, e, E.ParserError, "BAD-C95", r"remove the `with pl\.at\(\.\.\.\)` line",
          r"pl\.at inside the kernel 'kernel_with_region': a kernel's body already runs on the device", "frontend")


@pl.jit.incore
def copy_rows(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def kernel_called_in_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o = copy_rows(a, o)  # BAD-C96
    return o


def test_kernel_called_inside_a_pl_at_region(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(kernel_called_in_region, A, O)
    check(w, e, E.TypeCheckError, "BAD-C96", r"outside the `with pl\.at\(\.\.\.\)` block",
          r"kernel 'copy_rows' is called inside a pl\.at region of 'kernel_called_in_region'", "frontend")


# ========================================================================== fixed by this corpus: windows and operands
@pl.jit
def window_past_the_end(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [32, 0], [64, 64])  # BAD-C97
        pl.store(t, [0, 0], o)
    return o


def test_load_window_running_past_the_end(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(window_past_the_end, A, O)
    check(w, e, E.TypeCheckError, "BAD-C97", r"offset \+ size <= the tensor's dim",
          r"load: the window \[32, 96\) of dim 0 lies outside the tensor's extent 64", "frontend")


@pl.jit
def negative_offset(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [-16, 0], [32, 64])  # BAD-C98
        pl.store(t, [0, 0], o)
    return o


def test_negative_load_offset(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(negative_offset, A, O)
    check(w, e, E.TypeCheckError, "BAD-C98", r"0 <= offset", r"load: offset -16 in dim 0 is negative", "frontend")


@pl.jit
def store_past_the_end(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(t, [0, 32], o)  # BAD-C99
    return o


def test_store_running_past_the_end(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(store_past_the_end, A, O)
    check(w, e, E.TypeCheckError, "BAD-C99", r"use a smaller window or offset",
          r"store: the window \[32, 96\) of dim 1 lies outside the tensor's extent 64", "frontend")


@pl.jit
def region_past_the_end(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[48:80, :] = pl.load(a, [0, 0], [32, 64])  # BAD-C100
    return o


def test_region_write_running_past_the_end(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(region_past_the_end, A, O)
    check(w, e, E.TypeCheckError, "BAD-C100", r"offset \+ size <= the tensor's dim",
          r"assemble: the window \[48, 80\) of dim 0 lies outside the tensor's extent 64", "frontend")


@pl.jit
def matmul_acc_mixed_operands(a: pl.Tensor, h: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rhs_h = pl.move(pl.load(h, [32, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(lhs, rhs)
        acc = pl.matmul_acc(acc, lhs, rhs_h)  # BAD-C101
        pl.store(acc, [0, 0], o)
    return o


def test_matmul_acc_with_operands_of_two_dtypes(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(matmul_acc_mixed_operands, A, H, O)
    check(w, e, E.TypeCheckError, "BAD-C101", r"pl\.cast", r"matmul_acc: dtype mismatch fp32 vs fp16", "frontend")


@pl.jit
def scratch_too_small(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        tmp = pl.create_tile([64, 1], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_max(t, tmp)  # BAD-C102
        pl.store(pl.row_expand_sub(t, m), [0, 0], o)
    return o


def test_row_max_with_a_scratch_tile_of_the_result_shape(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(scratch_too_small, A, O)
    check(w, e, E.TypeCheckError, "BAD-C102", r"tmp = pl\.create_tile\(\[64, 64\], dtype=pl\.FP32",
          r"tile\.row_max: the scratch tile is Tile\[64, 1\] fp32 but x is Tile\[64, 64\] fp32", "frontend")


# ============================================================================= fixed by this corpus: ir.compile
def test_compile_a_program_without_an_orchestration(w):
    @pl.program
    class KernelOnly:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],  # BAD-C103
              o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            o = pl.store(pl.exp(pl.load(a, [0, 0], [64, 64])), [0, 0], o)
            return o
    with pytest.raises(E.CodegenError) as e:
        w.program(KernelOnly)
    check(w, e, E.CodegenError, "BAD-C103", r"pl\.FunctionType\.Orchestration.*skip_ptoas=True",
          r"program 'KernelOnly' has no orchestration function: nothing would launch its functions \('k'\)", None)


def test_compile_with_an_unknown_backend_type(w):
    prog = _good_program()
    with pytest.raises(ValueError) as e:
        w.program(prog, backend_type="Ascend910")  # BAD-C104
    check_py(w, e, ValueError, "BAD-C104",
             r"backend_type='Ascend910' is not valid; choose one of Ascend910B, Ascend950")


@pl.jit
def region_without_level(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at():  # BAD-C105
        o[:] = pl.exp(a)
    return o


def test_pl_at_without_a_level(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(region_without_level, A, O)
    check(w, e, E.ParserError, "BAD-C105", r"with pl\.at\(level=pl\.Level\.CORE_GROUP\)",
          r"pl\.at\(\) needs the level of the region", "frontend")



@pl.jit
def tile_created_in_ddr(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.DDR)  # BAD-C111
        pl.store(t, [0, 0], o)
    return o


def test_tile_created_in_ddr(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(tile_created_in_ddr, A, O)
    check(w, e, E.TypeCheckError, "BAD-C111", r"pl\.create_tensor in the orchestration",
          r"create_tile: a tile lives on chip, not in DDR", "frontend")


@pl.jit
def move_into_acc(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.move(m, target_memory=pl.Mem.Acc)  # BAD-C112
        pl.store(acc, [0, 0], o)
    return o


def test_move_into_acc(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(move_into_acc, A, O)
    check(w, e, E.CodegenError, "BAD-C112", r"only pl\.matmul / pl\.matmul_acc write Acc",
          r"no data path from Mat to Acc", "pass:InferTileMemorySpace")


@pl.jit
def matmul_tile_by_tensor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        o[:] = pl.matmul(lhs, a)  # BAD-C113
    return o


def test_matmul_of_a_tile_by_a_tensor(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(matmul_tile_by_tensor, A, O)
    check(w, e, E.TypeCheckError, "BAD-C113", r"load the tensor's window into a tile first",
          r"matmul: cannot mix Tile\[64, 64\] fp32 and Tensor\[64, 64\] fp32", "frontend")


@pl.jit
def store_arguments_swapped(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(t, o, [0, 0])  # BAD-C114
    return o


def test_store_with_offsets_and_tensor_swapped(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(store_arguments_swapped, A, O)
    check(w, e, E.TypeCheckError, "BAD-C114", r"pl\.store\(tile, offsets, out_tensor\)",
          r"store: the offsets and the tensor are swapped", "frontend")


@pl.jit
def scope_inside_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        with pl.scope():  # BAD-C115
            o[:] = pl.exp(a)
    return o


def test_runtime_scope_inside_a_pl_at_region(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(scope_inside_region, A, O)
    check(w, e, E.ParserError, "BAD-C115", r"in the orchestration, around the `with pl\.at\(\.\.\.\)` blocks",
          r"pl\.scope inside a kernel", "frontend")


@pl.jit
def loop_index_hides_a_tensor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for a in pl.range(2):  # BAD-C116
            pl.store(pl.load(a, [0, 0], [32, 64]), [0, 0], o)
    return o


def test_loop_index_named_like_a_tensor(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(loop_index_hides_a_tensor, A, O)
    check(w, e, E.ParserError, "BAD-C116", r"give the index its own name: for i in pl\.range",
          r"the loop index 'a' hides the tensor 'a'", "frontend")


@pl.jit.incore
def copy_without_return(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)


@pl.jit
def uses_a_kernel_without_return(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = copy_without_return(a, o)  # BAD-C117
    return o


def test_result_of_a_kernel_that_returns_nothing(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(uses_a_kernel_without_return, A, O)
    check(w, e, E.ParserError, "BAD-C117", r"end copy_without_return with `return <the Out tensor it writes>`",
          r"`copy_without_return` returns nothing, so there is no value to assign to 'o'", "frontend")


@pl.jit
def dep_called_with_a_wrong_keyword(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = copy_rows(a, out=o)  # BAD-C118
    return o


def test_kernel_called_with_a_misspelled_keyword(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(dep_called_with_a_wrong_keyword, A, O)
    check(w, e, E.ParserError, "BAD-C118", r"call it as copy_rows\(a, o\)",
          r"`copy_rows` got an unexpected keyword argument `out`", "specialize")


@pl.jit
def if_on_a_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        if t:  # BAD-C119
            pl.store(t, [0, 0], o)
    return o


def test_if_on_a_tile(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(if_on_a_tile, A, O)
    check(w, e, E.ParserError, "BAD-C119", r"compare scalars", r"an if condition must be a scalar, got Tile",
          "frontend")


@pl.jit
def yield_in_one_branch(a: pl.Tensor, o: pl.Out[pl.Tensor], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            t = pl.load(a, [0, 0], [64, 64])
            if i == 0:  # BAD-C120
                r = pl.yield_(pl.exp(t))
            pl.store(t, [0, 0], o)
    return o


def test_if_yielding_in_one_branch_only(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(yield_in_one_branch, A, O, n=pl.RUNTIME)
    check(w, e, E.ParserError, "BAD-C120", r"add an else branch ending with `r = pl\.yield_",
          r"when one branch of an if ends with pl\.yield_, both must", "frontend")


@pl.jit
def cast_with_unknown_rounding(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        h = pl.cast(t, pl.FP16, mode="nearest")  # BAD-C121
        pl.store(pl.cast(h, pl.FP32), [0, 0], o)
    return o


def test_cast_with_an_unknown_rounding_mode(w):
    with pytest.raises(E.CodegenError) as e:
        w.jit(cast_with_unknown_rounding, A, O)
    check(w, e, E.CodegenError, "BAD-C121", r"none, rint, round, floor, ceil, trunc, odd",
          r"cast: unknown round mode 'nearest'", "pto")

@pl.jit
def one_chunk_too_many(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(3):
            t = pl.load(a, [i * 32, 0], [32, 64])  # BAD-C122
            pl.store(pl.exp(t), [i * 32, 0], o)
    return o


def test_loop_running_one_chunk_past_the_tensor(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(one_chunk_too_many, A, O)
    check(w, e, E.TypeCheckError, "BAD-C122", r"fix the loop's bounds or step",
          r"load: at i = 2 the window \[64, 96\) of dim 0 lies outside the tensor's extent 64", "frontend")


@pl.jit
def region_offset_by_half_a_chunk(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            o[i * 32 + 16:i * 32 + 48, :] = pl.load(a, [i * 32, 0], [32, 64])  # BAD-C123
    return o


def test_region_writes_that_leave_the_tensor_on_the_last_iteration(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(region_offset_by_half_a_chunk, A, O)
    check(w, e, E.TypeCheckError, "BAD-C123", r"keep every iteration's window inside the tensor",
          r"assemble: at i = 1 the window \[48, 80\) of dim 0 lies outside the tensor's extent 64", "frontend")



@pl.jit
def tile_loaded_in_the_orchestration(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [64, 64])  # BAD-C124
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(t, [0, 0], o)
    return o


def test_tile_loaded_in_the_orchestration_body(w):
    with pytest.raises(E.MisplacedTensorOpError) as e:
        w.jit(tile_loaded_in_the_orchestration, A, O)
    check(w, e, E.MisplacedTensorOpError, "BAD-C124", r"inside `with pl\.at\(level=pl\.Level\.CORE_GROUP\):`",
          r"pl\.load \(tile\.load\) at line \d+ is written directly in the orchestration body", "frontend")


@pl.jit
def chained_comparison(a: pl.Tensor, o: pl.Out[pl.Tensor], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            if 0 < i < 3:  # BAD-C125
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


def test_chained_comparison(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(chained_comparison, A, O, n=pl.RUNTIME)
    check(w, e, E.ParserError, "BAD-C125", r"nest ifs", r"chained comparisons are not supported", "frontend")


@pl.jit
def scalar_min_of_tiles(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.min(t, pl.exp(t)), [0, 0], o)  # BAD-C126
    return o


def test_scalar_min_on_tiles(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(scalar_min_of_tiles, A, O)
    check(w, e, E.ParserError, "BAD-C126", r"pl\.minimum\(a, b\)", r"pl\.min works on scalars, got Tile", "frontend")


@pl.jit
def fractional_offset(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            pl.store(pl.load(a, [i * 32.0, 0], [32, 64]), [0, 0], o)  # BAD-C127
    return o


def test_index_times_a_float(w):
    with pytest.raises(E.TypeCheckError) as e:
        w.jit(fractional_offset, A, O)
    check(w, e, E.TypeCheckError, "BAD-C127", r"no implicit promotion", r"`\*`: dtype mismatch index vs fp32",
          "frontend")


@pl.jit
def yield_outside_a_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        r = pl.yield_(t)  # BAD-C128
    return o


def test_yield_outside_a_loop_or_if(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(yield_outside_a_loop, A, O)
    check(w, e, E.ParserError, "BAD-C128", r"move it to the end of the body",
          r"pl\.yield_ must be the last statement of a loop body or an if/else branch", "frontend")


@pl.jit
def range_kept_in_a_variable(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    rows = pl.range(4)  # BAD-C129
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_pl_range_outside_a_for(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(range_kept_in_a_variable, A, O)
    check(w, e, E.ParserError, "BAD-C129", r"for i in pl\.range\(n\)",
          r"pl\.range\(\.\.\.\) is only allowed as the iterable of a for loop", "frontend")


@pl.jit
def const_of_a_word(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.muls(t, pl.const("two", pl.FP32)), [0, 0], o)  # BAD-C130
    return o


def test_pl_const_of_a_word(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(const_of_a_word, A, O)
    check(w, e, E.ParserError, "BAD-C130", r"pl\.const\(2\.0, pl\.FP32\)", r"pl\.const: 'two' is not a number",
          "frontend")

def test_helper_with_regions_next_to_the_orchestration(w):
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function
            def stage(self, a: pl.Tensor[[64, 64], pl.FP32],  # BAD-C131
                      o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.exp(a)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.stage(a, o)
                return o
    check(w, e, E.ParserError, "BAD-C131", r"make stage an Inline function",
          r"'stage' has pl\.at regions, which makes it an orchestration, but 'main' already is", None)


def test_misspelled_pl_function_keyword(w):
    with pytest.raises(TypeError) as e:
        @pl.program
        class Bad:
            @pl.function(typ=pl.FunctionType.Orchestration)  # BAD-C107
            def main(self, a: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
                return a
    check_py(w, e, TypeError, "BAD-C107", r"unexpected keyword argument 'typ'; did you mean type=\?")


# ======================================================== @pl.jit arguments
@pl.jit
def two_rows_of_m(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):  # BAD-C109
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [32, 64]), [0, 0], y)
    return y


def test_one_dynamic_dim_with_two_extents(w):
    with pytest.raises(TypeError) as e:
        w.jit(two_rows_of_m, torch.zeros(64, 64), torch.zeros(32, 64))  # BAD-C108
    check_py(w, e, TypeError, "BAD-C108", r"'M' is 64 for 'x' but 32 for 'y'")


def test_tensor_of_another_rank_than_its_annotation(w):
    with pytest.raises(E.ParserError) as e:
        w.jit(two_rows_of_m, torch.zeros(4, 64, 64), torch.zeros(4, 64, 64))
    check(w, e, E.ParserError, "BAD-C109", r"pass a tensor of rank 2",
          r"argument `x` has 3 dims \[4, 64, 64\] but its annotation `pl\.Tensor\[\[M, 64\], pl\.FP32\]` has 2",
          "specialize")


def test_float64_tensor(w):
    with pytest.raises(TypeError) as e:
        w.jit(exp_kernel, np.zeros((64, 64)), O)  # BAD-C110
    check_py(w, e, TypeError, "BAD-C110", r"exp_kernel\(\): 'a' has dtype float64.*float32")
