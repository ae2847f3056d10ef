"""The Default pass pipeline, as data: an ordered list of passes, each a pure
Program -> Program function with the options it reads. The build graph makes one task
per entry; `run_pipeline` runs them in memory (for `lower()` and for tests).

A pass's module is imported on first use (its `module`, `reads` or a run), not when
this package is: running one pass loads that pass's code only, so the build key of a
pass task covers that pass's module (pypto_pipeline.closure binds the computed import
in `Pass.module` to it) and an edit to another pass leaves it cached.
"""
from __future__ import annotations

import copy
import importlib
import re
import sys
import types

from typing import TYPE_CHECKING

if TYPE_CHECKING:     # the options' module (and the op tables) load with the first pass
    from pypto.passes.base import PassOptions

# (name, module under pypto.passes), in pipeline order; each module defines
# NAME (checked against this table on load), READS and run(prog, opts)
_REGISTRY = [
    ("InlineFunctions", "inline_functions"),
    ("UnrollLoops", "unroll_loops"),
    ("ConvertToSSA", "convert_to_ssa"),
    ("Simplify", "simplify"),
    ("FlattenCallExpr", "flatten_call_expr"),
    ("OutlineIncoreScopes", "outline_incore_scopes"),
    ("FuseCreateAssembleToSlice", "fuse_create_assemble"),
    ("ConvertTensorToTileOps", "convert_tensor_to_tile_ops"),
    ("FlattenTileNdTo2D", "flatten_tile_nd_to_2d"),
    ("InferTileMemorySpace", "infer_tile_memory_space"),
    ("AutoTileMatmulL0", "auto_tile_matmul_l0"),
    ("ExpandMixedKernel", "expand_mixed_kernel"),
    ("DoubleBufferAcc", "double_buffer_acc"),
    ("InitMemRef", "init_memref"),
    ("MemoryReuse", "memory_reuse"),
    ("AllocateMemoryAddr", "allocate_memory_addr"),
    ("DeriveCallDirections", "derive_call_directions"),
    ("AutoDeriveTaskDependencies", "auto_derive_task_dependencies"),
    ("MaterializeRuntimeScopes", "materialize_runtime_scopes"),
]


# Passes that rewrite each function on its own. The build graph runs and caches these
# per function, so a one-kernel edit re-runs one function's chain; the others
# (inlining, outlining) see the whole program. A pass whose module sets CALLEES = True
# also sees the signatures of the functions its function calls (e.g. call directions).
FUNCTION_LOCAL = {"UnrollLoops", "ConvertToSSA", "Simplify", "FlattenCallExpr", "FuseCreateAssembleToSlice",
                  "ConvertTensorToTileOps", "FlattenTileNdTo2D", "InferTileMemorySpace", "AutoTileMatmulL0",
                  "ExpandMixedKernel", "DoubleBufferAcc", "InitMemRef", "MemoryReuse",
                  "AllocateMemoryAddr", "DeriveCallDirections", "AutoDeriveTaskDependencies",
                  "MaterializeRuntimeScopes"}


class Pass:
    """A pass: its name, its module (an object with `run`, or the name of a module
    under pypto.passes, imported on first use) and the PassOptions fields it reads
    (default: the module's READS)."""

    __slots__ = ("name", "_module", "_reads")

    def __init__(self, name: str, module, reads: tuple[str, ...] | None = None):
        self.name = name
        self._module = module
        self._reads = None if reads is None else tuple(reads)

    @property
    def module(self):
        if isinstance(self._module, str):
            m = importlib.import_module(f"pypto.passes.{self._module}")
            if m.NAME != self.name:
                raise ImportError(f"pypto.passes.{self._module} defines pass {m.NAME!r}, "
                                  f"registered as {self.name!r}")
            self._module = m
        return self._module

    @property
    def module_name(self) -> str:
        """The module's name under pypto.passes, without importing it."""
        m = self._module
        return m if isinstance(m, str) else m.__name__.rpartition(".")[2]

    @property
    def reads(self) -> tuple[str, ...]:
        if self._reads is None:
            self._reads = tuple(self.module.READS)
        return self._reads

    @property
    def local(self) -> bool:
        return self.name in FUNCTION_LOCAL

    def __call__(self, prog, opts: PassOptions):
        return self.module.run(prog, opts)

    def __repr__(self) -> str:
        return f"Pass({self.name!r})"


