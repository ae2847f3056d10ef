"""The pipes a hand-written core group sets up: their verifier and their pto_sim calls.

    %b = pto.reserve_buffer {name = "v2c", size = 8192, location = #pto.address_space<mat>,
                             auto = false, base = 0} -> i32                  (the consumer's slots)
    %p = pto.import_reserved_buffer {name = "v2c", peer_func = "g_aic"} -> i32   (the producer)
    pto.aic_initialize_pipe ins(%pipe, %c2v, %v2c : i64, i32, i32) {dir_mask = 2, slot_size = 1024, id = 0}
    pto.tfree_from_aiv ins(%pipe[, %subblock] : i64[, i32]) {split = 0, id = 0}

(The pushes and pops are PIPE_OPS, with an `id`; a pop whose pipe has a tfree in the
function keeps its slot until that tfree.) dir_mask: 1 cube -> vector, 2 vector -> cube."""
from __future__ import annotations

from .ir import Op, ScalarType, walk

INIT = {"pto.aic_initialize_pipe": "cube", "pto.aiv_initialize_pipe": "vector"}
FREE = {"pto.tfree_from_aiv": ("cube", "pto::TO_AIC"), "pto.tfree_from_aic": ("vector", "pto::TO_AIV")}
BUFFERS = ("pto.reserve_buffer", "pto.import_reserved_buffer")
GROUP_PIPE_OPS = set(INIT) | set(FREE) | set(BUFFERS)
MAX_IDS = 4
SPACE = {"cube": "mat", "vector": "vec"}


def _int(v, op: Op, key: str, low: int = 0, default: int | None = None) -> int:
    raw = op.attrs.get(key)
    if raw is None and default is not None:
        return default
    if raw is None or not raw.lstrip("-").isdigit() or int(raw) < low:
        raise v.error(op, f"{op.name}: {key} is an integer >= {low}, got {raw}")
    return int(raw)


def default_slots(dir_mask: int) -> int:
    return 4 if dir_mask == 3 else 8      # per direction (the reference's defaults)


def pipe_id(v, op: Op) -> int:
    i = _int(v, op, "id", 0, 0)
    if i >= MAX_IDS:
        raise v.error(op, f"{op.name}: pipe id {i}; a kernel has pipes 0 to {MAX_IDS - 1}")
    return i


def _kind(v, op: Op, want: str) -> None:
    if v.f.kernel_kind != want:
        raise v.error(op, f"{op.name} runs in a {want} kernel, not in {v.f.kernel_kind or 'an unspecialised'} "
                          f"kernel @{v.f.name}")


def reserved(module, func_name: str, name: str) -> Op | None:
    f = next((g for g in module.funcs if g.name == func_name), None)
    return None if f is None else next((op for op in walk(f.body) if op.name == "pto.reserve_buffer"
                                        and op.attrs.get("name", "").strip('"') == name), None)


