"""Dependencies from overlapping tensor ranges (the TensorMap of the reference runtime).

A region is the part of a buffer one task argument touches. Regions of the same root
tensor (an external parameter or an intermediate, with the same strides) are compared
exactly, dimension by dimension, so disjoint tiles of one matrix never depend on each
other; regions of different roots that share memory (aliased parameters) are compared
by their byte extents, conservatively.

For a new task, reading a region depends on every earlier live writer overlapping it
(RAW); writing one depends on every earlier live reader and writer overlapping it
(WAR, WAW). An earlier access fully covered by a new write is forgotten: anything that
later overlaps it also overlaps the write, which is ordered after it.
"""
from __future__ import annotations

from typing import Callable, Iterable, NamedTuple


class Region(NamedTuple):
    group: int                      # memory group: regions of different groups never overlap
    root: int                       # root tensor (layout key) for exact comparison
    box: tuple                      # ((lo, hi), ...) per dim, in root element coordinates
    lo: int                         # byte extent relative to the group base: [lo, hi)
    hi: int


def overlaps(a: Region, b: Region) -> bool:
    if a.group != b.group:
        return False
    if a.root == b.root:
        for (x0, x1), (y0, y1) in zip(a.box, b.box):
            if x1 <= y0 or y1 <= x0:
                return False
        return True
    return a.lo < b.hi and b.lo < a.hi


def covers(a: Region, b: Region) -> bool:
    """a contains every element of b (exact, same root only)."""
    if a.group != b.group or a.root != b.root:
        return False
    for (x0, x1), (y0, y1) in zip(a.box, b.box):
        if y0 < x0 or x1 < y1:
            return False
    return True


class Access(NamedTuple):
    region: Region
    reads: bool
    writes: bool


class TensorMap:
    def __init__(self) -> None:
        # group -> list of [task, region, writes]
        self._entries: dict[int, list] = {}

    def add(self, task: int, accesses: Iterable[Access],
            alive: Callable[[int], bool] | None = None) -> list[int]:
        """Record `task`'s accesses and return the earlier tasks it depends on (sorted).
        `alive(t)` says whether task t may still constrain anything; entries of tasks
        that are no longer alive are dropped."""
        accesses = [a for a in accesses if a.reads or a.writes]
        deps: set[int] = set()
        for acc in accesses:
            entries = self._entries.get(acc.region.group)
            if not entries:
                continue
            keep = []
            for entry in entries:
                other, region, writes = entry
                if alive is not None and other != task and not alive(other):
                    continue
                keep.append(entry)
                if other != task and (writes or acc.writes) and overlaps(acc.region, region):
                    deps.add(other)
            entries[:] = keep
        for acc in accesses:
            entries = self._entries.setdefault(acc.region.group, [])
            if acc.writes:
                entries[:] = [e for e in entries if e[0] == task or not covers(acc.region, e[1])]
            entries.append([task, acc.region, acc.writes])
        return sorted(deps)

    def __len__(self) -> int:
        return sum(len(v) for v in self._entries.values())
