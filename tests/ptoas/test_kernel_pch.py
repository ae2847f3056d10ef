"""The precompiled tile library: the same kernel bytes, built once per key, and a quiet
fallback to the header text whenever it cannot be had."""
from pathlib import Path

from pypto import pch
from pypto.cxx import INCLUDE_DIR, _resolve, build_kernel, flags, toolchain_id
from pypto.ptoas import compile_pto

DATA = Path(__file__).parent / "data"


def _cpp():
    return compile_pto((DATA / "softmax64_incore_0.pto").read_text()).cpp


def _fresh(monkeypatch, where):
    monkeypatch.setenv("PYPTO_PCH_DIR", str(where))
    monkeypatch.setattr(pch, "_known", {})


def test_kernels_built_with_and_without_it_are_byte_identical(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path / "pch")
    with_pch = build_kernel(_cpp(), arch="a2a3", core_type="aiv")
    built = list((tmp_path / "pch").glob("*/pto_sim.hpp.gch"))
    assert len(built) == 1 and built[0].stat().st_size > 1 << 20
    monkeypatch.setenv("PYPTO_PCH", "0")
    assert build_kernel(_cpp(), arch="a2a3", core_type="aiv") == with_pch


def test_one_directory_per_flag_set_found_again_by_a_new_process(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path / "pch")
    cxx, tid = _resolve(None), toolchain_id()
    vec = pch.include_args(cxx, tid, INCLUDE_DIR, flags("a2a3", "aiv"))
    cube = pch.include_args(cxx, tid, INCLUDE_DIR, flags("a2a3", "aic"))
    assert vec[0] == "-I" and cube[0] == "-I" and vec[1] != cube[1]
    monkeypatch.setattr(pch, "_known", {})          # as a new process: found on disk
    mtime = Path(vec[1], "pto_sim.hpp.gch").stat().st_mtime_ns
    assert pch.include_args(cxx, tid, INCLUDE_DIR, flags("a2a3", "aiv")) == vec
    assert Path(vec[1], "pto_sim.hpp.gch").stat().st_mtime_ns == mtime
    assert not [p for p in (tmp_path / "pch").iterdir() if p.name.startswith(".")]


def test_no_pch_when_off_unwritable_or_not_gcc(tmp_path, monkeypatch):
    cxx, tid = _resolve(None), toolchain_id()
    _fresh(monkeypatch, tmp_path / "pch")
    monkeypatch.setenv("PYPTO_PCH", "0")
    assert pch.include_args(cxx, tid, INCLUDE_DIR, flags("a2a3", "aiv")) == []
    monkeypatch.delenv("PYPTO_PCH")
    assert pch.include_args(cxx, "compiler: clang\nversion: clang 17", INCLUDE_DIR, flags("a5", "aiv")) == []
    (tmp_path / "file").write_text("")
    _fresh(monkeypatch, tmp_path / "file" / "pch")    # a path that cannot be a directory
    assert pch.include_args(cxx, tid, INCLUDE_DIR, flags("a2a3", "aiv")) == []
    assert build_kernel(_cpp(), arch="a2a3", core_type="aiv")[:4] == b"\x7fELF"
