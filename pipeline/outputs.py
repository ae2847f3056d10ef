"""What a compile writes into its output directory besides the artifacts: the
reports, and the removal of what an earlier compile there left behind."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

# What a compile writes into its output directory; files in these places that the
# current compile did not write belong to an earlier compile (another program, or
# other options) and are removed, so the directory holds exactly one compile.
MANAGED_DIRS = ("passes_dump", "ptoas", "ptoas_passes", "kernels", "orchestration", "debug")
MANAGED_FILES = ("kernel_config.py", "compiled_meta.json", "report/perf_hints.log",
                 "report/diagnostics.log", "report/pipeline_profile.txt",
                 "report/pipeline_profile.json", "report/build_graph.svg",
                 "report/build_trace.json",
                 "report/.doit.db")       # written by earlier versions


def finish(out: Path, profiling: bool, records, written: set[str], t0: float,
           why: dict, edges=None, stale: bool = True, tasks_written: bool = False) -> None:
    """The report files, then the removal of what an earlier compile left behind
    (`stale=False`: the directory was empty, there is nothing to look for).
    Without `edges` (a compile served whole from the store) there are no pictures of
    the build (nothing ran); those of an earlier build here are removed.
    `tasks_written`: report/tasks.json is in place already (a served compile's)."""
    from pypto_pipeline import explain
    total = time.perf_counter() - t0
    if not tasks_written:
        write_report(out, records)
    explain.write_explain(out, why)
    if edges is not None:         # the pictures of a build that ran (the C encoder: no indent)
        from pypto_pipeline import picture
        write_text(out / "report" / "build_trace.json",
                   json.dumps(picture.chrome_trace(records, _start(records))))
        write_text(out / "report" / "build_graph.svg", picture.graph_svg(records, sorted(set(edges))))
    if profiling:
        write_profile(out, records, total)
        written = written | {"report/pipeline_profile.txt", "report/pipeline_profile.json"}
    if edges is not None:
        written = written | {"report/build_graph.svg", "report/build_trace.json"}
    if stale:
        remove_stale(out, written)


def _start(records) -> float:
    starts = [r.started for r in records if getattr(r, "started", 0.0)]
    return min(starts) if starts else 0.0


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def remove_stale(out: Path, written: set[str]) -> list[str]:
    """Delete the files of earlier compiles in `out` that this one did not write
    (only in the places a compile writes to); returns their relative paths."""
    stale = [rel for rel in MANAGED_FILES if rel not in written and (out / rel).is_file()]
    for top in MANAGED_DIRS:
        for dirpath, _dirs, files in os.walk(out / top):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), out)
                if rel not in written:
                    stale.append(rel)
    for rel in stale:
        try:
            os.unlink(out / rel)
        except FileNotFoundError:
            pass
    for top in MANAGED_DIRS:           # and the folders that are now empty
        for dirpath, _dirs, _files in sorted(os.walk(out / top), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
    return sorted(stale)


def write_profile(out: Path, records, total: float) -> None:
    """report/pipeline_profile.{json,txt}: time per stage and per task, cached tasks marked."""
    stages: dict[str, dict] = {}
    for r in records:
        st = stages.setdefault(r.stage, {"seconds": 0.0, "tasks": 0, "ran": 0, "cached": 0})
        st["seconds"] += r.seconds
        st["tasks"] += 1
        st[r.status] = st.get(r.status, 0) + 1
    data = {"total_seconds": round(total, 6),
            "stages": {k: dict(v, seconds=round(v["seconds"], 6)) for k, v in stages.items()},
            "tasks": [{"name": r.name, "stage": r.stage, "status": r.status,
                       "seconds": round(r.seconds, 6)} for r in records]}
    (out / "report" / "pipeline_profile.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"compile: {total:.3f} s wall, {len(records)} tasks "
             f"({sum(r.status == 'ran' for r in records)} ran, "
             f"{sum(r.status == 'cached' for r in records)} cached)", "", "per stage:"]
    for k, v in sorted(stages.items(), key=lambda kv: -kv[1]["seconds"]):
        lines.append(f"  {k:14s} {v['seconds']:8.3f} s  {v['tasks']:4d} tasks  "
                     f"({v['ran']} ran, {v['cached']} cached)")
    lines += ["", "per task:"]
    for r in sorted(records, key=lambda r: -r.seconds):
        mark = "" if r.status == "ran" else "  [cached]"
        lines.append(f"  {r.seconds:8.3f} s  {r.stage:14s} {r.name}{mark}")
    (out / "report" / "pipeline_profile.txt").write_text("\n".join(lines) + "\n")


def write_report(out: Path, records) -> None:
    """report/tasks.json: one task per line."""
    write_text(out / "report" / "tasks.json", tasks_report(records))


def tasks_report(records) -> str:
    """The text of report/tasks.json: per task its name, stage, status (ran, cached),
    seconds and worker (where it ran: a Dask worker's address, or local)."""
    rows = []
    for r in records:
        name, stage = r.name, r.stage
        worker = getattr(r, "worker", "local")     # a Dask worker's address, or local
        if _plain(name) and _plain(stage) and _plain(worker):   # json.dumps's text, without it
            rows.append(f'{{"name": "{name}", "stage": "{stage}", "status": "{r.status}", '
                        f'"seconds": {float(round(r.seconds, 6))!r}, "worker": "{worker}"}}')
        else:
            rows.append(json.dumps({"name": name, "stage": stage, "status": r.status,
                                    "seconds": round(r.seconds, 6), "worker": worker}))
    return "[\n" + ",\n".join(rows) + ("\n]\n" if rows else "]\n")


def _plain(text: str) -> bool:
    """Printable ASCII without quotes or backslashes: its JSON string is itself, quoted."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text
