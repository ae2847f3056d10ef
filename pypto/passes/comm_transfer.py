"""pld.tensor.put / pld.tensor.get inside a kernel, lowered by ConvertTensorToTileOps to
what the hardware does -- a staging tile in Vec per chunk of the region:

    put:  t = tile.load(src, src_offsets + chunk, chunk)   ->  comm.remote_store(t, dst, peer, dst_offsets + chunk)
    get:  t = comm.remote_load(src, peer, src_offsets + chunk, chunk)  ->  tile.store(t, dst_offsets + chunk, dst)

A chunk is chunk_rows x chunk_cols when given, else whole rows up to STAGE_BYTES."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import AtomicType, BinOp, Const, TupleExpr

STAGE_BYTES = 64 * 1024


def _at(base: TupleExpr, r: int, c: int, span) -> TupleExpr:
    def add(x, k):
        if k == 0:
            return x
        if isinstance(x, Const):
            return Const(x.value + k, dt.INDEX, span)
        return BinOp("+", x, Const(k, dt.INDEX, span), dt.INDEX, span)
    a, b = base.items
    return TupleExpr([add(a, r), add(b, c)], span)


def _region(conv, call, span):
    args = [conv.expr(a) for a in call.args]
    dst, peer, src = args[:3]
    if len(args) == 6:
        dst_off, src_off = args[3], args[4]
        shape = [x.value for x in args[5].items]
    else:
        zero = TupleExpr([Const(0, dt.INDEX, span)] * 2, span)
        dst_off = src_off = zero
        shape = list(dst.type.shape)
    return dst, peer, src, dst_off, src_off, shape


def lower(conv, s, call) -> None:
    """Emit the staged transfer into conv.emit."""
    span = s.span
    dst, peer, src, dst_off, src_off, (rows, cols) = _region(conv, call, span)
    elem = src.type.dtype.nbytes
    cc = call.kwargs.get("chunk_cols") or cols
    cr = call.kwargs.get("chunk_rows") or max(1, min(rows, STAGE_BYTES // max(1, cc * elem)))
    atomic = call.kwargs.get("atomic", AtomicType.None_)
    for r in range(0, rows, cr):
        for c in range(0, cols, cc):
            h, w = min(cr, rows - r), min(cc, cols - c)
            box = TupleExpr([Const(h, dt.INDEX, span), Const(w, dt.INDEX, span)], span)
            if call.op == "comm.put":
                t = conv.new("put", "tile.load", [src, _at(src_off, r, c, span), box], {}, span, "stage")
                conv.new("put", "comm.remote_store", [t, dst, peer, _at(dst_off, r, c, span)],
                         {"atomic": atomic} if atomic is AtomicType.Add else {}, span, "sent")
            else:
                t = conv.new("get", "comm.remote_load", [src, peer, _at(src_off, r, c, span), box], {}, span,
                             "stage")
                conv.new("get", "tile.store", [t, _at(dst_off, r, c, span), dst], {}, span, "got")
