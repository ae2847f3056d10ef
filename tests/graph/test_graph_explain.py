"""Why did a task run (report/explain.json), and the pictures of a build
(report/build_trace.json, report/build_graph.svg)."""
import json
import xml.etree.ElementTree as ET

from pypto_pipeline.explain import reasons
from pypto_pipeline.picture import critical_path, depths

from graph_helpers import import_file, ran, tasks, write_program

PARTS = {"stage": "pass", "fn": "m.f", "impl": "i1", "options": {"memory_planner": "PYPTO"},
         "outputs": ["program"], "inputs": {"program": "d1"}}


def test_reasons_name_what_differs():
    before = {"t": PARTS}
    impls_old = {"i1": {"pypto/passes/memory_reuse.py": "a", "pypto/ir/nodes.py": "b"}}
    assert reasons("u", PARTS, before, {}, {}) == ["not built before in this output directory"]
    assert reasons("t", dict(PARTS), before, {}, {})[0].startswith("same key as last time")
    now = dict(PARTS, options={"memory_planner": "DSA_RP"}, inputs={"program": "d2"})
    assert reasons("t", now, before, {}, {}) == [
        'option memory_planner changed ("PYPTO" -> "DSA_RP")', "input program changed"]
    now = dict(PARTS, impl="i2")
    impls_new = {"i2": {"pypto/passes/memory_reuse.py": "c", "pypto/ir/nodes.py": "b",
                        "pypto/passes/extra.py": "e"}}
    assert reasons("t", now, before, impls_new, impls_old) == [
        "the code of pypto/passes/extra.py is new",
        "the code of pypto/passes/memory_reuse.py changed"]
    assert reasons("t", now, before, {}, impls_old) == ["the code of its stage changed"]


def test_critical_path_follows_the_slowest_chain():
    nodes = ["a", "b", "c", "d"]
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    assert depths(nodes, edges) == {"a": 0, "b": 1, "c": 1, "d": 2}
    assert critical_path(nodes, edges, {"a": 1, "b": 5, "c": 1, "d": 1}) == ["a", "b", "d"]
    assert critical_path(nodes, edges, {"a": 1, "b": 1, "c": 5, "d": 1}) == ["a", "c", "d"]


def _explain(out):
    return json.loads((out / "report" / "explain.json").read_text())


def test_explain_after_an_edit_and_an_option_change(iso):
    from pypto import ir
    prog = write_program(iso / "prog.py", 3)
    out = iso / "out"
    ir.compile(import_file(prog).PROGRAM, output_dir=str(out), platform="a2a3sim")
    first = _explain(out)
    assert first["ran"] and all(r["why"] == ["not built before in this output directory"]
                                for r in first["ran"])

    write_program(prog, 3, ops={"k1": "pl.maximum(ta, tb)"})  # one kernel edited
    ir.compile(import_file(prog).PROGRAM, output_dir=str(out), platform="a2a3sim")
    why = {r["task"]: r["why"] for r in _explain(out)["ran"]}
    assert set(why) == {r["name"] for r in ran(tasks(out))}
    back = {t: w for t, w in why.items() if t.split(":")[0] in ("pto", "ptoas", "kernel")}
    assert back == {"pto:Kernels3:k1": ["input kernel changed"],
                    "ptoas:Kernels3:k1": ["input pto changed"],
                    "kernel:Kernels3:k1": ["input cpp changed"]}, back
    assert all(w and all(x.startswith("input ") for x in w) for w in why.values()), why

    ir.compile(import_file(prog).PROGRAM, output_dir=str(out), platform="a2a3sim",
               memory_planner="DSA_RP")
    data = _explain(out)
    reasons_ = {x for r in data["ran"] for x in r["why"]}
    assert 'option memory_planner changed ("PYPTO" -> "DSA_RP")' in reasons_, reasons_
    assert data["cached"] + len(data["ran"]) == len(tasks(out))


def test_trace_and_graph_picture(iso):
    from pypto import ir
    prog = write_program(iso / "prog.py", 2)
    out = iso / "out"
    ir.compile(import_file(prog).PROGRAM, output_dir=str(out), platform="a2a3sim")
    recs = tasks(out)
    trace = json.loads((out / "report" / "build_trace.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in slices) == sorted(r["name"] for r in recs)
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in slices)
    lanes = {e["tid"] for e in slices if e["args"]["status"] == "ran"}
    for lane in lanes:               # no two slices overlap on one worker row
        row = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["tid"] == lane)
        assert all(a[1] <= b[0] + 0.2 for a, b in zip(row, row[1:]))
    svg = ET.fromstring((out / "report" / "build_graph.svg").read_text())
    ns = "{http://www.w3.org/2000/svg}"
    rects = svg.findall(f".//{ns}rect")
    assert len(rects) == len(recs)
    red = [r for r in rects if r.get("stroke") == "#d62728"]
    assert len(red) >= 3, "no critical path marked"
    # a compile served whole from the store: nothing ran, nothing to explain
    ir.compile(import_file(prog).PROGRAM, output_dir=str(iso / "again"), platform="a2a3sim")
    assert _explain(iso / "again") == {"ran": [], "cached": len(recs)}
