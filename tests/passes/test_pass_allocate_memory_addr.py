"""AllocateMemoryAddr: aligned addresses inside each space's capacity, or a clear overflow."""
import pytest

import pypto.language as pl
from pypto.backend import BackendType, chip
from pypto.errors import MemoryOverflowError
from pypto.ir.nodes import Assign, MemorySpace as M, PtrType
from pypto.passes import pipeline, run_pipeline
from pypto.passes.base import PassOptions

from pass_helpers import before, fn, roundtrip, run, tiles

NAME = "AllocateMemoryAddr"
A5 = PassOptions(backend_type=BackendType.Ascend950)
KIB = 1024


def alloc_addr(prog, opts=None):
    opts = opts or PassOptions()
    return run(before(prog, NAME, opts), NAME, opts=opts)


def _quickstart():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
    return P


def _three_live():
    """Three 64 KiB tiles live at once: no reuse can help."""
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k3(self, x: pl.Tensor[[128, 128], pl.FP32],
               y: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            a = pl.load(x, [0, 0], [128, 128])
            b = pl.load(x, [0, 0], [128, 128])
            c = pl.load(x, [0, 0], [128, 128])
            y = pl.store(pl.add(pl.add(a, b), c), [0, 0], y)
            return y
    return P


def _check_layout(f, c):
    """Aligned, in capacity, and buffers of one space don't overlap."""
    spans = {}
    for s in f.body:
        if isinstance(s, Assign) and isinstance(s.var.type, PtrType):
            space = s.value.kwargs["target_memory"]
            members = [t for t in tiles(f) if t.type.memref.base is s.var]
            offs = {t.type.memref.offset for t in members}
            assert len(offs) == 1, s.var.name          # one address per buffer
            addr, size = offs.pop(), s.value.args[0].value
            assert addr % c.align[space] == 0
            assert addr + size <= c.capacity[space]
            spans.setdefault(space, []).append((addr, addr + size))
    for space, iv in spans.items():
        iv.sort()
        for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
            assert a1 <= b0, (space, iv)
    return spans


def test_quickstart_addresses_are_aligned_disjoint_and_in_capacity():
    out = alloc_addr(_quickstart())
    k = fn(out, "add_incore_0")
    spans = _check_layout(k, chip(BackendType.Ascend910B))
    assert spans[M.Vec] == [(0, 65536), (65536, 131072)]
    ta, tb, t = tiles(k)
    assert (ta.type.memref.offset, tb.type.memref.offset, t.type.memref.offset) == (0, 65536, 0)
    assert "pl.MemRef(mem_vec_4, 65536, 65536)" in out.as_python()
    roundtrip(out)


def test_odd_sizes_are_aligned_per_space():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
              c: pl.Out[pl.Tensor[[10, 64], pl.FP32]]) -> pl.Tensor[[10, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [10, 16], target_memory=pl.Mem.Mat)     # padded: [16, 16], 512
            tb = pl.load(b, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
            c = pl.store(pl.matmul(ta, tb), [0, 0], c)
            return c

    out = alloc_addr(P)
    spans = _check_layout(fn(out, "k"), chip(BackendType.Ascend910B))
    assert spans[M.Mat][:2] == [(0, 512), (512, 512 + 2048)]    # whole fractals, 128-aligned
    roundtrip(out)


def test_three_live_64k_tiles_overflow_ub_on_a2a3():
    with pytest.raises(MemoryOverflowError) as e:
        alloc_addr(_three_live())
    msg = e.value.message
    assert "'k3'" in msg and "Vec" in msg and str(3 * 64 * KIB) in msg and str(184 * KIB) in msg
    assert e.value.hint and e.value.span is not None


def test_ascend950_has_240k_of_vec():
    out = alloc_addr(_three_live(), A5)
    spans = _check_layout(fn(out, "k3"), chip(BackendType.Ascend950))
    assert spans[M.Vec][-1][1] == 3 * 64 * KIB <= 240 * KIB
    assert chip(BackendType.Ascend950).capacity[M.Vec] == 240 * KIB


def test_quickstart_overflows_without_memory_reuse():
    opts = PassOptions(memory_planner="DSA_RP")
    with pytest.raises(MemoryOverflowError) as e:
        run_pipeline(_quickstart(), opts)
    assert "'add_incore_0'" in e.value.message and str(3 * 64 * KIB) in e.value.message
    run_pipeline(_quickstart(), PassOptions())            # with reuse it fits


def test_ptoas_planner_leaves_offsets_at_zero():
    out = run_pipeline(_quickstart(), PassOptions(memory_planner="PTOAS"))
    assert NAME not in [p.name for p in pipeline(PassOptions(memory_planner="PTOAS"))]
    assert {t.type.memref.offset for t in tiles(fn(out, "add_incore_0"))} == {0}


def test_orchestration_is_untouched():
    src = before(_quickstart(), NAME)
    out = run(src, NAME)
    assert out.as_python().split("def add(")[1] == src.as_python().split("def add(")[1]


# ----------------------------------------------------------------------------- planners
import dataclasses  # noqa: E402

import pipeline_programs as pp  # noqa: E402
from placement import check, check_kernel, check_ptoas, ir_buffers, limits  # noqa: E402
from pypto.ir.nodes import Program  # noqa: E402

A2 = chip(BackendType.Ascend910B)


def _planned(build, planner):
    return run_pipeline(build(), PassOptions(memory_planner=planner))


def _offsets(f):
    return {t.name: t.type.memref.offset for t in tiles(f)}


def test_three_planners_place_one_kernel_differently_and_each_placement_is_valid():
    pypto = fn(_planned(pp.softmax, "PYPTO"), "softmax_incore_0")
    dsa = fn(_planned(pp.softmax, "DSA_RP"), "softmax_incore_0")
    ptoas_prog = _planned(pp.softmax, "PTOAS")
    ptoas = fn(ptoas_prog, "softmax_incore_0")
    used = {"PYPTO": check_kernel(pypto, A2), "DSA_RP": check_kernel(dsa, A2),
            "PTOAS": check_ptoas(Program(ptoas_prog.name, [ptoas], ptoas_prog.source), A2)}
    # PYPTO: MemoryReuse merged the tiles into 3 buffers (results over dying operands)
    assert len(ir_buffers(pypto)) == 3 and used["PYPTO"] == {"vec": 2 * 16384 + 256}
    # DSA_RP: one buffer per tile group, packed by lifetime: more bytes, but buffers
    # that are never live together share addresses
    dsa_bufs = ir_buffers(dsa)
    assert len(dsa_bufs) == 7 and used["DSA_RP"]["vec"] > used["PYPTO"]["vec"]
    assert len({b.addr for b in dsa_bufs}) < len(dsa_bufs)
    assert used["DSA_RP"]["vec"] < sum(b.size for b in dsa_bufs)
    # PTOAS: no addresses in the IR at all; our ptoas places them
    assert set(_offsets(ptoas).values()) == {0}
    assert _offsets(pypto) != _offsets(dsa)


def test_dsa_rp_never_writes_a_result_over_a_dying_operand():
    def small():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) \
                    -> pl.Tensor[[64, 64], pl.FP32]:
                a = pl.load(x, [0, 0], [64, 64])
                b = pl.exp(a)                    # a dies here
                y = pl.store(b, [0, 0], y)
                c = pl.load(x, [0, 0], [64, 64])  # after b is stored: may reuse a's bytes
                y = pl.store(pl.neg(c), [0, 0], y)
                return y

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                     y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                y = self.k(x, y)
                return y
        return P

    pypto = _offsets(fn(_planned(small, "PYPTO"), "k"))
    dsa = _offsets(fn(_planned(small, "DSA_RP"), "k"))
    assert pypto["b"] == pypto["a"]                      # in place
    assert dsa["b"] != dsa["a"]                          # never at the op that kills a
    assert dsa["c"] in (dsa["a"], dsa["b"])              # but a later tile takes freed bytes
    check_kernel(fn(_planned(small, "DSA_RP"), "k"), A2)


def test_dsa_rp_packs_a_tiled_kernel_the_bump_allocator_could_not():
    from test_pass_convert_tensor_to_tile_ops import big_softmax
    k = fn(_planned(big_softmax, "DSA_RP"), "main_incore_0")
    bufs = ir_buffers(k)
    assert sum(b.size for b in bufs) > 184 * KIB            # laid end to end it would overflow
    assert check_kernel(k, A2)["vec"] <= 184 * KIB


def test_the_checker_catches_overlap_misalignment_and_overflow():
    cap, align = limits(A2)
    good = ir_buffers(fn(_planned(pp.softmax, "DSA_RP"), "softmax_incore_0"))
    check(good, cap, align)
    a, b = next((a, b) for a in good for b in good
                if a is not b and a.start <= b.end and b.start <= a.end)
    with pytest.raises(AssertionError, match="overlaps"):
        check([a, dataclasses.replace(b, addr=a.addr)], cap, align)
    with pytest.raises(AssertionError, match="aligned"):
        check([dataclasses.replace(a, addr=a.addr + 32)], cap, align)
    with pytest.raises(AssertionError, match="capacity"):
        check([dataclasses.replace(a, addr=cap["vec"] - 128)], cap, align)


def test_dsa_rp_overflow_names_the_kernel_and_suggests_pypto():
    with pytest.raises(MemoryOverflowError) as e:
        run_pipeline(_three_live(), PassOptions(memory_planner="DSA_RP"))
    assert "'k3'" in e.value.message and "PYPTO" in e.value.hint
