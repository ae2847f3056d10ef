"""JITFunction: argument binding, dependency discovery, the specialization key and the
per-function cache (against a stand-in compile facade, so it runs without a backend)."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import torch

from jit_helpers import LANG, REPO_ROOT, pl
from pypto.jit import RUNTIME, JITFunction, jit
from pypto.runtime.config import RunConfig

COLS = 128
M = pl.dynamic("M")


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def annotated(a: pl.Tensor[[64, COLS], pl.FP32], out: pl.Out[pl.Tensor[[64, COLS], pl.FP32]],
              n: pl.INDEX, scale: pl.FP32 = 2.0):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(n):
            t = pl.load(a, [0, 0], [64, COLS])
            pl.store(pl.mul(t, scale), [0, 0], out)
    return out


@pl.jit
def dyn(a: pl.Tensor[[M, COLS], pl.FP32], out: pl.Out[pl.Tensor[[M, COLS], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


@pl.jit.inline
def helper(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y[:] = pl.add(x, x)
    return y


@pl.jit.incore
def kernel(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [16, 16])
    pl.store(t, [0, 0], y)
    return y


@pl.jit.incore(level=pl.Level.AIC)
def cube(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y = helper(x, y)
    return y


@pl.jit
def chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    tmp = pl.create_tensor([16, 16], dtype=pl.FP32)
    tmp = kernel(a, tmp)
    out = cube(tmp, out)
    return out


@pl.jit
def shadows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    kernel = 3
    return out


@pl.jit
def calls_entry(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = add(a, a, out)
    return out


@pl.jit(auto_scope=False)
def no_scope(a: pl.Tensor):
    return a


def t(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


# ----------------------------------------------------------------------------- a stand-in facade
class FakeCompiled:
    def __init__(self, spec, config):
        self.spec, self.config, self.calls = spec, config, []

    def __call__(self, *args, config=None):
        self.calls.append((args, config))
        return "ran"


@pytest.fixture
def facade(monkeypatch):
    """Replaces pypto.ir.compiling for the test: records compile_jit / lower_jit calls."""
    mod = types.ModuleType("pypto.ir.compiling")
    mod.compiles, mod.lowers = [], []

    def compile_jit(spec, *, config=None):
        mod.compiles.append(spec)
        return FakeCompiled(spec, config)

    def lower_jit(spec, *, config=None):
        mod.lowers.append(spec)
        return ("program", spec["program"])

    mod.compile_jit, mod.lower_jit = compile_jit, lower_jit
    monkeypatch.setitem(sys.modules, "pypto.ir.compiling", mod)
    for fn in (add, annotated, dyn, chain):
        fn.cache_clear()
    yield mod
    for fn in (add, annotated, dyn, chain):
        fn.cache_clear()


# ----------------------------------------------------------------------------- binding
def test_compile_option_passed_as_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'skip_ptoas'"):
        add.compile(skip_ptoas=True)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'platform'"):
        add.compile(t(4, 4), t(4, 4), t(4, 4), platform="a2a3sim")
    with pytest.raises(TypeError, match="too many positional arguments"):
        add.compile(t(4, 4), t(4, 4), t(4, 4), t(4, 4))


def test_signature_mode_needs_no_tensors():
    spec = annotated.spec(n=4)
    assert spec["args"] == {
        "a": {"kind": "tensor", "shape": [64, 128], "dtype": "fp32"},
        "out": {"kind": "tensor", "shape": [64, 128], "dtype": "fp32"},
        "n": {"kind": "scalar", "dtype": "index", "value": 4},
        "scale": {"kind": "scalar", "dtype": "fp32", "value": 2.0}}
    assert annotated.spec(n=RUNTIME)["args"]["n"]["value"] is None
    with pytest.raises(TypeError, match="missing scalar argument 'n': pass a value or pl.RUNTIME"):
        annotated.spec()
    with pytest.raises(TypeError, match="missing required argument: 'a'"):
        add.spec()


def test_dynamic_dims_in_the_spec():
    spec = dyn.spec()
    assert spec["args"]["a"] == {"kind": "tensor", "shape": ["M", 128], "dtype": "fp32"}
    assert spec["dynamic"] == {"M": "M"}
    assert dyn.spec(t(7, 128), t(7, 128)) == spec


def test_scalar_values_are_typed_by_their_annotation():
    spec = annotated.spec(t(64, 128), t(64, 128), 3, 1)
    assert spec["args"]["n"]["value"] == 3 and spec["args"]["scale"]["value"] == 1.0
    assert isinstance(spec["args"]["scale"]["value"], float)
    with pytest.raises(TypeError, match="'n' is a index scalar, got 2.5"):
        annotated.spec(n=2.5)
    with pytest.raises(TypeError, match="'a' is a tensor parameter"):
        annotated.spec(3, n=1)
    with pytest.raises(TypeError, match="'n' is a scalar parameter, got a tensor"):
        annotated.spec(n=t(2, 2))


def test_argument_classification():
    spec = add.spec(np.zeros((3, 5), np.float16), t(3, 5, dtype=torch.int8),
                    t(3, 5, dtype=torch.bool))
    assert [spec["args"][n]["dtype"] for n in ("a", "b", "out")] == ["fp16", "int8", "bool"]
    with pytest.raises(TypeError, match="not supported"):
        add.spec(t(2, 2, dtype=torch.complex64), t(2, 2), t(2, 2))
    with pytest.raises(TypeError, match="cannot pass str as 'a'"):
        add.spec("x", t(2, 2), t(2, 2))


def test_spec_is_json_data():
    spec = chain.spec(t(16, 16), t(16, 16))
    assert json.loads(json.dumps(spec)) == spec


# ----------------------------------------------------------------------------- deps
def test_dependency_discovery_is_transitive_deps_first():
    spec = chain.spec(t(16, 16), t(16, 16))
    assert [(f["name"], f["kind"]) for f in spec["functions"]] == [
        ("kernel", "incore"), ("helper", "inline"), ("cube", "incore"), ("chain", "orchestration")]
    by = {f["name"]: f for f in spec["functions"]}
    assert by["chain"]["calls"] == {"kernel": "kernel", "cube": "cube"}
    assert by["cube"]["calls"] == {"helper": "helper"}
    assert by["cube"]["options"] == {"level": "AIC"}
    assert shadows.spec(t(2, 2), t(2, 2))["functions"][0]["name"] == "shadows"
    assert len(shadows.spec(t(2, 2), t(2, 2))["functions"]) == 1


def test_calling_another_entry_is_refused():
    with pytest.raises(TypeError, match="`add`, a @pl.jit entry"):
        calls_entry.spec(t(2, 2), t(2, 2))


def test_deps_are_not_entry_points():
    with pytest.raises(TypeError, match="@pl.jit.incore function"):
        kernel.compile(t(16, 16), t(16, 16))
    with pytest.raises(TypeError, match="@pl.jit.inline function"):
        helper(t(16, 16), t(16, 16))


def test_decorator_forms():
    assert isinstance(add, JITFunction) and add.kind == "orchestration" and add.options == {}
    assert no_scope.options == {"auto_scope": False}
    assert kernel.kind == "incore" and helper.kind == "inline"
    assert add.__name__ == "add" and add.__wrapped__.__name__ == "add"
    assert repr(add).startswith("<JITFunction @pl.jit ")
    assert repr(RUNTIME) == "pl.RUNTIME"
    if LANG is not None:
        assert LANG.jit is jit
        if hasattr(LANG, "RUNTIME"):
            assert LANG.RUNTIME is RUNTIME


def _module(tmp_path, monkeypatch, name, source):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_deps_from_another_module_keep_their_constants(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "jit_other_mod", """
        from __future__ import annotations
        from pypto.jit import jit
        TILE = 32

        @jit.incore
        def k(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            t = pl.load(x, [0, 0], [TILE, TILE])
            pl.store(t, [0, 0], y)
            return y
    """)
    entry = _module(tmp_path, monkeypatch, "jit_entry_mod", """
        from __future__ import annotations
        from pypto.jit import jit
        from jit_other_mod import k as kk
        TILE = 16

        @jit
        def e(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            out = kk(a, out)
            return out[0:TILE, :]
    """)
    spec = entry.e.spec(t(32, 32), t(32, 32))
    assert spec["constants"] == {"TILE": 16}
    k, e = spec["functions"]
    assert k["constants"] == {"TILE": 32} and "constants" not in e
    assert e["calls"] == {"kk": "k"}
    text = entry.e.specialize(t(32, 32), t(32, 32))
    assert "t = pl.load(x, [0, 0], [32, 32])" in text
    assert "out = self.k(a, out)" in text and "return out[0:16, :]" in text


def test_two_deps_with_one_name_are_refused(tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "jit_clash_mod", """
        from __future__ import annotations
        from pypto.jit import jit

        def make():
            @jit.incore
            def k(x: pl.Tensor, y: pl.Out[pl.Tensor]):
                return y
            return k

        k1 = make()
        k2 = make()

        @jit
        def e(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            out = k1(a, out)
            out = k2(a, out)
            return out
    """)
    with pytest.raises(TypeError, match="two @pl.jit functions named `k`"):
        mod.e.spec(t(4, 4), t(4, 4))


def test_nested_function_source_is_dedented(tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "jit_nested_mod", """
        from __future__ import annotations
        from pypto.jit import jit

        class Holder:
            @jit
            def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
                out[:] = pl.add(a, a)
                return out
    """)
    spec = mod.Holder.inner.spec(t(4, 4), t(4, 4))
    f = spec["functions"][0]
    assert f["col_offset"] == 4 and f["line"] == 6 and f["source"].startswith("@jit\ndef inner(")
    text = mod.Holder.inner.specialize(t(4, 4), t(4, 4))
    assert "out[:] = pl.add(a, a)  # @jit_nested_mod.py:8:9" in text


# ----------------------------------------------------------------------------- the key
def test_key_follows_the_specialization():
    k = add.cache_key
    base = k(t(128, 128), t(128, 128), t(128, 128))
    assert k(t(128, 128), t(128, 128), t(128, 128)) == base
    assert k(t(64, 128), t(64, 128), t(64, 128)) != base                      # shape
    assert k(t(128, 128, dtype=torch.float16), t(128, 128), t(128, 128)) != base  # dtype
    cfg = RunConfig(platform="a2a3sim")
    assert k(t(128, 128), t(128, 128), t(128, 128), config=cfg) != base       # platform None
    with_cfg = k(t(128, 128), t(128, 128), t(128, 128), config=cfg)
    assert k(t(128, 128), t(128, 128), t(128, 128), config=RunConfig(platform="a5sim")) != with_cfg
    assert k(t(128, 128), t(128, 128), t(128, 128),
             config=RunConfig(platform="a2a3sim", memory_planner="PTOAS")) != with_cfg
    # run-side fields do not change what is compiled
    assert k(t(128, 128), t(128, 128), t(128, 128),
             config=RunConfig(platform="a2a3sim", device_id=3, rtol=1e-2)) == with_cfg


def test_key_scalars_and_dynamic_dims():
    k = annotated.cache_key
    assert k(n=4) == k(n=4) != k(n=5)
    assert k(n=RUNTIME) != k(n=4)
    assert k(n=4, scale=3.0) != k(n=4)
    assert dyn.cache_key(t(7, 128), t(7, 128)) == dyn.cache_key(t(900, 128), t(900, 128))


def test_key_follows_the_source():
    from pypto.jit import cache_key
    spec = add.spec(t(4, 4), t(4, 4), t(4, 4))
    edited = json.loads(json.dumps(spec))
    edited["functions"][0]["source"] = edited["functions"][0]["source"].replace("pl.add", "pl.sub")
    assert cache_key(spec) != cache_key(edited)
    moved = json.loads(json.dumps(spec))
    moved["functions"][0]["line"] += 1            # locations reach the artifacts
    assert cache_key(spec) != cache_key(moved)


# ----------------------------------------------------------------------------- cache and call
def test_compile_hit_returns_the_identical_object(facade):
    cfg = RunConfig(platform="a2a3sim")
    a = t(128, 128)
    first = add.compile(a, a, a, config=cfg)
    assert add.compile(t(128, 128), t(128, 128), t(128, 128), config=cfg) is first
    assert len(facade.compiles) == 1 and first.config is cfg
    other = add.compile(t(64, 128), t(64, 128), t(64, 128), config=cfg)
    assert other is not first and len(facade.compiles) == 2
    assert facade.compiles[0]["program"] == "_jit_add"


def test_call_compiles_once_and_runs(facade):
    a, b, out = t(8, 8), t(8, 8), t(8, 8)
    assert add(a, b, out) == "ran"
    assert add(a, b=b, out=out) == "ran"
    compiled = add.compile(a, b, out)
    assert len(facade.compiles) == 1
    assert [c[0] for c in compiled.calls] == [(a, b, out), (a, b, out)]
    cfg = RunConfig(platform="a2a3sim")
    add(a, b, out, config=cfg)
    assert add.compile(a, b, out, config=cfg).calls[-1][1] is cfg


def test_call_return_style_leaves_out_params_off(facade):
    a = t(64, 128)
    annotated(a, n=2)                    # `out` omitted: the runtime allocates and returns it
    compiled = annotated.compile(a, n=2)
    assert compiled.calls[-1][0] == (a, 2, 2.0)
    with pytest.raises(TypeError, match="missing required argument: 'a'"):
        annotated(n=2)
    with pytest.raises(TypeError, match="pl.RUNTIME marks a scalar parameter"):
        annotated(a, t(64, 128), n=RUNTIME)


def test_lower_goes_to_the_facade_uncached(facade):
    a = t(4, 4)
    assert add.lower(a, a, a) == ("program", "_jit_add")
    add.lower(a, a, a)
    assert len(facade.lowers) == 2 and not facade.compiles


# ----------------------------------------------------------------------------- hygiene
def test_importing_jit_does_not_import_torch():
    code = ("import sys, pypto.jit, pypto.jit.specialize\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "assert 'numpy' not in sys.modules, 'numpy imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
