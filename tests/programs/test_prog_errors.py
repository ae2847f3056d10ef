"""Bad programs: each fails with its typed error (pypto.errors.*), names the user's
file:line (the line tagged `# BAD-<n>` in this file) and gives a hint."""

import pytest
import torch

import pypto.errors as E
import pypto.language as pl

from prog_helpers import CFG, check_error, tagged_line

A, B, O = torch.zeros(64, 64), torch.zeros(64, 64), torch.zeros(64, 64)
H = torch.zeros(64, 64, dtype=torch.float16)


def line_of(tag: str) -> int:
    return tagged_line(__file__, tag)


def check(exc_info, cls, tag, hint_re, msg_re):
    check_error(exc_info, cls, __file__, tag, hint_re, msg_re)


def compile_(fn, *args):
    return fn.compile(*args, config=CFG)


# ----------------------------------------------------------------------------- the language
@pl.jit
def op_outside_the_surface(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.sort(t), [0, 0], o)  # BAD-1
    return o


def test_op_outside_the_surface():
    with pytest.raises(E.UnknownOpError) as e:
        compile_(op_outside_the_surface, A, O)
    check(e, E.UnknownOpError, "BAD-1", r"did you mean pl\.sort32", r"pl\.sort is not an operator")


@pl.jit
def tensor_op_outside_the_surface(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.tensor.sort(a)  # BAD-2
    return o


def test_namespaced_op_outside_the_surface():
    with pytest.raises(E.UnknownOpError) as e:
        compile_(tensor_op_outside_the_surface, A, O)
    check(e, E.UnknownOpError, "BAD-2", r"pl\.tensor\.sort32", r"pl\.tensor\.sort is not an operator")


@pl.jit
def wrong_arity(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.add(t), [0, 0], o)  # BAD-3
    return o


def test_wrong_arity():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(wrong_arity, A, O)
    check(e, E.TypeCheckError, "BAD-3", r"pl\.add\(a, b\)", r"takes 2 arguments, got 1")


@pl.jit
def unknown_keyword(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.exp(t, fast=True), [0, 0], o)  # BAD-4
    return o


def test_unknown_keyword():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(unknown_keyword, A, O)
    check(e, E.TypeCheckError, "BAD-4", r"pl\.exp\(x\)", r"unexpected keyword argument 'fast'")


@pl.jit
def wrong_shapes(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        s = pl.load(a, [0, 0], [32, 32])
        pl.store(pl.add(t, s), [0, 0], o)  # BAD-5
    return o


def test_wrong_shapes():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(wrong_shapes, A, O)
    check(e, E.TypeCheckError, "BAD-5", r"equal shapes", r"shape mismatch \[64, 64\] vs \[32, 32\]")


@pl.jit
def matmul_shapes_do_not_chain(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(left, right), [0, 0], o)  # BAD-6
    return o


def test_matmul_shapes_do_not_chain():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(matmul_shapes_do_not_chain, A, O)
    check(e, E.TypeCheckError, "BAD-6", r"pl\.matmul\(lhs, rhs\)", r"\[64, 32\] x \[64, 64\] do not chain")


@pl.jit
def tile_dtype_mismatch(a: pl.Tensor, h: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        u = pl.load(h, [0, 0], [64, 64])
        pl.store(pl.add(t, u), [0, 0], o)  # BAD-7
    return o


def test_dtype_mismatch_without_cast():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(tile_dtype_mismatch, A, H, O)
    check(e, E.TypeCheckError, "BAD-7", r"pl\.cast", r"dtype mismatch fp32 vs fp16")


@pl.jit
def store_needs_cast(h: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.load(h, [0, 0], [64, 64])
        pl.store(u, [0, 0], o)  # BAD-9
    return o


def test_store_into_another_dtype_needs_cast():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(store_needs_cast, H, O)
    check(e, E.TypeCheckError, "BAD-9", r"pl\.cast", r"store: dtype mismatch fp16 vs fp32")


@pl.jit
def matmul_dtype_mismatch(a: pl.Tensor, h: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(h, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(left, right), [0, 0], o)  # BAD-10
    return o


def test_matmul_dtype_mismatch():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(matmul_dtype_mismatch, A, H, O)
    check(e, E.TypeCheckError, "BAD-10", r"pl\.cast", r"matmul: dtype mismatch fp32 vs fp16")


@pl.jit
def exp_on_integers(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.exp(t), [0, 0], o)  # BAD-11
    return o


def test_float_op_on_integers():
    i32 = torch.zeros(64, 64, dtype=torch.int32)
    with pytest.raises(E.TypeCheckError) as e:
        compile_(exp_on_integers, i32, i32)
    check(e, E.TypeCheckError, "BAD-11", r"pl\.cast\(x, pl\.FP32\)", r"needs a floating-point operand, got int32")


# ----------------------------------------------------------------------------- placement
@pl.jit
def tensor_op_in_orchestration(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o[:] = pl.add(a, a)  # BAD-12
    return o


def test_tensor_op_in_orchestration_outside_pl_at():
    with pytest.raises(E.MisplacedTensorOpError) as e:
        compile_(tensor_op_in_orchestration, A, O)
    check(e, E.MisplacedTensorOpError, "BAD-12", r"with pl\.at\(level=pl\.Level\.CORE_GROUP\)",
          r"pl\.add \(tensor\.add\).*orchestration body")


def test_tensor_op_in_an_orchestration_method():
    with pytest.raises(E.MisplacedTensorOpError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                t = pl.exp(a)  # BAD-13
                return o
    check(e, E.MisplacedTensorOpError, "BAD-13", r"pl\.at", r"pl\.exp \(tensor\.exp\)")


@pl.jit
def fill_in_the_orchestration(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    x = pl.full([64, 64], dtype=pl.FP32, value=0.0)  # BAD-14
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_fill_in_the_orchestration_body():
    """(pl.create_tensor inside pl.at is a kernel-local tensor: tests/ops/test_ops_local_tensor.py)"""
    with pytest.raises(E.MisplacedTensorOpError) as e:
        compile_(fill_in_the_orchestration, A, O)
    check(e, E.MisplacedTensorOpError, "BAD-14", r"inside `with pl\.at", r"fills a tensor on the device")


@pl.jit
def host_level_region(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.HOST):  # BAD-15
        o[:] = pl.exp(a)
    return o


def test_unsupported_pl_at_level():
    with pytest.raises(E.ParserError) as e:
        compile_(host_level_region, A, O)
    check(e, E.ParserError, "BAD-15", r"pl\.Level\.CORE_GROUP", r"Level\.HOST.*not supported")


# ----------------------------------------------------------------------------- memory
@pl.jit
def ub_overflow(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-16
        t = pl.load(a, [0, 0], [256, 256])
        pl.store(pl.exp(t), [0, 0], o)
    return o


def test_tile_over_ub_capacity():
    big = torch.zeros(256, 256)
    with pytest.raises(E.MemoryOverflowError) as e:
        compile_(ub_overflow, big, big)
    check(e, E.MemoryOverflowError, "BAD-16", r"smaller tiles", r"262144 bytes of Vec but a2a3 has 188416")


@pl.jit
def l0a_overflow(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # BAD-17
        left = pl.move(pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [256, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        # (one Left tile for two matmuls: AutoTileMatmulL0 blocks a matmul's own operands only)
        o = pl.store(pl.matmul_acc(pl.matmul(left, right), left, right), [0, 0], o)
    return o


def test_tile_over_l0a_capacity():
    with pytest.raises(E.MemoryOverflowError) as e:
        compile_(l0a_overflow, torch.zeros(128, 256), torch.zeros(256, 32), torch.zeros(128, 32))
    check(e, E.MemoryOverflowError, "BAD-17", r"smaller tiles", r"131072 bytes of Left but a2a3 has 65536")


@pl.jit
def column_not_32_bytes(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [4, 1])  # BAD-18
        pl.store(pl.exp(t), [0, 0], o)
    return o


def test_tile_column_not_a_multiple_of_32_bytes():
    """(a row narrower than a block is padded: tests/ops/test_ops_narrow_rows.py; a column
    tile's column is not)"""
    small = torch.zeros(4, 1)
    with pytest.raises(E.CodegenError) as e:
        compile_(column_not_32_bytes, small, small)
    check(e, E.CodegenError, "BAD-18", r"\[8, 1\]", r"\[4, 1\] fp32 has a 16-byte column")


@pl.jit
def load_into_left(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Left)  # BAD-19
        pl.store(left, [0, 0], o)
    return o


def test_load_into_left():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(load_into_left, A, O)
    check(e, E.TypeCheckError, "BAD-19", r"load into Mat and use pl\.move", r"lands in Vec or Mat, not Left")


# ----------------------------------------------------------------------------- cube / vector
@pl.jit
def matmul_acc_into_vec(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        left = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul_acc(t, left, right), [0, 0], o)  # BAD-22
    return o


def test_matmul_acc_into_a_vec_tile():
    with pytest.raises(E.CodegenError) as e:
        compile_(matmul_acc_into_vec, A, O)
    check(e, E.CodegenError, "BAD-22", r"only pl\.matmul / pl\.matmul_acc write Acc", r"no data path from Vec to Acc")


@pl.jit
def store_from_mat_statement(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        pl.store(m, [0, 0], o)  # BAD-23
    return o


def test_store_from_mat_written_as_a_statement():
    with pytest.raises(E.CodegenError) as e:
        compile_(store_from_mat_statement, A, O)
    check(e, E.CodegenError, "BAD-23", r"store the tile you loaded it from", r"no data path from Mat to GM")


# ----------------------------------------------------------------------------- names, annotations, syntax
@pl.jit
def undefined_name(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.exp(tt), [0, 0], o)  # noqa: F821  # BAD-24
    return o


def test_undefined_name():
    with pytest.raises(E.ParserError) as e:
        compile_(undefined_name, A, O)
    check(e, E.ParserError, "BAD-24", r"did you mean 't'", r"name 'tt' is not defined")


@pl.jit
def loop_local_after_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 32, 0], [32, 64])
        pl.store(t, [0, 0], o)  # BAD-25
    return o


def test_loop_local_used_after_the_loop():
    with pytest.raises(E.ParserError) as e:
        compile_(loop_local_after_loop, A, O)
    check(e, E.ParserError, "BAD-25", r"give 't' a value before the loop", r"used after the loop")


@pl.jit
def tensor_without_dtype(a: pl.Tensor[[64, 64]], o: pl.Out[pl.Tensor]):  # BAD-26
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


def test_bad_annotation_under_jit():
    with pytest.raises(E.ParserError) as e:
        compile_(tensor_without_dtype, A, O)
    check(e, E.ParserError, "BAD-26", r"pl\.Tensor\[\[64, 128\], pl\.FP16\]", r"needs a shape and a dtype")


def test_bad_annotation_in_a_program():
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[64, pl.FP32],  # BAD-27
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(e, E.ParserError, "BAD-27", r"pl\.Tensor\[\[64, 128\]", r"the shape must be a list")


def test_bare_tensor_outside_jit():
    with pytest.raises(E.ParserError) as e:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor,  # BAD-28
                     o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                return o
    check(e, E.ParserError, "BAD-28", r"pl\.Tensor\[\[64, 128\]", r"only allowed under @pl\.jit")


@pl.jit
def while_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        while True:  # BAD-29
            t = pl.exp(t)
        pl.store(t, [0, 0], o)
    return o


def test_unsupported_statement():
    with pytest.raises(E.ParserError) as e:
        compile_(while_loop, A, O)
    check(e, E.ParserError, "BAD-29", r"pl\.range", r"`while True:` never ends")


@pl.jit
def python_range(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in range(4):  # BAD-30
            pl.store(pl.load(a, [i * 16, 0], [16, 64]), [i * 16, 0], o)
    return o


def test_python_range_in_a_kernel():
    with pytest.raises(E.ParserError) as e:
        compile_(python_range, A, O)
    check(e, E.ParserError, "BAD-30", r"pl\.range", r"builtin range\(\) cannot be used")


@pl.jit
def conditional_expression(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(t if True else t, [0, 0], o)  # BAD-31
    return o


def test_unsupported_expression():
    with pytest.raises(E.ParserError) as e:
        compile_(conditional_expression, A, O)
    check(e, E.ParserError, "BAD-31", r"if/else statement", r"unsupported expression .*IfExp")


@pl.jit
def tuple_unpacking(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t, *u = pl.load(a, [0, 0], [64, 64]), pl.load(a, [0, 0], [64, 64])  # BAD-32
        pl.store(t, [0, 0], o)
    return o


def test_tuple_unpacking_into_a_starred_name():
    with pytest.raises(E.ParserError) as e:
        compile_(tuple_unpacking, A, O)
    check(e, E.ParserError, "BAD-32", r"unpack into plain names", r"cannot unpack into `\*u`")


# ----------------------------------------------------------------------------- operator arguments
@pl.jit
def row_sum_without_scratch(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.row_expand_div(t, pl.row_sum(t)), [0, 0], o)  # BAD-33
    return o


def test_tile_row_sum_without_a_scratch_tile():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(row_sum_without_scratch, A, O)
    check(e, E.TypeCheckError, "BAD-33", r"pl\.create_tile", r"needs a scratch tile")


@pl.jit
def window_too_large(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [128, 64])  # BAD-34
        pl.store(t, [0, 0], o)
    return o


def test_load_window_larger_than_the_tensor():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(window_too_large, A, O)
    check(e, E.TypeCheckError, "BAD-34", r"pl\.load\(tensor, offsets, shapes", r"window \[128, 64\] exceeds")


@pl.jit
def move_without_target(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        left = pl.move(m)  # BAD-35
        pl.store(left, [0, 0], o)
    return o


def test_move_without_target_memory():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(move_without_target, A, O)
    check(e, E.TypeCheckError, "BAD-35", r"target_memory=pl\.Mem\.Left", r"target_memory=pl\.Mem\.<space> is required")


@pl.jit
def yield_arity(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        z = pl.load(a, [0, 0], [64, 64])
        for i, (acc,) in pl.range(4, init_values=(z,)):
            r = pl.yield_(acc, acc)  # BAD-36
        pl.store(r, [0, 0], o)
    return o


def test_yield_arity_mismatch():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(yield_arity, A, O)
    check(e, E.TypeCheckError, "BAD-36", r"one value per init_values entry", r"gives 2 values but the loop carries 1")


@pl.jit
def cast_without_dtype(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.cast(t), [0, 0], o)  # BAD-37
    return o


def test_cast_without_a_dtype():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(cast_without_dtype, A, O)
    check(e, E.TypeCheckError, "BAD-37", r"pl\.cast\(x, pl\.FP16\)", r"target dtype is required")


@pl.jit
def reshape_count(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.reshape(t, [32, 64]), [0, 0], o)  # BAD-38
    return o


def test_reshape_changes_the_element_count():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(reshape_count, A, O)
    check(e, E.TypeCheckError, "BAD-38", r"pl\.reshape\(x, \[M, N\]\)", r"4096 elements, \[32, 64\] has 2048")


@pl.jit
def col_vector_shape(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        v = pl.load(a, [0, 0], [64, 1])
        pl.store(pl.col_expand_mul(t, v), [0, 0], o)  # BAD-39
    return o


def test_col_expand_with_a_column_vector():
    with pytest.raises(E.TypeCheckError) as e:
        compile_(col_vector_shape, A, O)
    check(e, E.TypeCheckError, "BAD-39", r"v \[1,N\]", r"vector operand must have shape \[1, 64\], got \[64, 1\]")


# ----------------------------------------------------------------------------- calls
def test_kernel_called_with_too_few_arguments():
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
                o = self.k(a)  # BAD-40
                return o
    check(e, E.TypeCheckError, "BAD-40", r"def k\(a, o\)", r"self\.k takes 2 arguments, got 1")


@pl.jit.incore
def copy_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], o)
    return o


@pl.jit
def dep_missing_argument(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = copy_kernel(a)  # BAD-41
    return o


def test_jit_kernel_called_with_too_few_arguments():
    with pytest.raises(E.ParserError) as e:
        compile_(dep_missing_argument, A, O)
    check(e, E.ParserError, "BAD-41", r"copy_kernel\(a, o\)", r"`copy_kernel` is missing argument `o`")


# (BAD-42, a dynamic dim read as a value, is valid now: test_prog_dynamic.py)
