"""DFX outputs of a launch: swimlane records, a Chrome trace, an SVG timeline, deps.json.

Written at run time (never by compilation) into `<output_dir>/dfx_outputs/` (or
`RunConfig.dfx_output_dir`) when the run's RunConfig asks for them:

| RunConfig | Files |
|---|---|
| `enable_chip_swimlane=1..4` | `chip_swimlane_records.json`, `chip_swimlane_trace.json`, `chip_swimlane.svg` |
| `enable_dep_gen=True` | `deps.json` |

Times are host `perf_counter_ns` (the simulator has no cycle model), relative to the
launch start. Each launch overwrites the previous launch's files.
"""
from __future__ import annotations

import json
import math
import os
import threading
from html import escape as _html_escape
from pathlib import Path

from .config import CORE_SLOTS, arch_of


def escape(text: str) -> str:
    """Text for SVG content (html.escape: xml.sax.saxutils would pull in urllib on import)."""
    return _html_escape(text, quote=False)


DFX_DIR = "dfx_outputs"
SWIMLANE_RECORDS = "chip_swimlane_records.json"
SWIMLANE_TRACE = "chip_swimlane_trace.json"
SWIMLANE_SVG = "chip_swimlane.svg"
DEPS = "deps.json"
NAME_MAP = "name_map_program.json"     # (the profiling tools find name_map_*.json beside the records)

# the clock the reference runtime reports cycles in (a2a3: 50 MHz system counter, a5: 1 GHz)
CLOCK_FREQ_HZ = {"a2a3": 50_000_000, "a5": 1_000_000_000}
CORE_ORDER = ("aic", "aiv", "mix")
# a Group's task (mix) runs on an AIC and an AIV together; its lane is its AIC's index
CORE_LABEL = {"aic": "AIC", "aiv": "AIV", "mix": "AIC+AIV"}
PIDS = {"host": 0, "aic": 1, "aiv": 2, "mix": 3}


# -- what to write ---------------------------------------------------------------------
def swimlane_level(config) -> int:
    value = getattr(config, "enable_chip_swimlane", 0)
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    try:
        level = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"enable_chip_swimlane must be 0..4 or a bool, got {value!r}") from None
    if not 0 <= level <= 4:
        raise ValueError(f"enable_chip_swimlane must be 0..4 or a bool, got {value!r}")
    return level


def wanted(config) -> bool:
    return swimlane_level(config) > 0 or bool(getattr(config, "enable_dep_gen", False)) \
        or bool(getattr(config, "enable_dump_args", 0))


def output_dir(compiled, config=None) -> Path:
    """`config.dfx_output_dir` when set, else `<output_dir>/dfx_outputs/`."""
    chosen = getattr(config, "dfx_output_dir", None)
    if chosen:
        return Path(chosen)
    return Path(compiled.output_dir) / DFX_DIR


def write_outputs(record, compiled, config, out_dir=None) -> dict:
    """Write the files `config` asks for; returns {name: path} (also kept in
    record.dfx_outputs)."""
    level = swimlane_level(config)
    dep_gen = bool(getattr(config, "enable_dep_gen", False))
    dump_args = bool(getattr(config, "enable_dump_args", 0)) and record.arg_dumps is not None
    if not level and not dep_gen and not dump_args:
        return {}
    out = Path(out_dir) if out_dir is not None else output_dir(compiled, config)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    if level:
        written[SWIMLANE_RECORDS] = _write_json(out / SWIMLANE_RECORDS, swimlane_records(record, level))
        written[SWIMLANE_TRACE] = _write_json(out / SWIMLANE_TRACE, chrome_trace(record))
        written[SWIMLANE_SVG] = _write_text(out / SWIMLANE_SVG, swimlane_svg(record, _title(compiled)))
        names = {str(t.func_id): t.kernel for t in sorted(record.tasks, key=lambda t: t.func_id)}
        written[NAME_MAP] = _write_json(out / NAME_MAP, {"callable_id_to_name": names})
    if dep_gen:
        written[DEPS] = _write_json(out / DEPS, deps_graph(record))
    if dump_args:
        from . import arg_dump
        written.update(arg_dump.write(record, out, int(config.enable_dump_args)))
    record.dfx_outputs.update(written)
    return written


