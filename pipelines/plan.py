"""Plan byte-range splits over the commitlog segments."""
from __future__ import annotations

import dataclasses

from store_format.store import StoreLocation

__all__ = ["Split", "plan_splits", "DEFAULT_SPLIT_SIZE"]

DEFAULT_SPLIT_SIZE = 128 << 20


@dataclasses.dataclass(frozen=True)
class Split:
    """Records that *start* in ``[start, end)`` of one segment belong to this split.

    The last split of a segment gets ``end = size + 1``: the reput's walk of a segment only ends at
    a blank or unreadable record (reading past the data is one), never at a byte position.
    """
    split_id: int
    segment: int       # Segment.index
    seg_base: int
    seg_size: int      # where the segment's readable data ends (Segment.data_end)
    start: int
    end: int
    path: str
    dledger: bool = False  # a DLedger data file (Segment.dledger)
    dispatch_offset_zero: bool = False  # Segment.dispatch_offset_zero
    index_offset_zero: bool = True      # Segment.index_offset_zero
    index_from: int = -1                # Segment.index_from

    @property
    def is_segment_start(self) -> bool:
        return self.start == 0

    @property
    def is_segment_last(self) -> bool:
        return self.end > self.seg_size


def plan_splits(store: StoreLocation, split_size: int = DEFAULT_SPLIT_SIZE) -> list[Split]:
    """Cut every segment into splits of ``split_size`` bytes (the last one shorter), in offset order."""
    if split_size < 4096:
        raise ValueError(f"split size {split_size} is too small; use at least 4096 bytes")
    splits: list[Split] = []
    for seg in store.segments:
        start = min(seg.start, seg.data_end)
        size = seg.data_end
        while True:
            end = min(start + split_size, size)
            last = end >= size
            splits.append(Split(len(splits), seg.index, seg.base, size, start, size + 1 if last else end, seg.path,
                                seg.dledger, seg.dispatch_offset_zero, seg.index_offset_zero, seg.index_from))
            if last:
                break
            start = end
    return splits
