"""Turn a post-pass Program into an output directory the runtime loads: our codegen,
then pypto.ptoas and the system compiler (tests skip when those are not there)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pypto.codegen import (assign_kernel_ids, compiled_meta_text, default_kernel_entries,
                           generate_kernel, generate_orchestration, kernel_config_text, ptoas_level)

INCLUDE = Path(__file__).resolve().parents[2] / "pypto" / "include"


def need(module: str, name: str):
    try:
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    except (ImportError, AttributeError) as e:
        pytest.skip(f"{module}.{name} is not available yet ({e})")


def build_dir(out: Path, prog, orch: str, platform: str = "a2a3sim", memory_planner=None) -> Path:
    compile_pto = need("pypto.ptoas", "compile_pto")
    build_kernel = need("pypto.cxx", "build_kernel")
    import xxhash
    arch = "a5" if platform.startswith("a5") else "a2a3"
    ids = assign_kernel_ids(prog)
    entries = default_kernel_entries(prog, ids)
    for e in entries:
        f = prog.get(e["name"])
        pto = generate_kernel(prog, e["name"], arch=arch, memory_planner=memory_planner)
        cpp = compile_pto(pto, arch=arch, level=ptoas_level(f, memory_planner)).cpp
        so = build_kernel(cpp, arch=arch, core_type=e["core_type"])
        for rel, data in ((f"ptoas/{e['name']}.pto", pto.encode()), (e["source"], cpp.encode()),
                          (e["binary"], so)):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        e["digest"] = xxhash.xxh3_128_hexdigest(so)
    (out / "orchestration").mkdir(parents=True, exist_ok=True)
    src = out / "orchestration" / f"{orch}.cpp"
    src.write_text(generate_orchestration(prog, orch, ids))
    so_path = out / "orchestration" / f"{orch}.so"
    subprocess.run(["g++", "-std=c++17", "-O1", "-fPIC", "-shared", f"-I{INCLUDE}", str(src),
                    "-o", str(so_path)], check=True, capture_output=True, text=True)
    (out / "kernel_config.py").write_text(kernel_config_text(
        prog, orch, entries, "tensormap_and_ringbuffer", platform,
        orchestration_digest=xxhash.xxh3_128_hexdigest(so_path.read_bytes())))
    backend = "Ascend950" if arch == "a5" else "Ascend910B"
    (out / "compiled_meta.json").write_text(
        compiled_meta_text(prog, orch, platform, backend, "tensormap_and_ringbuffer"))
    return out


def run_dir(out: Path, *args):
    CompiledProgram = need("pypto.runtime", "CompiledProgram")
    return CompiledProgram(out)(*args)
