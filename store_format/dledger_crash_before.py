"""A 5.x DLedger crash restart whose start's reput begins before the data file the recovery's walk started at, after
a walk that ``truncateDirtyLogicFiles`` followed with a queue cut: the ext units the cut units put back point at.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfoWrapper``, ``putMessagePositionInfo`` and
``ConsumeQueueExt.put`` (as rocketmq-all-5.3.3), run by ``DefaultMessageStore.ReputMessageService.doReput`` from the
reput's start (:mod:`store_format.dledger_crash`): for every record of a consume queue it walks,
``ConsumeQueueExt.put`` appends an ext unit first, then ``putMessagePositionInfo`` drops the queue unit (at or below
the queue's max physical offset) or puts it, holding that ext unit's address. From before the walk's first data file
the reput walks the earlier files' records first (their ext units put, their queue units of the queues the walk wrote
dropped), then the walk's ones again: so the ext unit a cut unit put back points at counts the earlier files' records
of its queue too, which :func:`store_format.dledger_crash_cut.ext_reput` (the walk's records only) leaves out. The
rebuild reads the earlier files' records and the walk's ones again itself (:func:`store_format.store.jump_at`) and
puts their ext units; only the addresses of the units put back are set afterwards
(``pipelines.restart_cut.apply_cut``).

A record in those earlier files that the reput's own message check refuses (a bad magic code: neither the recovery's
walk nor DLedger's recovery reads it) ends that check's walk there; ``doReput`` then goes on at the end of the buffer
``DLedgerCommitLog.getData`` gave, the next data file where
:func:`store_format.dledger_crash_after.reput_goes_on` says so (``goes_on``): the rest of that file gets no unit and
no ext unit, as the rebuild's walk skips it
(:func:`store_format.reput.next_reput_offset`).  Elsewhere (a group of several peers, the committed position inside
that file past the record) where it goes on is thread timing: refused, with ext files or without.  In an old
``commitlog/`` file of a store converted in place ``getData`` below ``dividedCommitlogOffset`` is the base
``CommitLog.getData``: the file's bytes to its end, no committed position cutting them, so a record the check
refuses (``DLedgerCommitLog.checkMessageAndReturnSize``: size -1, its bytes 48 further no record either) sends the
reput to the next file, the next old one or the first data file (:func:`_old_goes_on`; checked against the 5.5.1
broker, ``-converted-prepared-old-magic``).  With ext files the walk's units the reput puts back into a queue the
5.5.1 cut left with no file land at its write position after the records skipped (``putMessagePositionInfo`` from
the empty queue: the first record opens a file at its queue offset, each later one is appended where the queue
offset does not match), not at their queue offsets' positions: :func:`_reset_positions` replays them for the ext
addresses set there (checked against the 5.5.1 broker, ``-converted-cut-emptied-ext-old-magic``).  Where the
DLedger check 48 bytes past such a record parses a message or a blank (``checkMessageAndReturnSize`` runs the base
check there: the record's second int no magic code, its first not -1), the reput dispatches those first and checks
on from their end to that file's end, then goes on at the next file (:func:`_old_goes_on`'s ``parsed``, ext files or
not; checked against the 5.5.1 and 5.3.3 brokers, ``-converted-prepared-old-magic-48``, its ``-blank-48`` and
``-48-ext``, and after a 5.5.1 cut ``-converted-cut-emptied-ext-old-magic-48``); the counts here take the parsed
units among the earlier records, in reput order (:func:`_parsed_rows`), so a parsed message for a queue the walk wrote
that the 5.5.1 cut left with no file counts in the ext addresses of the units put back (checked against the 5.5.1
broker, ``-converted-cut-emptied-ext-old-magic-48-t7``; other queues the walk wrote:
:func:`store_format.dledger_crash_old.old_parsed_queues` refuses).

A reput set at 2147483647 (``DefaultMessageStore.doRecheckReputOffsetFromCq``: the max of a queue the 5.5.1 cut left
``fillPreBlank`` units only) that goes on before the walk's data file walks the earlier files' records into queues
the walk wrote: ``ConsumeQueue.putMessagePositionInfo`` drops a unit at or below the queue's max and one whose queue
offset is not 0 and lies below the write position, and appends any other at the write position, so a record of queue
offset 0 there is appended after the ``fillPreBlank`` units and the walk's units then go by the same rule
(:func:`appended_before` replays it; where it fills the queue's file, the next record's ``getLastMappedFile`` creates
the next file before its unit drops, a file the walk never opened, written zeros but for the replay's units there): with
ext files each unit it appends holds the address of the ext unit ``putMessagePositionInfoWrapper`` put for its record in
reput order; a light queue's units go by the same rule (``multiDispatchLmqQueue``: ``putMessagePositionInfo`` with the
light queue offset, no ext unit: the request's tags code), and so do a queue's own and light units both, in reput
order, each with its own counter's queue offset, with ext files only its own units counting ext units (checked
against the 5.5.1 broker, ``-t9-first-light-mixed-ext``), a record's own unit before its light one in it (dispatch
order: the light one then at the max its own unit set, dropped; checked against the 5.5.1 broker for the walk's
record, ``-t9-first-light-mixed-ext-self``, a parsed one, and one of the earlier files,
``-t9-first-light-mixed-ext-earlier-both``: its own unit of queue offset 0 appended, its light one dropped); a
message parsed where the reput was set for such a queue goes first (:func:`appended_cut`), as its own unit or a
light one (checked against the 5.5.1 broker, ``-t9-first-light-mixed-parsed-own``, ``-parsed-light`` and
``-t9-first-light-mixed-ext-parsed-both``), with ext files its ext unit put first too
(the walk's ext units kept by the cut, then the parsed message's, the earlier files' records', the walk's again:
``ConsumeQueueExt.put`` before ``putMessagePositionInfo``, so the parsed unit appended holds the second address; the
rebuild's own dispatch puts the ext units in that order).  A queue the cut left with no file that a message parsed
where the reput was set went to is written anew from that unit, as the rebuild's own dispatch writes it, ext units
too (:func:`without_queues`; how many of the parsed and the walk's units that rewrite appends, each holding its ext
unit's address, :func:`ext_anew` counts for verify's ext units orphaned).  Checked against the 5.5.1 broker
(``-past-2gib-before-t9-first``, ``-past-2gib-before-no-file``, their ``-ext``, ``-t9-first-light``,
``-t9-first-parsed`` and its ``-ext``, ``-t9-full``, ``-t9-first-light-mixed`` and its ``-ext``).

:class:`EarlierRecords` (:func:`earlier_counter`) hands :func:`store_format.dledger_inside_mixed.mixed_disk_put_back`
those earlier records of a queue holding a record's own units and light ones on disk before the walk (their count of
own ones for the ext units of those it only drops, or, the cut's max below the walk's first data file's start, their
units, each then by ``putMessagePositionInfo``; checked against the 5.5.1 broker, ``-mixed-disk-below`` and its
``-ext``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .consumequeue import (
    Q_BLANK_UNTIL,
    Q_FIRST_FILE,
    Q_LAST_FILE,
    Q_MAX_PHYS,
    Q_WRITE_POS,
    assign_positions,
    new_states,
)
from .consumequeue_ext import ext_addresses
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash_after import checked_windows, refusal, reput_goes_on
from .dledger_crash_cut import ExtAgain, QueueCut, QueueTrack
from .dledger_crash_old import reput_inside_old_file
from .dledger_inside_mixed import OnDiskCut
from .dledger_inside_units import InsideUnit, ParsedUnit, Placed, parsed_units
from .dledger_queue_track import BLANK_MAX, KIND_BATCH, KIND_CQ, KIND_LIGHT, U_END, U_KEY, U_KIND, U_OFFSET, U_QUEUE
from .store import Segment, StoreLocation

__all__ = ["EarlierRecords", "earlier_counter", "earlier_own_units", "ext_anew", "ext_before_walk", "appended_before",
           "appended_cut", "inside_parsed", "without_queues"]


def ext_before_walk(earlier: dict[tuple[str, int], int], ext_again: tuple[ExtAgain, ...],
                    reset: dict[tuple[str, int], np.ndarray] | None = None, walk: QueueTrack | None = None,
                    to: int = -1, cq_size: int = 0) -> tuple[ExtAgain, ...]:
    """``ext_again`` (the cut's, :attr:`store_format.dledger_crash_cut.QueueCut.ext_again`, counted from the walk's
    first record) with each queue's records of the data files before the walk's first, from the reput's start on
    (``earlier``: :func:`earlier_own_units`), counted first: as many more ext units the reput puts, each unit put
    back pointing that many further (:class:`store_format.dledger_crash_cut.ExtAgain`'s ``count`` and
    ``ordinals``).  A queue of ``reset`` (the 5.5.1 cut left it no file, max -1, the reput not set inside an entry:
    a parsed unit would go first, :func:`without_queues`; its earlier records' units,
    :func:`earlier_own_units`' third answer) gets the positions of its units put back from :func:`_reset_positions`
    (the walk's units of it in ``walk``'s last file, below ``to``; ``cq_size``: its file size)."""
    out = tuple(dataclasses.replace(a, count=a.count + n, ordinals=a.ordinals + n)
                for a in ext_again for n in (earlier.get((a.topic, a.queue_id), 0),))
    if not reset or walk is None:
        return out
    return tuple(dataclasses.replace(a, positions=_reset_positions(a, reset.get((a.topic, a.queue_id)), walk, to,
                                                                   cq_size))
                 if (a.topic, a.queue_id) in reset and len(a.ordinals) else a for a in out)


def _reset_positions(again: ExtAgain, rows: np.ndarray | None, walk: QueueTrack, to: int, cq_size: int
                     ) -> np.ndarray:
    """Where the reput puts the walk's units of a queue the 5.5.1 cut left with no file (max -1): from that empty
    state ``ConsumeQueue.putMessagePositionInfo`` takes each record the reput walks, the earlier files' (``rows``,
    those its check read: a refused record's file skipped to its end) first, then the walk's again; the first opens
    a file where its queue offset falls (``fillPreBlank`` before it), each later one is appended at the write
    position whatever its queue offset ("logic queue order maybe wrong") unless that offset lies below it (dropped)
    (:func:`store_format.consumequeue.assign_positions`).  So after records skipped the units put back sit below their
    queue offsets' positions.  ``again.ordinals`` index that record sequence (:func:`ext_before_walk`).

    Raises:
        UnsupportedConfigError: the walk's records of the queue not all in its last data file, their count not
            ``again.count``, or a unit put back the replay drops: not modelled."""
    q = walk.ids[(again.topic, again.queue_id)]
    last = walk.last_file()
    mine = last[(last[:, U_QUEUE] == q) & (last[:, U_KIND] == KIND_CQ) & (last[:, U_OFFSET] < to)]
    rows = rows[rows[:, U_KIND] == KIND_CQ] if rows is not None else mine[:0]
    both = np.concatenate([rows, mine])
    label = f"{again.topic}/{again.queue_id}"
    if q in walk.seen_before or len(both) != again.count:
        raise refusal(f"the queue {label}, with ext files, the cut leaving it no file, whose units the start's reput "
                      "puts back after the earlier files' records: its records not all in the walk's last data file")
    pos = _from_empty(both, cq_size)[again.ordinals]
    if (pos < 0).any():
        raise refusal(f"the queue {label}, with ext files, the cut leaving it no file: the start's reput drops a unit "
                      "it puts back (its queue offset below the write position), not modelled")
    return pos


def _from_empty(rows: np.ndarray, cq_size: int) -> np.ndarray:
    """The queue byte positions ``ConsumeQueue.putMessagePositionInfo`` gives ``rows`` (one queue's units, in reput
    order) from a queue with no file and max -1: the first opens a file where its queue offset falls
    (``fillPreBlank`` before it), each later one appended at the write position, -1 where it drops one (at or below
    the max, or its queue offset not 0 and below the write position):
    :func:`store_format.consumequeue.assign_positions`."""
    return assign_positions(np.zeros(len(rows), np.int64), rows[:, U_OFFSET], rows[:, U_END] - rows[:, U_OFFSET],
                            rows[:, U_KEY], cq_size, new_states(1))


def ext_anew(again: ExtAgain, parsed: tuple[ParsedUnit, ...], earlier: np.ndarray | None, walk: QueueTrack,
             to: int, cq_size: int) -> ExtAgain:
    """``again`` with its ``anew`` count: of a queue the 5.5.1 cut left with no file (max -1) that the reput set at
    2147483647 inside an entry writes anew from a message it parsed there (:func:`without_queues`), the units
    ``putMessagePositionInfo`` appends from that empty queue (:func:`_from_empty`) of those parsed messages' own units
    (``parsed``, in put order), then, after the earlier files' records it walks (``earlier``: rows of
    :func:`earlier_own_units`' third answer), of the walk's records again (its units of the queue in ``walk``'s last
    file, below ``to``): each holds the address of the ext unit ``putMessagePositionInfoWrapper`` put for it just
    before.  The earlier records are left out of the count (verify reads their units from its own rebuild, which
    writes the queue anew likewise).  ``again`` unchanged (``anew`` -1: not modelled) where the walk's records of the
    queue are not all in its last file or the rows do not number ``again.skip`` parsed and ``again.count`` walked."""
    name = (again.topic, again.queue_id)
    q = walk.ids.get(name)
    if q is None or q in walk.seen_before:
        return again
    mine = [u for u in parsed if (u.topic, u.queue_id) == name and u.own and not u.batch]
    first = np.zeros((len(mine), 5), np.int64)
    for k, u in enumerate(mine):
        first[k, [U_OFFSET, U_END, U_QUEUE, U_KEY, U_KIND]] = (u.offset, u.offset + u.size, -1, u.queue_offset, KIND_CQ)
    last = walk.last_file()
    walked = last[(last[:, U_QUEUE] == q) & (last[:, U_KIND] == KIND_CQ) & (last[:, U_OFFSET] < to)]
    between = earlier[earlier[:, U_KIND] == KIND_CQ] if earlier is not None else walked[:0]
    if len(first) != again.skip or len(between) + len(walked) != again.count:
        return again
    pos = _from_empty(np.concatenate([first, between, walked]), cq_size)
    mine_or_walked = np.ones(len(pos), bool)
    mine_or_walked[len(first):len(first) + len(between)] = False
    return dataclasses.replace(again, anew=int(((pos >= 0) & mine_or_walked).sum()))


def earlier_counter(st: StoreLocation, files: list[Segment], first: int, config: BrokerConfig,
                    committed: int) -> EarlierRecords:
    """Given a reput's start, :func:`earlier_own_units`' count per queue of its own records before ``files[first]``
    (where the reput's check goes on: :func:`store_format.dledger_crash_after.reput_goes_on` with the committed
    position ``committed``), for :func:`store_format.dledger_inside_mixed.mixed_disk_put_back`'s ext units, and a
    queue's units among those records (:meth:`EarlierRecords.units`)."""
    return EarlierRecords(st, files, first, config, committed)


class EarlierRecords:
    """The records a reput from before the walk's first data file ``files[first]`` walks there
    (:func:`earlier_own_units`), read once per reput's start (and queue): called, the count of each queue's own
    records; :meth:`units`, one queue's units (own and light) among them; :meth:`reads_old`, whether they lie in a
    converted store's old commitlog files."""

    def __init__(self, st: StoreLocation, files: list[Segment], first: int, config: BrokerConfig,
                 committed: int) -> None:
        self._args = (st, files, first, config)
        self._committed = committed
        self._alone = config.dledger_group_of_one
        self._read: dict[tuple[int, tuple[str, int] | None], tuple] = {}

    def _units(self, reput: int, queue: tuple[str, int] | None) -> tuple:
        key = (reput, queue)
        if key not in self._read:
            files = self._args[1]
            self._read[key] = earlier_own_units(
                *self._args[:3], reput, self._args[3],
                lambda k, at: reput_goes_on(files, k, at, self._committed, self._alone),
                reset=frozenset() if queue is None else frozenset({queue}))
        return self._read[key]

    def __call__(self, reput: int) -> dict[tuple[str, int], int]:
        return self._units(reput, None)[0]

    def reads_old(self, reput: int) -> bool:
        """Whether the reput from ``reput`` walks a converted store's old commitlog files."""
        st = self._args[0]
        return any(not seg.dledger and seg.end > reput for seg in st.segments)

    def units(self, reput: int, queue: tuple[str, int]) -> np.ndarray:
        """``queue``'s consume queue units (own and light, not batch) among the records the reput from ``reput``
        walks before the walk's first data file, in reput order: rows of commitlog offset, size and queue offset."""
        rows = self._units(reput, queue)[2].get(queue)
        if rows is None:
            return np.zeros((0, 3), dtype=np.int64)
        rows = rows[rows[:, U_KIND] != KIND_BATCH]
        return np.stack([rows[:, U_OFFSET], rows[:, U_END] - rows[:, U_OFFSET], rows[:, U_KEY]], 1)


def earlier_own_units(st: StoreLocation, files: list[Segment], first: int, reput: int, config: BrokerConfig,
                      goes_on: Callable[[int, int], bool], wanted: frozenset[tuple[str, int]] = frozenset(),
                      reset: frozenset[tuple[str, int]] = frozenset(),
                      parsed: list[tuple[int, tuple[tuple[int, int], ...]]] | None = None
                      ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], np.ndarray],
                                 dict[tuple[str, int], np.ndarray]]:
    """Per queue ``(topic, queue id)``, the records of its own consume queue (not a light or batch queue) that the
    reput walks from ``reput`` (an entry's start, or a record's in a converted store's old commitlog files, read as
    the base ``CommitLog`` wrote them, each ending in a blank) to ``files[first]``'s start, as ``doReput``'s message
    check (no CRC) reads them, a blank moving it to the next file, and so does a record it cannot read (a bad magic
    code) at ``at`` in data file ``files[k]`` where ``goes_on(k, at)``, and in an old file where
    :func:`_old_goes_on` says so (module docstring).  Also, of the queues of
    ``wanted``, those with a unit (own or light, not batch) of queue offset 0 among those records, with all their
    units there (rows of :data:`store_format.dledger_queue_track.UNIT_COLUMNS`, in reput order):
    ``ConsumeQueue.putMessagePositionInfo`` makes no queue offset check for such a unit, so a queue the walk wrote
    may append it (:func:`appended_before`; :func:`store_format.dledger_crash_old.dropped_before` drops the rest).
    Third, of the queues of ``reset`` (``QueueCut.reset``: the cut left them no file), all their units among those
    records (same rows), for :func:`ext_before_walk`.  ``parsed`` (a list, where the caller models them): a record
    refused in an old file where the DLedger check 48 bytes further parses records there goes on at the next file
    too, and ``(refused record's offset, the parsed records)`` is appended to it (:func:`_old_goes_on`); their units,
    dispatched there (after that file's records, before the next file's), count in the answers above
    (:func:`_parsed_rows`).

    Raises:
        UnsupportedConfigError: that check ends the reput elsewhere in those files (a record it refuses where
            ``goes_on`` does not say it goes on, or a file that does not end in a blank): not modelled there.
    """
    # a converted store's old commitlog files from the reput's start on (base CommitLog records: dledger_crash_old)
    old = [seg for seg in st.segments if not seg.dledger and seg.end > reput]
    segs = [*old, *files[:first]]
    k = next((n for n, f in enumerate(segs) if f.base <= reput < f.end), len(segs))
    track = QueueTrack(config.batch_topics)
    scratch = cl.Scratch()
    pos = reput - segs[k].base if k < len(segs) else 0
    zero: set[tuple[str, int]] = set()
    rows: dict[tuple[str, int], list[np.ndarray]] = {}
    more: dict[tuple[str, int], int] = {}   # the own units of the records parsed past a refused old record
    while k < len(segs):
        seg = segs[k]
        for window in checked_windows(st, seg, pos, config, scratch):
            res, halt, n_ok = window
            track.add(res, n_ok, seg.base)
        units = track.last_file()   # this file's units (numpy, per file)
        zero.update(track.names[int(q)] for q in np.unique(
            units[(units[:, U_KEY] == 0) & (units[:, U_KIND] != KIND_BATCH), U_QUEUE]))
        ids = [track.ids[n] for n in wanted | reset if n in track.ids]
        if ids and len(units):
            mine = units[np.isin(units[:, U_QUEUE], ids)]
            for q in np.unique(mine[:, U_QUEUE]).tolist():
                rows.setdefault(track.names[q], []).append(mine[mine[:, U_QUEUE] == q])
        at = (halt.offset - (ENTRY_HEADER_SIZE if seg.dledger else 0) if halt is not None
              else seg.base + res.state.bufpos)
        had = len(parsed) if parsed is not None else 0
        if halt is None and (res.stop == cl.Stop.BLANK or res.stop == cl.Stop.BAD and (
                goes_on(k - len(old), at) if seg.dledger else _old_goes_on(st, seg, at, config, parsed))):
            if parsed is not None and len(parsed) > had:   # dispatched there, after this file's records
                _parsed_rows(inside_parsed(st, [seg], tuple((a, b) for a, b in parsed[-1][1] if b > a), config),
                             wanted | reset, zero, rows, more)
            k, pos = k + 1, 0   # the next file (after a bad record: the rest of this one skipped)
            continue
        raise refusal(f"the start's reput from {reput}, before the data file {files[first].name} the recovery's "
                      f"walk started at, ends at {at} in {'data' if seg.dledger else 'old commitlog'} file {seg.name} "
                      "(its message check, no CRC), not at the next file (in a data file where it goes on depends on "
                      "the group's commits)")
    counts = {track.names[q]: n for q, n in track.own_units.items()}
    for name, n in more.items():
        counts[name] = counts.get(name, 0) + n
    def order(n: tuple[str, int]) -> tuple[int, tuple[str, int]]:   # the track's queue order, parsed-only last
        return track.ids.get(n, len(track.ids)), n
    return counts, {n: np.concatenate(rows[n]) for n in sorted(zero, key=order) if n in rows and n in wanted}, \
        {n: np.concatenate(rows[n]) for n in sorted(rows, key=order) if n in reset}


