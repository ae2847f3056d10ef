"""The orchestration generator: C++ that compiles, and that calls the API as the IR says."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import cg_programs as P
from pypto import dtype as dt
from pypto.codegen.orchestration import generate_orchestration
from pypto.errors import CodegenError, Span
from pypto.ir.nodes import (ArgDir, Assign, BinOp, Call, Const, Eval, For, FunctionType, If,
                            IterArg, Level, Param, ParamDirection as PD, Program, Return, Role,
                            RuntimeScope, ScalarType, TensorType, Var, Yield)

INCLUDE = Path(__file__).resolve().parents[2] / "pypto" / "include"
IDS = {"stage0": 0, "stage1": 1}

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

# A fake runtime: prints every API call, fails the submit numbered argv[1] (-1: none),
# passes tensors 1..T and the scalar bit patterns given as hex in argv[2..].
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "orch.cpp"

static int submits = 0, fail_at = -1;
static int64_t next_handle = 100;

static int64_t fake_alloc(void* ctx, int32_t dtype, int32_t nd, const int64_t* shape) {
    printf("alloc dtype=%d shape=", (int)dtype);
    for (int i = 0; i < nd; ++i) printf(i ? "x%lld" : "%lld", (long long)shape[i]);
    printf(" -> %lld\n", (long long)next_handle);
    (void)ctx;
    return next_handle++;
}
static int64_t fake_view(void*, int64_t, int32_t, const int64_t*, const int64_t*) { return 0; }
static int32_t fake_submit(void* ctx, int32_t k, int32_t n, const int64_t* t, const int32_t* d,
                           int32_t ns, const uint64_t* s) {
    printf("submit %d", (int)k);
    for (int i = 0; i < n; ++i) printf(" t%lld:%d", (long long)t[i], (int)d[i]);
    for (int i = 0; i < ns; ++i) printf(" s%llx", (unsigned long long)s[i]);
    printf("\n");
    (void)ctx;
    return submits++ == fail_at ? 7 : 0;
}
static void fake_begin(void*, int32_t manual) { printf("begin %d\n", (int)manual); }
static void fake_end(void*) { printf("end\n"); }
static int32_t fake_read(void*, int64_t, int32_t, const int64_t*, uint64_t*) { return 1; }
static void fake_fail(void*, const char*) {}
static int64_t fake_dim(void*, int64_t, int32_t) { return -1; }
static int64_t tasks = 0;
static void fake_predicate(void*, int64_t, int32_t, const int64_t*, int32_t, double) {}
static int64_t fake_reshape(void*, int64_t, int32_t, const int64_t*) { return 0; }
static int64_t fake_transpose(void*, int64_t, int32_t, int32_t) { return 0; }
static int64_t fake_submit_task(void* ctx, int32_t k, int32_t n, const int64_t* t, const int32_t* d,
                                int32_t ns, const uint64_t* s, int32_t nd, const int64_t* deps,
                                int32_t blocks, int32_t) {
    if (blocks != 1) printf("blocks %d\n", (int)blocks);
    for (int i = 0; i < nd; ++i) printf("dep %lld\n", (long long)deps[i]);
    return fake_submit(ctx, k, n, t, d, ns, s) == 0 ? tasks++ : -1;
}

int main(int argc, char** argv) {
    fail_at = atoi(argv[1]);
    uint64_t scalars[16] = {0};
    for (int i = 2; i < argc; ++i) scalars[i - 2] = strtoull(argv[i], 0, 16);
    int64_t tensors[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    PyptoRuntimeApi api = {0, fake_alloc, fake_view, fake_submit, fake_begin, fake_end,
                           fake_read, fake_fail, fake_dim, fake_submit_task, fake_predicate,
                           fake_reshape, fake_transpose};
    int rc = pypto_orchestration_entry(&api, tensors, scalars);
    printf("rc %d\n", rc);
    return 0;
}
"""


def build_harness(tmp_path: Path, cpp: str) -> Path:
    (tmp_path / "orch.cpp").write_text(cpp)
    (tmp_path / "main.cpp").write_text(HARNESS)
    exe = tmp_path / "harness"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
                    f"-I{INCLUDE}", "main.cpp", "-o", str(exe)],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    return exe


