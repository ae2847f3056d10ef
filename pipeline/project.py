"""A project's own dodo.py: its programs' build graphs as doit tasks.

    # dodo.py in your repository
    from pypto_pipeline.project import dodo_globals
    globals().update(dodo_globals("kernels/*.py", output="build", platform="a2a3sim"))

then `doit list`, `doit -n 2`, `doit build/Add/ptoas/add_incore_0.pto`, `doit info build:Add`,
`doit clean`, `doit forget`. The programs are found as `pypto build` finds them (every
`@pl.program` class and fully annotated `@pl.jit` entry of the files); the keyword
arguments are `ir.compile`'s options, mapped by `graph_input` exactly as `ir.compile` maps
them. Each program's graph is `driver.plan`'s, so a task's key here is the key of the same
task in `ir.compile` and `pypto build`: the three share one store.

With $PYPTO_EXECUTOR set and several programs, a task `_cluster` first compiles each
program whole on a worker of the Dask cluster, all at once, as `pypto build` does; every
step here then finds its result in the remote cache.

Tasks of a program P (its folder is <output>/P):
  build:P          every artifact of P (the last phase's group; `doit list` shows it)
  build            every program
  _phase<k>:P      phase k: only the steps phase k+1 is laid out from (`doit list -p`)
  <stage>:<name>:...  the steps, named as `pypto build --list` names them, after the
                   program's name (`doit list --all`)

A phase's tasks are created once the phase before it ran (which kernels exist is known
only after outlining). Asking for one file runs only that program's chain: each phase's
creator is picked by the files it can write (its pass dumps; the backend's folders), and
each earlier phase builds only what laying out the next one reads.
"""
from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


class ProjectError(ValueError):
    """The programs of a project cannot be laid out as doit tasks (clashing names,
    no programs, a file that does not load)."""


def graph_inputs(patterns: str | Iterable[str], *, root: str | os.PathLike | None = None,
                 **compile_options) -> dict[str, tuple]:
    """{label: (name, graph input bytes, BuildOptions, from_spec)} of every program of the
    files the glob patterns match (relative to `root`, default the working directory), as
    `pypto build` finds them; the label is the program's folder name (a @pl.program's
    name, a @pl.jit entry's function name)."""
    from pypto.cli import entries, load_file
    from pypto.ir.compiling import graph_input
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    base = Path(root) if root is not None else Path.cwd()
    files: list[Path] = []
    for pat in patterns:
        pat = str(pat)
        hits = sorted(glob.glob(pat if os.path.isabs(pat) else str(base / pat), recursive=True))
        if not hits:
            raise ProjectError(f"no file matches {pat!r} (relative to {base})")
        files.extend(Path(h) for h in hits if h.endswith(".py"))
    found: dict[str, tuple] = {}
    where: dict[str, Path] = {}
    for f in dict.fromkeys(files):
        mod = load_file(f)
        progs, notes = entries(mod)
        for note in notes:             # as `pypto build` says it: a @pl.jit entry left out
            print(f"{f}: {note}", file=sys.stderr)
        for entry in progs:
            name, source, opts, from_spec = graph_input(entry, **compile_options)
            label = getattr(entry, "__name__", name)
            if label in found:
                raise ProjectError(f"two programs named {label!r} ({where[label]} and {f}) would "
                                   f"share one output folder; rename one")
            found[label], where[label] = (name, source, opts, from_spec), f
    return found


def target_regexes(out: Path, opts) -> dict[int, str]:
    """Phase -> the regex doit matches a requested file against to pick that phase's
    creator (phases after the first; the first phase's files are known up front)."""
    from pypto_pipeline.driver import pass_phases, phase_count
    last = phase_count(opts) - 1
    prefix = re.escape(str(out) + os.sep)
    dumps: dict[int, list[str]] = {}
    for i, k in enumerate(pass_phases(opts)):
        dumps.setdefault(k, []).append(f"{i + 1:02d}")
    regex = {k: prefix + "passes_dump" + re.escape(os.sep) + "(" + "|".join(nums) + ")_after_"
             for k, nums in dumps.items() if 0 < k < last}
    regex[last] = prefix + "(?!passes_dump" + re.escape(os.sep) + ")"
    return regex


class _Program:
    """One program's phases, laid out lazily and at most once per doit process."""

    def __init__(self, label, name, source, opts, from_spec, out: Path, store, ctx, stages):
        from pypto_pipeline.driver import phase_count, plan
        from pypto_pipeline.graph import Ref
        self.label, self.out, self.store, self.ctx = label, out, store, ctx
        self.stages = stages            # step name -> stage, for the progress lines
        self.n = phase_count(opts)
        self.regex = target_regexes(out, opts)
        self._gen = plan(name, Ref.blob(store.put_bytes(source)), opts, out, store, from_spec)
        self.phases: list = []          # the _Phase of each phase laid out so far
        self.by_name: dict = {}
        self.after: str | None = None   # a task every step of phase 0 waits for

    def handle(self, k: int) -> str:
        return f"build:{self.label}" if k == self.n - 1 else f"_phase{k}:{self.label}"

    def phase(self, k: int):
        """The steps of phase k, or None while the phase before has not run."""
        from pypto_pipeline.dodo_support import known_digests
        while len(self.phases) <= k:
            if not self.phases:
                steps = next(self._gen)
            else:
                prev = self.phases[-1]
                exits = [self.by_name[e] for e in prev.exits]
                known = known_digests(exits, self.ctx)
                if known is None:
                    return None
                steps = self._gen.send(known)
            self.phases.append(steps)
            self.by_name.update((s.name, s) for s in steps)
            self.stages.update((s.name, s.stage) for s in steps)
        return self.phases[k]

    def tasks(self, k: int):
        """doit tasks of phase k: its steps (listed under build:P) and its handle."""
        from doit.task import dict_to_task
        from pypto_pipeline.run import to_task_dict
        steps = self.phase(k)
        handle = self.handle(k)
        whole = f"build:{self.label}"
        for s in steps or ():
            d = to_task_dict(s, self.store, self.ctx)
            if k == 0 and self.after:       # the whole compiles on the cluster come first
                d["task_dep"] = list(d.get("task_dep", ())) + [self.after]
            t = dict_to_task(d)
            t.subtask_of = whole           # `doit list` shows build:P, `--all` every step
            yield t
        if k == self.n - 1:                # build:P: everything laid out so far
            deps = [s.name for ph in self.phases for s in ph]
            doc = f"{self.label}: every artifact ({len(deps)} steps in {self.n} phases)"
            if steps is None:
                doc = f"{self.label}: every artifact ({self.n} phases; not laid out yet: run it)"
        else:
            deps = list(steps.exits) if steps is not None else []
            doc = f"{self.label}: phase {k + 1} of {self.n}, what phase {k + 2} is laid out from"
        task = {"basename": handle, "actions": None, "task_dep": deps, "doc": doc}
        if steps is None:                  # listed before the phase before it ever ran
            task["actions"] = [(_not_laid_out, (self.label, k))]
        yield task


