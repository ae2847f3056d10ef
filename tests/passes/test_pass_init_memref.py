"""InitMemRef: one tile.alloc per buffer group, MemRefs on every tile and DDR tensor."""
import pypto.language as pl
from pypto.ir.nodes import Assign, MemorySpace as M, PtrType, TensorType

from pass_helpers import assigns, before, fn, ifs, loops, roundtrip, run, tiles

NAME = "InitMemRef"


def init(prog):
    return run(before(prog, NAME), NAME)


def allocs(f):
    return [s for s in f.body if isinstance(s, Assign) and isinstance(s.var.type, PtrType)]


def base(v):
    return v.type.memref.base


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


def test_one_alloc_per_tile_at_the_top_with_memrefs():
    out = init(_quickstart())
    k = fn(out, "add_incore_0")
    al = allocs(k)
    assert k.body[:3] == al and len(al) == 3
    for a in al:
        assert a.value.op == "tile.alloc"
        assert a.value.args[0].value == 65536 and a.value.kwargs["target_memory"] is M.Vec
    ts = tiles(k)
    assert [base(t) for t in ts] == [a.var for a in al]
    assert all(t.type.memref.offset == 0 and t.type.memref.size == 65536 for t in ts)
    assert [a.var.name for a in al] == ["mem_vec_3", "mem_vec_4", "mem_vec_5"]
    roundtrip(out)


def test_ddr_params_and_store_results_get_ddr_memrefs():
    out = init(_quickstart())
    k = fn(out, "add_incore_0")
    mrs = [p.var.type.memref for p in k.params]
    assert [(m.base, m.offset, m.size) for m in mrs] == [
        ("mem_ddr_0", 0, 65536), ("mem_ddr_1", 0, 65536), ("mem_ddr_2", 0, 65536)]
    (store,) = assigns(k, "tile.store")
    assert store.var.type.memref == mrs[2]
    assert store.value.type == store.var.type            # the call's type follows its var
    assert 'pl.MemRef("mem_ddr_0", 0, 65536)' in out.as_python()
    # the orchestration is not a kernel and keeps plain tensor types
    assert all(isinstance(p.var.type, TensorType) and p.var.type.memref is None
               for p in fn(out, "add").params)


def test_scalar_params_get_no_memref():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            y = pl.store(pl.load(x, [n, 0], [64, 64]), [0, 0], y)
            return y

    k = fn(init(P), "k")
    assert [getattr(p.var.type, "memref", None) and p.var.type.memref.base for p in k.params] == \
        ["mem_ddr_0", None, "mem_ddr_1"]


def test_loop_carried_tile_shares_one_alloc_with_init_yield_and_result():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i in pl.range(4):
                acc = pl.add(acc, pl.load(x, [0, 0], [64, 64]))
            y = pl.store(acc, [0, 0], y)
            return y

    out = init(P)
    k = fn(out, "k")
    (loop,) = loops(k)
    group = {id(base(v)) for v in (loop.iter_args[0].init, loop.iter_args[0].var,
                                   loop.body[-1].values[0], loop.return_vars[0])}
    assert len(group) == 1
    assert len(allocs(k)) == 2          # the carried group and the loop's fresh load
    roundtrip(out)


def test_if_result_shares_with_both_branch_values():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [64, 64])
            if n > 2:
                t = pl.exp(t)
            else:
                t = pl.relu(t)
            y = pl.store(t, [0, 0], y)
            return y

    out = init(P)
    k = fn(out, "k")
    (br,) = ifs(k)
    phi = {id(base(v)) for v in (br.then_body[-1].values[0], br.else_body[-1].values[0],
                                 br.return_vars[0])}
    assert len(phi) == 1
    assert len(allocs(k)) == 2
    roundtrip(out)


