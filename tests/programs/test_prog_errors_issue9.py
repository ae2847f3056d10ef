"""Issue 9, items 5 and 6: errors found by later stages, by the call checks and by
ir.compile name the user's file:line (the line tagged `# BAD-<n>` here) with a hint,
and a failing compile leaves nothing behind: no action of the failing step (nor a
whole-compile entry) in the store, no artifact in the output directory."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import CFG, check_error, tagged_line

A, O = torch.zeros(64, 64), torch.zeros(64, 64)


def line_of(tag: str) -> int:
    return tagged_line(__file__, tag)


def check(exc_info, cls, tag, hint_re, msg_re):
    check_error(exc_info, cls, __file__, tag, hint_re, msg_re)


# ----------------------------------------------------------------------------- nothing cached
def _actions() -> dict[str, dict]:
    root = Path(os.environ["PYPTO_CACHE_DIR"]) / "v2" / "actions"
    out = {}
    if root.is_dir():
        for p in root.glob("*/*"):
            try:
                out[str(p)] = json.loads(p.read_text())
            except (OSError, ValueError):
                out[str(p)] = {}
    return out


def _builds(prog: str) -> set[Path]:
    base = Path(os.environ["PYPTO_PROG_BUILD_DIR"])
    return set(base.glob(f"{prog}_*")) if base.is_dir() else set()


class Leftovers:
    """What a failing compile added to the store and the build base."""

    def __init__(self, prog: str):
        self.prog = prog

    def __enter__(self):
        self.before = _actions()
        self.dirs = _builds(self.prog)
        return self

    def __exit__(self, *exc):
        after = _actions()
        self.new = [m for k, m in after.items() if k not in self.before]
        self.new_dirs = _builds(self.prog) - self.dirs
        return False

    def steps(self) -> list[str]:
        return sorted(m.get("step", "<whole compile>") for m in self.new)

    def assert_nothing_cached(self, failing: str | None = None, may_succeed=("specialize",)):
        """No whole-compile entry; no action of the failing step; only steps of the
        stages in `may_succeed` (the ones before the failing one) may have run."""
        for m in self.new:
            assert "tasks" not in m, f"a whole-compile entry was stored: {m}"
            assert m.get("stage") in may_succeed, f"unexpected action of {m.get('step')}"
            if failing is not None:
                assert not m.get("step", "").startswith(failing), f"the failing step {failing} was cached"
        for d in self.new_dirs:
            files = sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())
            artifacts = [f for f in files if not f.startswith("report/")]
            assert artifacts == [], f"{d.name} holds artifacts of a failed compile: {artifacts}"


def compile_(fn, *args):
    return fn.compile(*args, config=CFG)


# ----------------------------------------------------------------------------- 5a: recursion, zero dims
@pl.jit
def orch_calls_itself(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    o = orch_calls_itself(a, o)  # BAD-1
    return o


def test_jit_orchestration_that_calls_itself():
    with Leftovers("_jit_orch_calls_itself") as left, pytest.raises(E.ParserError) as e:
        compile_(orch_calls_itself, A, O)
    check(e, E.ParserError, "BAD-1", r"pl\.range", r"recursion is not supported: `orch_calls_itself` calls itself")
    left.assert_nothing_cached(may_succeed=())


def test_program_orchestration_that_calls_itself():
    with Leftovers("Rec") as left, pytest.raises(E.ParserError) as e:
        @pl.program
        class Rec:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(a, o)
                o = self.main(a, o)  # BAD-2
                return o
    check(e, E.ParserError, "BAD-2", r"pl\.range", r"recursion is not supported: 'main' calls itself")
    left.assert_nothing_cached(may_succeed=())


def test_program_orchestration_calling_another_orchestration():
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Two:
            @pl.function(type=pl.FunctionType.Orchestration)
            def helper(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.helper(a, o)  # BAD-3
                return o
    check(e, E.TypeCheckError, "BAD-3", r"InCore kernel", r"orchestration 'main' calls orchestration 'helper'")


@pl.jit
def zero_dim_tensor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    x = pl.create_tensor([0, 64], dtype=pl.FP32)  # BAD-4
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_jit_create_tensor_with_a_zero_dim():
    with Leftovers("_jit_zero_dim_tensor") as left, pytest.raises(E.TypeCheckError) as e:
        compile_(zero_dim_tensor, A, O)
    check(e, E.TypeCheckError, "BAD-4", r"positive integer", r"shape \[0, 64\] has a non-positive dimension")
    left.assert_nothing_cached(failing="frontend:")


def test_program_create_tensor_with_a_negative_dim():
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Neg:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                x = pl.create_tensor([64, -64], dtype=pl.FP32)  # BAD-5
                o = self.k(a, o)
                return o
    check(e, E.TypeCheckError, "BAD-5", r"positive integer", r"\[64, -64\] has a non-positive dimension \(-64")


@pl.jit
def zero_dim_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 0], dtype=pl.FP32, target_memory=pl.Mem.Vec)  # BAD-6
        o[:] = pl.exp(a)
    return o


def test_create_tile_with_a_zero_dim():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(zero_dim_tile, A, O)
    check(e, E.TypeCheckError, "BAD-6", r"positive integer", r"create_tile: shape \[64, 0\]")


# ----------------------------------------------------------------------------- 5b: a kernel that calls itself
@pl.jit.incore
def self_calling_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    o = self_calling_kernel(a, o)  # BAD-7
    return o


@pl.jit
def calls_self_calling_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = self_calling_kernel(a, o)
    return o


def test_jit_incore_kernel_that_calls_itself():
    with Leftovers("_jit_calls_self_calling_kernel") as left, pytest.raises(E.ParserError) as e:
        compile_(calls_self_calling_kernel, A, O)
    check(e, E.ParserError, "BAD-7", r"pl\.range",
          r"recursion is not supported: `self_calling_kernel` calls itself")
    left.assert_nothing_cached(may_succeed=())


def test_program_incore_kernel_that_calls_itself():
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                o = self.k(a, o)  # BAD-8
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(a, o)
                return o
    check(e, E.ParserError, "BAD-8", r"cannot call itself", r"recursion is not supported: 'k' calls itself")
    assert "pass" not in e.value.message.lower()


def test_program_kernels_that_call_each_other():
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Cycle:
            @pl.function(type=pl.FunctionType.InCore)
            def k1(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k2(a, o)
                return o

            @pl.function(type=pl.FunctionType.InCore)
            def k2(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k1(a, o)  # BAD-9
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k1(a, o)
                return o
    check(e, E.ParserError, "BAD-9", r"cannot call itself", r"'k1' calls itself through k1 -> k2 -> k1")


@pl.jit.incore
def ping(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = pong(a, o)
    return o


@pl.jit.incore
def pong(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = ping(a, o)  # BAD-10
    return o


@pl.jit
def calls_ping(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = ping(a, o)
    return o


def test_jit_kernels_that_call_each_other():
    with pytest.raises(E.ParserError) as e:
        compile_(calls_ping, A, O)
    check(e, E.ParserError, "BAD-10", r"pl\.range", r"`ping` calls itself through ping -> pong -> ping")


@pl.jit
def other_entry(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


@pl.jit
def calls_other_entry(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = other_entry(a, o)  # BAD-11
    return o


def test_jit_entry_calling_another_entry():
    with pytest.raises(E.ParserError) as e:
        compile_(calls_other_entry, A, O)
    check(e, E.ParserError, "BAD-11", r"@pl\.jit\.incore", r"`other_entry`, a @pl\.jit entry")
    assert isinstance(e.value, TypeError)          # what it was before, for callers that catch it


# ----------------------------------------------------------------------------- 5c: names that are not identifiers
def _escape(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_jit_name_that_is_not_an_identifier_at_decoration():
    def f(a: pl.Tensor, o: pl.Out[pl.Tensor]):
        return o
    f.__name__ = "../escape"
    with pytest.raises(ValueError, match=r"named '\.\./escape', which is not a Python identifier"):
        pl.jit(f)


def test_jit_name_changed_after_decoration_is_refused_before_any_path_is_made(tmp_path):
    k = pl.jit(_escape)
    k.__name__ = "../escape"
    base = Path(os.environ["PYPTO_PROG_BUILD_DIR"])
    outside = {p.name for p in base.parent.iterdir()}
    with Leftovers("_jit_") as left, pytest.raises(ValueError, match="not a Python identifier") as e:
        compile_(k, A, O)
    assert not isinstance(e.value, FileNotFoundError)
    assert {p.name for p in base.parent.iterdir()} == outside      # nothing escaped the base
    assert not any("escape" in p.name for p in base.glob("*"))
    left.assert_nothing_cached(may_succeed=())


def test_ir_compile_refuses_a_program_name_that_is_not_an_identifier(tmp_path):
    @pl.program
    class Fine:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            o = self.k(a, o)
            return o
    bad = ir.Program("../escape", Fine.functions, Fine.source)
    with pytest.raises(ValueError, match=r"'\.\./escape', which is not a Python identifier"):
        ir.compile(bad, platform="a2a3sim")


# ----------------------------------------------------------------------------- 5d: argument shapes at a call
@pl.jit.incore
def k64(a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def passes_a_smaller_tensor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = k64(a, o)  # BAD-12
    return o


def test_jit_kernel_called_with_another_static_shape():
    small = torch.zeros(32, 64)
    with Leftovers("_jit_passes_a_smaller_tensor") as left, pytest.raises(E.TypeCheckError) as e:
        compile_(passes_a_smaller_tensor, small, O)
    check(e, E.TypeCheckError, "BAD-12", r"pl\.dynamic",
          r"argument 0 \(a\) has shape \[32, 64\] but k64 declares a as \[64, 64\]")
    left.assert_nothing_cached(failing="frontend:")


def test_jit_kernel_called_with_another_dtype():
    h = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(E.TypeCheckError) as e:
        compile_(passes_a_smaller_tensor, h, O)
    check(e, E.TypeCheckError, "BAD-12", r"kind and dtype", r"argument 0 \(a\) expects Tensor\['?64'?, '?64'?\] fp32")
    assert "fp16" in e.value.message


def test_program_kernel_called_with_another_static_shape():
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Shapes:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(a, o)  # BAD-13
                return o
    check(e, E.TypeCheckError, "BAD-13", r"pass a tensor of shape \[64, 64\]",
          r"self\.k: argument 0 \(a\) has shape \[32, 64\] but k declares a as \[64, 64\] \(dim 0: 32 vs 64\)")


N = pl.dynamic("N")


def test_a_dynamic_dim_accepts_any_extent():
    @pl.program
    class Dyn:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[N, 64], pl.FP32], o: pl.Out[pl.Tensor[[N, 64], pl.FP32]]) -> pl.Tensor[[N, 64], pl.FP32]:
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[N, 64], pl.FP32]:
            o = self.k(a, o)
            return o
    assert [f.name for f in Dyn.functions] == ["k", "main"]


def test_program_kernel_called_with_another_rank():
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Rank:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[4, 16, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = self.k(a, o)  # BAD-14
                return o
    check(e, E.TypeCheckError, "BAD-14", r"pl\.dynamic", r"\(rank 3 vs 2\)")


# ----------------------------------------------------------------------------- 5e: argument kinds of ops
@pl.jit
def offsets_as_a_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, "0,0", [64, 64])  # BAD-15
        pl.store(t, [0, 0], o)
    return o


def test_load_offsets_given_as_a_string():
    with Leftovers("_jit_offsets_as_a_string") as left, pytest.raises(E.TypeCheckError) as e:
        compile_(offsets_as_a_string, A, O)
    check(e, E.TypeCheckError, "BAD-15", r"pl\.load\(tensor, offsets, shapes",
          r"pl\.load: offsets must be a list of indices like \[0, 0\], got the string '0,0'")
    assert "argument" not in e.value.message.split(":")[1] or "missing" not in e.value.message
    left.assert_nothing_cached(failing="frontend:")


@pl.jit
def shapes_as_an_int(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], 64)  # BAD-16
        pl.store(t, [0, 0], o)
    return o


def test_load_shapes_given_as_a_number():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(shapes_as_an_int, A, O)
    check(e, E.TypeCheckError, "BAD-16", r"pl\.load\(tensor, offsets, shapes",
          r"shapes must be a list like \[64, 64\], got 64")


@pl.jit
def store_offsets_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(t, "0,0", o)  # BAD-17
    return o


def test_store_offsets_given_as_a_string():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(store_offsets_string, A, O)
    check(e, E.TypeCheckError, "BAD-17", r"pl\.store\(tile, offsets, output_tensor",
          r"pl\.store: offsets must be a list of indices")


@pl.jit
def target_memory_as_a_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], "Vec")  # BAD-18
        pl.store(t, [0, 0], o)
    return o


def test_load_with_a_positional_string_option():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(target_memory_as_a_string, A, O)
    check(e, E.TypeCheckError, "BAD-18", r"pl\.load\(", r"unexpected extra argument the string 'Vec'")


@pl.jit
def create_tile_shape_int(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile(64, dtype=pl.FP32, target_memory=pl.Mem.Vec)  # BAD-19
        o[:] = pl.exp(a)
    return o


def test_create_tile_shape_given_as_a_number():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(create_tile_shape_int, A, O)
    check(e, E.TypeCheckError, "BAD-19", r"pl\.create_tile\(\[M, N\]", r"create_tile: shape must be a list")


@pl.jit
def reshape_shape_int(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.reshape(t, "64x64"), [0, 0], o)  # BAD-20
    return o


def test_reshape_shape_given_as_a_string():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(reshape_shape_int, A, O)
    check(e, E.TypeCheckError, "BAD-20", r"pl\.reshape\(x, \[M, N\]\)",
          r"pl\.reshape: shape must be a list of dimensions like \[64, 64\], got the string '64x64'")


@pl.jit
def target_memory_keyword_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64], target_memory="Vec")  # BAD-22
        pl.store(t, [0, 0], o)
    return o


@pl.jit
def create_tile_memory_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 64], dtype=pl.FP32, target_memory="Vec")  # BAD-23
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def cast_dtype_keyword_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.cast(pl.load(a, [0, 0], [64, 64]), dtype="fp16")  # BAD-24
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def matmul_out_dtype_string(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.matmul(a, a, out_dtype="fp32")  # BAD-25
    return o


@pl.jit
def fractional_offset(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0.5, 0], [64, 64])  # BAD-26
        pl.store(t, [0, 0], o)
    return o


@pytest.mark.parametrize("fn, tag, hint_re, msg_re", [
    (target_memory_keyword_string, "BAD-22", r"target_memory=pl\.Mem\.Vec",
     r"target_memory= must be a memory space, got the string 'Vec'"),
    (create_tile_memory_string, "BAD-23", r"target_memory=pl\.Mem\.Vec",
     r"tile\.create: target_memory= must be a memory space, got the string 'Vec'"),
    (cast_dtype_keyword_string, "BAD-24", r"dtype=pl\.FP32", r"cast: dtype= must be a dtype, got the string 'fp16'"),
    (matmul_out_dtype_string, "BAD-25", r"out_dtype=pl\.FP32",
     r"matmul: out_dtype= must be a dtype, got the string 'fp32'"),
    (fractional_offset, "BAD-26", r"integer constants or index expressions", r"load: offsets must be integers, got 0\.5"),
])
def test_keyword_and_offset_kinds_are_checked(fn, tag, hint_re, msg_re):
    with Leftovers(f"_jit_{fn.__name__}") as left, pytest.raises(E.TypeCheckError) as e:
        compile_(fn, A, O)
    check(e, E.TypeCheckError, tag, hint_re, msg_re)
    assert "internal" not in e.value.message
    left.assert_nothing_cached(failing="frontend:")


# ----------------------------------------------------------------------------- 5f: pl.full
@pl.jit
def full_in_the_orchestration(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    x = pl.full([64, 64], dtype=pl.FP32, value=2.0)  # BAD-30
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.add(a, x)
    return o


def test_full_in_the_orchestration_body_is_refused_at_its_line():
    with Leftovers("_jit_full_in_the_orchestration") as left, pytest.raises(E.MisplacedTensorOpError) as e:
        compile_(full_in_the_orchestration, A, O)
    check(e, E.MisplacedTensorOpError, "BAD-30", r"inside `with pl\.at\(level=pl\.Level\.CORE_GROUP\):`",
          r"pl\.full fills a tensor on the device; it cannot run in the orchestration body")
    left.assert_nothing_cached(failing="frontend:")


def test_full_in_an_orchestration_method_is_refused_at_its_line():
    with pytest.raises(E.MisplacedTensorOpError) as e:
        @pl.program
        class FullOrch:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                x = pl.full([64, 64], dtype=pl.FP32, value=2.0)  # BAD-31
                o = self.k(a, o)
                return o
    check(e, E.MisplacedTensorOpError, "BAD-31", r"pl\.create_tensor", r"pl\.full fills a tensor")


@pl.jit
def full_string_value(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.FP32, value="2.0")  # BAD-32
        o[:] = pl.add(a, x)
    return o


@pl.jit
def full_float_for_int(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.INT32, value=1.5)  # BAD-33
        o[:] = pl.add(a, x)
    return o


@pl.jit
def full_out_of_range(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.INT8, value=300)  # BAD-34
        o[:] = pl.add(a, x)
    return o


@pl.jit
def full_without_value(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.FP32)  # BAD-35
        o[:] = pl.add(a, x)
    return o


@pl.jit
def full_bool_value(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 64], dtype=pl.FP32, value=True)  # BAD-36
        o[:] = pl.add(a, x)
    return o


@pl.jit
def full_zero_dim(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.full([64, 0], dtype=pl.FP32, value=1.0)  # BAD-37
        o[:] = pl.add(a, x)
    return o


@pl.jit
def tile_full_in_mat(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.tile.full([64, 64], dtype=pl.FP32, value=1.0, target_memory=pl.Mem.Mat)  # BAD-38
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pytest.mark.parametrize("fn, args, tag, hint_re, msg_re", [
    (full_string_value, (A, O), "BAD-32", r"pl\.full\(\[M, N\], dtype=pl\.FP32, value=0\.0\)",
     r"full: value must be a number, got the string '2\.0'"),
    (full_float_for_int, (torch.zeros(64, 64, dtype=torch.int32),) * 2, "BAD-33", r"integer value for int32",
     r"full: value 1\.5 is a float but the dtype is int32"),
    (full_out_of_range, (torch.zeros(64, 64, dtype=torch.int8),) * 2, "BAD-34", r"wider dtype",
     r"full: value 300 does not fit int8 \(\[-128, 127\]\)"),
    (full_without_value, (A, O), "BAD-35", r"value=0\.0", r"full: value= is required"),
    (full_bool_value, (A, O), "BAD-36", r"value=0\.0", r"full: value must be a number, got True"),
    (full_zero_dim, (A, O), "BAD-37", r"positive integer", r"full: shape \[64, 0\] has a non-positive"),
    (tile_full_in_mat, (A, O), "BAD-38", r"pl\.move", r"tile\.full: a filled tile lives in Vec, not Mat"),
])
def test_full_value_and_shape_are_checked(fn, args, tag, hint_re, msg_re):
    with Leftovers(f"_jit_{fn.__name__}") as left, pytest.raises(E.TypeCheckError) as e:
        compile_(fn, *args)
    check(e, E.TypeCheckError, tag, hint_re, msg_re)
    left.assert_nothing_cached(failing="frontend:")


# ----------------------------------------------------------------------------- 6: a lowered program
@pl.jit
def add_for_lowering(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_ir_compile_of_a_lowered_program_says_it_is_lowered():
    big = torch.zeros(128, 128)
    lowered = add_for_lowering.lower(big, big, big, config=CFG)
    with Leftovers("_jit_add_for_lowering") as left, pytest.raises(E.LoweredProgramError) as e:
        ir.compile(lowered, platform="a2a3sim")  # BAD-21
    check(e, E.LoweredProgramError, "BAD-21", r"kernel\.compile\(\*args, config=RunConfig",
          r"program '_jit_add_for_lowering' is already lowered")
    assert not isinstance(e.value, E.MemoryOverflowError)
    assert isinstance(e.value, ValueError)
    assert left.new == [] and left.new_dirs == set()       # refused before anything ran


def test_ir_compile_of_a_late_pass_dump_says_it_is_lowered(tmp_path):
    compiled = add_for_lowering.compile(A, A, O, config=CFG.__class__(platform="a2a3sim", dump_passes=True))
    dumps = sorted((Path(compiled.output_dir) / "passes_dump").glob("*_after_*.py"))
    last = pl.loads(dumps[-1])
    with pytest.raises(E.LoweredProgramError):
        ir.compile(last, platform="a2a3sim", output_dir=tmp_path / "again")
    assert not (tmp_path / "again").exists()
    # the program before the passes still compiles
    first = pl.loads(Path(compiled.output_dir) / "passes_dump" / "00_frontend.py")
    again = ir.compile(first, platform="a2a3sim", output_dir=tmp_path / "front")
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    out = torch.zeros(64, 64)
    again(a, b, out)
    assert torch.allclose(out, a + b)
