"""verify's ext units orphaned after a 5.x DLedger crash restart whose cut's reput walks records past the end of
verify's own rebuild (the rebuild reads the log up to DLedger's committed position; the restart's recovery walk
and the start's reput dispatch to the log's end).

rocketmq-store 5.5.1 (and 5.3.3) ``ConsumeQueue.putMessagePositionInfoWrapper`` calls ``ConsumeQueueExt.put`` for
every record of a queue's own it is handed, then ``putMessagePositionInfo`` drops the unit (``offset + size <=
maxPhysicOffset``, or a queue offset below the write position) or appends it holding that ext unit's address.  So of
the ext units the walk and the reput put, those a unit below the queue's final write position points at are one per
own unit they append and that stays: the walk's appended below ``processOffset`` (``truncateDirtyLogicFiles`` keeps
them) and every unit the reput puts back.  :func:`pipelines.verify.restart.predict_restart` counts the first from the
rebuilt units; the reput's puts come from the crash plan (:class:`store_format.dledger_crash_cut.ExtAgain`'s
``positions``: the queue byte positions of the units it puts back, records past the rebuild's end too), where the
plan gives them.  Where it does not, and a unit the rebuild lacks would point at an ext unit or an ext unit for a
record the rebuild lacks would be put, the figure is not predicted (:func:`ext_reput_puts`' second answer, one line
each).  A queue the 5.5.1 cut left with no file that a reput set at 2147483647 inside an entry writes anew from a
message it parses there, before the walk's data file (``putMessagePositionInfo`` from an empty queue: the plan's
positions are the cut's): the parsed units and the walk's records again that rewrite appends each point at the ext
unit put for it (``ExtAgain.anew``: :func:`store_format.dledger_crash_before.ext_anew`; the earlier files' records
it appends are verify's rebuilt units below the cut, the rebuild writing the queue anew likewise), the walk's own
ext units, which the cut kept, orphaned (``-past-2gib-before-no-file-ext``'s T7); with no message parsed for it, or
the walk's records of it in more than its last data file, not predicted.

A rebuild that ends at or before the walk's data file (``-before-cut-layouts``: the reput from DLedger's committed
position in an earlier file) lacks every unit the walk put; its queues' units there are all kept or, cut, put back
(none lost) pointing at the reput's ext units; for a queue the store held no unit of, the walk appended them all,
so the pointed ext units are the walk's own puts (``ExtAgain.before``), the reput's others dropped with their units:
orphaned.  A queue of it the 5.5.1 cut left with no file (``QueueCut.reset``: ``truncateDirtyLogicFiles`` deleted
every file the walk wrote and, finding no unit, calls ``ConsumeQueueExt.truncateByMaxAddress`` with no ext address,
which leaves the walk's ext units; ``ConsumeQueue.correctMinOffset`` in ``recoverTopicQueueTable`` then sets its
max physical offset to -1) has every record the reput walks appended from an empty queue (``fillPreBlank`` before
the first, none dropped by ``putMessagePositionInfo``), each pointing at the ext unit put for it (``ExtAgain.count``):
the walk's ext units are the orphaned ones (``-before-cut-emptied-layouts``' T7).  A queue the store held units of
up to ``processOffset`` at least (its max after ``ConsumeQueue.recover``; ``-mixed-disk-earlier-ext``'s T0) has
every record of the walk below that max dropped and those past it cut (they start at or past ``processOffset``), so
the units kept are the store's below ``processOffset`` (their ext units on disk) and the new ext units pointed at are
those of the units the reput puts back (``ExtAgain.positions``); the walk's and the reput's others, and the on-disk
ext units of the store's units the cut took, are orphaned.  Such a queue the crash plan replays whole from the files
the cut left (``Placed.whole``: ``-mixed-disk-earlier-ext``'s %LMQ%q1, own units and light ones) has the new ext units
pointed at by the units the replay appends holding an ext address (``putMessagePositionInfoWrapper`` put one for each
own record; ``multiDispatchLmqQueue`` puts a light unit with no ext unit).  Neither rule for a queue held so depends
on where the walk starts: a rebuild ending inside the walk's data files (5.3.3's walk from the first data file,
before DLedger's committed position) lacks no unit the restart keeps or appends, each of its records ending at or
below the queue's max.

With no cut (``truncateDirtyLogicFiles`` at a ``processOffset`` past the checkpoint cuts nothing: 5.5.1's
``-layouts-early``; 5.3.3, whose cut runs only when the queues reach it) after a walk to the log's end, the start's
reput set inside the walk (at or after its start, DLedger's committed position) walks only records the walk
dispatched: ``putMessagePositionInfoWrapper`` puts an ext unit for each, ``putMessagePositionInfo`` drops every unit.
For a queue the store held no unit of, the walk appended every own unit it put (from an empty queue), each pointing
at its ext unit, and none is cut: the pointed ext units are the walk's puts (``ExtAgain.before``), the reput's
(``ExtAgain.count``) orphaned, records past the rebuild's end among them.  So with the reput from an earlier data
file (``DLedgerCrash.before``, not a converted store's old files; ``-before-layouts``): the walk's max lies past every
earlier record, whose units are dropped too, and the plan's ``count`` holds their ext units
(``store_format.dledger_crash_before.ext_before_walk``).  For a queue the store held units of (its max after
``ConsumeQueue.recover``), the store's units stay, pointing at their ext units on disk, and the walk appends only
its records past that max: none where the max is at or past the plan's ``end`` (``-layouts-early-kept``,
``-before-layouts-kept``); where it is the end of a record the walk walks (``ExtAgain.walked``: the store's write
position that unit's queue offset + 1), those after it, their queue offsets from there on (``-kept-tail``: the last
units zeroed), each pointing at the ext unit put for it; where it lies below the walk's data file (the store lost
its units of the walk's records: ``-before-layouts-held-below``), the first walked record's queue offset the store's
write position after ``recover`` or past it (``-held-below-more``: more units lost than the walk's records; the put
rule logs the jump and appends at the write position) and the others' one after the other, every record the walk
walks; the reput's units
all dropped (each record ends at or below the walk's max), so the rest of ``before + count`` is orphaned; held up to
anywhere else: not predicted.  A queue held below the walk's data file that the walk walks no record of, the reput
walking some of it there (``DLedgerCrash.ext_unwalked``, no ``ExtAgain`` entry, with those records' units;
``-held-below-unwalked``): the reput puts an ext unit for each of those records (counted) and appends those ending
past the max from the write position, their queue offsets equal to it or ahead of it (``-unwalked-ahead``), each
pointing at its ext unit (:func:`store_format.dledger_crash_reput_before.held_reput_appends`), the rest of its puts
orphaned; a unit past the max whose queue offset lies behind the write position or is 0: not predicted (one line).

A walk its check ended early (``-damaged-again-layouts``: a record whose body CRC fails; the reput's check reads no
CRC) with the reput from inside it, before that end (DLedger's committed position, where the rebuild stops): the
reput puts an ext unit for each own record it walks again (``ExtAgain.count``; ``putMessagePositionInfo`` drops the
unit), then one for each own record from the damaged one to the log's end, whose units it appends pointing at them
(``ExtAgain.past``, from the plan's walk of those records: :func:`store_format.dledger_crash_cut_reput.ext_past`).
With no cut, for a queue the store held no unit of, the pointed ext units are the walk's (``before``) and the
reput's past its end; after ``truncateDirtyLogicFiles`` at the walk's ``processOffset`` (``-cut``), with the rebuild
and the reput from at or past it, the walk's units below it (kept: the rebuild's) and the reput's put-backs
(``positions``) and appended ones (``past``); the walk's ext units of the units the cut took, orphaned.  So with
the reput from an earlier data file (``DLedgerCrash.before``, not a converted store's old files;
``-before-damaged-layouts``, ``-cut``), the rebuild ending before the walk's data file: the earlier records' ext units
counted too (``count``), their units dropped below the walk's max, every cut unit put back (none lost), so the
pointed ext units are as many as the walk put, kept or put back, and those past its end (``before + past``)."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from store_format.consumequeue_recovery import EXT_MAX_ADDR
from store_format.dledger_crash import DLedgerCrash
from store_format.dledger_crash_cut_reput import ExtAgain
from store_format.dledger_crash_reput_before import held_reput_appends
from store_format.layout import CQ_UNIT_SIZE

__all__ = ["ext_reput_puts"]


def ext_reput_puts(crash: DLedgerCrash, rebuilt_to: int, held: Mapping[tuple[str, int], int] | None = None,
                   wrote: Mapping[tuple[str, int], int] | None = None) -> tuple[dict[str, int], dict[str, str]]:
    """Per ext queue (``topic/queueId``) the crash plan's reput walks (a cut after a walk to the log's end), the own
    units that reput puts back (``len(ExtAgain.positions)``), for a queue whose put-backs the plan places by
    position (a rebuild ending at or before the walk's data file: the walk's own puts, ``ExtAgain.before``, where no
    message was parsed, no unit of the queue is lost and the store held no unit of it before the walk (``held``: per
    queue the store held units of, its max physical offset after ``ConsumeQueue.recover``): each unit the walk put
    appended; of a queue the cut left no file, with the reput set at an entry's start, every record the reput walks,
    ``ExtAgain.count``; of a queue held up to ``processOffset`` at least that the cut left a file, the rebuild
    ending inside the walk's data files too, the units the reput puts back, ``len(ExtAgain.positions)``, or,
    replayed whole with the reput set at an entry's start, the replay's units holding an ext address,
    ``QueueFiles.units``); and the queues whose ext units
    orphaned are not predicted, with why: ``rebuilt_to`` (where verify's rebuild stops reading the log) before
    ``processOffset`` otherwise (units the walk appended and the cut keeps that the rebuild lacks), or a queue
    replayed whole (``Placed.whole``) or appended before the walk's data file (``before_placed``) with an own unit
    put for a record at or past ``rebuilt_to``, or one the 5.5.1 cut left with no file (``QueueCut.reset``) that the
    reput set inside an entry writes anew before the walk's data file where the plan does not count that rewrite's
    units (``ExtAgain.anew`` -1; counted: the parsed and the walk's units it appends, the first answer); with no
    cut or a walk ended early (the figures then come from the rebuilt units alone), every queue the reput walks when
    ``rebuilt_to`` lies before the walk's end and the reput walks the walk's records past it again or the cut takes
    units there (their ext units then orphaned: verify's count lacks them), but, with no cut after a walk to the
    log's end and the reput at or after its start or in an earlier data file, a queue the store held no unit of:
    the walk's own puts (``ExtAgain.before``, every unit it put appended and kept: the first answer), one it held
    units of, the walk's units past its max (:func:`_held_walk_appends`; ``wrote``: per such queue its write
    position after ``ConsumeQueue.recover``, in bytes), and after a
    walk ended early with the reput from inside it, before its end, such a queue: with no cut the walk's own puts and
    the reput's appended past its end (``before + past``), after the cut the put-backs and those
    (``len(positions) + past``), and with the reput from an earlier data file, the rebuild ending before the walk's,
    ``before + past`` (:func:`_again_past_early_walk`)."""
    cut, held, wrote = crash.cut, held or {}, wrote or {}
    if not crash.ext_again and not crash.ext_unwalked:
        return {}, {}
    if cut is None or crash.walk_end >= 0:   # the figures come from the rebuilt units alone, but where modelled
        walked = crash.walk_end if crash.walk_end >= 0 else crash.end
        again = "reput walks the records between again" if crash.reput_from < walked else "cut takes units there"
        why = (f"the rebuild reads the log up to {rebuilt_to}, before {walked}, where the recovery's walk ends, and "
               f"the {again}: the ext units put for them that no unit points at are not counted")
        if not (rebuilt_to < walked and (crash.reput_from < walked or cut is not None)):
            return {}, {}
        if cut is None and crash.walk_end < 0 and (crash.start_offset <= crash.reput_from or (
                crash.before and not crash.from_old_files)):
            # no cut, the walk to the log's end appended every own unit of a queue the store held none of (each
            # pointing at its ext unit); the reput from inside the walk drops every unit it walks again, from before
            # its data file those of the earlier records too (each below the walk's first: ExtAgain.count has them)
            walked_all = {f"{a.topic}/{a.queue_id}": a.before for a in crash.ext_again
                          if (a.topic, a.queue_id) not in held and not a.skip}
            # a queue the store held units of: the walk appends those past its max (the reput's all dropped)
            walked_all.update({f"{a.topic}/{a.queue_id}": n for a in crash.ext_again
                               if (a.topic, a.queue_id) in held and not a.skip
                               and (n := _held_walk_appends(a, held[(a.topic, a.queue_id)], crash.end,
                                                            crash.start_offset,
                                                            wrote.get((a.topic, a.queue_id), -1))) >= 0})
        elif crash.walk_end >= 0 and (crash.start_offset <= crash.reput_from < crash.walk_end if not crash.before
                                      else rebuilt_to <= crash.start_offset and not crash.from_old_files):
            walked_all = _again_past_early_walk(crash, rebuilt_to, held)
        else:
            walked_all = {}
        unwalked, not_placed = _unwalked_held(crash, held, wrote)
        return {**walked_all, **unwalked}, {**{f"{a.topic}/{a.queue_id}": why for a in crash.ext_again
                                               if f"{a.topic}/{a.queue_id}" not in walked_all}, **not_placed}
    whole = {(w.topic, w.queue_id): w for w in cut.inside_placed.whole}
    # the 5.5.1 cut left it no file (max -1) and the reput set inside an entry writes it anew (the rebuild's own
    # dispatch, StoreLocation.queue_reset): the plan's positions are the cut's, not those of that rewrite
    anew = set(cut.reset) if crash.before and cut.inside_from >= 0 else set()
    before = {(u.topic, u.queue_id) for u in cut.before_placed.units}
    back: dict[str, int] = {}
    refused: dict[str, str] = {}
    for a in crash.ext_again:
        name, label = (a.topic, a.queue_id), f"{a.topic}/{a.queue_id}"
        if rebuilt_to < crash.process_offset:
            # held up to processOffset: the walk appends none the cut keeps, wherever it starts (5.3.3: the first
            # data file, the rebuild ending inside its data files)
            ahead = (rebuilt_to <= crash.start_offset or name in held) and not a.skip \
                and held.get(name, crash.process_offset) >= crash.process_offset
            if ahead and name in whole and name in held and cut.inside_from < 0 and name not in cut.reset:
                # replayed whole from the store's files the cut left (held up to processOffset: the walk appended
                # none the cut keeps): each unit the reput appends holding an ext address points at its new ext unit
                back[label] = sum(tags <= EXT_MAX_ADDR for _p, _o, _s, tags in whole[name].units)
            elif ahead and not len(cut.lost.get(name, ())) and name not in set(whole) | before \
                    and (name not in cut.reset or (cut.inside_from < 0 and name not in held)):
                # held up to processOffset: the walk appended none the cut keeps, the reput's put-backs are pointed;
                # else every own unit the walk put appended, then kept or put back (none lost): one pointed ext unit
                # each; the cut left it no file: the reput appends every record of it it walks (max -1, from empty)
                back[label] = len(a.positions) if name in held else a.count if name in cut.reset else a.before
            else:
                refused[label] = (f"the rebuild reads the log up to {rebuilt_to}, before the walk's processOffset "
                                  f"{crash.process_offset}: the units the walk appends between them, which the cut "
                                  "keeps, are not read")
        elif name in anew and a.anew >= 0:
            # written anew from the messages parsed where the reput was set: the parsed and the walk's units it
            # appends (the earlier files' ones are the rebuild's below the cut, which writes the queue anew too)
            back[label] = a.anew
        elif name in anew:
            refused[label] = ("the cut left it no file (max -1) and the start's reput, set inside an entry, writes it "
                              "anew (putMessagePositionInfo from empty) with no message parsed there for it, or the "
                              "walk's records of it not all in its last data file: the plan does not place the units "
                              "it keeps")
        elif name in whole:
            w = whole[name]
            put = set(w.put_back)
            if any(off >= rebuilt_to and off in put and tags <= EXT_MAX_ADDR for _p, off, _s, tags in w.units):
                refused[label] = (f"its files replayed whole, the reput puts back an own unit of a record past the "
                                  f"rebuild's end ({rebuilt_to})")
        elif name in before:
            if any(u.offset >= rebuilt_to and u.tags_code <= EXT_MAX_ADDR for u in cut.before_placed.units
                   if (u.topic, u.queue_id) == name):
                refused[label] = (f"appended from before the walk's data file, an own unit of a record past the "
                                  f"rebuild's end ({rebuilt_to})")
        else:
            back[label] = len(a.positions)
    return back, refused


def _unwalked_held(crash: DLedgerCrash, held: Mapping[tuple[str, int], int], wrote: Mapping[tuple[str, int], int]
                   ) -> tuple[dict[str, int], dict[str, str]]:
    """With no cut after a walk to the log's end and the reput from an earlier data file: the queues the store held
    up to below the walk's data file (``held``: the max after ``ConsumeQueue.recover``; ``wrote``: the write position
    then) that the reput walks records of there while the walk walks none (``DLedgerCrash.ext_unwalked``):
    ``putMessagePositionInfoWrapper`` puts an ext unit for each such record (counted: ``pipelines.verify.
    files_restart``'s ``ext_puts``) and ``putMessagePositionInfo`` appends those ending past the max, each pointing
    at its ext unit (:func:`store_format.dledger_crash_reput_before.held_reput_appends`, from the plan's units of
    those records): per queue that count, and the queues it does not model, with why (one line each)."""
    if crash.cut is not None or crash.walk_end >= 0 or not crash.before or crash.from_old_files:
        return {}, {}
    back: dict[str, int] = {}
    refused: dict[str, str] = {}
    for t, q, n, units in crash.ext_unwalked:
        top = held.get((t, q), -1)
        if not 0 <= top < crash.start_offset:
            continue
        appended = held_reput_appends(units, n, top, wrote.get((t, q), -1))
        if appended >= 0:
            back[f"{t}/{q}"] = appended
        else:
            refused[f"{t}/{q}"] = (f"the store held it up to {top}, below the walk's data file at "
                                   f"{crash.start_offset}, and the start's reput from {crash.reput_from} puts an ext "
                                   "unit for each of its records there and appends those past that max, where a "
                                   "queue offset 0 or one behind the write position (or units the plan did not "
                                   "read) leaves that count not modelled")
    return back, refused


def _held_walk_appends(a: ExtAgain, top: int, end: int, start: int = -1, wrote: int = -1) -> int:
    """Of a queue the store held up to commitlog offset ``top`` (its max after ``ConsumeQueue.recover``), the walk
    to the log's ``end`` with no cut: the own units ``putMessagePositionInfo`` appends, each pointing at the ext unit
    ``putMessagePositionInfoWrapper`` put for it (-1: not modelled).  ``top`` at or past ``end``: none (every record
    ends at or below it).  ``top`` the end of a record the walk walks (``ExtAgain.walked``): the store's write position
    is that unit's queue offset + 1, so the walk drops its records up to there and appends those after it, ending
    past ``top`` with the queue offsets from there on, one after the other.  ``top`` below ``start``, the walk's data
    file (the store lost its units of the walk's records): every record the walk walks ends past it, and with the
    first one's queue offset at or past the store's write position (``wrote``, bytes, after ``recover``; past it
    where the store lost more units than the walk's records: ``putMessagePositionInfo`` only logs the jump and
    appends at the write position) and the others' one after the other, each is appended (and the walk's max then
    lies past every record of the earlier files the reput walks: dropped); none walked (the reput would append
    those past ``top``), gaps among the walked ones or anything else: -1."""
    if top >= end:
        return 0
    if 0 <= top < start:
        if not len(a.walked) or wrote < 0 or a.walked[0, 1] < wrote // CQ_UNIT_SIZE:
            return -1
        keys = a.walked[0, 1] + np.arange(len(a.walked))
        return len(a.walked) if bool((a.walked[:, 1] == keys).all()) else -1
    at = np.flatnonzero(a.walked[:, 0] == top)
    if not len(at):
        return -1
    after = a.walked[at[0] + 1:]
    keys = a.walked[at[0], 1] + 1 + np.arange(len(after))
    return len(after) if bool((after[:, 0] > top).all() and (after[:, 1] == keys).all()) else -1


def _again_past_early_walk(crash: DLedgerCrash, rebuilt_to: int, held: Mapping[tuple[str, int], int]
                           ) -> dict[str, int]:
    """A walk its check ended early (at a record the reput's check reads), the start's reput from inside it (at or
    after its start, before its end) or from an earlier data file (``DLedgerCrash.before``, the rebuild ending
    before the walk's data file): per ext queue the store held no unit of, with no message parsed where the reput
    was set, the own units the restart leaves pointing at ext units the walk or the reput put.  With no cut, every
    own unit the walk put (``ExtAgain.before``: appended, none dropped or cut) and every one the reput appends past
    the walk's end (``ExtAgain.past``), the reput's puts for the walk's records, and from an earlier data file for
    the earlier records (below the walk's max: dropped), orphaned (``ExtAgain.count``).  After the cut at
    ``processOffset``, set at an entry's start, with the rebuild reading the log up to it at least and the reput
    from at or past it: the units the reput puts back (``ExtAgain.positions``) and ``past`` (the walk's units below
    the cut, kept, are the rebuild's own units there: :func:`pipelines.verify.restart.predict_restart`); with the
    reput from an earlier data file, whose walk drops the earlier records and puts back every cut unit (none lost),
    the rebuild holding none of the walk's units: ``before`` (kept or put back) and ``past``; a queue replayed
    whole, appended before the walk's data file, left no file or with cut units lost: none."""
    cut = crash.cut
    if cut is None:
        return {f"{a.topic}/{a.queue_id}": a.before + a.past for a in crash.ext_again
                if (a.topic, a.queue_id) not in held and not a.skip}
    if cut.inside_from >= 0 or (not crash.before and crash.process_offset > min(rebuilt_to, crash.reput_from)):
        return {}
    other = {(w.topic, w.queue_id) for w in cut.inside_placed.whole} | set(cut.reset) \
        | {(u.topic, u.queue_id) for u in cut.before_placed.units} \
        | ({q for q, lost in cut.lost.items() if len(lost)} if crash.before else set())
    return {f"{a.topic}/{a.queue_id}": (a.before if crash.before else len(a.positions)) + a.past
            for a in crash.ext_again
            if (a.topic, a.queue_id) not in held and not a.skip and (a.topic, a.queue_id) not in other}
