"""The C lanes (pypto/runtime/lanes.cpp) that run a fast-path launch's blocks: every block
runs once on its lane, the times and failures come back per block, and launch after launch
hands work over without losing or repeating a block."""
import ctypes

import numpy as np
import pytest

from abi_helper import describe
from ptogen import offset_window
from pypto.runtime import lanes


def _window_kernel(make_kernel):
    """Copies the 16x32 rows of x at row %arg2 into out."""
    return make_kernel(offset_window().text())


def _blocks(x, rows):
    """One argument array per block: x, its own output, its row."""
    outs = [np.zeros((16, 32), np.float32) for _ in rows]
    keep, per_block = [], []
    for out, r in zip(outs, rows):
        descs = [describe(x), describe(out)]
        args = (ctypes.c_int64 * 8)(*[ctypes.addressof(d) for d in descs], r)
        keep.append(descs)
        per_block.append(args)
    return outs, per_block, keep


@pytest.fixture
def runner():
    if not lanes.available():
        pytest.skip("the C lanes could not be built here")
    return lanes


def test_every_block_runs_once_on_its_lane(make_kernel, runner):
    kern = _window_kernel(make_kernel)
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    for n_lanes in (1, 2, 3):
        rows = [48, 0, 32, 16, 8]
        outs, per_block, _keep = _blocks(x, rows)
        plan = runner.make(kern.lib.pypto_kernel_entry, per_block, n_lanes)
        times, failed = runner.run_blocks(plan)
        assert failed == []
        for out, r in zip(outs, rows):
            np.testing.assert_array_equal(out, x[r:r + 16])
        assert len(times) == 5 and all(0 < s <= e for s, e in times)
        # the summary the fast launch reads instead of every block's times
        assert (plan.launch.first, plan.launch.last, plan.launch.failed) == \
            (min(s for s, _ in times), max(e for _, e in times), 0)


def test_a_failing_block_stops_the_launch_and_names_itself(make_kernel, runner):
    kern = _window_kernel(make_kernel)
    x = np.zeros((64, 32), np.float32)
    outs, per_block, _keep = _blocks(x, [0, 56, 16, 60])
    plan = runner.make(kern.lib.pypto_kernel_entry, per_block, 1)
    times, failed = runner.run_blocks(plan)
    ((end, block, status, message),) = failed
    assert block == 1 and status != 0 and end == times[1][1]
    assert "partition [56, 72) of dim 0 is outside the tensor view's extent 64" in message
    assert times[2] == times[3] == (0, 0)                   # no block starts after a failure
    assert list(plan.lane_of) == [0, 0, -1, -1]


def test_every_failure_on_two_lanes_names_its_own_block(make_kernel, runner):
    kern = _window_kernel(make_kernel)
    x = np.zeros((64, 32), np.float32)
    rows = [56, 60, 0, 16, 52, 32]
    for _ in range(20):
        outs, per_block, _keep = _blocks(x, rows)
        plan = runner.make(kern.lib.pypto_kernel_entry, per_block, 2)
        times, failed = runner.run_blocks(plan)
        assert failed and plan.launch.failed == len(failed)
        for end, block, status, message in failed:
            assert end == times[block][1] and f"partition [{rows[block]}, {rows[block] + 16})" in message
        lanes_failed = [plan.lane_of[b] for _, b, _, _ in failed]
        assert len(set(lanes_failed)) == len(lanes_failed)    # a lane stops at its failure
        # and a lane starts at most the one block it claimed before the first failure was
        # flagged: none after that
        first_end = min(e for e, _, _, _ in failed)
        late = [plan.lane_of[b] for b, (s, _) in enumerate(times) if s > first_end]
        assert len(set(late)) == len(late)


def test_a_slow_block_holds_back_no_other(runner):
    """Lanes claim blocks as they go: while one lane is stuck in a slow block, the other runs
    every remaining block (with blocks fixed per lane, half of them waited for the slow one)."""
    import time
    entry_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int32)

    @entry_t
    def entry(args, err, errlen):
        if args[0] == 0:
            time.sleep(0.3)
        return 0

    per_block = [(ctypes.c_int64 * 1)(b) for b in range(8)]
    plan = runner.make(ctypes.cast(entry, ctypes.c_void_p).value, per_block, 2)
    times, failed = runner.run_blocks(plan)
    assert failed == [] and all(s > 0 for s, _ in times)
    slow_lane = plan.lane_of[0]
    assert [plan.lane_of[b] for b in range(1, 8)] == [1 - slow_lane] * 7
    assert all(e < times[0][1] for _, e in times[1:])


def test_launch_after_launch_loses_no_block(make_kernel, runner):
    kern = _window_kernel(make_kernel)
    x = np.random.rand(64, 32).astype(np.float32)
    rng = np.random.default_rng(0)
    for k in range(300):
        rows = [int(r) for r in rng.integers(0, 49, size=int(rng.integers(1, 7)))]
        outs, per_block, _keep = _blocks(x, rows)
        ran = runner.run_blocks(runner.make(kern.lib.pypto_kernel_entry, per_block, 1 + k % 3))
        assert ran is not None and ran[1] == []
        for out, r in zip(outs, rows):
            np.testing.assert_array_equal(out, x[r:r + 16])


def test_a_forked_child_starts_lanes_of_its_own(make_kernel, runner):
    """The parent's helper threads do not survive a fork: the child must not wait for them."""
    import os
    import time
    kern = _window_kernel(make_kernel)
    x = np.random.rand(64, 32).astype(np.float32)
    outs, per_block, _keep = _blocks(x, [0, 16, 32, 48])
    assert runner.run_blocks(runner.make(kern.lib.pypto_kernel_entry, per_block, 2))[1] == []
    pid = os.fork()
    if pid == 0:                                # the child: exit 0 only when every copy is right
        outs, per_block, _keep = _blocks(x, [48, 32, 16, 0])
        ran = runner.run_blocks(runner.make(kern.lib.pypto_kernel_entry, per_block, 2))
        ok = ran is not None and ran[1] == [] and all(
            np.array_equal(o, x[r:r + 16]) for o, r in zip(outs, [48, 32, 16, 0]))
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's launch hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_helpers_keep_off_the_callers_cpu(runner):
    """Woken on the caller's CPU, a helper took turns with it there while another CPU idled: the
    helpers' affinity is the caller's CPUs but the one it ran on, and the caller's own is left."""
    import os
    import threading
    import time
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        pytest.skip("one CPU: nowhere to keep the helpers")
    entry_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int32)
    seen = {}

    @entry_t
    def entry(args, err, errlen):
        seen[args[0]] = (threading.get_ident(), frozenset(os.sched_getaffinity(0)))
        time.sleep(0.005)
        return 0

    n = 16                                  # 80 ms of blocks: time enough for the helper to wake
    per_block = [(ctypes.c_int64 * 1)(b) for b in range(n)]
    plan = runner.make(ctypes.cast(entry, ctypes.c_void_p).value, per_block, 2)
    assert runner.run_blocks(plan)[1] == []
    helper = {seen[b][1] for b in range(n) if plan.lane_of[b] == 1}
    assert helper, "the helper lane ran no block"
    (mask,) = helper
    assert mask < mine and len(mine - mask) == 1
    assert all(seen[b][0] == threading.get_ident() for b in range(n) if plan.lane_of[b] == 0)
    assert os.sched_getaffinity(0) == mine
