"""Issue 2: the build graph seen through report/tasks.json — cold runs everything, a
second compile in a new process into a new directory runs nothing and writes the
same bytes; bad input fails with a typed error and leaves nothing behind."""
import json
import textwrap

import pytest

from pypto import ir
from pypto.errors import MemoryOverflowError, MisplacedTensorOpError, UnknownOpError

from e2e_helpers import artifacts, run_py, tasks

STAGES = {"specialize", "frontend", "pass", "layout", "pto", "ptoas", "kernel", "orchestration",
          "config"}

PROGRAM = textwrap.dedent('''
    import sys
    import pypto.language as pl
    from pypto import ir

    @pl.program
    class TileAdd:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                 c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [128, 128])
                tb = pl.load(b, [0, 0], [128, 128])
                c = pl.store(pl.add(ta, tb), [0, 0], c)
            return c

    ir.compile(TileAdd, output_dir=sys.argv[1], platform="a2a3sim")
''')

JIT = textwrap.dedent('''
    import sys
    import torch
    import pypto.language as pl
    from pypto.runtime import RunConfig

    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out

    a, b, out = torch.ones(128, 128), torch.ones(128, 128), torch.zeros(128, 128)
    c = add.compile(a, b, out, config=RunConfig(platform="a2a3sim", save_kernels_dir=sys.argv[1]))
    c(a, b, out)
    assert bool((out == 2).all())
''')


@pytest.mark.parametrize("source", [PROGRAM, JIT], ids=["program", "jit"])
def test_cold_then_warm_in_new_process(iso, source):
    script = iso / "prog.py"
    script.write_text(source)
    env = {"PYPTO_CACHE_DIR": str(iso / "store")}
    run_py(script, env, iso, [str(iso / "cold")])
    cold = tasks(iso / "cold")
    assert cold and {t["status"] for t in cold} == {"ran"}
    assert {t["stage"] for t in cold} <= STAGES
    assert {"frontend", "pass", "layout", "pto", "ptoas", "kernel", "orchestration", "config"} \
        <= {t["stage"] for t in cold}
    for t in cold:
        assert set(t) == {"name", "stage", "status", "seconds", "worker"} and t["seconds"] >= 0
        assert t["worker"] == "local"                 # no PYPTO_EXECUTOR: built here
    run_py(script, env, iso, [str(iso / "warm")])
    warm = tasks(iso / "warm")
    assert [t["name"] for t in sorted(warm, key=lambda t: t["name"])] == \
        [t["name"] for t in sorted(cold, key=lambda t: t["name"])]
    assert not [t for t in warm if t["status"] == "ran" and t["stage"] in ("pass", "pto", "ptoas", "kernel")]
    assert artifacts(iso / "cold") == artifacts(iso / "warm")


def test_same_output_dir_is_a_noop(iso):
    script = iso / "prog.py"
    script.write_text(PROGRAM)
    env = {"PYPTO_CACHE_DIR": str(iso / "store")}
    run_py(script, env, iso, [str(iso / "out")])
    first = artifacts(iso / "out")
    run_py(script, env, iso, [str(iso / "out")])
    assert {t["status"] for t in tasks(iso / "out")} == {"cached"}
    assert artifacts(iso / "out") == first


def test_cache_disabled_compiles_without_store(iso, monkeypatch):
    from examples.harness import run_and_check  # noqa: F401  (examples importable)
    monkeypatch.setenv("PYPTO_CACHE_DISABLE", "1")
    import pypto.language as pl

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                c = pl.store(pl.exp(pl.load(a, [0, 0], [64, 64])), [0, 0], c)
            return c

    ir.compile(P, output_dir=iso / "out", platform="a2a3sim")
    assert {t["status"] for t in tasks(iso / "out")} == {"ran"}
    assert not (iso / "store").exists()


# --------------------------------------------------------------------------- bad input
def _write(iso, body: str):
    p = iso / "bad_prog.py"
    p.write_text(textwrap.dedent(body))
    return p


