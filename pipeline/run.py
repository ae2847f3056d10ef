"""Run steps as doit tasks, in-process, against a content-addressed store.

One task per step. Its action:
  1. takes the upstream digests from doit `getargs` (each task returns only
     `{output: digest}`, so doit's implicit result_dep gives early cutoff),
  2. computes the step key and asks the store's action cache,
  3. on a miss takes the per-key lock, asks again, else reads the inputs
     (verified), calls the stage function, publishes the outputs then the
     manifest last, and materialises the targets (temp file + rename).

doit skips a task outright when `_Current` finds its key unchanged, its outputs
still in the store and its targets intact. The same task dicts feed the command
line through `pipeline.dodo_support`.
"""
from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

from pypto_pipeline.doit_import import load as _load_doit

_load_doit()      # first: doit without the modules it imports for what we do not use
import doit.plugin  # noqa: E402
from doit.cmd_base import TaskLoader2  # noqa: E402
from doit.dependency import JsonDB, UptodateCalculator  # noqa: E402
from doit.doit_cmd import DoitMain  # noqa: E402
from doit.exceptions import TaskError  # noqa: E402
from doit.globals import Globals  # noqa: E402
from doit.task import dict_to_task, result_dep  # noqa: E402

from pypto_cache import deferred_stats, file_holds as target_ok  # noqa: E402

from .graph import GraphError, Step, check_graph, options_json, step_key

__all__ = ["TaskRecord", "RunResult", "StepFailed", "InputUnavailable", "WorkerMismatch",
           "BuildContext",
           "run_steps", "run_phased", "to_task_dict"]


class StepFailed(Exception):
    """The build failed for a reason that is not the stage's own exception: doit
    could not run the graph, the store misbehaved, a stage broke its contract."""


class InputUnavailable(StepFailed):
    """An input object is missing or damaged in the store (evicted, corrupted)."""

    def __init__(self, step: str, input_name: str, digest: str, literal: bool = False):
        what = ("a literal blob: put it in the store before building" if literal
                else "its producer is rebuilt on a retry")
        super().__init__(f"step {step}: input {input_name!r} (object {digest}) is missing "
                         f"or damaged in the store ({what})")
        self.digest = digest


class WorkerMismatch(StepFailed):
    """A worker of the executor refused a step: its code for the step's stage is not
    the client's (another pypto), so its result would not be this build's."""


@dataclass
class TaskRecord:
    name: str
    stage: str
    status: str          # "ran" | "cached"
    seconds: float       # wall time of the action; 0.0 when doit skipped the task
    started: float = 0.0   # time.time() at action start (= finished when skipped)
    finished: float = 0.0  # time.time() when the action returned
    thread: str = ""       # the thread that ran the action ("" when doit skipped it)
    worker: str = "local"  # where the stage ran: a Dask worker's address, or "local"


@dataclass
class RunResult:
    digests: dict[str, dict[str, str]]   # step name -> {output name: digest}
    records: list[TaskRecord] = field(default_factory=list)
    damaged: bool = False                # a damaged/missing object was met and rebuilt


