"""Hand-built post-pass IR for the codegen tests (what the pass pipeline hands codegen)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import Span
from pypto.ir.nodes import (ArgDir, Assign, BinOp, Call, Const, DynDim, Eval, For, Function,
                            FunctionType, IterArg, Level, MemRef, MemorySpace as M, Param,
                            ParamDirection as PD, Program, PtrType, Return, Role, RuntimeScope,
                            ScalarType, TensorType, TileType, TupleExpr, Var, Yield)

F32 = dt.FP32


def c(v, d=dt.INDEX):
    return Const(v, d)


def tup(*xs):
    return TupleExpr([x if not isinstance(x, int) else c(x) for x in xs])


def sp(line, col=9, file="kernels.py"):
    return Span(file, line, col)


def tensor(name, shape, dtype=F32, ddr=None):
    n = dtype.nbytes
    for d in shape:
        n *= d if isinstance(d, int) else 1
    mr = MemRef(ddr, 0, n) if ddr else None
    return Var(name, TensorType(tuple(shape), dtype, mr))


def alloc(name, space, size, span=None):
    p = Var(name, PtrType())
    return p, Assign(p, Call("tile.alloc", [c(size)], {"target_memory": space}, PtrType()), span)


def tile(name, shape, space, ptr=None, offset=0, dtype=F32):
    size = dtype.nbytes
    for d in shape:
        size *= d
    mr = MemRef(ptr, offset, size) if ptr is not None else None
    return Var(name, TileType(tuple(shape), dtype, space, mr))


def kernel(name, params, body, ftype=FunctionType.AIV, span=None):
    level = Level.AIV if ftype is FunctionType.AIV else Level.AIC
    rets = [p.var.type for p in params if p.direction is not PD.In and isinstance(p.var.type, TensorType)]
    return Function(name, params, rets, body, ftype, level, Role.SubWorker, {}, span)


def load(t, offs, shape, space=M.Vec):
    return Call("tile.load", [t, tup(*offs), tup(*shape), tup(*shape)], {"target_memory": space})


# ----------------------------------------------------------------------------- (a) quickstart
def quickstart(planned=True) -> Program:
    """add_incore_0 of samples/quickstart_final_dump.py: t reuses a's UB buffer."""
    a, b, out = (tensor(n, [128, 128], ddr=f"mem_ddr_{i}") for i, n in
                 enumerate(("a__ssa_v0", "b__ssa_v0", "out__ssa_v0")))
    fs = Span("quickstart.py", 16, 5)
    body = []
    if planned:
        m3, s3 = alloc("mem_vec_3", M.Vec, 65536)
        m4, s4 = alloc("mem_vec_4", M.Vec, 65536)
        body += [s3, s4]
        ta = tile("a__tile", [128, 128], M.Vec, m3, 0)
        tb = tile("b__tile", [128, 128], M.Vec, m4, 65536)
        tt = tile("t__tile", [128, 128], M.Vec, m3, 0)
    else:
        ta, tb, tt = (tile(n, [128, 128], M.Vec) for n in ("a__tile", "b__tile", "t__tile"))
    stored = Var("out__tile", out.type)
    body += [
        Assign(ta, load(a, [0, 0], [128, 128]), fs),
        Assign(tb, load(b, [0, 0], [128, 128]), fs),
        Assign(tt, Call("tile.add", [ta, tb]), Span("quickstart.py", 17, 9)),
        Assign(stored, Call("tile.store", [tt, tup(0, 0), out]), Span("quickstart.py", 17, 9)),
        Return([out], fs),
    ]
    k = kernel("add_incore_0", [Param(a), Param(b), Param(out, PD.Out)], body, span=fs)
    # orchestration
    oa, ob, oo = (tensor(n, [128, 128], ddr=f"mem_ddr_{i}") for i, n in
                  enumerate(("a__ssa_v0", "b__ssa_v0", "out__ssa_v0")))
    res = Var("out__ssa_v1", oo.type)
    call = Call("@add_incore_0", [oa, ob, oo], {}, oo.type,
                {"arg_directions": [ArgDir.input, ArgDir.input, ArgDir.output_existing]})
    orch = Function("add", [Param(oa), Param(ob), Param(oo, PD.Out)], [oo.type],
                    [RuntimeScope([Assign(res, call, Span("quickstart.py", 17, 9)),
                                   Return([res], Span("quickstart.py", 18, 9))],
                                  span=Span("quickstart.py", 16, 5))],
                    FunctionType.Orchestration, Level.CHIP, Role.Orchestrator, {},
                    Span("quickstart.py", 14, 5))
    return Program("_jit_add", [k, orch], "quickstart.py")


