"""The verifier's checks of the op families with rules of their own: gathers and scatters,
extract, the partial ops and prelu, random, the cube (matmul, gemv) and the sort ops.
Mixed into pypto.ptoas.verify.Verifier (self.error, self.tile, self.defs, self.arch)."""
from __future__ import annotations

from ..dtype import BY_MLIR
from .analysis import const_int, same as _same, shape_str as _shape_str, static_valid
from .ir import Op, PartitionType, ScalarType, TileType, Value
from .ops import ACC_PHASES, CMP_MODES, FLOAT_DTYPES, MASK_PATTERNS, MATMUL_DTYPES, MATMUL_MAX
from .types import STATUS_VECTOR


class OpChecks:
    def tgather(self, op: Op, ins: list[Value], out: Value, d: TileType) -> None:
        """Index form: ins(src, indices, tmp), dst shaped like the indices; mask form:
        ins(src {maskPattern}), the kept columns of each row."""
        src = self.tile(op, ins[0], "source")
        for v in ins + [out]:
            if self.tile(op, v, "operand").loc != "vec":
                raise self.error(op, f"tgather runs on the vector unit: %{v.name} is not in 'vec'")
        if src.dtype not in ("f16", "f32", "i16", "i32"):
            raise self.error(op, f"tgather picks f16, f32, i16 or i32 elements, not {src.dtype}")
        ds = static_valid(out, self.defs)
        if len(ins) == 3:
            idx = self.tile(op, ins[1], "indices")
            if not (idx.dtype == "i32" or (idx.dtype == "i16" and src.dtype in ("f16", "i16"))):
                raise self.error(op, f"tgather indices are i32 (i16 with a 16-bit source), not {idx.dtype}")
            if d.dtype != src.dtype:
                raise self.error(op, f"tgather gives {src.dtype} elements, not {d.dtype}")
            if not _same(ds, static_valid(ins[1], self.defs)):
                raise self.error(op, "tgather's result is shaped like its indices")
            return
        if len(ins) != 1:
            raise self.error(op, "tgather takes ins(src, indices, tmp) or ins(src {maskPattern})")
        stride, _ = self.mask_stride(op)
        name = op.attr("maskPattern").removeprefix("#pto.mask_pattern<").removesuffix(">")
        ss = static_valid(ins[0], self.defs)
        want = (ss[0], None if ss[1] is None else ss[1] // stride)
        if BY_MLIR[d.dtype].nbytes != BY_MLIR[src.dtype].nbytes or not _same(ds, want):
            raise self.error(op, f"tgather {name} of a {_shape_str(ss)} {src.dtype} tile gives "
                                 f"{_shape_str(want)} of the same width, not {_shape_str(ds)} {d.dtype}")

    def tgather_cmp(self, op: Op, ins: list[Value], outs: list[Value]) -> None:
        """Compare form: ins(src, kvalue, tmp) outs(dst, cdst) {cmpMode, offset}: per row of
        src the column indices (+ offset) of the elements comparing true with the scalar
        kvalue into i32 dst [rows, K], and how many did into cdst [1, rows] (i32 / ui32)."""
        src, tmp = self.tile(op, ins[0], "source"), self.tile(op, ins[2], "scratch")
        dst, cnt = self.tile(op, outs[0], "indices"), self.tile(op, outs[1], "counts")
        for t in (src, tmp, dst, cnt):
            if t.loc != "vec":
                raise self.error(op, f"tgather runs on the vector unit, not in '{t.loc}'")
        if src.dtype not in ("f16", "f32", "i16", "i32"):
            raise self.error(op, f"tgather compares f16, f32, i16 or i32 elements, not {src.dtype}")
        kv = ins[1]
        if not isinstance(kv.type, ScalarType) or kv.type.name != src.dtype:
            raise self.error(op, f"tgather's kvalue is a {src.dtype} scalar like its source, not {kv.type}")
        if dst.dtype != "i32" or cnt.dtype not in ("i32", "ui32"):
            raise self.error(op, f"tgather's compare form writes i32 indices and i32 / ui32 counts, "
                                 f"not {dst.dtype} / {cnt.dtype}")
        rows = static_valid(ins[0], self.defs)[0]
        if rows is not None and (dst.rows < rows or cnt.rows != 1 or cnt.cols < rows):
            raise self.error(op, f"tgather over {rows} rows writes {rows} rows of indices and a "
                                 f"[1, {rows}] row of counts, got {dst.rows}x{dst.cols} and "
                                 f"{cnt.rows}x{cnt.cols}")
        mode = (op.attr("cmpMode") or "").removeprefix("#pto<cmp").removesuffix(">").strip()
        if mode not in CMP_MODES:
            raise self.error(op, f"tgather's cmpMode is #pto<cmp X>, X one of {', '.join(CMP_MODES)}; "
                                 f"got {op.attr('cmpMode')!r}")
        if op.attr("offset") is None:
            raise self.error(op, "tgather's compare form carries {offset = N : i32}")

    def textract(self, op: Op, ins: list[Value], d: TileType) -> None:
        """ins(src, row, col): a window of src copied into the result (same dtype)."""
        s = self.tile(op, ins[0], "source")
        if any(not isinstance(v.type, ScalarType) or v.type.name != "index" for v in ins[1:]):
            raise self.error(op, "textract takes the window's row and column as index values")
        if s.dtype != d.dtype:
            raise self.error(op, f"textract copies {s.dtype} into {d.dtype}: use pto.tcvt first")
        if (s.loc, d.loc) not in {("vec", "vec"), ("mat", "left"), ("mat", "right"), ("mat", "mat")}:
            raise self.error(op, f"textract takes vec -> vec or mat -> left/right/mat, not "
                                 f"{s.loc} -> {d.loc}")
        window = (d.rows, d.cols)
        if op.attr("transpose") == "true":     # the (cols x rows) window, read transposed
            if (s.loc, d.loc) not in {("mat", "left"), ("mat", "right")}:
                raise self.error(op, f"textract {{transpose = true}} reads mat into left/right, not "
                                     f"{s.loc} -> {d.loc}")
            window = (d.cols, d.rows)
        for v, extent, size in zip(ins[1:], (s.rows, s.cols), window):
            k = const_int(v, self.defs)
            if size > extent or (k is not None and (k < 0 or k + size > extent)):
                raise self.error(op, f"textract's {window[0]}x{window[1]} window lies outside the "
                                     f"{s.rows}x{s.cols} source")

    def two_tiles(self, op: Op, kind: str, ins: list[Value], out: Value, d: TileType) -> None:
        """part_*: the result's valid region is the first source's; prelu: x and slope
        alike, its scratch the hardware's (on a2/a3 a ui8 bit mask: a row more than x's
        valid rows, a bit per valid column)."""
        if kind == "prelu":
            ins, tmp = ins[:2], self.tile(op, ins[2], "scratch")
            rows, cols = static_valid(ins[0], self.defs)
            if tmp.loc != "vec":
                raise self.error(op, f"tprelu's scratch is a vec tile, not {tmp.loc}")
            if self.arch.name != "a5":
                if tmp.dtype != "ui8":
                    raise self.error(op, f"tprelu on {self.arch.name} takes a ui8 scratch (its bit "
                                         f"mask), not {tmp.dtype}")
                if rows is not None and tmp.rows < rows + 1:
                    raise self.error(op, f"tprelu's scratch has {tmp.rows} rows; {rows} valid rows "
                                         f"need {rows + 1}")
                if cols is not None and tmp.cols < (cols + 7) // 8:
                    raise self.error(op, f"tprelu's scratch has {tmp.cols} columns; {cols} valid "
                                         f"columns need {(cols + 7) // 8}")
        for v in ins + [out]:
            t = self.tile(op, v, "operand")
            if t.loc != "vec" or t.dtype != d.dtype or (t.rows, t.cols) != (d.rows, d.cols):
                raise self.error(op, f"{op.name} takes vec {d.dtype} tiles of one shape: %{v.name} is "
                                     f"{t.loc} {t.dtype} {t.rows}x{t.cols}")
        if kind == "prelu" and d.dtype not in FLOAT_DTYPES:
            raise self.error(op, f"tprelu needs a float tile, not {d.dtype}")
        if not _same(static_valid(out, self.defs), static_valid(ins[0], self.defs)):
            raise self.error(op, f"{op.name}'s result is valid where its first operand is")

    def trandom(self, op: Op, ins: list[Value], d: TileType) -> None:
        """Six i32 seeds (key, counter) into a vec u32/i32 tile, on a5 only."""
        if self.arch.name != "a5":
            raise self.error(op, f"pto.trandom exists on a5, not {self.arch.name}")
        if any(not isinstance(v.type, ScalarType) or v.type.name != "i32" for v in ins):
            raise self.error(op, "pto.trandom takes six i32 seeds: key0, key1, counter0..3")
        if d.loc != "vec" or d.dtype not in ("ui32", "i32"):
            raise self.error(op, f"pto.trandom fills a vec ui32 or i32 tile, not {d.loc} {d.dtype}")
        if (op.attr("rounds") or "10 : i32").split(":")[0].strip() not in ("7", "10"):
            raise self.error(op, f"pto.trandom runs 7 or 10 rounds, not {op.attr('rounds')}")

    def mask_stride(self, op: Op) -> tuple[int, int]:
        text = op.attr("maskPattern") or ""
        name = text.removeprefix("#pto.mask_pattern<").removesuffix(">")
        if name not in MASK_PATTERNS:
            raise self.error(op, f"{op.name}'s mask form needs maskPattern = #pto.mask_pattern<P0101|"
                                 f"P1010|P0001|P0010|P0100|P1000|P1111>, got {text or 'none'}")
        return MASK_PATTERNS[name]

    def tscatter(self, op: Op, ins: list[Value], out: Value, d: TileType) -> None:
        """Index form: ins(src, indexes) written at dst's row-major positions; mask form:
        ins(src {maskPattern}) spread over the marked columns of dst."""
        src = self.tile(op, ins[0], "source")
        for v in ins + [out]:
            if self.tile(op, v, "operand").loc != "vec":
                raise self.error(op, f"tscatter runs on the vector unit: %{v.name} is not in 'vec'")
        ss = static_valid(ins[0], self.defs)
        if len(ins) == 2:
            idx = self.tile(op, ins[1], "indexes")
            want = "i32" if BY_MLIR[d.dtype].nbytes == 4 else "i16"
            if idx.dtype != want or src.dtype != d.dtype:
                raise self.error(op, f"tscatter writes {d.dtype} values by {want} indexes, not "
                                     f"{src.dtype} by {idx.dtype}")
            if not _same(ss, static_valid(ins[1], self.defs)):
                raise self.error(op, "tscatter's values and indexes have one shape")
            return
        stride, _ = self.mask_stride(op)
        ds = static_valid(out, self.defs)
        if BY_MLIR[d.dtype].nbytes != BY_MLIR[src.dtype].nbytes or ds[0] != ss[0] or \
                (ds[1] is not None and ss[1] is not None and ds[1] != ss[1] * stride):
            raise self.error(op, f"tscatter spreads {_shape_str(ss)} over every {stride}th column of "
                                 f"{_shape_str(ds)}: the shapes or widths do not fit")

    def gatherb(self, op: Op, ins: list[Value], out: Value) -> None:
        """ins(src, ui32 byte offsets) outs(dst): a 32-byte block of src per offset."""
        src, off, d = self.tile(op, ins[0], "source"), self.tile(op, ins[1], "offsets"), out.type
        if not isinstance(d, TileType) or {src.loc, off.loc, d.loc} != {"vec"}:
            raise self.error(op, "tgatherb works in 'vec'")
        nb = BY_MLIR[d.dtype].nbytes
        if off.dtype != "ui32" or off.cols % 8 or (d.rows, d.cols) != (off.rows, off.cols * 32 // nb):
            raise self.error(op, f"tgatherb: {off.rows}x{off.cols} ui32 offsets (a multiple of 8 a row) "
                                 f"fill {off.rows}x{off.cols * 32 // nb} {d.dtype}, got {d.rows}x{d.cols} "
                                 f"{off.dtype} offsets")

    def mgather(self, op: Op, ins: list[Value], out: Value) -> None:
        """ins(a partition of the whole tensor, i32 indices) outs(a vec tile) {coalesce,
        gatherOob}: rows picked by [1, R] indices (on a2a3) or elements by their positions."""
        mem, d = ins[0].type, self.tile(op, out, "result")
        if not isinstance(mem, PartitionType):
            raise self.error(op, f"mgather reads a !pto.partition_tensor_view, not {mem}")
        if d.loc == "mat":
            return self.mgather_mat(op, ins, out, d)
        if len(ins) != 2:
            raise self.error(op, "mgather into vec takes ins(tensor, indices)")
        idx = self.tile(op, ins[1], "indices")
        if idx.loc != "vec" or d.loc != "vec" or idx.dtype != "i32" or d.dtype != mem.elem:
            raise self.error(op, f"mgather gathers {mem.elem} into a vec tile of it by vec i32 indices")
        mode = (op.attr("coalesce") or "").rstrip(">").split()[-1:]
        if mode not in (["row"], ["elem"]):
            raise self.error(op, "mgather needs {coalesce = #pto<coalesce row|elem>}")
        oob = (op.attr("gatherOob") or "#pto<gather_oob undefined>").rstrip(">").split()[-1]
        if oob not in ("undefined", "clamp", "wrap", "zero"):
            raise self.error(op, f"unknown gather_oob '{oob}'")
        vr, vc = static_valid(ins[1], self.defs)
        if mode == ["elem"]:
            if not _same(static_valid(out, self.defs), (vr, vc)):
                raise self.error(op, "mgather (elem) fills a tile shaped like its indices")
            return
        if self.arch.name == "a2a3" and idx.rows != 1:
            raise self.error(op, "mgather's row mode on a2a3 takes [1, R] indices")
        rows = vc if idx.rows == 1 else vr
        if not _same(static_valid(out, self.defs), (rows, mem.shape[-1])):
            raise self.error(op, f"mgather (row) fills {rows} rows of {mem.shape[-1]}")

    def mgather_mat(self, op: Op, ins: list[Value], out: Value, d: TileType) -> None:
        """Into mat: ins(tensor, GM i32 indices[, GM scratch of the tensor's dtype]): rows by
        [1, R] indices, or elements (staged in the scratch) by indices of the result's shape."""
        mem = ins[0].type
        if any(not isinstance(v.type, PartitionType) for v in ins[1:]):
            raise self.error(op, "mgather into mat takes its indices (and scratch) from GM partitions")
        idx = ins[1].type
        mode = (op.attr("coalesce") or "").rstrip(">").split()[-1:]
        if idx.elem != "i32" or d.dtype != mem.elem:
            raise self.error(op, f"mgather gathers {mem.elem} into a mat tile of it by i32 indices")
        if mode == ["elem"]:
            if len(ins) != 3 or ins[2].type.elem != mem.elem:
                raise self.error(op, "mgather (elem) into mat stages the elements in a GM scratch of "
                                     "the tensor's dtype: ins(tensor, indices, scratch)")
            want = tuple(idx.shape[-2:])
        elif mode == ["row"]:
            if len(ins) != 2 or idx.shape[0] != 1:
                raise self.error(op, "mgather (row) into mat takes ins(tensor, [1, R] indices)")
            want = (idx.shape[-1], mem.shape[-1])
        else:
            raise self.error(op, "mgather needs {coalesce = #pto<coalesce row|elem>}")
        got = static_valid(out, self.defs)
        if (d.rows, d.cols) != want or any(g is not None and g > w for g, w in zip(got, want)):
            raise self.error(op, f"mgather into mat fills (part of) {_shape_str(want)}")

    def mscatter(self, op: Op, ins: list[Value], out: Value) -> None:
        if not isinstance(out.type, PartitionType):
            raise self.error(op, f"mscatter writes a !pto.partition_tensor_view, not {out.type}")
        src, idx = self.tile(op, ins[0], "source"), self.tile(op, ins[1], "indices")
        if src.loc != "vec" or idx.loc != "vec":
            raise self.error(op, "mscatter stores from 'vec' tiles")
        if out.type.elem != src.dtype or idx.dtype not in ("i32", "ui32"):
            raise self.error(op, f"mscatter stores {src.dtype} values by i32 indices into "
                                 f"{out.type.elem} data")
        if not _same(static_valid(ins[0], self.defs), static_valid(ins[1], self.defs)):
            raise self.error(op, "mscatter's values and indices have one shape")

    def matmul(self, op: Op, kind: str, ins: list[Value], out: Value) -> None:
        if kind == "matmul_acc":
            acc_in, a, b = ins
            if acc_in.type != out.type:
                raise self.error(op, "tmatmul.acc accumulates into a tile of the result's type")
        elif kind == "matmul_bias":
            a, b, bias = ins
            bt = self.tile(op, bias, "bias")
            if bt.loc != "bias":
                raise self.error(op, f"tmatmul.bias takes its bias from 'bias', not '{bt.loc}'")
        else:
            a, b = ins
        ta, tb, tc = self.tile(op, a, "left operand"), self.tile(op, b, "right operand"), out.type
        if (ta.loc, tb.loc, tc.loc) != ("left", "right", "acc"):
            raise self.error(op, f"{op.name} computes left x right -> acc, got {ta.loc} x {tb.loc} -> {tc.loc}")
        triple = (tc.dtype, ta.dtype, tb.dtype)
        if triple not in MATMUL_DTYPES:
            ok = ", ".join(f"{x}<-{y}x{z}" for x, y, z in sorted(MATMUL_DTYPES))
            raise self.error(op, f"matmul dtypes {tc.dtype} <- {ta.dtype} x {tb.dtype} are not supported ({ok})")
        (m, k), (k2, n) = static_valid(a, self.defs), static_valid(b, self.defs)
        if k is not None and k2 is not None and k > k2:      # K is the left's valid columns
            raise self.error(op, f"matmul: the right operand's valid K ({k2}) does not cover the left's "
                                 f"({m}x{k} x {k2}x{n})")
        for name, v in (("m", m), ("k", k), ("n", n)):
            if v is not None and not 1 <= v <= MATMUL_MAX:
                raise self.error(op, f"matmul {name}={v} is outside [1, {MATMUL_MAX}]")
        c = static_valid(out, self.defs)
        if not _same(c, (m, n)):
            raise self.error(op, f"matmul result is {_shape_str(c)}, expected {m}x{n}")
        if kind == "matmul_bias":
            bs = static_valid(bias, self.defs)
            if not _same(bs, (1, n)):
                raise self.error(op, f"bias is {_shape_str(bs)}, expected 1x{n}")


    def sort(self, op: Op, kind: str, ins: list[Value], outs: list[Value]) -> None:
        """tsort32: f32 values [R, C] (C a multiple of 32) and their ui32/i32 indices -> [R, 2C]
        pairs; tmrgsort format 1: pairs and an i32 run length -> the same shape; format 2:
        2-4 pair lists and the scratch {exhausted} -> the scratch's shape, and the status
        vector."""
        d = self.tile(op, outs[0], "result")
        tiles = [self.tile(op, v, "operand") for v in (ins if kind != "mrgsort1" else ins[:1])]
        for t in tiles + [d]:
            if t.loc != "vec":
                raise self.error(op, f"{op.name} works in 'vec', not '{t.loc}'")
        if kind == "sort32":
            src, idx = tiles
            if src.dtype != "f32" or idx.dtype not in ("ui32", "i32"):
                raise self.error(op, f"tsort32 sorts f32 values with ui32 indices, not {src.dtype} / "
                                     f"{idx.dtype}")
            if (idx.rows, idx.cols) != (src.rows, src.cols) or src.cols % 32 or \
                    (d.rows, d.cols) != (src.rows, 2 * src.cols) or d.dtype != "f32":
                raise self.error(op, f"tsort32 takes {src.rows}x{src.cols} values (a multiple of 32 "
                                     f"columns) and indices alike into {src.rows}x{2 * src.cols} f32 "
                                     f"pairs, got {d.rows}x{d.cols} {d.dtype}")
            return
        if any(t.dtype != "f32" for t in tiles + [d]):
            raise self.error(op, f"{op.name} merges f32 (value, index) pairs")
        if kind == "mrgsort1":
            b = ins[1]
            if not isinstance(b.type, ScalarType) or b.type.name != "i32":
                raise self.error(op, "tmrgsort's run length is an i32")
            k = const_int(b, self.defs)
            if k is not None and (k <= 0 or k % 64):
                raise self.error(op, f"tmrgsort's run length is a positive multiple of 64, not {k}")
            if (d.rows, d.cols) != (tiles[0].rows, tiles[0].cols):
                raise self.error(op, "tmrgsort (format 1) keeps its source's shape")
            return
        *lists, tmp = tiles
        if str(outs[1].type) != STATUS_VECTOR:
            raise self.error(op, f"tmrgsort's second result is its {STATUS_VECTOR} status")
        flag = op.operand_attrs.get(len(ins) - 1, {}).get("exhausted")
        if flag not in ("true", "false"):
            raise self.error(op, "tmrgsort's scratch carries {exhausted = true|false}")
        total = sum(t.cols for t in lists)
        if any(t.rows != d.rows for t in lists) or (tmp.rows, tmp.cols) != (d.rows, d.cols) \
                or d.cols != total:
            raise self.error(op, f"tmrgsort merges {len(lists)} lists of {d.rows} rows into the "
                                 f"scratch's shape, {d.rows}x{total}")

    def gemv(self, op: Op, kind: str, ins: list[Value], out: Value) -> None:
        """[1, K] (left) x [K, N] (right) -> acc, one valid row of 16: the right operand's
        valid K covers the left's; acc ins(acc, a, b) in place; bias ins(a, b, bias)."""
        phase = (op.attr("accPhase") or "#pto<acc_phase unspecified>").split()[-1].rstrip(">")
        if phase not in ACC_PHASES:
            raise self.error(op, f"{op.name}: accPhase is one of {', '.join(sorted(ACC_PHASES))}, "
                                 f"not '{phase}'")
        a, b = (ins[1], ins[2]) if kind == "gemv_acc" else (ins[0], ins[1])
        if kind == "gemv_acc" and ins[0].type != out.type:
            raise self.error(op, "tgemv.acc accumulates into a tile of the result's type")
        ta, tb, tc = self.tile(op, a, "left operand"), self.tile(op, b, "right operand"), out.type
        if (ta.loc, tb.loc, tc.loc) != ("left", "right", "acc"):
            raise self.error(op, f"{op.name} computes left x right -> acc, got {ta.loc} x {tb.loc} -> "
                                 f"{tc.loc}")
        triple = (tc.dtype, ta.dtype, tb.dtype)
        if triple not in MATMUL_DTYPES:
            raise self.error(op, f"gemv dtypes {tc.dtype} <- {ta.dtype} x {tb.dtype} are not supported")
        (m, k), (k2, n) = static_valid(a, self.defs), static_valid(b, self.defs)
        if ta.rows != 1 or m not in (1, None):
            raise self.error(op, f"{op.name}'s left operand is one row, got {ta.rows}x{ta.cols}")
        if k is not None and k2 is not None and k > k2:
            raise self.error(op, f"{op.name}: the right operand's K ({k2}) does not cover the "
                                 f"left's ({k})")
        if tc.rows != 16 or not _same(static_valid(out, self.defs), (1, n)):
            raise self.error(op, f"{op.name}'s result is a 16-row acc tile with 1x{n} valid, got "
                                 f"{tc.rows}x{tc.cols} valid {_shape_str(static_valid(out, self.defs))}")
        if kind == "gemv_bias":
            bt = self.tile(op, ins[2], "bias")
            if bt.loc != "bias" or bt.dtype != tc.dtype:
                raise self.error(op, f"tgemv.bias takes a {tc.dtype} bias from 'bias', not {bt.dtype} "
                                     f"in '{bt.loc}'")
            br, bc = static_valid(ins[2], self.defs)
            if br not in (1, None) or (bc is not None and n is not None and bc < n):
                raise self.error(op, f"bias is {_shape_str((br, bc))}; it covers 1x{n}")

    def matmul_mx(self, op: Op, kind: str, ins: list[Value], out: Value) -> None:
        """a5: left (f8E4M3FN) with its scales [M, K/32] (scaling, row/row) x right with its
        scales [K/32, N] (scaling, col/col) -> f32 acc; acc ins(acc, ...) in place, bias
        ins(..., bias) last."""
        if self.arch.name != "a5":
            raise self.error(op, f"{op.name} is an a5 instruction (MX matmuls), not {self.arch.name}'s")
        if kind == "matmul_mx_acc":
            if ins[0].type != out.type:
                raise self.error(op, "tmatmul.mx.acc accumulates into a tile of the result's type")
            ins = ins[1:]
        a, sa, b, sb = ins[:4]
        ta, tsa, tb, tsb = (self.tile(op, v, what) for v, what in
                            ((a, "left operand"), (sa, "left scale"), (b, "right operand"), (sb, "right scale")))
        tc = out.type
        if (ta.loc, tb.loc, tc.loc) != ("left", "right", "acc") or (ta.dtype, tb.dtype, tc.dtype) != \
                ("f8E4M3FN", "f8E4M3FN", "f32"):
            raise self.error(op, f"{op.name} computes f8E4M3FN left x f8E4M3FN right -> f32 acc, got "
                                 f"{ta.dtype} {ta.loc} x {tb.dtype} {tb.loc} -> {tc.dtype} {tc.loc}")
        for t, what, lay in ((tsa, "left", "row_major"), (tsb, "right", "col_major")):
            if (t.loc, t.dtype, t.blayout, t.slayout) != ("scaling", "!pto.f8E8M0", lay, lay):
                raise self.error(op, f"{op.name}'s {what} scales are !pto.f8E8M0 in 'scaling' with "
                                     f"blayout = slayout = {lay}, got {t.dtype} in '{t.loc}' "
                                     f"({t.blayout}/{t.slayout})")
        (m, k), (k2, n) = static_valid(a, self.defs), static_valid(b, self.defs)
        if not _same((k,), (k2,)):
            raise self.error(op, f"{op.name} inner dims differ: left is {m}x{k}, right is {k2}x{n}")
        for name, v, q in (("M", ta.rows, 16), ("K", ta.cols, 64), ("N", tb.cols, 32)):
            if v % q:
                raise self.error(op, f"{op.name} takes {name} a multiple of {q}, got {v}")
        g = -(-ta.cols // 32)
        if (tsa.rows, tsa.cols) != (ta.rows, g) or (tsb.rows, tsb.cols) != (g, tb.cols):
            raise self.error(op, f"{op.name}: scales are {ta.rows}x{g} (left) and {g}x{tb.cols} (right) "
                                 f"for K={ta.cols}, got {tsa.rows}x{tsa.cols} and {tsb.rows}x{tsb.cols}")
        if not _same(static_valid(out, self.defs), (m, n)):
            raise self.error(op, f"{op.name} result is {_shape_str(static_valid(out, self.defs))}, "
                                 f"expected {m}x{n}")
        if kind == "matmul_mx_bias":
            bt = self.tile(op, ins[4], "bias")
            if bt.loc != "bias" or bt.dtype != "f32":
                raise self.error(op, f"tmatmul.mx.bias takes an f32 bias from 'bias', not {bt.dtype} in "
                                     f"'{bt.loc}'")
