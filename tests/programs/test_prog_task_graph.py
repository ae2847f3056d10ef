"""Task graphs written by hand (issue 12.3): pl.manual_scope, task ids from pl.submit and
`with pl.at(...) as tid`, deps=[...] (ids and arrays of ids), pl.system.task_dummy as a
fan-in, `None` as "no task yet". In a manual scope a task waits only for what the
program names plus the edges the compiler derives within one iteration; the recorded
run shows exactly those edges, and the numbers match torch."""
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, RunConfig

from prog_helpers import close, randn

M, N, TR, TC = 2, 3, 16, 32
R, C = M * TR, N * TC


@pl.function(type=pl.FunctionType.InCore)
def double(x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
           row: pl.Scalar[pl.INDEX], col: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
    t = pl.load(x, [row, col], [TR, TC])
    s = pl.store(pl.add(t, t), [row, col], s)
    return s


@pl.function(type=pl.FunctionType.InCore)
def plus_one(s: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             row: pl.Scalar[pl.INDEX], col: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
    t = pl.load(s, [row, col], [TR, TC])
    o = pl.store(pl.add(t, 1.0), [row, col], o)
    return o


@pl.program
class Submitted:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            for i in pl.range(M):
                for j in pl.parallel(N):
                    s, t1 = pl.submit(double, x, s, i * TR, j * TC)
                    o, _ = pl.submit(plus_one, s, o, i * TR, j * TC, deps=[t1])
        return o


@pl.program
class Regions:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            for i in pl.range(M):
                for j in pl.parallel(N):
                    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as t1:
                        t = pl.load(x, [i * TR, j * TC], [TR, TC])
                        s = pl.store(pl.add(t, t), [i * TR, j * TC], s)
                    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", deps=[t1]):
                        u = pl.load(s, [i * TR, j * TC], [TR, TC])
                        o = pl.store(pl.add(u, 1.0), [i * TR, j * TC], o)
        return o


def _run(prog, tmp_path, *args):
    c = ir.compile(prog, output_dir=str(tmp_path / prog.name), platform="a2a3sim")
    # enable_dep_gen: every edge recorded, also to a task done before its consumer was submitted
    with ChipWorker(RunConfig(platform="a2a3sim", enable_dep_gen=True)) as w:
        c(*args)
        return w.last_run.tasks


@pytest.mark.parametrize("prog", [Submitted, Regions], ids=["submit", "pl_at"])
def test_a_manual_scope_waits_for_the_named_tasks_only(tmp_path, prog):
    x = randn(R, C, seed=1)
    s, o = torch.zeros(R, C), torch.zeros(R, C)
    tasks = _run(prog, tmp_path, x, s, o)
    close(o, 2 * x + 1, 0, 0)
    assert len(tasks) == 2 * M * N
    by_id = {t.task_id: t for t in tasks}
    for t in tasks:
        if t.kernel in ("double", "first"):
            assert t.deps == ()                       # tiles of one tensor: no edge in manual scope
        else:
            (d,) = t.deps                             # the stage-one task of its own tile
            assert by_id[d].kernel in ("double", "first") and d == t.task_id - 1


B, STEPS = 3, 2


@pl.function(type=pl.FunctionType.InCore)
def bump(x: pl.Tensor[[B * STEPS * 4 * TR, TC], pl.FP32], row: pl.Scalar[pl.INDEX],
         o: pl.Out[pl.Tensor[[B * STEPS * 4 * TR, TC], pl.FP32]]) -> pl.Tensor[[B * STEPS * 4 * TR, TC], pl.FP32]:
    t = pl.load(x, [row, 0], [TR, TC])
    o = pl.store(pl.add(t, 1.0), [row, 0], o)
    return o


ROWS = B * STEPS * 4 * TR


@pl.program
class PhaseFence:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, TC], pl.FP32],
             o: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(B, pl.TASK_ID)
            for phase, (prev,) in pl.range(STEPS, init_values=(tids,)):
                gate = pl.system.task_dummy(deps=[prev])      # one fan-in per phase
                nxt = pl.array.create(B, pl.TASK_ID)
                for b in pl.parallel(B):
                    o, tid = pl.submit(bump, x, (phase * B + b) * TR, o, deps=[gate])
                    nxt[b] = tid
                tids = pl.yield_(nxt)
            chain = None                                      # no task yet
            for k in pl.range(B):
                o, chain = pl.submit(bump, x, (STEPS * B + k) * TR, o, deps=[chain])
        return o


