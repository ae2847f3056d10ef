"""DFX outputs written at run time: swimlane records, Chrome trace, SVG, deps.json; and
what the records show about concurrency (independent kernels overlap, dependent ones
never do)."""
import json
import xml.etree.ElementTree as ET

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, KernelExecutionError, RunConfig, RunRecord, TaskRecord, run
from pypto.runtime.dfx import chrome_trace, deps_graph, swimlane_records, swimlane_svg

from runtime_helpers import isolated_compiler, tensor

LOOPS = 200      # enough work per independent kernel (tens of ms) to see them run together
SVG = "{http://www.w3.org/2000/svg}"
FILES = ("chip_swimlane_records.json", "chip_swimlane_trace.json", "chip_swimlane.svg", "name_map_program.json")


@pl.program
class Pipeline:
    """left and right are independent; combine reads both (through o1, o2); scale reads
    what combine wrote into an intermediate tensor."""

    @pl.function
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Tensor[[64, 64], pl.FP32],
             o1: pl.Out[pl.Tensor[[64, 64], pl.FP32]], o2: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="left"):
            a0 = pl.load(x, [0, 0], [64, 64])
            for i, (a_in,) in pl.range(LOOPS, init_values=(a0,)):
                ta = pl.load(x, [0, 0], [64, 64])
                a_out = pl.yield_(pl.add(a_in, pl.exp(ta)))
            pl.store(a_out, [0, 0], o1)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="right"):
            b0 = pl.load(y, [0, 0], [64, 64])
            for j, (b_in,) in pl.range(LOOPS, init_values=(b0,)):
                tb = pl.load(y, [0, 0], [64, 64])
                b_out = pl.yield_(pl.add(b_in, pl.exp(tb)))
            pl.store(b_out, [0, 0], o2)
        tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="combine"):
            tmp[:] = pl.add(o1, o2)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
            out[:] = pl.mul(tmp, 2.0)
        return out


def golden(x, y, o1, o2, out):
    a, b = x + LOOPS * x.exp(), y + LOOPS * y.exp()
    return {"o1": a, "o2": b, "out": 2 * (a + b)}


KERNELS = ["left", "right", "combine", "scale"]
EDGES = [(0, 2), (1, 2), (2, 3)]
RUNTIMES = ["tensormap_and_ringbuffer", "host_build_graph"]


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory):
    with isolated_compiler(tmp_path_factory.mktemp("dfx")) as base:
        out = {}
        for rt in RUNTIMES:
            out[rt] = ir.compile(Pipeline, output_dir=base / rt, platform="a2a3sim",
                                 runtime=getattr(ir.RuntimeKind, rt.upper()))
            assert not (base / rt / "dfx_outputs").exists()     # compiling writes no DFX
        yield out


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)


def overlap(a, b) -> bool:
    return max(a.start_ns, b.start_ns) < min(a.end_ns, b.end_ns)


def dfx_dir(compiled):
    return compiled.output_dir / "dfx_outputs"


