"""Issue 9: a damaged store heals in one compile, a store that cannot be written is
not an error, an output directory holds exactly one compile, and the installed import
names survive a user's folders named cache/ or pipeline/."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graph_helpers import (artifacts, bad_objects, damage, import_file, ran, run_and_check,
                           tasks, write_program)


@pytest.mark.parametrize("how,fraction", [("truncate", 1 / 3), ("flip", 1 / 3), ("delete", 1 / 3),
                                          ("swap", 1 / 3), ("mixed", 1.0)])
def test_damaged_store_heals_in_one_compile(seed2, iso, how, fraction):
    store = seed2.store_copy(iso / "store")       # iso's PYPTO_CACHE_DIR
    ref = artifacts(seed2.out)
    n = damage(store, how, fraction, seed=len(how))
    assert n >= 5, "too few objects damaged: the test would prove little"
    assert bad_objects(store), "nothing was damaged"
    mod = import_file(seed2.prog)
    from pypto import ir
    compiled = ir.compile(mod.PROGRAM, output_dir=str(iso / "out"), platform="a2a3sim")
    assert artifacts(iso / "out") == ref           # byte-identical to the clean build
    run_and_check(compiled, seed2.n)               # and correct numbers
    assert ran(tasks(iso / "out")), "a damaged store rebuilt nothing?"
    # what this compile needed is whole again: the next compile is a pure hit
    ir.compile(mod.PROGRAM, output_dir=str(iso / "again"), platform="a2a3sim")
    assert not ran(tasks(iso / "again"))
    assert artifacts(iso / "again") == ref


def test_put_bytes_rewrites_a_damaged_object(tmp_path):
    from pypto_cache import Store
    store = Store(tmp_path / "s")
    data = b"kernel bytes " * 100
    d = store.put_bytes(data)
    path = tmp_path / "s" / "v2" / "objects" / d[:1] / d
    for bad in (data[:50], data[:-1] + b"X", b""):
        path.write_bytes(bad)
        assert store.put_bytes(data) == d
        assert path.read_bytes() == data
    src = tmp_path / "f.bin"
    src.write_bytes(data)
    path.write_bytes(data[::-1])
    assert store.put_file(src) == d and path.read_bytes() == data


# ----------------------------------------------------------------------------- read-only
RUN_SCRIPT = textwrap.dedent('''
    import sys
    sys.path.insert(0, {here!r})
    from graph_helpers import import_file, run_and_check
    from pypto import ir
    mod = import_file(sys.argv[1])
    c = ir.compile(mod.PROGRAM, output_dir=sys.argv[2], platform="a2a3sim")
    run_and_check(c, int(sys.argv[3]))
    print("numbers ok")
''').format(here=str(Path(__file__).resolve().parent))


def _tree(store: Path) -> dict:
    """Every file of the store and its bytes (an owner may still touch mtimes)."""
    return {str(p.relative_to(store)): p.read_bytes() if p.is_file() else None
            for p in sorted(store.rglob("*"))}


def _run_confined(kind: str, store: Path, prog: Path, out: Path, n: int):
    """Compile and run `prog` in a child that cannot write `store`: a read-only bind
    mount (EROFS), or an unprivileged user for whom the store is not writable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYPTO_CACHE_DISABLE",)}
    env["PYPTO_CACHE_DIR"] = str(store)
    script = out.parent / "run_confined.py"
    script.write_text(RUN_SCRIPT)
    child = [sys.executable, str(script), str(prog), str(out), str(n)]
    if kind == "erofs":
        inner = (f"mount --bind {store} {store} && mount -o remount,ro,bind {store} && "
                 + " ".join(f"'{a}'" for a in child))
        cmd = ["unshare", "-m", "sh", "-c", inner]
    else:   # the store's owner lost write permission; the child is not root
        cmd = ["unshare", "-U", "--map-user=1000", "--map-group=1000", *child]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                          cwd=str(out.parent))