def _title(compiled) -> str:
    name = getattr(getattr(compiled, "program", None), "name", None)
    if not isinstance(name, str) or not name:
        try:
            name = compiled._name()
        except Exception:
            name = ""
    folder = Path(compiled.output_dir).name
    return f"{name} ({folder})" if name and name != folder else folder


def _write_text(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def _write_json(path: Path, data) -> Path:
    return _write_text(path, json.dumps(data, indent=1) + "\n")


# -- swimlane records ---------------------------------------------------------------------
def _origin(record) -> int:
    starts = [t.start_ns for t in record.tasks if t.start_ns]
    # the caller's call (binding its arguments is part of the launch), else the launch start
    return record.call_ns or record.start_ns or (min(starts) if starts else 0)


def _meta(record) -> dict:
    t0 = _origin(record)
    arch = arch_of(record.platform)
    orch = None
    if record.orchestration_start_ns:
        orch = {"start_ns": record.orchestration_start_ns - t0,
                "end_ns": record.orchestration_end_ns - t0}
    return {
        "program": record.program,
        "platform": record.platform,
        "arch": arch,
        "runtime": record.runtime,
        "clock": "host perf_counter_ns (simulator: wall clock, no cycle model)",
        "time_unit": "ns",
        "time_origin": "launch start",
        "launch_start_ns": t0,
        "clock_freq_hz": CLOCK_FREQ_HZ[arch],
        "core_types": dict(CORE_SLOTS[arch]),
        "n_threads": record.n_threads,
        "n_tasks": len(record.tasks),
        "host_wall_ns": record.end_ns - t0 if record.end_ns else 0,
        "device_wall_ns": record.device_wall_ns,
        "orchestration": orch,
        "graph_built": record.graph_built,
        "replayed": record.replayed,
        "error": record.error,
        "time_split": time_split(record),
    }


def _busy_ns(tasks) -> int:
    """Wall time during which at least one kernel ran."""
    spans = sorted((t.start_ns, t.end_ns) for t in tasks if t.end_ns > t.start_ns)
    busy, end = 0, None
    for lo, hi in spans:
        if end is None or lo > end:
            busy += hi - lo
            end = hi
        elif hi > end:
            busy += hi - end
            end = hi
    return busy


def _kernel_ns(t) -> int:
    """A task's kernel time, its blocks' summed (they may run at once)."""
    return sum(e - s for s, e in t.blocks) if t.blocks else t.duration_ns


def time_split(record) -> dict:
    """Where a launch's time went. dispatch_ns: host wall from the call to the end of the
    launch while no kernel ran (binding the arguments, the orchestration or a graph
    replay, hand-offs to the cores, completion). Summed over the cores' kernel calls:
    data_movement_ns (tile loads, stores and moves between buffers) and compute_ns (the
    rest); data movement is measured only when a swimlane is asked for."""
    begin = record.call_ns or record.start_ns
    wall = record.end_ns - begin if record.end_ns and begin else 0
    busy = _busy_ns(record.tasks)
    kernel = sum(_kernel_ns(t) for t in record.tasks)
    moved = sum(getattr(t, "move_ns", 0) for t in record.tasks)
    return {"host_wall_ns": wall, "dispatch_ns": max(0, wall - busy), "device_busy_ns": busy,
            "kernel_ns": kernel, "data_movement_ns": moved, "compute_ns": max(0, kernel - moved),
            "data_movement_measured": bool(record.measure_moves)}


def swimlane_records(record, level: int = 1) -> dict:
    """One record per task: id, kernel, core type and index, start/end ns (relative to
    the launch start) and the same in cycles of the platform's clock_freq_hz. Level >= 2
    adds when the task became ready (its dispatch wait)."""
    meta = _meta(record)
    meta["swimlane_level"] = level
    t0 = meta["launch_start_ns"]
    freq = meta["clock_freq_hz"]
    rows = []
    for t in record.tasks:
        start, end = t.start_ns - t0, t.end_ns - t0
        row = {"task_id": t.task_id, "func_id": t.func_id, "kernel": t.kernel,
               "core_type": t.core_type, "core_index": t.core_index,
               "start_ns": start, "end_ns": end, "duration_ns": end - start,
               "start_cycle": start * freq // 1_000_000_000,
               "end_cycle": end * freq // 1_000_000_000,
               "thread": t.thread, "scope": t.scope, "status": t.status, "deps": list(t.deps)}
        if level >= 2 and t.ready_ns:
            row["ready_ns"] = t.ready_ns - t0
            row["dispatch_wait_ns"] = t.start_ns - t.ready_ns
        if record.measure_moves:
            row["data_movement_ns"] = t.move_ns
            row["compute_ns"] = max(0, _kernel_ns(t) - t.move_ns)
        rows.append(row)
    return {"version": 1, "metadata": meta, "records": rows,
            "chip_swimlane_level": level, "tasks": device_tasks(record, t0, meta["core_types"])}


def device_tasks(record, t0: int, slots: dict) -> list:
    """The tasks in the field names the device runtime's swimlane records use (the
    reference's profiling tools read them): microseconds from the launch start, one core
    id across the chip (the AICs first, then the AIVs), the consumers each task fed
    (`fanout`: from the tasks' waits and the recorded edges)."""
    fanout: dict = {}
    for t in record.tasks:
        for d in t.deps:
            fanout.setdefault(d, set()).add(t.task_id)
    for a, b in record.edges:
        fanout.setdefault(a, set()).add(b)
    us = lambda ns: (ns - t0) / 1000.0          # noqa: E731
    out = []
    for t in record.tasks:
        core = t.core_index + (slots.get("aic", 0) if t.core_type == "aiv" else 0)
        outs = sorted(fanout.get(t.task_id, ()))
        out.append({"task_id": t.task_id, "func_id": t.func_id, "core_id": core,
                    "core_type": "aiv" if t.core_type == "aiv" else "aic", "ring_id": 0,
                    "start_time_us": us(t.start_ns), "end_time_us": us(t.end_ns),
                    "duration_us": (t.end_ns - t.start_ns) / 1000.0,
                    "dispatch_time_us": us(t.start_ns), "finish_time_us": us(t.end_ns),
                    "fanout": outs, "fanout_count": len(outs)})
    return out


# -- Chrome trace -------------------------------------------------------------------------
def chrome_trace(record) -> dict:
    """Chrome trace-event JSON (chrome://tracing, Perfetto): a complete ("X") event per
    task, pid per core type, tid per core index; the orchestration on the host row;
    flow arrows along the dependency edges."""
    meta = _meta(record)
    t0 = meta["launch_start_ns"]

    def us(ns: int) -> float:
        return round((ns - t0) / 1000.0, 3)

    events = []
    used = sorted({(t.core_type, t.core_index) for t in record.tasks},
                  key=lambda c: (_core_rank(c[0]), c[1]))
    types = [c for c in CORE_ORDER if any(u[0] == c for u in used)]
    types += sorted({u[0] for u in used} - set(types))
    events.append({"ph": "M", "name": "process_name", "pid": PIDS["host"], "tid": 0,
                   "args": {"name": "Host orchestration"}})
    events.append({"ph": "M", "name": "process_sort_index", "pid": PIDS["host"], "tid": 0,
                   "args": {"sort_index": 0}})
    for i, ctype in enumerate(types):
        pid = _pid(ctype)
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{CORE_LABEL.get(ctype, ctype)} cores"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": i + 1}})
    for ctype, index in used:
        events.append({"ph": "M", "name": "thread_name", "pid": _pid(ctype), "tid": index,
                       "args": {"name": f"{CORE_LABEL.get(ctype, ctype)} {index}"}})
    events.extend(_dispatch_events(record, us))
    if record.orchestration_start_ns:
        events.append({"ph": "X", "name": "orchestration", "cat": "host", "pid": PIDS["host"],
                       "tid": 0, "ts": us(record.orchestration_start_ns),
                       "dur": round((record.orchestration_end_ns - record.orchestration_start_ns) / 1000.0, 3),
                       "args": {"graph_built": record.graph_built}})
    by_id = {t.task_id: t for t in record.tasks}
    for t in record.tasks:
        events.append({"ph": "X", "name": t.kernel, "cat": "task", "pid": _pid(t.core_type),
                       "tid": t.core_index, "ts": us(t.start_ns),
                       "dur": round((t.end_ns - t.start_ns) / 1000.0, 3),
                       "args": {"task_id": t.task_id, "func_id": t.func_id, "deps": list(t.deps),
                                "thread": t.thread, "status": t.status}})
        if record.measure_moves:
            events.extend(_split_events(t, us))
    flow = 0
    for t in record.tasks:
        for d in t.deps:
            p = by_id.get(d)
            if p is None:
                continue
            flow += 1
            # start inside the producer's slice, finish at the consumer's start
            mid = p.start_ns + (p.end_ns - p.start_ns) // 2
            events.append({"ph": "s", "id": flow, "name": "dep", "cat": "dep",
                           "pid": _pid(p.core_type), "tid": p.core_index, "ts": us(mid)})
            events.append({"ph": "f", "bp": "e", "id": flow, "name": "dep", "cat": "dep",
                           "pid": _pid(t.core_type), "tid": t.core_index, "ts": us(t.start_ns)})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def _dispatch_events(record, us) -> list:
    """The host's dispatch lane: from the call to the first kernel's start (binding, the
    orchestration or replay, hand-off) and from the last kernel's end to the return."""
    begin = record.call_ns or record.start_ns
    if not begin or not record.end_ns:
        return []
    starts = [t.start_ns for t in record.tasks if t.end_ns]
    first = min(starts) if starts else record.end_ns
    last = max((t.end_ns for t in record.tasks if t.end_ns), default=first)
    out = [{"ph": "M", "name": "thread_name", "pid": PIDS["host"], "tid": 1,
            "args": {"name": "dispatch"}}]
    for name, lo, hi in (("dispatch", begin, first), ("completion", last, record.end_ns)):
        if hi > lo:
            out.append({"ph": "X", "name": name, "cat": "dispatch", "pid": PIDS["host"], "tid": 1,
                        "ts": us(lo), "dur": round((hi - lo) / 1000.0, 3),
                        "args": {"replayed": record.replayed}})
    return out


