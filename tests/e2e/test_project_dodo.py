"""A user's own dodo.py of two lines (pypto_pipeline.project.dodo_globals) puts their
programs' graphs into doit: list, run, one target, info, clean, forget; the same keys as
`pypto build`, so both share one store."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cli import JIT, TWO_KERNELS

DODO = textwrap.dedent('''
    from pypto_pipeline.project import dodo_globals
    globals().update(dodo_globals("kernels/*.py", output="build", platform="a2a3sim"))
''')


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "pair.py").write_text(TWO_KERNELS)
    (tmp_path / "kernels" / "jitted.py").write_text(JIT)
    (tmp_path / "dodo.py").write_text(DODO)
    return tmp_path


def _env(proj: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYPTO_CACHE_DISABLE", "PYTHONPATH")}
    env["PYPTO_CACHE_DIR"] = str(proj / "store")
    return env


def doit(proj: Path, *args):
    return subprocess.run([sys.executable, "-m", "doit", *args], cwd=proj, env=_env(proj),
                          capture_output=True, text=True, timeout=300)


def progress(stdout: str) -> dict[str, str]:
    """task name -> ran/cached, from the progress lines."""
    return {ln.split()[-1]: ln.split()[0] for ln in stdout.splitlines()
            if ln.split()[:1] in (["ran"], ["cached"])}


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] != "report"}


def test_user_dodo_list_build_and_same_keys_as_pypto_build(proj):
    r = doit(proj, "list")
    assert r.returncode == 0, r.stderr
    listed = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]
    assert listed == ["build", "build:Pair", "build:scale_exp"], r.stdout
    assert "needs_a_sample" in r.stderr and "not fully annotated" in r.stderr   # as pypto build

    r = doit(proj, "-n", "2")                       # default task: build, every program
    assert r.returncode == 0, r.stdout + r.stderr
    ran = progress(r.stdout)
    assert ran and set(ran.values()) == {"ran"}
    # step names carry the program's name (a @pl.jit entry's is _jit_<function>)
    assert {n.split(":")[1] for n in ran} == {"Pair", "_jit_scale_exp"}
    assert any(n.startswith("kernel:Pair:") for n in ran)

    # `pypto build` into another folder, same store: every task is a store hit
    r = subprocess.run([sys.executable, "-m", "pypto", "build", "kernels/pair.py",
                        "kernels/jitted.py", "-o", "again", "-q"], cwd=proj, env=_env(proj),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for prog, name in (("Pair", "Pair"), ("scale_exp", "_jit_scale_exp")):
        rows = json.loads((proj / "again" / prog / "report" / "tasks.json").read_text())
        assert {t["name"] for t in rows} == {n for n in ran if n.split(":")[1] == name}
        assert {t["status"] for t in rows} == {"cached"}
        ours, theirs = files(proj / "build" / prog), files(proj / "again" / prog)
        assert ours == {k: v for k, v in theirs.items() if not k.endswith(".log")}

    r = doit(proj, "-n", "2")                       # nothing to do
    assert r.returncode == 0 and set(progress(r.stdout).values()) == {"cached"}, r.stdout

    r = doit(proj, "list", "--all")                 # every step, once the phases ran
    assert "pto:Pair:left" in r.stdout and "kernel:_jit_scale_exp:" in r.stdout

    r = doit(proj, "info", "kernel:Pair:left")
    assert r.returncode == 0 and "up-to-date" in r.stdout, r.stdout + r.stderr

    r = doit(proj, "clean", "build:Pair")          # its steps' targets; the store keeps them
    assert r.returncode == 0, r.stderr
    assert not (proj / "build" / "Pair" / "ptoas" / "left.pto").exists()
    assert (proj / "build" / "scale_exp" / "kernel_config.py").exists()
    r = doit(proj, "forget")
    assert r.returncode == 0, r.stderr
    r = doit(proj)
    assert r.returncode == 0, r.stderr
    assert set(progress(r.stdout).values()) == {"cached"}     # all from the store
    assert (proj / "build" / "Pair" / "ptoas" / "left.pto").is_file()


def test_one_target_runs_only_its_chain(proj):
    """A kernel's .pto: each earlier phase of that program only what the next is laid out
    from, then the .pto's own task; nothing of the other program."""
    r = doit(proj, "build/Pair/ptoas/left.pto")
    assert r.returncode == 0, r.stdout + r.stderr
    ran = progress(r.stdout)
    assert (proj / "build" / "Pair" / "ptoas" / "left.pto").is_file()
    assert not (proj / "build" / "Pair" / "ptoas" / "right.pto").exists()
    assert not (proj / "build" / "scale_exp").exists()
    assert {n.split(":")[1] for n in ran} == {"Pair"}
    assert {n.split(":")[0] for n in ran} == {"frontend", "pass", "layout", "pto"}
    assert [n for n in ran if n.startswith("pto:")] == ["pto:Pair:left"]
    # exactly what `pypto build --target` runs for it
    r = subprocess.run([sys.executable, "-m", "pypto", "build", "kernels/pair.py", "-o", "cli",
                        "-q", "--target", "cli/Pair/ptoas/left.pto"], cwd=proj,
                       env=dict(_env(proj), PYPTO_CACHE_DIR=str(proj / "cli-store")),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads((proj / "cli" / "Pair" / "report" / "tasks.json").read_text())
    assert sorted(ran) == sorted(t["name"] for t in rows)
    r = doit(proj, "build:Pair")
    full = progress(r.stdout)
    assert r.returncode == 0 and len(ran) < len(full), r.stdout
    assert {n for n, s in full.items() if s == "ran"} == set(full) - set(ran)

    r = doit(proj, "build/Pair/ptoas/nope.pto")
    assert r.returncode != 0 and "nope.pto" in r.stderr


def test_each_phase_is_picked_by_the_files_it_writes(tmp_path):
    """The target regex of each phase's creator matches exactly the files of that phase
    as driver.plan lays it out (pass dumps by number, the backend's folders)."""
    import re
    from pypto_cache import open_store
    from pypto_pipeline.driver import needed, phase_count, plan
    from pypto_pipeline.graph import Ref
    from pypto_pipeline.project import target_regexes
    from pypto_pipeline.run import run_steps
    from pypto.ir.compiling import graph_input
    from pypto.cli import load_file
    (tmp_path / "pair.py").write_text(TWO_KERNELS)
    for options in ({}, {"dump_passes": "EXPLICIT"}, {"dump_passes": "NONE"}):
        name, src, opts, from_spec = graph_input(load_file(tmp_path / "pair.py").Pair,
                                                 platform="a2a3sim", **options)
        store = open_store(tmp_path / "store")
        out = tmp_path / "build" / name
        regex = target_regexes(out, opts)
        gen = plan(name, Ref.blob(store.put_bytes(src)), opts, out, store, from_spec)
        phase, k = next(gen), 0
        while True:
            for s in phase:
                for target in s.targets.values():
                    hits = [j for j, rx in regex.items() if re.match(rx, target)]
                    assert hits == ([k] if k else []), (k, target, hits)
            if phase.exits is None:
                break
            r = run_steps(needed(phase, phase.exits), store=store, db_path=None)
            phase, k = gen.send(r.digests), k + 1
        assert k == phase_count(opts) - 1


def test_programs_that_would_share_a_folder_are_refused(tmp_path):
    from pypto_pipeline.project import ProjectError, dodo_globals
    (tmp_path / "a.py").write_text(TWO_KERNELS)
    (tmp_path / "b.py").write_text(TWO_KERNELS)
    with pytest.raises(ProjectError, match="two programs named 'Pair'"):
        dodo_globals("*.py", root=tmp_path, store=object())
    with pytest.raises(ProjectError, match="letters, digits"):
        dodo_globals({"a:b": ("a", b"", None, False)}, store=object())
    with pytest.raises(ProjectError, match="both named 'P'"):
        dodo_globals({"a": ("P", b"", None, False), "b": ("P", b"", None, False)}, store=object())
    with pytest.raises(ProjectError, match="no file matches"):
        dodo_globals("nothing/*.py", root=tmp_path)
