"""The cube's L0 tile chooser (pypto/passes/l0_tile_chooser.py): legal design points,
the regime gates, and the search checked against a plain re-enumeration of the model."""
import itertools
import math
import random

import pytest

from pypto.passes.l0_tile_chooser import (L0TileConfig, L0TileError, Stationarity,
                                          choose_l0_tile)

OS, AS, BS = Stationarity.OutputStationary, Stationarity.AStationary, Stationarity.BStationary


def a2a3(M, K, N, nbytes=4, **gates):
    return L0TileConfig(M=M, K=K, N=N, l0a_bytes=64 << 10, l0b_bytes=64 << 10,
                        l0c_bytes=128 << 10, bytes_a=nbytes, bytes_b=nbytes, bytes_c=4, **gates)


ALL = dict(allow_a_stationary=True, allow_b_stationary=True, allow_double_buffer_c=True,
           allow_k_boundary=True)


def test_a_matmul_that_fits_is_one_block():
    r = choose_l0_tile(a2a3(64, 64, 64, **ALL))
    assert (r.m, r.n, r.k, r.stationarity, r.double_buffer_c) == (64, 64, 64, OS, False)
    assert r.estimated_cost_cycles > 0 and r.padded_compute_volume == 64 ** 3


@pytest.mark.parametrize("M,K,N,nbytes", [(64, 512, 64, 4), (128, 1024, 128, 2), (32, 4096, 32, 4)])
def test_a_long_k_is_split_into_blocks_that_fit_half_of_l0a_and_l0b(M, K, N, nbytes):
    r = choose_l0_tile(a2a3(M, K, N, nbytes))
    assert r.k < K and K % r.k == 0 and r.k % 16 == 0           # no K tail unless allowed
    assert r.m * r.k * nbytes <= (64 << 10) // 2 and r.k * r.n * nbytes <= (64 << 10) // 2
    assert (r.m, r.n) == (M, N) and r.stationarity is OS      # the result fits L0C whole


