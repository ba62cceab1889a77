"""A 5.x DLedger crash restart whose start's reput begins before the data file ``dledgerRecoverAbnormally`` walked from
(:attr:`store_format.dledger_crash_plan.DLedgerCrash.before`): :func:`reput_before_walk` assembles that plan from the
rules of :mod:`store_format.dledger_crash_before` (the earlier files' records), :mod:`store_format.dledger_crash_old`
(a converted store's old files, a reput set at 2147483647) and :mod:`store_format.dledger_crash_cut` (the cut's ext
units). Mirrors ``DefaultMessageStore.ReputMessageService.doReput`` from there,
``ConsumeQueue.putMessagePositionInfo`` and ``IndexService.buildIndex`` (5.5.1 and 5.3.3)."""
from __future__ import annotations

import dataclasses

import numpy as np

from .config import BrokerConfig
from .consumequeue import assign_positions, loaded_state
from .dledger_crash_after import refusal, reput_goes_on
from .dledger_crash_before import (
    appended_cut,
    earlier_own_units,
    ext_anew,
    ext_before_walk,
    inside_parsed,
    without_queues,
)
from .dledger_crash_cut import QueueCut, QueueTrack, ext_refused, ext_reput
from .dledger_crash_cut_reput import ExtAgain, ext_past
from .dledger_crash_old import dropped_before, inside_earlier_refusal, old_parsed_keys, old_parsed_queues
from .dledger_crash_plan import DLedgerCrash
from .dledger_inside_index import indexed_again, inside_key_offsets
from .dledger_queue_track import KIND_CQ, U_END, U_KEY, U_KIND, U_OFFSET, UNIT_COLUMNS
from .restart_reput import Accepted
from .store import Segment, StoreLocation

__all__ = ["held_reput_appends", "reput_before_walk"]


