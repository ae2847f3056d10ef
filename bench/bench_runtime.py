"""Simulator runtime benchmarks (pypto.runtime).

1. Dispatch overhead: launches of a registered handle of the quickstart add
   (one [128, 128] fp32 kernel) versus the same add in torch eager.
2. Scheduling: 16 dependent kernels (each reads what the previous one wrote) versus 16
   independent ones (all read x), for a small kernel and a larger one. The independent
   program can use as many cores as the device has host threads, so its speed-up over
   the chain is bounded by that thread count.

    .venv/bin/python bench/bench_runtime.py [--rounds N] [--quick]

Programs are compiled into a temporary directory with a private artifact store.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N_KERNELS = 16
T = "pl.Tensor[[64, 64], pl.FP32]"

QUICKSTART = '''
import pypto.language as pl

@pl.program
class Quickstart:
    @pl.function
    def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
            out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out
'''


def sixteen(name: str, loops: int, chain: bool) -> str:
    """`work` (one InCore kernel: dst = src / 2 + loops * exp(-|src|), reloading src every
    iteration) submitted 16 times: y_i = work(y_{i-1}) for the chain, y_i = work(x) for
    the independent program."""
    params = ", ".join([f"x: {T}"] + [f"y{i}: pl.Out[{T}]" for i in range(N_KERNELS)])
    calls = "\n".join(f"        y{i} = self.work({'x' if not chain or i == 0 else f'y{i - 1}'}, y{i})"
                      for i in range(N_KERNELS))
    return f'''
import pypto.language as pl

@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.InCore)
    def work(self, src: {T}, dst: pl.Out[{T}]) -> {T}:
        t0 = pl.load(src, [0, 0], [64, 64])
        acc = pl.muls(t0, 0.5)
        for i, (a_in,) in pl.range({loops}, init_values=(acc,)):
            t = pl.load(src, [0, 0], [64, 64])
            a_out = pl.yield_(pl.add(a_in, pl.exp(pl.neg(pl.abs(t)))))
        dst = pl.store(a_out, [0, 0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, {params}) -> {T}:
{calls}
        return y{N_KERNELS - 1}
'''


def work_ref(src, loops):
    return src * 0.5 + loops * (-src.abs()).exp()


def compile_text(text: str, out: Path):
    import pypto.language as pl
    from pypto import ir
    return ir.compile(pl.parse(text, filename="bench_runtime_gen.py"), output_dir=out,
                      platform="a2a3sim", dump_passes=False)


def eager_median(fn, rounds: int, inner: int = 20) -> float:
    """Median seconds per call of fn, over `rounds` batches of `inner` calls."""
    fn()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - t) / inner / 1e9)
    return statistics.median(samples)


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:10.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50, help="timed launches per case")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="fewer rounds, small kernels only")
    args = ap.parse_args(argv)
    rounds = 10 if args.quick else args.rounds

    import torch
    from pypto.runtime import ChipWorker, RunConfig, benchmark
    from pypto.runtime.device import host_threads

    tmp = Path(tempfile.mkdtemp(prefix="bench_runtime_"))
    os.environ["PYPTO_CACHE_DIR"] = str(tmp / "store")
    os.environ["PYPTO_PROG_BUILD_DIR"] = str(tmp / "builds")

    sizes = [("small", 4)] if args.quick else [("small", 4), ("large", 256)]
    t = time.perf_counter()
    quick = compile_text(QUICKSTART, tmp / "quickstart")
    progs = {}
    for label, loops in sizes:
        for chain in (True, False):
            name = f"{'Chain' if chain else 'Indep'}{label.title()}"
            progs[(label, chain)] = compile_text(sixteen(name, loops, chain), tmp / name)
    compile_s = time.perf_counter() - t

    g = torch.Generator().manual_seed(0)
    rows = []
    with ChipWorker(RunConfig(platform="a2a3sim")) as worker:
        threads = worker._device.n_threads
        # -- 1. dispatch overhead --------------------------------------------------------
        a, b = torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g)
        out = torch.zeros(128, 128)
        stats = benchmark(quick, (a, b, out), rounds=max(rounds * 4, 40), warmup=args.warmup)
        assert torch.equal(out, a + b)
        eager = eager_median(lambda: torch.add(a, b, out=out), max(rounds, 20))
        dispatch = stats.median - stats.device_wall_median

        # -- 2. chain vs independent -------------------------------------------------------
        # The two programs of a size are launched alternately, round by round, so both
        # see the same machine load.
        x = torch.randn(64, 64, generator=g)
        results = {}
        for label, loops in sizes:
            cases = {}
            for chain in (True, False):
                ys = [torch.zeros(64, 64) for _ in range(N_KERNELS)]
                cases[chain] = (worker.register(progs[(label, chain)]), (x, *ys), [], [], [])
            for r in range(args.warmup + rounds):
                for chain, (handle, call, launch, wall, conc) in cases.items():
                    t = time.perf_counter_ns()
                    _, rec = handle.launch(*call)
                    if r >= args.warmup:
                        launch.append((time.perf_counter_ns() - t) / 1e9)
                        wall.append(rec.device_wall_ns / 1e9)
                        # kernel time / device wall: 1 = one kernel at a time
                        conc.append(sum(t.duration_ns for t in rec.tasks) / rec.device_wall_ns)
            for chain, (handle, call, launch, wall, conc) in cases.items():
                ys = call[1:]
                want = work_ref(x, loops)
                for i in range(N_KERNELS):
                    if chain and i:
                        want = work_ref(ys[i - 1], loops)
                    torch.testing.assert_close(ys[i], want, rtol=1e-4, atol=1e-4)
                med = statistics.median
                results[(label, chain)] = (med(launch), med(wall))
                rows.append((f"{'chain' if chain else 'independent'} x16 ({label}, {loops} loops)",
                             med(launch), med(wall), med(wall) / N_KERNELS, med(conc)))

    print(f"pypto.runtime benchmarks — a2a3sim, {threads} device threads "
          f"(host_threads() = {host_threads()}, os.cpu_count() = {os.cpu_count()}), "
          f"{rounds} rounds, medians; compile {compile_s:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f}")
    print()
    print("1. Dispatch overhead: quickstart add [128, 128] fp32, registered handle vs torch eager")
    print(f"{'case':<44}{'per call (us)':>14}")
    print(f"{'torch.add(a, b, out=out) eager':<44}{fmt_us(eager):>14}")
    print(f"{'handle(a, b, out): launch, host wall':<44}{fmt_us(stats.median):>14}")
    print(f"{'  of which device wall (kernel)':<44}{fmt_us(stats.device_wall_median):>14}")
    print(f"{'  of which orchestration':<44}{fmt_us(stats.orchestration_median):>14}")
    print(f"{'  dispatch overhead (launch - device wall)':<44}{fmt_us(dispatch):>14}")
    print(f"{'ratio launch / torch eager':<44}{stats.median / eager:>13.1f}x")
    print()
    print(f"2. {N_KERNELS} dependent kernels (chain) vs {N_KERNELS} independent ones")
    print("   (launched alternately; concurrency = summed kernel time / device wall)")
    print(f"{'case':<40}{'launch (us)':>13}{'device wall':>13}{'wall/kernel':>12}{'concurrency':>13}")
    for name, launch, wall, per, conc in rows:
        print(f"{name:<40}{fmt_us(launch):>13}{fmt_us(wall):>13}{fmt_us(per):>12}{conc:>12.2f}x")
    print()
    for label, loops in sizes:
        (cl, cw), (il, iw) = results[(label, True)], results[(label, False)]
        print(f"speed-up independent over chain ({label}): launch {cl / il:.2f}x, "
              f"device wall {cw / iw:.2f}x (bound: {threads} device threads on "
              f"{os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
