"""Delayed creation (kernels appear only after outlining), in-process and via a dodo."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline_toys as T
from pypto_pipeline import run_phased

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_two_phases_in_process(toy):
    out = toy.dir / "out"
    first, then = T.two_phase(toy.store, toy.src(T.PROGRAM), str(out))
    res = run_phased(first, then, store=toy.store, db_path=toy.db())
    names = [r.name for r in res.records]
    assert names[:2] == ["frontend:prog", "pass:prog:outline"]
    assert set(names[2:]) == {"pto:add", "kernel:add", "pto:mul", "kernel:mul", "orchestration:prog"}
    assert names[-1] == "orchestration:prog"
    assert set(T.statuses(res).values()) == {"ran"}
    assert (out / "add.so").read_bytes() == b"so:A + B\n"
    assert (out / "prog.orch.txt").read_text() == "setup\ncall add\ncall mul\nteardown\nso:A + B\nso:A * B\n"

    # no-op: both phases skipped by doit
    res = run_phased(first, then, store=toy.store, db_path=toy.db())
    assert len(res.records) == 7 and all(r.seconds == 0.0 for r in res.records)

    # edit one kernel: only its chain, the outliner and the orchestration run
    first, then = T.two_phase(toy.store, toy.src(T.PROGRAM.replace("a * b", "a * b * c")), str(out))
    res = run_phased(first, then, store=toy.store, db_path=toy.db())
    assert T.statuses(res) == {
        "frontend:prog": "ran", "pass:prog:outline": "ran", "pto:add": "cached",
        "kernel:add": "cached", "pto:mul": "ran", "kernel:mul": "ran", "orchestration:prog": "ran"}
    assert toy.calls()["upper:pto.add"] == 1 and toy.calls()["upper:pto.mul"] == 2


DODO = """\
import sys
sys.path[:0] = {paths!r}
from pypto_cache import Store
from pypto_pipeline.dodo_support import creators, dodo_config
import pipeline_toys as T

STORE = Store({store!r})
SRC = T.Ref(None, STORE.put_bytes(open("prog.txt", "rb").read()))
FIRST, THEN = T.two_phase(STORE, SRC, "out")
DOIT_CONFIG = dodo_config(verbosity=0)
globals().update(creators(FIRST, THEN, STORE, name="build"))
"""


@pytest.fixture
def dodo(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "prog.txt").write_text(T.PROGRAM)
    (d / "dodo.py").write_text(DODO.format(paths=[str(ROOT), str(HERE)],
                                           store=str(tmp_path / "store")))
    log = tmp_path / "calls.log"
    env = dict(os.environ, PIPELINE_TOY_LOG=str(log))

    def doit(*args, ok=True):
        # run from elsewhere: -f makes doit chdir to the dodo's directory
        p = subprocess.run([sys.executable, "-m", "doit", "-f", str(d / "dodo.py"), *args],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        if ok:
            assert p.returncode == 0, p.stdout + p.stderr
        return p

    def calls():
        return log.read_text().split() if log.exists() else []
    return d, doit, calls


def test_dodo_list_shows_grouped_steps_with_docs(dodo):
    d, doit, calls = dodo
    out = doit("list").stdout
    lines = {ln.split()[0]: ln for ln in out.splitlines()}
    assert {"build", "frontend", "pass"} <= set(lines)
    assert "pass:prog:outline" not in lines  # sub-tasks only with --all
    everything = doit("list", "--all").stdout
    assert "pass:prog:outline" in everything and "outline kernels" in everything
    assert "kernel:add" not in everything  # phase 2 unknown before phase 1 ran
    assert calls() == []


def test_dodo_builds_one_target_path_and_only_what_it_needs(dodo):
    d, doit, calls = dodo
    doit("out/prog.fe.txt")
    assert (d / "out" / "prog.fe.txt").read_text() == "setup\nKERNEL add: a + b\nKERNEL mul: a * b\nteardown\n"
    assert calls() == ["strip_comments:fe"]
    assert not (d / "out" / "add.so").exists()


def test_dodo_full_build_creates_delayed_tasks_then_noop(dodo):
    d, doit, calls = dodo
    p = doit()
    assert sorted(calls()) == sorted(["strip_comments:fe", "outline:ol", "upper:pto.add", "upper:pto.mul",
                                      "sleepy:k.add", "sleepy:k.mul", "join:orch"])
    assert (d / "out" / "mul.so").read_bytes() == b"so:A * B\n"
    assert os.access(d / "out" / "mul.so", os.X_OK)
    assert (d / "out" / "prog.orch.txt").exists()
    p = doit()  # no-op: everything up to date, nothing called
    assert len(calls()) == 7
    # now the kernels are known to `doit list`
    everything = doit("list", "--all").stdout
    assert "kernel:mul" in everything and "build kernel mul" in everything
    # a delayed task's target path selects just that task
    (d / "out" / "add.so").unlink()
    doit("out/add.so")
    assert (d / "out" / "add.so").read_bytes() == b"so:A + B\n"
    assert len(calls()) == 7  # restored from the store, not rebuilt
    # phase 1 by group name; phase 2 through its group (doit cannot select a
    # delayed sub-task by name before its creator ran)
    assert "-- frontend:prog" in doit("-v", "2", "build").stdout
    out = doit("-v", "2", "build_delayed").stdout
    assert "-- kernel:mul" in out and "-- orchestration:prog" in out
    assert len(calls()) == 7
    # clean removes targets
    doit("clean")
    assert not (d / "out" / "add.so").exists()


def test_dodo_stage_error_reports_the_original_error(dodo):
    d, doit, calls = dodo
    (d / "dodo.py").write_text((d / "dodo.py").read_text().replace(
        'FIRST, THEN = T.two_phase(STORE, SRC, "out")',
        'FIRST, THEN = T.two_phase(STORE, SRC, "out")\n'
        'FIRST[1] = T.Step("pass:prog:outline", "pass", T.boom, "b", {}, FIRST[1].inputs, FIRST[1].outputs)'))
    p = doit(ok=False)
    assert p.returncode == 1 or p.returncode == 2
    assert "ToyCompileError" in p.stdout + p.stderr
    assert "prog.py:3: tile row must be a multiple of 32 bytes" in p.stdout + p.stderr


def test_dodo_parallel_threads(dodo):
    d, doit, calls = dodo
    doit("-n", "2")
    assert len(calls()) == 7
    doit("-n", "2")
    assert len(calls()) == 7


def test_engine_imports_neither_torch_nor_pypto():
    code = ("import sys; sys.path.insert(0, %r); import pypto_pipeline, pipeline.dodo_support; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'pypto')]; "
            "assert not bad, bad" % str(ROOT))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
