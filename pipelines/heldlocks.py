"""File descriptors of the locks this process holds (run owner records, output locks).

A forked child (the local engine's worker pool, Spark's Python daemon) inherits them; if it kept
them open, the kernel would keep the locks alive after this process died and a later run would take
a dead run for a live one.  So every child closes its copies right after the fork.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["HELD_LOCKS"]

HELD_LOCKS: set[int] = set()   # add a lock's fd once it is held, discard it when released


def _close_inherited_locks() -> None:
    for fd in list(HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)
