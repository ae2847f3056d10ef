"""The Default pass pipeline, as data: an ordered list of passes, each a pure
Program -> Program function with the options it reads. The build graph makes one task
per entry; `run_pipeline` runs them in memory (for `lower()` and for tests)."""
from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from types import ModuleType

from pypto.passes.base import PassOptions

_MODULES = [
    "inline_functions",
    "unroll_loops",
    "convert_to_ssa",
    "simplify",
    "flatten_call_expr",
    "outline_incore_scopes",
    "convert_tensor_to_tile_ops",
    "flatten_tile_nd_to_2d",
    "infer_tile_memory_space",
    "expand_mixed_kernel",
    "double_buffer_acc",
    "init_memref",
    "memory_reuse",
    "allocate_memory_addr",
    "derive_call_directions",
    "auto_derive_task_dependencies",
    "materialize_runtime_scopes",
]


# Passes that rewrite each function on its own (given the others' signatures). The
# build graph runs and caches these per function, so a one-kernel edit re-runs one
# function's chain; the others (outlining, call directions) see the whole program.
FUNCTION_LOCAL = {"UnrollLoops", "ConvertToSSA", "Simplify", "FlattenCallExpr",
                  "ConvertTensorToTileOps", "FlattenTileNdTo2D", "InferTileMemorySpace",
                  "ExpandMixedKernel", "DoubleBufferAcc", "InitMemRef", "MemoryReuse", "AllocateMemoryAddr",
                  "MaterializeRuntimeScopes"}


@dataclass(frozen=True)
class Pass:
    name: str
    module: ModuleType
    reads: tuple[str, ...]

    @property
    def local(self) -> bool:
        return self.name in FUNCTION_LOCAL

    def __call__(self, prog, opts: PassOptions):
        return self.module.run(prog, opts)


def _load(mod: str) -> Pass:
    m = importlib.import_module(f"pypto.passes.{mod}")
    return Pass(m.NAME, m, tuple(m.READS))


ALL_PASSES = [_load(m) for m in _MODULES]


def pipeline(opts: PassOptions) -> list[Pass]:
    """The passes Default runs for these options (the planner decides which
    memory passes run; DoubleBufferAcc runs only with l0c_double_buffer)."""
    skip = set()
    if not opts.l0c_double_buffer:
        skip.add("DoubleBufferAcc")
    if opts.memory_planner in ("DSA_RP", "PTOAS"):
        skip.add("MemoryReuse")
    if opts.memory_planner == "PTOAS":
        skip.add("AllocateMemoryAddr")
    return [p for p in ALL_PASSES if p.name not in skip]


def run_pass(p: Pass, prog, opts: PassOptions, verify: bool = True, done: list | None = None,
             private: bool = False):
    """Run one pass on a private copy (passes may rewrite their input in place);
    `private=True` when the caller's program is its own (just parsed) and needs none."""
    out = p(prog if private else copy.deepcopy(prog), opts)
    if verify:
        from pypto.passes.verify import verify as check
        check(out, p.name, (done or []) + [p.name])
    return out


def run_pipeline(prog, opts: PassOptions, verify: bool = True):
    done: list[str] = []
    for p in pipeline(opts):
        prog = run_pass(p, prog, opts, verify, done)
        done.append(p.name)
    return prog
