"""Issue 3: incremental rebuilds of the 8-kernel program, seen through report/tasks.json.

Every compile here runs in a fresh process against a copy of a store that already holds
the unedited program (the session's seed), into a new output directory. Tasks are
selected by stage and by kernel-name token, never by exact task name."""
import subprocess
import sys
import textwrap

import pytest

from pypto.runtime import CompiledProgram

from graph_helpers import (KERNELS, artifacts, by_stage, child_env, compile_in_subprocess,
                           import_file, kernel_of, pass_index, pass_order, ran, run_and_check,
                           tasks, write_program)

BACK = ("pto", "ptoas", "kernel")
EDIT = {"k3": "pl.sub(ta, tb)"}          # was pl.maximum(ta, tb): one token, same line


def _changed_lines(before: str, after: str) -> list[int]:
    b, a = before.splitlines(), after.splitlines()
    assert len(a) == len(b)
    return [i for i, (x, y) in enumerate(zip(b, a)) if x != y]


def test_cold_compile_runs_every_task_and_matches_torch(seed8):
    recs = tasks(seed8.out)
    assert recs and {r["status"] for r in recs} == {"ran"}
    for stage in BACK:
        assert sorted(kernel_of(r) for r in by_stage(recs, stage)) == KERNELS, stage
    assert len(by_stage(recs, "orchestration")) == 1
    run_and_check(CompiledProgram.from_dir(seed8.out), 8)


def test_one_kernel_edit_rebuilds_only_that_kernel(seed8, tmp_path):
    store = seed8.store_copy(tmp_path / "store")
    prog = tmp_path / "prog.py"
    prog.write_text(seed8.prog.read_text())

    # unedited, fresh process, new dir, same store: nothing after the frontend runs
    compile_in_subprocess(prog, tmp_path / "warm", store)
    warm = tasks(tmp_path / "warm")
    assert not ran(by_stage(warm, "pass", *BACK, "orchestration", "config")), ran(warm)
    assert artifacts(tmp_path / "warm") == artifacts(seed8.out)

    before = prog.read_text()
    write_program(prog, 8, ops=EDIT)
    changed = _changed_lines(before, prog.read_text())
    assert len(changed) == 1 and "pl.sub(ta, tb)" in prog.read_text().splitlines()[changed[0]]

    compile_in_subprocess(prog, tmp_path / "edit", store)
    recs = tasks(tmp_path / "edit")
    for stage in BACK:                    # still one task per kernel and stage
        assert sorted(kernel_of(r) for r in by_stage(recs, stage)) == KERNELS, stage
    assert sorted((r["stage"], kernel_of(r)) for r in ran(by_stage(recs, *BACK))) == \
        [("kernel", "k3"), ("pto", "k3"), ("ptoas", "k3")]
    orch = by_stage(recs, "orchestration")
    assert orch and {r["status"] for r in orch} == {"cached"}, orch
    # function-local passes over the other kernels' own functions stay cached too
    others = [r["name"] for r in ran(by_stage(recs, "pass")) if kernel_of(r) not in (None, "k3")]
    assert not others, others

    new, old = artifacts(tmp_path / "edit"), artifacts(seed8.out)
    for k in KERNELS:
        for rel in (f"ptoas/{k}.pto", f"ptoas/{k}.cpp", f"kernels/aiv/{k}.so"):
            assert (new[rel] == old[rel]) == (k != "k3"), rel
    assert new["orchestration/main.cpp"] == old["orchestration/main.cpp"]
    run_and_check(CompiledProgram.from_dir(tmp_path / "edit"), 8, ops=EDIT)


@pytest.mark.parametrize("dead", ["tb", "ta"])
def test_dead_statement_is_cut_off_by_simplify(seed8, tmp_path, dead):
    """k7 is `pl.abs(tb)`; `unused = pl.exp(tb)` appended to it is dead, and so is
    `unused = pl.exp(ta)` together with the load of `ta` it alone reads."""
    store = seed8.store_copy(tmp_path / "store")
    prog = write_program(tmp_path / "prog.py", 8, dead_in_last=dead)
    edited = prog.read_text().splitlines()
    original = seed8.prog.read_text().splitlines()
    at = edited.index(f"            unused = pl.exp({dead})")
    assert edited[:at] == original[:at] and edited[at + 1:] == original[at:]
    assert edited[at + 1].strip().startswith("return")     # the region is the last one

    compile_in_subprocess(prog, tmp_path / "out", store)
    recs = tasks(tmp_path / "out")
    order = pass_order()
    simplify = order.index("Simplify")
    assert [r for r in by_stage(recs, "frontend") if r["status"] == "ran"], \
        "the edit did not reach the frontend: the test would prove nothing"
    passes = by_stage(recs, "pass")
    assert all(pass_index(r, order) is not None for r in passes), passes
    late = [r for r in passes if pass_index(r, order) > simplify]
    assert late
    assert not ran(late), ran(late)
    assert not ran(by_stage(recs, *BACK, "orchestration", "config")), ran(recs)

    # every artifact from Simplify's dump on is byte-identical to the unedited build
    def kept(arts):
        return {k: v for k, v in arts.items()
                if not (k.startswith("passes_dump/") and int(k.split("/")[1][:2]) <= simplify)}
    assert kept(artifacts(tmp_path / "out")) == kept(artifacts(seed8.out))


