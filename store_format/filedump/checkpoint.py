"""The ``checkpoint`` file (``StoreCheckpoint``) and the minimum timestamps abnormal recovery reads
from it."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ..layout import (
    CHECKPOINT_SIZE,
)
from ..timeutil import iso_ms
from .items import KIND_CHECKPOINT, Item

__all__ = ["Checkpoint", "parse_checkpoint", "iter_checkpoint"]


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """The ``checkpoint`` file [StoreCheckpoint]: longs at 0 physicMsgTimestamp, 8 logicsMsgTimestamp,
    16 indexMsgTimestamp; 5.x adds 24 masterFlushedOffset and 32 confirmPhyOffset, 5.5.1 40
    logicsPhysicalOffset.  A missing file reads as zeros (``StoreCheckpoint`` maps a fresh zero page)."""
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0
    logics_physical_offset: int = 0

    @property
    def min_timestamp(self) -> int:
        """``StoreCheckpoint.getMinTimestamp``: min(physic, logics) - 3 s, at least 0."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        """``StoreCheckpoint.getMinTimestampIndex``: min(getMinTimestamp(), indexMsgTimestamp)."""
        return min(self.min_timestamp, self.index_msg_timestamp)


_CHECKPOINT_FIELDS = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset",
                      "confirm_phy_offset", "logics_physical_offset")


def parse_checkpoint(data: bytes | None) -> Checkpoint:
    """A :class:`Checkpoint` from the file's bytes (None or short: the missing longs are 0)."""
    raw = (data or b"")[:8 * len(_CHECKPOINT_FIELDS)].ljust(8 * len(_CHECKPOINT_FIELDS), b"\0")
    values = [int.from_bytes(raw[8 * i:8 * i + 8], "big", signed=True) for i in range(len(_CHECKPOINT_FIELDS))]
    return Checkpoint(*values)


def iter_checkpoint(data: bytes, *, size: int, path: str = "checkpoint") -> Iterator[Item]:
    """The checkpoint's fields, with the minimum timestamps abnormal recovery compares with."""
    cp = parse_checkpoint(data)
    yield {"type": "file", "kind": KIND_CHECKPOINT, "path": path, "name": "checkpoint", "file_size": size,
           "size_ok": size == CHECKPOINT_SIZE}
    item: Item = {"type": "checkpoint", "no": 0}
    for f in ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp"):
        v = getattr(cp, f)
        item[f] = v
        item[f.replace("_timestamp", "_time")] = iso_ms(v) if v > 0 else None
    item["master_flushed_offset"] = cp.master_flushed_offset
    item["confirm_phy_offset"] = cp.confirm_phy_offset
    item["min_timestamp"] = cp.min_timestamp
    item["min_time"] = iso_ms(cp.min_timestamp) if cp.min_timestamp > 0 else None
    item["min_timestamp_index"] = cp.min_timestamp_index
    item["note"] = ("masterFlushedOffset and confirmPhyOffset are written by 5.x brokers only; abnormal recovery "
                    "starts at the last segment whose first record's store time <= min_timestamp "
                    "(min_timestamp_index with messageIndexSafe=true)")
    yield item
    yield {"type": "summary", "kind": KIND_CHECKPOINT, "name": "checkpoint"}
