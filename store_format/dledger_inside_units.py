"""Where the units of the messages a 5.5.1 DLedger start's reput parses inside an entry land in the queues the
crash recovery's walk wrote.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` and
``BatchConsumeQueue.putBatchMessagePositionInfo`` (``putMessagePositionInfoWrapper``, called by
``CommitLogDispatcherBuildConsumeQueue`` from ``DefaultMessageStore.doDispatch``) and
``MappedFileQueue.getLastMappedFile`` (5.3.3's, for a queue its cut emptied, the same).

An ordinary queue (a consume queue, with or without ext files, not a batch queue) is replayed whole
(:func:`store_format.dledger_inside_replay.replay_queue`, :attr:`Placed.whole`): its parsed units, the files
``getLastMappedFile`` creates and its ``fillPreBlank`` end in :attr:`Placed.units`, ``opened``, ``blank_until`` come
from the replay, and ``pipelines.restart_cut.apply_cut`` writes its files whole; so is a batch queue
(:func:`store_format.dledger_inside_replay_batch.replay_batch_queue`, below).  What follows, the difference from
the rebuild's own dispatch of those messages (``rebuild_units``, ``rebuild_files``, ``again_moved``), is no longer
written for any queue the reput touches with a parsed unit; it still runs, its rows dropped, as the gate of the
one refusal no broker case lifts yet (:func:`store_format.dledger_inside_past.past_no_file`).  Its records past the
walk's end go by the replay alone: the old gate comparing them with the rebuild's dispatch (``place_past``, a record
the broker appends into a file ``--as-restart`` removes) cannot fire, the replay's files being what ``apply_cut``
writes for the queue, so it is gone.

After a crash, ``DefaultMessageStore.doRecheckReputOffsetFromCq`` may set the reput at 2147483647 inside an entry (a
queue ``truncateDirtyLogicFiles`` left with ``fillPreBlank`` units only: :mod:`store_format.dledger_crash_cut`), where
``DLedgerCommitLog``'s check may parse well-formed messages before it jumps
(:func:`store_format.dledger_reput_inside.reput_inside_entry`).  Each is dispatched like any record, into the queues
as the cut left them (their write positions and max physical offsets), before the reput goes on:

* a unit whose ``offset + size`` is at or below its queue's max physical offset is dropped;
* so is one whose queue offset is not 0 and whose ``queue offset * 20`` lies below the queue's write position ("build
  consume queue repeatedly");
* any other is appended at the queue's write position, whatever its queue offset ("logic queue order maybe wrong" is
  only logged), over the bytes of the cut units there (the cut moved the write position back, the units past it stay
  on disk); the queue's max becomes its end.

Where the write position is a file's start (the cut deleted the file the first cut unit began, the one before it full,
or the walk's last unit filled its file), ``getLastMappedFile`` creates that file (zeros) for a unit past the max,
before the queue offset check: the file stays even when that unit is then dropped (:attr:`Placed.opened`).  A queue
the 5.5.1 cut left with no file (``correctMinOffset`` sets its max to -1) has its first file created where the unit's
queue offset falls, ``fillPreBlank`` units before it (as a new queue's), the later units by the rules above; so
does one the cut emptied that was on disk before the walk (all its files deleted: nothing of its history stays),
whose max 5.3.3 keeps at ``processOffset``: the unit where the reput is set, at ``processOffset``, ends past it, but
for one whose PHYSICALOFFSET field says less, which ends at or below it: dropped before ``getLastMappedFile`` (no file
created), the next unit of that queue then its first.

Where the reput goes on before the log's end, it dispatches the cut units of a queue the walk wrote again after the
parsed ones (:attr:`WalkedQueue.again`), by the same rule from the state the parsed units left: those whose queue
offsets lie below the write position are dropped (the first ones: the parsed units took their positions), the rest go
back where they were, but for the first ones when the reput goes on past them (their
records inside a parsed message: :attr:`WalkedQueue.again_skip`, not dispatched, dropped so, in any queue below,
with ext files no ext unit put for them again); in a queue the cut left with no file (5.5.1's max -1, 5.3.3's
``processOffset``) each goes where that rule puts it after the parsed units, a unit of queue offset 0 appended at the
write position (:attr:`Placed.again_moved`; the cut's files are not written again), and so in a queue on disk before
the walk that the cut left a file of (its files stay: :attr:`WalkedQueue.disk`) where one goes elsewhere than its
queue offset says, is appended before another is put back or goes into a file ``getLastMappedFile`` creates, and so
in any other queue the cut left a file of where one goes elsewhere than where it was (its files stay but for those
the cut deleted past the write position, the bytes past that position as the walk left them: ``dledger_crash_cut``;
a file ``getLastMappedFile`` creates anew there holds zeros but for the units put in it: :attr:`Placed.opened`);
with ext files the ext units the reput puts for the records it walks follow the parsed units' ext units
(:attr:`Placed.ext_put`; in a queue left with no file too, the cut unit appended holding its new ext unit's
address).  A parsed message's light queue unit goes into a light queue the walk wrote by the same rule
(``ConsumeQueue.multiDispatchLmqQueue``: ``putMessagePositionInfo`` with its ``INNER_MULTI_QUEUE_OFFSET`` and its
own tags code, after the message's own unit; with ext files no ext unit for it), also one the walk wrote a record's
own units in too, from the write position and max the cut left it by the positions the walk's units took
(``dledger_inside_walked._mixed``); its cut units the reput dispatches again go by the same rule with their own queue
offsets, compared with and read from where the walk's queue holds them (:attr:`WalkedQueue.again_at`: the positions
``putMessagePositionInfo`` gave them in commitlog order, not their queue offsets; one the walk dropped that the
reput appends now written from its record by the replay), its records past the walk's end with their real queue
offsets (the replay).

A queue the walk did not write gets its first unit where the unit's own queue offset falls (a new file,
``fillPreBlank`` units before it) and the later ones by the same rules: the rebuild, which reads those messages after
the walk's records (:func:`store_format.store.then_pieces`), appends them so (:mod:`store_format.consumequeue`).  In a
queue the walk wrote, the rebuild's queue holds every unit of the walk, cut or not: :func:`place_inside` says where
the broker put each parsed unit, ``pipelines.restart_cut.apply_cut`` writes it there, and undoes what the rebuild's own
dispatch of the message put: it drops it when the message lies before the end of that queue's last walk unit (as one
parsed inside that unit's or a later record's body does), else (a PHYSICALOFFSET past it) appends it after the walk's
units, where the broker's file holds zeros (:attr:`Placed.rebuild_units`, :attr:`Placed.rebuild_files`).  Refused (one
line): a queue on disk before the walk with a walk unit below ``processOffset`` ending past the max the cut leaves
its files (one the cut emptied is placed as above; one it left a file of otherwise, as ``truncateDirtyLogicFiles``
left its files, wherever the walk's queue offsets put its units:
:func:`store_format.dledger_inside_walked.inside_units`), and a queue whose cut units the reput puts back afterwards
when it kept no unit below ``processOffset`` in the walk (but for one the cut left with no file, and one it left
``fillPreBlank`` units only, its write position after them, its max 2147483647: ``ConsumeQueue.truncateDirtyLogicFiles``
keeps such a unit like any below ``processOffset``; its records past the walk's end, if any, after them by
the replay), or, with records past the walk's end, none of them (``dledger_crash_cut``).  A queue the walk
wrote in its earlier data files only is as the
walk left it (the cut takes nothing there: its write position after its last unit there, its max that unit's end);
one whose units below ``processOffset`` all lie there has its max at the end of the last one
(``QueueTrack.last_before``; a light queue's: ``QueueTrack.light_before``).

After a walk that ended at a damaged message, the reput going on dispatches the records of a queue the walk wrote past
the walk's end (its check reads no CRC) after the parsed units and the cut units it dispatches again, by the same rule
from the state those left (:attr:`WalkedQueue.past`, the replay): one whose queue offset the parsed units took
is dropped (units lost: :attr:`QueueFiles.lost`), a later one appended at the write position. The rebuild's own dispatch
of those records, after the walk's units and the parsed ones it appended, follows the same rule, so it puts them where
the broker does, or where a parsed unit goes, and creates the file ``getLastMappedFile`` creates at a write position
that is a file's start (also for a unit then dropped) where the broker does; a unit the broker appends in the file
created for a parsed unit or a cut unit dispatched again stays there. One the broker appends where the rebuild's
dispatch drops it (its queue offset below the rebuild's write position, which a parsed unit ending past the queue's last
walk unit moved one unit further) is written at the broker's position, its tags code read from its record (with ext
files its ext unit's address), and a file ``getLastMappedFile`` creates for the broker where the rebuild's dispatch
creates none (or one for its parsed unit) is written anew (:attr:`Placed.opened`), and one the rebuild's dispatch
creates where the broker creates none is removed (:attr:`Placed.rebuild_files`). Refused where the two put a record
elsewhere otherwise, where the broker puts units in a file the rebuild's dispatch creates for them and the broker does
not, or the broker appends into one ``apply_cut`` removes, or for a queue with none of its files left but for every cut
unit dispatched again (on 5.5.1: each record after them by the same rule, from where the rebuild's dispatch appends it
right after the walk's units, as :attr:`Placed.again_moved` rows, :func:`past_no_file`; refused where the rebuild's
dispatch drops one for its queue offset) (:func:`store_format.dledger_inside_walked.inside_units`). Where the reput goes
on past every cut unit of the queue (none dispatched again: :attr:`WalkedQueue.skipped`), all of them stay cut and the
records past the walk's end follow the parsed units the same way; where it goes on past the first ones and dispatches
the rest again, those go by the rule above after the parsed units (:attr:`WalkedQueue.again_skip`, the first ones
counted dropped), the records past the walk's end after them, also with ext files or on disk before the walk, whatever
the queue kept below ``processOffset`` (a walk unit, ``fillPreBlank`` units only, its units in the walk's earlier data
files); with ext files the cut leaves the ext file as the walk wrote it (the cut units' ext units too) and the ext units
of the parsed and of those records follow (:attr:`WalkedQueue.ext_next`, not lowered), as the rebuild's dispatch puts
them; in a queue on disk before the walk the parsed units and those records go from the write position the cut left its
files at, the same (also in one the walk wrote no unit of, only those records went to: replayed from its files as the
cut left them, 5.5.1 or 5.3.3).

A batch queue the walk wrote (in its last data file or its earlier ones only, or one on disk before the walk that
only records past the walk's end went to: :func:`store_format.dledger_inside_walked.inside_units`) is replayed whole
(:func:`store_format.dledger_inside_replay_batch.replay_batch_queue`, :attr:`Placed.whole`; nothing of the difference
model above written for it): ``BatchConsumeQueue.putBatchMessagePositionInfo`` (:func:`put_bcq`) takes its parsed
units, then its cut units the reput dispatches again and its records past the walk's end, each appended at the write
position when it starts past the max (the start of the last unit; no queue offset check, 46-byte units), in reput
order; those the reput goes on past (inside the parsed messages: the first ones, or all of them) are lost.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from . import commitlog as cl
from .config import BrokerConfig
from .dispatch import queue_units
from .dledger_inside_past import past_no_file
from .dledger_inside_replay import replay_queue
from .dledger_inside_replay_batch import replay_batch_queue
from .dledger_inside_state import (
    InsideUnit,
    ParsedUnit,
    Placed,
    QueueFiles,
    Tags,
    WalkedQueue,
    put_cq,
    refuse,
)
from .layout import CQ_UNIT_SIZE

__all__ = ["InsideUnit", "ParsedUnit", "Placed", "Tags", "WalkedQueue", "parsed_units", "place_inside"]


def parsed_units(read: Callable[[int, int], bytes], records: tuple[tuple[int, int], ...],
                 config: BrokerConfig) -> tuple[ParsedUnit, ...]:
    """The consume queue units of ``records`` (``(start, end)`` commitlog offsets of whole message records, in
    order; ``read(offset, n)``: the log's bytes there), each record walked alone
    (:func:`store_format.commitlog.walk_range`)."""
    out: list[ParsedUnit] = []
    for a, b in records:
        def read_one(pos: int, n: int, a: int = a, b: int = b) -> bytes:
            return read(a + pos, min(n, b - a - pos))
        res = cl.walk_range(read_one, a, b - a, cl.WalkState.at_slice_start(0, b - a), b - a, config)
        units = queue_units(res, config.batch_topics)
        for k in range(len(units.record)):
            batch = units.queues[int(units.queue[k])][0] in config.batch_topics
            extra = (int(units.store_timestamp[k]), int(units.base_offset[k]), int(units.batch_size[k])) \
                if batch and units.store_timestamp is not None and units.base_offset is not None \
                and units.batch_size is not None else ()
            out.append(ParsedUnit(*units.queues[int(units.queue[k])], int(units.offset[k]), int(units.size[k]),
                                  int(units.queue_offset[k]), int(units.tags_code[k]), bool(units.own[k]), batch,
                                  *extra))
    return tuple(out)


def place_inside(parsed: tuple[ParsedUnit, ...], walked: Callable[[tuple[str, int]], WalkedQueue | None], *,
                 cq_file_size: int, at: int, ext_file_size: int = 0, bcq_file_size: int = 0,
                 tags: Tags | None = None) -> Placed:
    """The units of ``parsed`` that land in queues the walk wrote, where the broker puts them, and the files it
    creates for them (module docstring).

    ``walked(queue)``: the state the cut left a queue the walk wrote in (None for a queue it did not write), asked
    once per queue; ``at``: where the reput was set (for the refusals).  ``ext_file_size`` > 0
    (``enableConsumeQueueExt``): ``putMessagePositionInfoWrapper`` puts each parsed unit's ext unit after the walk's
    (``ConsumeQueueExt.put``, before the unit is dropped or appended), and a unit appended holds that ext unit's
    address (``ConsumeQueueExt.decorate``) as its tags code; the rebuild's dispatch of the message puts the same ext
    unit there.  A batch queue's units (``bcq_file_size``: its files' size) go by :func:`put_bcq`, no ext unit.
    ``tags(offset, size, queue)``: the tags code of the record's own unit for ``queue`` (None: it has none), for a
    record past the walk's end the broker appends where the rebuild's dispatch drops it (the replay).

    Raises:
        UnsupportedConfigError: the cases the module docstring refuses.
    """
    states: dict[tuple[str, int], WalkedQueue | None] = {}
    ext_put: dict[tuple[str, int], int] = {}
    out: list[InsideUnit] = []
    opened: list[tuple[str, int, int]] = []
    rebuild_units: list[tuple[str, int, int]] = []
    rebuild_files: list[tuple[str, int, int]] = []
    blanks: list[tuple[str, int, int]] = []
    no_file: set[tuple[str, int]] = set()   # the queues the cut left with no file
    initial: dict[tuple[str, int], WalkedQueue] = {}   # every queue replayed whole, as the cut left it
    order: list[int] = []   # of each unit of out, its parsed unit's index
    for i, u in enumerate(parsed):
        key = (u.topic, u.queue_id)
        if key not in states:
            states[key] = walked(key)
            if (new := states[key]) is not None and not new.refused:
                initial[key] = dataclasses.replace(new)   # as the cut left it: replayed whole (a batch queue too)
            if new is not None and new.write < 0 and not new.refused:
                no_file.add(key)
        s = states[key]
        if s is None:
            continue   # a queue the walk did not write: the rebuild's dispatch appends it by the same rules
        name = f"{u.topic}/{u.queue_id}"
        if s.refused:
            raise refuse(at, f"for {name}, {s.refused}")
        if s.batch:   # replayed whole below (dledger_inside_replay_batch)
            continue
        end = u.offset + u.size
        if end > s.rebuild_max:   # the rebuild's own dispatch of the message, after every unit of the walk, by the
            # same rules (store_format.consumequeue): what it creates and appends is undone (Placed)
            if s.rebuild_write % cq_file_size == 0 and (*key, s.rebuild_write) not in rebuild_files:
                rebuild_files.append((*key, s.rebuild_write))
            if not (u.queue_offset != 0 and u.queue_offset * CQ_UNIT_SIZE < s.rebuild_write):
                rebuild_units.append((*key, s.rebuild_write))
                s.rebuild_write += CQ_UNIT_SIZE
                s.rebuild_max = end
        if ext_file_size and u.own:   # ConsumeQueueExt.put (a light unit: ConsumeQueue.multiDispatchLmqQueue calls
            # putMessagePositionInfo alone, no ext unit): counted for the ext units the reput puts after them
            # (dledger_crash_cut.ExtAgain); the replay gives the unit its address
            ext_put[key] = ext_put.get(key, 0) + 1
        if (position := put_cq(key, s, end, u.queue_offset, cq_file_size, opened, blanks)) >= 0:
            out.append(InsideUnit(u.topic, u.queue_id, position, u.offset, u.size, u.tags_code))
            order.append(i)
    moved: list[tuple[str, int, int, int]] = []
    for key, s in states.items():   # the cut units the reput dispatches again after the parsed ones, by the same rule
        if s is None or not s.again or s.batch:
            continue
        if key in no_file:   # none of its files stays: each where the same rule puts it, after the parsed units
            # (the first again_skip not dispatched: dropped)
            moved += [(*key, q * CQ_UNIT_SIZE, put_cq(key, s, o + n, q, cq_file_size, opened, blanks)
                       if k >= s.again_skip else -1) for k, (o, n, q) in enumerate(s.again)]
            moved += past_no_file(key, s, cq_file_size, at, opened, blanks,
                                   any((t, qid) == key for t, qid, _p in rebuild_units))
            continue
        put = [put_cq(key, s, offset + size, queue_offset, cq_file_size, opened, blanks) if k >= s.again_skip else -1
               for k, (offset, size, queue_offset) in enumerate(s.again)]   # the first again_skip not dispatched
        # where the walk's queue holds each (a mixed queue's: where the walk's dispatch put it, -1 dropped there)
        source = list(s.again_at) or [q * CQ_UNIT_SIZE for _o, _s, q in s.again]
        back = [pos == src >= 0 for pos, src in zip(put, source)]   # each put back where it was
        dropped = back.index(True) if True in back else len(back)
        fresh = [src >= 0 and (*key, src - src % cq_file_size) in opened for src in source]
        # (one the walk's dispatch dropped that is appended now: the replay writes it from its record, replay_queue)
        # the first ones dropped (none appended elsewhere), the rest back, none in a file getLastMappedFile created anew
        if any(pos >= 0 for pos in put[:dropped]) or not all(back[dropped:]) or any(fresh[dropped:]):
            # its files stay but for those the cut deleted, one getLastMappedFile creates anew written from zeros
            # (apply_cut): each where the rule put it (from where the walk's queue holds it)
            moved += [(*key, src, pos) for pos, src in zip(put, source)]
    removed = {f for f in rebuild_files if f not in opened}   # the files apply_cut removes
    # every queue a parsed unit goes to (the walk wrote it, not refused) is replayed whole: its records past the
    # walk's end go by the replay's put_cq too (dledger_inside_replay), into the files apply_cut writes for it (those
    # the cut leaves and those getLastMappedFile creates; every other staged file of it removed), so none goes into
    # a file --as-restart removes, and the rows above, the difference from the rebuild's own dispatch, are not
    # written for it
    out, order = [u for u in out if (u.topic, u.queue_id) not in initial], \
        [i for i, u in zip(order, out) if (u.topic, u.queue_id) not in initial]
    opened, blanks, rebuild_units, rebuild_files = (
        [r for r in rows if (r[0], r[1]) not in initial]
        for rows in (opened, blanks, rebuild_units, rebuild_files))
    moved = [r for r in moved if (r[0], r[1]) not in initial]
    whole: list[QueueFiles] = []
    for key, s in initial.items():   # replayed whole (ordinary, ext, batch): their parsed units, files, blanks told
        mine = [i for i, u in enumerate(parsed) if (u.topic, u.queue_id) == key]
        w: QueueFiles
        if s.batch:
            whole.append(w := replay_batch_queue(key, s, [parsed[i] for i in mine], bcq_file_size))
            out += [InsideUnit(*key, pos, parsed[i].offset, parsed[i].size, parsed[i].tags_code, True,
                               parsed[i].store_time, parsed[i].base, parsed[i].batch_size)
                    for i, pos in zip(mine, w.parsed_at) if pos >= 0]
        else:   # the units appended hold the ext units' addresses (ext files) as their tags codes
            whole.append(w := replay_queue(key, s, [parsed[i] for i in mine], cq_file_size, at, tags, ext_file_size))
            out += [InsideUnit(*key, pos, offset, size, code) for pos, offset, size, code in w.units[:len(
                [p for p in w.parsed_at if p >= 0])]]
        order += [i for i, pos in zip(mine, w.parsed_at) if pos >= 0]
        opened += [(*key, f) for f in w.opened]
        blanks += [(*key, w.blank_until)] if w.blank_until >= 0 else []
    out = [u for _i, u in sorted(zip(order, out), key=lambda p: p[0])]
    return Placed(tuple(out), tuple(opened), tuple(rebuild_units),
                  tuple(f for f in rebuild_files if f in removed),
                  tuple(blanks), ext_put=tuple((*k, n) for k, n in ext_put.items()), again_moved=tuple(moved),
                  whole=tuple(whole))