def reput_before_walk(st: StoreLocation, files: list[Segment], first: int, walk_end: int, end: int,
                       process_offset: int, reput: int, reason: str, accepted: Accepted, track: QueueTrack,
                       config: BrokerConfig, cut: QueueCut | None, committed: int,
                       walked: tuple[tuple[str, int], ...], past: np.ndarray | None = None) -> DLedgerCrash:
    """The start's reput from ``reput``, before the data file the walk started at (the committed position, or with
    ``recheckReputOffsetFromCq`` the queues' largest offset, in an earlier file): ``doReput`` walks every record
    from there to the log's end ``end``, so the earlier files' records first, then the walk's ones a second time
    (:attr:`DLedgerCrash.before`; the rebuild reads them in that order, :func:`store_format.store.jump_at`).
    ``putMessagePositionInfo`` drops a unit at or below its queue's max physical offset (every queue the walk
    wrote), and puts those of the other queues (``fillPreBlank`` up to the first); ``ConsumeQueueExt.put`` puts an
    ext unit for each record of an ext queue before that; ``IndexService.buildIndex`` skips the records below the
    index's ``endPhyOffset`` (it indexes the walk's last indexed record again).  A record of the earlier files its
    check cannot read (a bad magic code) sends it on to the next data file where :func:`reput_goes_on` says so, the
    rest of that file dispatched by no one (no unit, no ext unit; the rebuild's walk skips it likewise); in a
    converted store's old file, where the DLedger check 48 bytes past that record parses a message or a blank, it
    dispatches those first (``DLedgerCrash.old_parsed``; after a cut, to queues the walk did not write or the 5.5.1
    cut left with no file: :func:`store_format.dledger_crash_old.old_parsed_queues`; their keys by ``buildIndex``'s
    ``endPhyOffset`` rule: :func:`store_format.dledger_crash_old.old_parsed_keys`).

    A walk that ended at a damaged message (``walk_end`` >= 0, before ``end``): the reput, whose check reads no CRC,
    walks the walk's records again up to there, then dispatches that message and the ones after it, which each
    queue appends after the walk's units (their own positions: no record is left out); with ext files, each such
    unit points at the ext unit put for it (``ExtAgain.past``: :func:`store_format.dledger_crash_cut_reput.ext_past`
    of ``past``, the units of those records).  A queue cut
    (``truncateDirtyLogicFiles`` at the short ``processOffset``): the cut units all lie past the reput's start, so
    it puts every one back at the cut queue's write position, where each was (a cut queue that keeps a unit of its
    own below the offset still drops the earlier records), and the files come back as the walk wrote them; a queue
    the cut left with ``fillPreBlank`` units only (its max 2147483647) drops every unit, so its cut units stay cut
    and the queue files the cut deleted stay deleted (``QueueCut.lost``, ``dropped``: ``pipelines.restart_cut``'s
    ``apply_cut``); past 2 GiB (the reput set at 2147483647 inside a converted store's old file or an entry of an
    earlier data file, :mod:`store_format.dledger_crash_old`) it drops the earlier records by their queue offsets and
    puts the cut units back, but appends one of queue offset 0 and then puts the walk's units by the same rule, ext
    files, light queues and a queue a parsed message went to too (``QueueCut.before_placed``:
    :func:`store_format.dledger_crash_before.appended_cut`); where its check first
    parses well-formed messages there (``QueueCut.inside_records``, :mod:`store_format.dledger_reput_inside`) it
    dispatches those first, after the cut and before it goes on: into
    the queues as the cut left them (:func:`store_format.dledger_inside_units.place_inside`; each queue the walk wrote
    holds ``fillPreBlank`` units only, or no file: one with ``fillPreBlank`` units takes a parsed unit at the write
    position after them unless its queue offset lies below it, drops the earlier files' records as without it, and
    gets its cut units dispatched again after them by the same rule; with ext files the parsed messages' ext units
    go after the walk's, before the reput's: ``ExtAgain``), and the rebuild reads them between the
    walk's records and the reput's pass (``pipelines.restart``, :func:`store_format.store.then_pieces`' ``after``).
    A consume queue the cut left with no file: 5.5.1's ``ConsumeQueue.correctMinOffset`` sets its max to -1
    (``QueueCut.reset``), so the reput puts the earlier files' records of it too, the first in a new file where its own
    queue offset falls (``fillPreBlank`` units before it), then the walk's ones after them: the queue is written anew
    from the reput's start (the rebuild's queue starts empty again there, ``StoreLocation.queue_reset``; from a message
    parsed where the reput was set at 2147483647 when one went to it, the parsed unit first:
    :func:`store_format.dledger_crash_before.without_queues`); 5.3.3 keeps
    ``processOffset`` as its max, so the earlier records drop there too and the cut units come back (read from the
    source, no broker case).  With ext files each unit put back points at the ext unit the reput put for it, counted
    from the earlier files' records (a converted store's old files' too; in a queue the 5.5.1 cut left with no file,
    after the ext units the walk put: the cut keeps them) (:func:`store_format.dledger_crash_before.ext_before_walk`).
    With no cut, the ext queues the reput walks records of there that the walk walks none of go in
    ``DLedgerCrash.ext_unwalked``, with their units among those records for a queue on disk before the walk
    (``QueueTrack.keep_queues``, verify): :func:`held_reput_appends` counts those ``putMessagePositionInfo`` appends.
    In the reput's order: what is not modelled refused (:func:`_refuse_unmodelled`), the earlier files' records
    (:func:`_earlier_files`), the ext units (:func:`_ext_units`), then ``IndexService.buildIndex``'s keys.

    Raises:
        UnsupportedConfigError: a record the reput's check refuses in the earlier files where it does not go on at
            the next data file (:func:`store_format.dledger_crash_before.earlier_own_units`, :func:`reput_goes_on`);
            after a cut that puts back only some of a queue's units, or a reput set at 2147483647 gone on elsewhere
            than a file's start, the committed position or the entry's start its parsed messages end at
            (:func:`store_format.dledger_crash_old.inside_earlier_refusal`); from 2147483647, a record of queue
            offset 0 in the earlier files of a queue :func:`store_format.dledger_crash_old.dropped_before` drops
            (``putMessagePositionInfo`` checks no queue offset 0: appended) where
            :func:`store_format.dledger_crash_before.appended_cut` refuses it (the queue shapes its
            ``appended_before`` refuses); a guard: a message parsed there for a batch queue in ``QueueCut.reset``
            (none: the cut leaves such a queue max ``processOffset - 1``, where the reput is set, not 2147483647).
    """
    whence = _refuse_unmodelled(st, files, first, reput, config, cut, committed)
    to = walk_end if walk_end >= 0 else end
    earlier = _earlier_files(st, files, first, reput, to, config, track, cut, committed, walked)
    cut, ext_again = _ext_units(st, files, first, reput, to, whence, process_offset, config, track, cut, walk_end,
                                past, earlier)
    reindex = accepted.last_indexed if config.writes_index_files and 0 <= accepted.last_indexed < to else -1
    # the keys of the messages parsed where the reput was set, then of those parsed past old refused records, in
    # put order: buildIndex puts each not below endPhyOffset and moves it there (old_parsed_keys)
    keys, runs = old_parsed_keys(st, inside_key_offsets(st, cut.inside_records if cut is not None else (), config),
                                 earlier.old_parsed or [], config)
    return DLedgerCrash(files[first].name, files[first].base, end, process_offset, reput, reason,
                        indexed_again(reindex, keys), cut, ext_again=ext_again,
                        ext_unwalked=_unwalked(earlier.counts, ext_again, earlier.reset)
                        if config.enableConsumeQueueExt and cut is None else (),
                        walk_end=walk_end, before=True, drops_before=earlier.drops,
                        from_old_files=reput < files[0].base, inside_keys=tuple(int(k) for k in keys),
                        old_parsed=tuple(earlier.old_parsed or ()), old_parsed_kept=earlier.kept,
                        old_parsed_runs=runs)


