"""The one exception type ptoas raises, with both positions an error can have."""
from __future__ import annotations

from pypto.errors import CodegenError


class PtoasError(CodegenError):
    """A parse or verification error.

    `line`/`col` point into the .pto text; `loc` is the op's source location
    ("file.py:L:C") when the op carried a loc(...). The message starts with the source
    location when there is one (that is where the user can fix it), else the .pto one.
    """

    def __init__(self, message: str, *, line: int = 0, col: int = 0, loc: str | None = None,
                 source_name: str = "<pto>"):
        self.message = message
        self.line = line
        self.col = col
        self.loc = loc
        self.source_name = source_name
        pto_pos = f"{source_name}:{line}:{col}"
        if loc:
            text = f"{loc}: error: {message} [{pto_pos}]"
        else:
            text = f"{pto_pos}: error: {message}"
        # a user-facing codegen error (so ir.compile reports it at the call), with
        # ptoas's own two-position message
        Exception.__init__(self, text)
        self.span = None
        self.hint = None


def op_error(op, message: str, source_name: str = "<pto>") -> PtoasError:
    """An error located at `op` (an ir.Op or ir.Func: anything with line/col[/loc])."""
    loc = getattr(op, "loc", None)
    return PtoasError(message, line=op.line, col=op.col, loc=str(loc) if loc else None,
                      source_name=source_name)
