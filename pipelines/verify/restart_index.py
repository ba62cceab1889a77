"""``index/`` at a restart, for :func:`pipelines.verify.restart.predict_restart` and the RocksDB predictions:
which index files ``IndexService.load`` extends and an abnormal start deletes, and how many keys
``IndexService.buildIndex`` puts again (the recovery's dispatch, the start's second reput, a reput set inside a
DLedger entry that parses messages there), counted from the rebuild's own index files; where
:func:`~pipelines.verify.restart.predict_restart`'s dispatches put them from: :func:`index_at_restart`."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from store_format.config import BrokerConfig
from store_format.dledger_inside_index import keys_after_parsed
from store_format.layout import index_file_size

from .compare import IndexView
from .report import RestartPrediction

__all__ = ["index_at_restart", "predict_index"]


def predict_index(p: RestartPrediction, first: int, *, config: BrokerConfig, store_index: list[tuple[str, int, dict]],
                  expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                  clean_shutdown: bool, end: int | None = None, second_reput_from: int | None = None,
                  second_reput_note: str | None = None, skip: tuple[int, int] | None = None,
                  second_end: int | None = None, parsed_keys: tuple[int, ...] | None = None,
                  parsed_then: int | None = None, walk_end: int | None = None,
                  old_runs: tuple[tuple[int, int, int], ...] = (), zero_keys: int = 0,
                  accelerated: bool = False) -> None:
    """``index/`` at the start, into ``p``: ``IndexService.load`` maps every file (a short one is extended),
    an abnormal start deletes the files whose endTimestamp is after the checkpoint's indexMsgTimestamp, and
    ``IndexService.buildIndex`` puts again the keys of the records dispatched from ``first`` that lie at or
    after the last kept file's endPhyOffset (and, with ``end``, below it); with ``second_reput_from``
    (``recheckReputOffsetFromCq=true``) the start's second walk from there puts again the keys of the
    records at or after it and after the last indexed record's start (``IndexService.buildIndex`` skips
    only offsets below ``endPhyOffset``), below ``end`` (``second_reput_note``: the note on where that walk
    starts, by default the file queues'); ``skip``: records whose keys no one puts, ``second_end``: the
    second walk's keys are those of the records from ``second_reput_from`` itself to there (``predict_restart``'s
    ``again_to``).  ``parsed_keys`` (a 5.x DLedger crash restart whose start's reput, set inside an entry, parses
    messages there after the walk, :mod:`store_format.dledger_inside_index`): the walk's keys (below ``walk_end``
    when it ended early, else ``end``), then each parsed key at or above the ``endPhyOffset`` so far, which it moves
    to its offset, then, from ``parsed_then`` (None: the reput walks nothing more), the keys of the records at or
    above both it and that ``endPhyOffset``, below ``end``; ``second_reput_from`` is not used.  ``old_runs`` (refused
    record, where the reput goes on, its parsed keys: the last of ``parsed_keys``): from ``parsed_then`` the records'
    keys up to each refused record and then its parsed keys, by the same rule, the rest from where it goes on.
    ``zero_keys``: the keys of the record at commitlog offset 0 the rebuild's index lacks (a RocksDB store's,
    :func:`store_format.restart_reput.offset_zero_keys`), which a walk from 0 puts where ``endPhyOffset`` is still 0:
    the recovery's own from ``first`` (its ``doDispatch`` builds the index), or the one from ``parsed_then`` or
    ``second_reput_from``.  ``accelerated``: ``parsed_keys`` are those of a 5.5.1 ``enableAcceleratedRecovery`` walk
    from inside a record (``RecoveryPlan.walk_keys``), not of a DLedger crash restart's reput set inside an entry
    (the note says which)."""
    # index: IndexService.load maps every file (a short one is extended); an abnormal start deletes
    # the files whose endTimestamp is after the checkpoint's indexMsgTimestamp
    full = index_file_size(config.maxHashSlotNum, config.maxIndexNum)
    last_end = 0
    for name, file_size, header in store_index:
        if file_size < full:
            p.index_files_extended.append(name)
        if not clean_shutdown and checkpoint_index_ts is not None and header["end_timestamp"] > checkpoint_index_ts:
            p.index_files_deleted.append(name)
            continue
        last_end = header["end_phy_offset"]
    threshold = max(first, last_end)
    keys, end_phy = 0, last_end
    if parsed_keys is not None:   # the walk's, the parsed messages', then the reput's from parsed_then
        keys, end_phy = _keys_in(expected_index, config, threshold, walk_end if walk_end is not None else end,
                                 skip, end_phy)
        parsed = np.asarray(parsed_keys, dtype=np.int64)
        at = len(parsed) - sum(n for _, _, n in old_runs)   # those parsed where the reput was set come first
        taken, end_phy = keys_after_parsed(end_phy, parsed[:at])
        keys += taken
        for refused, then, n in old_runs if parsed_then is not None else ():   # in reput order among the old records
            assert parsed_then is not None
            more, end_phy = _keys_in(expected_index, config, max(parsed_then, end_phy), refused, skip, end_phy)
            more_parsed, end_phy = keys_after_parsed(end_phy, parsed[at:at + n])
            keys, taken, at, parsed_then = keys + more + more_parsed, taken + more_parsed, at + n, then
        if parsed_then is not None:
            keys += _keys_in(expected_index, config, max(parsed_then, end_phy), end, skip, end_phy)[0] \
                + (zero_keys if max(parsed_then, end_phy) <= 0 else 0)
        what = ("the start's reput parses messages 48 bytes past records it refuses in the old commitlog files (in "
                "reput order among theirs)" if old_runs else "the recovery's walk from inside a record "
                "(enableAcceleratedRecovery) parsed messages" if accelerated else "the start's reput, set inside an "
                "entry, parses messages there")
        p.notes.append(f"{what} whose {len(parsed_keys)} index "
                       f"key(s) buildIndex takes {taken} of (at their PHYSICALOFFSET fields, not below endPhyOffset)"
                       + (f", then walks on from {parsed_then}, indexing the records at or above both that and "
                          f"endPhyOffset ({end_phy})" if parsed_then is not None else ""))
        p.index_keys_put_again = keys
        return
    taken, end_phy = _keys_in(expected_index, config, threshold, end, skip, end_phy)
    keys += taken + (zero_keys if threshold <= 0 else 0)   # the recovery's own walk from 0 into an empty index
    if second_reput_from is not None:   # the second walk: records at or after its start and the endPhyOffset
        threshold = max(second_reput_from, end_phy) if second_end is None else second_reput_from
        keys += _keys_in(expected_index, config, threshold, end if second_end is None else second_end, None,
                         end_phy)[0] + (zero_keys if threshold <= 0 else 0)
        p.notes.append(second_reput_note or (
            f"DefaultMessageStore.start walks the commitlog again from {second_reput_from} "
            "(recheckReputOffsetFromCq=true: the queues' largest getMaxPhysicOffset after the recovery's dispatch, a "
            "batch queue's the start of its last unit; a 5.x DLedger crash restart without it: the committed "
            "position), appending what the queues still lack from there and indexing the last indexed record a "
            "second time when it lies there"))
    p.index_keys_put_again = keys


def _keys_in(expected_index: Callable[[], Iterator[bytes]], config: BrokerConfig, lo: int, hi: int | None,
             skip: tuple[int, int] | None, end_phy: int) -> tuple[int, int]:
    """The keys of the rebuild's index files (``expected_index``, newest first) at commitlog offsets from ``lo`` up
    to ``hi`` (None: no bound), none in ``skip``, and the largest of their offsets (``end_phy`` without one)."""
    keys = 0
    for data in expected_index():
        v = IndexView.parse(data, config.maxHashSlotNum, config.maxIndexNum)
        if v.header["end_phy_offset"] < lo:
            break  # files newest first: the older ones end even earlier
        n_entries = max(0, min(v.header["index_count"], len(v.entries)) - 1)
        offs = v.entries["commitlogOffset"][1:1 + n_entries].astype(np.int64)
        put = (offs >= lo) & (offs < (hi if hi is not None else np.iinfo(np.int64).max))
        if skip is not None:
            put &= (offs < skip[0]) | (offs >= skip[1])
        keys += int(put.sum())
        if put.any():
            end_phy = max(end_phy, int(offs[put].max()))
    return keys, end_phy


def index_at_restart(p: RestartPrediction, first: int, again: int, *, config: BrokerConfig,
                     store_index: list[tuple[str, int, dict]], expected_index: Callable[[], Iterator[bytes]],
                     checkpoint_index_ts: int | None, clean_shutdown: bool, end: int, abnormal_from: int | None,
                     second_reput: bool, reindex_from: int | None, skip: tuple[int, int] | None,
                     again_to: int | None, parsed_keys: tuple[int, ...] | None, parsed_then: int | None,
                     walk_end: int | None, walk_from: int | None, old_runs: tuple[tuple[int, int, int], ...]) -> None:
    """``IndexService.buildIndex`` during the start's dispatches (:func:`predict_index`; it skips records below the
    last index file's ``endPhyOffset``): from ``first`` (after
    ``CommitLog.recoverAbnormally``'s dispatch, ``abnormal_from``, from there: the records from there, then a 4.9.x
    reput from the queues' max, the records from there again, their keys from the last indexed record on, or the 5.x
    second one from ``again``).  With ``second_reput`` the second walk puts the keys of the records at or after both
    ``again`` and the last index file's ``endPhyOffset`` (the last indexed record a second time).

    After a 5.x DLedger crash: ``reindex_from``: the reput starts there and indexes the last indexed record
    again; ``skip``: the records whose keys no one puts; ``again_to``: the keys put again are those of
    ``reindex_from`` alone.  ``parsed_keys`` (the start's reput set inside an
    entry parses messages there: :attr:`store_format.dledger_crash.DLedgerCrash.inside_keys`, the PHYSICALOFFSET
    fields of their keys in put order) and ``parsed_then`` (where that reput walks on from, None: past the log's
    end): the keys are those of the walk, then the parsed ones ``buildIndex`` takes, then those of the records from
    ``parsed_then`` at or above the ``endPhyOffset`` they left (:func:`predict_index`), instead of
    ``reindex_from``'s; ``walk_end``: where the recovery's walk ended early (its keys are those below it, and every key
    counted lies below ``end``, where the dispatch ends: the walk's end when the start's reput begins at
    the log's end, ``DLedgerCrash.end``; the rebuild's index holds the records past it too).
    ``walk_from``: where the walk's keys begin (a reput from before it, ``dispatch_from``: its own records after,
    ``IndexService.buildIndex`` skipping those below the ``endPhyOffset`` the walk left: with ``parsed_keys`` its
    ``parsed_then``, else ``reindex_from``'s second walk).
    ``old_runs``: with ``parsed_keys``, a reput from a converted store's old files whose check refuses records there
    and parses messages 48 bytes further (:attr:`store_format.dledger_crash.DLedgerCrash.old_parsed_runs`): the last
    of ``parsed_keys`` are theirs, put in reput order among the old records' (:func:`predict_index`).
    With ``abnormal_from``, ``parsed_keys`` are those of a 5.5.1 accelerated walk from inside a record
    (``RecoveryPlan.walk_keys``; ``walk_end`` its start: the rebuild holds none of its records)."""
    # recoverAbnormally's dispatch, then a 4.9.x reput from the queues' max (or the 5.x second one)
    if abnormal_from is not None:
        then = again if second_reput else p.reput_from if not config.is_5x and p.reput_from < end else None
        predict_index(p, abnormal_from, config=config, store_index=store_index, expected_index=expected_index,
                      checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean_shutdown, end=end,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, accelerated=True,
                      second_reput_from=then, second_reput_note=None if second_reput else (
                          f"4.9.x DefaultMessageStore.start: the reput walks again from {then} (the queues' max "
                          "physical offset after the recovery), indexing the last indexed record a second time "
                          "when it lies there"))
    else:
        predict_index(p, first if walk_from is None else walk_from, config=config, store_index=store_index,
                      expected_index=expected_index, checkpoint_index_ts=checkpoint_index_ts,
                      clean_shutdown=clean_shutdown, end=end
                      if second_reput or reindex_from is not None or parsed_keys is not None or walk_end is not None
                      else None,
                      second_reput_from=again if second_reput else reindex_from, skip=skip, second_end=again_to,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, old_runs=old_runs)
