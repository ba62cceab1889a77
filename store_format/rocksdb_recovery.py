"""The next start of a 5.x broker on its own RocksDB consume queue (``storeType=defaultRocksDB``): what
the commitlog recovery's dispatch and ``truncateDirty`` do to the database's entries, queue by queue.

Read in rocketmq-store 5.3.3 and 5.5.1 (the same rules unless said):

* the recovery's dispatch position is the checkpoint entry (``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``:
  the ``CHECKPOINT_TOPIC`` value, 0 without one; 5.5.1 ``RocksDBConsumeQueueStore.recover`` keeps it as
  ``dispatchFromPhyOffset``, 5.3.3 ``DefaultMessageStore.recover`` passes it as maxPhyOffsetOfConsumeQueue);
  where the recovery starts and ends is :func:`store_format.recovery.plan_recovery` given that value;
* ``CommitLog.recoverNormally`` dispatches the records strictly above it, ``recoverAbnormally`` every record
  from its start segment (``doDispatch`` true), both only below the recovered end; the dispatch reaches the
  database through ``RocksGroupCommitService`` (asynchronously, in batches): each unit is put under its key
  (its value replaces what was there), each queue's "max" entry becomes its last dispatched unit, and the
  checkpoint the end of the last dispatched record (``RocksDBConsumeQueueStore.putMessagePosition0``);
* then ``truncateDirtyLogicFiles(end)`` (5.5.1 always; 5.3.3 only when the checkpoint read before the
  recovery is at or past the end) → ``RocksDBConsumeQueueStore.truncateDirty``: nothing unless the
  checkpoint *now* is past the end; then ``RocksDBConsumeQueueOffsetTable.truncateDirty`` sets the checkpoint
  to the end (``correctMaxPyhOffset``) and, for each "max" entry whose commitlog offset is at or past the
  end, ``truncateDirtyOffset`` → ``correctMaxCqOffset``: the queue's minimum first (``getMinCqOffset``,
  which may write a "min" entry: ``correctMinCqOffset``), then ``RocksDBConsumeQueueTable.binarySearchInCQ``
  for the last unit below the end, which becomes the "max" entry.  When the heap's minimum is not the one
  returned, or starts past the end, ``correctMaxCqOffset`` throws and the queue's max stays (logged).
* units are never deleted: those at or past the end stay in the ``default`` family (above the queue's new
  max until a new message takes their queue offset).  The reput then starts at the commitlog's end.
* with ``recheckReputOffsetFromCq=true``, ``DefaultMessageStore.doRecheckReputOffsetFromCq`` (5.3.3 and
  5.5.1) sets the reput again, at the largest ``getMaxPhysicOffset`` over the consume queue table, at least
  ``CommitLog.getMinOffset``.  The database kept changes nothing there: ``RocksDBConsumeQueueStore.load``
  opens it (``RocksDBConsumeQueueOffsetTable.load`` caches the "max" entries in its own map) but puts no
  queue into the table, which only ``findOrCreateConsumeQueue`` fills, for readers; the recovery's units go
  to ``RocksGroupCommitService``.  So that reput starts at the commitlog's min offset and dispatches every
  record below the end again, after the recovery's batches and ``truncateDirty``: each unit put under its
  key again (the record at offset 0 included), each queue with a unit there gets its last one as "max"
  entry, and the checkpoint becomes the end of the last dispatched record (``putMessagePosition0``);
  "min" entries and the queues wholly at or past the end keep what ``truncateDirty`` left.

The abnormal recovery's dispatch and its ``truncateDirty`` race (the group commit thread writes while the
recovery goes on): when the checkpoint before the start is past the end and something is dispatched, the
outcome depends on which runs first.  Both outcomes are computed; queues whose entries differ between them
are reported with both.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .rocksdb_cq import (
    CHECKPOINT_TOPIC,
    CHECKPOINT_VALUE,
    CQ_KEY_TAIL,
    CQ_VALUE,
    OFFSET_FAMILY,
    OFFSET_KEY_TAIL,
    OFFSET_VALUE,
    split_key,
)

__all__ = ["QueueEntries", "RocksRestart", "parse_database", "predict_rocksdb_restart"]

_RAW = np.dtype((np.void, CQ_VALUE.itemsize))


@dataclasses.dataclass
class QueueEntries:
    """One queue of the database: its units (sorted by queue offset) and its "max"/"min" entries
    (``(commitlogOffset, queueOffset)``)."""
    cq: np.ndarray                      # int64 queue offsets, sorted
    phy: np.ndarray                     # int64 commitlog offsets
    values: np.ndarray                  # the 28-byte values (CQ_VALUE)
    max: tuple[int, int] | None = None
    min: tuple[int, int] | None = None


def parse_database(entries: dict[str, list[tuple[bytes, bytes]]]) -> tuple[dict[str, QueueEntries], int | None]:
    """Both families (as :func:`pipelines.rocksdb_cq.read_rocksdb_cq` reads them) per ``topic/queueId``;
    and the checkpoint value (None: no checkpoint entry).  Keys of neither layout are left out."""
    units: dict[str, list[tuple[int, bytes]]] = {}
    for key, value in entries.get("default", []):
        got = split_key(key)
        if got is None or len(got[1]) != CQ_KEY_TAIL.size or len(value) != CQ_VALUE.itemsize:
            continue
        _, qid, _, qoff = CQ_KEY_TAIL.unpack(got[1])
        units.setdefault(f"{got[0]}/{qid}", []).append((qoff, value))
    out: dict[str, QueueEntries] = {}
    for q, rows in units.items():
        rows.sort()
        vals = np.frombuffer(b"".join(v for _, v in rows), dtype=CQ_VALUE)
        out[q] = QueueEntries(np.array([r[0] for r in rows], np.int64), vals["offset"].astype(np.int64), vals)
    checkpoint = None
    empty = np.zeros(0, np.int64)
    for key, value in entries.get(OFFSET_FAMILY, []):
        got = split_key(key)
        if got is None or len(got[1]) != OFFSET_KEY_TAIL.size:
            continue
        _, which, _, qid = OFFSET_KEY_TAIL.unpack(got[1])
        if got[0] == CHECKPOINT_TOPIC and len(value) == CHECKPOINT_VALUE.size:
            checkpoint = CHECKPOINT_VALUE.unpack(value)[0]
            continue
        if len(value) != OFFSET_VALUE.size:
            continue
        entries_of = out.setdefault(f"{got[0]}/{qid}", QueueEntries(empty, empty, np.zeros(0, CQ_VALUE)))
        if which == b"max":
            entries_of.max = OFFSET_VALUE.unpack(value)
        else:
            entries_of.min = OFFSET_VALUE.unpack(value)
    return out, checkpoint


def _phy_at(q: QueueEntries, cq: int) -> int | None:
    """``RocksDBConsumeQueueTable.getCQInKV``: the unit at queue offset ``cq``, its commitlog offset."""
    i = int(np.searchsorted(q.cq, cq))
    return int(q.phy[i]) if i < len(q.cq) and q.cq[i] == cq else None


def binary_search_in_cq(q: QueueEntries, high: int, low: int, target: int, minimum: bool) -> tuple[int, int]:
    """``RocksDBConsumeQueueTable.binarySearchInCQ`` (5.3.3 = 5.5.1): ``(phyOffset, cqOffset)``, -1s when not
    found.  A missing key moves ``low`` up; an exact hit ends the search (kept only when ``minimum``)."""
    res_cq = res_phy = -1
    while high >= low:
        mid = low + ((high - low) >> 1)
        phy = _phy_at(q, mid)
        if phy is None:
            low = mid + 1
            continue
        if phy == target:
            if minimum:
                res_cq, res_phy = mid, phy
            break
        if phy > target:
            high = mid - 1
            if minimum:
                res_cq, res_phy = mid, phy
        else:
            low = mid + 1
            if not minimum:
                res_cq, res_phy = mid, phy
    return res_phy, res_cq


def _truncate_queue(q: QueueEntries, end: int, min_phy: int) -> str:
    """``truncateDirtyOffset`` → ``correctMaxCqOffset(end)`` on one queue whose max entry is at or past
    ``end`` (the checkpoint was set to ``end`` first); changes ``q.max``/``q.min``; returns a note."""
    assert q.max is not None
    max_phy, max_cq = q.max
    # getMinCqOffset → isMinOffsetOk (the heap is empty at a start) → correctMinCqOffset
    heap = None
    if q.min is None:
        ok, cq = False, 0
    else:
        ok, cq = q.min[0] >= min_phy, q.min[1]
        if ok:
            heap = q.min
    min_cq = cq
    if not ok:
        if max_phy < min_phy:
            q.min = heap = (min_phy, max_cq + 1)
            min_cq = heap[1]
        else:
            phy, tcq = binary_search_in_cq(q, max_cq, cq, min_phy, True)
            if tcq == -1:
                if max_cq != cq:
                    q.min = heap = (max_phy, max_cq)
            else:
                q.min = heap = (phy, tcq)
                min_cq = tcq
    if heap is None or heap[1] != min_cq or heap[0] > end:
        return "correctMaxCqOffset throws (its minimum starts past the end): the max entry stays"
    phy, tcq = binary_search_in_cq(q, max_cq, min_cq, end, False)
    if tcq == -1:
        if max_cq != min_cq:
            q.max = (heap[0], min_cq)
            return "no unit below the end: the max entry becomes the queue's minimum"
        return "no unit below the end: the max entry stays (it is the minimum)"
    q.max = (phy, tcq)
    return ""


def _truncate_dirty(queues: dict[str, QueueEntries], checkpoint: int, end: int, min_phy: int
                    ) -> tuple[int, dict[str, str]]:
    """``RocksDBConsumeQueueStore.truncateDirty(end)``: the checkpoint after it and a note per queue whose
    max entry it visited."""
    if end >= checkpoint:
        return checkpoint, {}
    notes = {}
    for name in sorted(queues):
        q = queues[name]
        if q.max is not None and q.max[0] >= end:
            notes[name] = _truncate_queue(q, end, min_phy)
    return end, notes


def _dispatch(queues: dict[str, QueueEntries], units: dict[str, QueueEntries]) -> tuple[int, dict[str, int]]:
    """The recovery's dispatch (``putMessagePosition0``): each unit of ``units`` put under its key, each
    queue's max entry its last dispatched unit; the new checkpoint (-1: nothing dispatched) and, per queue,
    how many units it puts with a value the database did not hold."""
    cp = -1
    changed = {}
    empty = np.zeros(0, np.int64)
    for name, u in units.items():
        if not len(u.cq):
            continue
        q = queues.setdefault(name, QueueEntries(empty, empty, np.zeros(0, CQ_VALUE)))
        i = np.searchsorted(q.cq, u.cq)
        j = np.minimum(i, max(len(q.cq) - 1, 0))
        present = (i < len(q.cq)) & (q.cq[j] == u.cq) if len(q.cq) else np.zeros(len(u.cq), bool)
        same = np.zeros(len(u.cq), bool)
        if present.any():
            same[present] = q.values.view(_RAW)[j[present]] == u.values.view(_RAW)[present]
        changed[name] = int((~same).sum())
        keep = np.ones(len(q.cq), bool)
        keep[j[present]] = False
        cq = np.concatenate([q.cq[keep], u.cq])
        order = np.argsort(cq, kind="stable")
        q.cq, q.phy = cq[order], np.concatenate([q.phy[keep], u.phy])[order]
        q.values = np.concatenate([q.values[keep], u.values])[order]
        last = int(np.argmax(u.phy))
        q.max = (int(u.phy[last]), int(u.cq[last]))
        cp = max(cp, int((u.phy + u.values["size"].astype(np.int64)).max()))
    return cp, changed


@dataclasses.dataclass
class RocksRestart:
    """The database after the start (``queues``, ``checkpoint``), and with the abnormal recovery's race the
    other outcome (``alt_queues``, ``alt_checkpoint``: the truncation before the dispatch landed)."""
    queues: dict[str, QueueEntries]
    checkpoint: int | None
    truncated: bool
    notes: dict[str, str]
    changed: dict[str, int]
    dispatched: dict[str, int]
    alt_queues: dict[str, QueueEntries] | None = None
    alt_checkpoint: int | None = None
    alt_notes: dict[str, str] = dataclasses.field(default_factory=dict)
    second_reput: bool = False


def _copy(queues: dict[str, QueueEntries]) -> dict[str, QueueEntries]:
    return {k: dataclasses.replace(v) for k, v in queues.items()}


def predict_rocksdb_restart(store: dict[str, QueueEntries], checkpoint: int | None, dispatched: dict[str, QueueEntries],
                            *, end: int, min_phy: int, abnormal: bool, broker_551: bool,
                            again: dict[str, QueueEntries] | None = None, dledger: bool = False) -> RocksRestart:
    """The database after the start (module docstring): ``store`` and ``checkpoint`` as
    :func:`parse_database` reads them, ``dispatched`` the units the recovery dispatches (by queue, in
    commitlog order), ``end`` the recovered commitlog end, ``min_phy`` the commitlog's min offset
    (``CommitLog.getMinOffset``); ``again`` (``recheckReputOffsetFromCq=true``) the units the start's
    second reput dispatches (``DefaultMessageStore.doRecheckReputOffsetFromCq``: every record from
    ``min_phy`` to ``end``), put after both outcomes of the race.  ``dledger``: ``DLedgerCommitLog``'s recoveries
    (5.3.3 and 5.5.1) call ``truncateDirtyLogicFiles`` only when the value read before them is at or past ``end``
    (their ``processOffset``), as the 5.3.3 ``CommitLog`` does (:mod:`store_format.dledger_rocksdb_restart`)."""
    cp0 = 0 if checkpoint is None else checkpoint
    # 5.3.3 CommitLog.recoverNormally/recoverAbnormally: truncateDirtyLogicFiles only when the value read before
    # the recovery is at or past the end; 5.5.1 always (truncateDirty then compares the checkpoint of the moment)
    calls_truncate = (broker_551 and not dledger) or cp0 >= end
    n_disp = {k: len(v.cq) for k, v in dispatched.items() if len(v.cq)}

    first = _copy(store)
    cp, changed = _dispatch(first, dispatched)
    cp_now = cp if cp >= 0 else cp0
    truncated = calls_truncate and cp_now > end
    notes: dict[str, str] = {}
    if calls_truncate:
        cp_now, notes = _truncate_dirty(first, cp_now, end, min_phy)
    out = RocksRestart(first, cp_now if (cp >= 0 or truncated) else checkpoint, truncated, notes, changed, n_disp)
    if abnormal and n_disp and calls_truncate and cp0 > end:
        # the race: truncateDirty on the checkpoint before the start, then the dispatch's batches land
        alt = _copy(store)
        alt_cp, alt_notes = _truncate_dirty(alt, cp0, end, min_phy)
        d_cp, _ = _dispatch(alt, dispatched)
        out.alt_queues, out.alt_checkpoint, out.alt_notes = alt, d_cp if d_cp >= 0 else alt_cp, alt_notes
    if again is not None:
        _second_reput(out, again)
    return out


def _second_reput(out: RocksRestart, again: dict[str, QueueEntries]) -> None:
    """``DefaultMessageStore.doRecheckReputOffsetFromCq`` (5.3.3 and 5.5.1) on a RocksDB store: its batches
    reach ``putMessagePosition0`` after the recovery's and after ``truncateDirty`` (which ran inside the
    recovery), in either outcome of the race."""
    out.second_reput = True
    cp, _ = _dispatch(out.queues, again)
    if out.alt_queues is not None:
        _dispatch(out.alt_queues, again)
    if cp >= 0:
        out.checkpoint = cp
        if out.alt_queues is not None:
            out.alt_checkpoint = cp
    for name, u in again.items():
        if len(u.cq):
            out.dispatched[name] = out.dispatched.get(name, 0) + len(u.cq)
            for notes in (out.notes, out.alt_notes):
                if notes.get(name):
                    notes[name] += "; then the second reput's units set it"
