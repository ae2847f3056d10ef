"""The pipe between a Group's halves (pto.tpush_to_aiv / tpop_from_aic and back): what the
verifier accepts, and the C++ run on two threads the way the runtime runs a Group -- a
tile crosses, a mismatched pop fails with both shapes, and a half that fails stops the
other instead of leaving it waiting."""
import ctypes
import threading

import numpy as np
import pytest

from pypto.ptoas import PtoasError, compile_pto
from pypto.runtime import abi

from abi_helper import describe

T16 = "!pto.tile_buf<loc={loc}, dtype=f32, rows=16, cols={c}, v_row=16, v_col={c}, blayout={b}, " \
      "slayout={s}, fractal={f}, pad=0>"
VEC = T16.format(loc="vec", c=16, b="row_major", s="none_box", f=512)
ACC = T16.format(loc="acc", c=16, b="col_major", s="row_major", f=1024)
MAT = T16.format(loc="mat", c=16, b="col_major", s="row_major", f=512)


def group(cube_body: str, vector_body: str) -> str:
    """A module with a cube half and a vector half, each taking x, y and the pipe."""
    head = ("  func.func @g_{half}(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %__pypto_group_pipe: i64) "
            "attributes {{pto.kernel_kind = #pto.kernel_kind<{kind}>}} {{\n"
            "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
            "    %c16 = arith.constant 16 : index\n    %a0 = arith.constant 0 : i64\n"
            "    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] "
            "{{layout = #pto.layout<nd>}} : !pto.tensor_view<?x?xf32>\n"
            "    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] "
            "{{layout = #pto.layout<nd>}} : !pto.tensor_view<?x?xf32>\n"
            "    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
            "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>\n"
            "    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
            "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>\n")
    return ('module attributes {pto.target_arch = "a2a3"} {\n'
            + head.format(half="aic", kind="cube") + cube_body + "    return\n  }\n"
            + head.format(half="aiv", kind="vector") + vector_body + "    return\n  }\n}\n")


