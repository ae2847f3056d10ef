"""Running one launch: the orchestration, then (or meanwhile) the kernels.

TENSORMAP_AND_RINGBUFFER: tasks are scheduled as the orchestration submits them, and
start as soon as their producers are done, while the orchestration is still running.
HOST_BUILD_GRAPH: the orchestration runs to completion into a Graph first; the graph
is then executed, and can be executed again for arguments with the same binding key
without re-running the orchestration.

TENSORMAP_AND_RINGBUFFER replays too (the orchestration is most of a small launch): an
orchestration depends only on the binding key (shapes, dtypes, aliasing, scalars) unless
it reads tensor data, so the second launch with a key records its tasks with exact
dependencies (also those on tasks already done at submit) into a Graph, and later
launches with that key run the Graph instead of the orchestration. One that read data,
or failed, is not replayed.
"""
from __future__ import annotations

import ctypes
import time
from collections import OrderedDict

from .config import HOST_BUILD_GRAPH, TENSORMAP_AND_RINGBUFFER
from .device import Device, Launch
from .errors import OrchestrationError
from .orchestration import Graph, Recorder, run_orchestration
from .records import RunRecord
from .tensors import Binding

GRAPH_CACHE_SIZE = 16


def _orchestration_error(chip, status: int, recorder: Recorder, exc: BaseException | None):
    name = chip.orchestration.name
    if exc is not None:
        return OrchestrationError(f"orchestration '{name}' raised {type(exc).__name__}: {exc}")
    if recorder.error is not None:
        return OrchestrationError(f"orchestration '{name}': {recorder.error}")
    if status != 0:
        return OrchestrationError(f"orchestration '{name}' returned status {status}")
    return None


def execute(device: Device, chip, binding: Binding, runtime: str, record: RunRecord,
            graphs: "OrderedDict | None" = None, keep_tensors: bool = False,
            exact_deps: bool = False) -> RunRecord:
    """Run the program once. Raises KernelExecutionError / OrchestrationError after all
    in-flight kernels have finished; the record is filled in either way.

    exact_deps (TENSORMAP_AND_RINGBUFFER): keep finished tasks in the TensorMap so the
    record holds every edge, also those to tasks done before the consumer's submit."""
    device.start()
    record.n_threads = device.n_threads
    record.start_ns = time.perf_counter_ns()
    try:
        if runtime == TENSORMAP_AND_RINGBUFFER:
            # graphs[key]: None = run once, False = not replayable, else its Graph
            graph = graphs.get(binding.key, False) if graphs is not None else False
            if graph:
                graphs.move_to_end(binding.key)
                record.replayed = True
                run_graph(device, chip, graph, binding, record, keep_tensors)
            else:
                # seen once before with this key: record the Graph this time
                recording = graph is None
                graph = _run_tensormap(device, chip, binding, record, keep_tensors, exact_deps,
                                       recording)
                if recording:
                    _keep(graphs, binding.key, graph or False)
                elif graphs is not None and binding.key not in graphs:
                    _keep(graphs, binding.key, None)
        elif runtime == HOST_BUILD_GRAPH:
            _run_host_graph(device, chip, binding, record, graphs, keep_tensors)
        else:
            raise ValueError(f"unknown runtime {runtime!r}")
    finally:
        record.end_ns = time.perf_counter_ns()
    return record


def _keep(graphs: OrderedDict, key, graph) -> None:
    graphs[key] = graph
    graphs.move_to_end(key)
    while len(graphs) > GRAPH_CACHE_SIZE:
        graphs.popitem(last=False)


