"""kernel_config.py and compiled_meta.json."""
from __future__ import annotations

import ast
import json

import pytest

import cg_programs as P
from pypto import dtype as dt
from pypto.codegen.config import (assign_kernel_ids, compiled_meta_text, core_type,
                                  default_kernel_entries, kernel_config_text)
from pypto.errors import CodegenError
from pypto.ir.nodes import DynDim, FunctionType, Param, ParamDirection as PD, TensorType, Var

DIGEST = "0123456789abcdef0123456789abcdef"


def literal_assignments(text: str) -> dict:
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_quickstart_kernel_config():
    prog = P.quickstart()
    ids = assign_kernel_ids(prog)
    assert ids == {"add_incore_0": 0}
    kernels = [dict(e, digest=DIGEST) for e in default_kernel_entries(prog, ids)]
    text = kernel_config_text(prog, "add", kernels, "tensormap_and_ringbuffer", "a2a3sim")
    cfg = literal_assignments(text)
    assert cfg["RUNTIME_CONFIG"] == {"runtime": "tensormap_and_ringbuffer", "platform": "a2a3sim",
                                     "aicpu_thread_num": 0}
    assert cfg["ORCHESTRATION"] == {"name": "add", "source": "orchestration/add.cpp",
                                    "binary": "orchestration/add.so",
                                    "function_name": "pypto_orchestration_entry",
                                    "signature": ["in", "in", "out"]}
    assert cfg["KERNELS"] == [{"func_id": 0, "name": "add_incore_0", "source": "ptoas/add_incore_0.cpp",
                               "binary": "kernels/aiv/add_incore_0.so", "core_type": "aiv",
                               "signature": ["in", "in", "out"], "digest": DIGEST}]
    assert ('RUNTIME_CONFIG = {"runtime": "tensormap_and_ringbuffer", "platform": "a2a3sim", '
            '"aicpu_thread_num": 0}') in text.splitlines()
    assert text == kernel_config_text(P.quickstart(), "add", kernels, "tensormap_and_ringbuffer", "a2a3sim")


def test_kernel_config_is_read_by_the_runtime(tmp_path):
    try:
        from pypto.runtime.artifacts import read_kernel_config
    except ImportError as e:
        pytest.skip(f"pypto.runtime is not available ({e})")
    prog = P.two_stage()
    kernels = [dict(e, digest=DIGEST) for e in default_kernel_entries(prog)]
    path = tmp_path / "kernel_config.py"
    path.write_text(kernel_config_text(prog, "two_stage", kernels, "host_build_graph", "a5sim",
                                       orchestration_digest="ff" * 16))
    cfg = read_kernel_config(path)
    assert [k["name"] for k in cfg["KERNELS"]] == ["stage0", "stage1"]
    assert cfg["KERNELS"][1]["signature"] == ["in", "inout"]
    assert cfg["ORCHESTRATION"]["digest"] == "ff" * 16
    assert cfg["RUNTIME_CONFIG"]["runtime"] == "host_build_graph"


def test_kernel_entries_from_the_build_driver_keep_their_paths():
    prog = P.matmul_k()
    from pypto.ir.nodes import Function, Level, Role
    prog.functions.append(Function("mm", [Param(Var("a", TensorType((64, 128), dt.FP32)))], [], [],
                                   FunctionType.Orchestration, Level.CHIP, Role.Orchestrator))
    given = [{"func_id": 4, "name": "matmul_k_incore_0", "core_type": "aic",
              "source": "ptoas/x.cpp", "binary": "kernels/aic/x.so", "digest": DIGEST}]
    cfg = literal_assignments(kernel_config_text(prog, "mm", given, "tensormap_and_ringbuffer", "a2a3sim"))
    assert cfg["KERNELS"] == [{"func_id": 4, "name": "matmul_k_incore_0", "source": "ptoas/x.cpp",
                               "binary": "kernels/aic/x.so", "core_type": "aic",
                               "signature": ["in", "in", "out"], "digest": DIGEST}]
    assert cfg["ORCHESTRATION"]["signature"] == ["in"]


