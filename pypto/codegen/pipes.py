"""The kernel codegen's pipe and barrier statements: a Group's halves pass tiles through
the pipe the runtime gives the group; pl.system.syncall makes the blocks of a launch (or
the used_cores participants of a soft barrier) meet."""
from __future__ import annotations

from pypto.ir.nodes import Call, FunctionType, Var
from pypto.ir.ops.system import BLOCK_IDENTITY

BARRIER_ARG = "__pypto_spmd_sync"      # the hidden argument of a hard syncall: the launch's barrier
PIPE_ARG = "__pypto_group_pipe"        # the hidden argument of a Group's halves: their pipe
_PEER = {"cube": "aic", "vector": "aiv"}
# the statements of a kernel that meet other cores: op -> the Pipes method emitting it
PIPE_STATEMENTS = {"system.syncall": "syncall", "system.set_ffts": "set_ffts",
                   "system.sync_set": "sync_event", "system.sync_wait": "sync_event"}


class Pipes:
    def syncall(self, c: Call, span) -> None:
        """pl.system.syncall: every block of the launch (hard: the runtime's barrier, over
        the block count; soft: a count in the gm_workspace tensor, over used_cores) waits
        until all have arrived."""
        if c.kwargs.get("mode", "hard") == "soft":
            ws = self.tensor(c.args[0], span)
            target, ty = ws.arg, f"!pto.ptr<{ws.param.type.dtype.mlir}>"
            n = self.const(int(c.kwargs["used_cores"]), "i32")
        else:
            self.barrier_used = True
            self.spmd_used.add("tile.get_block_num")
            target, ty = f"%{BARRIER_ARG}", "i64"
            n = "%" + BLOCK_IDENTITY["tile.get_block_num"]
        lanes = f" {{lanes = {self.lanes}}}" if self.lanes > 1 and c.kwargs.get("mode") == "soft" else ""
        self.emit(f"pto.syncall ins({target}, {n} : {ty}, i32){lanes}", span)

    def set_ffts(self, c: Call, span) -> None:
        """pl.system.set_ffts: (A3) this core names its FFTS workspace before its events."""
        ws = self.tensor(c.args[0], span)
        self.emit(f"pto.set_ffts ins({ws.arg} : !pto.ptr<{ws.param.type.dtype.mlir}>)", span)

    def sync_event(self, c: Call, span) -> None:
        """pl.system.sync_set / sync_wait: a cross-core event, counted in the group's pipe
        (an AIV says which lane it is: mode 2 waits for both lanes' sets)."""
        ev = self.scalar(c.args[0], "i32", span).ssa
        ins, tys, _ = self.pipe_operands(c, self.f.func_type is not FunctionType.AIC, lane=True)
        attrs = [f"pipe = #pto.pipe<{c.kwargs['pipe'].name}>"]
        if c.op == "system.sync_set":
            attrs.append(f"ffts_mode = {int(c.kwargs.get('ffts_mode', 2))}")
        self.emit(f"pto.{c.op.split('.')[1]} ins({ins}, {ev} : {tys}, i32) {{{', '.join(attrs)}}}", span)

    def tpush(self, c: Call, span) -> None:
        """A Group's half sends a tile to the other core (ExpandMixedKernel.halves)."""
        t = self.tile(c.args[0], span)
        ins, tys, attrs = self.pipe_operands(c, c.kwargs["to"] == "cube")
        self.emit(f"pto.tpush_to_{_PEER[c.kwargs['to']]} ins({t.ssa}, {ins} : {t.ty}, {tys}){attrs}", span)

    def tpop(self, v: Var, c: Call, span) -> None:
        """... and the other half receives it, into the tile the planner gave it."""
        ins, tys, attrs = self.pipe_operands(c, c.kwargs["from"] == "cube")
        # a lane's part of a partial tile: its valid extents, known with the lane (operands)
        valid = tuple(self.index(a, span) for a in c.args) if c.args else None
        dst = self.alloc(v, span, valid=valid)
        self.emit(f"pto.tpop_from_{_PEER[c.kwargs['from']]} ins({ins} : {tys}) "
                  f"outs({dst.ssa} : {dst.ty}){attrs}", span)

    def pipe_operands(self, c: Call, vector_half: bool, lane: bool = False) -> tuple[str, str, str]:
        """The pipe (and, in the vector half of a split Group -- or always, for `lane` --
        which AIV this is)."""
        self.pipe_used = True
        split = int(c.kwargs.get("split", 0))
        slots = int(self.f.attrs.get("slot_num", 0))      # pl.cross_core_slot: the pipe's depth
        # both AIVs running, unsplit (a NONE region): each lane gets, and sends, the whole tile
        both = not split and self.f.attrs.get("aiv_lanes") == 2
        half = c.kwargs.get("half")      # a split point other than the box's middle
        attrs = ", ".join(([f"split = {split}"] if split else []) + ([f"half = {int(half)}"] if half else [])
                          + (["lanes = 2"] if both else [])
                          + ([f"slot_num = {slots}"] if slots else []))
        attrs = f" {{{attrs}}}" if attrs else ""
        if not ((split or both or lane) and vector_half):
            return f"%{PIPE_ARG}", "i64", attrs
        self.spmd_used.add("tile.get_subblock_idx")
        return f"%{PIPE_ARG}, %{BLOCK_IDENTITY['tile.get_subblock_idx']}", "i64, i32", attrs