ALL_PASSES = [Pass(name, module) for name, module in _REGISTRY]
_BY_NAME = {p.name: p for p in ALL_PASSES}


def by_name(name: str) -> Pass:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no pass named {name!r}: the passes are "
                       f"{', '.join(_BY_NAME)}") from None


def pipeline(opts: PassOptions) -> list[Pass]:
    """The passes Default runs for these options."""
    return selected(opts.memory_planner, opts.l0c_double_buffer)


def selected(memory_planner: str, l0c_double_buffer: bool) -> list[Pass]:
    """The passes Default runs: the planner decides which memory passes run
    (DoubleBufferAcc always runs: loops may ask for two accumulators themselves)."""
    skip = set()
    if memory_planner in ("DSA_RP", "PTOAS"):
        skip.add("MemoryReuse")
    if memory_planner == "PTOAS":
        skip.add("AllocateMemoryAddr")
    return [p for p in ALL_PASSES if p.name not in skip]


def run_pass(p: Pass, prog, opts: PassOptions, verify: bool = True, done: list | None = None,
             private: bool = False):
    """Run one pass on a private copy (passes may rewrite their input in place);
    `private=True` when the caller's program is its own (just parsed) and needs none."""
    out = p(prog if private else copy.deepcopy(prog), opts)
    _if_results_as_printed(out)
    if verify:
        from pypto.passes.verify import verify as check
        check(out, p.name, (done or []) + [p.name])
    return out


def _if_results_as_printed(prog) -> None:
    """An if's results are printed as the names its branches yield (no annotation): read
    back, each has the type of the value the then-branch yields. Give them that type here
    too, so the program a step hands on in memory is the one its text parses to (a later
    step may read either, as the store has it)."""
    from pypto.ir.nodes import If, Yield
    from pypto.ir.visit import walk
    for f in prog.functions:
        for s in walk(f.body):
            if isinstance(s, If) and s.return_vars and s.then_body and isinstance(s.then_body[-1], Yield):
                for r, v in zip(s.return_vars, s.then_body[-1].values):
                    t = getattr(v, "type", None)
                    if t is not None and r.type != t:
                        r.type = t


def run_pipeline(prog, opts: PassOptions, verify: bool = True):
    done: list[str] = []
    for p in pipeline(opts):
        prog = run_pass(p, prog, opts, verify, done)
        done.append(p.name)
    return prog


class _PassModule(types.ModuleType):
    """A pass's module, callable as the reference's pass factory: `passes.simplify()` is a
    runner of Simplify (context.PassRunner), whether or not the module was imported."""

    def __call__(self):
        from pypto.passes.context import PassRunner
        return PassRunner(self.NAME)


class _Package(types.ModuleType):
    # the import system binds each imported submodule here: a pass module whose name is
    # its factory's (convert_to_ssa, simplify, ...) becomes callable on the way
    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in _FACTORY_MODULES:
            value.__class__ = _PassModule
        super().__setattr__(name, value)


def snake(name: str) -> str:
    """A pass's factory name: InitMemRef -> init_mem_ref, AutoTileMatmulL0 -> auto_tile_matmul_l0."""
    return re.sub(r"(?<=[a-z])(?=[A-Z0-9])", "_", name).lower()


_FACTORY_MODULES = {m for n, m in _REGISTRY if snake(n) == m}
sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    """`passes.PassContext` and the factories `passes.<snake_name>()` (passes/context.py)."""
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _FACTORY_MODULES:       # the pass's module itself (callable: _PassModule)
        return importlib.import_module(f"pypto.passes.{name}")
    context = importlib.import_module("pypto.passes.context")
    if name == "PassContext":
        return context.PassContext
    made = context.factories().get(name)
    if made is None:
        raise AttributeError(f"module 'pypto.passes' has no attribute {name!r}")
    return made
