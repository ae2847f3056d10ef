"""Declared multi-slot allocations: `pl.MemRef("name", slots=N)[index]` on a tile's type
puts it in slot `index` of one allocation of N equal slots. Each program keeps two slots
live at once, so an address that collapsed onto one slot (an index folded away, a stride
of 0, a region MemoryReuse shared with another buffer) makes the result visibly wrong."""
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.ir import MemoryPlanner

from prog_helpers import CFG, close, randn

TR, TC, STEPS = 32, 64, 4
ROWS = TR * STEPS
PINGPONG = pl.MemRef(slots=2)       # bound next to the program: known by this name
CONST = pl.MemRef(slots=2)


@pl.program
class CoLiveSlots:
    """Two Vec slots live together each iteration, chosen by i % 2 and (i + 1) % 2."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[ROWS, TC], pl.FP32], b: pl.Tensor[[ROWS, TC], pl.FP32],
               out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        for i in pl.range(STEPS):
            x: pl.Tile[[TR, TC], pl.FP32, PINGPONG[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec)
            y: pl.Tile[[TR, TC], pl.FP32, PINGPONG[(i + 1) % 2], pl.Mem.Vec] = pl.load(
                b, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec)
            d: pl.Tile[[TR, TC], pl.FP32, pl.Mem.Vec] = pl.sub(x, y)
            out = pl.store(d, [i * TR, 0], out)
        # a second loop over the same name `i`: its slot indices must follow this loop's i
        for i in pl.range(STEPS):
            x2: pl.Tile[[TR, TC], pl.FP32, PINGPONG[(i + 1) % 2], pl.Mem.Vec] = pl.load(
                out, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec)
            y2: pl.Tile[[TR, TC], pl.FP32, PINGPONG[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec)
            m: pl.Tile[[TR, TC], pl.FP32, pl.Mem.Vec] = pl.mul(x2, y2)
            out = pl.store(m, [i * TR, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[ROWS, TC], pl.FP32], b: pl.Tensor[[ROWS, TC], pl.FP32],
                     out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


@pl.program
class ConstSlots:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[TR, TC], pl.FP32], b: pl.Tensor[[TR, TC], pl.FP32],
               out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        x: pl.Tile[[TR, TC], pl.FP32, CONST[1], pl.Mem.Vec] = pl.load(a, [0, 0], [TR, TC], target_memory=pl.Mem.Vec)
        y: pl.Tile[[TR, TC], pl.FP32, CONST[0], pl.Mem.Vec] = pl.load(b, [0, 0], [TR, TC], target_memory=pl.Mem.Vec)
        d: pl.Tile[[TR, TC], pl.FP32, pl.Mem.Vec] = pl.sub(x, y)
        out = pl.store(d, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[TR, TC], pl.FP32], b: pl.Tensor[[TR, TC], pl.FP32],
                     out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


M, K, N, TN = 64, 64, 256, 64


@pl.jit
def acc_slots(a: pl.Tensor[[M, K], pl.FP32], a2: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
              o1: pl.Out[pl.Tensor[[M, N], pl.FP32]], o2: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    """Two matmuls per column tile into the two L0C slots of an inline declaration."""
    for _ in pl.spmd(1, name_hint="acc_slots"):
        la: pl.Tile[[M, K], pl.FP32, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        la2: pl.Tile[[M, K], pl.FP32, pl.Mem.Mat] = pl.load(a2, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        for j in pl.range(N // TN):
            lb: pl.Tile[[K, TN], pl.FP32, pl.Mem.Mat] = pl.load(b, [0, j * TN], [K, TN], target_memory=pl.Mem.Mat)
            c1: pl.Tile[[M, TN], pl.FP32, pl.MemRef("l0c", slots=2)[j % 2], pl.Mem.Acc] = pl.tile.matmul(la, lb)
            c2: pl.Tile[[M, TN], pl.FP32, pl.MemRef("l0c", slots=2)[(j + 1) % 2], pl.Mem.Acc] = \
                pl.tile.matmul(la2, lb)
            pl.store(c1, [0, j * TN], o1)
            pl.store(c2, [0, j * TN], o2)


def _ab(seed):
    return randn(ROWS, TC, seed=seed), randn(ROWS, TC, seed=seed + 1)


@pytest.mark.parametrize("planner", [MemoryPlanner.PYPTO, MemoryPlanner.DSA_RP], ids=["pypto", "dsa_rp"])
def test_runtime_indexed_slots_stay_apart(tmp_path, planner):
    a, b = _ab(70)
    out = torch.zeros(ROWS, TC)
    c = ir.compile(CoLiveSlots, output_dir=str(tmp_path), platform="a2a3sim", memory_planner=planner)
    c(a, b, out)
    close(out, (a - b) * a, 1e-6, 1e-6)
    pto = next((tmp_path / "ptoas").glob("*.pto")).read_text()
    # the address is computed from the index at run time; the slot is 32 x 64 x 4 bytes
    assert "arith.remsi" in pto and "%c8192_index" in pto
    allocs = (tmp_path / "passes_dump").glob("*after_InitMemRef.py")
    text = next(allocs).read_text()
    assert text.count('attrs={"slots": 2}') == 1, "one region for both slots of PINGPONG"
    assert 'pl.MemRef("PINGPONG", slots=2)[i % 2]' in text


def test_constant_slots_fold_to_addresses(tmp_path):
    a, b = randn(TR, TC, seed=72), randn(TR, TC, seed=73)
    out = torch.zeros(TR, TC)
    c = ir.compile(ConstSlots, output_dir=str(tmp_path), platform="a2a3sim")
    c(a, b, out)
    close(out, a - b, 1e-6, 1e-6)
    pto = next((tmp_path / "ptoas").glob("*.pto")).read_text()
    x = next(ln for ln in pto.splitlines() if "%x = pto.alloc_tile" in ln)
    y = next(ln for ln in pto.splitlines() if "%y = pto.alloc_tile" in ln)
    assert "addr = %c8192_i64" in x and "addr = %c0_i64" in y       # slot 1, slot 0


def test_slots_survive_the_text_round_trip(tmp_path, monkeypatch):
    """Every pass task parses the previous dump: with the in-process shortcut off, the
    slot index and the region's slot count come back from the printed text."""
    import pypto.stages.text as text
    monkeypatch.setattr(text, "enabled", False)
    a, b = _ab(74)
    out = torch.zeros(ROWS, TC)
    ir.compile(CoLiveSlots, output_dir=str(tmp_path), platform="a2a3sim",
               memory_planner=MemoryPlanner.DSA_RP)(a, b, out)
    close(out, (a - b) * a, 1e-6, 1e-6)


