"""5.x ``enableBuildConsumeQueueConcurrently=true``: where ``ConcurrentReputMessageService`` stops for good.

Mirrors ``DefaultMessageStore.ConcurrentReputMessageService`` (rocketmq-all-5.3.3 and the rocketmq-store 5.5.1
sources: the same code), with ``MainBatchDispatchRequestService.pollBatchDispatchRequest`` and
``DispatchService``:

* ``doReput`` walks a slice (``CommitLog.getData``) with ``preCheckMessageAndReturnSize``, which reads only
  totalSize and the magic code: -1 when ``reputFromOffset + totalSize`` passes ``getConfirmOffset()`` (the
  max offset here: controller mode and ``duplicationEnable`` are refused elsewhere) or the magic code is
  neither a record's (V1, V2) nor a blank's; 0 for a blank; else totalSize, however wrong.  Positive sizes
  are gathered into batches (at most about 4 MiB) and ``reputFromOffset`` moves by them; 0 rolls to the
  next file (``rollNextFile``), as the sequential reput does; anything else ends the call with
  ``reputFromOffset`` left AT that record, so every later call stops there again: nothing at or after it is
  ever dispatched (the sequential ``ReputMessageService`` skips to the end of the slice and goes on).  A
  header cut by the end of the slice (fewer than 8 bytes) throws from ``getInt``, out of ``doReput``,
  whose caller retries at the same offset: the same end.
* Each batch is parsed again by ``checkMessageAndReturnSize(buffer, false, false, false)`` in an executor
  task and its requests dispatched in batch order: over records that call reads (a good magic code, a
  totalSize equal to the fields' length) the batches dispatch exactly what the sequential reput does.

So the two reputs agree up to the first record the sequential walk could not read (a bad magic code, an
unreadable record, a size mismatch).  At that record (:func:`concurrent_reput_stop`):

* ``preCheckMessageAndReturnSize`` rejects it (fewer than 8 bytes left, a totalSize past the data, an illegal
  magic code, a negative totalSize): the concurrent reput stops there for good, and a rebuild ends its walk
  there (:func:`cut_at`), like a recovery's end;
* it reads a blank, or a record's magic code with totalSize 0: it rolls to the next file, where a master's
  sequential reput goes too (to the end of the slice): the next such record decides; on a slave, whose
  sequential reput stays, refused;
* it accepts it (a record's magic code, a positive totalSize within the data): the batch holding it and the
  parse of its bytes decide (:mod:`store_format.concurrent_batches`): either that batch's task never ends and
  nothing from the batch's start on is dispatched (whatever its parses read, and even where the pre-check's
  walk went on into the next file: the reput thread waits for that task for ever first), or it ends without
  the damaged record and nothing from that record on is but the records its parses read whole there (where the
  walk reads the same records there, :func:`cut_at` keeps the slice up to the batch's end and the reput end,
  :attr:`ConcurrentStop.walk_end`; where it does not, a parse the sequential reput ends the slice at being
  followed in the task by reads 4 or 8 bytes at a time up to a record's header, the rebuild reads the records
  before the damaged one, then those alone: :attr:`ConcurrentStop.pieces`) and a blank's empty request its parse
  read there (``DispatchRequest(0,
  true)``: the unit (0, 0, 0) of topic "" queue 0, ``consumequeue/0/``, its ext unit with ext files; no index
  key: :func:`empty_request_files`, :func:`index_after_last_key`); where every task
  ended and the pre-check's walk went on into the next file, the reput goes on at that file's start
  (:attr:`ConcurrentStop.resume`, ``Segment.resume``: :func:`settle` walks the store again as the concurrent
  reput reads it and follows the next finding); the few ends that module does not follow are refused, one line
  each.

A DLedger commitlog (``enableDLegerCommitLog=true``): the pre-check reads the first entry's header, magic 1
(or -1, a blank) and the entry's size, as a totalSize and a magic code, and gives -1: nothing in the DLedger
files is ever dispatched; the old ``commitlog/`` files of a store converted in place before them are read as
any commitlog.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from . import commitlog as cl
from .anomalies import AnomalyKind, anomaly
from .concurrent_batches import NotFollowed, damaged_batch_outcome, pre_check
from .config import BrokerConfig
from .empty_request_held import empty_request_queue_files
from .errors import UnsupportedConfigError
from .reput_end import data_end_limit
from .store import Segment, StoreLocation, read_in_pieces

__all__ = ["ConcurrentStop", "check_empty_requests", "concurrent_reput_applies", "concurrent_reput_stop", "cut_at",
           "empty_request_files", "empty_request_queue_files", "empty_request_units", "index_after_last_key",
           "past_the_stop", "reput_walks_past_unreadable", "settle", "stop_detail"]

# the walk's findings where the sequential reput parts from the concurrent one (a blank's unreachable tail
# is the same for both: ``rollNextFile``)
_DIFFERS = (AnomalyKind.BAD_MAGIC.value, AnomalyKind.UNREADABLE_RECORD.value, AnomalyKind.SIZE_MISMATCH.value)
_SETTING = "enableBuildConsumeQueueConcurrently=true"
W = TypeVar("W")
_MINUS_ONE = ": preCheckMessageAndReturnSize gives -1 and reputFromOffset stays at this record"


@dataclasses.dataclass(frozen=True)
class ConcurrentStop:
    """Where ``ConcurrentReputMessageService`` stops for good: ``offset``, the commitlog offset from which
    no record is dispatched (a blank's empty request an ended task read past it is: its unit says commitlog
    offset 0); why; ``finding``, the walk's row at the record that stops it; ``stood``, where
    ``reputFromOffset`` stays (None: at ``offset``); ``reput_end`` and ``walk_end_at``: the reput end
    :func:`cut_at` keeps and where its walk ends (set where records of the damaged bytes are dispatched before
    ``offset``; None: the cut store's own, ``offset``)."""
    offset: int
    why: str
    finding: dict
    stood: int | None = None
    reput_end: int | None = None
    walk_end_at: int | None = None
    # where the reput goes on (the next file's start) when every batch task ended and the pre-check's walk went
    # on into the next file: nothing in [offset, resume) is dispatched, the rest as ever (None: a stop for good)
    resume: int | None = None
    # the commitlog offset of the damaged record, and of the first blank's magic code an ended task read there
    # (its empty request dispatched: the unit of zeros in the queue of topic "" and queue 0; None: none)
    at: int | None = None
    empty_request: int | None = None
    empty_requests: int = 0      # how many (one per blank's magic code the ended tasks read)
    last_empty_request: int | None = None   # the last one's commitlog offset (where it is dispatched)
    # where the ended tasks read records whole past the damaged one that the sequential walk does not read there:
    # those records as runs (start, end) of commitlog offsets, which the rebuild reads alone, after the records
    # before ``at`` (store.read_in_pieces); None: the walk reads them; (): none is read
    pieces: tuple[tuple[int, int], ...] | None = None

    @property
    def walk_end(self) -> int:
        """Where the walk of the cut store ends (:func:`cut_at`): ``offset``, or, where records of the damaged
        bytes are dispatched before it, the end of the batch the task parsed (the pre-check's stand)."""
        return self.offset if self.walk_end_at is None else self.walk_end_at


def concurrent_reput_applies(config: BrokerConfig) -> bool:
    """The 5.x constructor picks ``ConcurrentReputMessageService`` (4.9.8 has no such setting)."""
    return config.is_5x and config.enableBuildConsumeQueueConcurrently


def reput_walks_past_unreadable(config: BrokerConfig) -> bool:
    """Whether the walk that models the reput goes on past a record the sequential reput cannot read (to the
    next slice), as ``ReputMessageService.doReput`` does on a master or a DLedger store (a slave's stays there
    for good: ``BrokerConfig.is_master``).  ``ConcurrentReputMessageService.doReput`` has no such branch: its
    pre-check decides at that record for every broker role (it stays, rolls to the next file, or takes the
    record into a batch), so with it the walk goes on as a master's and :func:`concurrent_reput_stop` decides
    where the concurrent reput ends."""
    return config.is_master or concurrent_reput_applies(config)


def _offset(store: StoreLocation, a: dict) -> int:
    if a.get("commitlog_offset") is not None:
        return int(a["commitlog_offset"])
    seg = next(s for s in store.segments if s.name == a["segment"])
    return seg.base + int(a["position"])


def _dledger_start(store: StoreLocation) -> Segment | None:
    """The first DLedger data file the reput reads (None: not a DLedger store)."""
    return next((s for s in store.segments if s.dledger), None) if store.dledger is not None else None


def concurrent_reput_stop(store: StoreLocation, config: BrokerConfig, anomalies: list[dict],
                          reput_end: int | None = None) -> ConcurrentStop | None:
    """Where ``ConcurrentReputMessageService`` stops for good on ``store``, from the sequential walk's
    findings (``anomalies``: rows with ``commitlog_offset``, or ``segment`` name and ``position``; the end
    of the data left out), or None: the setting is off, or the walk met no record where they part.

    ``reput_end``: ``getConfirmOffset()``, where the data ends (None: the last segment's data end, or
    :func:`store_format.reput_end.data_end_limit` where size mismatches set it).

    Raises:
        UnsupportedConfigError: one line, where the damaged bytes lead the concurrent reput somewhere
            :mod:`store_format.concurrent_batches` does not follow.
    """
    if not concurrent_reput_applies(config):
        return None
    end = reput_end if reput_end is not None else _data_end(store, config)
    entries = _dledger_start(store)
    entries_at = entries.base + entries.start if entries is not None else None
    found = sorted((a for a in anomalies if a.get("kind") in _DIFFERS), key=lambda a: _offset(store, a))
    resumed = max((s.resume for s in store.segments if s.resume >= 0), default=-1)
    for first in found:
        at = _offset(store, first)
        if at < resumed:     # bytes the concurrent reput went past (a stop settle() already followed)
            continue
        if entries_at is not None and at >= entries_at:
            break
        stop = _stop_at(store, config, first, at, end)
        if stop is not None:
            return stop
    if entries is not None:
        return _entry_stop(store, entries, end)
    return _damaged_last_blank(store, config, found)


def _damaged_last_blank(store: StoreLocation, config: BrokerConfig, found: list[dict]) -> ConcurrentStop | None:
    """A blank the walk meets in the last segment whose totalSize does not reach its file's end (the broker
    writes a blank as long as the rest of its file: only damage makes one).  The sequential walk takes it as
    the end of the file, as both reputs do where they can read it; the broker's slice of the last file ends at
    its write position, though, and where the blank's totalSize runs past it, ``preCheckMessageAndReturnSize``
    gives -1 and the concurrent reput stays AT the blank for good (the sequential reput's
    ``checkMessageAndReturnSize`` cannot read it either: a master skips the rest of the slice).  Where the
    write position was is not kept, but nothing after the blank is dispatched either way: the walk's row at
    the blank says so, the files are the same.  Only where every earlier finding rolled to the next file
    (anything else ended the concurrent reput before), so that the reput enters the last file at its start."""
    last = store.segments[-1]
    if last.dledger or any(_offset(store, a) >= last.base for a in found):
        return None
    start = last.start if last is store.segments[0] else 0
    with store.reader(last) as read:
        res = cl.walk_range(read, last.base, last.data_end, cl.WalkState.at_slice_start(start, last.data_end),
                            last.data_end + 1, config, keep_text=False)
        if res.stop != cl.Stop.BLANK:
            return None
        pos = res.state.bufpos
        total = int.from_bytes(bytes(read(pos, 4)), "big", signed=True)
    if pos + total == last.size:
        return None
    where = f"segment {last.name} position {pos}"
    finding = anomaly(AnomalyKind.UNREACHABLE_RECORDS, last.name, last.base, pos,
                      f"a damaged blank (totalSize {total}, not reaching its file's end at {last.size})")
    return ConcurrentStop(last.base + pos, (
        f"a blank at {where} whose totalSize {total} does not reach its file's end: preCheckMessageAndReturnSize "
        "gives -1 and reputFromOffset stays at it where that totalSize runs past the broker's write position, "
        "else it rolls to the next file's start, past the data; nothing after it is dispatched either way, as by "
        "the sequential reput"), finding, stood=last.base + pos)


def _stop_at(store: StoreLocation, config: BrokerConfig, first: dict, at: int, end: int) -> ConcurrentStop | None:
    """The concurrent reput at the record ``at`` where the sequential walk found ``first``: where it stops
    for good, or None where it goes to the next file as the sequential reput does.  The pre-check's verdict
    there is :func:`store_format.concurrent_batches.pre_check`'s (``preCheckMessageAndReturnSize``)."""
    seg = store.segment_at(at)
    assert seg is not None
    pos = at - seg.base
    left = seg.data_end - pos
    with store.reader(seg) as read:
        check = pre_check(bytes(read(pos, min(8, max(left, 0)))), at, end)
    where = f"segment {seg.name} position {pos}"
    total = check.total
    if check.how == "cut":
        return ConcurrentStop(at, f"fewer than 8 bytes of the slice left for a header at {where}: getInt "
                              "throws at this record on every call", first)
    if check.how == "past_end":
        return ConcurrentStop(at, f"totalSize {total} at {where} runs past the data's end ({end}){_MINUS_ONE}", first)
    if check.how == "illegal_magic":
        assert check.magic is not None
        return ConcurrentStop(at, f"illegal magic code 0x{check.magic & 0xFFFFFFFF:08X} at {where}{_MINUS_ONE}",
                              first)
    if check.how == "rolls":
        # rollNextFile: the next file's start, on a master and a slave alike, where the walk goes too (a
        # master's, reput_walks_past_unreadable: to the end of the slice, which is the file's end but in the
        # last file, after which nothing is read).  Only the last file's slice ends before the file does: a
        # plain store's files are read whole, a recovery (--as-restart) or a cut for good keeps nothing after
        # the file it ends (a DLedger restart that dispatches nothing reads every file up to 0: nothing met),
        # the DLedger data files (whose last committed one alone is read in part) are never reached, and the
        # findings inside a file read up to where a stop went on (Segment.resume) are skipped above
        assert seg is store.segments[-1] or seg.data_end == seg.size, (
            f"the concurrent reput rolls to the next file at {where}, in a file read up to {seg.data_end} that is "
            "not the last")
        return None
    if check.how == "negative":
        return ConcurrentStop(at, f"negative totalSize {total} at {where}{_MINUS_ONE}", first)
    assert check.how == "accepts"
    slice_start = seg.start if seg is store.segments[0] else 0
    with store.reader(seg) as read:
        sizes = _record_sizes(read, seg, slice_start, pos, config)
        try:
            out = damaged_batch_outcome(read, seg.base, slice_start, seg.data_end, sizes, pos, end,
                                        config.brokerVersion == "5.5", config.mappedFileSizeCommitLog)
        except NotFollowed as e:
            raise UnsupportedConfigError(
                f"{_SETTING}: the 5.x ConcurrentReputMessageService takes the record ({first['kind']}, totalSize "
                f"{total}) at {where} into a batch, and {e}: not reproduced; rebuild with the broker, or without "
                "the setting if it ran without it") from None
    resume = out.resume if _goes_on(store, seg, out.resume) else None
    parsed_to = out.parsed_to if out.parsed_to is not None else out.stood   # where the tasks' last batch ends
    walked_to = parsed_to - seg.base
    pieces = None
    if (out.read_whole or out.empty_request is not None or resume is not None) and not _walk_reads_them(
            store, seg, slice_start, pos, walked_to, out.read_whole, end, config):
        # the cut store's walk would dispatch other records past the damaged one than the ended tasks read whole:
        # the rebuild reads those records alone, where they are (store.read_in_pieces)
        pieces = _runs(out.read_whole)
    if out.hung is None:
        note = (f", its parses reading {len(out.read_whole)} record(s) of the damaged bytes whole (dispatched)"
                if out.read_whole else "")
        if out.empty_request is not None:
            more = f", {out.empty_requests} in all" if out.empty_requests > 1 else ""
            note += (f" and a blank's magic code at commitlog offset {out.empty_request}{more} (its empty request "
                     "dispatched: a unit at commitlog offset 0, size 0 in the consume queue of topic \"\" and queue 0)")
        went = (f"; every task ends and the pre-check's walk goes on into the next file, where the reput goes on "
                f"at commitlog offset {resume}" if resume is not None else
                f", and the pre-check stands at commitlog offset {out.stood}")
        why = (f"preCheckMessageAndReturnSize accepts the record ({first['kind']}, totalSize {total}) at {where}; "
               f"the batch holding it is parsed to its end without it{note}{went}")
    else:
        note = ""
        if out.read_whole or out.empty_request is not None:   # the ended tasks of the batches before it
            note = (f" (the tasks before it end, dispatching {len(out.read_whole)} record(s) of the damaged bytes "
                    f"read whole and {out.empty_requests} blank's empty request(s))")
        why = (f"preCheckMessageAndReturnSize accepts the record ({first['kind']}, totalSize {total}) at {where}; "
               f"the task parsing the batch of {out.hung[1]} bytes from commitlog offset {out.hung[0]} never ends, "
               f"so nothing from that batch on is dispatched{note} and the reput waits for it for ever at "
               f"commitlog offset {out.stood}")
    if pieces is not None:
        why += (f"; its parses read them at other positions than the sequential reput's, so the rebuild reads those "
                f"{len(out.read_whole)} record(s) alone")
    if resume is not None:
        return ConcurrentStop(out.cut, why, first, stood=resume, reput_end=end, walk_end_at=parsed_to,
                              resume=resume, at=at, empty_request=out.empty_request,
                              empty_requests=out.empty_requests, last_empty_request=out.last_empty_request,
                              pieces=pieces)
    if out.read_whole or out.empty_request is not None:
        return ConcurrentStop(out.cut, why, first, stood=out.stood, reput_end=end, walk_end_at=parsed_to, at=at,
                              empty_request=out.empty_request, empty_requests=out.empty_requests,
                              last_empty_request=out.last_empty_request, pieces=pieces)
    return ConcurrentStop(out.cut, why, first, stood=out.stood)


def _goes_on(store: StoreLocation, seg: Segment, resume: int | None) -> bool:
    """Whether the reput, going on at ``resume`` after the damaged bytes of ``seg`` (every batch task ended),
    reads more: a later segment starts there and ``seg``'s slice is its whole file (in the last file the slice
    ends at the write position, and a roll goes past the data: nothing more is read, a stop for good)."""
    return (resume is not None and seg is not store.segments[-1] and seg.data_end == seg.size
            and any(s.base == resume for s in store.segments))


def check_empty_requests(config: BrokerConfig, stops: list[ConcurrentStop], last_dispatched: int | None) -> None:
    """Blanks' empty requests (``DispatchRequest(0, true)``: topic "", queue 0, commitlog offset 0, size 0,
    store time 0, no keys, no unique key, no properties) the stops' ended tasks read, dispatched by
    ``DefaultMessageStore.doDispatch`` among the records in commitlog order (the tasks dispatch in the order
    they parse), against the whole reput once :func:`settle` has followed every stop: its last dispatched record
    at commitlog offset ``last_dispatched`` (None: none).  The consume queue dispatcher's files
    are :func:`empty_request_files`', its RocksDB consume queue entries :func:`empty_request_units`'.
    ``IndexService.buildIndex`` puts no key for one, whatever the last index file's ``endPhyOffset`` (no unique
    key, empty keys, no properties); it only takes the last index file first (``retryGetAndCreateIndexFile``),
    creating the next one where that one is full, as any dispatched request does:
    :func:`index_after_last_key`; the first index file it creates where it is the store's first dispatched
    request is the file the next dispatched record would have created (``endPhyOffset`` and the end time 0, the
    begin ones set by the first key).  5.5's ``IndexRocksDBStore.buildIndex`` returns at once for a size of 0 or
    less, and ``CommitLogDispatcherBuildTransIndex`` for an empty topic.  Where empty requests are all the store
    dispatches, the first creates the first index file and no key follows: that file with no entry (header of
    zeros, the index count the broker leaves in an empty file), as where dispatched records put no key.  Not
    followed: with a RocksDB consume queue, an empty request dispatched last (no record after it:
    ``RocksGroupCommitService`` writes its requests in groups, each group's checkpoint the largest ``offset +
    size`` of that group, 0 where it is alone in the last one, which depends on the threads' timing).

    Raises:
        UnsupportedConfigError: one line, at the stop whose empty request it is."""
    with_empty = [s for s in stops if s.empty_request is not None]
    if not with_empty:
        return
    last = max(with_empty, key=lambda s: s.last_empty_request or s.empty_request or 0)
    if config.rocksdb_cq and (last_dispatched is None or last_dispatched < (last.last_empty_request or 0)):
        where = f"commitlog offset {last.at if last.at is not None else last.offset}"
        raise UnsupportedConfigError(
            f"{_SETTING}: the 5.x ConcurrentReputMessageService's batch task after the record at {where} reads a "
            f"blank's magic code at commitlog offset {last.empty_request} and ends, its empty request dispatched, "
            "and it is the last request dispatched, so the RocksDB consume queue's checkpoint depends on whether its "
            "group commit writes it alone (timing): not reproduced; rebuild with the broker, or without the setting "
            "if it ran without it")


def index_after_last_key(stops: list[ConcurrentStop], end_phy_offset: int, after_last_key: bool) -> bool:
    """Whether a request is dispatched after the last index key (which decides the trailing empty index file:
    :func:`store_format.indexfile.trailing_empty_file`), given the walk's answer ``after_last_key`` and the
    commitlog offset of its last key, ``end_phy_offset``: a blank's empty request dispatched after that key
    (at its blank's commitlog offset, as the tasks dispatch in the order they parse) is one too
    (:func:`check_empty_requests`: ``IndexService.buildIndex`` takes, or creates, the last index file for it)."""
    last = max((s.last_empty_request for s in stops if s.last_empty_request is not None), default=None)
    return after_last_key or (last is not None and last > end_phy_offset)


def empty_request_files(config: BrokerConfig, stops: list[ConcurrentStop], store: StoreLocation | None = None,
                        more: int = 0) -> list[tuple[str, list]]:
    """The files the blanks' empty requests of ``stops``, and ``more`` others (those a DLedger start's reput set
    inside an entry dispatches: :mod:`store_format.dledger_reput_inside`), leave (relative paths, and pieces for
    :func:`pipelines.build.write_file`: bytes, or an int for that many zeros); none without one.

    ``CommitLogDispatcherBuildConsumeQueue`` hands each to ``ConsumeQueue.putMessagePositionInfoWrapper`` of topic
    "" queue 0 (folders ``consumequeue//0`` and ``consumequeue_ext//0``, that is ``.../0``).  With
    ``enableConsumeQueueExt=true`` each first puts an ext unit (tagsCode 0, store time 0, no bitmap:
    ``ConsumeQueueExt.put``) and takes its address as the unit's tagsCode; then ``putMessagePositionInfo`` writes
    the unit (0, 0, tagsCode) at queue offset 0, the first one only: for the next ones ``offset + size`` (0) is
    not past the queue's max physical offset (0), so they are skipped as written again, their ext units kept (in
    as many ext files as they fill, :func:`store_format.consumequeue_ext.build_ext_file`).  ``store``: the store an
    ``--as-restart`` starts on: the files it holds in those folders, kept or written over
    (:func:`store_format.empty_request_held.empty_request_queue_files`)."""
    count = sum(s.empty_requests for s in stops if s.empty_request is not None) + more
    # a RocksDB consume queue: no files written (empty_request_units), those the store holds kept
    return empty_request_queue_files(config, 0 if config.rocksdb_cq else count, store)


def empty_request_units(config: BrokerConfig, stops: list[ConcurrentStop]) -> tuple[tuple[int | str, ...], ...]:
    """With a RocksDB consume queue (``storeType=defaultRocksDB``), the unit the blanks' empty requests of
    ``stops`` put: (topic, queue id, queue offset, commitlog offset, size, tagsCode, store time), none without
    one.  ``RocksDBConsumeQueueStore.putMessagePosition0`` puts each under its key (topic "", queue 0, queue
    offset 0; the value (0, 0, 0, 0)) and makes it its queue's "max" entry (0, 0); the checkpoint, the largest
    ``offset + size`` of a group, is that of the others (:func:`check_empty_requests` refuses the empty request
    dispatched last)."""
    if not config.rocksdb_cq or not any(s.empty_request is not None for s in stops):
        return ()
    return (("", 0, 0, 0, 0, 0, 0),)


def _walk_reads_them(store: StoreLocation, seg: Segment, start: int, damaged: int, stood: int,
                     read_whole: tuple[tuple[int, int], ...], end: int, config: BrokerConfig) -> bool:
    """Whether the records the batch tasks read whole inside the damaged bytes (and dispatch) are exactly the
    records the walk dispatches after the damaged one over the slice the task parsed, up to where the pre-check
    stood (segment positions): the walk that :func:`cut_at`'s store gets (``ConcurrentStop.walk_end``), from
    the slice's start, with the reput end ``end``.  They are where the task's parse and the sequential reput
    both go on at the damaged record's structural end, and the walk's slice then ends where the task's batch
    does (``checkMessageAndReturnSize``'s checks against the remaining bytes see the same end).  They are not
    where a parse the sequential reput ends the slice at (-1: a master skips the slice's rest) is followed by
    the task's loop reading on from wherever that parse stopped, 4 or 8 bytes at a time, until it meets a
    record's header (``ConcurrentStop.pieces``)."""
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, stood, cl.WalkState.at_slice_start(start, stood), stood + 1,
                            config, limit_rel=end - seg.base, keep_text=False)
    rec = res.rec
    mine = rec[(rec[:, cl.R_POS] >= damaged) & (rec[:, cl.R_STATUS] == cl.Status.DISPATCHED)]
    walked = [(seg.base + int(p), int(n)) for p, n in zip(mine[:, cl.R_POS], mine[:, cl.R_TOTAL])]
    return walked == list(read_whole)


