"""Cross-core events within a core group (pl.system.set_ffts / sync_set / sync_wait): their
verifier and their pto_sim calls.

    pto.set_ffts ins(%ws : !pto.ptr<i64>)
    pto.sync_set ins(%pipe[, %lane], %event : i64[, i32], i32) {pipe = #pto.pipe<MTE3>, ffts_mode = 2}
    pto.sync_wait ins(%pipe[, %lane], %event : i64[, i32], i32) {pipe = #pto.pipe<MTE2>}

The counters live in the group's pipe (pto_sim.hpp: sync_set / sync_wait); an AIV names its
lane, the AIC does not. Mode 2 is AIC <-> AIVs, mode 1 AIV <-> AIV; mode 0 (every core of
the launch) is not built. On a2a3, as on A3's FFTS, a function names its workspace with
set_ffts before its first event op."""
from __future__ import annotations

from .ir import Op, PtrType, ScalarType, walk

EVENT_OPS = {"pto.set_ffts", "pto.sync_set", "pto.sync_wait"}
PIPES = ("MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX", "ALL")
WORKSPACE_ELEMENTS = 256


def _pipe(op: Op) -> str | None:
    raw = (op.attrs.get("pipe") or "").strip()
    return raw[len("#pto.pipe<"):-1] if raw.startswith("#pto.pipe<") and raw.endswith(">") else None


def verify(v, op: Op) -> None:
    ins = [x.type for x in op.group("ins")]
    if op.name == "pto.set_ffts":
        if len(ins) != 1 or not isinstance(ins[0], PtrType) or ins[0].elem != "i64" or op.results:
            raise v.error(op, "pto.set_ffts is `pto.set_ffts ins(%ws : !pto.ptr<i64>)`")
        return
    kind = v.f.kernel_kind
    if kind not in ("cube", "vector"):
        raise v.error(op, f"{op.name} runs on a core of a core group (a cube or a vector kernel), not in "
                          f"{kind or 'an unspecialised'} kernel @{v.f.name}")
    want = ["i64"] + (["i32"] if kind == "vector" else []) + ["i32"]
    if [str(t) if isinstance(t, ScalarType) else None for t in ins] != want or op.results:
        lane = ", %lane" if kind == "vector" else ""
        raise v.error(op, f"{op.name} in a {kind} kernel is `{op.name} ins(%pipe{lane}, %event : "
                          f"{', '.join(want)})`")
    if _pipe(op) not in PIPES:
        raise v.error(op, f"{op.name} needs {{pipe = #pto.pipe<P>}} with P one of {', '.join(PIPES)}")
    if op.name == "pto.sync_set":
        mode = op.attrs.get("ffts_mode", "")
        if mode == "0":
            raise v.error(op, "pto.sync_set: ffts_mode = 0 (every core of the launch) is not built on the "
                              "simulator; use pto.syncall")
        if mode not in ("1", "2"):
            raise v.error(op, f"pto.sync_set needs {{ffts_mode = 1 | 2}}, got {mode or 'none'}")
        if mode == "1" and kind == "cube":
            raise v.error(op, "pto.sync_set: ffts_mode = 1 is an event between the two AIVs; a cube kernel "
                              "cannot raise it")
    if v.arch.name == "a2a3":
        ops = list(walk(v.f.body))
        first = next((i for i, o in enumerate(ops) if o.name == "pto.set_ffts"), None)
        if first is None or first > next(i for i, o in enumerate(ops) if o is op):
            raise v.error(op, f"{op.name}: on a2a3 @{v.f.name} names its FFTS workspace first "
                              f"(pto.set_ffts ins(%ws : !pto.ptr<i64>), pl.system.set_ffts(ws))")


def emit(e, op: Op, ind: str) -> None:
    ins = [e.n(x) for x in op.group("ins")]
    s = e.site(op)
    if op.name == "pto.set_ffts":
        e.emit(ind, f"pto::set_ffts({ins[0]}, {WORKSPACE_ELEMENTS}, {s});")
        return
    pipe, event = ins[0], ins[-1]
    lane = ins[1] if len(ins) == 3 else "-1"
    if op.name == "pto.sync_set":
        e.emit(ind, f"pto::sync_set({pipe}, {lane}, {event}, {int(op.attrs['ffts_mode'])}, {s});")
    else:
        e.emit(ind, f"pto::sync_wait({pipe}, {lane}, {event}, {s});")