def run(exe: Path, fail_at: int, *scalars: int) -> list[str]:
    out = subprocess.run([str(exe), str(fail_at), *(f"{s:x}" for s in scalars)],
                         check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def f32bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


# ----------------------------------------------------------------------------- text
def test_two_stage_text():
    cpp = generate_orchestration(P.two_stage(), "two_stage", IDS)
    assert '#include "pypto_abi.h"' in cpp
    assert ('extern "C" int32_t pypto_orchestration_entry(const PyptoRuntimeApi* api, '
            'const int64_t* tensors,') in cpp
    assert "const int64_t x = tensors[0];" in cpp and "const int64_t y = tensors[1];" in cpp
    assert "const float alpha = pypto_f32_from_bits(scalars[0]);" in cpp
    assert "const int64_t n_iter = (int64_t)scalars[1];" in cpp
    assert "api->alloc_tensor(api->ctx, PYPTO_FP32, 2, tmp_shape)" in cpp
    assert "api->scope_begin(api->ctx, 0);" in cpp and "api->scope_end(api->ctx);" in cpp
    assert "// orch.py:12: tmp__ssa_v1 = stage0(x, tmp, alpha)" in cpp
    assert "const int32_t dirs[2] = {PYPTO_DIR_INPUT, PYPTO_DIR_INOUT};" in cpp
    # the second call reads the first call's result, which is the tensor tmp itself
    assert "const int64_t args[2] = {tmp, y__iter_v1};" in cpp
    # the constant scalar is encoded at compile time
    assert "UINT64_C(0x3F000000)" in cpp
    # only the API struct: no runtime symbols besides the entry
    for word in ("malloc", "printf", "dlsym", "std::"):
        assert word not in cpp


def test_deterministic():
    a = generate_orchestration(P.two_stage(), "two_stage", IDS)
    assert a == generate_orchestration(P.two_stage(), "two_stage", IDS)
    b = generate_orchestration(P.quickstart(), "add", {"add_incore_0": 0})
    assert b == generate_orchestration(P.quickstart(), "add", {"add_incore_0": 0})


@needs_gxx
@pytest.mark.parametrize("build,name,ids", [(P.two_stage, "two_stage", IDS),
                                            (P.quickstart, "add", {"add_incore_0": 3})])
def test_compiles_syntax_only(tmp_path, build, name, ids):
    cpp = generate_orchestration(build(), name, ids)
    src = tmp_path / "orch.cpp"
    src.write_text(cpp)
    res = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                          f"-I{INCLUDE}", str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# ----------------------------------------------------------------------------- behaviour
@needs_gxx
def test_two_stage_calls(tmp_path):
    exe = build_harness(tmp_path, generate_orchestration(P.two_stage(), "two_stage", IDS))
    alpha = f32bits(0.25)
    k0 = "submit 0 t1:0 t100:3 s3e800000"
    assert run(exe, -1, alpha, 2) == [
        "alloc dtype=0 shape=64x64 -> 100",
        "begin 0", k0, "submit 1 t100:0 t2:2 s1", "end",
        "begin 0", k0, "submit 1 t100:0 t2:2 s2", "end",
        "submit 0 t2:0 t100:3 s3f000000",
        "rc 0"]
    # zero iterations: only the allocation and the last call
    assert run(exe, -1, alpha, 0) == ["alloc dtype=0 shape=64x64 -> 100",
                                      "submit 0 t2:0 t100:3 s3f000000", "rc 0"]
    # a refused submit inside the scope: the scope is closed, the entry returns non-zero
    assert run(exe, 1, alpha, 3) == [
        "alloc dtype=0 shape=64x64 -> 100", "begin 0", k0, "submit 1 t100:0 t2:2 s1", "end", "rc 2"]


@needs_gxx
def test_quickstart_calls(tmp_path):
    exe = build_harness(tmp_path, generate_orchestration(P.quickstart(), "add", {"add_incore_0": 5}))
    assert run(exe, -1) == ["begin 0", "submit 5 t1:0 t2:0 t3:3", "end", "rc 0"]
    assert run(exe, 0) == ["begin 0", "submit 5 t1:0 t2:0 t3:3", "end", "rc 2"]


def _orch(params, body, kernels):
    orch = Function_("main", params, body)
    return Program("p", kernels + [orch], "orch.py")


def Function_(name, params, body, rets=()):
    from pypto.ir.nodes import Function
    return Function(name, params, list(rets), body, FunctionType.Orchestration, Level.CHIP,
                    Role.Orchestrator, {}, Span("orch.py", 1, 5))


def _k(name, params):
    return P.kernel(name, params, [])


@needs_gxx
def test_scalar_encodings_and_if(tmp_path):
    """Scalars of every width travel as the runtime expects; an if picks a kernel; a
    manual scope; an if with a tensor result."""
    kp = [Param(P.tensor("t", [4, 8]), PD.InOut),
          Param(Var("h", ScalarType(dt.FP16))), Param(Var("b", ScalarType(dt.BF16))),
          Param(Var("i8", ScalarType(dt.INT8))), Param(Var("u8", ScalarType(dt.UINT8))),
          Param(Var("flag", ScalarType(dt.BOOL))), Param(Var("n", ScalarType(dt.INT32)))]
    k = _k("kern", kp)
    t = P.tensor("t", [4, 8])
    h = Var("h", ScalarType(dt.FP16))
    n = Var("n", ScalarType(dt.INT32))
    r = Var("r", t.type)
    r2 = Var("r2", t.type)
    rv = Var("rv", t.type)
    call = lambda args, res=None: Call("@kern", [t] + args, {}, t.type,
                                       {"arg_directions": [ArgDir.inout] + [ArgDir.scalar] * 6})
    body = [
        RuntimeScope([
            Eval(call([h, Const(-2.5, dt.BF16), Const(-3, dt.INT8), Const(250, dt.UINT8),
                       Const(True, dt.BOOL), BinOp("-", n, Const(10, dt.INT32), dt.INT32)]), Span("orch.py", 3, 9)),
        ], manual=True, span=Span("orch.py", 2, 5)),
        If(BinOp(">", n, Const(0, dt.INT32), dt.BOOL),
           [Assign(r, call([Const(1.0, dt.FP16), h, Const(1, dt.INT8), Const(1, dt.UINT8),
                            BinOp("<", n, Const(3, dt.INT32), dt.BOOL), n])), Yield([r])],
           [Assign(r2, t), Yield([r2])], [rv], span=Span("orch.py", 4, 5)),
        Eval(Call("@kern", [rv, h, h, Const(0, dt.INT8), Const(0, dt.UINT8), Const(False, dt.BOOL), n], {}, t.type,
                  {"arg_directions": [ArgDir.input] + [ArgDir.scalar] * 6}), Span("orch.py", 6, 5)),
        Return([], Span("orch.py", 7, 5)),
    ]
    prog = _orch([Param(t, PD.InOut), Param(h), Param(n)], body, [k])
    cpp = generate_orchestration(prog, "main", {"kern": 9})
    exe = build_harness(tmp_path, cpp)
    h_bits = struct.unpack("<H", struct.pack("<e", 0.333251953125))[0]
    bf_neg25 = 0xC020
    lines = run(exe, -1, h_bits, 5)
    assert lines[0] == "begin 1"
    assert lines[1] == f"submit 9 t1:2 s{h_bits:x} s{bf_neg25:x} sfffffffffffffffd sfa s1 sfffffffffffffffb"
    assert lines[2] == "end"
    # n=5 > 0: the then-branch call, fp16 1.0 = 0x3c00, h re-encoded as bf16 (rounded)
    bf_h = (f32bits(0.333251953125) + 0x7FFF + ((f32bits(0.333251953125) >> 16) & 1)) >> 16
    assert lines[3] == f"submit 9 t1:2 s3c00 s{bf_h:x} s1 s1 s0 s5"
    assert lines[4] == f"submit 9 t1:0 s{h_bits:x} s{bf_h:x} s0 s0 s0 s5"
    assert lines[5] == "rc 0"
    lines = run(exe, -1, h_bits, 0)
    assert lines[3] == f"submit 9 t1:0 s{h_bits:x} s{bf_h:x} s0 s0 s0 s0" and lines[4] == "rc 0"


@needs_gxx
def test_f16_and_bf16_helpers_match_python(tmp_path):
    """The C++ bit-pattern helpers agree with Python's struct for fp16 and the runtime's
    round-to-nearest-even for bf16, including subnormals, overflow and ties."""
    values = [0.0, -0.0, 1.0, -2.5, 0.1, 65504.0, 65519.0, 65520.0, 1e6, 6.1e-5, 5.96e-8, 2.98e-8,
              3e-8, 1e-10, 0.333251953125, 1.0009765625, 1.00048828125, 1.000732421875,
              float("inf"), float("-inf"), 3.14159, -7.0e-6]
    prog = P.two_stage()
    cpp = generate_orchestration(prog, "two_stage", IDS)
    (tmp_path / "orch.cpp").write_text(cpp)
    main = "#include <stdio.h>\n#include \"orch.cpp\"\nint main(){\n  float v[] = {" + \
        ", ".join(("__builtin_inff()" if v == float("inf") else "-__builtin_inff()" if v == float("-inf")
                   else repr(v) + "f") for v in values) + "};\n" + \
        "  for (unsigned i = 0; i < sizeof v / sizeof v[0]; ++i)\n" \
        "    printf(\"%llx %llx %08llx\\n\", (unsigned long long)pypto_bits_f16(v[i]), " \
        "(unsigned long long)pypto_bits_bf16(v[i]), " \
        "(unsigned long long)pypto_bits_f32(pypto_f32_from_f16(pypto_bits_f16(v[i]))));\n}\n"
    (tmp_path / "m.cpp").write_text(main)
    subprocess.run(["g++", "-std=c++17", f"-I{INCLUDE}", "m.cpp", "-o", "m"], cwd=tmp_path,
                   check=True, capture_output=True)
    got = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True).stdout.split("\n")
    from pypto.codegen.common import float_bits
    for v, line in zip(values, got):
        f32 = struct.unpack("<f", struct.pack("<f", v))[0]
        try:
            h = struct.unpack("<H", struct.pack("<e", f32))[0]
        except OverflowError:
            h = 0x7C00 | (0x8000 if f32 < 0 else 0)
        back = struct.unpack("<I", struct.pack("<f", struct.unpack("<e", struct.pack("<H", h))[0]))[0]
        assert line == f"{h:x} {float_bits(f32, 'bf16'):x} {back:08x}", v


