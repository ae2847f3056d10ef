"""`pypto.runtime.benchmark`: time repeated launches of one registered program.

    stats = benchmark(compiled, (a, b, out), rounds=20, warmup=3)
    stats.median, stats.min, stats.mean, stats.samples      # host seconds per launch
    stats.device_wall_median                                 # first kernel start -> last end

The program is registered once; `warmup` launches are run and discarded, then `rounds`
launches are timed one by one with perf_counter around the handle call (dispatch,
orchestration, kernels, completion). Device wall comes from each launch's RunRecord.
DFX outputs asked for by `config` are not produced by the timed launches (writing them
would be timed too); one extra, untimed launch writes them afterwards.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import RunConfig
from .harness import default_config, resolve_program, worker_for
from .records import RunRecord


class SampleStats:
    """What both results say of their samples (host wall per launch or round, seconds) and
    of their device time per launch or round (device_wall_us, microseconds)."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0

    @property
    def all_zero_device(self) -> bool:
        return not any(self.device_wall_us)

    @property
    def device_us_min(self) -> float:
        return min(self.device_wall_us)

    @property
    def device_us_max(self) -> float:
        return max(self.device_wall_us)

    @property
    def device_us_median(self) -> float:
        return statistics.median(self.device_wall_us)


@dataclass
class BenchmarkResult(SampleStats):
    program: str
    rounds: int
    warmup: int
    samples: list                  # host wall per launch, seconds
    device_wall: list              # device wall per launch, seconds
    orchestration: list            # orchestration time per launch, seconds (0 on graph replay)
    n_tasks: int
    n_threads: int
    runtime: str
    platform: str
    last_record: RunRecord | None = None
    dfx_outputs: dict = field(default_factory=dict)

    # device wall per launch
    @property
    def device_wall_median(self) -> float:
        return statistics.median(self.device_wall)

    @property
    def device_wall_min(self) -> float:
        return min(self.device_wall)

    @property
    def device_wall_mean(self) -> float:
        return statistics.fmean(self.device_wall)

    # the reference's names: device wall per launch in microseconds
    @property
    def device_wall_us(self) -> list:
        return [w * 1e6 for w in self.device_wall]

    @property
    def orchestration_median(self) -> float:
        return statistics.median(self.orchestration)

    def as_dict(self) -> dict:
        return {"program": self.program, "rounds": self.rounds, "warmup": self.warmup,
                "median_s": self.median, "min_s": self.min, "mean_s": self.mean,
                "max_s": self.max, "stdev_s": self.stdev, "samples_s": list(self.samples),
                "device_wall_median_s": self.device_wall_median,
                "device_wall_min_s": self.device_wall_min,
                "device_wall_mean_s": self.device_wall_mean,
                "device_wall_s": list(self.device_wall),
                "orchestration_median_s": self.orchestration_median,
                "n_tasks": self.n_tasks, "n_threads": self.n_threads,
                "runtime": self.runtime, "platform": self.platform}

    def __str__(self) -> str:
        ms = 1e3
        return (f"{Path(self.program).name}: {self.rounds} rounds (+{self.warmup} warmup), "
                f"{self.n_tasks} tasks, {self.n_threads} threads | launch median "
                f"{self.median * ms:.3f} ms, min {self.min * ms:.3f}, mean {self.mean * ms:.3f} | "
                f"device wall median {self.device_wall_median * ms:.3f} ms")


_DFX_OFF = {"enable_chip_swimlane": 0, "enable_dep_gen": False, "enable_dump_args": 0}


def benchmark(compiled, args=(), rounds: int = 20, warmup: int = 3,
              config: RunConfig | None = None, worker=None):
    """Register `compiled` once, launch it `warmup` + `rounds` times with `args` and
    return per-launch statistics. `compiled` may also be a @pl.jit function (compiled
    for `args`) or an output directory. Runs on `worker`, else the current
    `with ChipWorker(...)`, else the process's shared worker with `config`."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ValueError(f"rounds must be a positive int, got {rounds!r}")
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args must be a tuple or list of the program's arguments, "
                        f"got {type(args).__name__}")
    args = tuple(args)
    if type(compiled).__name__ == "DistributedCompiledProgram":    # a HOST-level program: per rank
        if config is not None or worker is not None:
            raise ValueError("benchmark of a distributed program runs on its own DistributedWorker: the devices "
                             "are fixed when it is compiled (no config= or worker=)")
        from .bench_distributed import benchmark_distributed
        return benchmark_distributed(compiled, args, rounds, warmup)
    program = resolve_program(compiled, args, config)
    cfg = default_config(program, config)
    w = worker_for(worker, cfg)
    handle = w.register(program)
    base = w.config if config is None else cfg
    from . import dfx
    want_dfx = dfx.wanted(base)
    timed_cfg = base.replace(**_DFX_OFF) if want_dfx else (None if config is None else cfg)
    for _ in range(warmup):
        handle.launch(*args, config=timed_cfg)
    samples, device, orch = [], [], []
    record = None
    clock = time.perf_counter_ns
    for _ in range(rounds):
        t = clock()
        _, record = handle.launch(*args, config=timed_cfg)
        samples.append((clock() - t) / 1e9)
        device.append(record.device_wall_ns / 1e9)
        orch.append((record.orchestration_end_ns - record.orchestration_start_ns) / 1e9)
    written = {}
    if want_dfx:
        _, last = handle.launch(*args, config=base)
        written = dict(last.dfx_outputs)
    return BenchmarkResult(str(program.output_dir), rounds, warmup, samples, device, orch,
                           len(record.tasks), record.n_threads, record.runtime, record.platform,
                           record, written)