def test_arrays_of_task_ids_a_dummy_fan_in_and_none(tmp_path):
    x = randn(ROWS, TC, seed=2)
    o = torch.zeros(ROWS, TC)
    tasks = _run(PhaseFence, tmp_path, x, o)
    n = (STEPS + 1) * B
    close(o[:n * TR], x[:n * TR] + 1, 0, 0)
    kinds = [t.kernel for t in sorted(tasks, key=lambda t: t.task_id)]
    assert kinds == (["task_dummy"] + ["bump"] * B) * STEPS + ["bump"] * B
    ids = sorted(t.task_id for t in tasks)
    order = {t.task_id: t for t in tasks}
    gate0, gate1 = ids[0], ids[B + 1]
    assert order[gate0].deps == ()                            # unset ids name no task
    assert set(order[gate1].deps) == set(ids[1:B + 1])        # the fan-in waits for phase 0
    for t in ids[B + 2:2 * B + 2]:
        assert order[t].deps == (gate1,)                      # phase 1 waits for the gate only
    chain = ids[2 * B + 2:]
    bumps = {t for t in ids[:2 * B + 2] if order[t].kernel == "bump"}
    # `None` names no task; the compiler adds what the chain's writes of `o` imply: every
    # bump of the phase loop that has ended (all its tasks, not just the last one)
    assert set(order[chain[0]].deps) == bumps
    assert all(a in order[b].deps for a, b in zip(chain, chain[1:]))
    for t in tasks:                                           # and never started before a dep ended
        assert all(order[d].end_ns <= t.start_ns for d in t.deps)


def test_explicit_deps_add_to_what_an_auto_scope_derives(tmp_path):
    @pl.program
    class Auto:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                 o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            s, t1 = pl.submit(double, x, s, 0, 0)
            o, t2 = pl.submit(double, x, o, 0, TC, deps=[t1])      # no data edge: named one
            o, _ = pl.submit(plus_one, s, o, 0, 0)                  # data edges: derived
            return o

    x = randn(R, C, seed=3)
    tasks = _run(Auto, tmp_path, x, torch.zeros(R, C), torch.zeros(R, C))
    a, b, c = sorted(tasks, key=lambda t: t.task_id)
    assert b.deps == (a.task_id,) and set(c.deps) >= {a.task_id}


def test_deps_must_name_task_ids():
    with pytest.raises(E.TypeCheckError, match=r"deps are task ids"):
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[R, C], pl.FP32],
                     s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
                s, _ = pl.submit(double, x, s, 0, 0, deps=[3])
                return s


def test_submit_names_a_result_per_output_and_the_id():
    with pytest.raises(E.ParserError, match=r"1 result\(s\) and its task id: 2 names, got 1"):
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[R, C], pl.FP32],
                     s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
                (s,) = pl.submit(double, x, s, 0, 0)
                return s


@pl.function(type=pl.FunctionType.InCore)
def fill(o: pl.Out[pl.Tensor[[R, C], pl.FP32]], v: pl.Scalar[pl.FP32]) -> pl.Tensor[[R, C], pl.FP32]:
    o = pl.store(pl.tile.full([R, C], dtype=pl.FP32, value=0.0) + v, [0, 0], o)
    return o


@pl.function(type=pl.FunctionType.InCore)
def set_gate(g: pl.Out[pl.Tensor[[1, 8], pl.INT32]], v: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
    g = pl.tensor.write(g, [0, 3], v)
    return g


@pl.program
class Predicated:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Out[pl.Tensor[[R, C], pl.FP32]], gate: pl.Tensor[[1, 8], pl.INT32],
             flag: pl.Scalar[pl.INT32]) -> pl.Tensor[[R, C], pl.FP32]:
        g = pl.create_tensor([1, 8], dtype=pl.INT32)
        g = set_gate(g, flag)                          # a kernel writes the element read below
        x, t0 = pl.spmd_submit(fill, x, 1.0, core_num=1)
        x, t1 = pl.spmd_submit(fill, x, 5.0, core_num=1, deps=[t0], predicate=(g[0, 3] > 0))
        with pl.spmd(1, deps=[t1], predicate=(gate[0, 0] == 7)):
            x = fill(x, 9.0)
        return x


@pytest.mark.parametrize("flag, gate, want", [(1, 7, 9.0), (0, 7, 9.0), (1, 0, 5.0), (0, 0, 1.0)])
def test_a_predicated_launch_runs_only_if_its_element_holds_at_dispatch(tmp_path, flag, gate, want):
    x, g = torch.zeros(R, C), torch.zeros(1, 8, dtype=torch.int32)
    g[0, 0] = gate
    tasks = _run(Predicated, tmp_path, x, g, flag)
    close(x, torch.full((R, C), want), 0, 0)
    setter, first, second, third = sorted(tasks, key=lambda t: t.task_id)
    assert (first.skipped, second.skipped, third.skipped) == (False, flag == 0, gate != 7)
    assert setter.task_id in second.deps           # the element's writer ran before the read


def test_a_predicate_compares_one_element():
    with pytest.raises(E.ParserError, match=r"predicate= compares one element of a tensor"):
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                     n: pl.Scalar[pl.INT32]) -> pl.Tensor[[R, C], pl.FP32]:
                x, _ = pl.spmd_submit(fill, x, 1.0, core_num=1, predicate=(n > 0))
                return x
