"""Which line of the user's code is running: recorded on every jaxpr equation."""

import contextlib
import os
import sys
import threading

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


class _Override(threading.local):
    info = None


_override = _Override()


@contextlib.contextmanager
def source_override(info):
    """Attribute work done inside the block to `info` (e.g. a backward pass to the
    forward equation it differentiates), so errors and equations point at that line."""
    prev = _override.info
    _override.info = info if info is not None else prev
    try:
        yield
    finally:
        _override.info = prev


def user_frame():
    """The innermost stack frame outside the mytorch package, as a SourceInfo (or None);
    inside `source_override(info)`, `info`."""
    if _override.info is not None:
        return _override.info
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


def user_error(cls, msg, below=False):
    """`cls(msg)` with the user's source line appended (` at model.py:12 (step)`, or with
    `below` on a line of its own, `\n  at /path/model.py:12 in step`, as a primitive's
    abstract evaluation writes it after the operand listing), marked so that an enclosing
    handler does not append it again. Library code raises
    `user_error(ValueError, "reshape: ...")` for every error about the user's input."""
    if below:
        info = user_frame()
        at = f"\n  at {info.filename}:{info.lineno} in {info.function}" if info else ""
    else:
        at = where()
    err = cls(msg + at)
    err._mytorch_located = True
    err._mytorch_at = at
    return err
