import ctypes
import json
import os
import subprocess

import pytest
import torch

from pypto.runtime import ArtifactError, CompiledProgram, DigestMismatchError, PlatformMismatchError
from pypto.runtime import abi
from pypto.runtime.artifacts import read_kernel_config

from runtime_helpers import KERNELS, tensor


ADD_PARAMS = [tensor("a", [4, 8]), tensor("b", [4, 8]), tensor("out", [4, 8], "Out")]


def test_abi_layout_matches_header(built):
    out = subprocess.run([str(built / "abi_layout")], capture_output=True, text=True, check=True)
    lines = dict((l.split()[0], [int(x) for x in l.split()[1:]]) for l in out.stdout.splitlines())
    T = abi.PyptoTensor
    assert lines["PyptoTensor"] == [ctypes.sizeof(T), T.addr.offset, T.start_offset.offset,
                                    T.ndims.offset, T.dtype.offset, T.shape.offset, T.strides.offset]
    A = abi.PyptoRuntimeApi
    assert lines["PyptoRuntimeApi"] == [ctypes.sizeof(A), A.ctx.offset, A.alloc_tensor.offset,
                                        A.view.offset, A.submit.offset, A.scope_begin.offset,
                                        A.scope_end.offset, A.read_scalar.offset, A.fail.offset,
                                        A.tensor_dim.offset, A.submit_task.offset,
                                        A.predicate_next.offset, A.reshape.offset]


def test_members(programs):
    c = programs("add", ADD_PARAMS)
    assert c.param_names == ["a", "b", "out"]
    assert c.output_indices == [2]
    assert c.has_return is True
    assert c.platform == "a2a3sim" and c.backend_type == "Ascend910B"
    assert c.runtime_name == "tensormap_and_ringbuffer"
    assert c.runtime_config["runtime"] == "tensormap_and_ringbuffer"
    assert c.orchestration_names == []
    assert c.program is None
    assert os.fspath(c) == str(c.output_dir) == str(c)
    again = CompiledProgram.from_dir(c.output_dir, platform="a2a3sim")
    assert again.param_names == c.param_names and again.program is None
    with pytest.raises(PlatformMismatchError, match="compiled for platform 'a2a3sim', not 'a5sim'"):
        CompiledProgram.from_dir(c.output_dir, platform="a5sim")
    marker = object()
    assert CompiledProgram(c.output_dir, program=marker).program is marker


def test_chip_callable_is_lazy_and_reused(programs):
    c = programs("add", ADD_PARAMS)
    assert c._chip is None
    chip = c.chip_callable
    assert c.chip_callable is chip
    assert sorted(chip.kernels) == sorted(KERNELS)
    assert chip.kernel(5).core_type == "aic" and chip.kernel(0).name == "add_kernel"
    assert c.load() is c


def test_kernel_config_is_never_executed(programs, tmp_path):
    out = programs.dir("add", ADD_PARAMS)
    marker = tmp_path / "pwned"
    text = (out / "kernel_config.py").read_text()
    text = text.replace("KERNELS = ", f"KERNELS = __import__('os').system('touch {marker}') or ")
    (out / "kernel_config.py").write_text(text)
    with pytest.raises(ArtifactError, match="literal"):
        CompiledProgram(out)
    assert not marker.exists()


def test_kernel_config_extra_statements_ignored(tmp_path):
    path = tmp_path / "kernel_config.py"
    path.write_text("import os\n_ROOT = 1\nRUNTIME_CONFIG = {'runtime': 'host_build_graph'}\n"
                    "ORCHESTRATION = {'binary': 'o.so'}\nKERNELS = []\n")
    cfg = read_kernel_config(path)
    assert cfg["RUNTIME_CONFIG"] == {"runtime": "host_build_graph"} and cfg["KERNELS"] == []


def test_missing_files(tmp_path):
    with pytest.raises(ArtifactError, match="compiled_meta.json"):
        CompiledProgram(tmp_path)


def test_digest_mismatch_refused(programs):
    c = programs("add", ADD_PARAMS, kernel_digest=lambda name, d: "0" * 32 if name == "add_kernel" else d)
    with pytest.raises(DigestMismatchError) as e:
        c.load()
    assert "add_kernel" in str(e.value) and "0" * 32 in str(e.value)
    a = torch.ones(4, 8)
    out = torch.zeros(4, 8)
    with pytest.raises(DigestMismatchError):
        c(a, a, out)
    assert torch.count_nonzero(out) == 0


def test_tampered_binary_refused(programs):
    out = programs.dir("add", ADD_PARAMS)
    so = out / "kernels" / "aiv" / "add_kernel.so"
    so.write_bytes(so.read_bytes() + b"\0")
    with pytest.raises(DigestMismatchError, match="add_kernel"):
        CompiledProgram(out).load()


def test_missing_digest_refused(programs):
    out = programs.dir("add", ADD_PARAMS)
    text = (out / "kernel_config.py").read_text()
    import ast
    cfg = read_kernel_config(out / "kernel_config.py")
    for k in cfg["KERNELS"]:
        k.pop("digest")
    lines = [l for l in text.splitlines() if not l.startswith("KERNELS")]
    lines.append(f"KERNELS = {cfg['KERNELS']!r}")
    (out / "kernel_config.py").write_text("\n".join(lines) + "\n")
    with pytest.raises(ArtifactError, match="unverified"):
        CompiledProgram(out).load()


def test_inconsistent_runtime_refused(programs):
    out = programs.dir("add", ADD_PARAMS)
    meta = json.loads((out / "compiled_meta.json").read_text())
    meta["runtime"] = "host_build_graph"
    (out / "compiled_meta.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="runtime"):
        CompiledProgram(out)


def test_rebuilt_binary_at_same_path_is_reloaded(programs, built):
    """The loader must not hand back a stale library for a path it has seen."""
    from pypto.runtime import KernelExecutionError
    import xxhash
    out = programs.dir("add", ADD_PARAMS)
    first = CompiledProgram(out)
    a, b = torch.ones(4, 8), torch.full((4, 8), 2.0)
    assert torch.equal(first(a, b), a + b)
    # Rebuild "add_kernel" at the same path with different code (the failing kernel).
    so = out / "kernels" / "aiv" / "add_kernel.so"
    data = (built / "kernels" / "fail.so").read_bytes()
    so.write_bytes(data)
    text = (out / "kernel_config.py").read_text()
    cfg = read_kernel_config(out / "kernel_config.py")
    old = next(k["digest"] for k in cfg["KERNELS"] if k["name"] == "add_kernel")
    (out / "kernel_config.py").write_text(text.replace(old, xxhash.xxh3_128_hexdigest(data)))
    with pytest.raises(KernelExecutionError, match="add_kernel.*injected failure"):
        CompiledProgram(out)(a, b)
    assert torch.equal(first(a, b), a + b)      # the first handle keeps its own code


def test_orchestration_digest_checked_when_present(programs):
    out = programs.dir("add", ADD_PARAMS)
    text = (out / "kernel_config.py").read_text()
    text = text.replace("'function_name': ", "'digest': 'ffff', 'function_name': ")
    (out / "kernel_config.py").write_text(text)
    with pytest.raises(DigestMismatchError, match="orchestration 'add'"):
        CompiledProgram(out).load()