def test_no_dfx_unless_asked(pipelines):
    c = pipelines["tensormap_and_ringbuffer"]
    before = {p: p.stat().st_mtime_ns for p in dfx_dir(c).glob("*")} if dfx_dir(c).exists() else {}
    result = run(c, *inputs(), golden=golden, rtol=1e-4, atol=1e-3)
    assert result.passed and result.dfx_outputs == {} and result.record.dfx_outputs == {}
    after = {p: p.stat().st_mtime_ns for p in dfx_dir(c).glob("*")} if dfx_dir(c).exists() else {}
    assert after == before


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_swimlane_outputs_one_record_per_task(pipelines, runtime):
    c = pipelines[runtime]
    result = run(c, *inputs(1), golden=golden, rtol=1e-4, atol=1e-3,
                 config=RunConfig(enable_chip_swimlane=1))
    rec = result.record
    assert set(result.dfx_outputs) == set(FILES)
    assert all(result.dfx_outputs[n] == dfx_dir(c) / n for n in FILES)

    # records: one per task, same ids/kernels/cores/times as the run record
    data = json.loads((dfx_dir(c) / FILES[0]).read_text())
    meta, rows = data["metadata"], data["records"]
    assert meta["platform"] == "a2a3sim" and meta["runtime"] == runtime
    assert meta["clock_freq_hz"] == 50_000_000 and meta["time_unit"] == "ns"
    assert meta["n_tasks"] == 4 and meta["swimlane_level"] == 1
    assert [r["task_id"] for r in rows] == [0, 1, 2, 3]
    assert [r["kernel"] for r in rows] == KERNELS
    t0 = meta["launch_start_ns"]
    assert t0 == rec.call_ns and 0 < rec.call_ns < rec.start_ns      # from the call on
    split = meta["time_split"]                 # where the time went (issue 15.4)
    assert split["data_movement_measured"] and split["kernel_ns"] == sum(t.duration_ns for t in rec.tasks)
    assert 0 < split["data_movement_ns"] < split["kernel_ns"]
    assert split["compute_ns"] == split["kernel_ns"] - split["data_movement_ns"]
    assert 0 < split["dispatch_ns"] < split["host_wall_ns"] == meta["host_wall_ns"]
    assert all(r["data_movement_ns"] + r["compute_ns"] == r["duration_ns"] for r in rows)
    for r, t in zip(rows, rec.tasks):
        assert r["core_type"] == t.core_type == "aiv" and r["core_index"] == t.core_index
        assert r["start_ns"] == t.start_ns - t0 and r["end_ns"] == t.end_ns - t0
        assert 0 <= r["start_ns"] <= r["end_ns"] <= meta["host_wall_ns"]
        assert r["duration_ns"] == r["end_ns"] - r["start_ns"]
        assert r["start_cycle"] == r["start_ns"] // 20          # 50 MHz
        assert "ready_ns" not in r                              # level 2 and up
    assert meta["device_wall_ns"] == (max(r["end_ns"] for r in rows) - min(r["start_ns"] for r in rows))

    # func_id -> kernel name, as the device runtime's profiling tools look it up
    names = json.loads((dfx_dir(c) / FILES[3]).read_text())["callable_id_to_name"]
    assert names == {str(t.func_id): t.kernel for t in rec.tasks}

    # Chrome trace: an X event per task, pid per core type, tid per core index
    trace = json.loads((dfx_dir(c) / FILES[1]).read_text())
    events = trace["traceEvents"]
    tasks = [e for e in events if e["ph"] == "X" and e.get("cat") == "task"]
    assert [e["name"] for e in tasks] == KERNELS
    for e, r in zip(tasks, rows):
        assert e["pid"] == 2 and e["tid"] == r["core_index"]
        assert e["ts"] == pytest.approx(r["start_ns"] / 1000, abs=1e-3)
        assert e["dur"] == pytest.approx(r["duration_ns"] / 1000, abs=2e-3)
        assert e["args"]["task_id"] == r["task_id"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert procs == {0: "Host orchestration", 2: "AIV cores"}
    assert threads == {(0, 1): "dispatch", **{(2, i): f"AIV {i}" for i in {r["core_index"] for r in rows}}}
    assert [e for e in events if e["ph"] == "X" and e["name"] == "orchestration"]
    assert [e["name"] for e in events if e.get("cat") == "dispatch"] == ["dispatch", "completion"]
    split_events = [e for e in events if e.get("cat") == "split"]
    assert [e["name"] for e in split_events] == ["data movement", "compute"] * len(rows)
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * len(rec.edges)

    # SVG: parses, one lane per used core (plus the orchestration), a bar per task
    root = ET.parse(dfx_dir(c) / FILES[2]).getroot()
    assert root.tag == f"{SVG}svg"
    lanes = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lane"]
    assert lanes == ["host"] + [f"AIV {i}" for i in sorted({r["core_index"] for r in rows})]
    bars = [g for g in root.iter(f"{SVG}g") if g.get("class") == "task"]
    assert len(bars) == 4
    for g, r in zip(bars, rows):
        assert g.find(f"{SVG}title").text.startswith(f"task {r['task_id']}: {r['kernel']} on AIV "
                                                      f"{r['core_index']}")
        label = g.find(f"{SVG}text")             # short bars carry no label
        assert label is None or r["kernel"].startswith(label.text.rstrip("…"))
    # bar length follows duration (the longest task's bar is the longest)
    widths = [(float(g.find(f"{SVG}rect").get("width")), r["duration_ns"]) for g, r in zip(bars, rows)]
    (w1, d1), (w2, d2) = max(widths, key=lambda x: x[1]), min(widths, key=lambda x: x[1])
    assert w1 >= w2 and w1 > 0
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == KERNELS
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert any(t and t.startswith("time since launch start (") for t in texts)
    assert len([ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "dep"]) == len(rec.edges)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_deps_json_edges(pipelines, runtime):
    c = pipelines[runtime]
    # a worker's own config asks for the dump; every edge is kept, also those to tasks
    # that had finished before the consumer was submitted
    with ChipWorker(RunConfig(enable_dep_gen=True, runtime=runtime)):
        result = run(c, *inputs(2), golden=golden, rtol=1e-4, atol=1e-3)
    assert set(result.dfx_outputs) == {"deps.json"}
    deps = json.loads((dfx_dir(c) / "deps.json").read_text())
    assert deps["runtime"] == runtime and deps["platform"] == "a2a3sim"
    assert [t["kernel"] for t in deps["tasks"]] == KERNELS
    assert [(e["from"], e["to"]) for e in deps["edges"]] == EDGES
    assert [(e["from_kernel"], e["to_kernel"]) for e in deps["edges"]] == [
        ("left", "combine"), ("right", "combine"), ("combine", "scale")]
    assert [t["deps"] for t in deps["tasks"]] == [[], [], [0, 1], [2]]


def test_independent_kernels_overlap_dependent_never(pipelines):
    c = pipelines["tensormap_and_ringbuffer"]
    x, y = inputs(3)
    seen_overlap = False
    with ChipWorker(RunConfig(enable_dep_gen=True)) as w:
        h = w.register(c)
        for _ in range(25):    # overlap is a timing property: allow a loaded machine retries
            o1, o2, out = (torch.zeros(64, 64) for _ in range(3))
            _, rec = h.launch(x, y, o1, o2, out)
            left, right, combine, scale = rec.tasks
            # dependent kernels never overlap, in every launch
            assert combine.start_ns >= max(left.end_ns, right.end_ns)
            assert scale.start_ns >= combine.end_ns
            assert not overlap(left, combine) and not overlap(combine, scale)
            assert sorted(rec.edges) == EDGES
            if overlap(left, right):
                assert left.core_index != right.core_index
                seen_overlap = True
                break
    assert seen_overlap, "left and right never ran at the same time"
    assert torch.allclose(out, golden(x, y, o1, o2, out)["out"], rtol=1e-4, atol=1e-3)


def test_swimlane_level_two_and_validation(pipelines):
    c = pipelines["host_build_graph"]
    result = run(c, *inputs(4), config=RunConfig(enable_chip_swimlane=2, runtime="host_build_graph"))
    rows = json.loads((dfx_dir(c) / FILES[0]).read_text())["records"]
    for r in rows:
        assert r["ready_ns"] <= r["start_ns"] and r["dispatch_wait_ns"] == r["start_ns"] - r["ready_ns"]
    by_id = {r["task_id"]: r for r in rows}
    assert by_id[3]["ready_ns"] >= by_id[2]["end_ns"]        # ready once its producer finished
    assert result.record.dfx_outputs
    with pytest.raises(ValueError, match="enable_chip_swimlane"):
        RunConfig(enable_chip_swimlane=5)
    with pytest.raises(ValueError, match="enable_chip_swimlane"):
        RunConfig(enable_chip_swimlane="yes")
    assert RunConfig(enable_chip_swimlane=True).enable_chip_swimlane is True


# -- hand-written fixtures (no compile) ---------------------------------------------------------
def test_trace_has_a_pid_per_core_type(programs):
    c = programs("cores", [tensor("x", [1, 8, 8]), tensor("y", [6, 8, 8], "Out")])
    with ChipWorker(RunConfig(enable_chip_swimlane=1)) as w:
        c(torch.zeros(1, 8, 8))
        rec = w.last_run
    trace = json.loads((c.output_dir / "dfx_outputs" / FILES[1]).read_text())
    tasks = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "task"]
    assert [e["pid"] for e in tasks] == [1, 1, 1, 2, 2, 2]
    assert [e["tid"] for e in tasks] == [t.core_index for t in rec.tasks]
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert procs == {0: "Host orchestration", 1: "AIC cores", 2: "AIV cores"}
    svg = ET.parse(c.output_dir / "dfx_outputs" / FILES[2]).getroot()
    lanes = [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "lane"]
    assert lanes == ["host"] + sorted({f"{t.core_type.upper()} {t.core_index}" for t in rec.tasks},
                                      key=lambda s: (s[:3], int(s[4:])))


