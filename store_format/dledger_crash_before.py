"""A 5.x DLedger crash restart whose start's reput begins before the data file the recovery's walk started at, after
a walk that ``truncateDirtyLogicFiles`` followed with a queue cut: the ext units the cut units put back point at.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfoWrapper`` and ``ConsumeQueueExt.put`` (as
rocketmq-all-5.3.3), run by ``DefaultMessageStore.ReputMessageService.doReput`` from the reput's start
(:mod:`store_format.dledger_crash`): for every record of a consume queue it walks, ``ConsumeQueueExt.put`` appends
an ext unit first, then ``putMessagePositionInfo`` drops the queue unit (at or below the queue's max physical offset)
or puts it, holding that ext unit's address.  From before the walk's first data file the reput walks the earlier
files' records first (their ext units put, their queue units of the queues the walk wrote dropped), then the walk's
ones again: so the ext unit a cut unit put back points at counts the earlier files' records of its queue too, which
:func:`store_format.dledger_crash_cut.ext_reput` (the walk's records only) leaves out.  The rebuild reads the earlier
files' records and the walk's ones again itself (:func:`store_format.store.jump_at`) and puts their ext units; only
the addresses of the units put back are set afterwards (``pipelines.restart.apply_cut``).

A record in those earlier files that the reput's own message check refuses (a bad magic code: neither the recovery's
walk nor DLedger's recovery reads it) ends that check's walk there; ``doReput`` then goes on at the end of the buffer
``DLedgerCommitLog.getData`` gave, the next data file where
:func:`store_format.dledger_crash_after.reput_goes_on` says so (``goes_on``): the rest of that file gets no unit and
no ext unit, as the rebuild's walk skips it
(:func:`store_format.reput.next_reput_offset`).  Elsewhere (a group of several peers, the committed position inside
that file past the record) where it goes on is thread timing: refused, with ext files or without.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash_after import checked_windows, refusal
from .dledger_crash_cut import ExtAgain, QueueTrack
from .dledger_queue_track import KIND_BATCH, U_KEY, U_KIND, U_QUEUE
from .store import Segment, StoreLocation

__all__ = ["earlier_own_units", "ext_before_walk"]


def ext_before_walk(earlier: dict[tuple[str, int], int], ext_again: tuple[ExtAgain, ...]) -> tuple[ExtAgain, ...]:
    """``ext_again`` (the cut's, :attr:`store_format.dledger_crash_cut.QueueCut.ext_again`, counted from the walk's
    first record) with each queue's records of the data files before the walk's first, from the reput's start on
    (``earlier``: :func:`earlier_own_units`), counted first: as many more ext units the reput puts, each unit put
    back pointing that many further (:class:`store_format.dledger_crash_cut.ExtAgain`'s ``count`` and
    ``ordinals``)."""
    return tuple(dataclasses.replace(a, count=a.count + n, ordinals=a.ordinals + n)
                 for a in ext_again for n in (earlier.get((a.topic, a.queue_id), 0),))


def earlier_own_units(st: StoreLocation, files: list[Segment], first: int, reput: int, config: BrokerConfig,
                      goes_on: Callable[[int, int], bool]
                      ) -> tuple[dict[tuple[str, int], int], frozenset[tuple[str, int]]]:
    """Per queue ``(topic, queue id)``, the records of its own consume queue (not a light or batch queue) that the
    reput walks from ``reput`` (an entry's start, or a record's in a converted store's old commitlog files, read as
    the base ``CommitLog`` wrote them, each ending in a blank) to ``files[first]``'s start, as ``doReput``'s message
    check (no CRC) reads them, a blank moving it to the next file, and so does a record it cannot read (a bad magic
    code) at ``at`` in data file ``files[k]`` where ``goes_on(k, at)`` (module docstring).  Also the queues (own or
    light, not batch) with a unit of queue offset 0 among those records: ``ConsumeQueue.putMessagePositionInfo``
    makes no queue offset check for it, so a queue the walk wrote appends it (:func:`store_format.dledger_crash_old.
    dropped_before` does not model that).

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
    zero: set[int] = set()
    while k < len(segs):
        seg = segs[k]
        for window in checked_windows(st, seg, pos, config, scratch):
            res, halt, n_ok = window
            track.add(res, n_ok, seg.base)
        units = track.last_file()   # this file's units (numpy, per file)
        zero.update(int(q) for q in np.unique(units[(units[:, U_KEY] == 0) & (units[:, U_KIND] != KIND_BATCH),
                                                    U_QUEUE]))
        at = (halt.offset - (ENTRY_HEADER_SIZE if seg.dledger else 0) if halt is not None
              else seg.base + res.state.bufpos)
        if halt is None and (res.stop == cl.Stop.BLANK or res.stop == cl.Stop.BAD and seg.dledger
                             and goes_on(k - len(old), at)):
            k, pos = k + 1, 0   # the next file (after a bad record in a data file: the rest of this one skipped)
            continue
        raise refusal(f"the start's reput from {reput}, before the data file {files[first].name} the recovery's "
                      f"walk started at, ends at {at} in {'data' if seg.dledger else 'old commitlog'} file {seg.name} "
                      "(its message check, no CRC), not at the next file (in a data file where it goes on depends on "
                      "the group's commits)")
    return {track.names[q]: n for q, n in track.own_units.items()}, frozenset(track.names[q] for q in zero)