def _runs(read_whole: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The records ``(commitlog offset, length)`` as runs of adjacent ones, ``(start, end)``."""
    runs: list[tuple[int, int]] = []
    for at, n in read_whole:
        if runs and runs[-1][1] == at:
            runs[-1] = (runs[-1][0], at + n)
        else:
            runs.append((at, at + n))
    return tuple(runs)


def _record_sizes(read, seg: Segment, start: int, end: int, config: BrokerConfig) -> np.ndarray:  # noqa: ANN001
    """The lengths of the whole records from segment position ``start`` to ``end`` (the walk's records
    there: the sequential reput read every one of them)."""
    if end <= start:
        return np.zeros(0, dtype=np.int64)
    res = cl.walk_range(read, seg.base, seg.data_end, cl.WalkState.at_slice_start(start, seg.data_end), end,
                        config, keep_text=False)
    rec = res.rec
    sizes = rec[rec[:, cl.R_POS] < end, cl.R_TOTAL].astype(np.int64)
    assert int(sizes.sum()) == end - start, "the records before the damaged one do not reach it"
    return sizes


def _entry_stop(store: StoreLocation, seg: Segment, end: int) -> ConcurrentStop | None:
    """A DLedger data file's first entry: its header's magic (1, or -1 for a blank) is read as a totalSize
    and its size as a magic code, which no record's is, so the pre-check gives -1 there for good (5.3.3 and
    5.5.1: ``DLedgerCommitLog.getData`` hands the reput the entries as they are)."""
    at = seg.base + seg.start
    if at >= end:
        return None        # getData hands out nothing at or past the committed position
    with store.reader(seg) as read:
        head = bytes(read(seg.start, 8))
    if not pre_check(head, at, end).stays:
        raise UnsupportedConfigError(f"{_SETTING} with enableDLegerCommitLog=true: the DLedger entry header at "
                                     f"{at} reads as a record's; not reproduced")
    total = int.from_bytes(head[:4], "big", signed=True) if len(head) >= 4 else 0
    size = int.from_bytes(head[4:8], "big", signed=True) if len(head) >= 8 else 0
    finding = anomaly(AnomalyKind.UNREACHABLE_RECORDS, seg.name, seg.base, seg.start,
                      "the DLedger entries the concurrent reput never dispatches")
    return ConcurrentStop(at, f"the DLedger entry header at segment {seg.name} position {seg.start} (magic "
                              f"{total}, size {size}) reads as totalSize {total} and magic code "
                              f"0x{size & 0xFFFFFFFF:08X}{_MINUS_ONE}", finding, stood=at)


def _data_end(store: StoreLocation, config: BrokerConfig) -> int:
    limit = data_end_limit(store, config)
    last = store.segments[-1]
    return limit if limit is not None else last.base + last.data_end


def past_the_stop(stop: ConcurrentStop, row: dict, offset: int | None) -> bool:
    """Whether a row of the cut store's walk (``offset``: its commitlog offset) is left out of the report where
    that walk goes on to ``walk_end`` (the end of the batch the task parsed, past the records of the damaged
    bytes it dispatched): the walk's own row at the damaged record (the report has it with the stop's detail:
    :func:`stop_detail`), and rows at or past ``stop.offset``, bytes no reput dispatches, read there only
    because the cut's slice ends where the batch did; where the reput goes on (``stop.resume``), the rows from
    the damaged record to there."""
    if stop.resume is not None:
        assert stop.at is not None
        return row == stop.finding or (offset is not None and stop.at <= offset < stop.resume)
    return stop.walk_end_at is not None and (row == stop.finding or (offset is not None and offset >= stop.offset))


def stop_detail(stop: ConcurrentStop) -> dict:
    """The walk's row at the stop with a detail saying what the concurrent reput does there."""
    if stop.resume is not None:
        return {**stop.finding, "detail": (
            f"{_SETTING}: ConcurrentReputMessageService goes past the damaged bytes here ({stop.why}): nothing from "
            f"commitlog offset {stop.offset} to {stop.resume} is dispatched but what it says")}
    return {**stop.finding, "detail": (
        f"{_SETTING}: ConcurrentReputMessageService stops here for good ({stop.why}): nothing at or after "
        f"commitlog offset {stop.offset} is dispatched but what it says")}


