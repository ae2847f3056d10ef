"""What a run leaves behind: one record per task, and a summary per run.

These are the raw material of the DFX outputs (swimlane, dependency dumps, timing).
"""
from __future__ import annotations

from typing import NamedTuple
from dataclasses import dataclass, field


class TaskRecord(NamedTuple):
    """One task's run (immutable; a NamedTuple: made on every launch, so made cheaply)."""
    task_id: int
    func_id: int
    kernel: str
    core_type: str          # "aic" | "aiv"
    core_index: int         # slot within its core type
    start_ns: int           # time.perf_counter_ns() around the kernel call
    end_ns: int
    deps: tuple             # task ids this task waited for
    thread: int             # index of the pool thread that ran it
    scope: int = 0
    status: int = 0
    tensors: tuple = ()     # (addr, start_offset, shape, strides, dtype code, direction)
    scalars: tuple = ()
    ready_ns: int = 0       # when its last producer finished (it entered the ready queue)
    blocks: tuple = ()      # an SPMD task's blocks: (start_ns, end_ns) each, in block order
    skipped: bool = False   # its predicate was false when it was dispatched: it did not run
    move_ns: int = 0        # of its kernel time, moving data (tile loads/stores/moves; summed
                            # over blocks and halves); measured when a swimlane is asked for

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class RunRecord:
    program: str
    platform: str
    runtime: str
    tasks: list = field(default_factory=list)        # TaskRecord, by task id
    edges: list = field(default_factory=list)        # (producer, consumer)
    scopes: list = field(default_factory=list)       # (scope id, parent, manual, first task, end task)
    start_ns: int = 0
    end_ns: int = 0
    orchestration_start_ns: int = 0
    orchestration_end_ns: int = 0
    graph_built: bool = False        # HOST_BUILD_GRAPH: the orchestration ran this launch
    replayed: bool = False           # a cached graph was executed (no orchestration ran)
    n_threads: int = 0
    error: str | None = None
    dfx_outputs: dict = field(default_factory=dict)   # name -> path of files written for it
    arg_dumps: list | None = None    # enable_dump_args: the captured arguments (arg_dump.py)
    call_ns: int = 0                 # when the caller called (before its arguments were bound)
    measure_moves: bool = False      # TaskRecord.move_ns measured (a swimlane was asked for)

    @property
    def device_wall_ns(self) -> int:
        done = [t for t in self.tasks if t.end_ns]
        if not done:
            return 0
        return max(t.end_ns for t in done) - min(t.start_ns for t in done)