def _confinement_works(kind: str, tmp_path: Path) -> bool:
    d = tmp_path / "probe"
    d.mkdir()
    os.chmod(d, 0o555)
    if kind == "erofs":
        cmd = ["unshare", "-m", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,ro,bind {d} "
               f"&& ! touch {d}/x"]
    else:
        cmd = ["unshare", "-U", "--map-user=1000", "--map-group=1000", "sh", "-c", f"! touch {d}/x"]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("kind", ["erofs", "eacces"])
def test_unwritable_store_reads_warm_and_builds_cold(seed2, tmp_path, kind):
    if not _confinement_works(kind, tmp_path):
        pytest.skip(f"this machine cannot make a {kind} store (unshare not permitted)")
    store = seed2.store_copy(tmp_path / "store")
    if kind == "eacces":
        for p in [store, *store.rglob("*")]:
            os.chmod(p, 0o555 if p.is_dir() else 0o444)
    before = _tree(store)

    warm = _run_confined(kind, store, seed2.prog, tmp_path / "warm", seed2.n)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    assert "numbers ok" in warm.stdout
    assert "warning" not in warm.stderr.lower(), warm.stderr     # a pure read: nothing to say
    assert not ran(tasks(tmp_path / "warm"))
    assert artifacts(tmp_path / "warm") == artifacts(seed2.out)

    prog3 = write_program(tmp_path / "prog3.py", 3)
    cold = _run_confined(kind, store, prog3, tmp_path / "cold", 3)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert "numbers ok" in cold.stdout
    lines = [ln for ln in cold.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cannot be written" in lines[0], cold.stderr
    assert "Traceback" not in cold.stderr
    assert ran(tasks(tmp_path / "cold"))
    assert _tree(store) == before, "the unwritable store changed"


# ----------------------------------------------------------------------------- output dirs
def test_reused_output_dir_holds_only_the_new_program(iso):
    from pypto import ir
    big = import_file(write_program(iso / "big.py", 3))
    small = import_file(write_program(iso / "small.py", 2))
    out = iso / "out"
    ir.compile(big.PROGRAM, output_dir=str(out), platform="a2a3sim", profiling=True)
    assert (out / "kernels" / "aiv" / "k2.so").is_file()
    compiled = ir.compile(small.PROGRAM, output_dir=str(out), platform="a2a3sim")
    ir.compile(small.PROGRAM, output_dir=str(iso / "fresh"), platform="a2a3sim")
    assert artifacts(out) == artifacts(iso / "fresh")
    # (a compile served whole from the store draws no pictures: nothing ran)
    pictures = {".doit.db", "build_graph.svg", "build_trace.json"}
    names = lambda d: {p.name for p in (d / "report").iterdir()} - pictures  # noqa: E731
    assert names(out) == names(iso / "fresh"), "report files of the old compile were left"
    assert not (out / "kernels" / "aiv" / "k2.so").exists()
    run_and_check(compiled, 2)


# ----------------------------------------------------------------------------- layout
USER_SCRIPT = textwrap.dedent('''
    import cache, pipeline                     # the user's own packages
    assert cache.MINE and pipeline.MINE
    import pypto.language as pl
    import torch
    from pypto.runtime import RunConfig

    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out

    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    add(a, b, out, config=RunConfig(platform="a2a3sim"))
    assert torch.allclose(out, a + b)
    print("layout ok")
''')


@pytest.mark.parametrize("theirs", ["package", "bare folder"])
def test_user_folders_named_cache_and_pipeline(tmp_path, theirs):
    for name in ("cache", "pipeline"):
        (tmp_path / name).mkdir()
        if theirs == "package":
            (tmp_path / name / "__init__.py").write_text("MINE = True\n")
    script = USER_SCRIPT if theirs == "package" else USER_SCRIPT.replace(
        "import cache, pipeline", "import cache, pipeline; cache.MINE = pipeline.MINE = True")
    (tmp_path / "user.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYPTO_CACHE_DISABLE")}
    env["PYPTO_CACHE_DIR"] = str(tmp_path / "store")
    env["PYPTO_PROG_BUILD_DIR"] = str(tmp_path / "builds")
    proc = subprocess.run([sys.executable, "user.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "layout ok" in proc.stdout
