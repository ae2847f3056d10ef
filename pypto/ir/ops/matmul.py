"""The cube's operators: matmul, matmul_acc, matmul_bias and the gemv family."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import MemorySpace, PtrType, ScalarType, TensorType, TileType, Const, TupleExpr
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, reg)


def _matmul_acc_dtype(a, b, op, span):
    _check_dtype(op, a, b, span)
    if a.dtype in (dt.FP32, dt.FP16, dt.BF16):
        return dt.FP32
    if a.dtype == dt.INT8:
        return dt.INT32
    _err(f"{op}: no matmul for {a.dtype} inputs (fp16, bf16, fp32 or int8)", span)


def _transposed(t):
    """A tensor read transposed: its last two dims swapped."""
    valid = None if t.valid is None else (*t.valid[:-2], t.valid[-1], t.valid[-2])
    return TensorType((*t.shape[:-2], t.shape[-1], t.shape[-2]), t.dtype, None, valid)


def _matmul(args, kw, span):
    a, b = _shaped("matmul", args[0], span), _shaped("matmul", args[1], span)
    for flag, x in (("a_trans", a), ("b_trans", b)):
        if kw.get(flag) not in (None, False, True):
            _err(f"matmul: {flag} is True or False", span)
        if kw.get(flag) and not (isinstance(x, TensorType) and len(x.shape) in (2, 3)):
            from pypto.errors import NotBuiltError
            raise NotBuiltError(f"matmul: {flag}=True on {_tname(x)} is not supported by this pypto "
                                f"yet (it is built for 2-D and 3-D tensor operands)", span,
                                "transpose through a tensor: pl.matmul on the tensors inside pl.at")
    if kw.get("a_trans"):
        a = _transposed(a)
    if kw.get("b_trans"):
        b = _transposed(b)
    if type(a) is not type(b):
        _err(f"matmul: cannot mix {_tname(a)} and {_tname(b)}", span, _MIX_HINT)
    valid = None
    if (a.valid is not None or b.valid is not None) and len(a.shape) == len(b.shape) == 2:
        valid = _partial_product(a, b, span)     # the cube multiplies the valid parts
    else:
        whole("matmul", a, span, "left operand")
        whole("matmul", b, span, "right operand")
    if isinstance(a, TensorType) and 3 in (len(a.shape), len(b.shape)):
        return _batched(a, b, kw, span)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        _err(f"matmul: shapes {list(a.shape)} x {list(b.shape)} do not chain", span)
    acc = _matmul_acc_dtype(a, b, "matmul", span)
    if isinstance(a, TensorType):
        out = kw.get("out_dtype") or a.dtype
        return TensorType((a.shape[0], b.shape[1]), out, None, valid)
    return TileType((a.shape[0], b.shape[1]), acc, MemorySpace.Acc, None, valid)


def _partial_product(a, b, span):
    """Tiles with valid shapes smaller than themselves: the product of the valid parts,
    over the left's valid K, which the right's must cover (known when compiling); its valid
    shape, or None."""
    (am, ak), (bk, bn) = a.valid_shape, b.valid_shape
    if None in (am, ak, bk, bn):
        from pypto.errors import NotBuiltError
        raise NotBuiltError("matmul: operands whose valid shape is known only at run time are not "
                            "supported by this pypto yet", span, "give them static valid shapes")
    if ak > bk:
        _err(f"matmul: the valid parts do not chain: {am}x{ak} x {bk}x{bn} (the right's valid K must "
             f"cover the left's)", span)
    return None if (am, bn) == (a.shape[0], b.shape[1]) else (am, bn)


def _batched(a, b, kw, span):
    """A tensor matmul with a 3-D operand: a matmul per batch (a 2-D operand is every
    batch's), lowered to pl.batch_matmul."""
    if any(len(x.shape) not in (2, 3) for x in (a, b)):
        _err(f"matmul: 2-D or 3-D operands, got {_tname(a)} x {_tname(b)}", span)
    batch = a.shape[0] if len(a.shape) == 3 else b.shape[0]
    if len(a.shape) == 3 and len(b.shape) == 3 and a.shape[0] != b.shape[0]:
        _err(f"matmul: batches differ, {a.shape[0]} and {b.shape[0]}", span)
    if a.shape[-1] != b.shape[-2]:
        _err(f"matmul: shapes {list(a.shape)} x {list(b.shape)} do not chain", span)
    _matmul_acc_dtype(a, b, "matmul", span)
    return TensorType((batch, a.shape[-2], b.shape[-1]), kw.get("out_dtype") or a.dtype)


def _matmul_acc(args, kw, span):
    acc = _shaped("matmul_acc", args[0], span)
    a, b = _shaped("matmul_acc", args[1], span), _shaped("matmul_acc", args[2], span)
    if isinstance(acc, TensorType):          # tensor level: acc += lhs @ rhs as pl.matmul reads them
        t = _matmul([args[1], args[2]], {k: kw[k] for k in ("a_trans", "b_trans") if k in kw}, span)
        if tuple(acc.shape) != tuple(t.shape):
            _err(f"matmul_acc: {list(acc.shape)} += {list(a.shape)} x {list(b.shape)} does not "
                 f"chain", span)
        if len(args) > 3:
            from pypto.errors import NotBuiltError
            raise NotBuiltError("matmul_acc: init_cond= on tensors is not supported by this pypto "
                                "yet", span, "use pl.matmul_acc on tiles for a conditional first step")
        return TensorType(acc.shape, acc.dtype)
    if kw.get("a_trans") or kw.get("b_trans"):
        _err("matmul_acc: a_trans / b_trans read tensors transposed; these are tiles", span,
             "pl.tile.transpose_view the Mat tile before pl.move")
    if a.shape[1] != b.shape[0] or (acc.shape[0], acc.shape[1]) != (a.shape[0], b.shape[1]):
        _err(f"matmul_acc: {list(acc.shape)} += {list(a.shape)} x {list(b.shape)} does not chain", span)
    if any(x.valid is not None for x in (acc, a, b)):
        # partial operands (static): the accumulator holds the valid part of their product
        if any(x.valid is not None and None in x.valid for x in (acc, a, b)):
            for x, what in ((acc, "accumulator"), (a, "left operand"), (b, "right operand")):
                whole("matmul_acc", x, span, what)
        part = _partial_product(a, b, span) or tuple(acc.shape)
        if tuple(acc.valid_shape) != tuple(part):
            _err(f"matmul_acc: the accumulator's valid part {list(acc.valid_shape)} is not that of "
                 f"{list(a.valid_shape)} x {list(b.valid_shape)}, {list(part)}", span)
    if len(args) > 3:                  # init_cond: where it holds, acc = lhs @ rhs afresh
        c = getattr(args[3], "type", None)
        if not (isinstance(c, ScalarType) and (c.dtype == dt.BOOL or not c.dtype.is_float)):
            _err(f"matmul_acc: init_cond is a condition (a bool scalar), got {_tname(c)}", span,
                 "init_cond=(k0 == 0)")
    want = _matmul_acc_dtype(a, b, "matmul_acc", span)
    if acc.dtype != want:
        _err(f"matmul_acc: the accumulator is {acc.dtype} but {a.dtype} x {b.dtype} accumulates in "
             f"{want}", span, f"accumulate into a {want} tile: start it with pl.matmul of operands "
                              f"of the same dtypes")
    return acc



def _matmul_bias(args, kw, span):
    """lhs @ rhs + bias (a [1, N] row added to every row), in the accumulator's dtype."""
    return _with_bias("matmul_bias", _matmul(args[:2], {}, span), args[2], span)


def _with_bias(op, t, bias, span):
    """The product t, checked against its bias: one row of t's dtype, from Mat (or Bias)."""
    bias = _shaped(op, bias, span, (TileType,))
    whole(op, bias, span, "bias")
    if tuple(bias.shape) != (1, t.shape[1]) or bias.dtype != t.dtype:
        _err(f"{op}: the bias is one {t.dtype} row of {t.shape[1]}, got {_tname(bias)}", span,
             f"load it as pl.load(bias, [0, 0], [1, {t.shape[1]}], target_memory=pl.Mem.Mat)")
    if bias.memory_space not in (None, MemorySpace.Mat, MemorySpace.Bias):
        _err(f"{op}: the bias reaches the cube from Mat (or Bias), not "
             f"{bias.memory_space.name}", span, "load it with target_memory=pl.Mem.Mat")
    return t


def _batch_matmul(args, kw, span):
    """[B, M, K] x [B, K, N] -> [B, M, N] on the cube, one matmul per batch (FlattenTileNdTo2D
    lays them out); a 2-D operand is shared by every batch."""
    a, b = (_shaped("batch_matmul", x, span, (TileType,)) for x in args[:2])
    if len(a.shape) not in (2, 3) or len(b.shape) not in (2, 3) or 3 not in (len(a.shape), len(b.shape)):
        _err(f"batch_matmul: [B, M, K] x [B, K, N] (one may be 2-D), got {_tname(a)} x {_tname(b)}", span,
             "pl.matmul multiplies two 2-D tiles")
    batch = a.shape[0] if len(a.shape) == 3 else b.shape[0]
    if len(a.shape) == 3 and len(b.shape) == 3 and a.shape[0] != b.shape[0]:
        _err(f"batch_matmul: batches differ, {a.shape[0]} and {b.shape[0]}", span)
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2:
        _err(f"batch_matmul: [{m}, {k}] x [{k2}, {n}] do not chain", span)
    for x, what in ((a, "left operand"), (b, "right operand")):
        whole("batch_matmul", x, span, what)
        if x.memory_space not in (None, MemorySpace.Mat):
            _err(f"batch_matmul: the {what} is in {x.memory_space.name}; batches are sliced from Mat",
                 span, "load the operands with target_memory=pl.Mem.Mat")
    acc = _matmul_acc_dtype(a, b, "batch_matmul", span)
    return TileType((batch, m, n), acc, MemorySpace.Acc)


def _batch_matmul_acc(args, kw, span):
    acc = _shaped("batch_matmul_acc", args[0], span, (TileType,))
    t = _batch_matmul(args[1:], kw, span)
    if tuple(acc.shape) != tuple(t.shape) or acc.dtype != t.dtype:
        _err(f"batch_matmul_acc: the accumulator is {_tname(acc)}, the product {_tname(t)}", span)
    return acc


reg("tile.batch_matmul_acc", (3, 3), _batch_matmul_acc, pure=False, params=("acc", "lhs", "rhs"),
    sig="pl.tile.batch_matmul_acc(acc, lhs, rhs)  (acc += lhs @ rhs per batch, in place)")
reg("tile.batch_matmul", (2, 2), _batch_matmul, params=("lhs", "rhs"),
    sig="pl.batch_matmul(lhs, rhs)  ([B, M, K] x [B, K, N] Mat tiles -> [B, M, N] Acc, a matmul per "
        "batch; a 2-D operand is shared; pl.tile.transpose_view(b) of a [B, N, K] tile for B^T)")

ACC_PHASES = ("unspecified", "partial", "final")
GEMV_INPUTS = (dt.INT8, dt.FP16, dt.BF16, dt.FP32)


def _gemv_product(op, lhs, rhs, kw, span):
    """C[1, N] = A[1, K] @ B[K, N] on the cube: A one row (physically too), B's valid K
    covering A's; inputs of one dtype (int8 -> int32, fp16 / bf16 / fp32 -> fp32). The
    result is an Acc tile of 16 rows (the fractal), one of them valid."""
    phase = kw.get("acc_phase", "unspecified")
    if phase not in ACC_PHASES:
        _err(f"{op}: acc_phase is one of {', '.join(map(repr, ACC_PHASES))}, got {phase!r}", span)
    a, b = _shaped(op, lhs, span, (TileType,)), _shaped(op, rhs, span, (TileType,))
    if len(a.shape) != 2 or len(b.shape) != 2:
        _err(f"{op}: 2-D tiles, got {_tname(a)} and {_tname(b)}", span)
    if a.dtype != b.dtype or a.dtype not in GEMV_INPUTS:
        _err(f"{op}: inputs of one dtype, int8 (-> int32) or fp16 / bf16 / fp32 (-> fp32), got "
             f"{a.dtype} and {b.dtype}", span)
    if a.shape[0] != 1 or a.valid_shape[0] not in (1, None):
        _err(f"{op}: the left operand is one row [1, K], got {_tname(a)}", span,
             "pl.matmul multiplies [M, K] x [K, N]")
    ka, kb = a.valid_shape[1], b.valid_shape[0]
    if isinstance(ka, int) and isinstance(kb, int) and ka > kb:
        _err(f"{op}: the right operand's K ({kb}) must cover the left's ({ka})", span)
    if a.shape[1] > b.shape[0]:
        _err(f"{op}: [1, {a.shape[1]}] x {list(b.shape)} does not chain", span)
    out = dt.INT32 if a.dtype == dt.INT8 else dt.FP32
    n = b.valid_shape[1]
    return TileType((16, b.shape[1]), out, MemorySpace.Acc, None, (1, n))


def _gemv(args, kw, span):
    return _gemv_product("gemv", args[0], args[1], kw, span)


def _gemv_acc(args, kw, span):
    acc = _shaped("gemv_acc", args[0], span, (TileType,))
    t = _gemv_product("gemv_acc", args[1], args[2], kw, span)
    if tuple(acc.shape) != tuple(t.shape) or acc.dtype != t.dtype or \
            tuple(acc.valid_shape) != tuple(t.valid_shape):
        _err(f"gemv_acc: the accumulator is {_tname(acc)}, the product is {_tname(t)}", span,
             "start it with pl.tile.gemv of operands of the same shapes and dtypes")
    return acc


def _gemv_bias(args, kw, span):
    t = _gemv_product("gemv_bias", args[0], args[1], kw, span)
    bias = _shaped("gemv_bias", args[2], span, (TileType,))
    if bias.dtype != t.dtype or len(bias.shape) != 2 or bias.shape[0] != 1 \
            or bias.valid_shape[0] != 1 or bias.shape[1] != t.shape[1]:
        _err(f"gemv_bias: the bias is one {t.dtype} row of {t.shape[1]}, got {_tname(bias)}", span,
             f"load it as pl.load(bias, [0, 0], [1, {t.shape[1]}], target_memory=pl.Mem.Mat)")
    if bias.memory_space not in (None, MemorySpace.Mat, MemorySpace.Bias):
        _err(f"gemv_bias: the bias reaches the cube from Mat (or Bias), not "
             f"{bias.memory_space.name}", span, "load it with target_memory=pl.Mem.Mat")
    return t


_PHASE_DOC = ("acc_phase=\"unspecified\" | \"partial\" | \"final\": where the product stands in "
              "an accumulation (a hint to the hardware's pipeline; the values are the same)")
reg("tile.gemv", (2, 2), _gemv, ("acc_phase",), params=("lhs", "rhs"), pto="tgemv",
    sig=f"pl.tile.gemv(lhs, rhs, acc_phase=\"unspecified\")  ([1, K] x [K, N] -> an Acc tile of "
        f"16 rows, one valid; int8 -> int32, fp16 / bf16 / fp32 -> fp32; {_PHASE_DOC})")
reg("tile.gemv_acc", (3, 3), _gemv_acc, ("acc_phase",), pure=False, params=("acc", "lhs", "rhs"),
    pto="tgemv.acc", sig="pl.tile.gemv_acc(acc, lhs, rhs, acc_phase=\"unspecified\")  (acc += lhs @ rhs, "
                         "in place)")
reg("tile.gemv_bias", (3, 3), _gemv_bias, ("acc_phase",), params=("lhs", "rhs", "bias"),
    pto="tgemv.bias", sig="pl.tile.gemv_bias(lhs, rhs, bias, acc_phase=\"unspecified\")  (lhs @ rhs "
                          "plus a [1, N] bias row in the result's dtype; the bias goes Mat -> Bias)")
reg("tile.matmul_bias", (3, 3), _matmul_bias, params=("lhs", "rhs", "bias"), pto="tmatmul.bias",
    sig="pl.tile.matmul_bias(lhs, rhs, bias)  (lhs @ rhs plus the [1, N] bias in every row; the "
        "bias goes Mat -> Bias)")
for _ns in ("tensor", "tile"):
    reg(f"{_ns}.matmul", (2, 2), _matmul, ("out_dtype", "a_trans", "b_trans"), params=("lhs", "rhs"),
        sig="pl.matmul(lhs, rhs)  (tile level: Left x Right -> Acc; options out_dtype=, and on "
            "2-D tensors a_trans= / b_trans=, read transposed)")
    # not pure: it accumulates in place, possibly into a window of another tile
    reg(f"{_ns}.matmul_acc", (3, 4), _matmul_acc, ("a_trans", "b_trans"), pure=False,
        params=("acc", "lhs", "rhs", "init_cond"),
        sig="pl.matmul_acc(acc, lhs, rhs, init_cond=None)  (acc += lhs @ rhs; where init_cond "
            "holds, acc = lhs @ rhs: a split-K loop's first step without peeling it)")


# ---------------------------------------------------------------- MX block-scaled (a5)
MX_GROUP = 32          # one E8M0 scale per 32 elements along K


def _mx_product(op, lhs, lhs_scale, rhs, rhs_scale, span):
    """C[M, N] = (A * 2^(sa - 127)) @ (B * 2^(sb - 127)), each scale covering 32 elements of K:
    FP8E4M3FN data (an FP4 operand is pl.cast to FP8E4M3FN first) in Left / Right, E8M0
    scales [M, K/32] in LeftScale and [K/32, N] in RightScale; an FP32 Acc result."""
    a, b = _shaped(op, lhs, span, (TileType,)), _shaped(op, rhs, span, (TileType,))
    sa, sb = _shaped(op, lhs_scale, span, (TileType,)), _shaped(op, rhs_scale, span, (TileType,))
    for x, what in ((a, "lhs"), (b, "rhs")):
        if len(x.shape) != 2 or x.dtype != dt.FP8E4M3FN:
            fp4 = "; cast an FP4 operand to pl.FP8E4M3FN with pl.cast first" if x.dtype == dt.FP4 else ""
            _err(f"{op}: {what} is a 2-D FP8E4M3FN tile, got {_tname(x)}{fp4}", span)
        whole(op, x, span, what)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        _err(f"{op}: [{m}, {k}] x [{k2}, {n}] do not chain", span)
    for name, v, q in (("M", m, 16), ("K", k, 64), ("N", n, 32)):
        if v % q:
            _err(f"{op}: the cube's MX matmul takes {name} a multiple of {q}, got {name}={v}", span,
                 "pad the operands (pl.load with valid_shape=, then pl.fillpad)")
    groups = -(-k // MX_GROUP)
    for x, what, space, want in ((sa, "lhs_scale", MemorySpace.LeftScale, (m, groups)),
                                 (sb, "rhs_scale", MemorySpace.RightScale, (groups, n))):
        if x.dtype != dt.FP8E8M0 or tuple(x.shape) != want:
            _err(f"{op}: {what} is a {list(want)} FP8E8M0 tile (one scale per {MX_GROUP} elements of "
                 f"K={k}), got {_tname(x)}", span,
                 f"pl.move the scales from Mat with target_memory=pl.Mem.{space.name}")
        whole(op, x, span, what)
    for x, what, space in ((a, "lhs", MemorySpace.Left), (sa, "lhs_scale", MemorySpace.LeftScale),
                           (b, "rhs", MemorySpace.Right), (sb, "rhs_scale", MemorySpace.RightScale)):
        if x.memory_space not in (None, space):
            _err(f"{op}: {what} is read from {space.name}, not {x.memory_space.name}", span,
                 f"pl.move it with target_memory=pl.Mem.{space.name}")
    return TileType((m, n), dt.FP32, MemorySpace.Acc)


def _matmul_mx(args, kw, span):
    return _mx_product("matmul_mx", *args, span)


def _matmul_mx_acc(args, kw, span):
    acc = _shaped("matmul_mx_acc", args[0], span, (TileType,))
    t = _mx_product("matmul_mx_acc", *args[1:], span)
    if tuple(acc.shape) != tuple(t.shape) or acc.dtype != dt.FP32:
        _err(f"matmul_mx_acc: the accumulator is an FP32 {list(t.shape)} tile, got {_tname(acc)}", span,
             "start it with pl.matmul_mx")
    whole("matmul_mx_acc", acc, span, "accumulator")
    return acc


def _matmul_mx_bias(args, kw, span):
    return _with_bias("matmul_mx_bias", _mx_product("matmul_mx_bias", *args[:4], span), args[4], span)


_MX = ("lhs", "lhs_scale", "rhs", "rhs_scale")
_MX_DOC = ("FP8E4M3FN Left / Right data, FP8E8M0 scales in LeftScale [M, K/32] / RightScale "
           "[K/32, N], one per 32 elements of K; a5")
reg("tile.matmul_mx", (4, 4), _matmul_mx, params=_MX, pto="tmatmul.mx",
    sig=f"pl.matmul_mx(lhs, lhs_scale, rhs, rhs_scale)  ((lhs * 2^lhs_scale) @ (rhs * 2^rhs_scale) "
        f"-> an FP32 Acc tile; {_MX_DOC})")
reg("tile.matmul_mx_acc", (5, 5), _matmul_mx_acc, pure=False, params=("acc",) + _MX, pto="tmatmul.mx.acc",
    sig="pl.matmul_mx_acc(acc, lhs, lhs_scale, rhs, rhs_scale)  (acc += the MX product, in place)")
reg("tile.matmul_mx_bias", (5, 5), _matmul_mx_bias, params=_MX + ("bias",), pto="tmatmul.mx.bias",
    sig="pl.matmul_mx_bias(lhs, lhs_scale, rhs, rhs_scale, bias)  (the MX product plus a [1, N] FP32 "
        "bias row; the bias goes Mat -> Bias)")
