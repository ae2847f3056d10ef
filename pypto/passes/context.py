"""`passes.PassContext` and the pass factories (`passes.convert_to_ssa()`, ...): the
reference's way of running single passes by hand,

    with passes.PassContext([], memory_planner=MemoryPlanner.PTOAS):
        program = passes.convert_to_ssa()(program)

A factory returns a callable that runs one of our passes (pypto.passes' table) on a
copy of the program with the options of the innermost PassContext (else the defaults
and the process's configured backend). The reference splits some work into passes that
ours does elsewhere; their factories name the part of ours that does it (FOLDED) and
return the program as they got it.
"""
from __future__ import annotations

import threading

from pypto.errors import NotBuiltError
from pypto.passes import snake

_TLS = threading.local()

# reference pass -> the part of our compiler that does its work
FOLDED = {
    "CtrlFlowTransform": "the parser: break, continue and while are structured loops and ifs as parsed",
    "NormalizeStmtStructure": "the IR itself: a body is one flat statement list",
    "LowerCompositeOps": "ConvertTensorToTileOps: composite ops lower to tile ops with the rest",
    "OptimizeOrchTensors": "FuseCreateAssembleToSlice and ConvertTensorToTileOps",
}

# reference pass names that are one of our passes under another name
ALIASES = {
    "OutlineHierarchyScopes": "OutlineIncoreScopes",   # ours outlines every pl.at scope
    "OutlineClusterScopes": "OutlineIncoreScopes",
}


class PassContext:
    """The options single passes run with: `PassContext(instruments, memory_planner=...,
    enable_pypto_l0c_double_buffer=..., analyze_auto_scopes_for_deps=..., backend_type=...)`.
    Nests; the innermost applies."""

    def __init__(self, instruments=(), *, memory_planner=None, enable_pypto_l0c_double_buffer: bool = False,
                 analyze_auto_scopes_for_deps: bool = False, backend_type=None):
        if list(instruments or []):
            raise NotBuiltError("PassContext instruments (per-pass verification or timing hooks) are not "
                                "built: pass [] (ir.compile(dump_passes=True) writes every pass's result)")
        from pypto.backend import BackendType
        from pypto.ir.options import MemoryPlanner, coerce
        from pypto.passes.base import PassOptions
        planner = coerce(MemoryPlanner, memory_planner or MemoryPlanner.PYPTO, "memory_planner").value
        # (no backend_type: the process's configured one, PassOptions' default)
        backend = {} if backend_type is None else {"backend_type": BackendType(backend_type)}
        self.options = PassOptions(memory_planner=planner,
                                   analyze_auto_scopes_for_deps=bool(analyze_auto_scopes_for_deps),
                                   l0c_double_buffer=bool(enable_pypto_l0c_double_buffer), **backend)

    def __enter__(self):
        stack = getattr(_TLS, "stack", None)
        if stack is None:
            stack = _TLS.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _TLS.stack.pop()
        return False

    @staticmethod
    def current() -> "PassContext | None":
        stack = getattr(_TLS, "stack", None)
        return stack[-1] if stack else None


def current_options():
    ctx = PassContext.current()
    if ctx is not None:
        return ctx.options
    from pypto.passes.base import PassOptions
    return PassOptions()


class PassRunner:
    """One pass, runnable by hand: `runner(program) -> program` (the input is left as is)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, program):
        from pypto.passes import by_name, run_pass
        return run_pass(by_name(self.name), program, current_options(), verify=False)

    def get_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"passes.{snake(self.name)}()"


class FoldedPass:
    """A reference pass whose work another part of our compiler does (FOLDED names
    where): the program passes through as it is."""

    def __init__(self, name: str):
        self.name, self.done_by = name, FOLDED[name]

    def __call__(self, program):
        return program

    def get_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"passes.{snake(self.name)}()  # done by {self.done_by}"


def factories() -> dict:
    """snake_case name -> factory, for every pass of ours and every reference name."""
    from pypto.passes import _REGISTRY
    out = {}
    for name, _ in _REGISTRY:
        out[snake(name)] = (lambda n=name: PassRunner(n))
    for ref, ours in ALIASES.items():
        out[snake(ref)] = (lambda n=ours: PassRunner(n))
    for ref in FOLDED:
        out[snake(ref)] = (lambda n=ref: FoldedPass(n))
    return out
