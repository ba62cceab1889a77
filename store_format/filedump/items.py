"""What every dump yields: items (plain dicts), the kinds of store file, and the selection of items
by their number (``start``/``count``).
"""
from __future__ import annotations

from typing import Any

__all__ = ["Item", "KIND_COMMITLOG", "KIND_DLEDGER", "KIND_DLEDGER_INDEX", "KIND_CONSUME_QUEUE", "KIND_INDEX",
           "KIND_CHECKPOINT", "KIND_CONFIG", "KINDS", "Selection"]


Item = dict[str, Any]

KIND_COMMITLOG = "commitlog"
KIND_DLEDGER = "dledger"              # a DLedger data file: dledger-<selfId>/data/<20 digits>
KIND_DLEDGER_INDEX = "dledger_index"  # a DLedger index file: dledger-<selfId>/index/<20 digits>
KIND_CONSUME_QUEUE = "consume_queue"
KIND_INDEX = "index"
KIND_CHECKPOINT = "checkpoint"
KIND_CONFIG = "config"
KINDS = (KIND_COMMITLOG, KIND_DLEDGER, KIND_DLEDGER_INDEX, KIND_CONSUME_QUEUE, KIND_INDEX, KIND_CHECKPOINT,
         KIND_CONFIG)


class Selection:
    """Items ``start .. start + count - 1`` of a stream numbered from 0."""

    def __init__(self, start: int, count: int | None) -> None:
        if start < 0:
            raise ValueError(f"start must be >= 0, got {start}")
        if count is not None and count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self.start = start
        self.count = count
        self.seen = 0      # items passed so far
        self.emitted = 0   # items selected so far

    @property
    def done(self) -> bool:
        return self.count is not None and self.emitted >= self.count

    @property
    def open(self) -> bool:
        """Events are shown while the selection is open: from item ``start`` on, until it is full."""
        return self.seen >= self.start and not self.done

    def take(self, n: int) -> tuple[int, int]:
        """Of the next ``n`` items, the selected ones as a range ``[lo, hi)`` of batch indices."""
        lo = min(max(self.start - self.seen, 0), n)
        hi = n if self.count is None else min(n, lo + max(self.count - self.emitted, 0))
        hi = max(hi, lo)
        self.seen += n
        self.emitted += hi - lo
        return lo, hi

    def take_one(self) -> bool:
        lo, hi = self.take(1)
        return hi > lo

    def summary(self) -> dict[str, Any]:
        return {"from": self.start, "count": self.count, "items_shown": self.emitted}
