"""`from pypto.backend.pto_backend import PartialCodegenError`: the reference's name for a
program the compiler refuses (it breaks a rule of the language, its types or code
generation). Here that is ProgramRejected, raised by the parser, the type checker, the
passes' verifier and codegen alike, always at the user's line."""
from pypto.errors import ProgramRejected as PartialCodegenError

__all__ = ["PartialCodegenError"]
