"""Run-time checks of the tile library: bad accesses come back as error strings that name
the op's source location, never as a crash; each thread is a core with its own buffers."""
import threading
from pathlib import Path

import numpy as np

from ptogen import Pto, offset_window, tile_type

DATA = Path(__file__).parent / "data"


def test_tload_outside_the_tensor_returns_a_located_error(make_kernel):
    p = offset_window()
    kern = make_kernel(p.text())
    src = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    out = np.zeros((16, 32), np.float32)
    assert kern(src, out, scalars=[48]) is None  # the last block is fine
    np.testing.assert_array_equal(out, src[48:])
    err = kern(src, out, scalars=[56])
    tload_line = next(i for i, l in enumerate(p.body, 1) if "pto.tload" in l)
    assert err is not None and err.startswith(f"t.py:{tload_line}:1: pto.tload: error:")
    assert "partition [56, 72) of dim 0 is outside the tensor view's extent 64" in err
    assert kern(src, out, scalars=[0]) is None  # the kernel (and the process) carry on


def test_tensor_smaller_than_the_view_is_refused(make_kernel):
    kern = make_kernel((DATA / "quickstart_add_incore_0.pto").read_text())
    a = np.zeros((64, 128), np.float32)  # the kernel's view is 128x128
    b, out = np.zeros((128, 128), np.float32), np.zeros((128, 128), np.float32)
    err = kern(a, b, out)
    assert err.startswith("quickstart.py:16:5: pto.make_tensor_view: error:")
    assert "view dim 0 has extent 128 but tensor" in err and "has only 64" in err


def test_wrong_tensor_dtype_is_refused(make_kernel):
    kern = make_kernel((DATA / "quickstart_add_incore_0.pto").read_text())
    a = np.zeros((128, 128), np.float16)
    err = kern(a, np.zeros((128, 128), np.float32), np.zeros((128, 128), np.float32))
    assert "tensor argument %arg0" in err and "dtype code 1, the kernel expects 0" in err


def test_run_time_tile_address_is_checked(make_kernel):
    t = tile_type("vec", "f32", 16, 32)
    text = f"""\
module {{
  func.func @dyn(%arg0: !pto.ptr<f32>, %arg1: i64) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %t = pto.alloc_tile addr = %arg1 valid_row = %c16 valid_col = %c32 : {t} loc("dyn.py":7:3)
    pto.texpands ins(%c16 : index) outs(%t : {t}) loc("dyn.py":8:3)
    return
  }}
}}
"""
    kern = make_kernel(text)
    dummy = np.zeros((1, 8), np.float32)
    assert kern(dummy, scalars=[0]) is None
    assert kern(dummy, scalars=[188416 - 2048]) is None  # the last 2 KiB of UB
    err = kern(dummy, scalars=[188416 - 1024])
    assert err.startswith("dyn.py:7:3: pto.alloc_tile: error:") and "overflows vec" in err
    assert "not a 32-byte aligned" in kern(dummy, scalars=[48])


def test_each_thread_is_a_core_with_private_buffers(make_kernel):
    kern = make_kernel((DATA / "quickstart_add_incore_0.pto").read_text())
    failures = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a, b = rng.standard_normal((2, 128, 128), dtype=np.float32)
            out = np.zeros_like(a)
            err = kern(a, b, out)
            if err or not np.array_equal(out, a + b):
                failures.append((seed, err))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_runtime_capacity_follows_the_build_arch(tmp_path):
    """A tile at [128 KiB, 192 KiB) of UB: fine on a5 (240 KiB), an error on a2a3 (184 KiB)."""
    from abi_helper import Kernel
    from pypto.ptoas import compile_pto
    from pypto.cxx import build_kernel

    p = Pto("hi", [("f32", (128, 128)), ("f32", (128, 128))], arch="a5")
    t = p.tile("t", "vec", "f32", 128, 128, addr=131072)
    p.load(t, 0)
    p.store(t, 1)
    cpp = compile_pto(p.text(), arch="a5").cpp
    a = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    out = np.zeros_like(a)
    assert Kernel(build_kernel(cpp, arch="a5", core_type="aiv"), tmp_path)(a, out) is None
    np.testing.assert_array_equal(out, a)
    err = Kernel(build_kernel(cpp, arch="a2a3", core_type="aiv"), tmp_path)(a, out)
    assert "overflows vec (capacity 188416 bytes on a2a3)" in err