def _import(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _no_artifacts(out):
    return not (out / "kernel_config.py").exists() and not list(out.rglob("*.so"))


def test_unknown_op_is_a_typed_error(iso):
    path = _write(iso, '''
        import pypto.language as pl

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(a, [0, 0], [64, 64])
                    u = pl.exq(t)
                    c = pl.store(u, [0, 0], c)
                return c
    ''')
    with pytest.raises(UnknownOpError) as e:
        _import(path)
    assert "bad_prog.py:10:" in str(e.value) and "pl.exp" in str(e.value)


def test_misplaced_tensor_op_in_jit_entry(iso):
    path = _write(iso, '''
        import pypto.language as pl

        @pl.jit
        def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
            out[:] = pl.add(a, b)
            return out
    ''')
    mod = _import(path)
    import torch
    from pypto.runtime import RunConfig
    store = iso / "store"
    with pytest.raises(MisplacedTensorOpError) as e:
        mod.add.compile(torch.ones(64, 64), torch.ones(64, 64), torch.zeros(64, 64),
                        config=RunConfig(platform="a2a3sim", save_kernels_dir=str(iso / "out")))
    assert "bad_prog.py:6:" in str(e.value) and "pl.at" in str(e.value)
    assert _no_artifacts(iso / "out")
    # nothing of the failing stage was cached: a second compile fails the same way
    with pytest.raises(MisplacedTensorOpError):
        mod.add.compile(torch.ones(64, 64), torch.ones(64, 64), torch.zeros(64, 64),
                        config=RunConfig(platform="a2a3sim", save_kernels_dir=str(iso / "out2")))
    assert store.exists()


def test_tile_over_ub_is_a_typed_error(iso):
    path = _write(iso, '''
        import pypto.language as pl

        @pl.program
        class Big:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[256, 256], pl.FP32], c: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(a, [0, 0], [256, 256])
                    c = pl.store(t, [0, 0], c)
                return c
    ''')
    mod = _import(path)
    with pytest.raises(MemoryOverflowError) as e:
        ir.compile(mod.Big, output_dir=iso / "out", platform="a2a3sim")
    msg = str(e.value)
    assert "bad_prog.py:" in msg and "main_incore_0" in msg and "262144" in msg and "188416" in msg
    assert _no_artifacts(iso / "out")
    assert not list((iso / "out" / "passes_dump").glob("*_after_AllocateMemoryAddr.py"))
    recs = json.loads((iso / "out" / "report" / "tasks.json").read_text()) \
        if (iso / "out" / "report" / "tasks.json").exists() else []
    assert not any(r["name"].endswith("AllocateMemoryAddr") for r in recs)
    with pytest.raises(MemoryOverflowError):      # not cached as a success
        ir.compile(mod.Big, output_dir=iso / "out2", platform="a2a3sim")


RENAMABLE = textwrap.dedent('''
    import sys
    import pypto.language as pl
    from pypto import ir

    @pl.program
    class Ren:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                NAME = pl.exp(pl.load(a, [0, 0], [64, 64]))
                c = pl.store(NAME, [0, 0], c)
            return c

    ir.compile(Ren, output_dir=sys.argv[1], platform="a2a3sim")
''')


def test_renamed_local_is_cut_off_after_ptoas(iso):
    """A local renamed on its own lines changes the dumps and the .pto (they keep the
    user's names) but not the C++ (canonical names): the kernel build stays cached."""
    env = {"PYPTO_CACHE_DIR": str(iso / "store")}
    script = iso / "ren.py"
    script.write_text(RENAMABLE.replace("NAME", "expd"))
    run_py(script, env, iso, [str(iso / "one")])
    script.write_text(RENAMABLE.replace("NAME", "e_t"))
    run_py(script, env, iso, [str(iso / "two")])
    ran = {t["stage"] for t in tasks(iso / "two") if t["status"] == "ran"}
    assert "ptoas" in ran and "kernel" not in ran and "orchestration" not in ran
    assert (iso / "one" / "ptoas" / "main_incore_0.pto").read_bytes() != \
        (iso / "two" / "ptoas" / "main_incore_0.pto").read_bytes()
    for rel in ("ptoas/main_incore_0.cpp", "kernels/aiv/main_incore_0.so"):
        assert (iso / "one" / rel).read_bytes() == (iso / "two" / rel).read_bytes()


def test_a_compile_served_whole_imports_no_build_machinery(iso):
    """A warm compile in a fresh process is served from the store: doit, the closure
    walker's rebuild, ctypes (loading binaries), the compression modules and the
    picture of a build are never imported."""
    script = iso / "prog.py"
    script.write_text(PROGRAM + textwrap.dedent('''
        heavy = {"doit", "ctypes", "shutil", "tempfile", "pypto_cache.memory", "pypto_cache.gc",
                 "pypto_pipeline.picture", "pypto_pipeline.run", "torch"}
        print("IMPORTED", sorted(heavy & set(sys.modules)))
    '''))
    env = {"PYPTO_CACHE_DIR": str(iso / "store")}
    run_py(script, env, iso, [str(iso / "cold")])
    out = run_py(script, env, iso, [str(iso / "warm")])
    assert "IMPORTED []" in out, out
    assert {t["status"] for t in tasks(iso / "warm")} == {"cached"}
