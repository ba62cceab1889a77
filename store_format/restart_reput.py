"""What ``DefaultMessageStore.start`` does after a recovery that dispatched: the second reput of 4.9.8's
``start()`` and of 5.x ``doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``).

:class:`Accepted` collects, while :mod:`store_format.recovery` walks, what the records recovery accepted
leave in the consume queues and the index; :func:`start_reput_check` says where the second reput starts
and what it writes again (:class:`SecondReput`: the last indexed record's keys; a RocksDB store's record at
offset 0; ``index_from``: a start before the first record recovery dispatched, whose walk queues the records
below it and indexes them only where recovery indexed none; :func:`unindex_below` takes their keys out of a walk).
Checked against the 4.9.8 and 5.5.1 brokers' restarts (tests/test_restart_layouts_broker.py,
tests/test_rocksdb_restart_broker.py, tests/test_restart_reput_before_recovery_broker.py, a 5.5.1 accelerated
recovery cut inside a record: tests/test_restart_accelerated_inside_broker.py, one that accepted a message planted
inside a record: tests/test_restart_accelerated_planted_broker.py; on a RocksDB consume queue store, where that
walk starts at a segment's start: tests/test_restart_accelerated_rocksdb_broker.py).
:func:`reput_records_from` counts what the reput's walk finds after the cut, the records a restart discards.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .dispatch import fix_malformed_text, queue_units
from .empty_topic_restart import reput_start_over_table
from .javahash import java_utf8_decode
from .reput import next_reput_offset, resolve_broker_version
from .rocksdb_cq import light_rows, light_unit_config, light_units_unmodelled
from .store import Segment, StoreLocation

__all__ = ["Accepted", "SecondReput", "offset_zero_keys", "reput_data_end", "reput_records_from", "start_reput_check",
           "unindex_below", "walk_reaches", "walk_units", "walked_file_queue_units"]


class _Cut(Protocol):
    """The fields of :class:`store_format.recovery.RecoveryPlan` :func:`reput_data_end` reads."""
    @property
    def process_offset(self) -> int: ...
    @property
    def restart_reput_from(self) -> int: ...
    @property
    def dispatch_from(self) -> int: ...


@dataclasses.dataclass
class Accepted:
    """What the records recovery accepted leave behind for ``DefaultMessageStore.start``: the last record
    put into a consume queue (``cq_start``, ``cq_end``: its offset and ``offset + size``; -1: none) and its
    topic, and the last index file's ``endPhyOffset`` (``last_indexed``: the offset of the last record whose
    keys ``IndexService.buildIndex`` put; -1: none).  ``key_offsets`` (None: not kept): the offset of each key the
    records put, in put order (each record's physicalOffset field once per key), for :attr:`SecondReput.walk_first`."""
    cq_start: int = -1
    cq_end: int = -1
    cq_topic: str = ""
    last_indexed: int = -1
    key_offsets: list[np.ndarray] | None = None

    def add(self, res: cl.WalkResult, n: int) -> None:
        """The first ``n`` records of a recovery walk's result ``res`` (walked with their text)."""
        rec = res.rec[:n]
        if not len(rec):
            return
        cq = np.nonzero((rec[:, cl.R_FLAGS] & cl.F_CQ) != 0)[0]
        if len(cq):
            last = rec[cq[-1]]
            self.cq_start, self.cq_end = int(last[cl.R_PHYS]), int(last[cl.R_PHYS] + last[cl.R_TOTAL])
            at = int(last[cl.R_TOPIC_START]) - res.text_origin
            self.cq_topic = java_utf8_decode(np.asarray(res.text, dtype=np.uint8)[at:at + int(last[cl.R_TOPIC_LEN])])
        keyed = np.nonzero(((rec[:, cl.R_FLAGS] & cl.F_INDEX) != 0) & (rec[:, cl.R_KEY_COUNT] > 0))[0]
        if len(keyed):
            self.last_indexed = int(rec[keyed[-1], cl.R_PHYS])
            if self.key_offsets is not None:
                self.key_offsets.append(np.repeat(rec[keyed, cl.R_PHYS], rec[keyed, cl.R_KEY_COUNT]))

    def walk_keys(self) -> tuple[int, ...]:
        """``key_offsets`` as one tuple (empty where not kept)."""
        return tuple(int(o) for a in self.key_offsets or [] for o in a.tolist())

    def max_physic_offset(self, batch_topics: frozenset[str]) -> int:
        """The largest ``getMaxPhysicOffset`` over the queues recovery filled: ``ConsumeQueue``'s is the end
        of its last unit, ``BatchConsumeQueue``'s (``maxMsgPhyOffsetInCommitLog``, 5.3.3 and 5.5.1) the
        *start* of its last unit.  Records come in commitlog order, so it is the last queued record's
        (light queue units end where their record's own unit ends; a batch topic's record has none)."""
        return self.cq_start if self.cq_topic in batch_topics else self.cq_end


@dataclasses.dataclass(frozen=True)
class SecondReput:
    """Where ``DefaultMessageStore.start``'s second reput starts (``reput``) and what it writes that the
    recovery did not: ``reindex``, the offset of the record whose keys ``IndexService.buildIndex`` puts a
    second time (-1: none), and ``rocksdb_offset_zero``: a RocksDB consume queue store's record at
    commitlog offset 0, which the normal recovery read but did not dispatch, now dispatched (its units;
    its keys only when ``index_offset_zero``: no record recovery dispatched had put a key).  ``index_from``: a
    reput that starts before the first record recovery dispatched (``dispatch_from``) queues the records below
    it, but puts no key of a record below this offset (-1: every record's keys, recovery having put none).
    ``walk_first``: the recovery's walk from this offset (inside a record the reput reads whole) to the cut put keys
    the reput's keys follow in the index (-1: none such)."""
    reput: int
    reindex: int = -1
    rocksdb_offset_zero: bool = False
    index_offset_zero: bool = False
    index_from: int = -1
    walk_first: int = -1


def start_reput_check(config: BrokerConfig, min_offset: int, checked_from: int, process_offset: int,
                       accepted: Accepted, *, abnormal: bool, batch_topics: frozenset[str] = frozenset(),
                       dispatch_above: int = -1, segment_base: int | None = None,
                       start_on_record: Callable[[], bool] | None = None) -> SecondReput | None:
    """Where ``DefaultMessageStore.start`` sets the reput after a recovery that dispatched, and what that reput
    adds (None: the reput starts at the commitlog's end and adds nothing).

    4.9.8 ``start()`` always, 5.x ``doRecheckReputOffsetFromCq`` (5.3.3 and 5.5.1 alike) with
    ``recheckReputOffsetFromCq=true``: the reput restarts at the largest ``getMaxPhysicOffset`` over the
    consume queue table (:meth:`Accepted.max_physic_offset`), at least the commitlog's minimum offset
    (and 0), and walks to the end again.  A RocksDB consume queue store's table holds no queue after a
    restart (``RocksDBConsumeQueueStore.findOrCreateConsumeQueue`` is called by readers only, the
    recovery's units go to the group commit service), so it starts at the minimum offset.

    What that walk writes: ``ConsumeQueue.putMessagePositionInfo`` drops a unit with ``offset + size <=``
    the queue's max (its light queue units likewise, each queue's own max), and
    ``BatchConsumeQueue.putBatchMessagePositionInfo`` one with ``offset <=`` the start of the queue's last
    unit: every record recovery queued is dropped.  A RocksDB queue puts every unit again under the same
    key and value (nothing changes) and the record at offset 0, which a normal recovery does not
    dispatch, now gets its units.  ``IndexService.buildIndex`` skips only records *below* the last index
    file's ``endPhyOffset``: the last indexed record is indexed a second time when the walk reaches it,
    and the record at offset 0 is indexed only when nothing else was.  5.x without the switch:
    ``start()`` sets the reput to ``CommitLog.getConfirmOffset()``, the end of the recovered commitlog.

    A reput that starts before ``checked_from`` (the first record recovery dispatched; the 5.5.1 recovery walks
    back at most ``commitLogRecoverMaxNum`` files, so a longer store's recovery starts above its minimum offset):
    a RocksDB store puts the units recovery put again unchanged and adds those of every record below, the record
    at offset 0's too; each queue's "max" entry is its last unit again, the checkpoint the end of the last batch:
    the key/value set of a walk of the whole commitlog.  File queues: the recovery queued nothing (a queued
    record's end would be the start: its records are prepared or rolled back transaction messages), so every
    queue is empty and the walk queues every record as a plain reput from the min offset does.
    ``IndexService.buildIndex`` skips every record below the last index file's ``endPhyOffset``, the last record
    recovery indexed: no record below ``checked_from`` gets a key (``SecondReput.index_from``), unless recovery
    indexed none (then all do, in walk order).  Checked on 5.5.1 (5.3.3's ``doRecheckReputOffsetFromCq`` and
    ``buildIndex`` are the same) and on 4.9.8, whose ``start()`` always sets the reput so: after an abnormal
    recovery that queued nothing (its walk began at a file whose first record is old enough for the checkpoint,
    then found prepared or rolled back records only, up to a damaged record) the reput walks every file from the
    min offset, after ``load`` ran ``ScheduleMessageService.load`` (``parseDelayLevel``): every unit, a delayed
    record's too, is the reput's, its tagsCode the delivery time (:func:`store_format.recovery.dispatch_config`).

    A 5.5.1 ``enableAcceleratedRecovery`` walk that began inside its segment (``segment_base`` below
    ``checked_from``) and queued nothing: that reput parses the segment from its start, so the records there
    below the accelerated start are queued like every earlier one and get no key (or every key, recovery having
    indexed none), as above.  A walk that accepted no record there (``process_offset == checked_from``: the
    check at the accelerated start failed at once, ``recoverAbnormally`` then cuts the commitlog at that start,
    ``truncateDirtyFiles`` setting its file's write position there) leaves the reput a plain walk from the min
    offset over a commitlog whose readable data ends at the cut, wherever its parse of that segment meets it:
    ``CommitLog.getData`` hands out the segment up to the cut, a record crossing it reads past the slice's limit
    (``checkMessageAndReturnSize`` catches the underflow: size -1, not a success) and ``doReput`` ends there (a
    master moves ``reputFromOffset`` to the slice's end, the cut, where ``getReputEndOffset``, the commitlog's
    max offset, stops it), that record neither queued nor indexed (:func:`reput_data_end`); a record of a bad
    magic code before the cut ends that slice there the same way.  5.3.3 and 4.9.8 have no accelerated recovery
    (their walks begin at a file's start).  A walk that accepted records from an accelerated start the parse from
    the segment's start does not arrive at on a record (``start_on_record()`` False, :func:`walk_reaches`: bytes
    inside a record that form well-formed ones) parses other records than the reput does from there; where that
    reput starts below it the walk queued nothing (a queued record's end would be the start), and where it put no
    key either its dispatch left nothing the reput reads: the restart's files are that reput's alone, a plain walk
    from the min offset over a commitlog cut at ``process_offset`` (the record crossing the cut, if any, ends it as
    above; checked on 5.5.1 with a prepared message planted in a record's body, the cut at that record's end or
    inside it).  Where that walk put keys, they come first in the index (``SecondReput.walk_first``), each at its
    record's physicalOffset field (``DispatchRequest.getCommitLogOffset``, what ``checkMessageAndReturnSize`` read),
    the last of them the index file's ``endPhyOffset``: the reput's walk from the min offset then puts the keys of
    its records at or above that value only (``index_from``), none reindexed apart (checked on 5.5.1: a planted
    message whose field holds its host's offset and shares the host's key: the key twice at that offset, no other
    record's).

    A RocksDB consume queue store's accelerated walk never begins inside a segment here: this check sees restarts
    from a deleted database (:func:`store_format.recovery.plan_recovery` with no consume queue loaded), whose
    ``RocksDBConsumeQueueStore.getDispatchFromPhyOffset`` is the empty database's max physical offset, 0 (no RocksDB
    dispatch store lowers a 0), so ``recoverAbnormally`` starts its segment at ``0 - base``, the segment's start:
    the checkpoint's logicsPhysicalOffset plays no part (checked on 5.5.1 with that offset inside a record and at a
    message planted inside one, tests/test_restart_accelerated_rocksdb_broker.py: a plain abnormal recovery from
    a segment's start, the host's body CRC, broken by the planted bytes, its cut; with ``commitLogRecoverMaxNum``
    segments back, the records below queued and not indexed, as above).  Only a kept database whose checkpoint
    lies inside a segment starts one there (``verify``'s prediction, not this check): a ``ValueError`` here.
    """
    if config.is_5x and not config.recheckReputOffsetFromCq:
        return None
    segment_base = checked_from if segment_base is None else segment_base
    if config.rocksdb_cq and segment_base < checked_from:
        raise ValueError(f"a RocksDB consume queue store's recovery from an empty database starts at a segment's "
                         f"start, not at {checked_from} inside the segment at {segment_base}")
    queues = -1 if config.rocksdb_cq else accepted.max_physic_offset(batch_topics)
    # the queues deleted: nothing loaded reaches the commitlog's end, so no truncate, and the queues a load makes of
    # topic ""'s held file names keep -1 on every line (table_max_beside_own, not truncated); the topic "" queues
    # the walk opened end where their records' own units do
    reput = reput_start_over_table(queues, -1, min_offset)
    if reput < checked_from and segment_base < checked_from < process_offset and start_on_record is not None \
            and accepted.last_indexed >= 0 and not start_on_record():
        # the walk's keys first, then the reput's from the last of them on
        return SecondReput(reput, index_from=accepted.last_indexed, walk_first=checked_from)
    indexed = accepted.last_indexed if accepted.last_indexed > dispatch_above else -1
    offset_zero = config.rocksdb_cq and dispatch_above >= 0 and reput == 0
    return SecondReput(reput, reindex=indexed if config.writes_index_files and indexed >= reput else -1,
                       rocksdb_offset_zero=offset_zero, index_offset_zero=offset_zero and indexed < 0,
                       index_from=checked_from if reput < checked_from and indexed >= 0 else -1)


def walk_reaches(store: StoreLocation, seg: Segment, pos: int, config: BrokerConfig, window: int,
                 margin: int) -> bool:
    """Whether the reput's walk of segment ``seg`` from its start arrives at position ``pos`` on a record's start
    (or the end of the one before it), walked ``window`` bytes at a time: :func:`start_reput_check`'s
    ``start_on_record`` for a 5.5.1 accelerated recovery that began at ``pos`` and accepted records there."""
    reached, whole = _parse_segment(store, seg, pos, seg.size, config, window, margin)
    return whole and reached == pos


def _parse_segment(store: StoreLocation, seg: Segment, to: int, limit: int, config: BrokerConfig, window: int,
                   margin: int) -> tuple[int, bool]:
    """The reput's parse of segment ``seg`` from its start, its readable bytes ending at ``limit``, ``window`` bytes
    at a time up to ``to``: where it stands, and whether it got there record by record (False: it stopped at a
    record it could not read, a blank or the data's end before ``to``)."""
    scratch = cl.Scratch()
    state = cl.WalkState.at_slice_start(0, limit)
    with store.reader(seg) as read:
        while state.bufpos < to:
            res = cl.walk_range(read, seg.base, limit, state, min(state.bufpos + window, to), config,
                                window=window + margin, keep_text=False, scratch=scratch)
            state = res.state
            if res.stop != cl.Stop.SPLIT_END:
                return state.bufpos, False
    return state.bufpos, True


def reput_data_end(store: StoreLocation, config: BrokerConfig, plan: _Cut, window: int = 16 << 20,
                   margin: int = 1 << 20) -> int:
    """Where the records the restart's reput dispatches end: ``plan.process_offset``, but where a second reput from
    below a recovery that accepted no record (a 5.5.1 ``enableAcceleratedRecovery`` walk whose first check failed
    at once) meets that cut inside a record, the start of that record (or of an earlier one its parse of the cut's
    segment from its start cannot read): ``CommitLog.getData`` hands out the segment up to the cut, the record
    crossing it reads past the slice (``checkMessageAndReturnSize``: -1) and the reput ends there.  So too after
    a walk that accepted records from inside that segment (the cut's, its start not the segment's), whose records
    the reput's parse from the segment's start need not meet: the cut may lie inside one of the reput's.  A
    reference rebuild of the whole segment holds that record; the broker's restart does not."""
    cut = plan.process_offset
    seg = store.segment_at(cut)
    if not 0 <= plan.restart_reput_from < plan.dispatch_from <= cut or seg is None \
            or plan.dispatch_from <= seg.base < cut:   # a walk that began before this segment meets its records
        return cut
    end = cut - seg.base
    if end <= 0:
        return cut
    reached, _ = _parse_segment(store, seg, end, end, resolve_broker_version(store, config), window, margin)
    return seg.base + min(reached, end)


def offset_zero_keys(store: StoreLocation, config: BrokerConfig, window: int = 16 << 20,
                     margin: int = 1 << 20) -> int:
    """The index keys ``IndexService.buildIndex`` puts for the record at commitlog offset 0 when a restart's walk from
    there dispatches it while the index's ``endPhyOffset`` is 0 (none where it is a rollback message, or the
    commitlog does not start at 0): a RocksDB consume queue store's rebuild reads that record without dispatching
    it (:func:`store_format.rocksdb_cq.undispatch_first_record`), so the rebuild's index holds none of them."""
    seg = store.segment_at(0)
    if seg is None or seg.base != 0:
        return 0
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(0, seg.size), 1,
                            resolve_broker_version(store, config), window=window + margin, keep_text=False)
    rec = res.rec[:1]
    if not len(rec) or rec[0, cl.R_PHYS] != 0 or not rec[0, cl.R_FLAGS] & cl.F_INDEX:
        return 0
    return int(rec[0, cl.R_KEY_COUNT])