# ----------------------------------------------------------------------------- (b) softmax
def softmax() -> Program:
    x, y = tensor("x", [64, 64]), tensor("y", [64, 64])
    m0, s0 = alloc("mem_vec_0", M.Vec, 16384)
    m1, s1 = alloc("mem_vec_1", M.Vec, 16384)
    m2, s2 = alloc("mem_vec_2", M.Vec, 256)
    t = tile("t", [64, 64], M.Vec, m0, 0)
    tmp = tile("tmp", [64, 64], M.Vec, m1, 16384)
    mx = tile("m", [64, 1], M.Vec, m2, 32768)
    d = tile("t__tmp_v0", [64, 64], M.Vec, m0, 0)
    e = tile("e", [64, 64], M.Vec, m0, 0)
    s = tile("s", [64, 1], M.Vec, m2, 32768)
    r = tile("t__tmp_v1", [64, 64], M.Vec, m0, 0)
    ys = Var("y__ssa_v1", y.type)
    body = [s0, s1, s2,
            Assign(t, load(x, [0, 0], [64, 64]), sp(60)),
            Assign(tmp, Call("tile.create", [tup(64, 64)], {"dtype": F32, "target_memory": M.Vec}), sp(61)),
            Assign(mx, Call("tile.row_max", [t, tmp]), sp(62)),
            Assign(d, Call("tile.row_expand_sub", [t, mx]), sp(63)),
            Assign(e, Call("tile.exp", [d]), sp(63)),
            Assign(s, Call("tile.row_sum", [e, tmp]), sp(64)),
            Assign(r, Call("tile.row_expand_div", [e, s]), sp(65)),
            Assign(ys, Call("tile.store", [r, tup(0, 0), y]), sp(65)),
            Return([ys], sp(66))]
    k = kernel("softmax64_incore_0", [Param(x), Param(y, PD.Out)], body, span=sp(59, 5))
    return Program("softmax64", [k], "kernels.py")


