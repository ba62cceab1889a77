"""Units of one consume queue file (``ConsumeQueue``: ``commitlogOffset · size · tagsCode``, 20 bytes
each)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import commitlog as cl
from ..config import BrokerConfig
from ..layout import (
    CQ_BLANK_SIZE,
    CQ_UNIT_DTYPE,
    CQ_UNIT_SIZE,
    SEGMENT_NAME_RE,
)
from .items import KIND_CONSUME_QUEUE, Item, Selection
from .reading import DEFAULT_WINDOW, partial_unit_event, read_exact, zero_unit_event

__all__ = ["iter_consume_queue", "topic_and_queue"]


def topic_and_queue(path: str) -> tuple[str | None, int | None]:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if len(parts) >= 4 and parts[-4] == "consumequeue":
        try:
            return parts[-3], int(parts[-2])
        except ValueError:
            return parts[-3], None
    return None, None



def iter_consume_queue(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
                       topic: str | None = None, queue_id: int | None = None, start: int = 0,
                       count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
    """Units of one consume queue file up to its first all-zero unit.

    A unit ``(0, 0x7FFFFFFF, 0)`` is a blank written by ``ConsumeQueue.fillPreBlank`` before a queue's
    first real unit (``blank``); a unit with ``commitlogOffset < 0`` or ``size <= 0`` is where
    ``ConsumeQueue.recover`` stops reading (``valid`` false).  The file name is the byte offset of the
    file in the queue's logical space, so unit ``i`` has queue offset ``name / 20 + i``.
    """
    file_start = int(name) if SEGMENT_NAME_RE.match(name) else 0
    first_offset = file_start // CQ_UNIT_SIZE
    sel = Selection(start, count)
    yield {"type": "file", "kind": KIND_CONSUME_QUEUE, "path": path or name, "name": name, "topic": topic,
           "queue_id": queue_id, "file_start": file_start, "first_queue_offset": first_offset, "file_size": size,
           "units_capacity": size // CQ_UNIT_SIZE, "size_ok": size == config.cq_file_size}
    if file_start % CQ_UNIT_SIZE:
        yield {"type": "event", "event": "file_name", "detail": f"the name {name} is not a multiple of "
               f"{CQ_UNIT_SIZE}: a broker names consume queue files by their first unit's byte offset"}
    stats = {"units": 0, "blank_units": 0, "invalid_units": 0}
    end: dict[str, Any] | None = None
    step = max(window // CQ_UNIT_SIZE, 1) * CQ_UNIT_SIZE
    pos = 0
    whole = size - size % CQ_UNIT_SIZE
    while pos < whole and end is None:
        raw = read_exact(read, pos, min(step, whole - pos))
        units = np.frombuffer(raw[:len(raw) - len(raw) % CQ_UNIT_SIZE], dtype=CQ_UNIT_DTYPE)
        if len(units) == 0:
            break
        off = units["commitlogOffset"].astype(np.int64)
        usize = units["size"].astype(np.int64)
        tags = units["tagsCode"].astype(np.int64)
        zero = (off == 0) & (usize == 0) & (tags == 0)
        n = int(np.argmax(zero)) if zero.any() else len(units)
        first_index = pos // CQ_UNIT_SIZE
        blank = (off[:n] == 0) & (usize[:n] == CQ_BLANK_SIZE) & (tags[:n] == 0)
        valid = (off[:n] >= 0) & (usize[:n] > 0)
        stats["units"] += n
        stats["blank_units"] += int(blank.sum())
        stats["invalid_units"] += int((~valid).sum())
        lo, hi = sel.take(n)
        for i in range(lo, hi):
            k = first_index + i
            yield {"type": "unit", "no": k, "index": k, "position": k * CQ_UNIT_SIZE, "queue_offset": first_offset + k,
                   "commitlog_offset": int(off[i]), "size": int(usize[i]), "tags_code": int(tags[i]),
                   "blank": bool(blank[i]), "valid": bool(valid[i])}
        if sel.done:
            end = {"event": "stopped", "detail": f"--count {count} reached"}
            break
        if n < len(units):
            k = first_index + n
            if sel.open:
                yield zero_unit_event(read, k, CQ_UNIT_SIZE, size, window, "the queue's data",
                                      queue_offset=first_offset + k)
            end = {"event": "end_of_data", "unit": k, "position": k * CQ_UNIT_SIZE}
        pos += len(units) * CQ_UNIT_SIZE
    if end is None:
        end = {"event": "file_end", "unit": whole // CQ_UNIT_SIZE, "position": whole}
        partial = partial_unit_event(size, CQ_UNIT_SIZE)
        if partial is not None and sel.open:
            yield partial
    yield {"type": "summary", "kind": KIND_CONSUME_QUEUE, "name": name, **stats, "end": end, **sel.summary()}