def unindex_below(res: cl.WalkResult, offset: int) -> cl.WalkResult:
    """A walk's result with the keys of its records below commitlog ``offset`` taken out (they stay dispatched to
    their queues): :attr:`SecondReput.index_from`, ``IndexService.buildIndex`` skipping records below the last
    index file's ``endPhyOffset``."""
    return res.without_keys(res.rec[:, cl.R_PHYS] < offset)


def reput_records_from(store: StoreLocation, config: BrokerConfig, offset: int, window: int,
                       margin: int) -> tuple[int, int]:
    """Records (and their bytes) the reput's walk finds from commitlog ``offset`` to the end of the store
    (:func:`store_format.reput.next_reput_offset` between slices), walked ``window`` bytes at a time (each
    walk's buffer ``margin`` bytes larger): what a restart's recovery discards when it cuts the commitlog there."""
    scratch = cl.Scratch()
    records = nbytes = 0
    reput = offset
    while True:
        seg = store.segment_at(reput)
        if seg is None:
            break
        state = cl.WalkState.at_slice_start(reput - seg.base, seg.size)
        with store.reader(seg) as read:
            while True:
                split_end = min(state.bufpos + window, seg.size + 1)
                res = cl.walk_range(read, seg.base, seg.size, state, split_end, config, window=window + margin,
                                    keep_text=False, scratch=scratch)
                records += len(res.rec)
                nbytes += int(res.rec[:, cl.R_STRUCT].sum()) if len(res.rec) else 0
                state = res.state
                if res.stop != cl.Stop.SPLIT_END:
                    break
        if res.stop == cl.Stop.LIMIT:
            break
        nxt = next_reput_offset(seg, state, res.stop, seg.size, config.is_master)
        if nxt is None or nxt <= reput:
            break
        reput = nxt
    return records, nbytes


