"""Hand-written C++ kernels: `@pl.function(type=AIV, external_source=...)` with a `...`
body backs a kernel with a C++ file in the reference runtime's entry form
(kernel_entry(args), ChipTensor descriptors, get_block_idx). The orchestration launches it
like any kernel; its build reads the entry and the files it includes, so an edit to any
of them rebuilds it, and nothing else."""
import json
import shutil
from pathlib import Path

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close, randn

HERE = Path(__file__).parent / "external"
LINES = 5 * 16


def _program(tree: Path, name: str = "Ext"):
    """The test program over a kernel tree (parsed from text so the path is the tree's)."""
    src = f'''
import pypto.language as pl

@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.AIV, external_source="{tree / 'aiv' / 'block_write.cpp'}")
    def block_write(self, out: pl.InOut[pl.Tensor[[{LINES}], pl.FP32]],
                    base: pl.Scalar[pl.INDEX]) -> pl.Tensor[[{LINES}], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, out: pl.Out[pl.Tensor[[{LINES}], pl.FP32]]) -> pl.Tensor[[{LINES}], pl.FP32]:
        with pl.spmd(core_num=4):
            out = self.block_write(out, 1)
        return out
'''
    return pl.parse(src, filename="/u/ext.py")


def _tasks(out: Path) -> dict:
    return {t["name"]: t["status"] for t in json.loads((out / "report" / "tasks.json").read_text())}


def test_spmd_blocks_run_the_hand_written_kernel(tmp_path):
    c = ir.compile(_program(HERE), output_dir=str(tmp_path / "out"), platform="a2a3sim")
    out = torch.zeros(LINES)
    c(out)
    assert out.view(5, 16)[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]     # line 1 + b holds b + 1
    assert out.view(5, 16)[:, 1:].abs().sum() == 0
    cfg = (tmp_path / "out" / "kernel_config.py").read_text()
    assert str(HERE / "aiv" / "block_write.cpp") in cfg                     # referenced in place


