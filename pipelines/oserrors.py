"""One line for an operating system error, wherever it happened: in the driver (an ``OSError``), in
a Spark executor (its Python traceback, or the JVM's exception, wrapped as text in a
``Py4JJavaError`` or ``PythonException``), or inside pyarrow (``[errno 28] ...`` in its message).

:func:`os_error_line` finds the error number and the path and says ``<path>: <strerror>``; the CLI
prints it as ``error: ...`` with exit 2 when the user can fix it (space, permissions, a read-only
file system) and 1 otherwise (an I/O error: the run failed).
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
from collections.abc import Iterator

__all__ = ["OsErrorLine", "os_error_line", "failure_line", "missing_module", "naming", "USER_FIXABLE"]

USER_FIXABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT,
                          errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENOTEMPTY, errno.EMFILE, errno.ENFILE})
# the errors looked for in wrapped text, by their messages (C library and JDK say the same words)
_KNOWN = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.ENOENT)
_STRERROR = {code: os.strerror(code) for code in _KNOWN}
_ERRNO_RE = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)
_PATH_RE = re.compile(r"""(?<![\w.])(/[^\s'"():,\]]+)""")   # not the "/output" of "Input/output"


@dataclasses.dataclass(frozen=True)
class OsErrorLine:
    errno: int
    path: str | None
    strerror: str

    @property
    def line(self) -> str:
        return f"{self.path}: {self.strerror}" if self.path else self.strerror

    @property
    def exit_code(self) -> int:
        return 2 if self.errno in USER_FIXABLE else 1


def os_error_line(exc: BaseException) -> OsErrorLine | None:
    """The operating system error behind ``exc``: the exception itself or one it came from
    (``__cause__``/``__context__``), else the first one named in its text.  None if there is none."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno:
            path = e.filename if e.filename is not None else e.filename2
            found = OsErrorLine(e.errno, os.fsdecode(path) if path is not None else None,
                                e.strerror or os.strerror(e.errno))
            if found.path is None:   # pyarrow: the path is in the message only
                from_text = _from_text(str(e))
                if from_text is not None and from_text.errno == found.errno:
                    return from_text
            return found
        e = e.__cause__ or e.__context__
    text = str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text = f"{text}\n{java}"
        except Exception:   # the JVM is gone
            pass
    return _from_text(text)


def _from_text(text: str) -> OsErrorLine | None:
    """A line naming a known error (by ``[Errno N]`` or by its message), preferring the first that
    also names an absolute path (a file, not a source file of the traceback)."""
    first: OsErrorLine | None = None
    for line in text.splitlines():
        m = _ERRNO_RE.search(line)
        if m:
            code: int | None = int(m.group(1))
        else:
            low = line.lower()
            code = next((c for c, msg in _STRERROR.items() if msg.lower() in low), None)
        if code is None:
            continue
        paths = [p for p in _PATH_RE.findall(line) if not p.endswith((".py", ".pyx", ".pxi", ".java", ".scala"))]
        if paths:
            return OsErrorLine(code, paths[-1], os.strerror(code))
        first = first or OsErrorLine(code, None, os.strerror(code))
    return first


@contextlib.contextmanager
def naming(path: str | None) -> Iterator[None]:
    """Give an ``OSError`` raised without a file name (``os.write``, pyarrow's streams) the name of
    the file being written, so that the one line about it can say which (also from an executor,
    whose traceback reaches the driver only as text)."""
    try:
        yield
    except OSError as e:
        if e.filename is None and e.errno and path is not None:
            raise OSError(e.errno, os.strerror(e.errno), path) from e
        raise


_MISSING_MODULE_RE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def missing_module(exc: BaseException) -> str | None:
    """The module a Spark task's Python could not import (``ModuleNotFoundError`` in the executor's
    traceback, which reaches the driver only as text), else None: the executors' environment lacks a
    dependency the driver has, which the user fixes where the executors run."""
    text = str(getattr(exc, "java_exception", None) or exc)
    found = _MISSING_MODULE_RE.findall(text)
    return found[-1] if found else None


_PY_ERROR_RE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)): (.*)$")


def failure_line(exc: BaseException) -> str:
    """One line for a failure that is not an operating system error: for a Spark job whose Python
    task failed, the task's own exception (the last ``SomeError: message`` line of the traceback
    Spark wraps), not the wrapper's first line (which ends in ``Traceback (most recent call
    last):``); else the exception's first line."""
    text = str(getattr(exc, "java_exception", None) or exc)
    lines = text.strip().splitlines()
    python_errors = [m for m in (_PY_ERROR_RE.match(ln.strip()) for ln in lines) if m
                     and not m.group(1).startswith(("org.apache.spark", "java.", "py4j."))]
    if python_errors:
        return f"{python_errors[-1].group(1)}: {python_errors[-1].group(2)}"
    first = lines[0] if lines else ""
    if getattr(exc, "java_exception", None) is None:
        return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return first or type(exc).__name__
