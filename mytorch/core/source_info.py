"""Which line of the user's code is running: recorded on every jaxpr equation."""

import os
import sys

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKIP_PREFIXES = (_PKG_DIR, os.path.join(os.path.dirname(os.__file__), "contextlib.py"))


class SourceInfo:
    """A user source location: file name, line number and function name."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename, lineno, function):
        self.filename, self.lineno, self.function = filename, lineno, function

    def __str__(self):
        return f"{os.path.basename(self.filename)}:{self.lineno} ({self.function})"

    def __repr__(self):
        return f"SourceInfo({self.filename!r}, {self.lineno}, {self.function!r})"


def user_frame():
    """The innermost stack frame outside the mytorch package, as a SourceInfo (or None)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_SKIP_PREFIXES):
            return SourceInfo(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def where(prefix=" at "):
    """` at file.py:12 (fn)` for the current user line, or '' when none is found."""
    info = user_frame()
    return f"{prefix}{info}" if info is not None else ""