def _split_events(t, us) -> list:
    """A task's kernel time as data movement then compute, nested in its slice (the two
    are totals over its tile ops; their interleaving is not kept)."""
    dur = t.end_ns - t.start_ns
    moved = min(t.move_ns, dur)
    base = {"cat": "split", "pid": _pid(t.core_type), "tid": t.core_index}
    return [dict(base, ph="X", name="data movement", ts=us(t.start_ns), dur=round(moved / 1000.0, 3),
                 args={"ns": t.move_ns}),
            dict(base, ph="X", name="compute", ts=us(t.start_ns + moved),
                 dur=round((dur - moved) / 1000.0, 3), args={"ns": dur - moved})]


def _pid(core_type: str) -> int:
    return PIDS.get(core_type, 3)


def _core_rank(core_type: str) -> int:
    return CORE_ORDER.index(core_type) if core_type in CORE_ORDER else len(CORE_ORDER)


# -- deps.json ----------------------------------------------------------------------------
def deps_graph(record) -> dict:
    """The launch's dependency edges (producer -> consumer task ids) with kernel names."""
    kernel = {t.task_id: t.kernel for t in record.tasks}
    edges = sorted(set(record.edges))
    return {
        "version": 1,
        "program": record.program,
        "platform": record.platform,
        "runtime": record.runtime,
        "tasks": [{"task_id": t.task_id, "kernel": t.kernel, "func_id": t.func_id,
                   "core_type": t.core_type, "deps": list(t.deps)} for t in record.tasks],
        "edges": [{"from": a, "to": b, "from_kernel": kernel.get(a), "to_kernel": kernel.get(b)}
                  for a, b in edges],
    }


