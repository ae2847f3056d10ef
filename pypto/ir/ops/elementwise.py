"""Element-wise operators: binary (and their tile-scalar forms), unary, cast."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import MemorySpace, PtrType, ScalarType, TensorType, TileType, Const, TupleExpr
from pypto.ir.ops.base import (MIX_HINT as _MIX_HINT, _check_dtype, _check_window, _dims, _err,
                               _indices, _ints, _same_kind, _shaped, _static, _tname, same_valid, valid_of, whole, int_only, reg)

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "fmod", "rem",
          "and_", "or_", "xor", "shl", "shr")
SCALAR_FORM = {"add": "adds", "sub": "subs", "mul": "muls", "div": "divs",
               "maximum": "maximums", "minimum": "minimums", "fmod": "fmods", "rem": "rems",
               "and_": "ands", "or_": "ors", "xor": "xors", "shl": "shls", "shr": "shrs"}
UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu", "not_", "sin", "cos")
SCRATCH = ("rsqrt", "recip")       # take an optional scratch tile and high_precision=
# high_precision=True asks for the chip's precise mode: for these the pto op's precisionType
# attribute (its enum's name), for rsqrt the form with a scratch tile
PRECISION = {"div": "div_precision", "log": "log_precision", "recip": "recip_precision"}
SCALAR_ONLY = ("lrelu",)           # tile-scalar ops with no tile-tile form
# bitwise: integer elements only, and no broadcast (a Python keyword gets a trailing _)
INT_ONLY = ("and_", "or_", "xor", "shl", "shr", "not_")
# the tile library's op for each (tile-scalar forms: the same name + "s")
PTO = {"add": "tadd", "sub": "tsub", "mul": "tmul", "div": "tdiv", "maximum": "tmax",
       "minimum": "tmin", "fmod": "tfmod", "rem": "trem", "and_": "tand", "or_": "tor", "xor": "txor",
       "shl": "tshl", "shr": "tshr", "exp": "texp", "log": "tlog", "sin": "tsin", "cos": "tcos",
       "sqrt": "tsqrt", "rsqrt": "trsqrt", "recip": "trecip", "neg": "tneg", "abs": "tabs",
       "relu": "trelu", "not_": "tnot"}


def _precision(op, kw, span):
    if "high_precision" in kw and not isinstance(kw["high_precision"], bool):
        _err(f"{op}: high_precision is True or False", span)


def _binary(op):
    def infer(args, kw, span):
        _precision(op, kw, span)
        a, b = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(b):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(b)}", span, _MIX_HINT)
        dtype = a.dtype
        if op.startswith("tensor.") and a.dtype != b.dtype and a.dtype.is_float and b.dtype.is_float:
            dtype = promoted(a.dtype, b.dtype)        # tensor ops promote, as the reference's do
        else:
            _check_dtype(op, a, b, span)
        if op.split(".")[1] in INT_ONLY:
            int_only(op, a, span)
        same_valid(op, a, b, span)
        if tuple(a.shape) != tuple(b.shape):
            bcast = op.split(".")[1] in ("add", "sub", "mul", "div") and len(a.shape) == 2 and \
                len(b.shape) == 2 and ((b.shape[0] == a.shape[0] and b.shape[1] == 1) or
                                       (b.shape[0] == 1 and b.shape[1] == a.shape[1]))
            if not bcast:
                _err(f"{op}: shape mismatch {list(a.shape)} vs {list(b.shape)}", span,
                     "operands must have equal shapes (add/sub/mul/div also broadcast an [M,1] or [1,N] second operand)")
        return _same_kind(a, a.shape, dtype, valid_of(a))
    return infer


def promoted(x, y):
    """The dtype two float tensors of different dtypes combine into: the wider one; of two
    as wide (fp16, bf16), the first. ConvertTensorToTileOps casts the other operand."""
    return y if y.nbytes > x.nbytes else x


def _scalar_binary(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        s = getattr(args[1], "type", None)
        if not isinstance(s, ScalarType):
            _err(f"{op}: second operand must be a scalar, got {_tname(s)}", span)
        if op.split(".")[1] in _INT_SCALAR:
            int_only(op, a, span)
            if s.dtype.is_float:
                _err(f"{op}: the scalar must be an integer, got {s.dtype}", span)
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer


FLOAT_ONLY = ("exp", "log", "sqrt", "rsqrt", "recip", "sin", "cos")
_INT_SCALAR = {SCALAR_FORM[o] for o in INT_ONLY if o in SCALAR_FORM}


def _unary(op):
    def infer(args, kw, span):
        a = _shaped(op, args[0], span)
        name = op.split(".")[1]
        if len(args) > 1:
            tmp = _shaped(op, args[1], span)
            if type(tmp) is not type(a) or tuple(tmp.shape) != tuple(a.shape) or tmp.dtype != a.dtype:
                _err(f"{op}: the scratch tile is {_tname(tmp)} but x is {_tname(a)}", span,
                     "the scratch tile has x's shape and dtype")
        _precision(op, kw, span)
        if op == "tile.rsqrt" and kw.get("high_precision") and len(args) < 2:
            _err("tile.rsqrt: the precise form is the one with a scratch tile", span,
                 "pl.tile.rsqrt(x, tmp) with tmp a tile of x's shape and dtype")
        if name in INT_ONLY:
            int_only(op, a, span)
        if name in FLOAT_ONLY and not a.dtype.is_float:
            _err(f"{op} needs a floating-point operand, got {a.dtype}", span,
                 f"convert it first: pl.{name}(pl.cast(x, pl.FP32))")
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer



def _lrelu(op):
    scalar = _scalar_binary(op)

    def infer(args, kw, span):
        t = scalar(args, kw, span)
        if not t.dtype.is_float:
            _err(f"{op} needs a floating-point operand, got {t.dtype}", span)
        return t
    return infer


def _cast(args, kw, span):
    a = _shaped("cast", args[0], span)
    target = kw.get("dtype") if "dtype" in kw else None
    if not isinstance(target, dt.DataType):
        _err("cast: the target dtype is required: pl.cast(x, pl.FP16)", span)
    # a matmul result's cast lands where InferTileMemorySpace puts it (Mat on a2/a3: the
    # cube's write-back converts), so its space is left open
    space = None if getattr(a, "memory_space", None) is MemorySpace.Acc else getattr(a, "memory_space", None)
    return _same_kind(a, a.shape, target) if isinstance(a, TensorType) else \
        TileType(a.shape, target, space, None, a.valid)



for _ns in ("tensor", "tile"):
    for _o in BINARY:
        _rule = ("integer elements, equal shapes" if _o in INT_ONLY else
                 "fmod: the dividend's sign, rem: the divisor's; equal shapes" if _o in ("fmod", "rem")
                 else "same dtype (tensors of two float dtypes: the wider, the other cast to it); "
                      "equal shapes, add/sub/mul/div also broadcast [M,1] or [1,N]")
        _hp = ("high_precision",) if _o in PRECISION else ()
        reg(f"{_ns}.{_o}", (2, 2), _binary(f"{_ns}.{_o}"), _hp, params=("lhs", "rhs"),
            sig=f"pl.{_o}(a, b{', high_precision=False' if _hp else ''})  ({_rule}"
                + ("; high_precision: the chip's precise mode (the pto op's precisionType); the "
                   "simulator computes both modes alike" if _hp else "") + ")", pto=PTO[_o])
        _s = SCALAR_FORM[_o]
        reg(f"{_ns}.{_s}", (2, 2), _scalar_binary(f"{_ns}.{_s}"), params=("lhs", "rhs"),
            sig=f"pl.{_s}(x, scalar)" + ("  (integer elements and scalar)" if _o in INT_ONLY else ""),
            pto=PTO[_o] + "s")
    for _o in UNARY:
        if _o in SCRATCH:          # a scratch tile the hardware's precise form uses
            how = ("the precise form takes a scratch tile of x's shape (tensor level: made for it)"
                   if _o == "rsqrt" else "the precise mode is the pto op's precisionType")
            reg(f"{_ns}.{_o}", (1, 2), _unary(f"{_ns}.{_o}"), ("high_precision",), params=("x", "tmp"),
                sig=f"pl.{_o}(x, tmp=None, high_precision=False)  ({how}; the simulator computes "
                    f"both modes alike)", pto=PTO[_o])
            continue
        _hp = ("high_precision",) if _o in PRECISION else ()
        reg(f"{_ns}.{_o}", (1, 1), _unary(f"{_ns}.{_o}"), _hp, params=("x",),
            sig=f"pl.{_o}(x{', high_precision=False' if _hp else ''})"
                + ("  (integer elements)" if _o in INT_ONLY else "")
                + ("  (high_precision: the chip's precise mode, the pto op's precisionType; the "
                   "simulator computes both modes alike)" if _hp else ""), pto=PTO[_o])
    reg(f"{_ns}.cast", (1, 1), _cast, ("dtype", "mode"), params=("x",),
        aliases={"target_type": "dtype"},
        sig="pl.cast(x, pl.FP16)  (or target_type=pl.FP16; mode=\"round\" and the other round modes; "
            "HF8 on a5: made from fp32 / fp16 by the mode (round: ties away from zero), cast to fp32)")

def _prelu(args, kw, span):
    """x if x > 0 else slope * x. The scratch tile is the hardware's: on a2/a3 a UINT8
    bit mask of the comparison (checked when the kernel is generated, where the chip
    is known); on a5 any tile, which the instruction does not read."""
    x, slope, tmp = (_shaped("prelu", a, span, (TileType,)) for a in args)
    if not x.dtype.is_float:
        _err(f"prelu needs a floating-point operand, got {x.dtype}", span)
    if slope.dtype != x.dtype or tuple(slope.shape) != tuple(x.shape):
        _err(f"prelu: the slope is {_tname(slope)}, x is {_tname(x)}", span,
             "the slope has x's shape and dtype")
    if len(tmp.shape) != 2 or tmp.memory_space not in (None, MemorySpace.Vec):
        _err(f"prelu: the scratch tile is {_tname(tmp)}; it is a 2-D Vec tile", span,
             "on a2/a3: pl.Tile[[rows + 1, 32], pl.UINT8] with valid columns >= ceil(cols / 8)")
    same_valid("prelu", x, slope, span)
    return TileType(x.shape, x.dtype, x.memory_space, None, x.valid)


PART = ("part_add", "part_mul", "part_max", "part_min")


def _part(op):
    def infer(args, kw, span):
        """src0's valid region: op(src0, src1) where src1 is valid too, src0 elsewhere."""
        a, b = _shaped(op, args[0], span), _shaped(op, args[1], span)
        if type(a) is not type(b):
            _err(f"{op}: cannot mix {_tname(a)} and {_tname(b)}", span, _MIX_HINT)
        _check_dtype(op, a, b, span)
        if tuple(a.shape) != tuple(b.shape) or len(a.shape) != 2:
            _err(f"{op}: two 2-D operands of one shape, got {list(a.shape)} and {list(b.shape)}", span)
        if a.valid is not None and None in a.valid or b.valid is not None and None in b.valid:
            from pypto.errors import NotBuiltError
            raise NotBuiltError(f"{op}: a valid shape known only at run time is not supported by "
                                f"this pypto yet", span, "give the valid extents as constants")
        return _same_kind(a, a.shape, a.dtype, valid_of(a))
    return infer