def test_core_type():
    assert core_type(P.matmul_k().functions[0]) == "aic"
    assert core_type(P.quickstart().functions[0]) == "aiv"
    k = P.matmul_k().functions[0]
    k.func_type = FunctionType.InCore
    assert core_type(k) == "aic"
    q = P.quickstart().functions[0]
    q.func_type = FunctionType.InCore
    assert core_type(q) == "aiv"


def test_compiled_meta():
    text = compiled_meta_text(P.quickstart(), "add", "a2a3sim", "Ascend910B", "tensormap_and_ringbuffer")
    meta = json.loads(text)
    assert meta == {
        "schema": 1,
        "params": [
            {"name": "a", "kind": "tensor", "direction": "In", "shape": [128, 128], "dtype": "fp32"},
            {"name": "b", "kind": "tensor", "direction": "In", "shape": [128, 128], "dtype": "fp32"},
            {"name": "out", "kind": "tensor", "direction": "Out", "shape": [128, 128], "dtype": "fp32"}],
        "num_return_types": 1, "platform": "a2a3sim", "backend_type": "Ascend910B",
        "runtime": "tensormap_and_ringbuffer"}
    assert text.endswith("}\n")
    assert text == json.dumps(meta, indent=2, sort_keys=True) + "\n"


def test_compiled_meta_scalars_dynamic_dims_and_dtypes():
    prog = P.two_stage()
    orch = prog.get("two_stage")
    orch.params.insert(1, Param(Var("w", TensorType((DynDim("M"), 8), dt.BF16)), PD.In))
    meta = json.loads(compiled_meta_text(prog, "two_stage", "a5sim", "Ascend950", "host_build_graph"))
    assert meta["params"][1] == {"name": "w", "kind": "tensor", "direction": "In", "shape": [-1, 8],
                                 "dtype": "bfloat16"}
    assert meta["params"][2] == {"name": "y", "kind": "tensor", "direction": "InOut", "shape": [64, 64],
                                 "dtype": "fp32"}
    assert meta["params"][3] == {"name": "alpha", "kind": "scalar", "direction": "In", "shape": [],
                                 "dtype": "fp32"}
    assert meta["params"][4]["dtype"] == "int64"
    assert meta["backend_type"] == "Ascend950" and meta["runtime"] == "host_build_graph"


def test_meta_read_by_the_runtime(tmp_path):
    try:
        from pypto.runtime.tensors import parse_params
    except ImportError as e:
        pytest.skip(f"pypto.runtime is not available ({e})")
    meta = json.loads(compiled_meta_text(P.two_stage(), "two_stage", "a2a3sim", "Ascend910B",
                                         "tensormap_and_ringbuffer"))
    params = parse_params(meta["params"], "meta")
    assert [p.name for p in params] == ["x", "y", "alpha", "n_iter"]


def test_errors():
    with pytest.raises(CodegenError, match="no Orchestration function 'nope'"):
        kernel_config_text(P.quickstart(), "nope", [], "tensormap_and_ringbuffer", "a2a3sim")
    with pytest.raises(CodegenError, match="no Orchestration function"):
        compiled_meta_text(P.quickstart(), "add_incore_0", "a2a3sim", "Ascend910B", "x")
    # a program without an orchestration still gets a meta (no parameters)
    meta = json.loads(compiled_meta_text(P.softmax(), "", "a2a3sim", "Ascend910B", "tensormap_and_ringbuffer"))
    assert meta["params"] == [] and meta["num_return_types"] == 0


def test_enum_options_are_written_as_their_values():
    from pypto.backend import BackendType
    from pypto.ir.options import RuntimeKind
    meta = json.loads(compiled_meta_text(P.quickstart(), "add", "a2a3sim", BackendType.Ascend910B,
                                         RuntimeKind.HOST_BUILD_GRAPH))
    assert meta["backend_type"] == "Ascend910B" and meta["runtime"] == "host_build_graph"
    kernels = [dict(e, digest=DIGEST) for e in default_kernel_entries(P.quickstart())]
    cfg = literal_assignments(kernel_config_text(P.quickstart(), "add", kernels,
                                                 RuntimeKind.TENSORMAP_AND_RINGBUFFER, "a2a3sim"))
    assert cfg["RUNTIME_CONFIG"]["runtime"] == "tensormap_and_ringbuffer"