# ----------------------------------------------------------------------------- results and aliases
@needs_gxx
def test_multi_output_eval_and_loop_carried_scalar(tmp_path):
    """A kernel writing two tensors (Eval), an intermediate consumed later, a carried
    scalar in a loop (int accumulation) passed to a kernel."""
    kp = [Param(P.tensor("a", [8, 8])), Param(P.tensor("o1", [8, 8]), PD.Out),
          Param(P.tensor("o2", [8, 8]), PD.Out)]
    k2 = _k("split", kp)
    k1 = _k("use", [Param(P.tensor("a", [8, 8])), Param(P.tensor("b", [8, 8]), PD.InOut),
                    Param(Var("s", ScalarType(dt.INDEX)))])
    a, b = P.tensor("a", [8, 8]), P.tensor("b", [8, 8])
    o1 = Var("o1", TensorType((8, 8), dt.FP32))
    o2 = Var("o2", TensorType((8, 8), dt.FP32))
    i = Var("i", ScalarType(dt.INDEX))
    acc, acc2, accr = (Var(n, ScalarType(dt.INDEX)) for n in ("acc", "acc2", "accr"))
    body = [
        Assign(o1, Call("tensor.create", [P.tup(8, 8)], {"dtype": dt.FP32})),
        Assign(o2, Call("tensor.create", [P.tup(8, BinOp("*", Const(4, dt.INDEX), Const(2, dt.INDEX), dt.INDEX))],
                        {"dtype": dt.FP16})),
        Eval(Call("@split", [a, o1, o2], {}, None)),     # no arg_directions: from the params
        For(i, Const(1, dt.INDEX), Const(7, dt.INDEX), Const(3, dt.INDEX), [
            Assign(acc2, BinOp("+", acc, BinOp("//", i, Const(2, dt.INDEX), dt.INDEX), dt.INDEX)),
            Eval(Call("@use", [o2, b, acc2], {}, None)),
            Yield([acc2])], [IterArg(acc, Const(10, dt.INDEX))], [accr]),
        Eval(Call("@use", [o1, b, accr], {}, None)),
    ]
    prog = _orch([Param(a), Param(b, PD.InOut)], body, [k2, k1])
    exe = build_harness(tmp_path, generate_orchestration(prog, "main", {"split": 0, "use": 1}))
    assert run(exe, -1) == [
        "alloc dtype=0 shape=8x8 -> 100", "alloc dtype=1 shape=8x8 -> 101",
        "submit 0 t1:0 t100:3 t101:3",
        "submit 1 t101:0 t2:2 sa",        # i=1: 10 + 0
        "submit 1 t101:0 t2:2 sc",        # i=4: 10 + 2
        "submit 1 t100:0 t2:2 sc",
        "rc 0"]


