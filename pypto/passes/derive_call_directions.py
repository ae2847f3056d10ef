"""DeriveCallDirections: every kernel call in an orchestration records how it uses each
argument (`attrs={"arg_directions": [...]}`): In -> input, Out -> output_existing (the
buffer already exists), InOut -> inout, scalars -> scalar. The runtime derives task
dependencies from these. Directions the user wrote on a call are kept."""
from __future__ import annotations

from pypto.ir.nodes import (ArgDir, Assign, Call, Eval, ParamDirection, Program, ScalarType)
from pypto.ir.visit import walk

NAME = "DeriveCallDirections"
READS = ()
CALLEES = True      # function-local, given the signatures of the functions it calls

_DIR = {ParamDirection.In: ArgDir.input, ParamDirection.Out: ArgDir.output_existing,
        ParamDirection.InOut: ArgDir.inout}


def run(prog: Program, opts) -> Program:
    funcs = {f.name: f for f in prog.functions}
    for f in prog.functions:
        for s in walk(f.body):
            c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
            if isinstance(c, Call) and c.callee in funcs:
                callee = funcs[c.callee]
                if len(c.attrs.get("arg_directions") or ()) == len(callee.params):
                    continue        # written by the user (e.g. no_dep): theirs stands
                c.attrs["arg_directions"] = [
                    ArgDir.scalar if isinstance(p.var.type, ScalarType) else _DIR[p.direction]
                    for p in callee.params]
    return prog
