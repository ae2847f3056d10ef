"""IR invariants checked after every pass (verification level BASIC).

Each property becomes true at some pass and must stay true afterwards; a violation
names the pass that broke it. These catch compiler bugs, not user errors.
"""
from __future__ import annotations

from pypto.errors import VerificationError
from pypto.ir import ops
from pypto.ir.nodes import Assign, Call, Eval, For, Function, If, Program, TileType, While
from pypto.ir.visit import bodies, defs, stmt_uses, walk

# property -> the pass after which it holds
ESTABLISHED_BY = {
    # before SSA a variable is a name (a rebinding that changes the type is a new Var of
    # the same name): ConvertToSSA resolves names and reports a use without a value
    "defined_before_use": "ConvertToSSA",
    "ssa": "ConvertToSSA",
    "no_kernel_tensor_ops": "ConvertTensorToTileOps",
    "tiles_placed": "InferTileMemorySpace",
    "kernels_typed": "ExpandMixedKernel",
}


def _defined_before_use(f: Function):
    def go(stmts, scope):
        for s in stmts:
            own = {id(a.var) for a in s.iter_args} if isinstance(s, While) else set()
            for v in stmt_uses(s):               # (a while's condition reads its carried values)
                if id(v) not in scope and id(v) not in own:
                    return f"{v.name!r} used before it is defined in {f.name}"
            if isinstance(s, (For, While, If)):  # their bodies' names stay inside
                inner = set(scope)
                if isinstance(s, For):
                    inner |= {id(s.loop_var)} | {id(a.var) for a in s.iter_args}
                inner |= own
                for b in bodies(s):
                    err = go(b, set(inner))
                    if err:
                        return err
                scope.update(id(v) for v in s.return_vars)
                continue
            for b in bodies(s):                  # pl.at / pl.scope bodies are transparent
                err = go(b, scope)
                if err:
                    return err
            for v in defs(s):
                scope.add(id(v))
        return None
    return go(f.body, {id(p.var) for p in f.params})


def _ssa(f: Function):
    seen = {id(p.var) for p in f.params}
    for s in walk(f.body):
        for v in defs(s):
            if id(v) in seen:
                return f"{v.name!r} is assigned more than once in {f.name}"
            seen.add(id(v))
    return None


def _no_kernel_tensor_ops(f: Function):
    if not f.is_kernel:
        return None
    for s in walk(f.body):
        c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if isinstance(c, Call) and ops.is_tensor_op(c.op):
            return f"tensor op {c.op} left in kernel {f.name}"
    return None


def _tiles_placed(f: Function):
    for s in walk(f.body):
        for v in defs(s):
            if isinstance(v.type, TileType) and v.type.memory_space is None:
                return f"tile {v.name!r} in {f.name} has no memory space"
    return None


def _kernels_typed(f: Function):
    from pypto.ir.nodes import FunctionType
    if f.func_type is FunctionType.InCore:
        return f"kernel {f.name} is still InCore (neither AIC nor AIV)"
    return None


_CHECKS = {"defined_before_use": _defined_before_use, "ssa": _ssa,
           "no_kernel_tensor_ops": _no_kernel_tensor_ops, "tiles_placed": _tiles_placed,
           "kernels_typed": _kernels_typed}


def verify(prog: Program, after_pass: str, passes_so_far: list[str]) -> None:
    active = [p for p, by in ESTABLISHED_BY.items() if by is None or by in passes_so_far]
    for f in prog.functions:
        for prop in active:
            err = _CHECKS[prop](f)
            if err:
                raise VerificationError(f"after pass {after_pass}: {err} (property {prop})", f.span,
                                        "this is a compiler bug; compile with verification_level=NONE "
                                        "to get past it and report the program")



