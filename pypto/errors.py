"""User-facing error types. Every one names the user's file:line:col and says what to do."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class PyptoError(Exception):
    """Base of every error a user can cause. `span` points into the user's source."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        text = f"{span}: error: {message}" if span else message
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


class ParserError(PyptoError):
    """The DSL source uses syntax or a construct the language does not have."""


class UnknownOpError(ParserError):
    """A `pl.<name>` call that is not an operator of the language."""


class TypeCheckError(PyptoError):
    """Wrong arity, shapes or dtypes for an operator."""


class NotBuiltError(TypeCheckError):
    """A keyword or form the reference's language has and this pypto does not build yet:
    refused with what to write instead, never accepted and ignored."""


class MisplacedTensorOpError(PyptoError):
    """A tensor/tile op written in an Orchestration body outside `pl.at`."""


class MemoryOverflowError(PyptoError):
    """Tiles of a kernel do not fit an on-chip memory space."""


class VerificationError(PyptoError):
    """An IR invariant broke after a pass (a compiler bug, reported with the pass name)."""


class CodegenError(PyptoError):
    """The program cannot be expressed in PTO for the chosen backend."""


class LoweredProgramError(PyptoError, ValueError):
    """A program that already went through the pass pipeline (`kernel.lower(...)`, a late
    pass dump) was handed to `ir.compile`, which runs the pipeline from the start."""
