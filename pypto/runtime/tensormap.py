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

Index: per root, accesses to the same box share a slot, and slots are bucketed along
one dimension of the root, so looking up a tile costs about the number of tiles near
it rather than the number of tasks so far. A slot spanning more than WIDE buckets (a
kernel given the whole tensor) is kept in one "wide" set instead of every bucket, and a
lookup over more buckets than there are slots scans the slots instead.
"""
from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

MAX_BUCKETS = 1024
WIDE = 16           # a slot spanning more buckets than this is kept in `wide`


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
        return boxes_overlap(a.box, b.box)
    return a.lo < b.hi and b.lo < a.hi


def boxes_overlap(a: tuple, b: tuple) -> bool:
    for (x0, x1), (y0, y1) in zip(a, b):
        if x1 <= y0 or y1 <= x0:
            return False
    return True


def covers(a: Region, b: Region) -> bool:
    """a contains every element of b (exact, same root only)."""
    if a.group != b.group or a.root != b.root:
        return False
    return box_covers(a.box, b.box)


def box_covers(a: tuple, b: tuple) -> bool:
    for (x0, x1), (y0, y1) in zip(a, b):
        if y0 < x0 or x1 < y1:
            return False
    return True


class Access(NamedTuple):
    region: Region
    reads: bool
    writes: bool


class _Slot:
    """All live accesses to one box of one root."""
    __slots__ = ("region", "writers", "readers", "b0", "b1")

    def __init__(self, region: Region, b0: int, b1: int):
        self.region = region
        self.writers: list[int] = []
        self.readers: list[int] = []
        self.b0, self.b1 = b0, b1


class _RootIndex:
    def __init__(self, box: tuple):
        # bucket along the first dimension longer than 1, judged by the first box seen
        # (a root's boxes all lie within it; we only need a span for scaling)
        self.dim = 0
        self.extent = 1
        self.slots: dict[tuple, _Slot] = {}
        self.buckets: dict[int, set] = {}
        self.wide: set = set()
        self.n_buckets = 1
        self._box0 = box

    def configure(self, root_shape: tuple | None) -> None:
        shape = root_shape or tuple(hi for _, hi in self._box0)
        self.dim = next((d for d, n in enumerate(shape) if n > 1), 0)
        self.extent = max(1, shape[self.dim] if shape else 1)
        self.n_buckets = min(self.extent, MAX_BUCKETS)

    def span(self, box: tuple) -> tuple[int, int]:
        if not box:
            return 0, 0
        lo, hi = box[self.dim]
        n = self.n_buckets
        lo = min(max(lo, 0), self.extent - 1)
        hi = min(max(hi - 1, lo), self.extent - 1)
        return lo * n // self.extent, hi * n // self.extent

    def candidates(self, box: tuple):
        b0, b1 = self.span(box)
        if b1 - b0 + 1 > len(self.slots):
            return list(self.slots.values())
        buckets = self.buckets
        if b0 == b1 and not self.wide:
            return list(buckets.get(b0, ()))
        seen: set = set(self.wide)
        for b in range(b0, b1 + 1):
            found = buckets.get(b)
            if found:
                seen.update(found)
        return list(seen)

    def slot(self, region: Region) -> _Slot:
        s = self.slots.get(region.box)
        if s is None:
            b0, b1 = self.span(region.box)
            s = self.slots[region.box] = _Slot(region, b0, b1)
            if b1 - b0 + 1 > WIDE:
                self.wide.add(s)
                return s
            buckets = self.buckets
            for b in range(b0, b1 + 1):
                found = buckets.get(b)
                if found is None:
                    found = buckets[b] = set()
                found.add(s)
        return s

    def drop(self, s: _Slot) -> None:
        if self.slots.get(s.region.box) is s:
            del self.slots[s.region.box]
            if s.b1 - s.b0 + 1 > WIDE:
                self.wide.discard(s)
                return
            for b in range(s.b0, s.b1 + 1):
                found = self.buckets.get(b)
                if found is not None:
                    found.discard(s)
                    if not found:
                        del self.buckets[b]


class TensorMap:
    def __init__(self, root_shapes: dict | None = None) -> None:
        self._groups: dict[int, dict[int, _RootIndex]] = {}
        self._root_shapes = root_shapes if root_shapes is not None else {}
        self._count = 0

    def set_root_shape(self, root: int, shape: tuple) -> None:
        self._root_shapes[root] = tuple(shape)

    def _index(self, region: Region, create: bool):
        roots = self._groups.get(region.group)
        if roots is None:
            if not create:
                return None, None
            roots = self._groups[region.group] = {}
        idx = roots.get(region.root)
        if idx is None and create:
            idx = roots[region.root] = _RootIndex(region.box)
            idx.configure(self._root_shapes.get(region.root))
        return roots, idx

    def add(self, task: int, accesses: Iterable[Access],
            alive: Callable[[int], bool] | None = None) -> list[int]:
        """Record `task`'s accesses and return the earlier tasks it depends on (sorted).
        `alive(t)` says whether task t may still constrain anything; accesses of tasks
        that are no longer alive are dropped as they are met."""
        accesses = [a for a in accesses if a.reads or a.writes]
        deps: set[int] = set()
        for acc in accesses:
            roots, _ = self._index(acc.region, create=False)
            if not roots:
                continue
            for root, idx in list(roots.items()):
                same = root == acc.region.root
                slots = idx.candidates(acc.region.box) if same else list(idx.slots.values())
                for s in slots:
                    if same:
                        if not boxes_overlap(acc.region.box, s.region.box):
                            continue
                    elif not (acc.region.lo < s.region.hi and s.region.lo < acc.region.hi):
                        continue
                    if alive is not None:
                        s.writers = [t for t in s.writers if t == task or alive(t)]
                        s.readers = [t for t in s.readers if t == task or alive(t)]
                        if not s.writers and not s.readers:
                            idx.drop(s)
                            continue
                    deps.update(s.writers)
                    if acc.writes:
                        deps.update(s.readers)
        deps.discard(task)
        for acc in accesses:
            roots, idx = self._index(acc.region, create=True)
            if acc.writes:
                for s in idx.candidates(acc.region.box):
                    if s.region.box != acc.region.box and box_covers(acc.region.box, s.region.box):
                        s.writers = [t for t in s.writers if t == task]
                        s.readers = [t for t in s.readers if t == task]
                        if not s.writers and not s.readers:
                            idx.drop(s)
            s = idx.slot(acc.region)
            if acc.writes:
                s.readers = [t for t in s.readers if t == task]
                s.writers = [t for t in s.writers if t == task]
                if task not in s.writers:
                    s.writers.append(task)
            if acc.reads and task not in s.readers:
                s.readers.append(task)
        return sorted(deps)

    def writers(self, region: Region, alive: Callable[[int], bool] | None = None) -> list[int]:
        """The live tasks recorded as writing any part of `region` (sorted), for a read
        that is not a task (the orchestration reading an element): nothing is recorded."""
        found: set[int] = set()
        roots, _ = self._index(region, create=False)
        for root, idx in (roots or {}).items():
            same = root == region.root
            for s in (idx.candidates(region.box) if same else list(idx.slots.values())):
                hit = boxes_overlap(region.box, s.region.box) if same else \
                    region.lo < s.region.hi and s.region.lo < region.hi
                if hit:
                    found.update(t for t in s.writers if alive is None or alive(t))
        return sorted(found)

    def __len__(self) -> int:
        """Number of live (task, box) accesses held."""
        return sum(len(s.writers) + len(s.readers)
                   for roots in self._groups.values() for idx in roots.values()
                   for s in idx.slots.values())
