"""Emitters of the cube family: matmul, matmul_bias, matmul_acc and the gemv family."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.tileops import emits
from pypto.ir.nodes import Const, MemorySpace as M
from pypto.ir.ops import OPS


def check_spaces(op, pairs, span):
    for val, space in pairs:
        if val.tile.memory_space is not space:
            fail(f"{op}: operand in {val.tile.memory_space.name}, expected {space.name}", span,
                 "move matmul operands with pl.move(t, target_memory=pl.Mem.Left/Right)")


@emits("tile.matmul")
def matmul(k, v, c, span):
    left, right = k.tile(c.args[0], span), k.tile(c.args[1], span)
    check_spaces(c.op, [(left, M.Left), (right, M.Right)], span)
    k.op("tmatmul", [left, right], k.alloc(v, span), span)


@emits("tile.matmul_bias")
def matmul_bias(k, v, c, span):          # the bias row from the Bias buffer
    left, right, bias = (k.tile(a, span) for a in c.args)
    check_spaces(c.op, [(left, M.Left), (right, M.Right), (bias, M.Bias)], span)
    k.op("tmatmul.bias", [left, right, bias], k.alloc(v, span), span)


def _in_place(k, v, acc, span):
    """The accumulator's buffer as the result's, unless the planner gave the result its own
    (then the accumulator is copied there first)."""
    t = v.type
    if t.memref is not None and acc.tile.memref is not None and not k.same_storage(t, acc.tile):
        dst = k.alloc(v, span)
        k.op("tmov", [acc], dst, span)
        return dst
    k.check_tile_type(v, span)
    k.env[id(v)] = acc
    return acc


def _phase(c) -> str:
    phase = c.kwargs.get("acc_phase", "unspecified")
    return "" if phase == "unspecified" else f" {{accPhase = #pto<acc_phase {phase}>}}"


@emits("tile.batch_matmul", "tile.batch_matmul_acc")
def batch_matmul(k, v, c, span):         # FlattenTileNdTo2D lays it out as 2-D matmuls
    fail(f"{c.op} reached the kernel's codegen as it was written", span,
         "run the pass pipeline (FlattenTileNdTo2D makes it a matmul per batch)")


@emits("tile.gemv", "tile.gemv_bias", "tile.gemv_acc")
def gemv(k, v, c, span):                 # [1, K] x [K, N] (+ bias) (+= acc), a hint of its phase
    ins = [k.tile(a, span) for a in c.args]
    spaces = {"tile.gemv": (M.Left, M.Right), "tile.gemv_bias": (M.Left, M.Right, M.Bias),
              "tile.gemv_acc": (M.Acc, M.Left, M.Right)}[c.op]
    check_spaces(c.op, list(zip(ins, spaces)), span)
    dst = _in_place(k, v, ins[0], span) if c.op == "tile.gemv_acc" else k.alloc(v, span)
    if c.op == "tile.gemv_acc":
        ins[0] = dst
    name = {"tile.gemv": "tgemv", "tile.gemv_bias": "tgemv.bias", "tile.gemv_acc": "tgemv.acc"}[c.op]
    k.emit(f"pto.{name} ins({', '.join(x.ssa for x in ins)} : {', '.join(x.ty for x in ins)}) "
           f"outs({dst.ssa} : {dst.ty}){_phase(c)}", span)


@emits("tile.matmul_acc")
def matmul_acc(k, v, c, span):           # accumulates in place unless the planner moved it
    acc = k.tile(c.args[0], span)
    left, right = k.tile(c.args[1], span), k.tile(c.args[2], span)
    check_spaces(c.op, [(acc, M.Acc), (left, M.Left), (right, M.Right)], span)
    dst = _in_place(k, v, acc, span)
    if len(c.args) < 4:
        k.op("tmatmul.acc", [dst, left, right], dst, span)
        return
    # init_cond: the initializing matmul where it holds, the accumulating one elsewhere; a
    # constant picks one, a run-time condition branches (both arms write dst in place)
    cond = c.args[3]
    if isinstance(cond, Const):
        k.op("tmatmul" if cond.value else "tmatmul.acc", [left, right] if cond.value else
             [dst, left, right], dst, span)
        return
    flag = k.scalar(cond, "i1", span).ssa
    k.emit(f"scf.if {flag} {{", span, loc=False)
    k.depth += 1
    k.op("tmatmul", [left, right], dst, span)
    k.depth -= 1
    k.emit("} else {", loc=False)
    k.depth += 1
    k.op("tmatmul.acc", [dst, left, right], dst, span)
    k.depth -= 1
    k.emit("}", loc=False)


_MX_SPACES = (M.Left, M.LeftScale, M.Right, M.RightScale)


@emits("tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias")
def matmul_mx(k, v, c, span):            # a5: FP8 data, E8M0 scales per 32 of K (+ bias) (+= acc)
    if k.arch != "a5":
        fail(f"{c.op} is an a5 instruction (MX matmuls); {k.arch} has none", span,
             "compile for platform='a5sim' (backend Ascend950)")
    ins = [k.tile(a, span) for a in c.args]
    spaces = {"tile.matmul_mx": _MX_SPACES, "tile.matmul_mx_bias": _MX_SPACES + (M.Bias,),
              "tile.matmul_mx_acc": (M.Acc,) + _MX_SPACES}[c.op]
    check_spaces(c.op, list(zip(ins, spaces)), span)
    if c.op == "tile.matmul_mx_acc":
        dst = _in_place(k, v, ins[0], span)
        ins[0] = dst
    else:
        dst = k.alloc(v, span)
    k.op(OPS[c.op].pto, ins, dst, span)
