"""Dependencies, concurrency, core slots, per-task records, the two runtime kinds."""
import pytest
import torch

from pypto.runtime import ChipWorker, KernelExecutionError, RunConfig
from pypto.runtime.device import host_threads

from runtime_helpers import scalar, tensor

MS = 1_000_000
SLEEP2 = [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")]
HBG = "host_build_graph"


def overlap(a, b) -> bool:
    return max(a.start_ns, b.start_ns) < min(a.end_ns, b.end_ns)


@pytest.mark.parametrize("runtime", ["tensormap_and_ringbuffer", HBG])
def test_independent_kernels_overlap(programs, runtime):
    assert host_threads() >= 2
    c = programs("sleep2", SLEEP2, runtime=runtime)
    with ChipWorker(RunConfig(runtime=runtime)) as w:
        y1, y2 = c(torch.zeros(8, 8))
        t0, t1 = w.last_run.tasks
    assert t0.deps == () and t1.deps == ()
    assert t0.duration_ns >= 50 * MS and t1.duration_ns >= 50 * MS
    assert overlap(t0, t1)
    assert max(t0.end_ns, t1.end_ns) - min(t0.start_ns, t1.start_ns) < 90 * MS
    assert w.last_run.device_wall_ns < 90 * MS
    assert t0.core_type == t1.core_type == "aiv" and t0.core_index != t1.core_index
    assert torch.all(y1 == 1) and torch.all(y2 == 1)


@pytest.mark.parametrize("runtime", ["tensormap_and_ringbuffer", HBG])
def test_dependent_kernels_never_overlap(programs, runtime):
    c = programs("sleep_chain", [tensor("x", [8, 8]), tensor("y", [8, 8], "Out")], runtime=runtime)
    with ChipWorker(RunConfig(runtime=runtime)) as w:
        y = c(torch.full((8, 8), 3.0))
        t0, t1 = w.last_run.tasks
    assert t1.deps == (0,)
    assert t1.start_ns >= t0.end_ns
    assert torch.all(y == 5)


def test_record_fields(programs):
    c = programs("chain", [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")],
                 runtime=HBG)   # exact edges: TENSORMAP_AND_RINGBUFFER drops edges to finished tasks
    with ChipWorker(RunConfig(enable_dump_args=1, runtime=HBG)) as w:
        a = torch.randn(64, 32)
        out = torch.zeros(64, 32)
        c(a, a, out)
        run = w.last_run
    assert [t.task_id for t in run.tasks] == [0, 1, 2, 3, 4]
    assert all(t.kernel == "add_kernel" and t.func_id == 0 and t.core_type == "aiv" for t in run.tasks)
    assert all(0 <= t.core_index < 48 and t.end_ns >= t.start_ns > 0 for t in run.tasks)
    # tiles of disjoint rows depend only on the producer of tmp, not on each other
    assert [t.deps for t in run.tasks[1:]] == [(0,)] * 4
    assert sorted(run.edges) == [(0, 1), (0, 2), (0, 3), (0, 4)]
    assert all(run.tasks[0].end_ns <= t.start_ns for t in run.tasks[1:])
    # the outer scope holds all five tasks; each loop scope one
    assert run.scopes[0][3:] == (0, 5) and [s[3:] for s in run.scopes[1:]] == [(i, i + 1) for i in range(1, 5)]
    # argument dumps: tile 2 writes rows 16..31 of out
    addr, start, shape, strides, code, direction = run.tasks[2].tensors[2]
    assert addr == out.data_ptr() and start == 16 * 32 and shape == (16, 32) and strides == (32, 1)
    assert direction == 1 and code == 0
    assert run.runtime == HBG and run.platform == "a2a3sim"


def test_hazards_exact_graph(programs):
    """t0: y = x+1; t1: z = y+y; t2: x = z+1; t3: y = x+1 -> RAW, WAR and WAW edges."""
    params = [tensor(n, [16, 16], "InOut") for n in "xyz"]
    c = programs("hazards", params, runtime=HBG, num_return_types=0)
    x, y, z = torch.full((16, 16), 1.0), torch.zeros(16, 16), torch.zeros(16, 16)
    with ChipWorker(RunConfig(runtime=HBG)) as w:
        c(x, y, z)
        tasks = w.last_run.tasks
    assert [t.deps for t in tasks] == [(), (0,), (0, 1), (0, 1, 2)]
    for t in tasks:
        for d in t.deps:
            assert tasks[d].end_ns <= t.start_ns
    assert torch.all(z == 4) and torch.all(x == 5) and torch.all(y == 6)


def test_tensormap_edges_skip_finished_tasks(programs):
    c = programs("chain", [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")])
    with ChipWorker(RunConfig()) as w:
        c(torch.randn(64, 32), torch.randn(64, 32))
        run = w.last_run
    assert all(t.deps in ((), (0,)) for t in run.tasks[1:])
    assert all(run.tasks[0].end_ns <= t.start_ns for t in run.tasks[1:])


def test_hazards_tensormap_ordering(programs):
    params = [tensor(n, [16, 16], "InOut") for n in "xyz"]
    c = programs("hazards", params, num_return_types=0)
    x, y, z = torch.full((16, 16), 1.0), torch.zeros(16, 16), torch.zeros(16, 16)
    with ChipWorker(RunConfig()) as w:
        c(x, y, z)
        tasks = w.last_run.tasks
    for earlier, later in [(0, 1), (1, 2), (0, 2), (2, 3)]:
        assert tasks[earlier].end_ns <= tasks[later].start_ns
    assert torch.all(z == 4) and torch.all(x == 5) and torch.all(y == 6)


def test_tensormap_starts_tasks_while_submitting(programs):
    c = programs("slow_submit", SLEEP2)
    with ChipWorker(RunConfig()) as w:
        c(torch.zeros(8, 8))
        run = w.last_run
    assert run.tasks[0].end_ns < run.orchestration_end_ns
    assert run.tasks[1].start_ns > run.tasks[0].end_ns


def test_host_build_graph_builds_first_then_replays(programs):
    c = programs("slow_submit", SLEEP2, runtime=HBG)
    with ChipWorker(RunConfig(runtime=HBG)) as w:
        handle = w.register(c)
        x = torch.zeros(8, 8)
        handle(x)
        first = w.last_run
        assert first.graph_built and not first.replayed
        assert all(t.start_ns >= first.orchestration_end_ns for t in first.tasks)
        assert w.stats["orchestration_runs"] == 1
        # replay with new data (new addresses, same shapes): no orchestration
        x2 = torch.full((8, 8), 4.0)
        y1, y2 = handle(x2)
        second = w.last_run
        assert second.replayed and not second.graph_built
        assert w.stats["orchestration_runs"] == 1 and w.stats["graph_replays"] == 1
        assert second.orchestration_start_ns == 0
        assert second.device_wall_ns < 90 * MS    # the orchestration's 100 ms sleep is gone
        assert torch.all(y1 == 5) and torch.all(y2 == 5)
        # a different aliasing pattern is a different graph
        shared = torch.zeros(8, 8)
        handle(x2, shared, shared)
        assert w.last_run.graph_built and w.stats["orchestration_runs"] == 2


def test_host_build_graph_intermediates_per_replay(programs):
    c = programs("chain", [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")],
                 runtime=HBG)
    with ChipWorker(RunConfig(runtime=HBG)) as w:
        for i in range(3):
            a, b = torch.randn(64, 32), torch.randn(64, 32)
            torch.testing.assert_close(c(a, b), a + 2 * b)
        assert w.stats["orchestration_runs"] == 1 and w.stats["graph_replays"] == 2


def test_cube_and_vector_slots(programs):
    c = programs("cores", [tensor("x", [1, 8, 8]), tensor("y", [6, 8, 8], "Out")])
    with ChipWorker(RunConfig()) as w:
        y = c(torch.zeros(1, 8, 8))
        tasks = w.last_run.tasks
    assert [t.core_type for t in tasks] == ["aic"] * 3 + ["aiv"] * 3
    assert [t.kernel for t in tasks] == ["sleep_cube"] * 3 + ["sleep_kernel"] * 3
    for t in tasks:
        assert 0 <= t.core_index < (24 if t.core_type == "aic" else 48)
        for u in tasks:
            if u is not t and u.core_type == t.core_type and overlap(t, u):
                assert u.core_index != t.core_index
    assert torch.all(y == 1)


def test_a5_slots(programs):
    c = programs("cores", [tensor("x", [1, 8, 8]), tensor("y", [6, 8, 8], "Out")], platform="a5sim")
    with ChipWorker(RunConfig(platform="a5sim")) as w:
        c(torch.zeros(1, 8, 8))
        assert w._device.slots == {"aic": 36, "aiv": 72}


@pytest.mark.parametrize("runtime", ["tensormap_and_ringbuffer", HBG])
def test_kernel_error_after_in_flight_tasks(programs, runtime):
    c = programs("fail", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")],
                 runtime=runtime)
    y1 = torch.zeros(8, 8)
    with ChipWorker(RunConfig(runtime=runtime)) as w:
        with pytest.raises(KernelExecutionError, match="fail_kernel.*injected failure"):
            c(torch.zeros(8, 8), y1, torch.zeros(8, 8))
        run = w.last_run
    ids = [t.task_id for t in run.tasks]
    assert ids == [0, 1]               # the dependent task 2 never ran
    assert run.tasks[0].status == 0 and run.tasks[1].status == 1
    assert run.tasks[0].duration_ns >= 100 * MS   # the in-flight task finished first
    assert torch.all(y1 == 1)
    assert "fail_kernel" in run.error


def test_no_dep_arguments_are_not_tracked(programs):
    c = programs("nodep", [tensor("x", [8, 8]), tensor("y", [8, 8], "Out"), tensor("z", [8, 8], "Out")],
                 runtime=HBG)
    with ChipWorker(RunConfig(runtime=HBG)) as w:
        c(torch.zeros(8, 8))
        t0, t1 = w.last_run.tasks
    assert t1.deps == () and overlap(t0, t1)


@pytest.mark.parametrize("sync", [1, 0])
def test_sync_start_runs_every_block_of_a_launch_at_once(programs, sync):
    """Four blocks that wait for each other: with sync_start all four run at once and meet;
    without it the pool's threads (fewer than four here) take blocks as they free up, and
    the first ones give up waiting."""
    from pypto.runtime.device import host_threads
    params = [tensor("counter", [1], "InOut", "int32"), tensor("met", [4], "Out", "int32"),
              scalar("sync", "int32")]
    c = programs("rendezvous", params)
    counter, met = torch.zeros(1, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)
    with ChipWorker(RunConfig()) as w:
        c(counter, met, sync)
        (task,) = w.last_run.tasks
    assert len(task.blocks) == 4 and int(counter[0]) == 4
    if sync:
        assert met.tolist() == [1, 1, 1, 1]
    elif host_threads() < 4:
        assert met.tolist() != [1, 1, 1, 1]


from pypto.runtime.abi import CoreGroup  # noqa: E402


class _Kernel:
    """What the scheduler reads of a loaded kernel: its core type and, on a core group,
    its CoreGroup, and the cores a block takes (as LoadedKernel derives them)."""
    def __init__(self, core_type, group=()):
        from pypto.runtime.abi import core_needs
        self.core_type, self.group = core_type, group
        self.needs = core_needs(core_type, group)


class _Task:
    def __init__(self, kernel):
        self.kernel = kernel


@pytest.mark.parametrize("kernel, takes", [
    (_Kernel("aic"), {"aic": 1}),
    (_Kernel("aiv"), {"aiv": 1}),
    (_Kernel("mix", CoreGroup(object(), object(), 1, 2)), {"aic": 1, "aiv": 1}),     # a Group
    (_Kernel("mix", CoreGroup(object(), object(), 2, 2)), {"aic": 1, "aiv": 2}),     # a split Group
    (_Kernel("aiv", CoreGroup(None, object(), 2, 2)), {"aiv": 2}),                   # a split vector kernel
])
def test_a_block_takes_the_cores_of_its_core_group(kernel, takes):
    from pypto.runtime.device import Device
    d = Device("a2a3")
    d._free = {"aic": [0], "aiv": [0, 1, 2]}
    d._ready[kernel.core_type].append((_Task(kernel), 0))
    entry, slot = d._take()
    got = {}
    for t, _ in slot:
        got[t] = got.get(t, 0) + 1
    assert got == takes
    # with one AIV free, a block that needs two waits
    d._free = {"aic": [0], "aiv": [5]}
    d._ready[kernel.core_type].append((_Task(kernel), 1))
    assert (d._take() is None) == (takes.get("aiv", 0) > 1)