def test_matmul_acc_shares_its_accumulators_buffer():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.matmul(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat),
                            pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat))
            for i, (acc_in,) in pl.range(1, 4, init_values=(acc,)):
                ta = pl.load(a, [0, i * 32], [64, 32], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [i * 32, 0], [32, 64], target_memory=pl.Mem.Mat)
                acc_out = pl.yield_(pl.matmul_acc(acc_in, ta, tb))
            c = pl.store(acc_out, [0, 0], c)
            return c

    out = init(P)
    k = fn(out, "k")
    (mm,) = assigns(k, "tile.matmul")
    (mma,) = assigns(k, "tile.matmul_acc")
    assert base(mma.var) is base(mma.value.args[0]) is base(mm.var)
    acc_allocs = [a for a in allocs(k) if a.value.kwargs["target_memory"] is M.Acc]
    assert len(acc_allocs) == 1 and acc_allocs[0].value.args[0].value == 64 * 64 * 4
    # one alloc per space and tile otherwise: 4 Mat loads, 2 Left, 2 Right moves
    spaces = sorted(a.value.kwargs["target_memory"].name for a in allocs(k))
    assert spaces == ["Acc"] + ["Left"] * 2 + ["Mat"] * 4 + ["Right"] * 2
    roundtrip(out)


def test_every_kernel_tile_has_a_memref_with_a_declared_base():
    out = init(_quickstart())
    for f in out.functions:
        if not f.is_kernel:
            continue
        ptrs = {id(a.var) for a in allocs(f)}
        for t in tiles(f):
            assert t.type.memref is not None and id(base(t)) in ptrs
        # the allocations' sizes are the bytes of their largest member
        for a in allocs(f):
            members = [t for t in tiles(f) if base(t) is a.var]
            assert a.value.args[0].value == max(t.type.nbytes() for t in members)


def test_initial_value_read_after_the_loop_starts_is_copied_for_the_loop():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i, (a,) in pl.range(4, init_values=(acc,)):
                o = pl.yield_(pl.add(a, acc))
            y = pl.store(pl.sub(o, acc), [0, 0], y)
            return y

    out = init(P)
    k = fn(out, "k")
    (loop,) = loops(k)
    acc = assigns(k, "tile.load")[0].var
    (copy,) = assigns(k, "tile.move")
    assert copy.value.args == [acc] and copy.value.kwargs["target_memory"] is M.Vec
    assert loop.iter_args[0].init is copy.var
    assert base(copy.var) is base(loop.iter_args[0].var) is base(loop.return_vars[0])
    assert base(acc) is not base(copy.var)        # the loop never writes over `acc`
    roundtrip(out)


def test_yielded_value_computed_while_the_carried_one_is_still_read_gets_its_own_buffer():
    # online max/sum: m_new is computed while m is still needed by exp(m - m_new)
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            m0 = pl.load(x, [0, 0], [64, 64])
            l0 = pl.load(x, [0, 0], [64, 64])
            for i, (m, l) in pl.range(4, init_values=(m0, l0)):
                t = pl.load(x, [0, 0], [64, 64])
                m_new = pl.maximum(m, t)
                scale = pl.exp(pl.sub(m, m_new))
                l_new = pl.add(pl.mul(l, scale), t)
                m_out, l_out = pl.yield_(m_new, l_new)
            y = pl.store(pl.div(l_out, m_out), [0, 0], y)
            return y

    out = init(P)
    k = fn(out, "k")
    (loop,) = loops(k)
    m, l = (a.var for a in loop.iter_args)
    m_new, l_new = loop.body[-1].values
    assert base(m_new) is not base(m)          # codegen copies it into m's buffer at the yield
    assert base(l_new) is base(l)              # l is dead by then: computed in place
    assert base(loop.return_vars[0]) is base(m) and base(loop.return_vars[1]) is base(l)
    roundtrip(out)


def test_accumulator_read_after_matmul_acc_is_an_error():
    import pytest
    from pypto.errors import CodegenError

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              d: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(ta, ta)
            acc2 = pl.matmul_acc(acc, ta, ta)
            c = pl.store(acc2, [0, 0], c)
            d = pl.store(acc, [0, 0], d)
            return c

    with pytest.raises(CodegenError) as e:
        init(P)
    assert "'acc'" in e.value.message and "matmul_acc" in e.value.message and e.value.hint


def test_loop_carried_tensor_keeps_its_ddr_memref():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, y: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
            for i in pl.range(4):
                y = pl.store(pl.exp(pl.load(y, [i * 64, 0], [64, 64])), [i * 64, 0], y)
            return y

    out = init(P)
    k = fn(out, "k")
    (loop,) = loops(k)
    ddr = k.params[0].var.type.memref
    (store,) = assigns(k, "tile.store")
    for v in (loop.iter_args[0].var, loop.return_vars[0], store.var):
        assert v.type.memref == ddr, v.name
    roundtrip(out)
