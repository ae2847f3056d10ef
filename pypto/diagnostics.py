"""Compile-time warnings and performance hints: pure checks over a Program.

Warnings (`DiagnosticCheck`) point at likely mistakes in the user's program; perf
hints point at code that will run slower than it could on the chip. Each names the
user's file:line and says what to do. Which ones run is decided by the phase
(`ir.DiagnosticPhase`) and the set of disabled checks.
"""
from __future__ import annotations

from dataclasses import dataclass

from pypto.backend import BackendType, chip
from pypto.ir.nodes import (Assign, Call, Eval, For, FunctionType, If, MemorySpace, ParamDirection,
                            Program, PtrType, Return, Var)
from pypto.ir.visit import defs, stmt_uses, walk

from pypto.ir.options import DEFAULT_DISABLED, HINTS, WARNINGS  # noqa: F401 - named here too

_SMALL_KERNEL_BYTES = 16 * 1024       # moving less than this, a launch (~µs) dominates
_UB_USED_FRACTION = 1 / 16            # below this share of UB, tiles are needlessly small


@dataclass(frozen=True)
class Diagnostic:
    check: str
    kind: str           # "warning" | "perf"
    span: object
    message: str
    hint: str

    def format(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.kind}: {self.message} [{self.check}]\n  hint: {self.hint}"


def _enabled(check, disabled):
    return check not in disabled


def warnings(prog: Program, disabled=DEFAULT_DISABLED) -> list[Diagnostic]:
    """Checks on the program as written (or after any pass)."""
    out: list[Diagnostic] = []
    for f in prog.functions:
        used = {id(v) for s in walk(f.body) for v in stmt_uses(s)}
        for s in walk(f.body):
            if isinstance(s, Assign) and id(s.var) not in used and not isinstance(s.var.type, PtrType) \
                    and _enabled("UnusedVariable", disabled) and not _is_call_of_function(s.value) \
                    and not (isinstance(s.value, Call) and s.value.op in ("tile.store", "tensor.assemble")):
                out.append(Diagnostic("UnusedVariable", "warning", s.span,
                                      f"{s.var.name!r} is assigned but never used",
                                      "remove it, or use its value (an unused result is dropped by Simplify)"))
            if isinstance(s, (For, If)) and _enabled("UnusedControlFlowResult", disabled):
                for v in s.return_vars:
                    if id(v) not in used:
                        out.append(Diagnostic("UnusedControlFlowResult", "warning", s.span,
                                              f"result {v.name!r} of this {type(s).__name__.lower()} is never used",
                                              "drop the carried value or read it after the block"))
        if f.func_type is FunctionType.Orchestration and _enabled("OutParamWriteDropped", disabled):
            written = _written(f)
            for p in f.params:
                if p.direction is ParamDirection.Out and id(p.var) not in written:
                    out.append(Diagnostic("OutParamWriteDropped", "warning", f.span,
                                          f"Out parameter {p.var.name!r} of {f.name} is never written",
                                          f"write it with {p.var.name}[...] = value or pl.store(tile, offsets, "
                                          f"{p.var.name}); `{p.var.name} = value` only rebinds the name"))
    return out


def _is_call_of_function(e) -> bool:
    return isinstance(e, Call) and e.callee is not None


def _written(f) -> set:
    """Ids of variables written in place: assemble/store targets, Out args of calls,
    and every name those results are bound to (they alias the same tensor)."""
    written: set = set()
    alias: dict = {}
    for s in walk(f.body):
        if isinstance(s, For):      # a carried tensor is the tensor it starts from
            for a, r in zip(s.iter_args, s.return_vars + [None] * len(s.iter_args)):
                if isinstance(a.init, Var):
                    root = alias.get(id(a.init), a.init)
                    alias[id(a.var)] = root
                    if r is not None:
                        alias[id(r)] = root
        c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if not isinstance(c, Call):
            continue
        targets = []
        if c.op == "tensor.assemble":
            targets = [c.args[0]]
        elif c.op == "tile.store":
            targets = [c.args[2]]
        elif c.callee is not None:
            targets = [a for a in c.args if isinstance(a, Var)]
        for t in targets:
            root = alias.get(id(t), t)
            written.add(id(root))
            if isinstance(s, Assign):
                alias[id(s.var)] = root
    for s in walk(f.body):      # writes inside pl.at regions reach the parameter too
        if isinstance(s, Return):
            for v in s.values:
                if isinstance(v, Var) and id(v) in alias:
                    written.add(id(alias[id(v)]))
    return written