for _o in PART:
    for _ns in ("tensor", "tile"):
        reg(f"{_ns}.{_o}", (2, 2), _part(f"{_ns}.{_o}"), params=("src0", "src1"),
            sig=f"pl.{_o}(src0, src1)  (over src0's valid region: the op where src1 is valid too, "
                f"src0 elsewhere)", pto="t" + _o.replace("_", ""))

reg("tile.prelu", (3, 3), _prelu, params=("x", "slope", "tmp"), pto="tprelu",
    sig="pl.tile.prelu(x, slope, tmp)  (x if x > 0 else slope * x, the slope a tile of x's shape; "
        "tmp the hardware's scratch: on a2/a3 a UINT8 tile of >= valid rows + 1 rows and >= "
        "ceil(valid cols / 8) valid columns (a bit mask), on a5 any Vec tile)")

# tile level only, as in the reference (pl.lrelu is pl.tile.lrelu)
reg("tile.lrelu", (2, 2), _lrelu("tile.lrelu"), params=("x", "slope"),
    sig="pl.lrelu(x, slope)  (x if x > 0 else slope * x; float elements)", pto="tlrelu")


# compare and select (tile level, as in the reference): a mask is a UINT8 tile with one
# bit per element, 8 to a byte, each row padded to whole 32-byte blocks
CMP_TYPES = ("==", "!=", "<", "<=", ">", ">=")