@dataclasses.dataclass(frozen=True)
class WalkUnits:
    """The consume queue units of the records a 5.5.1 ``enableAcceleratedRecovery`` walk accepted from inside a
    record (``CommitLog.recoverAbnormally``'s ``doDispatch``, ``CommitLogDispatcherBuildConsumeQueue``): per unit,
    in dispatch order (commitlog order, a record's own unit before its light ones), its queue (``topic/queueId``) and
    the ``DispatchRequest``'s fields, each the record's own (queueOffset, physicalOffset, size, tags code, store
    timestamp); a light unit (``RocksDBConsumeQueueStore.dispatchLMQ``, under
    :func:`store_format.rocksdb_cq.light_unit_config`'s gate) under its ``%LMQ%`` queue (queue 0) at its
    ``INNER_MULTI_QUEUE_OFFSET``, as :func:`store_format.dispatch.queue_units` reads it (a name holding the path
    separator too: :func:`store_format.rocksdb_cq.light_rows`), with its record's other fields; a tags code of tags
    that are not valid UTF-8 Java's hash of the text as it decodes it
    (:func:`store_format.dispatch.fix_malformed_text`), a queue name as it decodes.  ``unmodelled``: why some unit is
    not (:func:`store_format.rocksdb_cq.light_units_unmodelled`); empty: none such."""
    queue: list[str]
    queue_offset: np.ndarray
    phy: np.ndarray
    size: np.ndarray
    tags_code: np.ndarray
    store_timestamp: np.ndarray
    unmodelled: str = ""
    own: np.ndarray | None = None   # with file_queues: a record's own unit (False: a light one)


