"""The cube's L0 tile chooser: for a matmul [M, K] x [K, N], the design point
(m, n, k, which operand stays resident, whether L0C is double-buffered) with the
lowest modelled wall time.

The model is the reference's roofline of one cube core (facts taken from its
published chooser: the L1->L0 bandwidths, the FIXPIPE drain fit and the MAD issue
cost below were measured on 910B hardware):

  C_mad   = tiles * (ceil(K/k) * mad_head + passes * ceil(m/16) * Kfrac * ceil(n/16))
            Kfrac: the K fractals of the full k blocks plus the peeled tail's own
  C_drain = tiles * (drain_fixed + m * (max(drain_row, bytes_c*n/bw_drain)
                                        + drain_penalty * (odd(ceil(n/N0)) - 1)))
  C_load  = the operand bytes moved L1 -> L0, each over its port's bandwidth; an
            operand held across the grid (k == K) moves once, a streamed one once
            per tile of the other axis
  wall    = max(C_load, C_mad) + C_drain                 one accumulator
          = max(compute, drain) + min(compute, drain)/T  two (the drain hidden)

Every aligned (m, n, k) that fits the buffers is scored (the wall is not monotone
in k); ties go to the smaller padded volume, fewer K blocks, less load, the larger
output block, the larger k. The plain regime (both operands streamed, one
accumulator) is scored first; a resident operand or a second accumulator is taken
only where the caller allows it and only for a strictly lower wall, and only when
the plain optimum tiles the output at all.

`pypto.pypto_core.passes.l0_tile_chooser` is this module (the reference's path).
AutoTileMatmulL0 emits the design point it picks (auto_tile_matmul_l0.choose).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import astuple, dataclass


class Stationarity(enum.Enum):
    """Which operand stays in L0 across the tile grid (the others stream)."""
    OutputStationary = 0
    AStationary = 1
    BStationary = 2


@dataclass
class L0TileConfig:
    """The problem, the buffers (bytes), the alignments and the model's constants."""
    M: int = 0
    N: int = 0
    K: int = 0
    l0a_bytes: int = 0
    l0b_bytes: int = 0
    l0c_bytes: int = 0
    bytes_a: int = 2
    bytes_b: int = 2
    bytes_c: int = 4
    min_m: int = 16
    min_n: int = 16
    min_k: int = 16
    align_m: int = 16
    align_n: int = 16
    align_k: int = 16
    l0c_align_m: int = 16
    box_align_m: int = 1
    box_align_n: int = 1
    max_n: int = 0
    max_n_pipelined: int = 0
    max_n_nested_pipelined: int = 0
    allow_a_stationary: bool = False
    allow_b_stationary: bool = False
    allow_double_buffer_c: bool = False
    c_read: bool = False
    bw_a: float = 129.7            # L1 -> L0A bytes per cycle
    bw_b: float = 85.4             # L1 -> L0B bytes per cycle
    bw_drain: float = 118.0        # FIXPIPE L0C bytes per cycle (wide n)
    drain_fixed_cycles: float = 164.0
    drain_row_cycles: float = 4.45
    drain_penalty_cycles: float = 2.6
    drain_c0_bytes: int = 32
    mad_head: int = 21
    mad_k_fractal_bytes: int = 32
    mad_fp32_passes: int = 2
    allow_padding: bool = False
    allow_k_boundary: bool = False


@dataclass
class L0TileResult:
    m: int = 0
    n: int = 0
    k: int = 0
    estimated_traffic_bytes: int = 0
    estimated_cost_cycles: int = 0
    padded_compute_volume: int = 0
    stationarity: Stationarity = Stationarity.OutputStationary
    os_holds_a: bool = True
    double_buffer_c: bool = False
    perf_hint: str = ""


class L0TileError(ValueError):
    """The configuration admits no tile (bad dimensions or buffers too small)."""


def choose_l0_tile(cfg: L0TileConfig) -> L0TileResult:
    return _choose(astuple(cfg))


