"""Pictures of one build: a Chrome trace (report/build_trace.json, open it in Perfetto
or chrome://tracing: each task a slice on the thread that ran it) and the task graph
as SVG (report/build_graph.svg: ran tasks coloured, cached ones grey, the critical
path — the chain of tasks that bounded the wall time — in red).

Pure functions over records and edges; nothing here runs or reads a build.
"""
from __future__ import annotations


_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def _xml(text: str) -> str:
    """Text for SVG (html.escape's table; the html package costs a cold compile 1 ms)."""
    return text.translate(_XML)


def chrome_trace(records, t0: float) -> dict:
    """Trace Event Format: one complete ("X") event per task, microseconds since t0, on
    one row per worker (a task takes the first row free when it starts; each phase's
    doit run has threads of its own, so thread names would only say which phase).
    Tasks doit skipped outright sit on the "up-to-date checks" row."""
    events, lanes = [], []            # lanes: end time of the last task on each row
    for r in sorted(records, key=lambda r: getattr(r, "started", 0.0)):
        start = max(0.0, (getattr(r, "started", 0.0) or t0) - t0) * 1e6
        dur = max(getattr(r, "seconds", 0.0) * 1e6, 1.0)
        if getattr(r, "thread", ""):
            tid = next((i for i, end in enumerate(lanes) if end <= start), len(lanes))
            if tid == len(lanes):
                lanes.append(0.0)
            lanes[tid] = start + dur
            tid += 1
        else:
            tid = 0
        events.append({"name": r.name, "cat": r.stage or "task", "ph": "X", "pid": 1, "tid": tid,
                       "ts": round(start, 1), "dur": round(dur, 1),
                       "args": {"status": r.status, "stage": r.stage}})
    meta = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": i + 1,
             "args": {"name": f"worker {i + 1}"}} for i in range(len(lanes))]
    meta += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": 0,
              "args": {"name": "up-to-date checks"}},
             {"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
              "args": {"name": "pypto build"}}]
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}


def depths(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest distance from a source, for each node (edges point producer -> consumer)."""
    ups: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in ups and b in ups:
            ups[b].append(a)
    depth: dict[str, int] = {}
    on_stack: set[str] = set()
    for n in nodes:              # iterative DFS: graphs can be deep
        stack = [n]
        while stack:
            cur = stack[-1]
            if cur in depth:
                stack.pop()
                continue
            on_stack.add(cur)
            # an edge back onto the stack would be a cycle: ignore it (a picture, not a check)
            pending = [u for u in ups[cur] if u not in depth and u not in on_stack]
            if pending:
                stack.append(pending[0])
                continue
            depth[cur] = 1 + max((depth[u] for u in ups[cur] if u in depth), default=-1)
            on_stack.discard(cur)
            stack.pop()
    return depth


def critical_path(nodes: list[str], edges: list[tuple[str, str]],
                  seconds: dict[str, float], depth: dict[str, int] | None = None) -> list[str]:
    """The chain of tasks with the largest total time (cached tasks weigh nothing)."""
    order = sorted(nodes, key=(depth or depths(nodes, edges)).get)
    ups: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in ups and b in ups:
            ups[b].append(a)
    best: dict[str, tuple[float, str | None]] = {}
    for n in order:
        prev = max(ups[n], key=lambda u: best[u][0], default=None)
        best[n] = (seconds.get(n, 0.0) + (best[prev][0] if prev else 0.0), prev)
    if not best:
        return []
    end = max(best, key=lambda n: best[n][0])
    path = []
    while end is not None:
        path.append(end)
        end = best[end][1]
    return path[::-1]


_COLOURS = {"ran": "#f4a259", "cached": "#d9d9d9"}


def graph_svg(records, edges: list[tuple[str, str]]) -> str:
    """The task graph, left to right by depth; one box per task."""
    recs = {r.name: r for r in records}
    nodes = list(recs)
    depth = depths(nodes, edges)
    crit = critical_path(nodes, edges, {n: r.seconds for n, r in recs.items()
                                        if r.status == "ran"}, depth)
    on_path = set(crit)
    crit_edges = set(zip(crit, crit[1:]))
    columns: dict[int, list[str]] = {}
    for n in nodes:
        columns.setdefault(depth[n], []).append(n)
    box_w, box_h, gap_x, gap_y, pad = 230, 20, 60, 6, 20
    pos = {}
    for d, names in columns.items():
        for i, n in enumerate(sorted(names)):
            pos[n] = (pad + d * (box_w + gap_x), pad + 30 + i * (box_h + gap_y))
    width = pad * 2 + (max(columns, default=0) + 1) * (box_w + gap_x)
    height = pad * 2 + 30 + max((len(v) for v in columns.values()), default=0) * (box_h + gap_y)
    ran = sum(1 for r in records if r.status == "ran")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="10">',
           f'<text x="{pad}" y="{pad + 10}" font-size="13">{len(nodes)} tasks: {ran} ran '
           f'(orange), {len(nodes) - ran} cached (grey); critical path in red '
           f'({len(crit)} tasks)</text>']
    for a, b in edges:
        if a not in pos or b not in pos:
            continue
        (x1, y1), (x2, y2) = pos[a], pos[b]
        red = (a, b) in crit_edges
        out.append(f'<line x1="{x1 + box_w}" y1="{y1 + box_h / 2}" x2="{x2}" y2="{y2 + box_h / 2}" '
                   f'stroke="{"#d62728" if red else "#9a9a9a"}" '
                   f'stroke-width="{2 if red else 0.6}"/>')
    for n, (x, y) in pos.items():
        r = recs[n]
        stroke = ' stroke="#d62728" stroke-width="2"' if n in on_path else ' stroke="#777"'
        label = n if len(n) <= 36 else "..." + n[-33:]
        out.append(f'<g><title>{_xml(n)}: {r.stage}, {r.status}, {r.seconds * 1000:.1f} ms</title>'
                   f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="3" '
                   f'fill="{_COLOURS.get(r.status, "#fff")}"{stroke}/>'
                   f'<text x="{x + 4}" y="{y + 14}">{_xml(label)}</text></g>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
