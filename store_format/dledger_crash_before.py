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
"""
from __future__ import annotations

import dataclasses

from . import commitlog as cl
from .config import BrokerConfig
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash_cut import ExtAgain, QueueTrack
from .errors import UnsupportedConfigError
from .recovery import check_rows
from .store import Segment, StoreLocation

__all__ = ["ext_before_walk"]

_WINDOW = 16 << 20


def ext_before_walk(st: StoreLocation, files: list[Segment], first: int, reput: int, config: BrokerConfig,
                    ext_again: tuple[ExtAgain, ...]) -> tuple[ExtAgain, ...]:
    """``ext_again`` (the cut's, :attr:`store_format.dledger_crash_cut.QueueCut.ext_again`, counted from the walk's
    first record) with each queue's records of the data files before ``files[first]``, from ``reput`` on, counted
    first: as many more ext units the reput puts, each unit put back pointing that many further
    (:class:`store_format.dledger_crash_cut.ExtAgain`'s ``count`` and ``ordinals``)."""
    earlier = _earlier_own_units(st, files, first, reput, config)
    return tuple(dataclasses.replace(a, count=a.count + n, ordinals=a.ordinals + n)
                 for a in ext_again for n in (earlier.get((a.topic, a.queue_id), 0),))


def _earlier_own_units(st: StoreLocation, files: list[Segment], first: int, reput: int,
                       config: BrokerConfig) -> dict[tuple[str, int], int]:
    """Per queue ``(topic, queue id)``, the records of its own consume queue (not a light or batch queue) that the
    reput walks from ``reput`` (an entry's start) to ``files[first]``'s start, as ``doReput``'s message check (no
    CRC) reads them, a DLedger blank moving it to the next data file.

    Raises:
        UnsupportedConfigError: that check ends the reput in those files (a record it refuses, or a file that does
            not end in a blank): where it goes on is not modelled there.
    """
    k = next(n for n, f in enumerate(files) if f.base <= reput < f.end)
    track = QueueTrack(config.batch_topics)
    scratch = cl.Scratch()
    pos = reput - files[k].base
    while k < first:
        seg = files[k]
        state = cl.WalkState.at_slice_start(pos, seg.size)
        with st.reader(seg) as read:
            while True:
                split_end = min(state.bufpos + _WINDOW, seg.size + 1)
                res = cl.walk_range(read, seg.base, seg.size, state, split_end, config, window=_WINDOW + (1 << 20),
                                    keep_text=True, scratch=scratch, dledger=True)
                halt, n_ok = check_rows(res, seg, check_crc=False, is_5x=True)
                track.add(res, n_ok, seg.base)
                state = res.state
                if halt is not None or res.stop != cl.Stop.SPLIT_END:
                    break
        if halt is not None or res.stop != cl.Stop.BLANK:
            at = halt.offset - ENTRY_HEADER_SIZE if halt is not None else seg.base + state.bufpos
            raise UnsupportedConfigError(
                f"a 5.x DLedger store whose last shutdown was not clean (abort file): the start's reput from {reput}, "
                f"before the data file {files[first].name} the recovery's walk started at, ends at {at} in data "
                f"file {seg.name} (its message check, no CRC), and the walk cut the queues; not modelled, let the "
                "broker recover")
        k, pos = k + 1, 0
    return {track.names[q]: n for q, n in track.own_units.items()}
