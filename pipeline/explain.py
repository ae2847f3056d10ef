"""Why did a task run? Each compile records the parts of every task's key in its
output directory (report/keys.json); the next compile into that directory compares
its tasks' parts with those and writes, for each task that ran, what differed
(report/explain.json) — the idea of ninja's `-d explain` and Bazel's `--explain`.

Pure functions over plain data: the driver gathers the parts, this module compares.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph import Step

KEYS_FILE = "report/keys.json"
EXPLAIN_FILE = "report/explain.json"


def key_parts(step: Step, inputs: dict[str, str]) -> dict:
    """What a step's key is made of, readable: its inputs' digests by name."""
    from .graph import fn_id
    return {"stage": step.stage, "fn": fn_id(step.fn), "impl": step.impl,
            "options": step.options, "outputs": sorted(step.outputs),
            "inputs": dict(sorted(inputs.items()))}


def load_keys(out: Path) -> dict:
    try:
        data = json.loads((Path(out) / KEYS_FILE).read_text())
        if not (isinstance(data, dict) and isinstance(data.get("tasks"), dict)):
            return {}
        data["impl_files"] = expand_impl_files(data.get("impl_files", {}))
        return data
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def keys_json(tasks: dict[str, dict], impl_files: dict[str, dict[str, str]]) -> bytes:
    """report/keys.json: every task's key parts, and each impl's source files. The
    impls of one build share most of their files (every pass imports the IR), so
    each file's digest is written once and an impl lists its files' names."""
    files: dict[str, str] = {}
    for parts in impl_files.values():
        files.update(parts)
    compact = {"files": files, "impls": {i: sorted(parts) for i, parts in impl_files.items()}}
    return json.dumps({"tasks": tasks, "impl_files": compact}, sort_keys=True).encode()


def expand_impl_files(data: dict) -> dict[str, dict[str, str]]:
    """impl -> {file: digest}, from keys_json's form (or an older file's full form)."""
    if "files" not in data or "impls" not in data:
        return data
    files = data["files"]
    return {impl: {f: files[f] for f in names} for impl, names in data["impls"].items()}


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 40 else text[:37] + "..."


def reasons(name: str, now: dict, before: dict, impl_now: dict, impl_before: dict) -> list[str]:
    """What differs between a task's key parts now and at its last build here."""
    old = before.get(name)
    if old is None:
        return ["not built before in this output directory"]
    why = []
    if old.get("stage") != now["stage"] or old.get("fn") != now["fn"]:
        why.append(f"its stage function changed ({old.get('fn')} -> {now['fn']})")
    if old.get("impl") != now["impl"]:
        files_now = impl_now.get(now["impl"])
        files_old = impl_before.get(old.get("impl"))
        if files_now is None or files_old is None:
            why.append("the code of its stage changed")
        else:
            changed = sorted(f for f in set(files_now) | set(files_old)
                             if files_now.get(f) != files_old.get(f))
            for f in changed:
                what = ("is new" if f not in files_old else "was removed"
                        if f not in files_now else "changed")
                why.append(f"the code of {f} {what}")
            if not changed:
                why.append("the code of its stage changed")
    opts_old, opts_new = old.get("options", {}), now["options"]
    for k in sorted(set(opts_old) | set(opts_new)):
        if opts_old.get(k) != opts_new.get(k):
            if k not in opts_old:
                why.append(f"option {k} is new ({_short(opts_new[k])})")
            elif k not in opts_new:
                why.append(f"option {k} was dropped")
            else:
                why.append(f"option {k} changed ({_short(opts_old[k])} -> {_short(opts_new[k])})")
    if old.get("outputs") != now["outputs"]:
        why.append(f"its outputs changed ({', '.join(now['outputs'])})")
    ins_old, ins_new = old.get("inputs", {}), now["inputs"]
    for k in sorted(set(ins_old) | set(ins_new)):
        if ins_old.get(k) != ins_new.get(k):
            why.append(f"input {k} is new" if k not in ins_old else
                       f"input {k} was dropped" if k not in ins_new else f"input {k} changed")
    if not why:
        why.append("same key as last time, but its result was not in the store "
                   "(evicted, damaged, or the store was cleared)")
    return why


def explain(records, parts: dict[str, dict], before: dict, impl_files: dict) -> dict:
    """report/explain.json: for each task that ran, why; and how many were cached."""
    old_tasks = before.get("tasks", {})
    old_impls = before.get("impl_files", {})
    ran = []
    for r in records:
        if r.status != "ran":
            continue
        now = parts.get(r.name)
        why = (reasons(r.name, now, old_tasks, impl_files, old_impls) if now is not None
               else ["(no key recorded)"])
        ran.append({"task": r.name, "stage": r.stage, "why": why})
    return {"ran": ran, "cached": sum(1 for r in records if r.status != "ran")}


def load_explain(out: Path) -> dict:
    try:
        return json.loads((Path(out) / EXPLAIN_FILE).read_text())
    except (OSError, ValueError):
        return {"ran": [], "cached": 0}


def write_explain(out: Path, data: dict) -> None:
    """report/explain.json, one task per line (json's C encoder: an indented dump
    goes through its pure-Python one, a few ms on a cold compile)."""
    rows = ",\n ".join(json.dumps(r, sort_keys=True) for r in data["ran"])
    ran = f"[\n {rows}\n]" if rows else "[]"
    text = f'{{"cached": {int(data["cached"])}, "ran": {ran}}}\n'
    path = Path(out) / EXPLAIN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def format_explain(data: dict) -> str:
    """The text `--explain` prints."""
    lines = [f"{len(data['ran'])} task(s) ran, {data['cached']} cached"]
    for row in data["ran"]:
        lines.append(f"  {row['task']}  [{row['stage']}]")
        lines += [f"      {w}" for w in row["why"]]
    return "\n".join(lines) + "\n"
