"""A tiny writer of .pto text for tests, in the shape pypto's PTO codegen emits.

Each op gets loc("t.py":N:1) with N counting from 1, so tests can ask which op failed.
"""
from __future__ import annotations

LAYOUTS = {  # space -> (blayout, slayout, fractal)
    "vec": ("row_major", "none_box", 512),
    "mat": ("col_major", "row_major", 512),
    "left": ("row_major", "row_major", 512),
    "right": ("row_major", "col_major", 512),
    "acc": ("col_major", "row_major", 1024),
    "bias": ("row_major", "none_box", 512),
}
NBYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "ui8": 1, "!pto.hif8": 1}


def tile_type(loc: str, dtype: str, rows: int, cols: int, blayout: str | None = None,
              slayout: str | None = None, fractal: int | None = None) -> str:
    b, s, f = LAYOUTS[loc]
    if loc == "vec" and cols == 1 and rows > 1:
        b = "col_major"  # [M,1] column vectors
    b, s, f = blayout or b, slayout or s, fractal or f
    return (f"!pto.tile_buf<loc={loc}, dtype={dtype}, rows={rows}, cols={cols}, v_row=?, v_col=?, "
            f"blayout={b}, slayout={s}, fractal={f}, pad=0>")


class Pto:
    def __init__(self, name: str, tensors: list[tuple[str, tuple]], scalars: tuple[str, ...] = (),
                 kind: str = "vector", arch: str = "a2a3", level: str = "level3"):
        self.name, self.kind, self.arch, self.level = name, kind, arch, level
        self.tensors, self.scalars = tensors, scalars
        self.consts: dict[tuple, str] = {}
        self.body: list[str] = []
        self.types: dict[str, str] = {}
        self.next_addr: dict[str, int] = {}
        self.line = 0
        self.indent = "    "
        self.views = []
        for j, ty in enumerate(scalars):
            self.types[f"%arg{len(tensors) + j}"] = ty
        for i, (dtype, shape) in enumerate(tensors):
            strides, acc = [], 1
            for d in reversed(shape):
                strides.insert(0, acc)
                acc *= d
            sh = ", ".join(self.c(d) for d in shape)
            st = ", ".join(self.c(s) for s in strides)
            q = "x".join("?" for _ in shape)
            self.emit(f"%v{i} = pto.make_tensor_view %arg{i}, shape = [{sh}], strides = [{st}] "
                      f"{{layout = #pto.layout<nd>}} : !pto.tensor_view<{q}x{dtype}>")
            self.views.append((f"%v{i}", dtype, shape))

    def loc(self) -> str:
        self.line += 1
        return f'loc("t.py":{self.line}:1)'

    def emit(self, text: str, loc: bool = True) -> None:
        self.body.append(self.indent + text + (" " + self.loc() if loc else ""))

    def c(self, value, ty: str = "index") -> str:
        key = (value, ty)
        if key not in self.consts:
            tag = str(value).replace("-", "n").replace(".", "_")
            self.consts[key] = f"%c{tag}_{ty}"
        return self.consts[key]

    def tile(self, name: str, loc: str, dtype: str, rows: int, cols: int, *, addr="auto",
             vr=None, vc=None, **layout) -> str:
        t = tile_type(loc, dtype, rows, cols, **layout)
        if addr == "auto" and self.level != "level3":
            addr = None
        if addr == "auto":
            addr = self.next_addr.get(loc, 0)
            self.next_addr[loc] = addr + -(-rows * cols * NBYTES[dtype] // 32) * 32
        parts = []
        if addr is not None:
            parts.append(f"addr = {self.c(addr, 'i64')}")
        parts.append(f"valid_row = {self.c(rows if vr is None else vr)}")
        parts.append(f"valid_col = {self.c(cols if vc is None else vc)}")
        self.emit(f"%{name} = pto.alloc_tile {' '.join(parts)} : {t}")
        self.types[f"%{name}"] = t
        return f"%{name}"

    def _part(self, tensor: int, offs, sizes) -> str:
        view, dtype, shape = self.views[tensor]
        p = f"%p{self.line + 1}"
        o = ", ".join(self.c(x) for x in offs)
        s = ", ".join(self.c(x) for x in sizes)
        q = "x".join("?" for _ in shape)
        ptv = f"!pto.partition_tensor_view<{'x'.join(map(str, sizes))}x{dtype}>"
        self.emit(f"{p} = pto.partition_view {view}, offsets = [{o}], sizes = [{s}] : "
                  f"!pto.tensor_view<{q}x{dtype}> -> {ptv}")
        self.types[p] = ptv
        return p

    def load(self, tile: str, tensor: int, offs=(0, 0), sizes=None) -> None:
        sizes = sizes or self._tile_shape(tile)
        p = self._part(tensor, offs, sizes)
        self.op("tload", [p], tile)

    def store(self, tile: str, tensor: int, offs=(0, 0), sizes=None) -> None:
        sizes = sizes or self._tile_shape(tile)
        p = self._part(tensor, offs, sizes)
        self.body.append(f"{self.indent}pto.tstore ins({tile} : {self.types[tile]}) outs({p} : {self.types[p]}) {self.loc()}")

    def _tile_shape(self, tile: str):
        t = self.types[tile]
        rows = int(t.split("rows=")[1].split(",")[0])
        cols = int(t.split("cols=")[1].split(",")[0])
        return (rows, cols)

    def op(self, name: str, ins: list[str], out: str, attrs: str = "") -> None:
        names = [f"{v}{attrs if k == 0 and attrs else ''}" for k, v in enumerate(ins)]
        types = [self.types[v] for v in ins]
        self.emit(f"pto.{name} ins({', '.join(names)} : {', '.join(types)}) outs({out} : {self.types[out]})")

    def scalar_const(self, value, ty: str) -> str:
        name = self.c(value, ty)
        self.types[name] = ty
        return name

    def text(self) -> str:
        args = [f"%arg{i}: !pto.ptr<{d}>" for i, (d, _) in enumerate(self.tensors)]
        n = len(self.tensors)
        for j, ty in enumerate(self.scalars):
            args.append(f"%arg{n + j}: {ty}")
        consts = []
        for (value, ty), name in self.consts.items():
            consts.append(f"    {name} = arith.constant {value} : {ty}")
        kind = f" attributes {{pto.kernel_kind = #pto.kernel_kind<{self.kind}>}}" if self.kind else ""
        return "\n".join([
            f'module attributes {{pto.target_arch = "{self.arch}"}} {{',
            f"  func.func @{self.name}({', '.join(args)}){kind} {{",
            *consts, *self.body, "    return", "  }", "}", ""])


def offset_window() -> Pto:
    """A kernel that loads the 16x32 block of a 64x32 tensor at row %arg2 (a run-time
    scalar) and stores it into a 16x32 tensor."""
    p = Pto("window", [("f32", (64, 32)), ("f32", (16, 32))], scalars=("index",))
    t = p.tile("t", "vec", "f32", 16, 32)
    ptv = "!pto.partition_tensor_view<16x32xf32>"
    p.emit(f"%win = pto.partition_view %v0, offsets = [%arg2, {p.c(0)}], sizes = [{p.c(16)}, {p.c(32)}] : "
           f"!pto.tensor_view<?x?xf32> -> {ptv}")
    p.types["%win"] = ptv
    p.op("tload", ["%win"], t)
    p.store(t, 1)
    return p
