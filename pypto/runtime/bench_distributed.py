"""`pypto.runtime.benchmark` of a HOST-level program (a DistributedCompiledProgram): each
round is one dispatch on a DistributedWorker kept for the whole benchmark; every rank times
each of its launches in its own process (rank_main), so a round's figures are per rank.

    stats = benchmark(compiled, [x, y], rounds=5, warmup=2)
    stats.device_wall_us             # per round: the slowest rank's device time
    stats.per_rank("device")         # {rank: [per round: the rank's launches, summed]}
    stats.per_round("union")         # per round: first launch start .. last end, over ranks

Device time is a launch on its simulated device from start to end (orchestration, kernels
and their scheduling); effective the window of its orchestration and kernels (within it);
host time its span in the rank process. Host clocks are
CLOCK_MONOTONIC, comparable between the rank processes, which is what the union uses.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from .bench import SampleStats

_METRIC = {"device": "device_ns", "effective": "effective_ns"}


def _us(launch: dict, metric: str) -> float:
    if metric == "host":
        return (launch["host"][1] - launch["host"][0]) / 1e3
    return launch[_METRIC[metric]] / 1e3


@dataclass
class DistributedBenchmarkResult(SampleStats):
    program: str
    rounds: int
    warmup: int
    samples: list                  # host wall per round, seconds (the dispatch, seen from here)
    rounds_dispatches: list        # per round: {rank: [its launches' timings]}
    fallback_flattened: bool = False   # (every round is its own dispatch: never flattened)

    def per_rank(self, metric: str = "device") -> dict:
        """{rank: [per round: its launches' `metric` (device / host / effective), summed, us]}."""
        if metric not in ("device", "host", "effective"):
            raise ValueError(f"per_rank(): metric is 'device', 'host' or 'effective', got {metric!r}")
        out: dict = {}
        for k, ranks in enumerate(self.rounds_dispatches):
            for r, launches in sorted(ranks.items()):
                out.setdefault(r, [0.0] * len(self.rounds_dispatches))[k] = sum(_us(x, metric) for x in launches)
        return out

    def per_dispatch(self, metric: str = "device") -> dict:
        """{(rank, launch index): [per round, us]}: each launch on its own."""
        out: dict = {}
        for ranks in self.rounds_dispatches:
            for r, launches in sorted(ranks.items()):
                for i, x in enumerate(launches):
                    out.setdefault((r, i), []).append(_us(x, metric))
        return out

    def per_round(self, metric: str = "device") -> list:
        """Per round (us): the slowest rank's device / host / effective time, or the union
        window of all ranks' launches on the host clock ('union')."""
        if metric == "union":
            return [(max(x["host"][1] for v in ranks.values() for x in v)
                     - min(x["host"][0] for v in ranks.values() for x in v)) / 1e3
                    for ranks in self.rounds_dispatches]
        per = self.per_rank(metric)
        return [max(v[k] for v in per.values()) for k in range(len(self.rounds_dispatches))]

    @property
    def device_wall_us(self) -> list:
        return self.per_round("device")

    @property
    def host_wall_us(self) -> list:
        return self.per_round("host")

    def format_mean_tree(self, *, us: bool = True, pid: int | None = None, slot: int | None = None) -> str:
        """Per launch ((rank, slot): its index in the rank's round), the mean over the
        rounds of its host, device and effective times, with their spread."""
        unit, k = ("us", 1.0) if us else ("ns", 1e3)
        lines = []
        dev, host, eff = (self.per_dispatch(m) for m in ("device", "host", "effective"))
        for (r, i) in sorted(dev):
            if (pid is not None and r != pid) or (slot is not None and i != slot):
                continue
            lines.append(f"pid={r} slot={i}")
            for name, series in (("host", host[(r, i)]), ("device", dev[(r, i)]), ("effective", eff[(r, i)])):
                sd = statistics.stdev(series) * k if len(series) > 1 else 0.0
                lines.append(f"  {name}: {statistics.fmean(series) * k:.1f} {unit} +-{sd:.1f}")
        return "\n".join(lines) if lines else f"no dispatch matches pid={pid} slot={slot}"

    def __str__(self) -> str:
        ranks = len(self.rounds_dispatches[0]) if self.rounds_dispatches else 0
        return (f"{self.program}: {self.rounds} rounds (+{self.warmup} warmup) on {ranks} ranks | dispatch "
                f"median {self.median * 1e3:.3f} ms | device (slowest rank) median {self.device_us_median:.1f} us"
                f" | host union mean {statistics.fmean(self.per_round('union')):.1f} us")


def benchmark_distributed(compiled, args: tuple, rounds: int, warmup: int) -> DistributedBenchmarkResult:
    samples, per_round = [], []
    with compiled.prepare() as rt:
        for _ in range(warmup):
            rt(*args)
        for _ in range(rounds):
            t = time.perf_counter_ns()
            rt(*args)
            samples.append((time.perf_counter_ns() - t) / 1e9)
            per_round.append(rt.last_timings)
    return DistributedBenchmarkResult(compiled.plan["name"], rounds, warmup, samples, per_round)