def _refuse_unmodelled(st: StoreLocation, files: list[Segment], first: int, reput: int, config: BrokerConfig,
                       cut: QueueCut | None, committed: int) -> str:
    """Where ``DefaultMessageStore.start`` set the reput (the words of a refusal), after refusing (one line) the
    shapes :func:`reput_before_walk` does not model: a cut the reput puts back only some of a queue's units of
    (``QueueMove``), a reput set at 2147483647 gone on where
    :func:`store_format.dledger_crash_old.inside_earlier_refusal` refuses."""
    whence = "the queues' largest offset" if config.recheckReputOffsetFromCq else "the committed position"
    if cut is not None and cut.inside_from >= 0:
        whence = f"where DLedgerCommitLog's message check sends it from {cut.inside_from}, the queues' largest max"
    # from a converted store's old files too (every queue empty at the start: dledger_crash_old)
    why = "" if cut is None else \
        "and the reput puts back only some of a cut queue's units (QueueMove)" if cut.moves else \
        inside_earlier_refusal([s for s in st.segments if not s.dledger], files, cut.inside_from, reput,
                               committed, cut.inside_records) if cut.inside_from >= 0 \
        else ""
    if why:
        raise refusal(f"its start's reput walks from {reput} ({whence}), before the data file {files[first].name} "
                      f"the recovery dispatched from, {why}")
    return whence


@dataclasses.dataclass(frozen=True)
class _Earlier:
    """What the reput's walk over the data files (and old files) before the walk's finds
    (:func:`_earlier_files`)."""
    counts: dict[tuple[str, int], int]   # own records per queue: earlier_own_units' first answer
    zero: dict[tuple[str, int], np.ndarray]    # its second: queues with a unit of queue offset 0 there, their units
    reset: dict[tuple[str, int], np.ndarray]   # its third (units read per queue)
    drops: tuple[tuple[str, int], ...]   # the walk's queues dropping the earlier records by queue offset
    old_parsed: list[tuple[int, tuple[tuple[int, int], ...]]] | None   # parsed past refused old records
    kept: tuple[tuple[str, int], ...]    # old_parsed_queues' answer
    parsed_reset: list[tuple[str, int]]  # queues the cut left with no file a message parsed at 2147483647 went to
    walk_ext: tuple[ExtAgain, ...]       # no cut, ext files: the walk's ext puts


