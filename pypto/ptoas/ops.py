"""The pto compute ops ptoas supports, as data: each op's kind drives both the verifier
(operand count, spaces, dtypes, shapes) and the emitter (call shape of the pto_sim op)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpSpec:
    kind: str
    cxx: str  # pto_sim function
    dtypes: str = "any"  # "any", "float" or "int": element types the op accepts


def _table() -> dict[str, OpSpec]:
    t: dict[str, OpSpec] = {}

    def add(kind: str, names: str, dtypes: str = "any") -> None:
        for n in names.split():
            t["pto." + n] = OpSpec(kind, n.replace(".", "_"), dtypes)

    # tile (+) tile; the second operand may broadcast as [M,1] or [1,N]
    add("binary", "tadd tsub tmul tdiv tmax tmin")
    add("binary_full", "tand tor txor tshl tshr", "int")
    add("binary_full", "tfmod trem")
    add("scalar", "tfmods trems")
    add("scalar", "tadds tsubs tmuls tdivs tmaxs tmins")
    add("scalar", "tlrelu", "float")
    add("scalar", "tands tors txors tshls tshrs", "int")
    add("unary", "tabs tneg trelu")
    add("unary", "texp tlog tsqrt trsqrt trecip tsin tcos", "float")
    add("unary", "tnot", "int")
    add("rowreduce", "trowsum trowmax trowmin trowprod")
    add("colreduce", "tcolsum tcolmax tcolmin tcolprod")
    add("rowargreduce", "trowargmax trowargmin", "float_src")
    add("colargreduce", "tcolargmax tcolargmin", "float_src")
    add("rowexpand_binary", "trowexpandadd trowexpandsub trowexpandmul trowexpanddiv "
                            "trowexpandmax trowexpandmin")
    add("colexpand_binary", "tcolexpandadd tcolexpandsub tcolexpandmul tcolexpanddiv "
                            "tcolexpandmax tcolexpandmin")
    add("rowexpand_binary", "trowexpandexpdif", "float")
    add("colexpand_binary", "tcolexpandexpdif", "float")
    add("rowexpand", "trowexpand")
    add("colexpand", "tcolexpand")
    add("fill", "texpands")
    add("fillpad", "tfillpad tfillpad_expand")
    add("ci", "tci")
    add("concat", "tconcat")
    add("insert", "tinsert")
    add("tri", "ttri")
    add("cmp", "tcmp")
    add("cmps", "tcmps")
    add("sel", "tsel")
    add("sels", "tsels")
    add("gather", "tgather")
    add("scatter", "tscatter")
    add("mscatter", "mscatter")
    add("mgather", "mgather")
    add("gatherb", "tgatherb")
    add("random", "trandom", "int")
    add("part", "tpartadd tpartmul tpartmax tpartmin")
    add("extract", "textract")
    add("prelu", "tprelu", "float")
    add("cvt", "tcvt")
    add("mov", "tmov")
    add("trans", "ttrans")
    add("load", "tload")
    add("store", "tstore")
    add("matmul", "tmatmul")
    add("matmul_acc", "tmatmul.acc")
    add("matmul_bias", "tmatmul.bias")
    add("matmul_mx", "tmatmul.mx")            # a5: FP8 data with E8M0 scales per 32 of K
    add("matmul_mx_acc", "tmatmul.mx.acc")
    add("matmul_mx_bias", "tmatmul.mx.bias")
    add("sort32", "tsort32")
    add("mrgsort", "tmrgsort")       # format 1 (runs of one tile) or 2 (2-4 lists): by operands
    add("gemv", "tgemv")
    add("gemv_acc", "tgemv.acc")
    add("gemv_bias", "tgemv.bias")
    return t


TILE_OPS = _table()


def kind_of(op) -> str:
    """An op's kind; pto.tmrgsort's format 1, ins(src, block_len), is kind mrgsort1, and
    pto.tgather's compare form, outs(dst, cdst), gather_cmp."""
    kind = TILE_OPS[op.name].kind
    if kind == "mrgsort" and len(op.group("ins")) == 2:
        return "mrgsort1"
    if kind == "gather" and len(op.group("outs")) == 2:     # the compare form: indices, counts
        return "gather_cmp"
    return kind