def test_a_k_tail_only_where_the_caller_peels_it():
    # 688 = 43 * 16 has no convenient divisor: with the peel allowed the block may leave
    # an aligned tail; without it every block divides K
    plain = choose_l0_tile(a2a3(128, 688, 192, 4))
    peeled = choose_l0_tile(a2a3(128, 688, 192, 4, allow_k_boundary=True))
    assert 688 % plain.k == 0
    assert peeled.estimated_cost_cycles <= plain.estimated_cost_cycles
    assert (688 - 688 // peeled.k * peeled.k) % 16 == 0


def test_the_result_is_blocked_when_it_does_not_fit_l0c():
    r = choose_l0_tile(a2a3(512, 64, 512, 4))
    assert (r.m, r.n) != (512, 512)
    assert r.m * r.n * 4 <= 128 << 10


def test_regimes_only_where_the_caller_allows_them():
    shapes = [(256, 128, 544, 2), (48, 352, 96, 2), (64, 80, 256, 2), (448, 64, 448, 4)]
    for M, K, N, b in shapes:
        plain = choose_l0_tile(a2a3(M, K, N, b))
        assert plain.stationarity is OS and not plain.double_buffer_c
        rich = choose_l0_tile(a2a3(M, K, N, b, **ALL))
        assert rich.estimated_cost_cycles <= plain.estimated_cost_cycles
        if rich.stationarity is not OS or rich.double_buffer_c:
            assert rich.k == K                         # a resident operand spans all of K
            assert rich.estimated_cost_cycles < plain.estimated_cost_cycles   # strictly better
    # each of the richer regimes wins somewhere
    got = {(r.stationarity, r.double_buffer_c) for r in
           (choose_l0_tile(a2a3(M, K, N, b, **ALL)) for M, K, N, b in shapes)}
    assert {AS, BS} <= {s for s, _ in got} and any(d for _, d in got)


def test_two_accumulators_need_two_full_tiles_on_the_inner_axis():
    for M, N in [(160, 160), (256, 256), (448, 448), (96, 512)]:
        r = choose_l0_tile(a2a3(M, 64, N, 4, **ALL))
        if r.double_buffer_c:
            rows_outer = r.stationarity is AS or (r.stationarity is OS and r.os_holds_a)
            assert (N // r.n if rows_outer else M // r.m) >= 2
            assert 2 * r.m * r.n * 4 <= 128 << 10


def test_the_same_question_gets_the_same_answer():
    a, b = choose_l0_tile(a2a3(300 // 16 * 16, 640, 320, 2, **ALL)), \
        choose_l0_tile(a2a3(300 // 16 * 16, 640, 320, 2, **ALL))
    assert a == b


@pytest.mark.parametrize("bad", [dict(M=0), dict(K=-16), dict(l0c_bytes=0), dict(bw_a=0.0),
                                 dict(M=8), dict(l0a_bytes=256)])
def test_bad_configurations_are_typed_errors(bad):
    cfg = a2a3(64, 64, 64)
    for k, v in bad.items():
        setattr(cfg, k, v)
    with pytest.raises(L0TileError):
        choose_l0_tile(cfg)
    assert issubclass(L0TileError, ValueError)


def test_the_reference_import_path():
    from pypto.pypto_core.passes import l0_tile_chooser as mod
    cfg = mod.L0TileConfig()
    cfg.M, cfg.K, cfg.N = 64, 384, 256
    cfg.l0a_bytes = cfg.l0b_bytes = 64 * 1024
    cfg.l0c_bytes = 128 * 1024
    cfg.bytes_a = cfg.bytes_b = 4
    r = mod.choose_l0_tile(cfg)
    assert r.stationarity == mod.Stationarity.OutputStationary and r.k < 384


# -- the search against a plain re-enumeration of the same model --------------------

def _model_wall(c, m, n, k, stat, dbc):
    """The model written out once more, plainly (floats throughout)."""
    M, N, K = c.M, c.N, c.K
    tm, tn = math.ceil(M / m), math.ceil(N / n)
    held_a = c.bytes_a * M * K / c.bw_a + c.bytes_b * K * N * tm / c.bw_b
    held_b = c.bytes_a * M * K * tn / c.bw_a + c.bytes_b * K * N / c.bw_b
    if stat is AS:
        load = held_a
    elif stat is BS:
        load = held_b
    elif k >= K:
        load = min(held_a, held_b)
    else:
        load = c.bytes_a * M * K * tn / c.bw_a + c.bytes_b * K * N * tm / c.bw_b
    kt = 32 // c.bytes_a
    passes = 2 if c.bytes_a == 4 else max(1, c.bytes_a // 2)
    full, tail = K // k, K % k
    frac = full * math.ceil(k / kt) + (math.ceil(tail / kt) if tail else 0)
    mad = tm * tn * ((full + (tail > 0)) * 21 + passes * math.ceil(m / 16) * frac * math.ceil(n / 16))
    n1 = math.ceil(n / 8)
    odd = n1
    while odd % 2 == 0:
        odd //= 2
    row = max(4.45, 4 * n / 118.0) + 2.6 * (odd - 1)
    drain = tm * tn * (164.0 + m * row)
    compute = max(load, mad)
    wall = max(compute, drain) + min(compute, drain) / (tm * tn) if dbc else compute + drain
    return int(wall + 0.5)


def _brute_min(c):
    """The lowest wall over every legal point, each regime's rules spelled out."""
    def legal(m, n, k, stat, dbc):
        a_db, b_db = (1 if stat is AS else 2), (1 if stat is BS else 2)
        if m * k * c.bytes_a * a_db > c.l0a_bytes or n * k * c.bytes_b * b_db > c.l0b_bytes:
            return False
        if m * n * c.bytes_c * (2 if dbc else 1) > c.l0c_bytes:
            return False
        if k != c.K and c.K % k and not c.allow_k_boundary:
            return False
        if (stat is not OS or dbc) and k != c.K:
            return False
        if dbc:
            hold_a = stat is AS or (stat is OS and _model_wall_hold_a(c, m, n))
            if (c.N // n if hold_a else c.M // m) < 2:
                return False
        return True
    base = min(_model_wall(c, m, n, k, OS, False)
               for m, n, k in itertools.product(range(16, c.M + 1, 16), range(16, c.N + 1, 16),
                                                range(16, c.K + 1, 16))
               if legal(m, n, k, OS, False))
    best = base
    plain_whole = _model_wall(c, c.M, c.N, c.K, OS, False) == base and legal(c.M, c.N, c.K, OS, False)
    if plain_whole:
        return best
    for stat, dbc in itertools.product((OS, AS, BS), (False, True)):
        if (stat is AS and not c.allow_a_stationary) or (stat is BS and not c.allow_b_stationary) \
                or (dbc and not c.allow_double_buffer_c) or (stat is OS and not dbc):
            continue
        for m, n in itertools.product(range(16, c.M + 1, 16), range(16, c.N + 1, 16)):
            if legal(m, n, c.K, stat, dbc):
                best = min(best, _model_wall(c, m, n, c.K, stat, dbc))
    return best


def _model_wall_hold_a(c, m, n):
    tm, tn = math.ceil(c.M / m), math.ceil(c.N / n)
    return (c.bytes_a * c.M * c.K / c.bw_a + c.bytes_b * c.K * c.N * tm / c.bw_b
            <= c.bytes_a * c.M * c.K * tn / c.bw_a + c.bytes_b * c.K * c.N / c.bw_b)


def test_the_search_finds_the_models_minimum():
    rng = random.Random(7)
    for _ in range(12):
        M, N, K = (16 * rng.randint(1, 20) for _ in range(3))
        nbytes = rng.choice([2, 4])
        gates = {g: rng.random() < 0.5 for g in ALL}
        cfg = a2a3(M, K, N, nbytes, **gates)
        r = choose_l0_tile(cfg)
        assert r.estimated_cost_cycles == _brute_min(cfg), (M, K, N, nbytes, gates, r)
        assert r.estimated_cost_cycles == _model_wall(cfg, r.m, r.n, r.k, r.stationarity,
                                                      r.double_buffer_c)