def run_group(tmp_path, text: str, x: np.ndarray, y: np.ndarray, statuses=None) -> list:
    """Both halves at once on threads of their own, as the runtime runs a Group block;
    returns each half's error (None when it succeeded); `statuses` gets their codes."""
    from pypto.cxx import build_kernel
    cpp = compile_pto(text, arch="a2a3", level="level3", source_name="g.pto").cpp
    path = tmp_path / "g.so"
    path.write_bytes(build_kernel(cpp, arch="a2a3", core_type="mix"))
    lib = ctypes.CDLL(str(path))
    entries = abi.core_group(lib, "g", "mix")[:2]
    pipe = np.zeros(abi.pipe_bytes(), dtype=np.uint8)
    pipe[:16] = np.array([abi.PIPE_SLOT_BYTES, abi.PIPE_DEPTH], dtype=np.int64).view(np.uint8)
    descs = [describe(x), describe(y)]
    args = (ctypes.c_int64 * (2 + abi.HIDDEN_ARGS))(*[ctypes.addressof(d) for d in descs])
    args[2 + 4] = pipe.ctypes.data
    errors, codes = [None, None], [0, 0]

    def half(i):
        err = ctypes.create_string_buffer(abi.ERR_LEN)
        codes[i] = entries[i](args, err, abi.ERR_LEN)
        if codes[i] != 0:
            errors[i] = err.value.decode()

    threads = [threading.Thread(target=half, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a half still waits"
    if statuses is not None:
        statuses[:] = codes
    return errors


LEFT = T16.format(loc="left", c=16, b="row_major", s="row_major", f=512)
RIGHT = T16.format(loc="right", c=16, b="row_major", s="col_major", f=512)


def test_tiles_cross_from_the_vector_half_to_the_cube_half(tmp_path):
    # the vector half loads x and sends it twice; the cube half receives both in Mat and
    # stores x @ x
    cube = (f"    %a8192 = arith.constant 8192 : i64\n"
            f"    %m = pto.alloc_tile addr = %a0 : {MAT}\n"
            f"    pto.tpop_from_aiv ins(%__pypto_group_pipe : i64) outs(%m : {MAT})\n"
            f"    %e = pto.alloc_tile addr = %a8192 : {MAT}\n"
            f"    pto.tpop_from_aiv ins(%__pypto_group_pipe : i64) outs(%e : {MAT})\n"
            f"    %l = pto.alloc_tile addr = %a0 : {LEFT}\n"
            f"    pto.tmov ins(%m : {MAT}) outs(%l : {LEFT})\n"
            f"    %r = pto.alloc_tile addr = %a0 : {RIGHT}\n"
            f"    pto.tmov ins(%e : {MAT}) outs(%r : {RIGHT})\n"
            f"    %o = pto.alloc_tile addr = %a0 : {ACC}\n"
            f"    pto.tmatmul ins(%l, %r : {LEFT}, {RIGHT}) outs(%o : {ACC})\n"
            f"    pto.tstore ins(%o : {ACC}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)\n")
    vector = (f"    %t = pto.alloc_tile addr = %a0 : {VEC}\n"
              f"    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {VEC})\n"
              f"    pto.tpush_to_aic ins(%t, %__pypto_group_pipe : {VEC}, i64)\n"
              f"    pto.tpush_to_aic ins(%t, %__pypto_group_pipe : {VEC}, i64)\n")
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 64
    y = np.zeros((16, 16), np.float32)
    assert run_group(tmp_path, group(cube, vector), x, y) == [None, None]
    np.testing.assert_allclose(y, x @ x, rtol=1e-5)


def test_a_pop_of_another_shape_fails_and_names_both(tmp_path):
    narrow = T16.format(loc="vec", c=8, b="row_major", s="none_box", f=512)
    cube = (f"    %o = pto.alloc_tile addr = %a0 : {ACC}\n"
            f"    pto.tpush_to_aiv ins(%o, %__pypto_group_pipe : {ACC}, i64)\n")
    vector = (f"    %t = pto.alloc_tile addr = %a0 : {narrow}\n"
              f"    pto.tpop_from_aic ins(%__pypto_group_pipe : i64) outs(%t : {narrow})\n")
    x, y = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    cube_err, vector_err = run_group(tmp_path, group(cube, vector), x, y)
    assert cube_err is None
    assert "tpop into a 16x8 tile" in vector_err and "pushed 16x16" in vector_err


def test_a_half_that_fails_stops_the_other(tmp_path):
    # the cube half fails before it pushes (a load at an offset known only when it runs,
    # outside its view); the vector half, waiting for the tile, stops at once instead of
    # after the 60 s timeout
    bad = "!pto.partition_tensor_view<16x16xf32>"
    cube = (f"    %far = arith.index_cast %__pypto_group_pipe : i64 to index\n"
            f"    %bp = pto.partition_view %xv, offsets = [%far, %c0], sizes = [%c16, %c16] : "
            f"!pto.tensor_view<?x?xf32> -> {bad}\n"
            f"    %m = pto.alloc_tile addr = %a0 : {MAT}\n"
            f"    pto.tload ins(%bp : {bad}) outs(%m : {MAT})\n"
            f"    %o = pto.alloc_tile addr = %a0 : {ACC}\n"
            f"    pto.tpush_to_aiv ins(%o, %__pypto_group_pipe : {ACC}, i64)\n")
    vector = (f"    %t = pto.alloc_tile addr = %a0 : {VEC}\n"
              f"    pto.tpop_from_aic ins(%__pypto_group_pipe : i64) outs(%t : {VEC})\n")
    x, y = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    codes = []
    cube_err, vector_err = run_group(tmp_path, group(cube, vector), x, y, codes)
    assert cube_err and "tpop" not in cube_err
    assert "the other half of the group stopped" in vector_err
    assert codes == [1, abi.KERNEL_STOPPED]     # the runtime tells them apart by code


@pytest.mark.parametrize("body, kind, msg", [
    (f"    %t = pto.alloc_tile addr = %a0 : {VEC}\n"
     f"    pto.tpush_to_aiv ins(%t, %__pypto_group_pipe : {VEC}, i64)\n", "vector",
     "runs in a cube kernel"),
    (f"    %t = pto.alloc_tile addr = %a0 : {MAT}\n"
     f"    pto.tpush_to_aiv ins(%t, %__pypto_group_pipe : {MAT}, i64)\n"
     f"    %u = pto.alloc_tile addr = %a0 : {MAT}\n"
     f"    pto.tpop_from_aiv ins(%__pypto_group_pipe : i64) outs(%u : {MAT})\n"
     f"    %w = pto.alloc_tile addr = %a0 : {ACC}\n"
     f"    pto.tpop_from_aiv ins(%__pypto_group_pipe : i64) outs(%w : {ACC})\n", "cube",
     "fills a mat tile, not a acc one"),
])
def test_the_verifier_checks_where_pipe_ops_run(body, kind, msg):
    text = group(body if kind == "cube" else "", body if kind == "vector" else "")
    with pytest.raises(PtoasError, match=msg):
        compile_pto(text, arch="a2a3", level="level3")
