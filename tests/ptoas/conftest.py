import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pypto.ptoas import compile_pto  # noqa: E402
from pypto.cxx import build_kernel  # noqa: E402
from abi_helper import Kernel  # noqa: E402


@pytest.fixture
def make_kernel(tmp_path):
    """(pto text, arch, level, core) -> loaded Kernel."""
    def make(text: str, *, arch: str = "a2a3", level: str = "level3", core: str = "aiv") -> Kernel:
        cpp = compile_pto(text, arch=arch, level=level, source_name="test.pto").cpp
        return Kernel(build_kernel(cpp, arch=arch, core_type=core), tmp_path)
    return make
