"""DoubleBufferAcc (l0c_double_buffer): two Acc buffers alternate in a loop.

A sequential `pl.range` loop of a kernel whose body computes a fresh Acc tile with
`tile.matmul` and consumes it in the same iteration (no Acc tile is carried, none is
yielded) is unrolled by 2 when its trip count is a known even constant: the loop steps
twice as far, and its body is the original body followed by a copy for the next
iteration (the loop variable plus one step, the carried values the first half
yielded). Each half's matmul is tagged `attrs={"acc_buffer": 0 | 1}`; the memory
passes keep a tagged Acc tile live through its whole loop (`memory_reuse.lifetimes`),
so the two halves get two Acc buffers at different addresses and the second matmul
can fill one while the first one's result is still being drained from the other.
Other loops are left as they are. Runs on SSA, before InitMemRef; the pipeline
includes it only when the option is on.
"""
from __future__ import annotations

from pypto.ir.nodes import (Assign, BinOp, Call, Const, For, ForKind, MemorySpace, Program,
                            TileType, Var, Yield)
from pypto.ir.visit import Rewriter, const_int, walk
from pypto.passes.base import Clone, function_namer

NAME = "DoubleBufferAcc"
READS = ("l0c_double_buffer",)

ATTR = "acc_buffer"


def run(prog: Program, opts) -> Program:
    if not opts.l0c_double_buffer:
        return prog
    out = []
    for f in prog.functions:
        if f.is_kernel:
            f.body = _DoubleBuffer(function_namer(f)).body(f.body)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _is_acc(v) -> bool:
    return isinstance(v, Var) and isinstance(v.type, TileType) and v.type.memory_space is MemorySpace.Acc


def _fresh_acc_matmuls(body) -> list[Call]:
    """The body's tile.matmul calls producing an Acc tile, or [] when the loop does not
    qualify (an Acc value is yielded, i.e. flows into the next iteration or out)."""
    found = []
    for s in walk(body):
        if isinstance(s, Yield) and any(_is_acc(v) for v in s.values):
            return []
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.matmul" \
                and _is_acc(s.var) and ATTR not in s.value.attrs and s.var.type.slot is None:
            found.append(s.value)       # (a tile in a declared slot is placed as the user said)
    return found


def _trips(s: For) -> int | None:
    b = [const_int(x) for x in (s.start, s.stop, s.step)]
    if any(x is None for x in b) or b[2] <= 0:
        return None
    return len(range(*b))


class _DoubleBuffer(Rewriter):
    def __init__(self, names):
        self.names = names

    def stmt(self, s):
        if not isinstance(s, For):
            return [self.default_stmt(s)]
        s = self.default_stmt(s)                      # inner loops first
        if s.kind is not ForKind.Sequential or any(_is_acc(a.var) for a in s.iter_args):
            return [s]
        n = _trips(s)
        if n is None or n < 2 or n % 2 or not _fresh_acc_matmuls(s.body):
            return [s]
        first = list(s.body)
        y = first.pop() if first and isinstance(first[-1], Yield) else None
        step = const_int(s.step)
        lv = s.loop_var
        var_map = {id(lv): BinOp("+", lv, Const(step, lv.type.dtype, s.span), lv.type.dtype, s.span)}
        for a, v in zip(s.iter_args, y.values if y is not None else []):
            var_map[id(a.var)] = v
        second = Clone(var_map, lambda v: Var(self.names.fresh(v.name, "db"), v.type, v.span)) \
            .body(s.body)
        for k, half in enumerate((first, second)):
            for c in _fresh_acc_matmuls(half):
                c.attrs[ATTR] = k
        return [For(lv, s.start, s.stop, Const(2 * step, s.step.dtype, s.step.span), first + second,
                    s.iter_args, s.return_vars, s.kind, s.span)]