def _earlier_files(st: StoreLocation, files: list[Segment], first: int, reput: int, to: int, config: BrokerConfig,
                   track: QueueTrack, cut: QueueCut | None, committed: int,
                   walked: tuple[tuple[str, int], ...]) -> _Earlier:
    """``ReputMessageService.doReput`` over the records before the walk's data file (``putMessagePositionInfo``
    dropping or putting their units, a refused record sending it on where :func:`reput_goes_on` says):
    :func:`store_format.dledger_crash_before.earlier_own_units` with the queues whose units it reads, then the
    records the DLedger check parsed past refused old records
    (:func:`store_format.dledger_crash_old.old_parsed_queues`)."""
    drops = dropped_before(list(walked), cut.reset) if cut is not None and cut.inside_from >= 0 else ()
    # records the DLedger check parses 48 bytes past a record it refuses in an old file (the rebuild's dispatch puts
    # their units and ext units in reading order; their keys: old_parsed_keys; after a cut, for queues the walk did
    # not write only: old_parsed_queues)
    old_parsed: list[tuple[int, tuple[tuple[int, int], ...]]] | None = [] if reput < files[0].base else None
    parsed_reset = sorted(cut.inside_placed.parsed_queues() & set(cut.reset)) \
        if cut is not None and cut.inside_from >= 0 else []
    # no cut, ext files: the walk's ext puts; the queues on disk before the walk (verify) it walks no record of get
    # their earlier records' units read too (the third answer), for _unwalked
    walk_ext = ext_reput(track, files[first].base, to) if config.enableConsumeQueueExt and cut is None else ()
    unwalked = frozenset(track.keep_queues - {(a.topic, a.queue_id) for a in walk_ext}) \
        if config.enableConsumeQueueExt and cut is None else frozenset()
    alone = config.dledger_group_of_one
    counts, zero, reset = earlier_own_units(st, files, first, reput, config, lambda k, at: reput_goes_on(
        files, k, at, committed, alone), frozenset(drops), frozenset(cut.reset if cut and cut.inside_from < 0 else
                                                                     parsed_reset) | unwalked, old_parsed)
    kept = old_parsed_queues(st, old_parsed, walked, cut, config, refusal) if old_parsed and cut is not None else ()
    return _Earlier(counts, zero, reset, drops, old_parsed, kept, parsed_reset, walk_ext)


def _ext_units(st: StoreLocation, files: list[Segment], first: int, reput: int, to: int, whence: str,
               process_offset: int, config: BrokerConfig, track: QueueTrack, cut: QueueCut | None, walk_end: int,
               past: np.ndarray | None, earlier: _Earlier) -> tuple[QueueCut | None, tuple[ExtAgain, ...]]:
    """``ConsumeQueueExt.put`` in ``putMessagePositionInfoWrapper`` as the reput walks from before the walk's data
    file: an ext unit for each own record of the earlier files, then the walk's ones
    (:func:`store_format.dledger_crash_before.ext_before_walk`); a queue the 5.5.1 cut left with no file that a message
    parsed at 2147483647 went to written anew (:func:`store_format.dledger_crash_before.ext_anew`); a record of queue
    offset 0 appended (:func:`store_format.dledger_crash_before.appended_cut`); then the walk's damaged record and
    those after it (:func:`store_format.dledger_crash_cut_reput.ext_past`).  With the cut as these leave it."""
    parsed_reset, reset = earlier.parsed_reset, earlier.reset
    # the reput puts an ext unit for each own record of the earlier files from its start too (no cut: all dropped)
    ext_again = () if not config.enableConsumeQueueExt else ext_before_walk(earlier.counts, earlier.walk_ext) \
        if cut is None else ext_before_walk(earlier.counts, cut.ext_again, reset if cut.inside_from < 0 else None,
                                            track, to, config.cq_file_size)
    if parsed_reset and not {t for t, _ in parsed_reset} & config.batch_topics:
        assert cut is not None   # written anew from the parsed unit by the rebuild's own dispatch (queue_reset), ext
        # units too: the walk's (the cut keeps them), the parsed record's, then the reput's, each unit their address;
        # how many of the parsed and the walk's units that rewrite appends (verify's ext units pointed at)
        parsed = inside_parsed(st, [*(s for s in st.segments if not s.dledger), *files], cut.inside_records,
                               config) if ext_again else ()
        ext_again = tuple(ext_anew(a, parsed, reset.get((a.topic, a.queue_id)), track, to, config.cq_file_size)
                          if (a.topic, a.queue_id) in parsed_reset else a for a in ext_again)
        cut = dataclasses.replace(cut, inside_placed=without_queues(cut.inside_placed, frozenset(parsed_reset)))
    elif parsed_reset:   # a batch queue: cannot be (its max processOffset - 1 above 2147483647, never in reset)
        raise refusal(f"its start's reput walks from {reput} ({whence}), before the data file {files[first].name} "
                      f"the recovery dispatched from, after a message parsed inside an entry for "
                      f"{', '.join(f'{t}/{q}' for t, q in parsed_reset)}, a queue the cut left with no file "
                      "(max -1: written anew from the parsed unit), of a batch queue, not modelled")
    if earlier.zero:   # putMessagePositionInfo checks no queue offset 0: appended, the walk's units then by the same
        assert cut is not None   # rule (a queue a message parsed inside the entry went to: its parsed units first)
        cut, ext_again = appended_cut(st, [*(s for s in st.segments if not s.dledger), *files], cut, earlier.zero,
                                      track, process_offset, config, ext_again,
                                      f"its start's reput walks from {reput} ({whence}), before the data file "
                                      f"{files[first].name} the recovery dispatched from, where a record of queue "
                                      "offset 0 of ")
    ext_again = ext_refused(ext_again)   # light units put back: refused unless appended_cut replays their queue
    if past is not None and ext_again and walk_end >= 0:   # then the walk's damaged record and those after it
        ext_again = ext_past(ext_again, past, track)
    return cut, ext_again