def _parsed_rows(units: tuple[ParsedUnit, ...], wanted: frozenset[tuple[str, int]], zero: set[tuple[str, int]],
                 rows: dict[tuple[str, int], list[np.ndarray]], more: dict[tuple[str, int], int]) -> None:
    """Adds the units of the records parsed 48 bytes past a refused old record (in reput order, each at its
    PHYSICALOFFSET field) to :func:`earlier_own_units`' answers: its own-unit counts (``more``), its queues holding a
    unit of queue offset 0 (``zero``) and the unit rows of the queues of ``wanted`` (``rows``; queue column -1)."""
    for u in units:
        name = (u.topic, u.queue_id)
        if u.own and not u.batch:
            more[name] = more.get(name, 0) + 1
        if not u.batch and u.queue_offset == 0:
            zero.add(name)
        if name in wanted:
            kind = KIND_BATCH if u.batch else KIND_CQ if u.own else KIND_LIGHT
            row = np.zeros((1, 5), np.int64)
            row[0, [U_OFFSET, U_END, U_QUEUE, U_KEY, U_KIND]] = (u.offset, u.offset + u.size, -1, u.queue_offset, kind)
            rows.setdefault(name, []).append(row)


def _old_goes_on(st: StoreLocation, seg: Segment, at: int, config: BrokerConfig,
                 parsed: list[tuple[int, tuple[tuple[int, int], ...]]] | None = None) -> bool:
    """Whether the reput, its base message check refusing the record at ``at`` in the old commitlog file ``seg`` (a
    bad magic code), goes on at the next file: ``DLedgerCommitLog.getData`` below ``dividedCommitlogOffset`` is the
    base ``CommitLog.getData``, the old file's bytes to its read position (its size: loaded whole), no committed
    position cutting them, and ``DLedgerCommitLog.checkMessageAndReturnSize`` there fails (size -1) unless the
    bytes 48 further parse (:func:`store_format.dledger_crash_old.reput_inside_old_file`), so ``doReput`` jumps to
    that file's end (``reputFromOffset += result.getSize() - readSize``).  A message or a blank's empty request
    parsed 48 bytes further is dispatched first (a message's unit at its PHYSICALOFFSET field, the request's
    ``commitLogOffset``; ``doReput`` moves on by its size + 48, a blank's by 48, its next check 8 bytes further),
    then the checks go on from there by the same rule to that file's end
    (:func:`store_format.dledger_reput_inside.reput_inside_entry`): appended to ``parsed`` with ``at`` (True), or
    refused without it (after a queue cut: raises UnsupportedConfigError).  With ext files the units the reput puts
    back into a queue the 5.5.1 cut left with no file land at its write position after the records it skipped
    (:func:`_reset_positions`)."""
    with st.reader(seg) as r:
        def read(pos: int, n: int) -> bytes:
            return bytes(r(pos - seg.base, min(n, seg.end - pos)))
        gone_on, records = reput_inside_old_file(read, at, file_base=seg.base, file_size=seg.size,
                                                 v55=config.brokerVersion == "5.5")
    if records and parsed is not None and gone_on == seg.end:
        parsed.append((at, records))
        return True
    if records:   # a caller that counts units (earlier_counter: a cut's ext units)
        raise refusal(f"its start's reput, from before the walk's data file, refuses the record at {at} in old "
                      f"commitlog file {seg.name} and parses {len(records)} record(s) 48 bytes further "
                      "(DLedgerCommitLog.checkMessageAndReturnSize), whose units these counts leave out")
    return gone_on == seg.end