# -- the model ------------------------------------------------------------------

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _up(x: int, a: int) -> int:
    return _cdiv(x, a) * a


def _odd(x: int) -> int:
    while x % 2 == 0:
        x //= 2
    return x


def _acc_elements(m: int, n: int, c: L0TileConfig) -> int:
    """L0C elements an [m, n] block occupies: boxed by the operands' layout, rows
    padded to the accumulator's alignment."""
    return _up(_up(m, c.box_align_m), c.l0c_align_m) * _up(n, c.box_align_n)


def _hold_a(m: int, n: int, c: L0TileConfig) -> bool:
    """A full-K output-stationary grid hoists the operand whose reloads cost less."""
    return _held_a(m, c) <= _held_b(n, c)


def _held_a(m: int, c: L0TileConfig) -> float:
    return c.bytes_a * c.M * c.K / c.bw_a + c.bytes_b * c.K * c.N * _cdiv(c.M, m) / c.bw_b


def _held_b(n: int, c: L0TileConfig) -> float:
    return c.bytes_a * c.M * c.K * _cdiv(c.N, n) / c.bw_a + c.bytes_b * c.K * c.N / c.bw_b


def _load(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> float:
    if stat is Stationarity.AStationary:
        return _held_a(m, c)
    if stat is Stationarity.BStationary:
        return _held_b(n, c)
    if k >= c.K:                          # the grid hoists the cheaper operand
        return min(_held_a(m, c), _held_b(n, c))
    return (c.bytes_a * c.M * c.K * _cdiv(c.N, n) / c.bw_a
            + c.bytes_b * c.K * c.N * _cdiv(c.M, m) / c.bw_b)


def _traffic(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> int:
    a_once, b_once = c.bytes_a * c.M * c.K, c.bytes_b * c.K * c.N
    a_streamed, b_streamed = a_once * _cdiv(c.N, n), b_once * _cdiv(c.M, m)
    if stat is Stationarity.AStationary or (stat is Stationarity.OutputStationary and k >= c.K
                                            and _hold_a(m, n, c)):
        ab = a_once + b_streamed
    elif stat is Stationarity.BStationary or (stat is Stationarity.OutputStationary and k >= c.K):
        ab = a_streamed + b_once
    else:
        ab = a_streamed + b_streamed
    return ab + (2 if c.c_read else 1) * c.bytes_c * c.M * c.N


def _mad(m: int, n: int, k: int, c: L0TileConfig) -> int:
    kt = max(1, c.mad_k_fractal_bytes // c.bytes_a)
    passes = max(1, c.mad_fp32_passes) if c.bytes_a == 4 else max(1, c.bytes_a // 2)
    full, tail = divmod(c.K, k)
    fractals = full * _cdiv(k, kt) + (_cdiv(tail, kt) if tail else 0)
    per_block = (full + (1 if tail else 0)) * c.mad_head \
        + passes * _cdiv(m, c.align_m) * fractals * _cdiv(n, c.align_n)
    return _cdiv(c.M, m) * _cdiv(c.N, n) * per_block


def _drain(m: int, n: int, c: L0TileConfig) -> float:
    n0 = max(1, c.drain_c0_bytes // c.bytes_c)
    row = max(c.drain_row_cycles, c.bytes_c * n / c.bw_drain) \
        + c.drain_penalty_cycles * (_odd(_cdiv(n, n0)) - 1)
    return _cdiv(c.M, m) * _cdiv(c.N, n) * (c.drain_fixed_cycles + m * row)


def _wall(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity, dbc: bool) -> int:
    compute = max(_load(m, n, k, c, stat), float(_mad(m, n, k, c)))
    drain = _drain(m, n, c)
    if dbc:
        wall = max(compute, drain) + min(compute, drain) / (_cdiv(c.M, m) * _cdiv(c.N, n))
    else:
        wall = compute + drain
    return int(wall + 0.5)                # llround: walls are positive


@dataclass(frozen=True)
class _Point:
    m: int
    n: int
    k: int
    stat: Stationarity
    dbc: bool
    wall: int
    padded: int
    load: float

    def key(self, c: L0TileConfig) -> tuple:
        return (self.wall, self.padded, _cdiv(c.K, self.k), self.load, -self.m * self.n, -self.k)


def _ks(m: int, n: int, c: L0TileConfig, a_elems: int, b_elems: int) -> range | list[int]:
    """Every legal k for an (m, n) block: aligned, fitting L0A and L0B; dividing K
    unless the caller peels a K tail (only for an aligned K) or pads."""
    cap = min(a_elems // _up(m, c.box_align_m), b_elems // _up(n, c.box_align_n))
    top = max(_up(c.K, c.align_k), c.min_k) if c.allow_padding else c.K
    hi = min(cap, top) // c.align_k * c.align_k
    peel = c.allow_k_boundary and c.K % c.align_k == 0
    return [k for k in range(c.min_k, hi + 1, c.align_k)
            if c.allow_padding or peel or c.K % k == 0]


def _inner_full_tiles(m: int, n: int, c: L0TileConfig, stat: Stationarity) -> int:
    rows_outer = stat is Stationarity.AStationary or (
        stat is Stationarity.OutputStationary and _hold_a(m, n, c))
    return c.N // n if rows_outer else c.M // m


def _best(c: L0TileConfig, stat: Stationarity, dbc: bool, a_elems: int, b_elems: int,
          c_elems: int, full_k: bool) -> _Point | None:
    m_hi = _up(c.M, c.align_m) if c.allow_padding else c.M
    n_hi = _up(c.N, c.align_n) if c.allow_padding else c.N
    if c.max_n > 0:
        n_hi = min(n_hi, c.max_n)
    best = None
    for m in range(c.min_m, m_hi + 1, c.align_m):
        rows = _up(_up(m, c.box_align_m), c.l0c_align_m)
        if rows > c_elems // _up(c.min_n, c.box_align_n):
            break
        for n in range(c.min_n, min(n_hi, c_elems // rows) + 1, c.align_n):
            if dbc and _inner_full_tiles(m, n, c, stat) < 2:
                continue
            if not _fits(m, n, c, stat, c_elems):
                continue
            for k in _ks(m, n, c, a_elems, b_elems):
                if full_k and k != c.K:
                    continue
                if not _grid_ok(m, n, k, c, stat):
                    continue
                p = _Point(m, n, k, stat, dbc, _wall(m, n, k, c, stat, dbc),
                           _cdiv(c.M, m) * m * _cdiv(c.N, n) * n * _cdiv(c.K, k) * k,
                           _load(m, n, k, c, stat))
                if best is None or p.key(c) < best.key(c):
                    best = p
    return best


def _fits(m: int, n: int, c: L0TileConfig, stat: Stationarity, c_elems: int) -> bool:
    if m < c.min_m or n < c.min_n or (c.max_n > 0 and n > c.max_n):
        return False
    if not c.allow_padding and (m > c.M or n > c.N):
        return False
    return _acc_elements(m, n, c) <= c_elems


def _grid_ok(m: int, n: int, k: int, c: L0TileConfig, stat: Stationarity) -> bool:
    """The caps on n of a full-K output grid whose n-sized buffers sit in one
    (max_n_pipelined) or two (max_n_nested_pipelined) pipelined loops."""
    if not (k == c.K and (m != c.M or n != c.N)):
        return True
    os_ = stat is Stationarity.OutputStationary
    if c.max_n_pipelined > 0 and (os_ or stat is Stationarity.AStationary) \
            and n > c.max_n_pipelined:
        return False
    if c.max_n_nested_pipelined > 0 and os_ and _hold_a(m, n, c) and n > c.max_n_nested_pipelined:
        return False
    return True


def _check(c: L0TileConfig) -> None:
    if min(c.M, c.N, c.K) <= 0:
        raise L0TileError(f"choose_l0_tile: M, N, K must be positive (got {c.M}, {c.N}, {c.K})")
    if min(c.l0a_bytes, c.l0b_bytes, c.l0c_bytes) <= 0:
        raise L0TileError("choose_l0_tile: the L0 capacities must be positive")
    if min(c.bytes_a, c.bytes_b, c.bytes_c, c.min_m, c.min_n, c.min_k, c.align_m, c.align_n,
           c.align_k, c.l0c_align_m, c.box_align_m, c.box_align_n, c.drain_c0_bytes) <= 0:
        raise L0TileError("choose_l0_tile: element sizes, minimum dimensions and alignments "
                          "must be positive")
    if min(c.bw_a, c.bw_b, c.bw_drain) <= 0:
        raise L0TileError("choose_l0_tile: the bandwidths must be positive")
    if c.max_n and c.max_n < c.min_n:
        raise L0TileError(f"choose_l0_tile: max_n ({c.max_n}) is below min_n ({c.min_n})")
    if not c.allow_padding and (c.M < c.min_m or c.N < c.min_n or c.K < c.min_k):
        raise L0TileError(f"choose_l0_tile: ({c.M}, {c.N}, {c.K}) is below the cube's minimum "
                          f"tile ({c.min_m}, {c.min_n}, {c.min_k}) and padding is not allowed")


def _budgets(c: L0TileConfig, stat: Stationarity, dbc: bool) -> tuple[int, int, int]:
    """Elements per buffer: a streamed operand gets half its L0 (double-buffered),
    a resident one all of it; two accumulators halve L0C."""
    a_db = 1 if stat is Stationarity.AStationary else 2
    b_db = 1 if stat is Stationarity.BStationary else 2
    return (c.l0a_bytes // (c.bytes_a * a_db), c.l0b_bytes // (c.bytes_b * b_db),
            c.l0c_bytes // (c.bytes_c * (2 if dbc else 1)))


@functools.lru_cache(maxsize=1024)
def _choose(values: tuple) -> L0TileResult:
    c = L0TileConfig(*values)
    _check(c)
    os_ = Stationarity.OutputStationary
    a0, b0, c0 = _budgets(c, os_, False)
    least = _acc_elements(c.min_m, c.min_n, c)
    if _up(c.min_m, c.box_align_m) > a0 // c.min_k or _up(c.min_n, c.box_align_n) > b0 // c.min_k \
            or least > c0:
        raise L0TileError(f"choose_l0_tile: the L0 buffers cannot hold the minimum tile "
                          f"({c.min_m} x {c.min_n} x {c.min_k})")
    best = _best(c, os_, False, a0, b0, c0, full_k=False)
    if best is None:
        raise L0TileError(f"choose_l0_tile: no legal tile for M={c.M}, N={c.N}, K={c.K}")
    if (best.m, best.n, best.k) != (c.M, c.N, c.K):       # it tiles: try the other regimes
        stats = [os_] + [s for s, on in ((Stationarity.AStationary, c.allow_a_stationary),
                                         (Stationarity.BStationary, c.allow_b_stationary)) if on]
        for stat in stats:
            for dbc in ((False, True) if c.allow_double_buffer_c else (False,)):
                if stat is os_ and not dbc:
                    continue
                a, b, cc = _budgets(c, stat, dbc)
                if cc < least:
                    continue
                p = _best(c, stat, dbc, a, b, cc, full_k=True)
                if p is not None and p.wall < best.wall:
                    best = p
    hint = ""
    if c.M < c.min_m or c.N < c.min_n or c.K < c.min_k:
        hint = (f"Matmul shape (M={c.M}, N={c.N}, K={c.K}) is below the cube minimum tile "
                f"dimension {c.min_m}; tile shape padded up to ({best.m}, {best.n}, {best.k}).")
    return L0TileResult(best.m, best.n, best.k, _traffic(best.m, best.n, best.k, c, best.stat),
                        best.wall, best.padded, best.stat, _hold_a(best.m, best.n, c), best.dbc,
                        hint)


__all__ = ["Stationarity", "L0TileConfig", "L0TileResult", "L0TileError", "choose_l0_tile"]
