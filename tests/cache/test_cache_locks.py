"""KeyLocks: one locked byte per key in a shared file (OFD locks), or one flock file
per key where the file system has no OFD locks; both modes behave alike."""
import os
import threading
import time

import pytest

from pypto_cache.locks import RANGE_FILE, KeyLocks

KEY_A, KEY_B = "ab" * 16, "cd" * 16


@pytest.fixture(params=["range", "files"])
def keylocks(request, tmp_path):
    kl = KeyLocks(tmp_path / "locks")
    if request.param == "files":
        kl._ofd = False
    elif not kl._ofd:
        pytest.skip("no OFD locks on this platform")
    return kl


def test_a_held_key_is_busy_for_another_thread(keylocks):
    h = keylocks.acquire(KEY_A)
    seen = []
    t = threading.Thread(target=lambda: seen.append(keylocks.busy(KEY_A)))
    t.start()
    t.join()
    assert seen == [True]
    assert not keylocks.busy(KEY_B)          # another key is free
    keylocks.release(h)
    assert not keylocks.busy(KEY_A)


def test_a_waiter_gets_the_key_when_it_is_released(keylocks):
    h = keylocks.acquire(KEY_A)
    order = []

    def waiter():
        with keylocks.hold(KEY_A):
            order.append("waiter")

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    order.append("holder")
    keylocks.release(h)
    t.join(timeout=10)
    assert order == ["holder", "waiter"]


def test_the_range_mode_makes_one_file_for_every_key(tmp_path):
    kl = KeyLocks(tmp_path / "locks")
    if not kl._ofd:
        pytest.skip("no OFD locks on this platform")
    for k in (KEY_A, KEY_B):
        with kl.hold(k):
            pass
    assert os.listdir(tmp_path / "locks") == [RANGE_FILE]


def test_the_file_mode_drops_a_held_keys_file(tmp_path):
    kl = KeyLocks(tmp_path / "locks")
    kl._ofd = False
    h = kl.acquire(KEY_A)
    assert (tmp_path / "locks" / KEY_A).exists()
    kl.drop(KEY_A)
    kl.release(h)
    assert not (tmp_path / "locks" / KEY_A).exists()
