"""The entries of `pl.at(..., optimizations=[...])`: hints on how a region's kernel runs,
read by the parser (evaluated like any compile-time value)."""
from __future__ import annotations

from dataclasses import dataclass

from pypto.ir.nodes import SplitMode


def _slot_num(n, api: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"{api}: slot_num is the positive depth of the cross-core pipe, got {n!r}")
    return n


@dataclass(frozen=True)
class Split:
    """Halve a mixed kernel's vector work over the two AIVs of its core group."""
    mode: SplitMode
    slot_num: int | None = None


@dataclass(frozen=True)
class CrossCoreSlot:
    """The depth (slots per direction) of a mixed kernel's cross-core pipe."""
    slot_num: int


def split(mode: SplitMode, *, slot_num: int | None = None) -> Split:
    """`pl.split(pl.SplitMode.UP_DOWN)`: each AIV takes half of every vector tile's rows
    (LEFT_RIGHT: its columns); the cube half sends each AIV its half and gathers theirs."""
    if not isinstance(mode, SplitMode):
        raise ValueError(f"pl.split takes a pl.SplitMode, got {mode!r}")
    return Split(mode, None if slot_num is None else _slot_num(slot_num, "pl.split"))


def cross_core_slot(*, slot_num: int) -> CrossCoreSlot:
    """`pl.cross_core_slot(slot_num=4)`: the pipe between a mixed kernel's halves holds
    this many tiles per direction (default 2)."""
    return CrossCoreSlot(_slot_num(slot_num, "pl.cross_core_slot"))