def test_dfx_output_dir_override(programs, tmp_path):
    c = programs("sleep2", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")])
    where = tmp_path / "elsewhere" / "dfx"
    with ChipWorker(RunConfig(enable_chip_swimlane=1, dfx_output_dir=str(where))) as w:
        c(torch.zeros(8, 8))
        assert w.last_run.dfx_outputs == {n: where / n for n in FILES}
    assert sorted(p.name for p in where.iterdir()) == sorted(FILES)
    assert not (c.output_dir / "dfx_outputs").exists()


def test_records_of_a_failed_launch_are_written(programs):
    c = programs("fail", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")])
    with ChipWorker(RunConfig(enable_chip_swimlane=1, enable_dep_gen=True)):
        with pytest.raises(KernelExecutionError):
            c(torch.zeros(8, 8))
    data = json.loads((c.output_dir / "dfx_outputs" / FILES[0]).read_text())
    assert "fail_kernel" in data["metadata"]["error"]
    statuses = {r["kernel"]: r["status"] for r in data["records"]}
    assert statuses["fail_kernel"] != 0 and statuses["sleep_kernel"] == 0
    assert len(data["records"]) == 2                 # the task after the failure never ran
    assert (c.output_dir / "dfx_outputs" / "deps.json").is_file()


def synthetic(n_aic=1, names=("k<0>&", "a_very_long_kernel_name_that_cannot_fit")):
    rec = RunRecord("/x/prog", "a5sim", "host_build_graph", start_ns=1_000, end_ns=51_000,
                    orchestration_start_ns=1_500, orchestration_end_ns=4_000, n_threads=2)
    rec.tasks = [TaskRecord(0, 0, names[0], "aic", 3, 5_000, 25_000, (), 0),
                 TaskRecord(1, 1, names[1], "aiv", 7, 26_000, 26_400, (0,), 1, ready_ns=25_500)]
    rec.edges = [(0, 1)]
    return rec


def test_writers_on_a_synthetic_record():
    rec = synthetic()
    rows = swimlane_records(rec, level=2)
    assert rows["metadata"]["clock_freq_hz"] == 1_000_000_000 and rows["metadata"]["arch"] == "a5"
    assert [(r["start_ns"], r["end_ns"]) for r in rows["records"]] == [(4_000, 24_000), (25_000, 25_400)]
    assert rows["records"][1]["dispatch_wait_ns"] == 500
    assert rows["metadata"]["device_wall_ns"] == 21_400
    # the same tasks in the device runtime's field names: us from the launch start, one core
    # id across the chip (a5: 36 AICs before the AIVs), the consumers each task fed
    dev = rows["tasks"]
    assert rows["chip_swimlane_level"] == 2
    assert [(d["task_id"], d["core_type"], d["core_id"], d["start_time_us"], d["end_time_us"], d["duration_us"])
            for d in dev] == [(0, "aic", 3, 4.0, 24.0, 20.0), (1, "aiv", 36 + 7, 25.0, 25.4, 0.4)]
    assert [(d["fanout"], d["fanout_count"]) for d in dev] == [([1], 1), ([], 0)]
    trace = chrome_trace(rec)
    json.dumps(trace)
    x = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["pid"], e["tid"], e["ts"], e["dur"]) for e in x] == [
        ("dispatch", 0, 1, 0.0, 4.0), ("completion", 0, 1, 25.4, 24.6),
        ("orchestration", 0, 0, 0.5, 2.5), ("k<0>&", 1, 3, 4.0, 20.0),
        (names := "a_very_long_kernel_name_that_cannot_fit", 2, 7, 25.0, 0.4)]
    assert deps_graph(rec)["edges"] == [{"from": 0, "to": 1, "from_kernel": "k<0>&",
                                         "to_kernel": names}]
    svg = swimlane_svg(rec)
    root = ET.fromstring(svg)                        # escaped: still well-formed XML
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lane"] == ["host", "AIC 3", "AIV 7"]
    bars = [g for g in root.iter(f"{SVG}g") if g.get("class") == "task"]
    assert bars[0].find(f"{SVG}text").text == "k<0>&"          # fits in its 20 µs bar
    assert bars[1].find(f"{SVG}text") is None                  # 0.4 µs: no room for a label
    assert "time since launch start (µs)" in texts
    ticks = [float(t.text) for t in root.iter(f"{SVG}text") if t.get("class") == "tick"]
    assert ticks[0] == 0 and ticks == sorted(ticks) and ticks[-1] >= 50
    assert len([ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "dep"]) == 1