# ----------------------------------------------------------------------------- (c) matmul
def matmul_k(planned=True) -> Program:
    """C[64,64] = A[64,128] @ B[128,64] with a K loop of 4 steps of 32."""
    a, b, cc = tensor("a", [64, 128]), tensor("b", [128, 64]), tensor("c", [64, 64])
    body = []

    def buf(name, space, size):
        if not planned:
            return None
        p, s = alloc(name, space, size)
        body.append(s)
        return p

    mat = buf("mem_mat_0", M.Mat, 16384)
    matb = buf("mem_mat_1", M.Mat, 8192)
    lft = buf("mem_left_0", M.Left, 8192)
    rgt = buf("mem_right_0", M.Right, 8192)
    acc = buf("mem_acc_0", M.Acc, 16384)
    ta0 = tile("ta", [64, 32], M.Mat, mat, 0)
    tb0 = tile("tb", [32, 64], M.Mat, matb, 8192)
    la0 = tile("la", [64, 32], M.Left, lft, 0)
    rb0 = tile("rb", [32, 64], M.Right, rgt, 0)
    acc0 = tile("acc", [64, 64], M.Acc, acc, 0)
    body += [
        Assign(ta0, load(a, [0, 0], [64, 32], M.Mat), sp(117)),
        Assign(la0, Call("tile.move", [ta0], {"target_memory": M.Left}), sp(117)),
        Assign(tb0, load(b, [0, 0], [32, 64], M.Mat), sp(118)),
        Assign(rb0, Call("tile.move", [tb0], {"target_memory": M.Right}), sp(118)),
        Assign(acc0, Call("tile.matmul", [la0, rb0]), sp(119)),
    ]
    k = Var("k", ScalarType(dt.INDEX))
    acc_it = tile("acc__iter_v1", [64, 64], M.Acc, acc, 0)
    acc_new = tile("acc__ssa_v2", [64, 64], M.Acc, acc, 0)
    acc_out = tile("acc__rv_v3", [64, 64], M.Acc, acc, 0)
    ta1 = tile("ta__ssa_v1", [64, 32], M.Mat, mat, 0)
    tb1 = tile("tb__ssa_v1", [32, 64], M.Mat, matb, 8192)
    la1 = tile("la__ssa_v1", [64, 32], M.Left, lft, 0)
    rb1 = tile("rb__ssa_v1", [32, 64], M.Right, rgt, 0)
    koff = BinOp("*", k, c(32), dt.INDEX)
    loop = For(k, c(1), c(4), c(1), [
        Assign(ta1, load(a, [c(0), koff], [64, 32], M.Mat), sp(121, 13)),
        Assign(la1, Call("tile.move", [ta1], {"target_memory": M.Left}), sp(121, 13)),
        Assign(tb1, load(b, [koff, c(0)], [32, 64], M.Mat), sp(122, 13)),
        Assign(rb1, Call("tile.move", [tb1], {"target_memory": M.Right}), sp(122, 13)),
        Assign(acc_new, Call("tile.matmul_acc", [acc_it, la1, rb1]), sp(123, 13)),
        Yield([acc_new], sp(123, 13)),
    ], [IterArg(acc_it, acc0)], [acc_out], span=sp(120))
    cs = Var("c__ssa_v1", cc.type)
    body += [loop,
             Assign(cs, Call("tile.store", [acc_out, tup(0, 0), cc]), sp(124)),
             Return([cs], sp(125))]
    kern = kernel("matmul_k_incore_0", [Param(a), Param(b), Param(cc, PD.Out)], body,
                  FunctionType.AIC, span=sp(116, 5))
    return Program("matmul_k", [kern], "kernels.py")


# ----------------------------------------------------------------------------- (d) scalar op
def scale_add(scalar_param=True) -> Program:
    """y = x * alpha + 1.5, alpha a scalar parameter (or the constant 2.0)."""
    x, y = tensor("x", [32, 64]), tensor("y", [32, 64])
    alpha = Var("alpha", ScalarType(F32))
    m0, s0 = alloc("mem_vec_0", M.Vec, 8192)
    t = tile("t", [32, 64], M.Vec, m0, 0)
    u = tile("u", [32, 64], M.Vec, m0, 0)
    w = tile("w", [32, 64], M.Vec, m0, 0)
    ys = Var("y__ssa_v1", y.type)
    factor = alpha if scalar_param else Const(2.0, F32)
    body = [s0,
            Assign(t, load(x, [0, 0], [32, 64]), sp(10)),
            Assign(u, Call("tile.muls", [t, factor]), sp(11)),
            Assign(w, Call("tile.adds", [u, Const(1.5, F32)]), sp(12)),
            Assign(ys, Call("tile.store", [w, tup(0, 0), y]), sp(13)),
            Return([ys], sp(14))]
    params = [Param(x), Param(y, PD.Out)] + ([Param(alpha)] if scalar_param else [])
    k = kernel("scale_add_incore_0", params, body, span=sp(9, 5))
    return Program("scale_add", [k], "kernels.py")


