"""One line per finished task (stage, name, ran or cached, seconds) and a summary at
the end: the progress display of `doit` on the command line and of `ir.compile`
when PYPTO_PROGRESS=1."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.t0 = time.perf_counter()
        self.counts = {"ran": 0, "cached": 0, "failed": 0}

    def line(self, stage: str, name: str, status: str, seconds: float,
             worker: str = "local") -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        where = "" if worker == "local" else f"  on {worker}"   # built on a Dask worker
        self.out.write(f"{status:6s} {stage:13s} {seconds:8.3f}s  {name}{where}\n")
        self.out.flush()

    def record(self, rec) -> None:
        self.line(rec.stage, rec.name, rec.status, rec.seconds, getattr(rec, "worker", "local"))

    def served_whole(self, n: int) -> None:
        """A compile served whole from the store: n tasks cached, one line for all."""
        self.counts["cached"] += n
        self.out.write(f"cached all {n} tasks (the whole compile was in the store)\n")
        self.out.flush()

    def summary(self) -> None:
        c = self.counts
        self.out.write(f"-- {c['ran']} ran, {c['cached']} cached"
                       + (f", {c['failed']} failed" if c["failed"] else "")
                       + f", {time.perf_counter() - self.t0:.2f}s\n")
        self.out.flush()


def doit_reporter(ctx, stages: dict):
    """A doit reporter class printing Progress lines for the steps of `ctx` (a
    pipeline.run.BuildContext shared by the dodo's tasks); `stages` maps step names
    to stages and is filled as phases are created."""

    class Reporter:
        desc = "pypto progress: one line per task, and a summary"

        def __init__(self, outstream, options):
            self.p = Progress(outstream)

        def initialize(self, tasks, selected_tasks):
            pass

        def get_status(self, task):
            pass

        def execute_task(self, task):
            self.started = time.perf_counter()

        def add_success(self, task):
            rec = ctx.done.pop(task.name, None)
            if rec is not None:
                self.p.record(rec)
            elif task.actions and task.name not in stages:
                self.p.line(task.name.split(":", 1)[0], task.name, "ran",
                            time.perf_counter() - getattr(self, "started", time.perf_counter()))

        def skip_uptodate(self, task):
            if task.name in stages or task.actions:
                self.p.line(stages.get(task.name, task.name.split(":", 1)[0]), task.name, "cached", 0.0)

        skip_ignore = skip_uptodate

        def add_failure(self, task, fail):
            self.p.line(stages.get(task.name, "-"), task.name, "failed", 0.0)
            self.p.out.write(fail.get_msg() + "\n")

        def cleanup_error(self, exception):
            self.p.out.write(str(exception) + "\n")

        def runtime_error(self, msg):
            self.p.out.write(msg + "\n")

        def teardown_task(self, task):
            pass

        def complete_run(self):
            self.p.summary()

    return Reporter
