"""pytest helpers: compile your programs in tests, every xdist worker against one store.

    # conftest.py -- only where pypto is not pip-installed (the install registers this
    # module as a pytest plugin through the pytest11 entry point)
    pytest_plugins = ["pypto.testing"]

    # test_add.py
    def test_add(pypto_compile):
        compiled = pypto_compile(Add, platform="a2a3sim")        # ir.compile's options
        compiled(a, b, out)                                        # runs on the simulator

    def test_scale(pypto_compile):
        compiled = pypto_compile(scale, a, out, config=RunConfig())   # a @pl.jit entry
        ...

`pytest -n auto` then compiles in every worker against one store (`pypto_store`): a
fresh one per run, shared by the workers of the run (`--pypto-store DIR`, or the ini
option `pypto_store`, keeps it somewhere lasting, e.g. a CI cache). The store builds each
task once: a worker that needs a task another worker is building waits for it and takes
its result, so N tests compiling one program cost one compile. Each test's artifacts go
to its own folder under tmp_path (`<tmp_path>/<program>/`), never shared.

Nothing here is autouse: a test (or a fixture of yours) asks for `pypto_store` or
`pypto_compile`; ir.compile and @pl.jit calls in that session then use the store too.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

STORE_DIR_NAME = "pypto-store"


def pytest_addoption(parser):
    group = parser.getgroup("pypto")
    group.addoption("--pypto-store", default=None, metavar="DIR",
                    help="the store every pypto compile of this run uses (default: a fresh one "
                         "per run, shared by all xdist workers)")
    parser.addini("pypto_store", "as --pypto-store (a path relative to the rootdir)", default="")


def shared_store_dir(config, tmp_path_factory) -> Path:
    """The store of this run: --pypto-store, else the ini's pypto_store, else
    <the run's base temp>/pypto-store -- under xdist the folder holding every
    worker's base temp, so the workers of one run share it."""
    chosen = config.getoption("--pypto-store", default=None) or config.getini("pypto_store")
    if chosen:
        path = Path(os.path.expanduser(str(chosen)))
        return path if path.is_absolute() else Path(config.rootpath) / path
    base = tmp_path_factory.getbasetemp()
    if hasattr(config, "workerinput"):      # an xdist worker: basetemp is <run>/popen-gwN
        base = base.parent
    return base / STORE_DIR_NAME


@pytest.fixture(scope="session")
def pypto_store(request, tmp_path_factory) -> Path:
    """The store shared by this run's workers; PYPTO_CACHE_DIR points at it for the session."""
    path = shared_store_dir(request.config, tmp_path_factory)
    path.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("PYPTO_CACHE_DIR")
    os.environ["PYPTO_CACHE_DIR"] = str(path)
    yield path
    if before is None:
        os.environ.pop("PYPTO_CACHE_DIR", None)
    else:
        os.environ["PYPTO_CACHE_DIR"] = before


def compile_into(entry, output_dir, *args, config=None, **options):
    """Compile a @pl.program (ir.compile's keyword options) or a @pl.jit entry (its
    arguments or sample specs, and a RunConfig) into `output_dir`; returns what
    ir.compile / .compile() return (a CompiledProgram)."""
    from pypto.ir.nodes import Program
    from pypto.jit.decorator import JITFunction
    if isinstance(entry, Program):
        if args or config is not None:
            raise TypeError("a @pl.program takes ir.compile's keyword options, not arguments "
                            "or a config")
        from pypto import ir
        return ir.compile(entry, output_dir=output_dir, **options)
    if isinstance(entry, JITFunction):
        if options:
            raise TypeError(f"a @pl.jit entry takes its compile options in config=RunConfig(...), "
                            f"not as keywords ({', '.join(sorted(options))})")
        from dataclasses import replace
        from pypto.runtime import RunConfig
        config = replace(config if config is not None else RunConfig(),
                         save_kernels_dir=str(output_dir))
        return entry.compile(*args, config=config)
    raise TypeError(f"expected a @pl.program class or a @pl.jit function, got "
                    f"{type(entry).__name__}")


@pytest.fixture
def pypto_compile(pypto_store, tmp_path):
    """compile(entry, *args, config=None, **options): `compile_into` this test's own
    folder, <tmp_path>/<program or function name>/, against the run's shared store."""
    def compile(entry, *args, config=None, **options):
        name = getattr(entry, "__name__", None) or getattr(entry, "name")
        return compile_into(entry, tmp_path / name, *args, config=config, **options)
    return compile
