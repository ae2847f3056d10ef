"""ExpandMixedKernel: an InCore kernel becomes AIC (cube) or AIV (vector) from the
memory spaces its tiles use. A kernel that needs both is rejected with a way to split
it: the chip runs cube and vector work on different cores."""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.ir.nodes import Function, FunctionType, MemorySpace as M, Program, TileType, derived_level_role
from pypto.ir.visit import defs, walk

NAME = "ExpandMixedKernel"
READS = ()

_CUBE = {M.Mat, M.Left, M.Right, M.Acc, M.Bias}


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_classify(f) if f.func_type is FunctionType.InCore else f
                               for f in prog.functions], prog.source)


def _classify(f: Function) -> Function:
    cube, vec = None, None
    for s in walk(f.body):
        for v in defs(s):
            t = v.type
            if isinstance(t, TileType) and t.memory_space is not None:
                if t.memory_space in _CUBE:
                    cube = cube or s
                else:
                    vec = vec or s
    if cube and vec:
        raise CodegenError(
            f"kernel {f.name!r} mixes cube work (line {cube.span.line if cube.span else '?'}) and "
            f"vector work (line {vec.span.line if vec.span else '?'})", vec.span or f.span,
            "split it into two pl.at scopes (or two @pl.jit.incore kernels) that pass the matmul "
            "result through a tensor made with pl.create_tensor")
    ftype = FunctionType.AIC if cube else FunctionType.AIV
    level, role = derived_level_role(ftype)
    return Function(f.name, f.params, f.return_types, f.body, ftype, level, role, dict(f.attrs), f.span)
