from pypto.runtime.tensormap import Access, Region, TensorMap, covers, overlaps


def box_region(root, box, group=0, esize=4, row=32):
    # byte extent for a row-major root of `row` columns
    (r0, r1), (c0, c1) = box
    lo = (r0 * row + c0) * esize
    hi = ((r1 - 1) * row + c1) * esize
    return Region(group, root, tuple(box), lo, hi)


def test_same_root_is_exact():
    left = box_region(0, ((0, 64), (0, 16)))
    right = box_region(0, ((0, 64), (16, 32)))
    assert left.lo < right.hi and right.lo < left.hi   # byte extents interleave
    assert not overlaps(left, right)                     # but the tiles are disjoint
    assert overlaps(left, box_region(0, ((10, 11), (15, 17))))


def test_groups_never_overlap_and_roots_compare_bytes():
    a = Region(0, 0, ((0, 4),), 0, 16)
    assert not overlaps(a, Region(1, 1, ((0, 4),), 0, 16))
    assert overlaps(a, Region(0, 1, ((0, 1),), 12, 16))       # aliased root, bytes overlap
    assert not overlaps(a, Region(0, 1, ((0, 1),), 16, 20))


def test_covers():
    whole = box_region(0, ((0, 8), (0, 8)))
    part = box_region(0, ((2, 4), (0, 8)))
    assert covers(whole, part) and not covers(part, whole)
    assert not covers(whole, Region(0, 1, ((0, 1),), 0, 4))


def test_raw_war_waw():
    tm = TensorMap()
    x = box_region(0, ((0, 8), (0, 8)), group=0)
    y = box_region(1, ((0, 8), (0, 8)), group=1)
    assert tm.add(0, [Access(x, True, False), Access(y, False, True)]) == []   # y = f(x)
    assert tm.add(1, [Access(y, True, False)]) == [0]                           # RAW
    assert tm.add(2, [Access(x, False, True)]) == [0]                           # WAR
    assert tm.add(3, [Access(y, False, True)]) == [0, 1]                        # WAW + WAR
    assert tm.add(4, [Access(x, True, False)]) == [2]                           # RAW on the newest writer


def test_reads_do_not_depend_on_reads():
    tm = TensorMap()
    x = box_region(0, ((0, 8), (0, 8)))
    assert tm.add(0, [Access(x, True, False)]) == []
    assert tm.add(1, [Access(x, True, False)]) == []


def test_covered_entries_are_forgotten_and_dead_tasks_dropped():
    tm = TensorMap()
    x = box_region(0, ((0, 8), (0, 8)))
    tm.add(0, [Access(x, False, True)])
    tm.add(1, [Access(x, False, True)])
    assert len(tm) == 1
    done = {1}
    assert tm.add(2, [Access(x, True, False)], alive=lambda t: t not in done) == []


def test_whole_tensor_accesses_among_tiles():
    """A kernel given the whole tensor (a wide slot) still meets every tile access."""
    tm = TensorMap({0: (1024, 64)})
    whole = box_region(0, ((0, 1024), (0, 64)), row=64)
    tile = [box_region(0, ((r, r + 64), (0, 64)), row=64) for r in range(0, 1024, 64)]
    assert tm.add(0, [Access(whole, False, True)]) == []
    assert tm.add(1, [Access(tile[0], True, False)]) == [0]
    assert tm.add(2, [Access(tile[1], False, True)]) == [0]
    assert tm.add(3, [Access(tile[5], True, False)]) == [0]
    assert tm.add(4, [Access(whole, True, False)]) == [0, 2]
    assert tm.add(5, [Access(tile[1], True, False)]) == [0, 2]   # 0 is redundant, not wrong
    assert tm.add(6, [Access(whole, False, True)]) == [0, 1, 2, 3, 4, 5]
    assert len(tm) == 1
    assert tm.add(7, [Access(tile[15], True, False)]) == [6]


def test_writers_of_an_element_without_recording_the_read():
    tm = TensorMap()
    top = box_region(0, ((0, 4), (0, 32)))
    bottom = box_region(0, ((4, 8), (0, 32)))
    tm.add(0, [Access(top, False, True)])
    tm.add(1, [Access(bottom, False, True)])
    tm.add(2, [Access(top, True, False)])            # a reader is not a writer
    elem = box_region(0, ((5, 6), (3, 4)))
    assert tm.writers(elem) == [1]
    assert tm.writers(elem, alive=lambda t: t != 1) == []
    assert tm.writers(box_region(0, ((3, 5), (0, 1)))) == [0, 1]
    n = len(tm)
    tm.writers(elem)
    assert len(tm) == n                               # nothing recorded
    assert tm.add(3, [Access(elem, False, True)]) == [1]   # WAR/WAW as before: no new edge to the read