def appended_before(st: StoreLocation, segs: list[Segment], earlier: dict[tuple[str, int], np.ndarray],
                    walk: QueueTrack, process_offset: int, config: BrokerConfig,
                    why: Callable[[str], Exception], parsed: tuple[ParsedUnit, ...] = (),
                    on_disk: Mapping[tuple[str, int], OnDiskCut] | None = None
                    ) -> tuple[Placed, dict[tuple[str, int], np.ndarray]]:
    """Where the reput set at 2147483647 and gone on before the walk's data file puts the units of the queues the
    walk wrote whose records there hold one of queue offset 0 (``earlier``: those records' units per queue,
    :func:`earlier_own_units`), and what of the rebuild's units of them the broker's queue does not hold.

    Each such queue kept ``fillPreBlank`` units only after the cut (every unit of the walk's, all in its last data
    file, past ``processOffset``): its max 2147483647 (``offset + size`` of a ``fillPreBlank`` unit) and its write
    position where the walk's first unit went.  ``ConsumeQueue.putMessagePositionInfo`` runs for each record the
    reput walks, the earlier files' first, then the walk's again: a unit at or below the max is dropped, one whose
    queue offset is not 0 and lies below the write position is dropped ("Build consume queue repeatedly"), any other
    is appended at the write position, whatever its queue offset (queue offset 0: no check).  The rebuild wrote the
    walk's units as the walk put them (its own dispatch drops the earlier records, their ends below the walk's
    max): replayed both ways (:func:`store_format.consumequeue.assign_positions`), the broker's units that differ go
    in ``Placed.units`` (tags codes read from their records in ``segs``, old commitlog and data files), the
    rebuild's units the broker does not hold in ``Placed.rebuild_units`` (zeros: ``pipelines.restart_cut.apply_cut``).
    ``parsed``: the units of the messages the reput's check parsed where it was set at 2147483647
    (:func:`store_format.dledger_inside_units.parsed_units`, in dispatch order), dispatched before it goes on: those
    of such a queue (own units or light ones, whatever the queue's) come first in the replay, each with its own
    counter's queue offset, holding their own tags codes (with ext files an own unit the address of its ext unit,
    put before the earlier files' records' ones).  The files the
    replay creates past the rebuild's last (``getLastMappedFile`` on a full file, before the queue offset check may
    drop the unit) go in ``Placed.opened``.  Also, per such queue, the commitlog offsets of the walk's units the
    broker's queue does not hold (dropped: ``QueueCut.lost``).  ``on_disk`` (``verify``: ``QueueCut.held_cut``):
    per queue on disk before the walk, the state ``truncateDirtyLogicFiles`` leaves its files in after
    ``ConsumeQueue.recover`` loaded them and the walk's units went onto them; such a queue is replayed the same way
    when that state is the one the walk alone leaves (max 2147483647, a file staying, the write position at the
    walk's first unit; checked with a file of one ``fillPreBlank`` unit on disk, and with the walk's first unit after
    it too: the walk skips that unit, the cut takes it).

    Raises:
        the exception ``why(reason)`` gives: a queue with batch units, one on disk before the walk whose files the
        cut leaves in another state, a walk unit not cut, or the rebuild's units in a file the broker's replay does
        not open (a guard): not modelled.
    """
    units: list[InsideUnit] = []
    stale: list[tuple[str, int, int]] = []
    opened: list[tuple[str, int, int]] = []
    lost: dict[tuple[str, int], np.ndarray] = {}
    size = config.cq_file_size
    for name, rows in sorted(earlier.items()):
        q = walk.ids.get(name, -1)
        last = walk.last_file()
        mine = last[last[:, U_QUEUE] == q]
        kind = int(mine[0, U_KIND]) if len(mine) else KIND_BATCH   # its own units, light ones or both (mixed)
        # the units of the messages parsed where the reput was set that go to it, own or light ones: first
        first = [u for u in parsed if (u.topic, u.queue_id) == name and not u.batch]
        pre_kind = np.array([KIND_CQ if u.own else KIND_LIGHT for u in first], np.int64)
        mixed = bool((mine[:, U_KIND] != kind).any() or (rows[:, U_KIND] != kind).any() or (pre_kind != kind).any())
        if q < 0 or q in walk.seen_before or kind == KIND_BATCH \
                or (mixed and not np.isin(np.r_[mine[:, U_KIND], rows[:, U_KIND]], (KIND_CQ, KIND_LIGHT)).all()) \
                or (mine[:, U_OFFSET] < process_offset).any() or mine[0, U_KEY] == 0:
            raise why(f"{name[0]}/{name[1]}, a queue the walk wrote whose units are not own or light ones all in its "
                      "last data file past processOffset (the cut leaving it fillPreBlank units only)")
        # a record's own and light unit both in it come in dispatch order (its own unit, then
        # multiDispatchLmqQueue's: QueueTrack.add, parsed_units), each by the same rule, a record of the earlier files
        # as the walk's or a parsed one (the light one then at the max its own unit set, dropped)
        if first:   # the parsed units first (putMessagePositionInfo from the cut's state), then the earlier records
            pre = np.zeros((len(first), rows.shape[1]), np.int64)
            pre[:, U_OFFSET] = [u.offset for u in first]
            pre[:, U_END] = [u.offset + u.size for u in first]
            pre[:, U_KEY] = [u.queue_offset for u in first]   # each its own counter's (own or light queue offset)
            pre[:, U_KIND], pre[:, U_QUEUE] = pre_kind, rows[0, U_QUEUE]
            rows = np.concatenate([pre, rows])
        ours = new_states(1)
        pos_r = assign_positions(np.zeros(len(mine), np.int64), mine[:, U_OFFSET], mine[:, U_END] - mine[:, U_OFFSET],
                                 mine[:, U_KEY], size, ours)
        cut = new_states(1)   # the cut's: fillPreBlank units up to the walk's first unit, max 2147483647
        w = int(pos_r[0])
        # a queue on disk before the walk (verify): ConsumeQueue.recover loaded its files, the walk's units went onto
        # them, the cut took units at or past processOffset; the replay below holds when that left the state the walk
        # alone leaves (max 2147483647, a file staying, its write position at the walk's first unit)
        if name in walk.keep_queues and tuple((on_disk or {}).get(name, ()))[:3] != (BLANK_MAX, True, w):
            raise why(f"{name[0]}/{name[1]}, a queue on disk before the walk whose files the cut leaves other than "
                      f"fillPreBlank units up to the walk's first unit (max 2147483647, write position {w}: "
                      f"{tuple((on_disk or {}).get(name, ()))[:3]})")
        cut[0, [Q_MAX_PHYS, Q_WRITE_POS, Q_FIRST_FILE, Q_BLANK_UNTIL, Q_LAST_FILE]] = \
            (BLANK_MAX, w, w - w % size, w, w - w % size)
        both = np.concatenate([rows, mine])
        pos_b = assign_positions(np.zeros(len(both), np.int64), both[:, U_OFFSET], both[:, U_END] - both[:, U_OFFSET],
                                 both[:, U_KEY], size, cut)
        if cut[0, Q_LAST_FILE] < ours[0, Q_LAST_FILE]:
            raise why(f"{name[0]}/{name[1]}, whose units the rebuild puts into files the broker's replay does not open")
        # getLastMappedFile creates the next file where the last is full, before the queue offset check may drop the
        # unit: the files past the rebuild's last one that the broker's replay opens (zeros but for its units there)
        opened += [(*name, f) for f in range(int(ours[0, Q_LAST_FILE]) + size, int(cut[0, Q_LAST_FILE]) + 1, size)]
        # with ext files: the k-th own record the reput walks for the queue (earlier files' first) gets the ext unit
        # after the walk's ones (ConsumeQueueExt.put before putMessagePositionInfo, dropped or not), its unit that
        # address; a light unit gets none (multiDispatchLmqQueue: putMessagePositionInfo with the request's tags code)
        own = both[:, U_KIND] == KIND_CQ
        ext = ext_addresses(walk.own_units.get(q, 0) + np.maximum(np.cumsum(own) - 1, 0),
                            config.mappedFileSizeConsumeQueueExt) if config.enableConsumeQueueExt else None
        theirs = {int(p): (int(o), int(e), k) for k, (p, o, e) in enumerate(zip(pos_b, both[:, U_OFFSET],
                                                                                both[:, U_END])) if p >= 0}
        held = {int(p): int(o) for p, o in zip(pos_r, mine[:, U_OFFSET]) if p >= 0}
        stale += [(*name, p) for p in sorted(held) if p not in theirs]
        lost[name] = np.setdiff1d(mine[:, U_OFFSET], [o for o, _e, _k in theirs.values()])
        for p, (o, e, k) in sorted(theirs.items()):
            if held.get(p) != o or ext is not None:   # with ext files the address differs even for the same record
                units.append(InsideUnit(*name, p, o, e - o, int(ext[k]) if ext is not None and own[k] else
                                        first[k].tags_code if k < len(first) else
                                        _tags_code(st, segs, name, o, e, config, both[k, U_KIND] == KIND_CQ)))
    return Placed(units=tuple(units), opened=tuple(opened), rebuild_units=tuple(stale)), lost


