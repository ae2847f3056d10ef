"""Helpers of the runtime tests (a module name of its own: every test dir has a conftest)."""
import contextlib
from pathlib import Path

import pytest

# func_id -> (kernel name, source stem, core type)
KERNELS = {
    0: ("add_kernel", "add", "aiv"),
    1: ("sleep_kernel", "sleep", "aiv"),
    2: ("fail_kernel", "fail", "aiv"),
    3: ("probe_kernel", "probe", "aiv"),
    4: ("scale_kernel", "scale", "aiv"),
    5: ("sleep_cube", "sleep", "aic"),
    6: ("rendezvous", "rendezvous", "aiv"),
}


def tensor(name, shape, direction="In", dtype="fp32"):
    return {"name": name, "kind": "tensor", "direction": direction, "shape": list(shape), "dtype": dtype}


def scalar(name, dtype="fp32"):
    return {"name": name, "kind": "scalar", "direction": "In", "dtype": dtype}



@contextlib.contextmanager
def isolated_compiler(base: Path):
    """Compile into `base`: a private artifact store and build directory (restored on
    exit), for module-scoped fixtures that compile real programs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYPTO_CACHE_DIR", str(base / "store"))
        mp.setenv("PYPTO_PROG_BUILD_DIR", str(base / "builds"))
        mp.delenv("PYPTO_CACHE_DISABLE", raising=False)
        yield base