def verify(v, op: Op) -> None:
    n = op.name
    if n == "pto.reserve_buffer":
        if len(op.results) != 1 or str(op.results[0].type) != "i32":
            raise v.error(op, "pto.reserve_buffer gives one i32 (the buffer's base)")
        size = _int(v, op, "size", 1)
        loc = (op.attrs.get("location") or "").replace("#pto.address_space<", "").rstrip(">")
        want = SPACE.get(v.f.kernel_kind or "")
        if loc != want:
            raise v.error(op, f"pto.reserve_buffer in a {v.f.kernel_kind} kernel reserves its {want}, not {loc}")
        cap = v.arch.capacity[loc]
        if op.attrs.get("auto") != "false":
            if v.level == "level3":
                raise v.error(op, "pto.reserve_buffer needs its base (auto = false, base = B) at level3, where "
                                  "every buffer has its address: give it one, or compile at level2 (ptoas plans)")
            if size > cap:
                raise v.error(op, f"pto.reserve_buffer: {size} bytes do not fit the {cap} bytes of {loc}")
            return                          # level2: the planner places it (plan.reserve)
        base = _int(v, op, "base", 0)
        if base + size > cap:
            raise v.error(op, f"pto.reserve_buffer: {size} bytes at {base} run past the {cap} bytes of {loc}")
        return
    if n == "pto.import_reserved_buffer":
        if len(op.results) != 1 or str(op.results[0].type) != "i32":
            raise v.error(op, "pto.import_reserved_buffer gives one i32 (the peer buffer's base)")
        peer, name = (op.attrs.get(k, "").strip('"') for k in ("peer_func", "name"))
        if reserved(v.module, peer, name) is None:
            raise v.error(op, f"pto.import_reserved_buffer: @{peer} reserves no buffer named {name!r} in this "
                              f"module")
        return
    if n in INIT:
        _kind(v, op, INIT[n])
        ins = op.group("ins")
        if len(ins) != 3 or str(ins[0].type) != "i64" or not all(str(x.type) == "i32" for x in ins[1:]):
            raise v.error(op, f"{n} takes ins(%pipe, %c2v_consumer_buf, %v2c_consumer_buf : i64, i32, i32)")
        mask = _int(v, op, "dir_mask", 1)
        if mask not in (1, 2, 3):
            raise v.error(op, f"{n}: dir_mask is 1 (cube -> vector), 2 (vector -> cube) or 3, not {mask}")
        slot = _int(v, op, "slot_size", 1)
        slots = _int(v, op, "slot_num", 1, default_slots(mask))
        local = _int(v, op, "local_slot_num", 1, slots)
        if "local_slot_num" in op.attrs and v.arch.name != "a2a3":
            raise v.error(op, f"{n}: local_slot_num is an a2/a3 operand (a5 sizes the buffer by slot_num)")
        if local > slots:
            raise v.error(op, f"{n}: local_slot_num {local} is more than slot_num {slots}")
        pipe_id(v, op)
        # the buffer this side consumes from holds the slots it declares (a2/a3: its local
        # slots, a5: all of them)
        consumed = ins[2] if INIT[n] == "cube" else ins[1]
        count = op.attrs.get("local_slot_num" if v.arch.name == "a2a3" else "slot_num")
        if mask & (2 if INIT[n] == "cube" else 1) and count is not None:
            d = v.defs.get(consumed)
            if d is not None and d.name == "pto.reserve_buffer" and int(d.attrs.get("size", "0")) < slot * int(count):
                raise v.error(op, f"{n}: the consumer buffer {d.attrs.get('name')} has {d.attrs.get('size')} bytes; "
                                  f"{count} slots of {slot} need {slot * int(count)}")
        return
    if n in FREE:
        kind = FREE[n][0]
        _kind(v, op, kind)
        ins = op.group("ins")
        split, lanes = op.attrs.get("split", "0"), op.attrs.get("lanes", "1")
        sub = 1 if kind == "vector" and (split != "0" or lanes == "2") else 0
        if len(ins) != 1 + sub or str(ins[0].type) != "i64" or op.results:
            raise v.error(op, f"{n} takes ins(%pipe{', %subblock' if sub else ''}) and gives nothing")
        if sub and not (isinstance(ins[1].type, ScalarType) and ins[1].type.name == "i32"):
            raise v.error(op, f"{n}: the AIV's index in its group is i32, not {ins[1].type}")
        pipe_id(v, op)


def emit(e, op: Op, ind: str) -> None:
    n = op.name
    if n == "pto.reserve_buffer":
        e.emit(ind, f"const int32_t {e.n(op.results[0])} = {int(op.attrs['base'])};")
    elif n == "pto.import_reserved_buffer":
        d = reserved(e.module, op.attrs["peer_func"].strip('"'), op.attrs["name"].strip('"'))
        e.emit(ind, f"const int32_t {e.n(op.results[0])} = {int(d.attrs['base'])};   // @{d.attrs['name']}")
    elif n in INIT:
        ins = op.group("ins")
        mask = int(op.attrs["dir_mask"])
        slots = int(op.attrs.get("slot_num", default_slots(mask)))
        e.emit(ind, f"pto::pipe_init({', '.join(e.n(x) for x in ins)}, {mask}, {int(op.attrs['slot_size'])}, "
                    f"{slots}, {int(op.attrs.get('id', 0))}, {e.site(op)});")
    elif n in FREE:
        ins = op.group("ins")
        split = "3" if op.attrs.get("lanes") == "2" else op.attrs.get("split", "0")
        who = e.n(ins[1]) if len(ins) > 1 else "-1"
        e.emit(ind, f"pto::tfree({e.n(ins[0])}, {FREE[n][1]}, {split}, {who}, {int(op.attrs.get('id', 0))}, "
                    f"{e.site(op)});")


def held(func) -> set[tuple[str, int]]:
    """The pipes (direction, id) whose pops keep their slot until a tfree: those the
    function frees."""
    return {(FREE[op.name][1], int(op.attrs.get("id", 0))) for op in walk(func.body) if op.name in FREE}
