"""Core groups written by hand (issue 12): a `FunctionType.Group` calling an AIC function
and an AIV function that pass tiles through the pipes they set up themselves --
pl.reserve_buffer / pl.import_peer_buffer, pl.aic_initialize_pipe / pl.aiv_initialize_pipe,
pl.tpush_to_aic / pl.tpush_to_aiv, pl.tpop_from_aiv / pl.tpop_from_aic (the tile type from
the annotation) and pl.tfree_to_aiv / pl.tfree_to_aic -- with pipe ids, slot counts,
both AIVs running (dual_aiv_dispatch) and split groups. Every result is checked against
torch; a pipe with fewer slots than tiles sent only works because tfree gives slots back."""
from __future__ import annotations

import json

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close

V2C = """
import pypto.language as pl
D = 16
SLOT = D * D * 4

@pl.program
class V2C:
    @pl.function(type=pl.FunctionType.AIV, attrs={{"dual_aiv_dispatch": {DUAL}}})
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        p0 = pl.import_peer_buffer(name="lhs", peer_func="cube")
        p1 = pl.import_peer_buffer(name="rhs", peer_func="cube")
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), p0, dir_mask=2, slot_size=SLOT, id=0)
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), p1, dir_mask=2, slot_size=SLOT, id=1)
        x = pl.load(a, [0, 0], [D, D])
        y = pl.load(b, [0, 0], [D, D])
        pl.tpush_to_aic(pl.adds(y, 1.0), split=0, id=1)     # (the second pipe first)
        pl.tpush_to_aic(pl.muls(x, 2.0), split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        b0 = pl.reserve_buffer(name="lhs", size=SLOT * 8, base=pl.AUTO)
        b1 = pl.reserve_buffer(name="rhs", size=SLOT * 8, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), b0, dir_mask=2, slot_size=SLOT, id=0)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), b1, dir_mask=2, slot_size=SLOT, id=1)
        lhs: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        rhs: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=1)
        r = pl.matmul(pl.move(lhs, target_memory=pl.Mem.Left), pl.move(rhs, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(lhs, id=0)
        pl.tfree_to_aiv(rhs)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
              out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.cube(a, b, out)
        self.vec(a, b, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.group(a, b, out)
        return out
"""


@pytest.mark.parametrize("platform,dual", [("a2a3sim", "True"), ("a2a3sim", "False"), ("a5sim", "True")])
def test_two_pipes_vector_to_cube(platform, dual, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(V2C.format(DUAL=dual), filename="/u/v2c.py"), output_dir=tmp_path / "out",
                     platform=platform)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(a, b, out)
    close(out, (a * 2) @ (b + 1), 1e-4, 1e-4)
    pto = (tmp_path / "out" / "ptoas" / "group.pto").read_text()
    assert "@group_aic" in pto and "@group_aiv" in pto and "pto.tfree_from_aiv" in pto
    assert 'pto.import_reserved_buffer {name = "rhs", peer_func = "group_aic"}' in pto
    names = [r["name"] for r in json.loads((tmp_path / "out" / "report" / "tasks.json").read_text())]
    assert not any(n.startswith("pto:") and (n.endswith(":vec") or n.endswith(":cube")) for n in names), \
        "the members are built in their group's kernel, not alone"


C2V = """
import pypto.language as pl
R = 16
C = 32
N = 6

@pl.program
class C2V:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[C, C], pl.FP32],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
        peer = pl.import_peer_buffer(name="c2v", peer_func="vec")
        pl.aic_initialize_pipe(peer, 0, dir_mask=1, slot_size={SLOT}, slot_num=2)
        al = pl.move(pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        br = pl.move(pl.load(b, [0, 0], [C, C], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        for i in pl.range(N):
            pl.tpush_to_aiv(pl.matmul(al, br), split={SPLIT})

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[C, C], pl.FP32],
            out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        buf = pl.reserve_buffer(name="c2v", size={SLOT} * 2, base=pl.AUTO)
        pl.aiv_initialize_pipe(buf, 0, dir_mask=1, slot_size={SLOT}, slot_num=2)
        for i in pl.range(N):
            t: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split={SPLIT})
            out = pl.store(pl.adds(t, i), [i * R, 0], out)
            pl.tfree_to_aic(t)
        return out

    @pl.function(type=pl.FunctionType.Group{GATTRS})
    def group(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[C, C], pl.FP32],
              out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        self.cube(a, b, out)
        r = self.vec(a, b, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[C, C], pl.FP32],
             out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]) -> pl.Tensor[[N * R, C], pl.FP32]:
        out = self.group(a, b, out)
        return out
"""


def _c2v(split: bool) -> str:
    """(split: the group splits UP_DOWN; the AIV member is still written for whole tiles, and
    each AIV pops, adds and stores its half of the rows -- its slots hold half a tile)"""
    rows = 8 if split else 16
    return C2V.format(SLOT=rows * 32 * 4, SPLIT=1 if split else 0,
                      GATTRS=', attrs={"split": pl.SplitMode.UP_DOWN}' if split else "")