def walk_units(store: StoreLocation, seg: Segment, start: int, end: int, config: BrokerConfig, window: int = 16 << 20,
               margin: int = 1 << 20, file_queues: bool = False) -> WalkUnits:
    """The units of the records in segment ``seg`` from commitlog offset ``start`` to ``end`` (records the recovery's
    walk accepted there, read by their own boundaries from ``start``), ``window`` bytes at a time.  ``file_queues``:
    the units ``CommitLogDispatcherBuildConsumeQueue`` hands file consume queues (light ones under
    ``enableMultiDispatch``, :func:`store_format.dispatch.queue_units` as the rebuild reads them), not the RocksDB
    store's; then ``own`` says which are a record's own units."""
    scratch = cl.Scratch()
    if not file_queues:
        config = light_unit_config(config)
    to = end - seg.base
    state = cl.WalkState.at_slice_start(start - seg.base, seg.size)
    queue: list[str] = []
    cols: list[np.ndarray] = []
    why = ""
    with store.reader(seg) as read:
        while state.bufpos < to:
            res = cl.walk_range(read, seg.base, seg.size, state, min(state.bufpos + window, to), config,
                                limit_rel=to, window=window + margin, keep_text=True, scratch=scratch)
            state = res.state
            rec = res.rec
            fix_malformed_text(res, len(config.delay_levels_ms))   # tags codes of text that is not UTF-8
            if not file_queues:
                why = why or light_units_unmodelled(res)
            u = queue_units(res if file_queues else light_rows(res))
            names = np.array([f"{t}/{q}" for t, q in u.queues] or [""], dtype=object)
            queue.extend(names[u.queue].tolist())
            cols.append(np.column_stack([u.queue_offset, u.offset, u.size, u.tags_code, rec[u.record, cl.R_STORE_TS],
                                         u.own]))
            if res.stop != cl.Stop.SPLIT_END:
                break
    c = np.concatenate(cols) if cols else np.zeros((0, 6), np.int64)
    return WalkUnits(queue, c[:, 0], c[:, 1], c[:, 2], c[:, 3], c[:, 4], why, c[:, 5].astype(bool))