def _tags_code(st: StoreLocation, segs: list[Segment], name: tuple[str, int], start: int, end: int,
               config: BrokerConfig, own: bool) -> int:
    """The tags code of queue ``name``'s own unit (``own``; else its light unit) of the record at ``start`` to
    ``end`` (in a file of ``segs``), as ``CommitLogDispatcherBuildConsumeQueue`` hands it over."""
    seg = next(s for s in segs if s.base <= start < s.end)
    with st.reader(seg) as r:
        def read(at: int, n: int) -> bytes:
            return bytes(r(at - seg.base, min(n, seg.end - at)))
        return next(u.tags_code for u in parsed_units(read, ((start, end),), config)
                    if u.own == own and (u.topic, u.queue_id) == name)


def appended_cut(st: StoreLocation, segs: list[Segment], cut: QueueCut, zero: dict[tuple[str, int], np.ndarray],
                 walk: QueueTrack, process_offset: int, config: BrokerConfig, ext_again: tuple[ExtAgain, ...],
                 where: str) -> tuple[QueueCut, tuple[ExtAgain, ...]]:
    """``cut`` with :func:`appended_before`'s units of the queues of ``zero`` (:func:`earlier_own_units`' second
    answer) as ``QueueCut.before_placed``; a queue a message parsed where the reput was set went to left out of
    ``QueueCut.inside_placed`` (:func:`without_queues`: :func:`appended_before` replays it, its parsed units first);
    ``ext_again`` without the addresses of those queues' units put back (:func:`appended_before` gives each unit of
    them its own, a parsed unit's first); ``Placed.ext_put`` of the parsed units kept (``verify``'s ext units put;
    ``pipelines.verify.files_restart`` counts those the replay appends as pointing at theirs); ``QueueCut.lost`` of
    those queues the walk's units the broker's does not hold (``verify``: the earlier files' records appended are
    not lost, ``pipelines.verify.files_restart``).  ``where``: the refusals' text up to the queue.

    Raises:
        UnsupportedConfigError: :func:`appended_before`'s refusals.
    """
    shared = (cut.inside_placed.parsed_queues() | {(w.topic, w.queue_id) for w in cut.inside_placed.whole}) \
        & set(zero)
    parsed = inside_parsed(st, segs, cut.inside_records, config) if shared else ()
    placed, lost = appended_before(st, segs, zero, walk, process_offset, config, lambda why: refusal(
        f"{where}{why} would be appended (putMessagePositionInfo checks no queue offset 0), not modelled"), parsed,
        cut.held_cut)
    # the parsed units' ext units stay counted (verify: ext units put, those pointed at by QueueCut.before_placed)
    inside = dataclasses.replace(without_queues(cut.inside_placed, frozenset(shared)),
                                 ext_put=cut.inside_placed.ext_put)
    return dataclasses.replace(cut, inside_placed=inside, before_placed=placed, lost={**cut.lost, **lost}), \
        tuple(dataclasses.replace(a, positions=a.positions[:0], ordinals=a.ordinals[:0], refused="")
              if (a.topic, a.queue_id) in zero else a for a in ext_again)