@pytest.mark.parametrize("platform,split", [("a2a3sim", False), ("a2a3sim", True), ("a5sim", True)])
def test_cube_to_vector_through_two_slots(platform, split, tmp_path, monkeypatch):
    """Six tiles through a pipe of two slots: each pop's slot comes back at its tfree."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(_c2v(split), filename="/u/c2v.py"), output_dir=tmp_path / "out", platform=platform)
    a, b = torch.randn(16, 32), torch.randn(32, 32)
    out = torch.zeros(96, 32)
    run(a, b, out)
    close(out, torch.cat([a @ b + i for i in range(6)]), 1e-4, 1e-4)


def test_editing_a_member_rebuilds_its_groups_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = _c2v(False)
    ir.compile(pl.parse(src, filename="/u/c2v.py"), output_dir=tmp_path / "o1", platform="a2a3sim")
    run = ir.compile(pl.parse(src.replace("pl.adds(t, i)", "pl.adds(t, i * 2)"), filename="/u/c2v.py"),
                     output_dir=tmp_path / "o2", platform="a2a3sim")
    ran = [r["name"] for r in json.loads((tmp_path / "o2" / "report" / "tasks.json").read_text())
           if r["status"] == "ran"]
    assert any(n.startswith("kernel:") and n.endswith(":group") for n in ran), ran
    a, b = torch.randn(16, 32), torch.randn(32, 32)
    out = torch.zeros(96, 32)
    run(a, b, out)
    close(out, torch.cat([a @ b + 2 * i for i in range(6)]), 1e-4, 1e-4)


def _bad(old: str, new: str):
    return pl.parse(V2C.format(DUAL="True").replace(old, new), filename="/u/v2c.py")


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(V2C.format(DUAL="True").splitlines(), 1) if text in ln)


def test_a_group_has_one_cube_and_one_vector_member():
    with pytest.raises(E.TypeCheckError, match=r"Group 'group' has no AIV member") as e:
        _bad("        self.vec(a, b, out)\n", "")
    assert e.value.span.line == _line("def group(")
    with pytest.raises(E.TypeCheckError, match=r"passes 'vec' a value that is not one of its parameters"):
        _bad("self.vec(a, b, out)", "self.vec(b, pl.add(a, a), out)")


def test_a_pipe_needs_what_the_op_says():
    with pytest.raises(E.TypeCheckError, match=r"tpop_from_aiv: the tile received needs its shape and dtype") as e:
        _bad("lhs: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv", "lhs = pl.tpop_from_aiv")
    assert e.value.span.line == _line("lhs: pl.Tile")
    with pytest.raises(E.TypeCheckError, match=r"dir_mask=4; 1 is cube -> vector"):
        _bad("b0, dir_mask=2", "b0, dir_mask=4")
    with pytest.raises(E.TypeCheckError, match=r"tpush_to_aic sends a Vec tile"):
        _bad("pl.tpush_to_aic(pl.muls(x, 2.0), split=0, id=0)",
             "pl.tpush_to_aic(pl.load(a, [0, 0], [D, D], target_memory=pl.Mem.Mat), split=0, id=0)")


def test_mismatched_pipe_ends_fail_when_they_meet(tmp_path, monkeypatch):
    """The two ends of a pipe declare its slots; declaring different ones is an error of
    the run (each end sets the pipe up on its own core), not a hang."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(_bad("p1, dir_mask=2, slot_size=SLOT", "p1, dir_mask=2, slot_size=SLOT * 2"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    with pytest.raises(Exception, match=r"declare different slot sizes"):
        run(torch.randn(16, 16), torch.randn(16, 16), torch.zeros(16, 16))


def test_buffers_are_reserved_in_the_consumers_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(E.MemoryOverflowError, match=r"pipe buffer 'lhs' \(1048576 bytes"):
        ir.compile(_bad('name="lhs", size=SLOT * 8', 'name="lhs", size=1048576'), output_dir=tmp_path / "out",
                   platform="a2a3sim")
    with pytest.raises(E.PyptoError, match=r"reserves no buffer named 'nope'"):
        ir.compile(_bad('import_peer_buffer(name="rhs"', 'import_peer_buffer(name="nope"'),
                   output_dir=tmp_path / "out2", platform="a2a3sim")


def test_ptoas_places_the_buffers_when_it_plans_the_memory(tmp_path, monkeypatch):
    """memory_planner=PTOAS: the .pto leaves the reserved buffers' bases to ptoas (auto =
    true), which stacks them at the top of the cube's Mat and plans the tiles below them;
    the vector side imports the base ptoas chose."""
    from pypto.ptoas import PtoasError, compile_pto
    from pypto.pypto_core.passes import MemoryPlanner
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(V2C.format(DUAL="True"), filename="/u/v2c.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim", memory_planner=MemoryPlanner.PTOAS)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(a, b, out)
    close(out, (a * 2) @ (b + 1), 1e-4, 1e-4)
    pto = (tmp_path / "out" / "ptoas" / "group.pto").read_text()
    assert 'name = "lhs", size = 8192, location = #pto.address_space<mat>, auto = true}' in pto
    plan = compile_pto(pto, level="level2", dump_passes=True).pass_dumps["03_plan_memory"]
    mat = 512 * 1024
    assert f'name = "lhs", size = 8192, location = #pto.address_space<mat>, auto = false, base = {mat - 8192}' in plan
    assert f'name = "rhs", size = 8192, location = #pto.address_space<mat>, auto = false, base = {mat - 16384}' in plan
    assert "mat 524288/524288" in plan                 # (the reserved top counts as used)
    with pytest.raises(PtoasError, match="needs its base .* at level3"):
        compile_pto(pto, level="level3")


