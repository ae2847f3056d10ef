"""A compile served whole from the store: when the key of the whole compile (its
input, its options, the code of every stage) hits, every task of its graph would
be a hit too, so the artifacts it recorded are written into the output directory
without laying out the graph, and the report lists each task as cached.

This is the path of every unchanged compile, so it imports only what it needs:
the store, the implementation index and the report writers; not the graph, the
stages or doit."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pypto_pipeline.digest import impl_digest
from pypto_pipeline.options import Build, BuildOptions
from pypto_pipeline.outputs import finish

# the stages every compile's key covers (each pass is added by its module): every stage
# of a device program's graph (graph.STAGES but the HOST plan's, a step of its own build)
_KEYED_STAGES = ("specialize", "frontend", "layout", "pto", "ptoas", "kernel", "extern",
                 "orchestration", "config")


def program_key(source_digest: str, opts: BuildOptions, from_spec: bool) -> str:
    """Key of a whole compile: its input, its options and the code of every stage.
    A hit means every task of the graph would be a cache hit."""
    from pypto_pipeline.stages import stage_impl
    impls = [stage_impl(s) for s in _KEYED_STAGES]
    impls += [stage_impl("pass", module) for _, module, _ in opts.passes]
    return impl_digest("pypto-program/1", source_digest, str(from_spec),
                       json.dumps(opts.as_dict(), sort_keys=True, default=str), *impls)


class Cached:
    """The record of a task served with the whole compile."""
    __slots__ = ("name", "stage")
    status = "cached"
    seconds = 0.0
    worker = "local"

    def __init__(self, name: str, stage: str):
        self.name, self.stage = name, stage


def serve(source: bytes, opts: BuildOptions, output_dir, *, from_spec: bool = False,
          store=None, progress=None) -> tuple[Build | None, bool]:
    """(the Build, False) when the whole compile hits and its artifacts are in place in
    `output_dir`; (None, damaged) otherwise, `damaged` when a hit named objects that
    are gone or damaged (the graph then checks every object it meets)."""
    from pypto_cache import digest_bytes, open_store
    store = store if store is not None else open_store()
    t0 = time.perf_counter()
    out = Path(output_dir)
    # materialising reads and checks every object the manifest names
    hit = store.get_action(program_key(digest_bytes(source), opts, from_spec),
                           verify=False, present=False)
    if hit is None:
        return None, False
    report = hit.get("served_report")         # report/tasks.json, kept with the entry
    if report is None:                         # an entry of an older pypto: build again
        return None, False
    frontend = store.get_bytes(hit["meta"]["frontend"])
    try:
        fresh = not any(os.scandir(out))     # nothing of an earlier compile to remove
    except FileNotFoundError:
        fresh = True
    (out / "report").mkdir(parents=True, exist_ok=True)
    tasks_json = out / "report" / "tasks.json"
    if frontend is None or not materialize_all(store, out, hit, fresh=fresh) or \
            not store.materialize(report, tasks_json):
        return None, True
    if progress is not None:
        progress.served_whole(hit["ntasks"])
    records = _records(tasks_json) if opts.profiling else ()   # the profile lists them
    finish(out, opts.profiling, records, set(hit["outputs"]), t0,
           {"ran": [], "cached": hit["ntasks"]}, stale=not fresh, tasks_written=True)
    return Build(out, frontend=frontend.decode("utf-8"),
                 load_records=lambda: _records(tasks_json)), False


def _records(tasks_json: Path) -> list[Cached]:
    """A served compile's task records, read back from its report."""
    return [Cached(t["name"], t["stage"]) for t in json.loads(tasks_json.read_bytes())]


def materialize_all(store, out: Path, manifest: dict, fresh: bool = False) -> bool:
    """Every recorded artifact into `out`, each checked against its digest. (One
    thread: splitting the files between two made it slower, the threads contending
    for the interpreter lock between their system calls.) `fresh`: `out` was empty,
    so no file there can already hold its artifact."""
    from pypto_cache import file_holds
    exe = set(manifest.get("executable", ()))
    editable = set(manifest.get("editable", ()))
    for rel, digest in manifest["outputs"].items():
        path = os.path.join(out, rel)
        # the same directory again: a file that already holds it stays (a read is
        # cheaper than writing it anew)
        if (fresh or not file_holds(path, digest, rel in exe)) and \
                not store.materialize(digest, path, executable=rel in exe,
                                      writable=rel in editable):
            return False
    return True
