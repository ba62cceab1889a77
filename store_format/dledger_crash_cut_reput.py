"""What the start's reput after ``truncateDirtyLogicFiles(processOffset)`` puts back into the queues the 5.x DLedger
crash recovery's walk wrote: the last steps of :func:`store_format.dledger_crash_cut.cut_queues` (its module docstring
tells the whole sequence and the rules).

Mirrors rocketmq-store 5.5.1 ``DefaultMessageStore.ReputMessageService.doReput``'s dispatch of the records from the
reput's start to the log's end: ``ConsumeQueue.putMessagePositionInfoWrapper``/``putMessagePositionInfo`` (a unit at or
below its queue's max dropped, every other appended at the write position; in a queue left with no file, a new file
where the unit's own offset falls, ``fillPreBlank`` before it: :func:`put_back_units`, with the records past where
the walk ended, :func:`past_walk_units`), ``BatchConsumeQueue.putBatchMessagePositionInfo``, a queue holding a
record's own units and light ones (``multiDispatchLmqQueue``) replayed whole (:mod:`store_format.dledger_inside_mixed`),
and ``ConsumeQueueExt.put`` before each of a record's own units is put or dropped (:func:`ext_reput`,
:func:`reput_ext_units`).  5.3.3's the same.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from .batchconsumequeue import BCQ_UNIT_SIZE
from .consumequeue import Q_WRITE_POS, assign_positions, loaded_state
from .dledger_crash_cut_state import TruncatedQueues, WalkedPositions
from .dledger_inside_mixed import EarlierOwn, OnDiskCut, earlier_reput_refusal, mixed_disk_put_back, mixed_put_back
from .dledger_inside_state import QueueFiles
from .dledger_inside_units import Placed, Tags
from .dledger_inside_walked import cut_refusal
from .dledger_queue_track import KIND_BATCH, KIND_CQ, U_END, U_KEY, U_KIND, U_OFFSET, U_QUEUE, QueueTrack
from .layout import CQ_UNIT_SIZE


@dataclasses.dataclass(frozen=True)
class QueueMove:
    """A cut queue whose units the start's reput puts back only in part (module docstring): the ``count``
    units that sat at queue byte position ``source`` in the recovery's queue are appended from ``target`` on
    (the cut's write position: the first cut unit's own position); ``blank_from`` >= 0 for a queue the cut
    emptied: then ``target == source``, and the new file holds ``fillPreBlank`` units from ``blank_from``
    (its start) up to ``target``.  Files from the first one past ``target`` on are new (zeros where no
    unit is put); the file holding ``target``, when it is not a file start, keeps its other bytes.
    ``batch``: a batch consume queue (``batchconsumequeue/``, 46-byte units; never ``blank_from``).
    ``zero_from`` >= 0: the queue position from which the broker never wrote the file holding ``target`` (the
    units of records past where the recovery's walk ended, which only the start's reput dispatches), whose bytes
    from there are zeros but for the units moved in.  ``units``: the ``count`` units ``(commitlog offset, size, tags
    code)`` written from their records instead (``source`` -1): among them one the walk dropped."""
    topic: str
    queue_id: int
    source: int
    target: int
    count: int
    blank_from: int = -1
    batch: bool = False
    zero_from: int = -1
    units: tuple[tuple[int, int, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class ExtAgain:
    """An ext queue's share of the start's reput (``enableConsumeQueueExt``):
    ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``, at the ext
    write position: after the ``before`` units the recovery's walk put, one per record) for each of the
    queue's ``count`` records the reput walks (the last ``count`` of those ``before``: the same unit again),
    before ``putMessagePositionInfo`` drops the unit or puts it back; the unit put back holds that new ext
    unit's address.  ``positions``: the queue byte positions of the units put back, ``ordinals``: for each,
    which of the ``count`` records it is (0: the first the reput walks); ``skip``: of the ``before`` units, the
    last ones the messages parsed where the reput was set put (after the walk's: the walk's units of those
    records end ``skip`` units before ``before``); ``anew`` >= 0: a queue the 5.5.1 cut left with no file that the
    reput set inside an entry writes anew from a message it parsed there, of that message's own units and the walk's
    records, those ``putMessagePositionInfo`` appends from the empty queue, each holding the address of its new ext
    unit (the earlier files' records between them left out: :func:`store_format.dledger_crash_before.ext_anew`);
    ``walked``: the walk's own units of the queue, rows (end, queue offset) in walk order."""
    topic: str
    queue_id: int
    before: int
    count: int
    positions: np.ndarray
    ordinals: np.ndarray
    skip: int = 0
    # ext_reput's refusal of a queue whose units put back include light ones, raised by ext_refused unless a replay
    # of the queue takes their place (store_format.dledger_crash_before.appended_cut)
    refused: str = ""
    # a walk ended early (its check failing at a record the reput's check reads: ext_past): the queue's own records
    # past the walk's end that the reput appends, one ext unit put for each, each unit pointing at its own
    past: int = 0
    anew: int = -1
    # (a queue the store held: the units the walk appends past its max, pipelines.verify.ext_reput)
    walked: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 2), np.int64))