def test_rank3_partition_flattens_leading_dims(make_kernel):
    p = Pto("r3", [("f32", (4, 8, 32)), ("f32", (16, 32))])
    t = p.tile("t", "vec", "f32", 16, 32)
    p.load(t, 0, offs=(1, 0, 0), sizes=(2, 8, 32))
    p.store(t, 1)
    kern = make_kernel(p.text())
    x = np.arange(4 * 8 * 32, dtype=np.float32).reshape(4, 8, 32)
    out = np.zeros((16, 32), np.float32)
    assert kern(x, out) is None
    np.testing.assert_array_equal(out, x[1:3].reshape(16, 32))


def test_module_with_two_functions_exports_each_by_name(tmp_path):
    import ctypes

    from pypto.ptoas import compile_pto
    from pypto.cxx import build_kernel

    text = (DATA / "quickstart_add_incore_0.pto").read_text()
    body = text[text.index("  func.func"):text.rindex("}")]
    two = text.replace(body, body + body.replace("@add_incore_0", "@add_twin"))
    r = compile_pto(two)
    assert r.kernel_info["functions"] == ["add_incore_0", "add_twin"]
    so = tmp_path / "two.so"
    so.write_bytes(build_kernel(r.cpp, arch="a2a3", core_type="aiv"))
    lib = ctypes.CDLL(str(so))
    for sym in ("pypto_kernel_entry", "pypto_kernel_entry__add_incore_0", "pypto_kernel_entry__add_twin"):
        assert hasattr(lib, sym)


def test_library_refuses_a5_only_moves_in_an_a2a3_build(tmp_path):
    from abi_helper import Kernel
    from pypto.ptoas import compile_pto
    from pypto.cxx import build_kernel

    p = Pto("fuse", [("f32", (16, 16))], kind="", arch="a5")
    acc, v = p.tile("acc", "acc", "f32", 16, 16), p.tile("v", "vec", "f32", 16, 16)
    p.op("tmov", [acc], v)
    p.store(v, 0)
    cpp = compile_pto(p.text(), arch="a5").cpp
    out = np.zeros((16, 16), np.float32)
    assert Kernel(build_kernel(cpp, arch="a5", core_type="aic"), tmp_path)(out) is None
    err = Kernel(build_kernel(cpp, arch="a2a3", core_type="aic"), tmp_path)(out)
    assert "tmov acc -> vec is not a data path on a2a3" in err


def test_trailing_dynamic_dim_is_read_from_the_tensor_descriptor(make_kernel):
    """`%M` is a shape operand of %arg0's view: the caller passes only the scalar %arg2
    (a block count); the wrapper reads M from the descriptor of %arg0."""
    t = tile_type("vec", "f32", 16, 32)
    ptv = "!pto.partition_tensor_view<16x32xf32>"
    text = f"""\
module {{
  func.func @rows(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, %arg2: index, %M: index) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0_i64 = arith.constant 0 : i64
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %x = pto.make_tensor_view %arg0, shape = [%M, %c32], strides = [%c32, %c1] {{layout = #pto.layout<nd>}} : !pto.tensor_view<?x?xf32> loc("rows.py":3:1)
    %y = pto.make_tensor_view %arg1, shape = [%M, %c32], strides = [%c32, %c1] {{layout = #pto.layout<nd>}} : !pto.tensor_view<?x?xf32> loc("rows.py":3:1)
    scf.for %i = %c0 to %arg2 step %c1 {{
      %t = pto.alloc_tile addr = %c0_i64 valid_row = %c16 valid_col = %c32 : {t} loc("rows.py":5:3)
      %o = arith.muli %i, %c16 : index loc("rows.py":5:3)
      %xp = pto.partition_view %x, offsets = [%o, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> -> {ptv} loc("rows.py":5:3)
      pto.tload ins(%xp : {ptv}) outs(%t : {t}) loc("rows.py":5:3)
      pto.tabs ins(%t : {t}) outs(%t : {t}) loc("rows.py":6:3)
      %yp = pto.partition_view %y, offsets = [%o, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> -> {ptv} loc("rows.py":7:3)
      pto.tstore ins(%t : {t}) outs(%yp : {ptv}) loc("rows.py":7:3)
    }}
    return
  }}
}}
"""
    kern = make_kernel(text)
    assert kern.info()["scalar_params"] == 1
    for m in (32, 64):
        x = np.random.default_rng(m).standard_normal((m, 32)).astype(np.float32)
        y = np.zeros_like(x)
        assert kern(x, y, scalars=[m // 16]) is None
        np.testing.assert_array_equal(y, np.abs(x))
    err = kern(np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32), scalars=[3])
    assert err is not None and "partition [32, 48) of dim 0 is outside the tensor view's extent 32" in err
