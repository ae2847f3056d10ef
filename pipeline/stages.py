"""The pypto compile flow's stages for the build graph: which function runs each
stage (STAGE_FNS), and the digest of the code that decides its output (stage_impl).

This is the only module of `pipeline` that knows the compiler. The stage functions
themselves live in pypto.stages, one module per stage, and are imported only when a
step is laid out (a compile served whole from the store runs none).

A stage's implementation digest covers exactly (`closure.py`):
- the import closure inside the project of the stage's module (for a pass step,
  plus the pass's own module `extra`), read statically from the sources;
- the headers a stage compiles against (`#include "..."` closure), and the C++
  compiler's identity, for the stages that run it.
The digests are kept in an on-disk index per tree (`impl_index.py`): a process
stats the files instead of re-reading them.
"""
from __future__ import annotations

import functools
import json
import importlib
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from pypto_pipeline.digest import impl_digest

SCHEMA = "pypto-impl/1"


class StageCode:
    """Where a stage's code is: its module under pypto.stages, its function, the
    headers (roots in pypto/include) it compiles against, whether it runs the C++
    compiler."""
    __slots__ = ("module", "fn", "headers", "compiler")

    def __init__(self, module: str, fn: str, headers: tuple[str, ...] = (),
                 compiler: bool = False):
        self.module, self.fn, self.headers, self.compiler = module, fn, headers, compiler


STAGES = {
    "specialize": StageCode("specialize", "specialize_stage"),
    "frontend": StageCode("frontend", "frontend_stage"),
    "pass": StageCode("pass_", "pass_stage"),
    "pto": StageCode("pto", "pto_stage"),
    "ptoas": StageCode("ptoas", "ptoas_stage"),
    # the C++ ptoas emits includes pto_sim.hpp; codegen/orchestration.py's, pypto_abi.h
    "kernel": StageCode("kernel", "kernel_stage", ("pto_sim.hpp",), compiler=True),
    # a hand-written kernel (external_source=) and the headers it is given
    "extern": StageCode("extern", "extern_stage", ("pypto_abi.h", "external/tensor.h",
                                                   "external/intrinsic.h", "external/pto/pto-inst.hpp"),
                        compiler=True),
    "orchestration": StageCode("orchestration", "orchestration_stage", ("pypto_abi.h",),
                               compiler=True),
    "layout": StageCode("layout", "layout_stage"),
    "config": StageCode("config", "config_stage"),
    "host": StageCode("host", "host_stage"),      # a HOST-level program's plan
}


# ----------------------------------------------------------------------------- functions
class _StageFns(Mapping):
    """stage -> its function, the stage's module imported on first lookup."""

    def __getitem__(self, stage: str):
        code = STAGES[stage]
        return getattr(importlib.import_module(f"pypto.stages.{code.module}"), code.fn)

    def __iter__(self):
        return iter(STAGES)

    def __len__(self) -> int:
        return len(STAGES)


STAGE_FNS = _StageFns()


def preload(skip=()) -> None:
    """Import every stage module (but those in `skip`, which the build will not run),
    and every pass, in this thread. Stage tasks run on worker threads; two threads
    importing modules that import each other can hit importlib's deadlock detection
    (_DeadlockError) if the first import happens there."""
    for stage in STAGES:
        if stage not in skip:
            STAGE_FNS[stage]
    from pypto.passes import ALL_PASSES
    for p in ALL_PASSES:
        p.module


def ptoas_dump_names(level: str) -> list[str]:
    """The dumps ptoas writes with dump_passes at this level (outputs pass_<name>)."""
    names = ["01_parse", "02_verify"] + (["03_plan_memory"] if level != "level3" else [])
    return names + ["04_emit"]


# ----------------------------------------------------------------------------- code digests
def stage_files(tree: "Tree", stage: str, extra: str = "") -> dict[Path, str | None]:
    """The source files that decide a stage's output in a tree: file -> its module
    (None for a header)."""
    code = STAGES[stage]
    roots = [f"pypto.stages.{code.module}"]
    # Computed imports a stage can reach, bound to what it really loads: the pass
    # registry loads a pass's module only to run it, and only the pass stage runs one
    # (the one named by `extra`); stage functions never load each other via STAGE_FNS.
    passes = [f"pypto.passes.{extra}"] if stage == "pass" and extra else []
    files: dict[Path, str | None] = tree.closure(roots + passes, {"pypto.passes.": passes,
                                                                  "pypto.stages.": []})
    include = tree.packages["pypto"] / "include"
    files.update(dict.fromkeys(tree.includes([include / h for h in code.headers])))
    return files


def file_map(tree: "Tree", stage: str, extra: str = "") -> dict[str, str]:
    """Those files as label -> digest: named independently of where the tree lives."""
    return {tree.label(p): tree.digest(p, m) for p, m in stage_files(tree, stage, extra).items()}


def tree_impl(tree: "Tree", stage: str, extra: str = "") -> str:
    """Digest of the sources that decide a stage's output (no toolchain): a pure
    function of the tree's files."""
    return impl_digest(SCHEMA, stage, extra,
                       *sorted(f"{k}:{v}" for k, v in file_map(tree, stage, extra).items()))