# ----------------------------------------------------------------------------- (e) orchestration
def two_stage() -> Program:
    """Orchestration: tmp = create; for i in range(n_iter): tmp = k0(x, tmp, alpha); y = k1(tmp, y, i)."""
    def kparams(names_dirs, scalars=()):
        ps = [Param(tensor(n, [64, 64]), d) for n, d in names_dirs]
        ps += [Param(Var(n, ScalarType(t))) for n, t in scalars]
        return ps

    k0p = kparams([("x", PD.In), ("t", PD.Out)], [("alpha", F32)])
    k1p = kparams([("t", PD.In), ("y", PD.InOut)], [("i", dt.INT32)])
    k0 = kernel("stage0", k0p, [Return([k0p[1].var])])
    k1 = kernel("stage1", k1p, [Return([k1p[1].var])])
    x, y = tensor("x", [64, 64]), tensor("y", [64, 64])
    alpha = Var("alpha", ScalarType(F32))
    n_iter = Var("n_iter", ScalarType(dt.INT64))
    tmp = Var("tmp", TensorType((64, 64), F32))
    i = Var("i", ScalarType(dt.INDEX))
    y_it = Var("y__iter_v1", y.type)
    t1 = Var("tmp__ssa_v1", tmp.type)
    y2 = Var("y__ssa_v2", y.type)
    y_rv = Var("y__rv_v3", y.type)
    f = "orch.py"
    loop = For(i, c(0), n_iter, c(1), [
        RuntimeScope([
            Assign(t1, Call("@stage0", [x, tmp, alpha], {}, tmp.type,
                            {"arg_directions": [ArgDir.input, ArgDir.output_existing, ArgDir.scalar]}),
                   Span(f, 12, 13)),
            Assign(y2, Call("@stage1", [t1, y_it, BinOp("+", i, c(1), dt.INDEX)], {}, y.type,
                            {"arg_directions": [ArgDir.input, ArgDir.inout, ArgDir.scalar]}),
                   Span(f, 13, 13)),
        ], span=Span(f, 11, 13)),
        Yield([y2], Span(f, 13, 13)),
    ], [IterArg(y_it, y)], [y_rv], span=Span(f, 10, 9))
    body = [
        Assign(tmp, Call("tensor.create", [tup(64, 64)], {"dtype": F32}, tmp.type), Span(f, 9, 9)),
        loop,
        Eval(Call("@stage0", [y_rv, tmp, Const(0.5, F32)], {}, None,
                  {"arg_directions": [ArgDir.input, ArgDir.output_existing, ArgDir.scalar]}),
             Span(f, 14, 9)),
        Return([y_rv], Span(f, 15, 9)),
    ]
    orch = Function("two_stage", [Param(x), Param(y, PD.InOut), Param(alpha), Param(n_iter)],
                    [y.type], body, FunctionType.Orchestration, Level.CHIP, Role.Orchestrator, {},
                    Span(f, 8, 5))
    return Program("two_stage", [k0, k1, orch], f)


def dyn_kernel() -> Program:
    """A kernel whose tensors have a dynamic leading dim M and a loop over row blocks."""
    M_ = DynDim("M")
    x, y = tensor("x", [M_, 64]), tensor("y", [M_, 64])
    nblk = Var("nblk", ScalarType(dt.INT32))
    m0, s0 = alloc("mem_vec_0", M.Vec, 4096)
    i = Var("i", ScalarType(dt.INDEX))
    t = tile("t", [16, 64], M.Vec, m0, 0)
    u = tile("u", [16, 64], M.Vec, m0, 0)
    off = BinOp("*", i, c(16), dt.INDEX)
    ys = Var("y__ssa_v1", y.type)
    body = [s0,
            For(i, c(0), nblk, c(1), [
                Assign(t, load(x, [off, c(0)], [16, 64]), sp(20)),
                Assign(u, Call("tile.relu", [t]), sp(21)),
                Assign(ys, Call("tile.store", [u, tup(off, c(0)), y]), sp(22)),
            ], span=sp(19)),
            Return([y], sp(23))]
    k = kernel("relu_rows", [Param(x), Param(y, PD.Out), Param(nblk)], body, span=sp(18, 5))
    return Program("relu_rows", [k], "kernels.py")