def _run_tensormap(device, chip, binding, record, keep_tensors, exact_deps=False,
                   recording=False) -> "Graph | None":
    """Run the orchestration, tasks starting as they are submitted; with `recording`,
    also return the Graph of its tasks with exact deps (None if it is not replayable)."""
    launch = Launch(device, chip, binding.buffers, binding.addrs, record, keep_tensors)
    on_task, graph = launch.submit, None
    if recording:
        graph = Graph(binding.key, list(binding.buffers), len(binding.buffers))

        def on_task(spec):
            graph.tasks.append(spec)
            if not exact_deps:    # this launch records only the edges that constrain it
                spec = spec._replace(deps=tuple(d for d in spec.deps if launch.alive(d)))
            launch.submit(spec)
    recorder = Recorder(chip, binding.buffers, on_task=on_task, on_alloc=launch.alloc,
                        alive=None if exact_deps or recording else launch.alive,
                        on_read=launch.read)
    status, exc = 0, None
    record.orchestration_start_ns = time.perf_counter_ns()
    try:
        status = run_orchestration(recorder, binding.scalars)
    except BaseException as e:   # e.g. KeyboardInterrupt while submitting
        exc = e
    finally:
        record.orchestration_end_ns = time.perf_counter_ns()
        error = _orchestration_error(chip, status, recorder, exc)
        if error is not None:
            launch.fail_locked(error)
        launch.end_submitting()
        launch.wait()
    record.scopes = [tuple(s) for s in recorder.scope_log]
    if exc is None and recorder.interrupt is not None:
        exc = recorder.interrupt
    if exc is not None and not isinstance(exc, Exception):
        raise exc
    if launch.error is not None:
        raise launch.error
    if graph is None or recorder.reads > 0:
        return None
    graph.buffers = list(recorder.buffers)
    graph.scopes = list(record.scopes)
    return graph


def build_graph(chip, binding: Binding) -> Graph:
    """Run the orchestration into a Graph, executing nothing."""
    graph = Graph(binding.key, list(binding.buffers), len(binding.buffers))

    def read(buffer: int, offset: int, nbytes: int, writers) -> bytes:
        # the graph is built before any kernel runs: only the caller's data is there
        if writers:
            raise ValueError("the orchestration reads an element a kernel writes, but with "
                             "runtime host_build_graph the whole graph is built before any "
                             "kernel runs; use runtime tensormap_and_ringbuffer")
        if buffer >= graph.n_external:
            raise ValueError("the orchestration reads a tensor it created before any kernel "
                             "wrote it")
        return ctypes.string_at(binding.addrs[buffer] + offset, nbytes)

    recorder = Recorder(chip, binding.buffers, on_task=graph.tasks.append, on_read=read)
    status, exc = 0, None
    start = time.perf_counter_ns()
    try:
        status = run_orchestration(recorder, binding.scalars)
    except Exception as e:
        exc = e
    graph.build_ns = time.perf_counter_ns() - start
    if recorder.interrupt is not None:
        raise recorder.interrupt
    error = _orchestration_error(chip, status, recorder, exc)
    if error is not None:
        raise error
    graph.buffers = list(recorder.buffers)
    graph.scopes = [tuple(s) for s in recorder.scope_log]
    graph.reads_data = recorder.reads > 0
    return graph


def _run_host_graph(device, chip, binding, record, graphs, keep_tensors):
    graph = graphs.get(binding.key) if graphs is not None else None
    if graph is None:
        record.orchestration_start_ns = time.perf_counter_ns()
        graph = build_graph(chip, binding)
        record.orchestration_end_ns = time.perf_counter_ns()
        record.graph_built = True
        # a graph shaped by the values the orchestration read is not replayed
        if graphs is not None and not graph.reads_data:
            graphs[binding.key] = graph
            while len(graphs) > GRAPH_CACHE_SIZE:
                graphs.popitem(last=False)
    else:
        graphs.move_to_end(binding.key)
        record.replayed = True
    run_graph(device, chip, graph, binding, record, keep_tensors)


def run_graph(device: Device, chip, graph: Graph, binding: Binding, record: RunRecord,
              keep_tensors: bool = False) -> None:
    if binding.key != graph.key:
        raise ValueError("these arguments do not match the ones the graph was recorded for "
                         "(shapes, dtypes, aliasing or scalar values differ)")
    device.start()
    launch = Launch(device, chip, binding.buffers, binding.addrs, record, keep_tensors)
    for slot in range(graph.n_external, len(graph.buffers)):
        launch.alloc(slot, graph.buffers[slot])
    record.scopes = list(graph.scopes)
    try:
        launch.run_graph(graph)
    finally:
        launch.end_submitting()
        launch.wait()
    if launch.error is not None:
        raise launch.error