# The pipe between a Group's halves: op -> (the kernel kind it runs in, what it does, the
# tile's buffer(s), pto_sim's direction constant).
PIPE_OPS = {"pto.tpush_to_aiv": ("cube", "push", ("acc", "mat"), "pto::TO_AIV"),
            "pto.tpop_from_aic": ("vector", "pop", ("vec",), "pto::TO_AIV"),
            "pto.tpush_to_aic": ("vector", "push", ("vec",), "pto::TO_AIC"),
            "pto.tpop_from_aiv": ("cube", "pop", ("mat",), "pto::TO_AIC")}

# Ops with their own syntax (parser handlers) that are not in TILE_OPS.
STRUCTURAL_OPS = {"pto.make_tensor_view", "pto.partition_view", "pto.alloc_tile", "pto.treshape",
                  "pto.alloc_multi_tile", "pto.multi_tile_get",
                  "pto.declare_local_array", "pto.local_array_get", "pto.local_array_set",
                  "pto.load_scalar", "pto.store_scalar", "pto.tgetval", "pto.tsetval", "pto.subview",
                  "pto.syncall", "pto.aic_initialize_pipe", "pto.aiv_initialize_pipe", "pto.tfree_from_aiv",
                  "pto.tfree_from_aic", "pto.reserve_buffer", "pto.import_reserved_buffer",
                  "pto.comm_rank", "pto.comm_nranks", "pto.comm_notify", "pto.comm_wait", "pto.comm_tload",
                  "pto.comm_tstore", "pto.comm_barrier", "pto.set_ffts", "pto.sync_set",
                  "pto.sync_wait"} | set(PIPE_OPS)

# Matmul element types (acc, left, right).
MATMUL_DTYPES = {("i32", "i8", "i8"), ("f32", "f16", "f16"), ("f32", "bf16", "bf16"),
                 ("f32", "f32", "f32")}
MATMUL_MAX = 4095
ACC_PHASES = {"unspecified", "partial", "final"}
# pto.tgather's mask form: #pto.mask_pattern<P...> -> (keep one column of every k, the first)
MASK_PATTERNS = {"P0101": (2, 0), "P1010": (2, 1), "P0001": (4, 0), "P0010": (4, 1),
                 "P0100": (4, 2), "P1000": (4, 3), "P1111": (1, 0)}

# pto.tgather's compare form: #pto<cmp X> -> the pto_sim compare (0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=)
CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")

# Element types a tile may hold.
TILE_DTYPES = {"f32", "f16", "bf16", "i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64",
               "f8E4M3FN", "f8E5M2", "!pto.f8E8M0", "!pto.f4E2M1x2", "!pto.hif8"}
FP8_DTYPES = {"f8E4M3FN", "f8E5M2", "!pto.f8E8M0",      # stored, moved, converted: not computed with
              "!pto.f4E2M1x2",                           # (FP4: element pairs, converted to wider floats)
              "!pto.hif8"}                               # (HiFloat8: converted from f32 / f16, to f32)
FP4X2 = "!pto.f4E2M1x2"
HIF8 = "!pto.hif8"
HIF8_CVT = {("f32", HIF8), ("f16", HIF8), (HIF8, "f32")}
FLOAT_DTYPES = {"f32", "f16", "bf16"}

# tcvt round modes (#pto<round_mode X>) -> pto_sim RoundMode
ROUND_MODES = {"NONE": "pto::RM_RINT", "RINT": "pto::RM_RINT", "CAST_RINT": "pto::RM_RINT",
               "ROUND": "pto::RM_ROUND", "CAST_ROUND": "pto::RM_ROUND",
               "FLOOR": "pto::RM_FLOOR", "CAST_FLOOR": "pto::RM_FLOOR",
               "CEIL": "pto::RM_CEIL", "CAST_CEIL": "pto::RM_CEIL",
               "TRUNC": "pto::RM_TRUNC", "CAST_TRUNC": "pto::RM_TRUNC",
               "ODD": "pto::RM_ODD", "CAST_ODD": "pto::RM_ODD"}


def round_mode(attr_text: str | None) -> str:
    """`#pto<round_mode ROUND>` -> "pto::RM_ROUND"; absent -> round to nearest even."""
    if not attr_text:
        return "pto::RM_RINT"
    word = attr_text.replace("<", " ").replace(">", " ").split()[-1]
    if word not in ROUND_MODES:
        raise ValueError(f"unknown round mode '{word}' (known: {', '.join(sorted(ROUND_MODES))})")
    return ROUND_MODES[word]