def test_call_result_aliases_the_written_argument():
    """`r = k(x, out)` then `k(r, out2)`: r is out's handle (the kernel body tells which)."""
    kx = P.tensor("x", [4, 8])
    ko = P.tensor("o", [4, 8])
    st = Var("o1", ko.type)
    t = P.tile("t", [4, 8], P.M.Vec)
    kbody = [Assign(t, P.load(kx, [0, 0], [4, 8])), Assign(st, Call("tile.store", [t, P.tup(0, 0), ko])),
             Return([st])]
    k = P.kernel("copy", [Param(kx), Param(ko, PD.InOut)], kbody)
    x, o, o2 = P.tensor("x", [4, 8]), P.tensor("o", [4, 8]), P.tensor("o2", [4, 8])
    r = Var("r", o.type)
    body = [Assign(r, Call("@copy", [x, o], {}, o.type)),
            Eval(Call("@copy", [r, o2], {}, o.type)), Return([o2])]
    cpp = generate_orchestration(_orch([Param(x), Param(o, PD.InOut), Param(o2, PD.InOut)], body, [k]),
                                 "main", {"copy": 0})
    assert "const int64_t args[2] = {x, o};" in cpp
    assert "const int64_t args[2] = {o, o2};" in cpp
    assert "{PYPTO_DIR_INPUT, PYPTO_DIR_INOUT}" in cpp


