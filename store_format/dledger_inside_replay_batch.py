"""The broker's files of a batch consume queue (a BatchCQ topic's, ``batchconsumequeue/``, 46-byte units) the 5.x
DLedger crash recovery's walk wrote that a start's reput set inside an entry touches, replayed whole
(:func:`replay_batch_queue`): the files ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves, then every unit the
reput dispatches into the queue, in reput order, by the broker's own rule.

Mirrors rocketmq-store 5.5.1 ``BatchConsumeQueue.putBatchMessagePositionInfo`` (:func:`put_bcq`: a unit whose
commitlog offset, its start, lies at or below the queue's max, the start of its last unit, is dropped, with no queue
offset check; any other is appended at the write position, ``getLastMappedFile(getMaxOffset())`` creating a file of
zeros there when it is a file's start, the max becoming its start), ``putMessagePositionInfoWrapper`` (no unit for a
negative msgBaseOffset or batchSize), ``MappedFileQueue.getLastMappedFile`` and
``BatchConsumeQueue.truncateDirtyLogicFiles`` (from the last file back, one whose first unit starts at or past
``processOffset`` is deleted; in the first one that stays the write position follows its last unit starting below
``processOffset``, the units past it staying on disk as bytes, the max that unit's start; with every file deleted,
the max ``processOffset - 1``, the next unit's file at queue byte 0).  ``BatchConsumeQueue.load``/``recover`` (the
files' max: the start of their last valid unit) and the walk's dispatch onto the files of a queue on disk before the
walk are :mod:`store_format.dledger_inside_walked`'s (the :class:`WalkedQueue` the cut left).

From that state the reput dispatches, each by ``putBatchMessagePositionInfo``:

1. the units of the messages its check parses inside the entry, in order (:class:`ParsedUnit`: the store time,
   msgBaseOffset and batchSize its dispatch request carries);
2. the queue's cut units it dispatches again after them and then its records past the walk's end
   (:attr:`WalkedQueue.again`, but the first :attr:`WalkedQueue.again_skip` cut units, which lie inside the parsed
   messages): each unit's 46 bytes are the rebuild's, read at its unit index * 46 in the staged queue (the rebuild's
   unit of a record is the broker's: its store time, INNER_BASE and INNER_NUM read from the log).

``pipelines.restart_cut.apply_cut`` writes the files :class:`BatchQueueFiles` describes whole (the staged files the
cut leaves, below the walk's end: what the rebuild's own dispatch appended after it is not the broker's) and
removes every other staged file of the queue.
"""
from __future__ import annotations

import dataclasses

from .batchconsumequeue import BCQ_UNIT_SIZE
from .dledger_inside_state import ParsedUnit, QueueFiles, WalkedQueue, put_bcq

__all__ = ["BatchQueueFiles", "replay_batch_queue"]


@dataclasses.dataclass(frozen=True)
class BatchQueueFiles(QueueFiles):
    """:class:`QueueFiles` of a batch queue: positions in queue bytes of 46-byte units, ``units`` the parsed units
    appended (no ``fillPreBlank``: ``blank_until`` -1) with their store time, msgBaseOffset and batchSize in
    ``batch_fields`` (one each); ``copies`` ``(position, source)``: the 46 bytes at queue byte ``source`` of the
    staged queue (a cut unit dispatched again, a record past the walk's end) written at ``position``."""
    batch_fields: tuple[tuple[int, int, int], ...] = ()


def replay_batch_queue(key: tuple[str, int], cut: WalkedQueue, parsed: list[ParsedUnit],
                       bcq_file_size: int) -> BatchQueueFiles:
    """The broker's files of the batch queue ``key`` (module docstring) from ``cut`` (its state as the cut left it,
    not changed) and ``parsed`` (its parsed units, in order)."""
    assert cut.batch and not cut.refused
    s = dataclasses.replace(cut)
    opened: list[tuple[str, int, int]] = []
    parsed_at = [put_bcq(key, s, u.offset, bcq_file_size, opened) if u.base >= 0 and u.batch_size >= 0 else -1
                 for u in parsed]   # putMessagePositionInfoWrapper: none for a negative msgBaseOffset or batchSize
    kept = [(pos, u) for pos, u in zip(parsed_at, parsed) if pos >= 0]
    copies: list[tuple[int, int]] = []
    put_back: list[int] = []
    lost: list[int] = []
    for k, (offset, _size, index) in enumerate(cut.again):
        # the first again_skip lie inside the parsed messages: not dispatched again
        if k < cut.again_skip or (pos := put_bcq(key, s, offset, bcq_file_size, opened)) < 0:
            lost.append(offset)
            continue
        copies.append((pos, index * BCQ_UNIT_SIZE))
        put_back.append(offset)
    # truncateDirtyLogicFiles deleted every file starting at or past the write position (its first unit cut)
    cut_from = -(-cut.write // bcq_file_size) * bcq_file_size
    return BatchQueueFiles(key[0], key[1], cut_from, cut.rebuild_write, tuple(f for _t, _q, f in opened), -1,
                           tuple((pos, u.offset, u.size, u.tags_code) for pos, u in kept), tuple(copies),
                           tuple(put_back), tuple(lost), tuple(parsed_at),
                           tuple((u.store_time, u.base, u.batch_size) for _pos, u in kept))