def test_acc_slots_inline_declaration_under_jit():
    a, a2, b = randn(M, K, seed=75), randn(M, K, seed=76), randn(K, N, seed=77)
    o1, o2 = torch.zeros(M, N), torch.zeros(M, N)
    acc_slots(a, a2, b, o1, o2, config=CFG)
    close(o1, a @ b, 1e-4, 1e-4, "slot j % 2")
    close(o2, a2 @ b, 1e-4, 1e-4, "slot (j + 1) % 2")


# ----------------------------------------------------------------------------- bad programs
def _kernel_src(ann_x: str, ann_y: str = "pl.Mem.Vec", decl: str = "R = pl.MemRef(slots=2)") -> str:
    return f'''
import pypto.language as pl
{decl}

@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(2):
            x: pl.Tile[[32, 64], pl.FP32, {ann_x}] = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Vec)
            y: pl.Tile[[32, 64], pl.FP32, {ann_y}] = pl.add(x, x)
            out = pl.store(y, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        out = self.kernel(a, out)
        return out
'''


def _compile_src(tmp_path, src: str, **kw):
    path = tmp_path / "bad_slots.py"
    path.write_text(src)
    import importlib.util
    spec = importlib.util.spec_from_file_location("bad_slots", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return ir.compile(mod.Bad, output_dir=str(tmp_path / "out"), platform="a2a3sim", **kw)


@pytest.mark.parametrize("ann,msg", [
    ("R[2], pl.Mem.Vec", r"slot 2 of a 2-slot allocation"),
    ("R[1.5], pl.Mem.Vec", r"slot index 1\.5 is not an integer"),
    ('pl.MemRef("r", slots=0)[0], pl.Mem.Vec', r"1 to 16 slots"),
    ("S[0], pl.Mem.Vec", r"not a pl\.MemRef\(\.\.\., slots=N\) declaration"),
])
def test_bad_slot_annotations_name_the_line(tmp_path, ann, msg):
    with pytest.raises(E.ParserError, match=msg) as e:
        _compile_src(tmp_path, _kernel_src(ann, decl="R = pl.MemRef(slots=2)\nS = [1, 2]"))
    assert e.value.span.file.endswith("bad_slots.py") and e.value.span.line == 11   # x's line


def test_one_region_one_shape_of_declaration(tmp_path):
    src = _kernel_src("R[0], pl.Mem.Vec", 'pl.MemRef("R", slots=3)[1], pl.Mem.Vec')
    with pytest.raises(E.CodegenError, match=r"'R' is declared as 3 slots in Vec here but as 2") as e:
        _compile_src(tmp_path, src)
    assert e.value.span.line == 11      # y's line (the source starts with a blank line)


def test_ptoas_planner_takes_one_slot_per_iteration(tmp_path):
    """Under memory_planner=PTOAS a declaration is one ptoas multi-slot buffer
    (pto.alloc_multi_tile) and each tile selects its slot (pto.multi_tile_get)."""
    src = _kernel_src("R[i % 2], pl.Mem.Vec")
    c = _compile_src(tmp_path, src, memory_planner=MemoryPlanner.PTOAS)
    a, out = randn(32, 64, seed=78), torch.zeros(32, 64)
    c(a, out)
    close(out, a + a, 1e-6, 1e-6)
    pto = next((tmp_path / "out" / "ptoas").glob("*.pto")).read_text()
    assert "pto.alloc_multi_tile" in pto and "pto.multi_tile_get %R_mb[" in pto
    assert "addr =" not in pto


def test_ptoas_planner_constant_slots_stay_apart(tmp_path):
    a, b = randn(TR, TC, seed=79), randn(TR, TC, seed=80)
    out = torch.zeros(TR, TC)
    ir.compile(ConstSlots, output_dir=str(tmp_path), platform="a2a3sim",
               memory_planner=MemoryPlanner.PTOAS)(a, b, out)
    close(out, a - b, 1e-6, 1e-6)


def test_ptoas_planner_refuses_two_slots_in_one_iteration(tmp_path):
    with pytest.raises(E.NotBuiltError, match=r"take slots in one iteration") as e:
        ir.compile(CoLiveSlots, output_dir=str(tmp_path), platform="a2a3sim",
                   memory_planner=MemoryPlanner.PTOAS)
    assert e.value.span.file.endswith("test_prog_memref_slots.py") and "memory_planner=PYPTO" in e.value.hint


@pl.program
class AccSlotLoop:
    """One L0C slot per iteration, chosen by j % 2 (the double buffer written by hand)."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        la: pl.Tile[[M, K], pl.FP32, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        for j in pl.range(N // TN):
            lb: pl.Tile[[K, TN], pl.FP32, pl.Mem.Mat] = pl.load(b, [0, j * TN], [K, TN], target_memory=pl.Mem.Mat)
            cur: pl.Tile[[M, TN], pl.FP32, pl.MemRef("l0c", slots=2)[j % 2], pl.Mem.Acc] = pl.tile.matmul(la, lb)
            out = pl.store(cur, [0, j * TN], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                     out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


def test_declared_acc_slots_are_left_to_the_user_by_l0c_double_buffering(tmp_path):
    a, b = randn(M, K, seed=81), randn(K, N, seed=82)
    out = torch.zeros(M, N)
    c = ir.compile(AccSlotLoop, output_dir=str(tmp_path), platform="a2a3sim",
                   enable_pypto_l0c_double_buffer=True)
    c(a, b, out)
    close(out, a @ b, 1e-4, 1e-4)
    dump = next((tmp_path / "passes_dump").glob("*after_AllocateMemoryAddr.py")).read_text()
    assert "acc_buffer" not in dump and dump.count('attrs={"slots": 2}') == 1