def test_an_edit_to_an_included_header_rebuilds_that_kernel(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(HERE, tree)
    out = tmp_path / "out"
    ir.compile(_program(tree), output_dir=str(out), platform="a2a3sim")
    (tree / "common" / "scale.h").write_text("#pragma once\nstatic constexpr float kScale = 2.0f;\n")
    c = ir.compile(_program(tree), output_dir=str(out), platform="a2a3sim")
    ran = {n for n, s in _tasks(out).items() if s == "ran"}
    # the frontend reads the files' digest (so the whole compile is not served from the
    # store); its output is the same program, so no pass runs again
    assert ran == {"frontend:Ext", "kernel:Ext:block_write", "config:Ext"}, ran
    got = torch.zeros(LINES)
    c(got)
    assert got.view(5, 16)[:, 0].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_the_build_does_not_depend_on_where_the_tree_is(tmp_path):
    a, b = tmp_path / "a" / "tree", tmp_path / "elsewhere" / "deeper" / "tree"
    for t in (a, b):
        shutil.copytree(HERE, t)
    sos = []
    for i, t in enumerate((a, b)):
        out = tmp_path / f"out{i}"
        ir.compile(_program(t), output_dir=str(out), platform="a2a3sim")
        sos.append((out / "kernels" / "aiv" / "block_write.so").read_bytes())
    assert sos[0] == sos[1]


AXPY = '''
import pypto.language as pl

@pl.program
class Axpy:
    @pl.function(type=pl.FunctionType.AIV, external_source="{path}")
    def axpy(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             a: pl.Scalar[pl.FP32]) -> pl.Tensor[[64, 32], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.InCore)
    def double(self, y: pl.Tensor[[64, 32], pl.FP32], z: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        t = pl.load(y, [0, 0], [64, 32])
        return pl.store(pl.add(t, t), [0, 0], z)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.spmd(core_num=3):
            y = self.axpy(x, y, 0.5)
        z = self.double(y, z)
        return z
'''


def test_descriptors_and_scalars_reach_the_kernel_and_a_dsl_kernel_reads_its_result(tmp_path):
    prog = pl.parse(AXPY.format(path=HERE / "aiv" / "axpy.cpp"), filename="/u/axpy.py")
    c = ir.compile(prog, output_dir=str(tmp_path / "out"), platform="a2a3sim")
    x, y0 = randn(64, 32, seed=90), randn(64, 32, seed=91)
    y, z = y0.clone(), torch.zeros(64, 32)
    c(x, y, z)
    close(y, y0 + 0.5 * x, 1e-6, 1e-6, "y (the hand-written kernel)")
    close(z, 2 * (y0 + 0.5 * x), 1e-6, 1e-6, "z (the DSL kernel after it)")


# ----------------------------------------------------------------------------- refusals
def _bad(tmp_path, deco: str, body: str = "...", ftype: str = "AIV"):
    src = f'''
import pypto.language as pl

@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.{ftype}, {deco})
    def k(self, out: pl.InOut[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        {body}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, out: pl.Out[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        out = self.k(out)
        return out
'''
    return ir.compile(pl.parse(src, filename="/u/bad.py"), output_dir=str(tmp_path / "out"), platform="a2a3sim")


@pytest.mark.parametrize("deco, body, ftype, msg", [
    ('external_source="/nonexistent/k.cpp"', "...", "AIV", r"/nonexistent/k\.cpp is not a file"),
    (f'external_source="{HERE / "aiv" / "axpy.cpp"}"', "return out", "AIV", r"its body is `\.\.\.`"),
    (f'external_source="{HERE / "aiv" / "axpy.cpp"}"', "...", "InCore", r"for AIC and AIV functions"),
])
def test_bad_declarations_are_parser_errors_at_the_function(tmp_path, deco, body, ftype, msg):
    with pytest.raises(E.ParserError, match=msg) as e:
        _bad(tmp_path, deco, body, ftype)
    assert e.value.span is not None and e.value.span.line in (6, 7)


def test_a_kernel_the_simulator_cannot_build_says_why(tmp_path):
    k = tmp_path / "tile.cpp"
    k.write_text('#include <pto/pto-inst.hpp>\nextern "C" void kernel_entry(int64_t* args) '
                 '{ pto::TLOAD(args); }\n')
    with pytest.raises(E.CodegenError, match=r"'k' .* does not build on the simulator") as e:
        _bad(tmp_path, f'external_source="{k}"')
    assert "PTO-ISA tile instructions are not simulated" in e.value.hint


def test_jit_extern_is_refused_clearly():
    with pytest.raises(E.NotBuiltError, match=r"@pl\.jit\.extern"):
        pl.jit.extern(core_type="aiv", source="k.cpp")


def test_a_group_of_hand_written_cpp_members_is_refused_clearly(tmp_path):
    path = HERE / "aiv" / "block_write.cpp"
    src = f'''
import pypto.language as pl

@pl.program
class G:
    @pl.function(type=pl.FunctionType.AIC, external_source="{path}")
    def c(self, out: pl.InOut[pl.Tensor[[{LINES}], pl.FP32]], base: pl.Scalar[pl.INDEX]) -> pl.Tensor[[{LINES}], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="{path}")
    def v(self, out: pl.InOut[pl.Tensor[[{LINES}], pl.FP32]], base: pl.Scalar[pl.INDEX]) -> pl.Tensor[[{LINES}], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Group)
    def both(self, out: pl.InOut[pl.Tensor[[{LINES}], pl.FP32]], base: pl.Scalar[pl.INDEX]) -> pl.Tensor[[{LINES}], pl.FP32]:
        r = self.c(out, base)
        self.v(out, base)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, out: pl.Out[pl.Tensor[[{LINES}], pl.FP32]]) -> pl.Tensor[[{LINES}], pl.FP32]:
        out = self.both(out, 0)
        return out
'''
    with pytest.raises(E.NotBuiltError, match=r"Group 'both' calls 'c', a hand-written C\+\+ kernel") as e:
        pl.parse(src, filename="/u/g.py")
    assert e.value.span.line == 14      # self.c(...)
