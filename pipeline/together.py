"""Several programs built as one graph (pipeline/driver.py lays out each): every round
runs the current phase of each program in one doit run, so independent programs -- the
per-rank programs of a HOST-level compile -- build side by side, and steps they share
(the same keys) are built once. Each program keeps its own output directory, reports
and whole-compile record, as if compiled alone."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

from pypto_pipeline.driver import (BuildOptions, Ref, Step, _begin, _step, _deferrable, _impl_files, _Phase,
                                   _Phases, _progress_env, _relative, _unused_stages, diagnostics_reports,
                                   plan, preload)
from pypto_pipeline.driver import _one_compile as one_compile
from pypto_pipeline.options import Build
from pypto_pipeline.outputs import finish, tasks_report
from pypto_pipeline.served import Cached, program_key


class Item(NamedTuple):
    """One program of a build: its label (what its task names say; unique in the build),
    input, options and output directory."""
    label: str
    source: bytes
    opts: BuildOptions
    out: Path
    from_spec: bool = False


class Many(NamedTuple):
    builds: list                 # a Build per item
    digests: dict                # the `then` steps' outputs: step -> {output: digest}
    records: list                # every task of the build


@one_compile
def build_many(items: list, *, store=None, jobs: int | None = None, progress=None,
               damaged: bool = False, then=None) -> Many:
    """The graphs of several programs as one build: each round runs the current phase of
    every program at once (one doit run), so their kernels compile side by side and a
    program whose steps another has (the same keys) takes them from the store.
    `then() -> [Step]`: steps laid out once every program is built (a host plan), run
    last in the same build."""
    from pypto_pipeline.run import run_steps   # doit, only when the graph must run
    from pypto_pipeline import explain
    from pypto_cache import open_store
    store = store if store is not None else open_store()
    if items:
        preload(tuple(set.intersection(*[set(_unused_stages(i.opts, i.from_spec)) for i in items])))
    own_progress = progress is None and _progress_env()
    if own_progress:
        from pypto_pipeline.progress import Progress
        progress = Progress(sys.stderr)
    phases = _Phases(run_steps, store, None, jobs, progress, damaged)
    live = [_Program(i, store, phases, explain) for i in items]
    todo = list(live)
    while todo:
        steps = [s for p in todo for s in p.phase()]
        digests = phases.run(steps)
        todo = [p for p in todo if not p.take(digests)]
    if own_progress:
        progress.summary()
    builds = [p.finish(phases, explain) for p in live]
    extra = then() if then is not None else []
    digests = phases.run(extra) if extra else {}
    return Many(builds, digests, phases.records())


class _Program:
    """One program's part of build_many: its plan (a generator of phases), the files its
    steps write, and, once its plan is done, its reports and whole-compile record."""

    def __init__(self, item: Item, store, phases: "_Phases", explain):
        self.item, self.store = item, store
        store, self.out, self.t0, src = _begin(store, item.out, item.source)
        self.pkey = program_key(src, item.opts, item.from_spec)
        self.before = explain.load_keys(self.out)  # this directory's last build: why tasks ran
        self.gen = plan(item.label, Ref.blob(src), item.opts, self.out, store, item.from_spec,
                        read=phases.read)
        self.found: list = []                      # (step, output, digest) of diagnostics
        self.outputs: dict[str, str] = {}
        self.executable: list[str] = []
        self.editable: list[str] = []
        self.names: set[str] = set()               # its steps' names
        self.steps, self.deferred, self.known, self.current = next(self.gen), [], {}, []
        self.meta = None

    def phase(self) -> list[Step]:
        steps = self.steps
        if steps.exits is not None:      # off the critical path: run with the last phase
            later = _deferrable(steps)
            self.deferred += later
            steps = _Phase([s for s in steps if s not in later], steps.exits)
        else:
            steps = _Phase(steps + resolve_refs_of(self.deferred, self.known), None)
        self.current = steps
        self.names.update(s.name for s in steps)
        return steps

    def take(self, digests: dict) -> bool:
        """The round's results; True once the plan is done."""
        out = self.out
        for s in self.current:
            got = digests[s.name]
            self.known[s.name] = got
            for name in ("diagnostics", "perf_hints"):
                if name in s.outputs:
                    self.found.append((s.name, name, got[name]))
            for name, target in s.targets.items():
                rel = _relative(out, target)
                self.outputs[rel] = got[name]
                if name in s.executable:
                    self.executable.append(rel)
                if name in s.editable:
                    self.editable.append(rel)
        try:
            self.steps = self.gen.send({s.name: digests[s.name] for s in self.current})
            return False
        except StopIteration as stop:
            self.meta = stop.value
            return True

    def finish(self, phases: "_Phases", explain) -> Build:
        store, out, outputs = self.store, self.out, self.outputs
        for rel, text in diagnostics_reports(phases.read, self.found).items():
            outputs[rel] = store.put_bytes(text)
            store.materialize(outputs[rel], out / rel)
        records = [r for r in phases.records() if r.name in self.names]
        parts = {n: p for n, p in phases.parts.items() if n in self.names}
        # the key parts of every task: the next compile here says why its tasks ran
        impls = _impl_files({p["impl"] for p in parts.values()})
        outputs[explain.KEYS_FILE] = store.put_bytes(explain.keys_json(parts, impls))
        store.materialize(outputs[explain.KEYS_FILE], out / explain.KEYS_FILE)
        why = explain.explain(records, parts, self.before, impls)
        edges = [e for e in phases.edges if e[1] in self.names]
        finish(out, self.item.opts.profiling, records, set(outputs), self.t0, why, edges)
        # what report/tasks.json says when this compile is served whole: every task cached
        served = store.put_bytes(tasks_report([Cached(r.name, r.stage) for r in records]).encode())
        store.put_action(self.pkey, {"outputs": outputs, "executable": sorted(self.executable),
                                     "editable": sorted(self.editable), "ntasks": len(records),
                                     "meta": self.meta, "served_report": served})
        store.sync()                       # this build's results, durable once
        return Build(out, records, phases.read(self.meta["frontend"]).decode("utf-8"))


def resolve_refs_of(steps: list[Step], known: dict) -> list[Step]:
    from pypto_pipeline.run import resolve_refs
    return resolve_refs(steps, known)


def host_step(name: str, draft: str, metas: list[str], dump: int, out: Path) -> Step:
    """The host plan of a HOST-level program, from its draft and the compiled_meta.json of
    each device program (digests): distributed_meta.json (and its dump)."""
    targets = {"plan": str(Path(out) / "distributed_meta.json")}
    if dump:
        targets["dump"] = str(Path(out) / "passes_dump" / f"00_host_{name}.txt")
    inputs = {"draft": Ref.blob(draft), **{f"meta:{i}": Ref.blob(m) for i, m in enumerate(metas)}}
    return _step(f"host:{name}", "host", inputs, list(targets), {"dump": dump}, targets,
                 doc=f"{name}: the host plan (launches per rank, window buffers, SubWorker calls)")
