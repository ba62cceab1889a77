"""The command line's stderr: one line per message, the job's stage lines as ``[stage] ...``
(:func:`configure_logging`, called by :func:`pipelines.cli.main`)."""
from __future__ import annotations

import logging
import os
import sys

__all__ = ["configure_logging"]


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at each record (tests and notebooks replace it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _stage_name(record: logging.LogRecord) -> bool:
    record.stage = record.name.rsplit(".", 1)[-1]
    return True


def _not_py4j(record: logging.LogRecord) -> bool:
    """py4j logs a connection it loses (an interrupted call, the JVM gone) with a traceback, on the
    root logger; the command says what happened in one line instead."""
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def configure_logging(level: str | None = None) -> None:
    """One line per message on stderr; ``--log-level DEBUG`` shows more."""
    job_level = logging.DEBUG if level == "DEBUG" else logging.INFO
    root = logging.getLogger()
    if not root.handlers:  # other libraries' warnings, one line each
        handler = _StderrHandler()
        handler.setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)
        handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s %(message)s"))
        if level != "DEBUG":
            handler.addFilter(_not_py4j)
        root.addHandler(handler)
    for name in ("pipelines", "store_format"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            handler = _StderrHandler()
            if name == "store_format":
                handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s %(message)s"))
            else:  # the job's stage lines: [rebuild] plan ..., [tables] ...
                handler.setFormatter(logging.Formatter("[%(stage)s] %(message)s"))
                handler.addFilter(_stage_name)
            logger.addHandler(handler)
            logger.propagate = False
        logger.setLevel(job_level)