@dataclasses.dataclass(frozen=True)
class ReputRun:
    """The start's reput as :func:`store_format.dledger_crash_cut.cut_queues` set it: from ``reput`` to ``end`` after
    the cut at ``process_offset`` of the queues the walk filled (``track``); ``inside_from`` >= 0 where it was set
    inside an entry; ``after``: the units of the records past where the walk ended that it dispatches
    (:attr:`PastWalk.after`); ``ext``: ``enableConsumeQueueExt`` with ext files of ``ext_file_size``; the rest as
    ``cut_queues`` takes them."""
    track: QueueTrack
    process_offset: int
    reput: int
    end: int
    inside_from: int
    cq_file_size: int
    bcq_file_size: int
    ext: bool
    ext_file_size: int
    reset_emptied: bool
    after: np.ndarray | None
    on_disk: dict[tuple[str, int], OnDiskCut] | None
    tags: Tags | None
    ext_held: Mapping[tuple[str, int], int] | None
    ext_earlier: EarlierOwn | None
    # per queue on disk before the walk: max and write position as ConsumeQueue.recover left them (QueuesOnDisk)
    loaded_at: Mapping[tuple[str, int], tuple[int, int]] | None = None


@dataclasses.dataclass
class PastWalk:
    """The records past the walk's end that the reput dispatches (:func:`past_walk_units`): ``after``, their units from
    the reput's start on; per cut queue they follow, ``own``: its rows' own queue offsets (before
    :func:`appended_keys`) and ``zero_from``: the queue byte position of the first of them."""
    after: np.ndarray | None
    own: dict[int, np.ndarray]
    zero_from: dict[int, int]


@dataclasses.dataclass
class PutBack:
    """What the reput puts back (:func:`put_back_units`), the fields of
    :class:`store_format.dledger_crash_cut.QueueCut` of those names; ``put_back``: per queue, the commitlog offsets and
    queue byte positions of the units put back; ``placed``: with the mixed queues replayed whole added."""
    dropped: list[tuple[str, int, int]]
    batch_dropped: list[tuple[str, int, int]]
    lost: dict[tuple[str, int], np.ndarray]
    moves: list[QueueMove]
    put_back: dict[int, tuple[np.ndarray, np.ndarray]]
    restored: int
    placed: Placed


def past_walk_units(per_queue: dict[int, np.ndarray], after: np.ndarray | None, reput: int,
                    walk_end: int) -> PastWalk:
    """The records past where the walk ended (``after``) that ``doReput`` dispatches from ``reput`` on
    (``putMessagePositionInfo`` appending each at its queue's write position): a queue the cut took units of gets them
    after its cut ones, one suffix (``per_queue`` extended in place, keyed by :func:`appended_keys`)."""
    zero_from: dict[int, int] = {}
    own: dict[int, np.ndarray] = {}   # per cut queue, its rows' own queue offsets (before appended_keys)
    if after is not None and reput > walk_end:
        # the records from walk_end to the reput's start are never dispatched (DLedgerCrash.gap); from the log's
        # end on, nothing past the walk is
        after = after[after[:, U_OFFSET] >= reput]
    if after is not None and len(after):
        for q in np.unique(after[:, U_QUEUE]):
            rows = after[after[:, U_QUEUE] == q]
            if int(q) in per_queue:   # a queue the cut took units of: its units past the walk follow them
                own[int(q)] = np.concatenate([per_queue[int(q)][:, U_KEY], rows[:, U_KEY]])
                rows = appended_keys(rows, int(per_queue[int(q)][-1, U_KEY]))
                per_queue[int(q)] = np.concatenate([per_queue[int(q)], rows])
                zero_from[int(q)] = int(rows[0, U_KEY]) * (BCQ_UNIT_SIZE if rows[0, U_KIND] == KIND_BATCH
                                                           else CQ_UNIT_SIZE)
    return PastWalk(after, own, zero_from)