def cut_at(store: StoreLocation, offset: int, reput_end: int | None = None, resume: int | None = None) -> StoreLocation:
    """``store`` as a reput that stops for good at ``offset`` reads it: the segment holding it read up to it
    (``Segment.readable``), the later ones left out; with ``reput_end`` (``ConcurrentStop.reput_end``) the
    walk of the cut store keeps that reput end (``StoreLocation.reput_end``), so that the records of damaged
    bytes before the cut are walked as in the whole store.  With ``resume`` (``ConcurrentStop.resume``) the
    reput goes on there after the segment holding ``offset`` (read up to it): ``Segment.resume``, the
    segments from ``resume`` on kept."""
    kept: list[Segment] = []
    for seg in store.segments:
        if resume is not None:
            if seg.base < offset <= seg.base + seg.data_end:    # the damaged bytes' segment, read up to offset
                readable = offset - seg.base if offset < seg.base + seg.data_end else seg.readable
                kept.append(dataclasses.replace(seg, readable=readable, resume=resume))
            elif seg.end <= offset or seg.base >= resume:
                kept.append(seg)
            continue
        if seg.base > offset or (seg.base == offset and kept):
            break
        readable = offset - seg.base if offset < seg.base + seg.data_end else seg.readable
        kept.append(dataclasses.replace(seg, readable=readable))
    return dataclasses.replace(store, segments=kept, reput_end=reput_end if reput_end is not None else store.reput_end)


