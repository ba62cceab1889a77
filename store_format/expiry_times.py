"""Which time the cleanup compares with ``fileReservedTime`` for each commitlog segment.

The broker uses ``MappedFile.getLastModifiedTimestamp`` (``File.lastModified``).  A copy of a store
usually carries the copy's mtimes; then the store time of each segment's last record is the best
stand-in.  Used by :mod:`store_format.expiry`, which re-exports everything here.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .timeutil import iso_ms

__all__ = ["TIME_SOURCE_MTIME", "TIME_SOURCE_STORE", "SegmentFacts", "choose_time_source", "reference_times"]

HOUR_MS = 3_600_000

TIME_SOURCE_MTIME = "mtime"                  # the file's last-modified time, what the broker uses
TIME_SOURCE_STORE = "last_store_time"        # the store time of the segment's last record (copies lost mtimes)

# how far an mtime may trail the segment's last record, and lead the next segment's first record,
# and still be the broker's own (flushes are asynchronous)
_MTIME_BEFORE_LAST_RECORD_MS = 2_000
_MTIME_AFTER_NEXT_FIRST_MS = 10 * 60_000


@dataclasses.dataclass(frozen=True)
class SegmentFacts:
    """What the cleanup looks at for one commitlog segment."""
    name: str
    base: int
    size: int
    mtime_ms: int | None            # file modification time (None: unknown)
    first_store_ms: int | None      # store time of its first and last record (None: no record)
    last_store_ms: int | None


# ---------------------------------------------------------------------------------------------
# which time is "last modified"


def choose_time_source(segments: Sequence[SegmentFacts], source: str = "auto") -> tuple[str, str]:
    """The time source to use and why, in words.

    The broker compares ``MappedFile.getLastModifiedTimestamp`` (``File.lastModified``) with
    ``fileReservedTime``.  Copies of a store often lose mtimes; ``auto`` then switches to the store
    time of each segment's last record, and the reason names the segment that gave the copy away.
    """
    if source not in ("auto", TIME_SOURCE_MTIME, TIME_SOURCE_STORE):
        raise ValueError(f"time source must be auto, {TIME_SOURCE_MTIME} or {TIME_SOURCE_STORE}, got {source!r}")
    if source == TIME_SOURCE_MTIME:
        return source, "file modification times, as asked (--time-source mtime); the broker uses these"
    if source == TIME_SOURCE_STORE:
        return source, ("store time of each segment's last record, as asked (--time-source last_store_time); "
                        "the broker uses file modification times")
    doubt = _mtime_doubt(segments)
    if doubt is None:
        return TIME_SOURCE_MTIME, ("file modification times (auto: every segment's mtime fits its records); "
                                   "the broker uses these")
    return TIME_SOURCE_STORE, (f"store time of each segment's last record: auto switched from file modification "
                               f"times because {doubt}; if the broker's own files keep their mtimes, "
                               "--time-source mtime is what it will do")


def reference_times(segments: Sequence[SegmentFacts], source: str = "auto") -> tuple[np.ndarray, list[str]]:
    """The "last modified" time the cleanup compares with ``fileReservedTime``, per segment.

    Args:
        segments: segments in offset order.
        source: ``"mtime"``, ``"last_store_time"``, or ``"auto"`` (:func:`choose_time_source`).
    Returns:
        ``(times in ms, source of each time)``; a segment without the chosen time takes the other
        one, a segment with neither gets time 0 (expired long ago).
    """
    source = choose_time_source(segments, source)[0]
    times = np.zeros(len(segments), dtype=np.int64)
    used: list[str] = []
    for i, s in enumerate(segments):
        primary = s.mtime_ms if source == TIME_SOURCE_MTIME else s.last_store_ms
        other = s.last_store_ms if source == TIME_SOURCE_MTIME else s.mtime_ms
        if primary is not None:
            times[i] = primary
            used.append(source)
        elif other is not None:
            times[i] = other
            used.append(TIME_SOURCE_STORE if source == TIME_SOURCE_MTIME else TIME_SOURCE_MTIME)
        else:
            used.append(source)
    return times, used


def _mtime_doubt(segments: Sequence[SegmentFacts]) -> str | None:
    """Why the mtimes cannot be the broker's own, or None when they can."""
    if not segments:
        return "there is no segment"
    for i, s in enumerate(segments):
        if s.mtime_ms is None:
            return f"segment {s.name} has no mtime"
        if s.last_store_ms is not None and s.mtime_ms < s.last_store_ms - _MTIME_BEFORE_LAST_RECORD_MS:
            return (f"segment {s.name} was modified at {iso_ms(s.mtime_ms)}, before its own last record "
                    f"({iso_ms(s.last_store_ms)})")
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        if nxt is not None and nxt.first_store_ms is not None and \
                s.mtime_ms > nxt.first_store_ms + _MTIME_AFTER_NEXT_FIRST_MS:
            late = _duration(s.mtime_ms - nxt.first_store_ms)
            return (f"segment {s.name} was modified at {iso_ms(s.mtime_ms)}, {late} after the next segment's "
                    "first record (a copy's time, not the broker's)")
    return None


def _duration(ms: int) -> str:
    if ms >= 2 * 24 * HOUR_MS:
        return f"{ms / (24 * HOUR_MS):.1f} days"
    if ms >= 2 * HOUR_MS:
        return f"{ms / HOUR_MS:.1f} hours"
    return f"{ms / 60_000:.0f} minutes"
