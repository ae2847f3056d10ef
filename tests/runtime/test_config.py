import enum
import subprocess
import sys

import pytest

from pypto.runtime import RunConfig
from pypto.runtime.config import runtime_kind_name


def test_defaults():
    cfg = RunConfig()
    assert cfg.platform == "a2a3sim"
    assert cfg.device_id == 0
    assert cfg.rtol == 1e-5 and cfg.atol == 1e-5
    assert cfg.backend_type == "Ascend910B"
    assert cfg.dump_passes is False and cfg.save_kernels is False and cfg.save_kernels_dir is None
    assert cfg.enable_chip_swimlane == 0 and cfg.enable_dump_args == 0 and cfg.enable_pmu == 0
    assert cfg.enable_dep_gen is False and cfg.enable_scope_stats is False
    assert cfg.compile_profiling is False and cfg.diagnostic_phase is None
    assert cfg.disabled_diagnostics is None and cfg.aicpu_thread_num is None
    assert cfg.distributed_config is None and cfg.analyze_auto_scopes_for_deps is False
    assert cfg.memory_planner is None and cfg.dump_ptoas_passes is False and cfg.runtime is None
    assert cfg.runtime_name == "tensormap_and_ringbuffer"


@pytest.mark.parametrize("platform,backend", [("a2a3sim", "Ascend910B"), ("a2a3", "Ascend910B"),
                                              ("a5sim", "Ascend950"), ("a5", "Ascend950")])
def test_backend_follows_platform(platform, backend):
    assert RunConfig(platform=platform).backend_type == backend
    assert RunConfig(platform=platform, backend_type="Ascend910B").backend_type == backend


def test_bad_platform_names_valid_ones():
    with pytest.raises(ValueError) as e:
        RunConfig(platform="a3sim")
    for name in ("a2a3sim", "a2a3", "a5sim", "a5"):
        assert name in str(e.value)


def test_runtime_kinds_loose():
    class RuntimeKind(enum.Enum):
        TENSORMAP_AND_RINGBUFFER = 0
        HOST_BUILD_GRAPH = 1

    assert RunConfig(runtime=RuntimeKind.HOST_BUILD_GRAPH).runtime_name == "host_build_graph"
    assert RunConfig(runtime="HOST_BUILD_GRAPH").runtime_name == "host_build_graph"
    assert runtime_kind_name("tensormap_and_ringbuffer") == "tensormap_and_ringbuffer"
    assert runtime_kind_name(None) == "tensormap_and_ringbuffer"
    with pytest.raises(ValueError, match="HOST_BUILD_GRAPH"):
        RunConfig(runtime="ringbuffer")


def test_compile_side_fields_kept_as_given():
    class Planner(enum.Enum):
        PTOAS = 2
    cfg = RunConfig(memory_planner=Planner.PTOAS, dump_passes=True, strategy="Default")
    assert cfg.memory_planner is Planner.PTOAS
    assert cfg.replace(platform="a5sim").backend_type == "Ascend950"


def test_import_is_cheap():
    code = ("import sys, pypto.runtime; from pypto.runtime import run, benchmark, dfx, harness, bench; "
            "print('torch' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