def _cut(store: StoreLocation, stop: ConcurrentStop) -> StoreLocation:
    """``store`` as the concurrent reput reads it up to ``stop`` and on (:func:`cut_at`), or, where it reads records
    of the damaged bytes the walk would not (``ConcurrentStop.pieces``), the records before the damaged one, then
    those alone, then the next file's start where it goes on (:func:`store_format.store.read_in_pieces`)."""
    if stop.pieces is None:
        return cut_at(store, stop.walk_end, stop.reput_end, stop.resume)
    assert stop.at is not None
    cut = read_in_pieces(store, stop.at, stop.pieces, stop.resume if stop.resume is not None else -1)
    return dataclasses.replace(cut, reput_end=stop.reput_end if stop.reput_end is not None else store.reput_end)


def settle(store: StoreLocation, config: BrokerConfig, anomalies: list[dict], reput_end: int | None,
           walk: Callable[[StoreLocation, list[ConcurrentStop]], tuple[W, list[dict]]],
           last_dispatched: Callable[[W], int | None],
           ) -> tuple[list[ConcurrentStop], W | None]:
    """Where ``ConcurrentReputMessageService`` goes on ``store`` from the walk's findings (``anomalies``):
    each :func:`concurrent_reput_stop` in turn, the store cut there (:func:`cut_at`) and walked again by
    ``walk`` (given the stops so far; its result and findings, the end of the data left out), until a stop
    for good or no more stop (a stop where the reput goes on, ``ConcurrentStop.resume``, is followed by the
    walk of the rest).  The blanks' empty requests the stops dispatch are then checked against the last walk's
    records (``last_dispatched``: the commitlog offset of its last dispatched record; None: none):
    :func:`check_empty_requests`.  Returns the stops and the last walk (None: no stop)."""
    stops: list[ConcurrentStop] = []
    walked: W | None = None
    for _ in range(len(store.segments) + 1):
        stop = concurrent_reput_stop(store, config, anomalies, reput_end)
        if stop is None:
            break
        stops.append(stop)
        store = _cut(store, stop)
        walked, anomalies = walk(store, stops)
        if stop.resume is None:
            break
    if walked is not None:
        check_empty_requests(config, stops, last_dispatched(walked))
    return stops, walked