def inside_parsed(st: StoreLocation, segs: list[Segment], records: tuple[tuple[int, int], ...],
                  config: BrokerConfig) -> tuple[ParsedUnit, ...]:
    """The units of ``records`` (``QueueCut.inside_records``: the messages the reput's check parsed where it was
    set, in a file of ``segs``), as :func:`store_format.dledger_inside_units.parsed_units` reads them."""
    if not records:
        return ()
    seg = next(s for s in segs if s.base <= records[0][0] < s.end)
    with st.reader(seg) as r:
        def read(at: int, n: int) -> bytes:
            return bytes(r(at - seg.base, min(n, seg.end - at)))
        return parsed_units(read, records, config)


def without_queues(placed: Placed, names: frozenset[tuple[str, int]]) -> Placed:
    """``placed`` (:func:`store_format.dledger_inside_units.place_inside`'s) without what it says of the queues of
    ``names``: consume queues the 5.5.1 cut left with no file (max -1) that a message parsed where the reput was set
    at 2147483647 writes anew, when the reput then goes on before the walk's data file.  ``putMessagePositionInfo``
    writes each such queue from the parsed unit (a new file, ``fillPreBlank`` units up to its queue offset), then
    puts the earlier files' records and the walk's ones again by its rule (a unit at or below the max dropped, one
    whose queue offset is not 0 below the write position dropped, any other appended at the write position): so does
    the rebuild's own dispatch, which starts those queues empty again at the parsed records
    (``StoreLocation.queue_reset``), so ``pipelines.restart_cut.apply_cut`` leaves them as it wrote them."""
    def keep(rows: tuple) -> tuple:   # rows of (topic, queue id, ...) tuples
        return tuple(r for r in rows if (r[0], r[1]) not in names)
    return dataclasses.replace(
        placed, units=tuple(u for u in placed.units if (u.topic, u.queue_id) not in names),
        opened=keep(placed.opened), rebuild_units=keep(placed.rebuild_units), blank_until=keep(placed.blank_until),
        ext_put=keep(placed.ext_put),
        whole=tuple(w for w in placed.whole if (w.topic, w.queue_id) not in names))