def _unwalked(earlier: dict[tuple[str, int], int], ext_again: tuple[ExtAgain, ...],
              units: dict[tuple[str, int], np.ndarray]) -> tuple[tuple[str, int, int, np.ndarray], ...]:
    """The own queues the reput walks records of in the earlier data files (``earlier``: how many) that have no
    ``ext_again`` entry (the walk walks none of them), each with its units among those records (``units``:
    :func:`store_format.dledger_crash_before.earlier_own_units`' third answer, rows of
    :data:`store_format.dledger_queue_track.UNIT_COLUMNS` in reput order; none read for a queue not on disk before
    the walk): ``DLedgerCrash.ext_unwalked``."""
    walked = {(a.topic, a.queue_id) for a in ext_again}
    return tuple(sorted(((*q, n, units.get(q, _NO_UNITS)) for q, n in earlier.items() if n and q not in walked),
                        key=lambda u: u[:3]))


_NO_UNITS = np.zeros((0, len(UNIT_COLUMNS)), np.int64)


def held_reput_appends(units: np.ndarray, own: int, top: int, wrote: int) -> int:
    """Of a queue the store held up to commitlog offset ``top`` (its max after ``ConsumeQueue.recover``; ``wrote``:
    its write position then, bytes) that the walk to the log's end dispatched no record of, the units
    ``ConsumeQueue.putMessagePositionInfo`` appends when the start's reput walks ``units`` (its records of the data
    files before the walk's, rows of :data:`store_format.dledger_queue_track.UNIT_COLUMNS` in reput order, ``own``
    of them: ``putMessagePositionInfoWrapper`` puts an ext unit for each first), each then holding that ext unit's
    address: :func:`store_format.consumequeue.assign_positions` from that state (a unit ending at or below the max
    dropped; past it, appended at the write position, its queue offset equal to it or ahead of it, the jump only
    logged).  -1 (not modelled) where the rows are not all own units numbering ``own``, or a unit past the max
    has queue offset 0 (no check) or one behind the write position (dropped by the source, no broker case)."""
    if wrote < 0 or top < 0 or len(units) != own or (units[:, U_KIND] != KIND_CQ).any():
        return -1
    state = loaded_state(top, wrote, loaded=True)   # a held queue: loaded (no file tracked)
    ends = units[:, U_END]
    pos = assign_positions(np.zeros(len(units), np.int64), units[:, U_OFFSET], ends - units[:, U_OFFSET],
                           units[:, U_KEY], 1 << 30, state)
    # the max each unit meets: top, then the end of the last one appended (setMaxPhysicOffset)
    met = np.maximum.accumulate(np.r_[top, np.where(pos >= 0, ends, top)[:-1]])
    past = ends > met
    if ((units[:, U_KEY] == 0) & past).any() or ((pos < 0) & past).any():
        return -1
    return int((pos >= 0).sum())
