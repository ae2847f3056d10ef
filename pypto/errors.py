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


class ProgramRejected(PyptoError):
    """The program breaks a rule of the language, of its types or of code generation: the
    compiler refuses it (no artifact, no cache entry). The reference's name for it is
    pypto.backend.pto_backend.PartialCodegenError."""


class ParserError(ProgramRejected):
    """The DSL source uses syntax or a construct the language does not have."""


class TextHoldsNoProgram(ParserError, ValueError):
    """pl.parse text that defines no program or function, or several (a ValueError too, as
    the reference raises)."""


class DSLSyntaxError(ParserError, SyntaxError):
    """pl.parse text that is not Python (a SyntaxError too)."""


class UnknownOpError(ParserError):
    """A `pl.<name>` call that is not an operator of the language."""


class TypeCheckError(ProgramRejected):
    """Wrong arity, shapes or dtypes for an operator."""


class NotBuiltError(TypeCheckError):
    """A keyword or form the reference's language has and this pypto does not build yet:
    refused with what to write instead, never accepted and ignored."""


class MisplacedTensorOpError(ProgramRejected):
    """A tensor/tile op written in an Orchestration body outside `pl.at`."""


class MemoryOverflowError(ProgramRejected):
    """Tiles of a kernel do not fit an on-chip memory space."""


class VerificationError(ProgramRejected):
    """An IR invariant broke after a pass (a compiler bug, reported with the pass name)."""


class CodegenError(ProgramRejected):
    """The program cannot be expressed in PTO for the chosen backend."""


class LoweredProgramError(PyptoError, ValueError):
    """A program that already went through the pass pipeline (`kernel.lower(...)`, a late
    pass dump) was handed to `ir.compile`, which runs the pipeline from the start."""