def put_back_units(run: ReputRun, walk: WalkedPositions, cut: TruncatedQueues, past: PastWalk,
                   placed: Placed) -> PutBack:
    """Per cut queue, the suffix of its cut units ``putMessagePositionInfo`` (``putBatchMessagePositionInfo``) puts
    back from the reput's start (:class:`PutBack`): all (each where the walk had it), none, or some, appended at the
    write position (:class:`QueueMove`; in a queue the cut emptied, a new file where the first falls, ``fillPreBlank``
    before it); an ordinary consume queue's (no light units beside own ones) placed by
    :func:`store_format.consumequeue.assign_positions` from the state the cut left (:func:`_reput_positions`; those
    put back written from their records where the walk dropped one of them, :func:`_written_units`, with ext files
    refused); an ordinary queue the messages parsed where
    the reput was set go to, written whole
    (``placed.whole``); a queue holding a record's own units and light ones replayed whole (:func:`_disk_mixed_whole`,
    :func:`_mixed_whole`) or refused."""
    track, reput, end, process_offset = run.track, run.reput, run.end, run.process_offset
    per_queue, mixed_dropped, max_after = cut.per_queue, cut.mixed_dropped, cut.max_after
    own, zero_from = past.own, past.zero_from
    dropped: list[tuple[str, int, int]] = []
    batch_dropped: list[tuple[str, int, int]] = []
    lost: dict[tuple[str, int], np.ndarray] = {}
    moves: list[QueueMove] = []
    put_back: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # per queue: offsets and positions of units put back
    restored = 0
    whole = {(w.topic, w.queue_id): w for w in placed.whole}   # ordinary queues replayed whole (apply_cut)
    key_before = _keys_before(track, walk, process_offset)
    for q, rows in per_queue.items():
        batch = rows[0, U_KIND] == KIND_BATCH
        if (w := whole.get(track.names[q])) is not None:   # no file cut nor moved here: apply_cut writes them whole
            restored += take_whole(w, rows, lost, track.names[q])
            continue
        again = (rows[:, U_OFFSET] >= reput) & (rows[:, U_OFFSET] < end)
        at = None   # an ordinary consume queue's: where putMessagePositionInfo puts each unit (-1: dropped)
        if not batch and q not in walk.mixed and q not in walk.disk_mixed:
            walk_pos, at = _reput_positions(run, cut, q, rows, own.get(q, rows[:, U_KEY]), again,
                                            *key_before.get(q, (None, False)))
            again = at >= 0
        elif not batch:   # putBatchMessagePositionInfo drops offset <= max: no cut unit (max < processOffset)
            again &= rows[:, U_END] > max_after.get(q, -1)
        n = int(again.sum())
        if q in walk.disk_mixed and (run.inside_from >= 0 or n or q in walk.both_disk):
            w = _disk_mixed_whole(run, q)
            placed = dataclasses.replace(placed, whole=placed.whole + (w,))
            restored += take_whole(w, rows, lost, track.names[q])
            continue
        if q in walk.both_disk:
            raise cut_refusal(f"the queue {'/'.join(map(str, track.names[q]))} holding a record's own units and light "
                              "ones in the walk's earlier data files, on disk before the walk, no parsed unit going to "
                              "it, the walk's units not dispatched onto its files (a guard: verify keeps them)")
        if at is not None and not again[len(rows) - n:].all():   # a queue offset falling back below the write position
            raise cut_refusal(f"the queue {'/'.join(map(str, track.names[q]))} whose cut units the reput puts back "
                              "not as one suffix (a queue offset below the write position after one appended)")
        assert again[len(rows) - n:].all(), "the units put back are the queue's last ones"
        if q in walk.mixed and 0 < n < len(rows):
            w = _mixed_whole(run, walk, cut, q, rows, again)
            placed = dataclasses.replace(placed, whole=placed.whole + (w,))
            restored += take_whole(w, rows, lost, track.names[q])
            continue
        unit, size = (BCQ_UNIT_SIZE, run.bcq_file_size) if batch else (CQ_UNIT_SIZE, run.cq_file_size)
        pos = rows[:, U_KEY] * unit
        if at is not None:   # where the walk put them (_reput_positions)
            pos = walk_pos
        if n == len(rows) and q in mixed_dropped:
            # every cut unit of a mixed queue dispatched again, none parsed there: from the state the cut left, the
            # walk's own before its first cut unit (write position and max), putMessagePositionInfo does as the walk
            # did, each appended one back where it was, each one the walk dropped dropped again (no queue holds it)
            walked = walk.mixed[q][0][len(walk.mixed[q][0]) - n:] >= 0
            restored += int(walked.sum())
            put_back[q] = (rows[walked, U_OFFSET], pos[walked])
            lost[track.names[q]] = rows[~walked, U_OFFSET]
            continue
        restored += n
        # where the units put back go: an ordinary queue's as putMessagePositionInfo put them (at), else appended
        # from the write position the cut left (a batch queue the cut emptied: 0, its first unit's)
        appended = pos[pos >= 0]   # the walk's appended units (_reput_positions: -1 where it dropped one)
        first, last = (int(appended[0]), int(appended[-1])) if len(appended) else (-1, -1)
        to = at[len(rows) - n:] if at is not None else first + unit * np.arange(n, dtype=np.int64)
        # a unit put back that the walk dropped: those put back written from their records, not read where the walk
        # had them (_written_units)
        written = _written_units(run, q, rows[len(rows) - n:]) if n and (pos[len(rows) - n:] < 0).any() else ()
        if n == len(rows) and not written:   # each put back: no move (at other positions than the walk's only in a
            # queue on disk before the walk, which --as-restart never has and whose counts they leave alone)
            put_back[q] = (rows[:, U_OFFSET], to if at is not None else pos)
            continue
        name = track.names[q]
        if n < len(rows):
            lost[name] = rows[:len(rows) - n, U_OFFSET]
        source = -1 if written or not n else int(pos[len(rows) - n])
        if n == 0:
            gone_from = first
        elif cut.emptied(q):   # the cut emptied the queue
            # the new file starts where the first unit put back falls by its own queue offset (fillPreBlank); the
            # walk's files it does not write again go
            target = int(to[0])
            blank_from = target - target % size
            moves.append(QueueMove(*name, source, target, n, blank_from, units=written))
            put_back[q] = (rows[-n:, U_OFFSET], to)
            new_files = range(blank_from, int(to[-1]) + 1, size)
            dropped += [(*name, f) for f in range(first - first % size, last + 1, size) if first >= 0 and
                        f not in new_files]
            continue
        else:   # appended at the write position
            moves.append(QueueMove(*name, source, int(to[0]), n, batch=bool(batch), zero_from=zero_from.get(q, -1),
                                   units=written))
            put_back[q] = (rows[-n:, U_OFFSET], to)
            gone_from = int(to[-1]) + unit
        start = -(-gone_from // size) * size   # the first file that starts at or past it
        (batch_dropped if batch else dropped).extend(
            (*name, f) for f in range(start, last - last % size + 1, size))
    for name, w in whole.items():   # its records past the walk's end dropped, its cut units none went on past
        if w.lost:
            lost[name] = np.union1d(lost.get(name, np.zeros(0, np.int64)), np.asarray(w.lost, dtype=np.int64))
    return PutBack(dropped, batch_dropped, lost, moves, put_back, restored, placed)


def _keys_before(track: QueueTrack, walk: WalkedPositions, process_offset: int) -> dict[int, tuple[int, bool]]:
    """Per queue, the queue offset of the walk's last unit below ``process_offset``: in its last data file, else in its
    earlier ones (``QueueTrack.last_before``, ``light_before``: the later of the two; the cut takes units of the last
    file only, so every unit there lies below it); with it, whether that one's queue offset is one past the walk's
    unit before it in the last data file (or, the only one there, in the earlier ones)."""
    out = {q: (key, False) for q, (key, _end) in sorted({**track.light_before, **track.last_before}.items())}
    for q in set(track.last_before) & set(track.light_before):
        out[q] = (max(track.last_before[q], track.light_before[q], key=lambda r: r[1])[0], False)
    kept = walk.units[walk.units[:, U_OFFSET] < process_offset]
    order = np.argsort(kept[:, U_QUEUE], kind="stable")   # each queue's units in walk order, queue after queue
    queues, keys = kept[order, U_QUEUE], kept[order, U_KEY]
    last = np.flatnonzero(np.r_[queues[1:] != queues[:-1], True]) if len(kept) else np.zeros(0, np.int64)
    first = np.r_[0, last[:-1] + 1] if len(last) else last
    for q, i, lo in zip(queues[last].tolist(), last.tolist(), first.tolist()):
        before = int(keys[i - 1]) if i > lo else out[q][0] if q in out else None
        out[q] = (int(keys[i]), before is not None and int(keys[i]) == before + 1)
    return out


def _reput_positions(run: ReputRun, cut: TruncatedQueues, q: int, rows: np.ndarray, queue_offsets: np.ndarray,
                     dispatched: np.ndarray, key_before: int | None, follows: bool) -> tuple[np.ndarray, np.ndarray]:
    """An ordinary cut queue's units (``rows``, commitlog order; ``queue_offsets``: each one's own queue offset): where
    the walk's ``ConsumeQueue.putMessagePositionInfo`` put them, and where the reput's puts those it dispatches
    (``dispatched``), -1 where it drops one or does not reach it.  Both :func:`store_format.consumequeue.
    assign_positions` (each appended at the write position whatever queue offset it holds, "logic queue order maybe
    wrong" only logged; one whose queue offset is not 0 and whose ``* 20`` lies below the write position dropped,
    "Build consume queue repeatedly"): the walk's from the write position its unit before them left (``key_before``:
    that unit's queue offset, in any of its data files, :func:`_keys_before`; it at its own slot, the write position
    one past it, whatever queue offset the first cut unit holds), else from the first one's own position; the reput's
    from the state the cut left (:func:`store_format.consumequeue.loaded_state`): the max (below every cut unit where
    a unit or a file stays; ``processOffset``, 2147483647 after ``fillPreBlank`` units only), the write position (a
    file of the queue on disk before the walk that the cut left: the one it left there; else where the walk's first
    cut unit went or would have gone), a queue the cut left no file starting at its first unit's own position
    (``fillPreBlank`` before it).  A queue on disk before the walk with no walk unit before them (``run.on_disk``):
    the walk's from the max and write position ``ConsumeQueue.recover`` gave its files before the walk
    (``run.loaded_at``; a kept file of zeros: max -1, that file's start), not from the state the cut leaves (which a
    cut deleting the files or reading an older file of zeros moves elsewhere).

    The walk's position is -1 where it dropped one; the reput drops that one too unless its own write position lies
    lower, then it puts it back (:func:`put_back_units` writes that unit from its record).

    Raises:
        UnsupportedConfigError: the first one's queue offset is not one past the walk's unit before it, and that one's
            not one past the walk's unit before it (``follows``, :func:`_keys_before`: its own slot is not read)."""
    if key_before is not None and key_before + 1 != int(queue_offsets[0]) and not follows:
        raise cut_refusal(f"the queue {'/'.join(map(str, run.track.names[q]))} whose first cut unit's queue offset is "
                          "not one past the walk's unit before it, that one's not one past the walk's unit before it "
                          "either (where the walk put it is not read)")
    ends = rows[:, U_END] - rows[:, U_OFFSET]
    held = (run.on_disk or {}).get(run.track.names[q])
    # the walk's write position before its first cut unit: one past its unit before them
    walk_state = loaded_state(-1, (int(queue_offsets[0]) if key_before is None else key_before + 1) * CQ_UNIT_SIZE,
                              loaded=True)
    if held is not None and key_before is None:   # the walk appended its first unit onto the files recover loaded
        loaded = (run.loaded_at or {}).get(run.track.names[q])
        assert loaded is not None, "a queue on disk has the state recover left it in"
        walk_state = loaded_state(*loaded, loaded=True)
    write = held[2] if held is not None and held[1] else int(walk_state[0, Q_WRITE_POS])
    walk_pos = assign_positions(np.zeros(len(rows), np.int64), rows[:, U_OFFSET], ends, queue_offsets,
                                run.cq_file_size, walk_state)
    emptied = cut.emptied(q)
    state = loaded_state(cut.max_after.get(q, -1), 0 if emptied else write, loaded=not emptied)
    at = np.full(len(rows), -1, dtype=np.int64)
    at[dispatched] = assign_positions(np.zeros(int(dispatched.sum()), np.int64), rows[dispatched, U_OFFSET],
                                      ends[dispatched], queue_offsets[dispatched], run.cq_file_size, state)
    return walk_pos, at


def _written_units(run: ReputRun, q: int, rows: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """The units of ``rows`` (cut units of queue ``q`` the reput puts back, among them one the walk dropped, which no
    file of the walk holds) as ``putMessagePositionInfo`` writes them: commitlog offset, size and the tags code of the
    record's unit for the queue (read from the log, ``run.tags``).

    Raises:
        UnsupportedConfigError: with ``enableConsumeQueueExt`` (the unit holds the address of the ext unit the reput
            put for it) or no way to read the tags codes."""
    label = "/".join(map(str, run.track.names[q]))
    if run.ext or run.tags is None:
        raise cut_refusal(f"the queue {label} whose walk dropped a cut unit the reput puts back (its queue offset * 20 "
                          "below the walk's write position, not below the one the cut left)"
                          + (", with consume queue ext files" if run.ext else ""))
    out = []
    for offset, end in rows[:, [U_OFFSET, U_END]].tolist():
        tags = run.tags(offset, end - offset, run.track.names[q], light=True)
        assert tags is not None, "a unit of the queue's record"
        out.append((offset, end - offset, tags))
    return tuple(out)


def _disk_mixed_whole(run: ReputRun, q: int) -> QueueFiles:
    """A queue holding a record's own units and light ones, on disk before the walk, the walk's units dispatched onto
    its files, no parsed unit going to it (of both kinds in the walk's earlier data files too), the reput set inside an
    entry or, not set inside one (5.5.1 and 5.3.3), putting back cut units of it (of both kinds earlier: none too; from
    before the walk's last data file: ``earlier_reput_refusal``): replayed whole from its files as the cut left them,
    its cut units (and its records of the walk's last data file from the reput's start) the reput dispatches and its
    records past the walk's end by ``putMessagePositionInfo``'s rule with their own queue offsets
    (``dledger_inside_mixed.mixed_disk_put_back``; verify only)."""
    track, on_disk, reput, inside_from = run.track, run.on_disk, run.reput, run.inside_from
    ext_file_size = run.ext_file_size if run.ext else 0
    assert on_disk is not None
    label = "/".join(map(str, track.names[q]))
    if inside_from < 0 and reput < track.base and (why := earlier_reput_refusal(
            track, on_disk[track.names[q]], reput, ext_file_size, run.ext_earlier)) is not None:
        raise cut_refusal(f"the queue {label} holding a record's own units and light ones, on disk before the "
                          f"walk, dispatched by a reput not set inside an entry, from before the walk's last data "
                          f"file, {why}")
    w = mixed_disk_put_back(track, q, on_disk[track.names[q]], run.process_offset, reput, run.end, run.after,
                            run.cq_file_size, inside_from if inside_from >= 0 else reput, run.tags,
                            ext_file_size, (run.ext_held or {}).get(track.names[q]),
                            inside=inside_from >= 0, earlier=run.ext_earlier)
    if w is None:   # mixed_on_disk's guards: the walk's units were dispatched onto its files (disk_mixed)
        why = "whose files the cut deletes" if not on_disk[track.names[q]][1] else \
            "with ext files whose end is not read"
        raise cut_refusal(f"the queue {label} holding a record's own units and light ones, on disk before the "
                          f"walk, no parsed unit going to it, {why}")
    return w


def _mixed_whole(run: ReputRun, walk: WalkedPositions, cut: TruncatedQueues, q: int, rows: np.ndarray,
                 again: np.ndarray) -> QueueFiles:
    """A queue holding a record's own units and light ones, none parsed there, the reput putting back only its last cut
    units (the first inside the parsed messages): replayed whole from the state the cut left
    (``dledger_inside_mixed.mixed_put_back``; ``apply_cut`` writes it), the last ones by ``putMessagePositionInfo``'s
    rule with their own queue offsets, then its records past the walk's end with theirs (ext files or not; not on disk
    before the walk); refused otherwise."""
    track, process_offset, inside_from = run.track, run.process_offset, run.inside_from
    after = run.after
    mine = after[after[:, U_QUEUE] == q] if after is not None else walk.units[:0]
    k = len(rows) - len(mine)   # its cut units (rows: those, then its records past the walk's end)
    w = mixed_put_back(track, q, rows[:k], again[:k], process_offset, run.cq_file_size, inside_from, run.tags,
                       walk.earlier.get(q), mine, run.ext_file_size if run.ext else 0,
                       cut.emptied(q), run.reset_emptied) \
        if inside_from >= 0 and track.names[q] not in (run.on_disk or {}) and \
        (mine[:, U_OFFSET] == rows[k:, U_OFFSET]).all() and again[k:].all() else None
    if w is not None:
        return w
    label = "/".join(map(str, track.names[q]))
    if run.ext and cut.emptied(q):
        raise cut_refusal(f"the queue {label} holding a record's own units and light ones, with ext files, every "
                          "unit of which the cut took (no file left), whose cut units the reput puts back, only "
                          "the last ones")
    raise cut_refusal(f"the queue {label} holding a record's own units and light ones, whose cut units the reput "
                      "puts back, only the last ones (their queue offsets against positions the walk did not give "
                      "them)")


def reput_ext_units(run: ReputRun, put_back: dict[int, tuple[np.ndarray, np.ndarray]], walk_end: int,
                    placed: Placed) -> tuple[ExtAgain, ...]:
    """With ``enableConsumeQueueExt``, the ext units ``ConsumeQueue.putMessagePositionInfoWrapper`` puts
    (``ConsumeQueueExt.put``) for each record of a record's own queue the reput walks, before the unit is put back or
    dropped (:func:`ext_reput`): after the walk's ext units and those of the messages parsed where the reput was set
    (``placed.ext_put``); the units of records past the walk's end hold the ext units their own dispatch put."""
    if walk_end >= 0:   # the units of records past the walk hold the ext units their own dispatch put
        put_back = {q: (off[off < walk_end], pos[off < walk_end]) for q, (off, pos) in put_back.items()}
    ext_again = ext_reput(run.track, run.reput, run.end, put_back) if run.ext else ()
    if placed.ext_put:   # the parsed units' ext units lie between the walk's and the reput's
        parsed_ext = {(t, qid): n for t, qid, n in placed.ext_put}
        ext_again = tuple(dataclasses.replace(a, before=a.before + parsed_ext.get((a.topic, a.queue_id), 0),
                                              skip=parsed_ext.get((a.topic, a.queue_id), 0)) for a in ext_again)
    return ext_again


def appended_keys(rows: np.ndarray, last: int) -> np.ndarray:
    """``rows``, one queue's units of the records past the walk's end that the start's reput dispatches (in
    commitlog order), with the queue positions (in units) the walk's dispatch of every record before them leaves
    them at: right after ``last``, the walk's last unit in that queue, one after the other
    (``putMessagePositionInfo`` appends at the write position whatever queue offset a unit holds).  Their own
    queue offsets when the reput walks on from the walk's end; below them by the records it leaves out when it
    begins past it (:attr:`store_format.dledger_crash_plan.DLedgerCrash.gap`)."""
    out = rows.copy()
    out[:, U_KEY] = last + 1 + np.arange(len(rows), dtype=np.int64)
    return out


def ext_reput(track: QueueTrack, reput: int, end: int,
              put_back: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[ExtAgain, ...]:
    """The ext units the start's reput from ``reput`` to ``end`` puts (:class:`ExtAgain`), one per record of a
    record's own consume queue (not a light or batch queue), whether its unit is dropped or put back
    (``put_back``: per queue, the commitlog offsets and queue byte positions of the units put back).

    The records of the files before the walk's last one count too (``track.keep_own``): cut units lie in the
    last file only, so only the ordinals of the units put back depend on them.

    Raises:
        UnsupportedConfigError: the reput starts before the walk's last data file and ``track`` kept only that
            file's units.  A unit put back that is no record's own unit of its queue (a light unit of a queue holding
            own ones too) leaves ``ExtAgain.refused`` set, raised by :func:`ext_refused`.
    """
    if reput >= end:
        return ()
    if reput < track.base and not track.keep_own:
        raise cut_refusal(f"consume queue ext files (enableConsumeQueueExt=true) and the start's reput from {reput}, "
                      f"before the recovery's last data file ({track.base})")
    last = track.last_file()
    last = last[last[:, U_KIND] == KIND_CQ][:, [U_OFFSET, U_QUEUE, U_END, U_KEY]]
    walk = np.concatenate([*track.own_before, last])   # the walk's own units, in commitlog order
    units = np.concatenate([*(track.own_before if reput < track.base else []), last])
    units = units[(units[:, 0] >= reput) & (units[:, 0] < end)]
    out = []
    for q in np.unique(units[:, 1]):
        offsets = units[units[:, 1] == q, 0]
        back_off, back_pos = (put_back or {}).get(int(q), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        ordinals = np.searchsorted(offsets, back_off)
        own = (ordinals < len(offsets)) & (offsets[np.minimum(ordinals, len(offsets) - 1)] == back_off)
        topic, qid = track.names[int(q)]
        refused = "" if own.all() else \
            (f"consume queue ext files (enableConsumeQueueExt=true) and {topic}/{qid}, a queue the start's reput puts "
             "back units of that are not a record's own there (light units beside own ones): where their ext units go "
             "is not modelled")
        out.append(ExtAgain(topic, qid, track.own_units[int(q)], len(offsets),
                            np.asarray(back_pos, dtype=np.int64)[own], ordinals[own], refused=refused,
                            walked=walk[walk[:, 1] == q][:, 2:]))
    return tuple(out)


def ext_past(ext_again: tuple[ExtAgain, ...], after: np.ndarray, track: QueueTrack) -> tuple[ExtAgain, ...]:
    """``ext_again`` with each queue's :attr:`ExtAgain.past`: of ``after`` (the units of the records from where the
    walk's check failed to where the start's reput's dispatch ends, :func:`store_format.dledger_crash_after.walk_after`,
    queue numbers of ``track``), its own consume queue units (``putMessagePositionInfoWrapper`` puts an ext unit for
    each, then ``putMessagePositionInfo`` appends the unit, past the queue's max, holding that ext unit's address)."""
    own = after[after[:, U_KIND] == KIND_CQ][:, U_QUEUE] if len(after) else np.zeros(0, np.int64)
    return tuple(dataclasses.replace(a, past=int((own == track.queue_id((a.topic, a.queue_id))).sum()))
                 for a in ext_again)


def ext_refused(ext_again: tuple[ExtAgain, ...]) -> tuple[ExtAgain, ...]:
    """``ext_again`` once no queue of it holds :func:`ext_reput`'s refusal.

    Raises:
        UnsupportedConfigError: a queue whose units put back include light ones (``ExtAgain.refused``)."""
    for a in ext_again:
        if a.refused:
            raise cut_refusal(a.refused)
    return ext_again


def take_whole(w: QueueFiles, rows: np.ndarray, lost: dict[tuple[str, int], np.ndarray],
                name: tuple[str, int]) -> int:
    """A queue the replay writes whole (``w``): how many of its cut units (``rows``) it puts back; those it does not
    go to ``lost`` under ``name``."""
    got = np.isin(rows[:, U_OFFSET], np.asarray(w.put_back, dtype=np.int64))
    if not got.all():
        lost[name] = rows[~got, U_OFFSET]
    return int(got.sum())
