"""DoubleBufferAcc: two Acc buffers alternate in a loop.

A sequential loop of a kernel whose body computes a fresh Acc tile with `tile.matmul`
and consumes it in the same iteration (no Acc tile is carried, none is yielded) and whose
trip count is a known constant is unrolled by 2: the loop steps twice as far, and its
body is the original body followed by a copy for the next iteration (the loop variable
plus one step, the carried values the first half yielded); an odd last iteration is
peeled after the loop. Each half's matmul is tagged `attrs={"acc_buffer": 0 | 1}`; the
memory passes keep a tagged Acc tile live through its whole loop
(`memory_reuse.lifetimes`), so the two halves get two Acc buffers at different addresses
and the second matmul can fill one while the first one's result is still being drained
from the other.

Which loops: every qualifying loop with the l0c_double_buffer option
(`enable_pypto_l0c_double_buffer`), and always a loop that asks for it with
`attrs={"pipeline_double_buffer_c": True}` (AutoTileMatmulL0 writes it where the L0 tile
chooser double-buffers L0C; a program may too: a loop asking for it that cannot have it is
an error at the loop's line). Runs on SSA, before InitMemRef.
"""
from __future__ import annotations

from pypto.errors import TypeCheckError
from pypto.ir.nodes import (DOUBLE_BUFFER_C, Assign, BinOp, Call, Const, For, ForKind, MemorySpace, Program,
                            TileType, Var, Yield)
from pypto.ir.visit import Rewriter, const_int, walk
from pypto.passes.base import Clone, function_namer

NAME = "DoubleBufferAcc"
READS = ("l0c_double_buffer",)

ATTR = "acc_buffer"


DBC = DOUBLE_BUFFER_C


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if f.is_kernel and (opts.l0c_double_buffer or any(isinstance(s, For) and s.attrs.get(DBC)
                                                          for s in walk(f.body))):
            f.body = _DoubleBuffer(function_namer(f), opts.l0c_double_buffer).body(f.body)
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
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in ("tile.matmul", "tile.matmul_bias") \
                and _is_acc(s.var) and ATTR not in s.value.attrs and s.var.type.slot is None:
            found.append(s.value)       # (a tile in a declared slot is placed as the user said)
    return found


def _trips(s: For) -> int | None:
    b = [const_int(x) for x in (s.start, s.stop, s.step)]
    if any(x is None for x in b) or b[2] <= 0:
        return None
    return len(range(*b))


def _why_not(s: For, n: int | None) -> str | None:
    """Why the loop cannot alternate two accumulators (None: it can)."""
    if s.kind is not ForKind.Sequential:
        return "it is not a sequential loop"
    if any(_is_acc(a.var) for a in s.iter_args):
        return "it carries an Acc tile from one iteration to the next"
    if n is None:
        return "its trip count is not a compile-time constant"
    if n < 2:
        return "it runs fewer than two iterations"
    if not _fresh_acc_matmuls(s.body):
        return "its body has no tile.matmul whose Acc result is used within the iteration"
    return None


class _DoubleBuffer(Rewriter):
    def __init__(self, names, every_loop: bool):
        self.names, self.every_loop = names, every_loop

    def stmt(self, s):
        if not isinstance(s, For):
            return [self.default_stmt(s)]
        s = self.default_stmt(s)                      # inner loops first
        asked = bool(s.attrs.get(DBC))
        if not (asked or self.every_loop):
            return [s]
        n = _trips(s)
        why = _why_not(s, n)
        if why is not None:
            if asked:
                raise TypeCheckError(f"the loop asks for {DBC} but {why}", s.span,
                                     "two accumulators alternate between the iterations of a loop with a "
                                     "constant trip count whose body computes a fresh tile.matmul result and "
                                     "uses it; drop the attribute otherwise")
            return [s]
        if n % 2 and not asked:
            return [s]
        step, lv, pairs = const_int(s.step), s.loop_var, n - n % 2
        first = list(s.body)
        y = first.pop() if first and isinstance(first[-1], Yield) else None
        second = self.copy(s, BinOp("+", lv, Const(step, lv.type.dtype, s.span), lv.type.dtype, s.span),
                           y.values if y is not None else [])
        rets, after = s.return_vars, []
        if n % 2:
            # the last iteration runs after the loop (its Acc tile an ordinary one: the pairs'
            # two are done by then); what it yields is bound to the loop's results
            rets = [Var(self.names.fresh(v.name, "db"), v.type, v.span) for v in s.return_vars]
            made = {id(x.var) for x in s.body if isinstance(x, Assign)}
            binds = {id(v): r for v, r in zip(y.values if y is not None else [], s.return_vars) if id(v) in made}
            after = self.copy(s, Const(const_int(s.start) + pairs * step, lv.type.dtype, s.span), rets, binds)
            tail_y = after.pop() if after and isinstance(after[-1], Yield) else None
            after += [Assign(r, v, s.span) for r, v in zip(s.return_vars, tail_y.values if tail_y else [])
                      if v is not r]
        for k, half in enumerate((first, second)):
            for c in _fresh_acc_matmuls(half):
                c.attrs[ATTR] = k
        stop = Const(const_int(s.start) + pairs * step, s.step.dtype, s.stop.span) if n % 2 else s.stop
        return [For(lv, s.start, stop, Const(2 * step, s.step.dtype, s.step.span), first + second,
                    s.iter_args, rets, s.kind, s.span, s.stage, dict(s.attrs))] + after

    def copy(self, s: For, index, carried, binds=None) -> list:
        """The loop's body for one iteration: the loop variable is `index`, the carried
        values are `carried`; what the body defines gets fresh names (or its `binds`)."""
        var_map = dict(binds or {})
        var_map[id(s.loop_var)] = index
        for a, v in zip(s.iter_args, carried):
            var_map[id(a.var)] = v
        return Clone(var_map, lambda v: Var(self.names.fresh(v.name, "db"), v.type, v.span)).body(s.body)