def perf_hints(prog: Program, backend: BackendType, disabled=frozenset()) -> list[Diagnostic]:
    """Checks on the final (post-pass) program: kernels as the chip will run them."""
    c = chip(backend)
    out: list[Diagnostic] = []
    for f in prog.functions:
        if not f.is_kernel:
            continue
        moved = 0
        for s in walk(f.body):
            if not (isinstance(s, Assign) and isinstance(s.value, Call)):
                continue
            op, t = s.value.op, s.var.type
            if op == "tile.load" or op == "tile.store":
                tile = t if op == "tile.load" else s.value.args[0].type
                row = tile.shape[-1] * tile.dtype.nbytes
                moved += tile.nbytes()
                if row < c.gm_granularity and _enabled("TileInnermostDimGranularity", disabled):
                    out.append(Diagnostic(
                        "TileInnermostDimGranularity", "perf", s.span,
                        f"{op.split('.')[1]} moves rows of {row} bytes, below the {c.gm_granularity}-byte "
                        f"GM access granularity of {c.arch}",
                        f"make the innermost tile dimension at least {c.gm_granularity // tile.dtype.nbytes} "
                        f"elements of {tile.dtype}"))
        if _enabled("LoopInvariantLoad", disabled):
            out.extend(_invariant_loads(f.body))
        vec = sum(s.value.args[0].value for s in f.body
                  if isinstance(s, Assign) and isinstance(s.var.type, PtrType)
                  and s.value.kwargs.get("target_memory") is MemorySpace.Vec)
        cap = c.capacity[MemorySpace.Vec]
        if f.func_type is FunctionType.AIV and 0 < vec < cap * _UB_USED_FRACTION \
                and _enabled("UBUnderused", disabled) and _has_loop(f):
            out.append(Diagnostic("UBUnderused", "perf", f.span,
                                  f"kernel {f.name!r} uses {vec} of {cap} bytes of UB inside a loop",
                                  "process larger tiles per iteration to amortise per-op overhead"))
        if 0 < moved < _SMALL_KERNEL_BYTES and _enabled("SmallKernel", disabled):
            out.append(Diagnostic("SmallKernel", "perf", f.span,
                                  f"kernel {f.name!r} moves only {moved} bytes: too little work to amortise "
                                  f"a kernel launch",
                                  "fuse it with a neighbouring kernel (one pl.at region) or give it more data"))
    return out


def _invariant_loads(body) -> list[Diagnostic]:
    """Loads inside a loop that read the same window on every iteration."""
    out = []
    for loop in walk(body):
        if not isinstance(loop, For):
            continue
        inner = {id(loop.loop_var)} | {id(a.var) for a in loop.iter_args}
        inner |= {id(v) for s in walk(loop.body) for v in defs(s)}
        for s in loop.body:            # direct children; nested loops report their own
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.load":
                if not any(id(v) in inner for a in s.value.args[1:] for v in _vars(a)):
                    out.append(Diagnostic(
                        "LoopInvariantLoad", "perf", s.span,
                        "this load reads the same window on every iteration of the loop",
                        "load it once before the loop"))
    return out


def _vars(e):
    from pypto.ir.visit import vars_used
    return list(vars_used(e))


def _has_loop(f) -> bool:
    return any(isinstance(s, For) for s in walk(f.body))


def render(diags: list[Diagnostic]) -> str:
    return "".join(d.format() + "\n" for d in diags)