_LOCK = threading.Lock()     # the index is one mutable object per process


@functools.lru_cache(maxsize=None)
def stage_impl(stage: str, extra: str = "") -> str:
    """Digest of the code implementing a stage (cached per process, and on disk)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage}")
    with _LOCK:
        return _stage_impl(stage, extra)


def _stage_impl(stage: str, extra: str) -> str:
    index = _index()
    key = f"{stage}:{extra}"
    digest = index.stage(key)
    if digest is None:
        # every stage at once: one index write, and the next process finds them all
        from pypto_pipeline.closure import Tree
        tree = Tree(index.packages, index)
        for k in _all_keys() | {key}:
            index.set_stage(k, tree_impl(tree, *k.split(":", 1)))
        digest = index.stage(key)
    if STAGES[stage].compiler:
        digest = impl_digest(digest, _compiler(index))
    index.save()
    return digest


@functools.lru_cache(maxsize=None)
def pass_reads() -> dict[str, tuple[str, ...]]:
    """Each pass's READS (the options it reads, declared in its module), kept in the impl
    index with the stage digests: a process keys a compile without importing a pass.
    Like the digests, the table is dropped when any file of the tree changes."""
    with _LOCK:
        index = _index()
        cached = index.stage("passes:reads")
        if cached is not None:
            return {k: tuple(v) for k, v in json.loads(cached).items()}
        from pypto.passes import ALL_PASSES
        table = {p.name: tuple(p.reads) for p in ALL_PASSES}
        index.set_stage("passes:reads", json.dumps(table, sort_keys=True))
        index.save()
    return table


def impl_files(stage: str, extra: str = "") -> dict[str, str]:
    """What stage_impl(stage, extra) covers, part by part: each source file (named as
    in `Tree.label`) -> its digest, and the compiler's identity; to tell which file
    made a step re-run. Kept on disk by the digest it breaks down (a digest names its
    parts for good), one small file each, so a build reads only its own stages'
    breakdowns and pays for the closure walk only after an edit."""
    digest = stage_impl(stage, extra)
    got = _breakdowns.get(digest)
    if got is None:
        got = _load_breakdown(digest)
        if got is None:
            got = _impl_files(stage, extra)
            _save_breakdown(digest, got)
        _breakdowns[digest] = got
    return dict(got)


_FILES_KEPT = 256          # breakdowns kept on disk (a few tree states' worth)
_breakdowns: dict[str, dict[str, str]] = {}


def _load_breakdown(digest: str) -> dict | None:
    try:
        data = json.loads((_files_dir() / f"{digest}.json").read_bytes())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _save_breakdown(digest: str, files: dict) -> None:
    folder = _files_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{digest}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(files, separators=(",", ":")))
        os.replace(tmp, folder / f"{digest}.json")
        kept = list(folder.glob("*.json"))
        if len(kept) > _FILES_KEPT:   # after an edit only: drop the oldest tree states
            kept.sort(key=lambda p: p.stat().st_mtime)
            for old in kept[:len(kept) - _FILES_KEPT]:
                old.unlink(missing_ok=True)
    except OSError:
        pass                 # an unwritable index folder: recomputed next time


def _files_dir() -> Path:
    return _index().path.with_suffix(".files")


@functools.lru_cache(maxsize=None)
def _impl_files(stage: str, extra: str) -> dict[str, str]:
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage}")
    with _LOCK:
        index = _index()
        from pypto_pipeline.closure import Tree
        out = file_map(Tree(index.packages, index), stage, extra)
        if STAGES[stage].compiler:
            out["<C++ compiler>"] = impl_digest(_compiler(index))
        index.save()
    return out


def _all_keys() -> set[str]:
    from pypto.passes import ALL_PASSES
    return {f"{s}:" for s in STAGES} | {f"pass:{p.module_name}" for p in ALL_PASSES}


@functools.lru_cache(maxsize=None)
def _index():
    from pypto_pipeline import impl_index
    # the code behind the index's facts and digests: this module's stage roots too (the
    # closure walker is only imported when the index must be rebuilt)
    here = Path(__file__).parent
    code = impl_digest(*(here / f for f in ("closure.py", "impl_index.py", "stages.py")))
    return impl_index.ImplIndex(_packages(), code=code)


def _packages() -> dict[str, Path]:
    """Where this process imports the project's packages from."""
    from importlib.util import find_spec       # finds, does not import
    return {name: Path(find_spec(name).origin).resolve().parent
            for name in ("pypto", "pypto_pipeline", "pypto_cache")}


def _compiler(index) -> str:
    """The C++ compiler's identity, cached in the index under its file's stat."""
    from pypto.toolchain import compiler_id, find_compiler
    path = find_compiler()
    if path is None:
        return "compiler: none"      # the build step itself will say so
    st = os.stat(path)
    sig = [path, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    cached = index.extra.get("compiler")
    if cached and cached[0] == sig:
        return cached[1]
    ident = compiler_id(path)
    index.extra["compiler"] = [sig, ident]
    index.dirty = True
    return ident
