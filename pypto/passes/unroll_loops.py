"""UnrollLoops: a `pl.unroll(start, stop, step)` loop becomes one copy of its body per
iteration, with the loop variable replaced by that iteration's constant (Simplify then
folds the index arithmetic: `i * 16` becomes `32`).

Runs before ConvertToSSA, on names as the user wrote them: each copy binds the same
variables (before SSA a variable is its name and type, one Var object, as the parser
makes them), so a value the body rebinds flows from one copy into the next exactly as
it flowed from one iteration into the next, and a name used after the loop reads the
last iteration's value. A loop that carries explicit iter_args (not writable with
pl.unroll, but kept general) binds them with copies `acc = init` / `acc = yielded`
between the bodies. The copies' variables are then rebound as the parser binds names
(`rebind_names`): the result is the program its printed text parses back to. Nested unroll loops expand
inside out; bounds must be integer constants (the parser checks), and an unroll of
more than MAX_TRIPS iterations is refused.
"""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.ir.nodes import Assign, Const, For, ForKind, Program, Yield
from pypto.ir.visit import Rewriter, const_int, walk
from pypto.passes.base import Clone, rebind_names

NAME = "UnrollLoops"
READS = ()

MAX_TRIPS = 1024


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if any(isinstance(s, For) and s.kind is ForKind.Unroll for s in walk(f.body)):
            f = rebind_names(_Unroll().function(f))
        out.append(f)
    return Program(prog.name, out, prog.source)


class _Unroll(Rewriter):
    def stmt(self, s):
        if not (isinstance(s, For) and s.kind is ForKind.Unroll):
            return [self.default_stmt(s)]
        bounds = [const_int(x) for x in (s.start, s.stop, s.step)]
        if any(b is None for b in bounds):
            raise CodegenError("pl.unroll bounds must be integer constants", s.span,
                               "use pl.range for bounds known only at run time")
        start, stop, step = bounds
        if step == 0:
            raise CodegenError("pl.unroll step must not be 0", s.span)
        trips = list(range(start, stop, step))
        if len(trips) > MAX_TRIPS:
            raise CodegenError(f"pl.unroll({start}, {stop}, {step}) would make {len(trips)} "
                               f"copies of its body (at most {MAX_TRIPS})", s.span,
                               "use pl.range, or unroll an inner loop of fewer iterations")
        body = self.body(s.body)               # inner unroll loops first
        out: list = []
        carried = [a.init for a in s.iter_args]
        for k in trips:
            var_map = {id(s.loop_var): Const(k, s.loop_var.type.dtype, s.span)}
            clone = Clone(var_map, lambda v: v)
            for a, value in zip(s.iter_args, carried):
                out.append(Assign(clone.define(a.var), value, s.span))
            copy = clone.body(body)
            if copy and isinstance(copy[-1], Yield):
                carried = list(copy.pop().values)
            out.extend(copy)
        for r, value in zip(s.return_vars, carried):
            out.append(Assign(r, value, s.span))
        return out