def walked_file_queue_units(store: StoreLocation, config: BrokerConfig, start: int, end: int,
                            queues: set[str]) -> dict[str, np.ndarray]:
    """Every unit ``CommitLog.recoverAbnormally``'s walk from ``start`` to ``end`` hands the file consume queues
    ``queues`` (``topic/queueId``), the units the reput once dropped too, per queue in dispatch order: rows of
    commitlog offset, size, queue offset (a light unit's its ``INNER_MULTI_QUEUE_OFFSET``) and 1 for a record's own
    unit (:func:`walk_units` over each segment the walk reads)."""
    config = resolve_broker_version(store, config)
    parts: dict[str, list[np.ndarray]] = {q: [] for q in queues}
    for seg in store.segments:
        lo, hi = max(start, seg.base), min(end, seg.base + seg.data_end)
        if lo >= hi:
            continue
        w = walk_units(store, seg, lo, hi, config, file_queues=True)
        names = np.array(w.queue, dtype=object)
        assert w.own is not None
        for q in queues:
            m = names == q
            if m.any():
                parts[q].append(np.column_stack([w.phy[m], w.size[m], w.queue_offset[m], w.own[m]]))
    return {q: np.concatenate(p) if p else np.zeros((0, 4), np.int64) for q, p in parts.items()}