def mask_cols(n: int) -> int:
    return ((n + 7) // 8 + 31) // 32 * 32


def _mask_of(op, a, kw, span):
    t = kw.get("cmp_type", 0)
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(CMP_TYPES):
        _err(f"{op}: cmp_type is 0..5 (0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=), got {t!r}", span)
    if len(a.shape) != 2:
        _err(f"{op} compares 2-D tiles, got shape {list(a.shape)}", span)
    rows = a.shape[0]
    return TileType((rows, mask_cols(a.shape[1])), dt.UINT8, a.memory_space, None,
                    None if a.valid is None else (a.valid_shape[0], mask_cols(a.shape[1])))


def _cmp(args, kw, span):
    a, b = _shaped("cmp", args[0], span, (TileType,)), _shaped("cmp", args[1], span, (TileType,))
    _check_dtype("cmp", a, b, span)
    same_valid("cmp", a, b, span)
    if tuple(a.shape) != tuple(b.shape):
        _err(f"cmp: shape mismatch {list(a.shape)} vs {list(b.shape)}", span)
    return _mask_of("cmp", a, kw, span)


def _cmps(args, kw, span):
    a = _shaped("cmps", args[0], span, (TileType,))
    if not isinstance(getattr(args[1], "type", None), ScalarType):
        _err(f"cmps: the second operand is a scalar, got {_tname(getattr(args[1], 'type', None))}", span)
    return _mask_of("cmps", a, kw, span)


MASK_CARRIERS = (dt.UINT8, dt.INT8, dt.UINT16, dt.INT16, dt.UINT32, dt.INT32)


def _check_mask(op, m, x, span):
    """A bit mask: bit j % 8 of byte j / 8 of row i for element (i, j), in a tile of any
    integer carrier dtype (its bytes are the bits)."""
    if not (isinstance(m, TileType) and m.dtype in MASK_CARRIERS and len(m.shape) == 2
            and m.shape[0] >= x.shape[0] and m.shape[1] * m.dtype.nbytes * 8 >= x.shape[1]):
        _err(f"{op}: the mask is {_tname(m)}, not a UINT8 bit mask for {_tname(x)}", span,
             "make it with pl.tile.cmp / pl.tile.cmps")


def _sel(args, kw, span):
    m = _shaped("sel", args[0], span, (TileType,))
    a, b = _shaped("sel", args[1], span, (TileType,)), _shaped("sel", args[2], span, (TileType,))
    _check_dtype("sel", a, b, span)
    same_valid("sel", a, b, span)
    if tuple(a.shape) != tuple(b.shape):
        _err(f"sel: shape mismatch {list(a.shape)} vs {list(b.shape)}", span)
    _check_mask("sel", m, a, span)
    return TileType(a.shape, a.dtype, a.memory_space, None, a.valid)


def _sels(args, kw, span):
    m, a = _shaped("sels", args[0], span, (TileType,)), _shaped("sels", args[1], span, (TileType,))
    _shaped("sels", args[2], span, (TileType,))
    if not isinstance(getattr(args[3], "type", None), ScalarType):
        _err(f"sels: the last operand is a scalar, got {_tname(getattr(args[3], 'type', None))}", span)
    _check_mask("sels", m, a, span)
    return TileType(a.shape, a.dtype, a.memory_space, None, a.valid)


_CMP_SIG = "(cmp_type 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=; a UINT8 [M, 32k] bit mask)"
reg("tile.cmp", (2, 2), _cmp, ("cmp_type",), params=("lhs", "rhs"), pto="tcmp",
    sig=f"pl.tile.cmp(lhs, rhs, cmp_type=0)  {_CMP_SIG}")
reg("tile.cmps", (2, 2), _cmps, ("cmp_type",), params=("lhs", "rhs"), pto="tcmps",
    sig=f"pl.tile.cmps(lhs, scalar, cmp_type=0)  {_CMP_SIG}")
def _tensor_cmp(args, kw, span):
    """1 where the comparison holds, 0 elsewhere, in the operands' dtype."""
    op = "cmps" if len(args) > 1 and isinstance(getattr(args[1], "type", None), ScalarType) else "cmp"
    a = _shaped(op, args[0], span, (TensorType,))
    if op == "cmp":
        b = _shaped(op, args[1], span, (TensorType,))
        _check_dtype(op, a, b, span)
        if tuple(a.shape) != tuple(b.shape):
            _err(f"cmp: shape mismatch {list(a.shape)} vs {list(b.shape)}", span)
    _mask_of(op, TileType(tuple(a.shape), a.dtype), kw, span)      # cmp_type and rank
    return TensorType(tuple(a.shape), a.dtype)


for _op in ("cmp", "cmps"):
    reg(f"tensor.{_op}", (2, 2), _tensor_cmp, ("cmp_type",), params=("lhs", "rhs"),
        sig=f"pl.{_op}(lhs, {'rhs' if _op == 'cmp' else 'scalar'}, cmp_type=0)  (tensors: 1 where "
            f"it holds, 0 elsewhere, in lhs's dtype)")
reg("tile.sel", (3, 4), _sel, params=("mask", "lhs", "rhs", "tmp"), pto="tsel",
    sig="pl.tile.sel(mask, lhs, rhs, tmp)  (lhs where the mask bit is set, else rhs)")
reg("tile.sels", (4, 4), _sels, params=("mask", "lhs", "tmp", "rhs"), pto="tsels",
    sig="pl.tile.sels(mask, lhs, tmp, scalar)  (lhs where the mask bit is set, else the scalar)")


def _scalar_cast(args, kw, span):
    t = getattr(args[0], "type", None)
    if not isinstance(t, ScalarType):
        _err(f"scalar.cast converts a scalar, got {_tname(t)}", span)
    target = kw.get("dtype")
    if not isinstance(target, dt.DataType):
        _err("cast: the target dtype is required: pl.cast(x, pl.INDEX)", span)
    return ScalarType(target)


reg("scalar.cast", (1, 1), _scalar_cast, ("dtype",), params=("x",),
    sig="pl.cast(x, pl.INDEX)  (a scalar computed in a kernel or an orchestration)")