RAGGED = """
import pypto.language as pl
B = 16
SLOT = B * B * 4

@pl.program
class Ragged:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[B, B], pl.FP32], b: pl.Tensor[[B, B], pl.FP32], out: pl.Out[pl.Tensor[[B, B], pl.FP32]],
             vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]):
        peer = pl.import_peer_buffer(name="c2v", peer_func="vec")
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=peer)
        al = pl.move(pl.load(a, [0, 0], [B, B], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        br = pl.move(pl.load(b, [0, 0], [B, B], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        part: pl.Tile[[B, B], pl.FP32, pl.Mem.Acc, pl.TileView(valid_shape=[vr, vc])] = \\
            pl.tile.set_validshape(pl.matmul(al, br), vr, vc)
        pl.tpush_to_aiv(part, split={SPLIT})

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[B, B], pl.FP32], b: pl.Tensor[[B, B], pl.FP32], out: pl.Out[pl.Tensor[[B, B], pl.FP32]],
            vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[B, B], pl.FP32]:
        buf = pl.reserve_buffer(name="c2v", size=SLOT * 4, base=pl.AUTO)
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=buf)
        t: pl.Tile[[B, B], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[vr, vc])] = pl.tpop_from_aic(split={SPLIT})
        u = pl.muls(t, 3.0)
        pl.tfree_to_aic(t)
        return pl.store(u, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group{GATTRS})
    def group(self, a: pl.Tensor[[B, B], pl.FP32], b: pl.Tensor[[B, B], pl.FP32], out: pl.Out[pl.Tensor[[B, B], pl.FP32]],
              vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[B, B], pl.FP32]:
        self.cube(a, b, out, vr, vc)
        r = self.vec(a, b, out, vr, vc)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[B, B], pl.FP32], b: pl.Tensor[[B, B], pl.FP32], out: pl.Out[pl.Tensor[[B, B], pl.FP32]],
             vr: pl.Scalar[pl.INDEX], vc: pl.Scalar[pl.INDEX]) -> pl.Tensor[[B, B], pl.FP32]:
        out = self.group(a, b, out, vr, vc)
        return out
"""


@pytest.mark.parametrize("mode", ["NONE", "UP_DOWN", "LEFT_RIGHT"])
def test_a_valid_part_known_at_run_time_crosses_and_each_aiv_stores_its_share(mode, tmp_path, monkeypatch):
    """The cube narrows its result to [vr, vc] (run-time scalars) and pushes it; under a
    split each AIV pops the valid part of its half of the box -- max(min(v - i * 8, 8), 0) of
    it, possibly nothing -- and stores it at its half: one artifact for every extent."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    split = {"NONE": 0, "UP_DOWN": 1, "LEFT_RIGHT": 2}[mode]
    gattrs = f', attrs={{"split": pl.SplitMode.{mode}}}' if split else ""
    run = ir.compile(pl.parse(RAGGED.format(SPLIT=split, GATTRS=gattrs), filename="/u/ragged.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    _check_ragged(run, mode, ((16, 16), (9, 16), (16, 7), (3, 5), (1, 16), (16, 1), (8, 8)))


def _check_ragged(run, mode, extents):
    """Only out[:vr, :vc] is written, with 3 * (a @ b) there; one artifact for every extent."""
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    for vr, vc in extents:
        out = torch.full((16, 16), -7.0)
        run(a, b, out, vr, vc)
        want = torch.full((16, 16), -7.0)
        want[:vr, :vc] = ((a @ b) * 3)[:vr, :vc]
        close(out, want, 1e-4, 1e-4, f"{mode} vr={vr} vc={vc}")


@pytest.mark.parametrize("mode", ["NONE", "UP_DOWN"])
def test_the_consumer_may_declare_less_than_was_pushed(mode, tmp_path, monkeypatch):
    """The cube pushes its whole result; the AIV pops it declaring the run-time valid part
    it wants (each AIV its share of it under a split) -- only that part is read."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    split = {"NONE": 0, "UP_DOWN": 1}[mode]
    src = RAGGED.format(SPLIT=split, GATTRS=f', attrs={{"split": pl.SplitMode.{mode}}}' if split else "")
    src = src.replace("""        part: pl.Tile[[B, B], pl.FP32, pl.Mem.Acc, pl.TileView(valid_shape=[vr, vc])] = \\
            pl.tile.set_validshape(pl.matmul(al, br), vr, vc)
""", "        part = pl.matmul(al, br)\n")
    run = ir.compile(pl.parse(src, filename="/u/ragged.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    _check_ragged(run, mode, ((11, 16), (16, 12), (2, 3)))