# -- per-process serialisation of doit runs ------------------------------------
# doit keeps process-global state (Globals.dep_manager, sys.stdout swaps), so one
# build at a time per process. A stage action may itself start a build (a nested
# build): it runs one level deeper, under that level's lock, with its own db.
_TLS = threading.local()
_LOCKS: dict[int, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _level_lock(level: int) -> threading.RLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(level, threading.RLock())


class BuildContext:
    """What the tasks of one doit run share: the store, the keys computed by the
    actions (saved as doit values), the original exceptions, the records."""

    def __init__(self, store, *, level: int = 0, bad=(), deep: bool = False,
                 executor=None):
        self.store = store
        # pipeline.executor.Executor: sends the steps it wants to a cluster (None: here)
        self.executor = executor
        self.level = level
        # deep: the up-to-date check hashes every output object instead of only
        # looking for it (set once this build has met a damaged object)
        self.deep = deep
        self.keys: dict[str, str] = {}
        self.errors: list[tuple[str, BaseException]] = []
        self.done: dict[str, TaskRecord] = {}
        self.bad: set[str] = set(bad)     # digests known missing/damaged this build
        self.dep_get = None               # doit's Dependency._get, once a check ran


# -- the action ---------------------------------------------------------------

class _StageRaised(Exception):
    def __init__(self, exc: BaseException):
        self.exc = exc


def _arg(input_name: str) -> str:
    return "in:" + input_name


def _execute(ctx: BuildContext, step: Step, **upstream):
    """doit python-action of a step: returns {output: digest} or a TaskError."""
    started = time.time()
    t0 = time.perf_counter()
    outer = getattr(_TLS, "level", 0)
    _TLS.level = ctx.level + 1
    try:
        digests = {inp: (ref.output if ref.step is None else upstream[_arg(inp)])
                   for inp, ref in step.inputs.items()}
        key = step_key(step, digests)
        ctx.keys[step.name] = key
        status, outputs, worker = _build(ctx, step, key, digests)
    except _StageRaised as raised:
        return _fail(ctx, step, raised.exc)
    except Exception as exc:  # our side: store, contract, file system
        if not isinstance(exc, StepFailed):
            wrapped = StepFailed(f"step {step.name} ({step.stage}): {type(exc).__name__}: {exc}")
            wrapped.__cause__ = exc
            exc = wrapped
        return _fail(ctx, step, exc)
    finally:
        _TLS.level = outer
    finished = time.time()
    ctx.done[step.name] = TaskRecord(step.name, step.stage, status, time.perf_counter() - t0,
                                     started, finished, threading.current_thread().name, worker)
    return dict(outputs)


# doit inspects every action and uptodate callable's signature on every run; a
# precomputed __signature__ is what inspect returns first (about 0.1 ms a task).
_execute.__signature__ = inspect.signature(_execute)


def _fail(ctx: BuildContext, step: Step, exc: BaseException) -> TaskError:
    ctx.errors.append((step.name, exc))
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return TaskError(f"step {step.name} ({step.stage}) failed: {type(exc).__name__}: {exc}\n"
                     + text)


def _usable(manifest: dict | None, step: Step) -> dict[str, str] | None:
    if manifest is None:
        return None
    outs = manifest.get("outputs", {})
    if not all(o in outs for o in step.outputs):
        return None
    return {o: outs[o] for o in step.outputs}


def _build(ctx: BuildContext, step: Step, key: str, digests: dict[str, str]):
    store = ctx.store
    outputs = _usable(store.get_action(key), step)
    if outputs is not None and _materialize(store, step, outputs):
        return "cached", outputs, "local"
    with store.lock(key):
        # Another process (or thread) may have built it while we waited.
        outputs = _usable(store.get_action(key), step)
        if outputs is not None and _materialize(store, step, outputs):
            return "cached", outputs, "local"
        if ctx.executor is not None and ctx.executor.wants(step):
            got = ctx.executor.build(step, key, digests, store)   # None: build it here
            if got is not None and _materialize(store, step, got[0]):
                return "ran", got[0], got[1]
        inputs = {}
        for inp, d in digests.items():
            data = store.get_bytes(d)
            if data is None:
                ctx.bad.add(d)
                raise InputUnavailable(step.name, inp, d, literal=step.inputs[inp].step is None)
            inputs[inp] = data
        try:
            # a copy (a stage that mutated its options would change its own key), made
            # from their canonical JSON: a fifth of what deepcopy costs
            produced = step.fn(inputs, json.loads(options_json(step)))
        except Exception as exc:
            raise _StageRaised(exc) from None
        blobs = _check_outputs(step, produced)
        outputs = {o: store.put_bytes(b) for o, b in blobs.items()}
        store.put_action(key, {"outputs": outputs, "stage": step.stage, "step": step.name,
                               "impl": step.impl, "inputs": dict(sorted(digests.items()))})
        if not _materialize(store, step, outputs):
            raise StepFailed(f"step {step.name}: could not materialise its targets from "
                             f"the objects it just stored (store damaged under us?)")
        return "ran", outputs, "local"


def _check_outputs(step: Step, produced) -> dict[str, bytes]:
    if not isinstance(produced, dict):
        raise StepFailed(f"step {step.name}: {step.fn.__qualname__} returned "
                         f"{type(produced).__name__}, expected a dict of outputs")
    want, got = set(step.outputs), set(produced)
    if want != got:
        raise StepFailed(f"step {step.name}: {step.fn.__qualname__} returned outputs "
                         f"{sorted(got)}, expected {sorted(want)}")
    blobs = {}
    for name in step.outputs:
        value = produced[name]
        if isinstance(value, str):
            value = value.encode("utf-8")
        elif isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        if not isinstance(value, bytes):
            raise StepFailed(f"step {step.name}: output {name!r} is "
                             f"{type(value).__name__}, expected bytes (or str)")
        blobs[name] = value
    return blobs


def _materialize(store, step: Step, outputs: dict[str, str]) -> bool:
    for out, path in step.targets.items():
        exe = out in step.executable
        if target_ok(path, outputs[out], exe):
            continue
        # (a missing folder is made by the write that meets it)
        if not store.materialize(outputs[out], path, executable=exe,
                                 writable=out in step.editable):
            return False
    return True


# -- doit's up-to-date check ----------------------------------------------------

class _Current(UptodateCalculator):
    """Up to date when the key recomputed from the upstream tasks' saved digests
    equals the key saved at the last run, every output object is still in the
    store and every target holds its output."""

    def __init__(self, ctx: BuildContext, step: Step):
        super().__init__()
        self.ctx = ctx
        self.step = step

    def setup(self, dep_manager, tasks_dict):
        super().setup(dep_manager, tasks_dict)
        self.ctx.dep_get = self.get_val

    def configure_task(self, task):
        task.value_savers.append(self._save_key)

    def _save_key(self):
        key = self.ctx.keys.get(self.step.name)
        return {"_key": key} if key else {}

    def __call__(self, task, values):
        saved = values.get("_key")
        if not saved:
            return False
        step = self.step
        digests = {}
        for inp, ref in step.inputs.items():
            if ref.step is None:
                digests[inp] = ref.output
                continue
            up = self.get_val(ref.step, "_values_:")
            if not up or ref.output not in up:
                return False
            digests[inp] = up[ref.output]
        if step_key(step, digests) != saved:
            return False
        store, bad = self.ctx.store, self.ctx.bad
        present = store.verify if self.ctx.deep else store.has
        for out in step.outputs:
            d = values.get(out)
            if not d or d in bad or not present(d):
                return False
        for out, path in step.targets.items():
            if not target_ok(path, values[out], out in step.executable):
                return False
        return True

    def __repr__(self):
        return f"step_current({self.step.name!r})"


_Current.__signature__ = inspect.signature(_Current.__call__.__get__(object()))
# and the same for the result_dep doit adds for each getargs upstream (10 us a check)
result_dep.__signature__ = inspect.signature(result_dep.__call__.__get__(object()))


def to_task_dict(step: Step, store, ctx: BuildContext) -> dict:
    """The doit task dict of a step (shared by run_steps and dodo.py)."""
    getargs, deps = {}, []
    for inp, ref in step.inputs.items():
        if ref.step is not None:
            getargs[_arg(inp)] = (ref.step, ref.output)
            if ref.step not in deps:
                deps.append(ref.step)
    if ctx.store is not store:
        raise ValueError("to_task_dict: ctx was made for another store")
    doc = step.doc or f"{step.stage} step"
    return {
        "name": step.name,
        "actions": [(_execute, (ctx, step), {})],
        "getargs": getargs,
        # getargs alone makes upstreams *setup* tasks, which doit only runs after
        # deciding this task is stale, using their results from the last run. An
        # explicit task_dep makes it check this task only once they are done.
        "task_dep": deps,
        "uptodate": [_Current(ctx, step)],
        "targets": list(step.targets.values()),
        "clean": True,
        "doc": doc,
        "io": {"capture": False},
    }


# -- doit plumbing ------------------------------------------------------------------

class MemoryDB(JsonDB):
    """doit's dependency database kept in memory for one run (backend "pypto-memory").
    A compile with `serve_hits` hands doit only the steps the store's action cache
    lacks, so a database on disk would only repeat what the store knows; this one
    costs a dict per task instead of a file and its commits."""

    def __init__(self, name, codec, *, module_name=None):
        self.name, self.codec, self._db = name, codec, {}

    def dump(self):
        pass


_BACKENDS = {"BACKEND": {"pypto-memory": f"{__name__}:MemoryDB"}}


@functools.lru_cache(maxsize=None)
def _entry_points_of(group: str) -> tuple:
    from importlib.metadata import entry_points
    return tuple(entry_points(group=group))


def _cached_entry_points(*, group: str):
    if getattr(_TLS, "own_run", False):
        return ()
    return _entry_points_of(group)


# doit looks up its plugins' entry points (three scans of every installed
# distribution's metadata) on each run, and a compile starts several runs: the
# installed plugins do not change while the process runs, so one scan per group.
# Our own runs (_run_doit) take none: they name their loader, backend and reporter,
# and a build must not change with the doit plugins someone installed; the scan
# alone is 7 ms of a cold compile.
doit.plugin.entry_points_impl = lambda: _cached_entry_points


class _Loader(TaskLoader2):
    def __init__(self, task_dicts: list[dict], config: dict):
        super().__init__()
        self._dicts = task_dicts
        self._config = config
        self.tasks: dict = {}

    def setup(self, opt_values):
        pass

    def load_doit_config(self):
        return self._config

    def load_tasks(self, cmd, pos_args):
        tasks = [dict_to_task(dict(d)) for d in self._dicts]
        self.tasks = {t.name: t for t in tasks}
        return tasks


class _Reporter:
    """Collects one TaskRecord per task as it finishes; prints one line per task
    at verbosity >= 1 and nothing otherwise."""

    def __init__(self, ctx: BuildContext, stages: dict[str, str], verbosity: int,
                 on_record: Callable[[TaskRecord], None]):
        self.ctx = ctx
        self.stages = stages
        self.verbosity = verbosity
        self.on_record = on_record
        self.failures: list[tuple[str, str]] = []
        self.runtime_errors: list[str] = []

    def _say(self, rec: TaskRecord) -> None:
        if self.verbosity >= 1:
            sys.stdout.write(f"{rec.status:6s} {rec.seconds * 1000:8.1f} ms  {rec.name}\n")
        self.on_record(rec)

    def initialize(self, tasks, selected_tasks):
        pass

    def get_status(self, task):
        pass

    def execute_task(self, task):
        pass

    def add_success(self, task):
        rec = self.ctx.done.pop(task.name, None)
        if rec is not None:
            self._say(rec)

    def skip_uptodate(self, task):
        now = time.time()
        self._say(TaskRecord(task.name, self.stages.get(task.name, ""), "cached", 0.0, now, now))

    skip_ignore = skip_uptodate

    def add_failure(self, task, fail):
        self.failures.append((task.name, fail.get_msg()))
        if self.verbosity >= 1:
            sys.stderr.write(f"FAILED {task.name}: {fail.get_msg()}\n")

    def cleanup_error(self, exception):
        self.runtime_errors.append(str(exception))

    def runtime_error(self, msg):
        self.runtime_errors.append(msg)

    def teardown_task(self, task):
        pass

    def complete_run(self):
        pass


class _Tee:
    """stderr during a doit run: passes everything through and keeps a copy, so an
    rc 3 (doit's own error, written to stderr) can travel in the exception."""

    def __init__(self, inner):
        self.inner = inner
        self.parts: list[str] = []

    def write(self, text):
        self.parts.append(text)
        return self.inner.write(text)

    def flush(self):
        self.inner.flush()

    def isatty(self):
        return False

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _run_doit(task_dicts, loader_config, argv):
    loader = _Loader(task_dicts, loader_config)
    tee = _Tee(sys.stderr)
    saved_err, saved_dm = sys.stderr, Globals.dep_manager
    saved_own = getattr(_TLS, "own_run", False)
    sys.stderr, _TLS.own_run = tee, True
    try:
        rc = DoitMain(loader, config_filenames=(), extra_config=_BACKENDS).run(argv)
    finally:
        sys.stderr, _TLS.own_run = saved_err, saved_own
        Globals.dep_manager = saved_dm
    return rc, loader, "".join(tee.parts)


def _merge(records: dict[str, TaskRecord], rec: TaskRecord) -> bool:
    """Keep one record per step across retries; a rebuild supersedes a skip."""
    if rec.name in records and rec.status != "ran":
        return False
    records.pop(rec.name, None)
    records[rec.name] = rec
    return True


def _serve_hits(ordered: list[Step], ctx: BuildContext,
                on_record: Callable[[TaskRecord], None], pending: list | None = None
                ) -> dict[str, dict[str, str]]:
    """The steps whose key the store's action cache already holds, found in graph
    order without doit: the same key, the same check of the outputs (the store
    verifies them) and the same targets as a store hit inside doit, without a doit
    task per step. Returns their outputs; what depends on a miss is left to doit.

    With `pending`, a hit's targets are not written here but listed there as
    (step, outputs), for `_Materializer` to write while doit builds the misses."""
    known: dict[str, dict[str, str]] = {}
    for s in ordered:
        digests = {}
        for inp, ref in s.inputs.items():
            if ref.step is None:
                digests[inp] = ref.output
            elif ref.step in known:
                digests[inp] = known[ref.step][ref.output]
            else:
                break
        else:
            started, t0 = time.time(), time.perf_counter()
            key = step_key(s, digests)
            # only found, not hashed: materialising a target checks its bytes, and a
            # step that reads an object checks it there (deep mode hashes here too)
            outputs = _usable(ctx.store.get_action(key, verify=ctx.deep), s)
            if outputs is None or not ctx.bad.isdisjoint(outputs.values()):
                continue
            if pending is not None and s.targets:
                pending.append((s, outputs))
            elif not _materialize(ctx.store, s, outputs):
                continue
            known[s.name] = outputs
            ctx.keys[s.name] = key
            on_record(TaskRecord(s.name, s.stage, "cached", time.perf_counter() - t0, started,
                                 time.time(), threading.current_thread().name))
    return known


class _Materializer(threading.Thread):
    """Writes the targets of the hits `_serve_hits` left pending, on its own thread
    while doit builds the misses (a kernel's C++ compile is mostly waiting on the
    compiler): a one-kernel edit of a big program need not write every cached
    kernel's files first. `failed` lists the output digests of hits whose objects
    turned out missing or damaged; the caller rebuilds them."""

    def __init__(self, store, pending: list):
        super().__init__(name="pypto-materialize", daemon=True)
        self.store, self.pending = store, pending
        self.failed: set[str] = set()
        self.error: BaseException | None = None

    def run(self):
        try:
            for step, outputs in self.pending:
                if not _materialize(self.store, step, outputs):
                    self.failed.update(outputs.values())
        except BaseException as e:          # noqa: BLE001 - re-raised by the caller
            self.error = e


def run_steps(steps: list[Step], *, store, db_path: str | None, jobs: int = 1,
              verbosity: int = 0, progress: Callable[[TaskRecord], None] | None = None,
              deep: bool = False, bad=(), serve_hits: bool = False,
              executor=None) -> RunResult:
    """Build `steps` with doit in this process. Returns every step's output digests
    and one TaskRecord per step in completion order. A failing stage's own exception
    is re-raised unchanged; anything else raises StepFailed.

    Damage: when a step finds an input object missing or damaged, the run starts
    over once in deep mode, where the up-to-date check hashes every output object:
    all damaged objects of the graph are found at once and exactly their producers
    (and what reads them) run again. `deep` starts in that mode; `bad` names
    digests already known to be damaged.

    `serve_hits`: first serve every step whose key hits the store's action cache
    (in graph order, outside doit) and give doit only the rest: the way to build
    in a new output directory, where doit's own database knows nothing yet.

    `executor` (pipeline.executor.Executor): the steps it wants are built on its
    cluster, through the remote cache; their records name the worker."""
    ordered = check_graph(steps)
    stages = {s.name: s.stage for s in ordered}
    level = getattr(_TLS, "level", 0)
    records: dict[str, TaskRecord] = {}

    def on_record(rec: TaskRecord) -> None:
        if _merge(records, rec) and progress is not None:
            progress(rec)

    jobs = max(1, int(jobs))
    with _level_lock(level), deferred_stats():
        bad: set[str] = set(bad)
        # A second run happens only when the first met a damaged object; a further
        # one only if objects keep disappearing under us (another process damaging
        # the store while we build); the bound is a guard, not a tuning knob.
        for _attempt in range(len(ordered) + 2):
            ctx = BuildContext(store, level=level, bad=bad, deep=deep, executor=executor)
            reporter = _Reporter(ctx, stages, verbosity, on_record)
            config = {
                "backend": "sqlite3" if db_path is not None else "pypto-memory",
                "dep_file": os.fspath(db_path) if db_path is not None else ":memory:",
                "verbosity": min(max(verbosity, 0), 2),
                "reporter": reporter,
                "num_process": jobs if jobs > 1 else 0,
                "par_type": "thread",
                "continue": False,
            }
            pending: list = []
            known = _serve_hits(ordered, ctx, on_record, pending) if serve_hits else {}
            rest = resolve_refs([s for s in ordered if s.name not in known], known)
            writer = _Materializer(store, pending)
            overlap = bool(rest and pending)
            if overlap:
                writer.start()             # writes the hits' targets while doit builds
            else:
                writer.run()
            rc, loader = 0, None
            if rest:
                dicts = [to_task_dict(s, store, ctx) for s in rest]
                try:
                    rc, loader, err_text = _run_doit(dicts, config, ["run"])
                finally:
                    if overlap:
                        writer.join()
            if writer.error is not None:
                raise writer.error
            if writer.failed:
                # a hit's object went missing or bad under us: rebuild its producers
                bad |= writer.failed
                deep = True
                continue
            if rc == 0:
                break
            if ctx.errors:
                _name, exc = ctx.errors[0]
                if isinstance(exc, InputUnavailable) and not (ctx.bad <= bad and deep):
                    bad |= ctx.bad
                    deep = True
                    continue
                raise exc
            if rc == 3 or not reporter.failures:
                detail = err_text.strip() or "\n".join(reporter.runtime_errors)
                raise StepFailed(f"doit could not run the build graph (rc {rc}):\n{detail}")
            name, msg = reporter.failures[0]
            raise StepFailed(f"task {name} failed in doit (rc {rc}):\n{msg}")
        else:  # pragma: no cover - guarded above
            raise StepFailed("giving up: objects keep disappearing from the store")

    digests: dict[str, dict[str, str]] = {}
    for s in ordered:
        if s.name in known:
            digests[s.name] = known[s.name]
            continue
        values = loader.tasks[s.name].values
        try:
            digests[s.name] = {o: values[o] for o in s.outputs}
        except KeyError as e:
            raise StepFailed(f"step {s.name}: doit has no digest for output {e} "
                             f"after a successful run") from None
    return RunResult(digests=digests, records=list(records.values()), damaged=deep)


def run_phased(first: list[Step], then: Callable[[dict[str, dict[str, str]]], list[Step]],
               *, store, db_path: str | None, **kwargs) -> RunResult:
    """Two-phase build in-process: build `first`, call `then(digests)` to make the
    steps that depend on what phase 1 produced (e.g. one chain per outlined kernel),
    build those. Refs from phase 2 to phase-1 steps become literal blobs; records
    and digests of both phases are returned together."""
    r1 = run_steps(first, store=store, db_path=db_path, **kwargs)
    second = resolve_refs(then(r1.digests), r1.digests)
    r2 = run_steps(second, store=store, db_path=db_path, **kwargs)
    return RunResult(digests={**r1.digests, **r2.digests}, records=r1.records + r2.records)


def resolve_refs(steps: list[Step], known: dict[str, dict[str, str]]) -> list[Step]:
    """Copies of `steps` whose refs to steps in `known` are replaced by the blobs
    those steps produced."""
    out = []
    names = {s.name for s in steps}
    for s in steps:
        inputs = {}
        for inp, ref in s.inputs.items():
            if ref.step is not None and ref.step not in names and ref.step in known:
                try:
                    inputs[inp] = type(ref)(None, known[ref.step][ref.output])
                except KeyError:
                    raise GraphError(f"step {s.name}: input {inp!r} refers to output "
                                     f"{ref.output!r} that {ref.step} did not produce") from None
            else:
                inputs[inp] = ref
        step = Step(name=s.name, stage=s.stage, fn=s.fn, impl=s.impl, options=s.options,
                    inputs=inputs, outputs=s.outputs, targets=s.targets,
                    executable=s.executable, editable=s.editable, doc=s.doc)
        if "_options_json" in s.__dict__:       # the same options: keep their JSON
            step._options_json = s._options_json
        out.append(step)
    return out