CLUSTER_TASK = "_cluster"


def _compile_out_there(calls: list[tuple]):
    from pypto_pipeline.driver import compile_out_there
    compile_out_there(calls)          # (raises WorkerMismatch when a worker's code differs)


def _not_laid_out(label: str, k: int):
    from doit.exceptions import TaskError
    return TaskError(f"{label}: phase {k} could not be laid out: the results of phase {k - 1} "
                     f"are not in doit's database")


def dodo_globals(programs: str | Iterable[str] | Mapping[str, tuple], *,
                 output: str | os.PathLike = "build", store=None, root=None,
                 dep_file: str = ".doit.sqlite", default_tasks=("build",),
                 **compile_options) -> dict:
    """DOIT_CONFIG and the task creators of a project's programs, for a dodo.py's
    `globals().update(...)`.

    programs: glob pattern(s) of Python files (programs found as `pypto build` finds
      them; `compile_options` are ir.compile's keyword options), or a dict
      {label: graph_input(entry, **options)} of graph inputs already made.
    output: each program builds into <output>/<label>/ (as `pypto build -o`).
    store: a pypto_cache store (default: open_store(), the store ir.compile uses).
    """
    from doit import create_after
    from pypto_cache import open_store
    from pypto_pipeline.dodo_support import dodo_config
    from pypto_pipeline.progress import doit_reporter
    from pypto_pipeline.run import BuildContext
    from pypto_pipeline.stages import preload
    if isinstance(programs, Mapping):
        if compile_options:
            raise TypeError("compile options go into graph_input() when programs is a dict "
                            f"of graph inputs (got {sorted(compile_options)})")
        inputs = dict(programs)
    else:
        inputs = graph_inputs(programs, root=root, **compile_options)
    if not inputs:
        raise ProjectError("no programs: nothing for doit to build")
    named: dict[str, str] = {}
    for label, (name, *_rest) in inputs.items():
        for what, value in (("label", label), ("name", name)):
            if not isinstance(value, str) or not _LABEL.match(value):
                raise ProjectError(f"program {what} {value!r}: letters, digits, '_', '.', '-' "
                                   f"only (it names the output folder and the tasks)")
        if name in named:              # the step names carry it: they would clash
            raise ProjectError(f"programs {named[name]!r} and {label!r} are both named {name!r}")
        named[name] = label
    store = store if store is not None else open_store()
    from pypto_pipeline.driver import executor
    # deep: a damaged object is rebuilt, not a failure; $PYPTO_EXECUTOR: steps on Dask
    ctx = BuildContext(store, deep=True, executor=executor())
    stages: dict[str, str] = {}
    preload()                              # stage modules imported here, not on a worker thread
    out_root = Path(output)
    progs = {label: _Program(label, *inp, out_root / label, store, ctx, stages)
             for label, inp in inputs.items()}

    def creator(p: _Program, k: int):
        def create():
            yield from p.tasks(k)
        create.__doc__ = f"{p.label}: phase {k + 1} of {p.n}"
        if k == 0:
            return create
        return create_after(executed=p.handle(k - 1), target_regex=p.regex[k])(create)

    out: dict = {"DOIT_CONFIG": dodo_config(dep_file, default_tasks=list(default_tasks),
                                            reporter=doit_reporter(ctx, stages))}
    for p in progs.values():
        for k in range(p.n):
            out[f"task_{p.handle(k)}"] = creator(p, k)

    if ctx.executor is not None and len(progs) > 1:
        # as `pypto build` does: each program compiled whole on a worker, all at once; the
        # steps here are then served from the remote cache (a program not built out
        # there is built step by step, its steps on the cluster)
        calls = [inputs[label] for label in progs]

        def task__cluster():
            return {"basename": CLUSTER_TASK, "actions": [(_compile_out_there, (calls,))],
                    "uptodate": [False],
                    "doc": f"every program ({len(calls)}) compiled whole on the Dask cluster"}
        out["task__cluster"] = task__cluster
        for p in progs.values():
            p.after = CLUSTER_TASK

    def task_build():
        return {"basename": "build", "actions": None,
                "task_dep": [f"build:{label}" for label in progs],
                "doc": f"every artifact of every program ({len(progs)}) into {out_root}/"}
    out["task_build"] = task_build
    return out
