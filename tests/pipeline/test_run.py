"""The in-process runner: caching, early cutoff, errors, parallelism, sharing."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pipeline_toys as T
from pypto_pipeline import Ref, Step, StepFailed, run_steps, step_key
from pypto_pipeline.graph import GraphError


def run(toy, steps, db="db", **kw):
    return run_steps(steps, store=toy.store, db_path=toy.db(db) if db else None, **kw)


def test_cold_then_warm_in_fresh_db(toy):
    steps = T.chain(toy.src("# hi\nprog\n"), targets_dir=toy.dir / "out")
    cold = run(toy, steps, db="a")
    assert [r.name for r in cold.records] == [s.name for s in steps]
    assert set(T.statuses(cold).values()) == {"ran"}
    assert toy.calls() == {"strip_comments:fe": 1, "upper:up": 1, "suffix:sx": 1, "sleepy:k": 1}
    so = toy.dir / "out" / "main.so"
    assert so.read_bytes() == b"so:PROG\n"
    assert so.stat().st_mode & stat.S_IXUSR
    assert toy.store.get_bytes(cold.digests["kernel:main"]["so"]) == b"so:PROG\n"

    so.unlink()  # a fresh build dir too
    warm = run(toy, steps, db="b")
    assert set(T.statuses(warm).values()) == {"cached"}
    assert all(r.seconds > 0 for r in warm.records)  # the actions ran: store hits
    assert warm.digests == cold.digests
    assert sum(toy.calls().values()) == 4  # nothing recomputed
    assert so.read_bytes() == b"so:PROG\n"


def test_noop_in_same_db_is_skipped_by_doit(toy):
    steps = T.chain(toy.src("prog\n"), targets_dir=toy.dir / "out")
    first = run(toy, steps)
    hits = toy.store.stats()["hits"]
    again = run(toy, steps)
    assert set(T.statuses(again).values()) == {"cached"}
    assert all(r.seconds == 0.0 for r in again.records)  # doit never called the action
    assert toy.store.stats()["hits"] == hits  # nor asked the store
    assert again.digests == first.digests
    assert sum(toy.calls().values()) == 4


def test_a_target_edited_in_place_is_caught_and_rebuilt(toy):
    """An artifact is a read-only hard link to its store object; one written in place
    anyway (root ignores the mode) damages the object too. The next run finds the
    object damaged, drops it and rebuilds that step: the edit is never a result."""
    steps = T.chain(toy.src("prog\n"), targets_dir=toy.dir / "out")
    run(toy, steps)
    so = toy.dir / "out" / "main.so"
    assert stat.S_IMODE(so.stat().st_mode) & 0o222 == 0
    os.chmod(so, 0o644)            # what root can do without asking
    so.write_bytes(b"edited in place")
    again = run(toy, steps)
    assert T.statuses(again)["kernel:main"] == "ran"
    assert so.read_bytes() == b"so:PROG\n"


def test_steps_without_targets_are_skipped_too(toy):
    steps = T.chain(toy.src("prog\n"))
    run(toy, steps)
    again = run(toy, steps)
    assert all(r.status == "cached" and r.seconds == 0.0 for r in again.records)


def test_missing_target_is_rematerialized_without_recomputing(toy):
    steps = T.chain(toy.src("prog\n"), targets_dir=toy.dir / "out")
    run(toy, steps)
    so = toy.dir / "out" / "main.so"
    so.unlink()                    # replaced by hand, as an editor saves a read-only file
    so.write_bytes(b"edited by hand")
    (toy.dir / "out" / "main.fe.txt").unlink()
    again = run(toy, steps)
    assert T.statuses(again) == {"frontend:main": "cached", "pass:main:01_upper": "cached",
                                 "pass:main:02_suffix": "cached", "kernel:main": "cached"}
    assert so.read_bytes() == b"so:PROG\n"
    assert (toy.dir / "out" / "main.fe.txt").read_text() == "prog\n"
    assert sum(toy.calls().values()) == 4


def test_early_cutoff_on_comment_only_edit(toy):
    run(toy, T.chain(toy.src("# v1\nprog\n")))
    res = run(toy, T.chain(toy.src("# v2, reworded\nprog\n")))
    assert T.statuses(res) == {"frontend:main": "ran", "pass:main:01_upper": "cached",
                               "pass:main:02_suffix": "cached", "kernel:main": "cached"}
    assert [r.seconds for r in res.records[1:]] == [0.0, 0.0, 0.0]  # doit skipped them
    assert toy.calls() == {"strip_comments:fe": 2, "upper:up": 1, "suffix:sx": 1, "sleepy:k": 1}


def test_real_edit_reruns_the_chain(toy):
    run(toy, T.chain(toy.src("prog\n")))
    res = run(toy, T.chain(toy.src("prog2\n")))
    assert set(T.statuses(res).values()) == {"ran"}


def test_impl_edit_reruns_that_step_and_what_changes_downstream(toy):
    src = toy.src("prog\n")
    base = run(toy, T.chain(src))
    # New impl digest, same behaviour: the step re-runs, its output is unchanged,
    # so nothing downstream does (early cutoff).
    res = run(toy, T.chain(src, impl_upper="impl-u2"))
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "ran",
                               "pass:main:02_suffix": "cached", "kernel:main": "cached"}
    assert res.digests == base.digests
    # New code that changes the output: that step and everything after it.
    res = run(toy, T.chain(src, impl_upper="impl-u3", fn_upper=T.upper_v2))
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "ran",
                               "pass:main:02_suffix": "ran", "kernel:main": "ran"}
    assert toy.calls()["strip_comments:fe"] == 1
    # Going back is all cache hits (fresh db: no doit history to skip with).
    res = run(toy, T.chain(src), db="other")
    assert set(T.statuses(res).values()) == {"cached"}
    assert res.digests == base.digests


def test_options_only_affect_steps_that_read_them(toy):
    src = toy.src("prog\n")
    run(toy, T.chain(src, sfx=""))
    res = run(toy, T.chain(src, sfx="-O3"))
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "cached",
                               "pass:main:02_suffix": "ran", "kernel:main": "ran"}
    assert toy.calls()["upper:up"] == 1


def test_key_is_name_independent_so_identical_kernels_share_work(toy):
    src = toy.src("same kernel\n")
    a = Step("kernel:prog_a:k", "kernel", T.sleepy, "impl-k", {"seconds": 0}, {"text": src}, ("so",))
    b = Step("kernel:prog_b:k", "kernel", T.sleepy, "impl-k", {"seconds": 0}, {"text": src}, ("so",))
    res = run(toy, [a, b])
    assert T.statuses(res) == {"kernel:prog_a:k": "ran", "kernel:prog_b:k": "cached"}
    assert toy.calls()["sleepy:"] == 1
    assert step_key(a, {"text": src.output}) == step_key(b, {"text": src.output})


def test_key_changes_with_every_field():
    s = Step("x", "pass", T.upper, "i", {"a": 1}, {"text": Ref(None, "0" * 32)}, ("text",))
    base = step_key(s, {"text": "0" * 32})
    variants = [
        Step("x", "frontend", T.upper, "i", {"a": 1}, s.inputs, ("text",)),
        Step("x", "pass", T.upper_v2, "i", {"a": 1}, s.inputs, ("text",)),
        Step("x", "pass", T.upper, "j", {"a": 1}, s.inputs, ("text",)),
        Step("x", "pass", T.upper, "i", {"a": 2}, s.inputs, ("text",)),
        Step("x", "pass", T.upper, "i", {"a": 1}, s.inputs, ("text", "more")),
    ]
    keys = {step_key(v, {"text": "0" * 32}) for v in variants}
    keys |= {step_key(s, {"text": "1" * 32}), step_key(s, {"other": "0" * 32})}
    assert base not in keys and len(keys) == 7
    # option order does not matter, the step name does not matter
    s2 = Step("y", "pass", T.upper, "i", {"a": 1}, s.inputs, ("text",))
    assert step_key(s2, {"text": "0" * 32}) == base


def test_stage_exception_is_reraised_unchanged_and_nothing_stored(toy):
    src = toy.src("prog\n")
    steps = T.chain(src, targets_dir=toy.dir / "out")[:2] + [
        Step("pass:main:02_boom", "pass", T.boom, "impl-b", {}, {"text": Ref("pass:main:01_upper", "text")},
             ("text",), targets={"text": str(toy.dir / "out" / "boom.txt")}),
    ]
    before = toy.store.stats()
    with pytest.raises(T.ToyCompileError) as info:
        run(toy, steps)
    assert str(info.value) == "prog.py:3: tile row must be a multiple of 32 bytes"
    assert type(info.value) is T.ToyCompileError
    assert any(tb.name == "boom" for tb in info.traceback)  # the stage's own frames
    after = toy.store.stats()
    assert after["actions"] - before["actions"] == 2  # the two steps that succeeded
    assert not (toy.dir / "out" / "boom.txt").exists()
    # and again: the good steps are not redone, the bad one fails the same way
    with pytest.raises(T.ToyCompileError):
        run(toy, steps)
    assert toy.calls() == {"strip_comments:fe": 1, "upper:up": 1, "boom:": 2}


def test_first_failure_wins_and_parallel_failures_do_not_hang(toy):
    src = toy.src("x\n")
    steps = [Step(f"pass:b{i}", "pass", T.boom, "impl-b", {"tag": str(i)}, {"text": src}, ("text",))
             for i in range(3)]
    with pytest.raises(T.ToyCompileError):
        run(toy, steps, jobs=2)


def test_contract_violation_is_step_failed(toy):
    step = Step("pass:w", "pass", T.wrong_outputs, "i", {}, {"text": toy.src("x")}, ("text",))
    with pytest.raises(StepFailed, match=r"returned outputs \['nope'\], expected \['text'\]"):
        run(toy, [step])
    assert toy.store.stats()["actions"] == 0


def test_missing_literal_blob_is_step_failed(toy):
    step = Step("pass:m", "pass", T.upper, "i", {}, {"text": Ref(None, "ab" * 16)}, ("text",))
    with pytest.raises(StepFailed, match="missing or damaged.*literal blob"):
        run(toy, [step])


def test_invalid_graphs_are_rejected_before_running(toy):
    src = toy.src("x")
    good = Step("pass:a", "pass", T.upper, "i", {}, {"text": src}, ("text",))
    with pytest.raises(GraphError, match="unknown step"):
        run(toy, [Step("pass:b", "pass", T.upper, "i", {}, {"text": Ref("pass:zz", "text")}, ("text",))])
    with pytest.raises(GraphError, match="does not declare"):
        run(toy, [good, Step("pass:b", "pass", T.upper, "i", {}, {"text": Ref("pass:a", "so")}, ("text",))])
    with pytest.raises(GraphError, match="cycle"):
        run(toy, [Step("pass:a", "pass", T.upper, "i", {}, {"text": Ref("pass:b", "text")}, ("text",)),
                  Step("pass:b", "pass", T.upper, "i", {}, {"text": Ref("pass:a", "text")}, ("text",))])
    with pytest.raises(GraphError, match="legal doit task name"):
        run(toy, [Step("pass a", "pass", T.upper, "i", {}, {"text": src}, ("text",))])
    with pytest.raises(GraphError, match="unknown stage"):
        run(toy, [Step("pass:a", "linker", T.upper, "i", {}, {"text": src}, ("text",))])
    with pytest.raises(GraphError, match="plain JSON"):
        run(toy, [Step("pass:a", "pass", T.upper, "i", {"x": object()}, {"text": src}, ("text",))])
    with pytest.raises(GraphError, match="module-level"):
        run(toy, [Step("pass:a", "pass", lambda i, o: i, "i", {}, {"text": src}, ("text",))])
    with pytest.raises(GraphError, match="two steps"):
        run(toy, [good, good])


def test_steps_are_ordered_by_dependencies(toy):
    steps = T.chain(toy.src("prog\n"))
    res = run(toy, list(reversed(steps)))
    assert [r.name for r in res.records] == [s.name for s in steps]


def _overlaps(records):
    spans = sorted((r.started, r.finished) for r in records)
    return sum(1 for (s0, e0), (s1, e1) in zip(spans, spans[1:]) if s1 < e0)


def test_jobs_run_independent_steps_in_parallel(toy):
    src = toy.src("k\n")

    def kernels(tag):
        return [Step(f"kernel:{tag}{i}", "kernel", T.sleepy, "impl-k", {"tag": f"{tag}{i}", "seconds": 0.2},
                     {"text": src}, ("so",)) for i in range(4)]
    serial = run(toy, kernels("s"), db=None, jobs=1)
    assert _overlaps(serial.records) == 0
    par = run(toy, kernels("p"), db=None, jobs=2)
    assert set(T.statuses(par).values()) == {"ran"}
    assert _overlaps(par.records) >= 2  # pairs of kernels ran at the same time
    assert all(r.finished - r.started >= 0.2 for r in par.records)


def test_progress_is_called_once_per_task_in_completion_order(toy):
    seen = []
    steps = T.chain(toy.src("prog\n"))
    res = run(toy, steps, progress=seen.append)
    assert seen == res.records and len(seen) == 4
    seen.clear()
    run(toy, steps, progress=seen.append)
    assert [r.status for r in seen] == ["cached"] * 4


def test_verbosity_zero_prints_nothing(toy, capfd):
    run(toy, T.chain(toy.src("prog\n")))
    run(toy, T.chain(toy.src("prog\n")))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_verbosity_one_prints_a_line_per_task(toy, capfd):
    run(toy, T.chain(toy.src("prog\n")), verbosity=1)
    out, _ = capfd.readouterr()
    assert len(out.splitlines()) == 4 and "kernel:main" in out


def test_corrupted_object_in_store_is_rebuilt(toy):
    src = toy.src("prog\n")
    first = run(toy, T.chain(src), db="a")
    digest = first.digests["pass:main:01_upper"]["text"]
    obj = toy.store.root / "v2" / "objects" / digest[:1] / digest
    assert obj.is_file()
    obj.write_bytes(b"PROG BUT BITROTTEN\n")

    # Fresh db: the action cache entry no longer verifies, so the step runs again.
    res = run(toy, T.chain(src), db="b")
    assert T.statuses(res)["pass:main:01_upper"] == "ran"
    assert T.statuses(res)["pass:main:02_suffix"] == "cached"
    assert toy.store.get_bytes(digest) == b"PROG\n"

    # Same db, and a downstream step must read the damaged object: the build
    # notices, rebuilds the producer and carries on.
    obj.write_bytes(b"PROG BUT BITROTTEN\n")
    res = run(toy, T.chain(src, sfx="!"), db="a")
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "ran",
                               "pass:main:02_suffix": "ran", "kernel:main": "ran"}
    assert toy.store.get_bytes(res.digests["pass:main:02_suffix"]["text"]) == b"PROG\n!"


def test_evicted_output_makes_doit_rerun_the_step(toy):
    src = toy.src("prog\n")
    first = run(toy, T.chain(src))
    digest = first.digests["kernel:main"]["so"]
    (toy.store.root / "v2" / "objects" / digest[:1] / digest).unlink()
    res = run(toy, T.chain(src))
    assert T.statuses(res)["kernel:main"] == "ran"
    assert toy.store.has(digest)


def test_nested_build_inside_a_stage(toy):
    src = toy.src("inner text\n")
    for jobs in (1, 2):
        steps = [Step(f"pass:outer{i}", "pass", T.nested_build, "impl-n",
                      {"store": str(toy.store.root), "tag": f"{jobs}.{i}", "jobs": jobs},
                      {"text": src}, ("text",)) for i in range(3)]
        res = run(toy, steps, db=f"n{jobs}", jobs=jobs)
        for i in range(3):
            assert toy.store.get_bytes(res.digests[f"pass:outer{i}"]["text"]) == b"INNER TEXT\n"
    assert toy.calls()["upper:inner"] == 1


def test_two_processes_share_one_store_and_do_each_step_once(tmp_path):
    store = tmp_path / "store"
    log = tmp_path / "calls.log"
    env = dict(os.environ, PIPELINE_TOY_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]), str(Path(__file__).parent)]))
    start_at = time.time() + 1.5  # both past their imports, then go together
    procs = [subprocess.Popen([sys.executable, str(Path(T.__file__)), str(store),
                               str(tmp_path / f"db{i}.sqlite"), str(tmp_path / f"out{i}.json"),
                               str(start_at)], env=env)
             for i in range(2)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    outs = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]
    assert outs[0]["digests"] == outs[1]["digests"]
    calls = log.read_text().split()
    assert sorted(calls) == sorted(["strip_comments:fe", "upper:up", "join:j"] +
                                   [f"sleepy:k{i}" for i in range(4)]), calls
    statuses = [outs[0]["status"][n] for n in outs[0]["status"]] + \
               [outs[1]["status"][n] for n in outs[1]["status"]]
    assert statuses.count("ran") == 7 and statuses.count("cached") == 7


def test_doit_error_around_the_run_is_step_failed_with_its_text(toy):
    bad_db = toy.dir / "not-a-db.sqlite"
    bad_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StepFailed, match=r"rc 3\)[\s\S]*corrupted"):
        run(toy, T.chain(toy.src("prog\n")), db="not-a-db")
    assert toy.calls() == {}


def test_serve_hits_builds_only_the_misses_in_doit(toy):
    """In a new build dir (fresh db), hits are served before doit: same digests,
    same targets, nothing recomputed; an edit runs exactly what it changes."""
    src = toy.src("prog\n")
    cold = run(toy, T.chain(src, targets_dir=toy.dir / "a"), db="a")
    hits = toy.store.stats()["hits"]
    warm = run(toy, T.chain(src, targets_dir=toy.dir / "b"), db="b", serve_hits=True)
    assert warm.digests == cold.digests
    assert set(T.statuses(warm).values()) == {"cached"}
    assert toy.store.stats()["hits"] == hits + 4          # one lookup per step
    assert (toy.dir / "b" / "main.so").read_bytes() == b"so:PROG\n"
    assert (toy.dir / "b" / "main.so").stat().st_mode & stat.S_IXUSR
    assert not os.path.exists(toy.db("b"))                 # doit was never started
    res = run(toy, T.chain(src, sfx="?", targets_dir=toy.dir / "c"), db="c", serve_hits=True)
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "cached",
                               "pass:main:02_suffix": "ran", "kernel:main": "ran"}
    assert (toy.dir / "c" / "main.so").read_bytes() == b"so:PROG\n?"
    assert toy.calls() == {"strip_comments:fe": 1, "upper:up": 1, "suffix:sx": 2, "sleepy:k": 2}


def test_serve_hits_rebuilds_a_damaged_object_when_a_step_reads_it(toy):
    src = toy.src("prog\n")
    first = run(toy, T.chain(src), db="a")
    digest = first.digests["pass:main:01_upper"]["text"]
    obj = toy.store.root / "v2" / "objects" / digest[:1] / digest
    obj.write_bytes(b"ROT\n")
    # nothing reads it: served as found (whoever reads it later checks its bytes)
    res = run(toy, T.chain(src), db="b", serve_hits=True)
    assert set(T.statuses(res).values()) == {"cached"}
    # the suffix step must read it: the run notices, rebuilds it and carries on
    res = run(toy, T.chain(src, sfx="!"), db="c", serve_hits=True)
    assert T.statuses(res) == {"frontend:main": "cached", "pass:main:01_upper": "ran",
                               "pass:main:02_suffix": "ran", "kernel:main": "ran"}
    assert toy.store.get_bytes(digest) == b"PROG\n"
    assert toy.store.get_bytes(res.digests["pass:main:02_suffix"]["text"]) == b"PROG\n!"


def test_our_runs_do_not_look_up_doit_plugins(toy, monkeypatch):
    # a build must not depend on which doit plugins are installed (nor pay for the scan)
    import pypto_pipeline.run as R

    def scan(group):
        raise AssertionError(f"scanned entry points of {group}")
    monkeypatch.setattr(R, "_entry_points_of", scan)
    res = run(toy, T.chain(toy.src("prog\n"), targets_dir=toy.dir / "out"), db=None)
    assert set(T.statuses(res).values()) == {"ran"}
    with pytest.raises(AssertionError, match="scanned"):   # other doit runs still scan
        R._cached_entry_points(group="doit.COMMAND")


def test_a_stage_that_changes_its_options_changes_a_copy(toy):
    step = Step("greedy:a", "pass", T.greedy, "impl-g", {"items": [1], "n": 2.5},
                {"src": toy.src("x\n")}, ("out",))
    first = run(toy, [step], db=None)
    assert step.options == {"items": [1], "n": 2.5}
    again = run(toy, [Step("greedy:a", "pass", T.greedy, "impl-g2", {"items": [1], "n": 2.5},
                           {"src": toy.src("x\n")}, ("out",))], db=None)
    # each run saw the options as laid out, whatever the one before did to its copy
    assert toy.store.get_bytes(first.digests["greedy:a"]["out"]) == \
        toy.store.get_bytes(again.digests["greedy:a"]["out"])
