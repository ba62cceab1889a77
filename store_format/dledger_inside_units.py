"""Where the units of the messages a 5.5.1 DLedger start's reput parses inside an entry land in the queues the
crash recovery's walk wrote.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` and
``BatchConsumeQueue.putBatchMessagePositionInfo`` (``putMessagePositionInfoWrapper``, called by
``CommitLogDispatcherBuildConsumeQueue`` from ``DefaultMessageStore.doDispatch``; with ext files ``ConsumeQueueExt.put``
and ``decorate``), ``ConsumeQueue.multiDispatchLmqQueue`` (a light queue's unit) and
``MappedFileQueue.getLastMappedFile`` (5.3.3's, for a queue its cut emptied, the same).

After a crash, ``DefaultMessageStore.doRecheckReputOffsetFromCq`` may set the reput at 2147483647 inside an entry (a
queue ``truncateDirtyLogicFiles`` left with ``fillPreBlank`` units only: :mod:`store_format.dledger_crash_cut`), or at
``processOffset`` (a queue the cut emptied), where ``DLedgerCommitLog``'s check may parse well-formed messages before
it jumps (:func:`store_format.dledger_reput_inside.reput_inside_entry`).  Each is dispatched like any record, into the
queues as the cut left them (their write positions and max physical offsets), before the reput goes on:

* a unit whose ``offset + size`` is at or below its queue's max physical offset is dropped;
* so is one whose queue offset is not 0 and whose ``queue offset * 20`` lies below the queue's write position ("build
  consume queue repeatedly");
* any other is appended at the queue's write position, whatever its queue offset ("logic queue order maybe wrong" is
  only logged), over the bytes of the cut units there; the queue's max becomes its end.

Where the write position is a file's start ``getLastMappedFile`` creates that file (zeros) for a unit past the max,
before the queue offset check (the file stays even when that unit is then dropped); a queue the 5.5.1 cut left with no
file (``correctMinOffset`` sets its max to -1) has its first file created where the unit's queue offset falls,
``fillPreBlank`` units before it (5.3.3 keeps its max at ``processOffset``).  These rules are
:func:`store_format.dledger_inside_state.put_cq` and ``put_bcq``.

:func:`place_inside` hands every queue the walk wrote that a parsed unit goes to (not refused) to the replay, which
writes its files whole from the state the cut left: the parsed units, then the cut units the reput dispatches again
(:attr:`WalkedQueue.again`, but the first :attr:`WalkedQueue.again_skip`) and the records past the walk's end
(:attr:`WalkedQueue.past`), each by the broker's rule in reput order
(:func:`store_format.dledger_inside_replay.replay_queue`; a batch queue's
:func:`store_format.dledger_inside_replay_batch.replay_batch_queue`); ``pipelines.restart_cut.apply_cut`` writes
those files (:attr:`Placed.whole`) and removes the queue's other staged files.  :attr:`Placed.units`,
:attr:`Placed.opened` and :attr:`Placed.blank_until` restate what the replay put.  With ext files it counts the ext
units the parsed units put in each queue (:attr:`Placed.ext_put`: after the walk's; the ones the reput puts for the
records it walks follow them, ``dledger_crash_cut.ExtAgain``; a queue the walk did not write counted too, for
``verify``'s ext units appended, ``pipelines.verify.restart.predict_restart``'s ``ext_parsed``).  A queue the walk
did not write is left to the rebuild's own dispatch, which reads those messages after the walk's records
(:func:`store_format.store.then_pieces`) and appends them by the same rules (:mod:`store_format.consumequeue`).

Refused (one line): a parsed unit for a queue :func:`store_format.dledger_inside_walked.inside_units` marks refused
(:attr:`WalkedQueue.refused`, raised at the first parsed unit of it).  A record past the walk's end that the
rebuild's own dispatch drops for its queue offset, in a queue the cut left with no file whose cut units all go again
(once refused by ``dledger_inside_past.past_no_file``), is the replay's like any other: its queue is written whole by
the broker's rule, whatever the rebuild's dispatch did (a queue holding own and light units reaches it in one broker
life, its light queue offsets from ``lmqTopicQueueTable``: broker case ``-light-mixed-emptied-past``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from . import commitlog as cl
from .config import BrokerConfig
from .dispatch import queue_units
from .dledger_inside_replay import replay_queue
from .dledger_inside_replay_batch import replay_batch_queue
from .dledger_inside_state import (
    InsideUnit,
    ParsedUnit,
    Placed,
    QueueFiles,
    Tags,
    WalkedQueue,
    refuse,
)

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
    creates for them, each such queue replayed whole (module docstring).

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
    mine: dict[tuple[str, int], list[int]] = {}   # of each queue the walk wrote, its parsed units' indices
    for i, u in enumerate(parsed):
        key = (u.topic, u.queue_id)
        if key not in states:
            states[key] = walked(key)
        if ext_file_size and u.own and not u.batch:   # ConsumeQueueExt.put (a light unit: ConsumeQueue.
            # multiDispatchLmqQueue calls putMessagePositionInfo alone, no ext unit), whatever becomes of the unit:
            # counted for the ext units the reput puts after them (dledger_crash_cut.ExtAgain) and for verify's ext
            # units appended (a queue the walk did not write too); the replay gives the unit its address
            ext_put[key] = ext_put.get(key, 0) + 1
        if (s := states[key]) is None:
            continue   # a queue the walk did not write: the rebuild's dispatch appends it by the same rules
        if s.refused:
            raise refuse(at, f"for {u.topic}/{u.queue_id}, {s.refused}")
        mine.setdefault(key, []).append(i)
    out: list[tuple[int, InsideUnit]] = []   # (its parsed unit's index, the unit)
    opened: list[tuple[str, int, int]] = []
    blanks: list[tuple[str, int, int]] = []
    whole: list[QueueFiles] = []
    for key, idx in mine.items():   # replayed whole (ordinary, ext, batch) from the state the cut left
        cut = states[key]
        assert cut is not None
        s = dataclasses.replace(cut)   # the replay's own copy, as the cut left it
        w: QueueFiles
        if s.batch:
            whole.append(w := replay_batch_queue(key, s, [parsed[i] for i in idx], bcq_file_size))
            out += [(i, InsideUnit(*key, pos, parsed[i].offset, parsed[i].size, parsed[i].tags_code, True,
                                   parsed[i].store_time, parsed[i].base, parsed[i].batch_size))
                    for i, pos in zip(idx, w.parsed_at) if pos >= 0]
        else:   # the units appended hold the ext units' addresses (ext files) as their tags codes
            whole.append(w := replay_queue(key, s, [parsed[i] for i in idx], cq_file_size, at, tags, ext_file_size))
            kept = [i for i, pos in zip(idx, w.parsed_at) if pos >= 0]   # the first of w.units are theirs
            out += [(i, InsideUnit(*key, *unit)) for i, unit in zip(kept, w.units[:len(kept)])]
        opened += [(*key, f) for f in w.opened]
        blanks += [(*key, w.blank_until)] if w.blank_until >= 0 else []
    return Placed(tuple(u for _i, u in sorted(out, key=lambda p: p[0])), tuple(opened), blank_until=tuple(blanks),
                  ext_put=tuple((*k, n) for k, n in ext_put.items()), whole=tuple(whole))