def _after_simplify(path):
    from pypto.ir.printer import print_program
    from pypto.passes import pipeline, run_pass
    from pypto.passes.base import PassOptions
    prog = import_file(path).PROGRAM
    for p in pipeline(PassOptions()):
        prog = run_pass(p, prog, PassOptions())
        if p.name == "Simplify":
            return print_program(prog)
    raise AssertionError("no Simplify pass in the pipeline")


def test_dead_chain_is_cut_off_by_simplify(tmp_path):
    """k7 loads `ta` but only uses `tb`: `unused = pl.exp(ta)` makes that load dead only
    once `unused` itself is dropped (Simplify must iterate to a fixed point even when
    the removal is inside a pl.at region). Checked on the pass pipeline (cheap); the
    build graph keys every later task on exactly this text."""
    clean = write_program(tmp_path / "a" / "prog.py", 8)
    dirty = write_program(tmp_path / "b" / "prog.py", 8, dead_in_last="ta")
    assert _after_simplify(dirty) == _after_simplify(clean)


JIT_SOURCE = textwrap.dedent('''
    import sys
    import pypto.language as pl
    from pypto.runtime import RunConfig


    @pl.jit
    def jmul(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [64, 64])
            tb = pl.load(b, [0, 0], [64, 64])
            pl.store(pl.mul(ta, tb), [0, 0], out)
        return out


    if __name__ == "__main__":
        jmul.compile(config=RunConfig(platform="a2a3sim", save_kernels_dir=sys.argv[1]))
''')


def _run_jit(script, out, store):
    proc = subprocess.run([sys.executable, str(script), str(out)], env=child_env(store),
                          capture_output=True, text=True, timeout=300, cwd=str(script.parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_comment_edit_in_jit_source_runs_only_specialize(tmp_path):
    store = tmp_path / "store"
    script = tmp_path / "jit_prog.py"
    script.write_text(JIT_SOURCE)
    _run_jit(script, tmp_path / "first", store)
    first = tasks(tmp_path / "first")
    assert by_stage(first, "specialize") and {r["status"] for r in first} == {"ran"}

    line = "        tb = pl.load(b, [0, 0], [64, 64])"
    src = script.read_text()
    assert src.count(line + "\n") == 1
    script.write_text(src.replace(line + "\n", line + "  # note\n"))
    _run_jit(script, tmp_path / "second", store)
    recs = tasks(tmp_path / "second")
    spec = by_stage(recs, "specialize")
    assert spec and {r["status"] for r in spec} == {"ran"}, spec
    rest = [r for r in recs if r["stage"] != "specialize"]
    assert rest and not ran(rest), ran(rest)
    assert artifacts(tmp_path / "second") == artifacts(tmp_path / "first")


def test_a_compile_served_whole_into_its_own_directory_writes_nothing_again(iso):
    """The same program into the same directory: the files that already hold their
    artifact are left as they are (same inode, same mtime); one that was changed
    meanwhile is put back."""
    import os
    from pypto import ir
    prog = import_file(write_program(iso / "prog.py", 2)).PROGRAM
    out = iso / "out"
    ir.compile(prog, output_dir=str(out), platform="a2a3sim")
    ref = artifacts(out)
    files = [out / rel for rel in ref]
    edited = out / "ptoas" / "k1.cpp"
    edited.unlink()                            # an editor saving the read-only file
    edited.write_text("// edited by hand\n")
    before = {p: (os.stat(p).st_ino, os.stat(p).st_mtime_ns) for p in files}
    ir.compile(prog, output_dir=str(out), platform="a2a3sim")
    assert artifacts(out) == ref
    after = {p: (os.stat(p).st_ino, os.stat(p).st_mtime_ns) for p in files}
    changed = {p.relative_to(out).as_posix() for p in files if after[p] != before[p]}
    assert changed == {"ptoas/k1.cpp"}, changed
