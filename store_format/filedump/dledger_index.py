"""Units of one DLedger index file (``dledger-<selfId>/index/<20 digits>``, ``DLedgerMmapFileStore``'s
index file list: 32 bytes per entry index, :data:`store_format.dledger.INDEX_UNIT_DTYPE`)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import commitlog as cl
from ..dledger import ENTRY_HEADER_SIZE, ENTRY_MAGIC, INDEX_UNIT_DTYPE, INDEX_UNIT_SIZE
from ..layout import SEGMENT_NAME_RE
from .items import KIND_DLEDGER_INDEX, Item, Selection
from .reading import DEFAULT_WINDOW, partial_unit_event, read_exact, zero_unit_event

__all__ = ["iter_dledger_index"]


def iter_dledger_index(read: cl.Reader, *, name: str, size: int, path: str | None = None, start: int = 0,
                       count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
    """Units of one DLedger index file up to its first all-zero unit.

    The file name is its byte offset in the index file list, so unit ``i`` belongs to entry index
    ``name / 32 + i`` (``DLedgerMmapFileStore.getEntry`` reads ``indexFileList.getData(index * 32)``);
    a unit is ``valid`` when it holds DLedger's magic, that entry index, and a size above the 48-byte
    header (what ``DLedgerMmapFileStore.recover`` compares with the entry in the data files).
    """
    file_start = int(name) if SEGMENT_NAME_RE.match(name) else 0
    first_entry = file_start // INDEX_UNIT_SIZE
    sel = Selection(start, count)
    yield {"type": "file", "kind": KIND_DLEDGER_INDEX, "path": path or name, "name": name,
           "file_start": file_start, "first_entry_index": first_entry, "file_size": size,
           "units_capacity": size // INDEX_UNIT_SIZE}
    if file_start % INDEX_UNIT_SIZE:
        yield {"type": "event", "event": "file_name", "detail": f"the name {name} is not a multiple of "
               f"{INDEX_UNIT_SIZE}: DLedger names index files by their first unit's byte offset"}
    stats = {"units": 0, "invalid_units": 0}
    end: dict[str, Any] | None = None
    step = max(window // INDEX_UNIT_SIZE, 1) * INDEX_UNIT_SIZE
    pos = 0
    whole = size - size % INDEX_UNIT_SIZE
    while pos < whole and end is None:
        raw = read_exact(read, pos, min(step, whole - pos))
        units = np.frombuffer(raw[:len(raw) - len(raw) % INDEX_UNIT_SIZE], dtype=INDEX_UNIT_DTYPE)
        if len(units) == 0:
            break
        cols = {f: units[f].astype(np.int64) for f in INDEX_UNIT_DTYPE.names or ()}
        zero = np.logical_and.reduce([c == 0 for c in cols.values()])
        n = int(np.argmax(zero)) if zero.any() else len(units)
        first_unit = pos // INDEX_UNIT_SIZE
        slot = first_entry + first_unit + np.arange(n)
        valid = ((cols["magic"][:n] == ENTRY_MAGIC) & (cols["index"][:n] == slot)
                 & (cols["size"][:n] > ENTRY_HEADER_SIZE))
        stats["units"] += n
        stats["invalid_units"] += int((~valid).sum())
        lo, hi = sel.take(n)
        for i in range(lo, hi):
            k = first_unit + i
            yield {"type": "unit", "no": k, "position": k * INDEX_UNIT_SIZE, "slot_index": first_entry + k,
                   "magic": int(cols["magic"][i]), "pos": int(cols["pos"][i]), "size": int(cols["size"][i]),
                   "index": int(cols["index"][i]), "term": int(cols["term"][i]), "valid": bool(valid[i])}
        if sel.done:
            end = {"event": "stopped", "detail": f"--count {count} reached"}
            break
        if n < len(units):
            k = first_unit + n
            if sel.open:
                yield zero_unit_event(read, k, INDEX_UNIT_SIZE, size, window, "the log's index",
                                      slot_index=first_entry + k)
            end = {"event": "end_of_data", "unit": k, "position": k * INDEX_UNIT_SIZE}
        pos += len(units) * INDEX_UNIT_SIZE
    if end is None:
        end = {"event": "file_end", "unit": whole // INDEX_UNIT_SIZE, "position": whole}
        partial = partial_unit_event(size, INDEX_UNIT_SIZE)
        if partial is not None and sel.open:
            yield partial
    yield {"type": "summary", "kind": KIND_DLEDGER_INDEX, "name": name, **stats, "end": end, **sel.summary()}