# -- SVG timeline -------------------------------------------------------------------------
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")
WIDTH = 1200
LEFT = 110          # lane labels
RIGHT = 30
TOP = 56            # title
LANE = 30
BAR = 20
FONT = 11
CHAR_W = 6.4        # estimated width of one character at FONT px


def _nice_step(span: float, target: int = 8) -> float:
    """A 1/2/5 x 10^k tick step giving about `target` ticks over `span`."""
    raw = span / max(target, 1)
    if raw <= 0:
        return 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw * (1 - 1e-9):
            return m * mag
    return 10 * mag


def _time_unit(span_ns: float) -> tuple[str, float]:
    if span_ns >= 5_000_000:
        return "ms", 1e6
    if span_ns >= 5_000:
        return "µs", 1e3
    return "ns", 1.0


def _fmt(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def swimlane_svg(record, title: str | None = None) -> str:
    """The launch as an SVG timeline: one lane per core used (plus the host
    orchestration), a bar per task labelled with its kernel, a time axis, dependency
    edges as thin arrows, and a legend of kernels."""
    meta = _meta(record)
    t0 = meta["launch_start_ns"]
    tasks = list(record.tasks)
    lanes: list[tuple] = []
    has_orch = bool(record.orchestration_start_ns)
    if has_orch:
        lanes.append(("host", 0))
    lanes += sorted({(t.core_type, t.core_index) for t in tasks},
                    key=lambda c: (_core_rank(c[0]), c[1]))
    lane_of = {lane: i for i, lane in enumerate(lanes)}

    ends = [t.end_ns - t0 for t in tasks]
    if has_orch:
        ends.append(record.orchestration_end_ns - t0)
    if record.end_ns:
        ends.append(record.end_ns - t0)
    span = max(ends + [1])
    unit, scale = _time_unit(span)
    step = _nice_step(span / scale)
    axis_end = step * -(-(span / scale) // step)          # round the axis up to a tick
    plot_w = WIDTH - LEFT - RIGHT

    def x(ns: float) -> float:
        return LEFT + (ns / scale) / axis_end * plot_w

    kernels = []
    for t in tasks:
        if t.kernel not in kernels:
            kernels.append(t.kernel)
    color = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kernels)}

    plot_h = LANE * len(lanes)
    axis_y = TOP + plot_h + 6
    legend_rows = -(-len(kernels) // 4) if kernels else 0
    height = axis_y + 40 + legend_rows * 18 + 10

    name = title or Path(record.program).name or record.program
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif" '
           f'font-size="{FONT}">',
           '<defs><marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" '
           'markerHeight="6" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#555"/></marker></defs>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>']
    summary = (f"{record.platform} · {record.runtime} · {len(tasks)} tasks on "
               f"{len(lanes) - (1 if has_orch else 0)} cores · device wall "
               f"{_fmt(record.device_wall_ns / scale)} {unit} · {record.n_threads} host threads")
    out.append(f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold">'
               f'{escape(f"Chip swimlane: {name}")}</text>')
    out.append(f'<text x="{LEFT}" y="40" fill="#444">{escape(summary)}</text>')
    if record.error:
        out.append(f'<text x="{WIDTH - RIGHT}" y="40" fill="#c00" text-anchor="end">'
                   f'{escape("failed: " + record.error[:80])}</text>')

    # lanes and grid
    for i, (ctype, index) in enumerate(lanes):
        y = TOP + i * LANE
        if i % 2 == 0:
            out.append(f'<rect x="{LEFT}" y="{y}" width="{plot_w}" height="{LANE}" fill="#f4f4f4"/>')
        label = "host" if ctype == "host" else f"{CORE_LABEL.get(ctype, ctype)} {index}"
        out.append(f'<text class="lane" x="{LEFT - 8}" y="{y + LANE / 2 + 4:.1f}" text-anchor="end">'
                   f'{escape(label)}</text>')
    n_ticks = int(round(axis_end / step))
    for k in range(n_ticks + 1):
        value = k * step
        gx = LEFT + value / axis_end * plot_w
        out.append(f'<line x1="{gx:.1f}" y1="{TOP}" x2="{gx:.1f}" y2="{axis_y}" stroke="#ddd"/>')
        out.append(f'<line x1="{gx:.1f}" y1="{axis_y}" x2="{gx:.1f}" y2="{axis_y + 5}" stroke="#333"/>')
        out.append(f'<text class="tick" x="{gx:.1f}" y="{axis_y + 18}" text-anchor="middle">'
                   f'{_fmt(value)}</text>')
    out.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{LEFT + plot_w}" y2="{axis_y}" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w}" y="{axis_y + 32}" text-anchor="end" fill="#444">'
               f'time since launch start ({unit})</text>')

    # bars
    def bar(lane, start_ns, end_ns, fill, label, tip, kind):
        y = TOP + lane_of[lane] * LANE + (LANE - BAR) / 2
        bx, bw = x(start_ns), max(x(end_ns) - x(start_ns), 1.0)
        out.append(f'<g class="{kind}"><title>{escape(tip)}</title>'
                   f'<rect x="{bx:.2f}" y="{y:.1f}" width="{bw:.2f}" height="{BAR}" fill="{fill}" '
                   f'stroke="#333" stroke-width="0.5"/>')
        fits = int((bw - 4) // CHAR_W)
        if fits >= 3:
            text = label if len(label) <= fits else label[:fits - 1] + "…"
            out.append(f'<text x="{bx + 3:.2f}" y="{y + BAR / 2 + 4:.1f}" fill="white">'
                       f'{escape(text)}</text>')
        out.append('</g>')

    if has_orch:
        s, e = record.orchestration_start_ns - t0, record.orchestration_end_ns - t0
        bar(("host", 0), s, e, "#999", "orchestration",
            f"orchestration: {_fmt(s / scale)}–{_fmt(e / scale)} {unit}", "orchestration")
    for t in tasks:
        s, e = t.start_ns - t0, t.end_ns - t0
        tip = (f"task {t.task_id}: {t.kernel} on {CORE_LABEL.get(t.core_type, t.core_type)} "
               f"{t.core_index}, {_fmt(s / scale)}–{_fmt(e / scale)} {unit} "
               f"({_fmt((e - s) / scale)} {unit})")
        if t.deps:
            tip += f", after tasks {', '.join(map(str, t.deps))}"
        bar((t.core_type, t.core_index), s, e, color[t.kernel] if not t.status else "#c00",
            t.kernel, tip, "task")

    # dependency edges: producer end -> consumer start
    by_id = {t.task_id: t for t in tasks}
    edges = [(by_id[d], t) for t in tasks for d in t.deps if d in by_id]
    if len(edges) <= 400:
        for p, c in edges:
            y1 = TOP + lane_of[(p.core_type, p.core_index)] * LANE + LANE / 2
            y2 = TOP + lane_of[(c.core_type, c.core_index)] * LANE + LANE / 2
            x1, x2 = x(p.end_ns - t0), x(c.start_ns - t0)
            if y1 == y2:
                y1 = y2 = y1 - BAR / 2 - 1
            out.append(f'<line class="dep" x1="{x1:.2f}" y1="{y1:.1f}" x2="{x2:.2f}" y2="{y2:.1f}" '
                       f'stroke="#555" stroke-width="0.8" stroke-opacity="0.7" '
                       f'marker-end="url(#arrow)"/>')

    # legend
    ly = axis_y + 46
    for i, k in enumerate(kernels):
        lx = LEFT + (i % 4) * (plot_w / 4)
        yy = ly + (i // 4) * 18
        out.append(f'<rect x="{lx:.1f}" y="{yy - 10}" width="12" height="12" fill="{color[k]}"/>')
        out.append(f'<text class="legend" x="{lx + 17:.1f}" y="{yy}">{escape(k)}</text>')
    out.append('</svg>')
    return "\n".join(out) + "\n"