def test_names_that_clash_with_cpp_are_renamed():
    kp = [Param(P.tensor("new", [4, 8]), PD.InOut), Param(Var("int", ScalarType(dt.INT32)))]
    k = _k("kern", kp)
    t_new = P.tensor("new", [4, 8])
    args = P.tensor("args", [4, 8])
    n = Var("int", ScalarType(dt.INT32))
    body = [Eval(Call("@kern", [t_new, n], {}, None)), Eval(Call("@kern", [args, n], {}, None))]
    cpp = generate_orchestration(_orch([Param(t_new, PD.InOut), Param(args, PD.InOut), Param(n)], body, [k]),
                                 "main", {"kern": 0})
    assert "const int64_t new_1 = tensors[0];" in cpp
    assert "const int64_t args_1 = tensors[1];" in cpp
    assert "const int32_t int_1 = (int32_t)(int64_t)scalars[0];" in cpp
    assert "const int64_t args[1] = {args_1};" in cpp


# ----------------------------------------------------------------------------- errors
def test_tensor_op_in_orchestration_raises_with_span():
    x = P.tensor("x", [4, 8])
    bad = Span("orch.py", 5, 9)
    body = [Assign(Var("y", x.type), Call("tensor.add", [x, x], {}, x.type), bad)]
    with pytest.raises(CodegenError, match="tensor.add cannot run in an orchestration") as ei:
        generate_orchestration(_orch([Param(x)], body, []), "main", {})
    assert ei.value.span == bad


def test_unknown_kernel_id_and_non_kernel_callee():
    prog = P.two_stage()
    with pytest.raises(CodegenError, match="'stage1' has no func_id"):
        generate_orchestration(prog, "two_stage", {"stage0": 0})
    with pytest.raises(CodegenError, match="not an Orchestration"):
        generate_orchestration(prog, "stage0", IDS)


def test_direction_mismatch_raises():
    prog = P.two_stage()
    orch = prog.get("two_stage")
    loop = orch.body[1]
    call = loop.body[0].body[0].value
    call.attrs["arg_directions"] = [ArgDir.input, ArgDir.output_existing]
    with pytest.raises(CodegenError, match="arg_directions has 2 entries for 3 arguments"):
        generate_orchestration(prog, "two_stage", IDS)
    call.attrs["arg_directions"] = [ArgDir.input, ArgDir.scalar, ArgDir.scalar]
    with pytest.raises(CodegenError, match="is a tensor but its direction"):
        generate_orchestration(prog, "two_stage", IDS)


def test_signature_only_callee_uses_the_written_argument():
    """The build hands codegen kernels without bodies: the written argument is the result."""
    prog = P.quickstart()
    k = prog.get("add_incore_0")
    k.body = []
    cpp = generate_orchestration(prog, "add", {"add_incore_0": 0})
    assert "submit_task(api->ctx, 0, 3, args, dirs, 0, nullptr, 0, nullptr, 1, 0)" in cpp
