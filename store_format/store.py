"""Finding and reading a broker store through ``pyarrow.fs`` (local paths, ``hdfs://``, ``s3://``).

Mirrors what ``MappedFileQueue.load`` accepts: segments named by their 20-digit base offset, every
one exactly ``mappedFileSizeCommitLog`` long, loaded in name order.
"""
from __future__ import annotations

import dataclasses
import mmap

import numpy as np
import pyarrow.fs as pafs

from .config import BrokerConfig, load_broker_config
from .dledger import DLedgerLog, dledger_has_data, find_dledger_log
from .errors import StoreLayoutError
from .layout import SEGMENT_NAME_RE
from .store_layouts import check_store_layout, store_batch_topics

__all__ = ["Segment", "StoreLocation", "open_store", "resolve", "read_text", "Reader", "jump_at", "read_in_pieces",
           "then_pieces"]


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """A filesystem and a path inside it for a local path or a URI."""
    if "://" not in uri:
        import os
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    return pafs.FileSystem.from_uri(uri)


def read_text(uri: str) -> str:
    fs, path = resolve(uri)
    try:
        with fs.open_input_stream(path) as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        raise StoreLayoutError(f"{uri}: no such file") from None


@dataclasses.dataclass(frozen=True)
class Segment:
    """One commitlog segment."""
    index: int       # position in name order
    name: str
    base: int        # base offset (= its name)
    size: int        # file size in bytes
    path: str        # path inside the filesystem
    mtime_ms: int | None
    readable: int = -1  # where the data the broker reads ends (its write position); -1: the whole file
    # where the dispatch of this segment begins: 0, or inside the first segment a 5.5.1 abnormal recovery with
    # enableAcceleratedRecovery walks from (the checkpoint's logicsPhysicalOffset: store_format.recovery)
    start: int = 0
    dledger: bool = False  # a DLedger data file: records behind entry headers (store_format.dledger)
    # RocksDB consume queue: the record at commitlog offset 0 is dispatched (a restart's abnormal recovery:
    # store_format.recovery), not read only as a rebuild into an empty database does (store_format.rocksdb_cq)
    dispatch_offset_zero: bool = False
    # ... and with its keys (False: its units only, as a restart's second reput dispatches it after the
    # recovery indexed later records: store_format.restart_reput.SecondReput)
    index_offset_zero: bool = True
    # a restart's second reput that starts before the first record the recovery dispatched indexes none of the
    # records below this commitlog offset, which it queues (store_format.restart_reput.SecondReput.index_from);
    # -1: none left out
    index_from: int = -1
    # where the reput goes on once this segment's readable slice is read, whatever its walk's end (a 5.x
    # concurrent reput whose pre-check walked past damaged bytes into the next file, every batch task ended:
    # store_format.concurrent_reput.cut_at); -1: where the walk's end says (store_format.reput.follow_reput)
    resume: int = -1

    @property
    def end(self) -> int:
        return self.base + self.size

    @property
    def data_end(self) -> int:
        """Segment position where the readable slice ends (``CommitLog.getData``): the file size,
        or the write position a recovery left (:func:`store_format.recovery.plan_recovery`)."""
        return self.size if self.readable < 0 else self.readable


@dataclasses.dataclass
class StoreLocation:
    uri: str
    fs: pafs.FileSystem
    root: str
    segments: list[Segment]
    dledger: DLedgerLog | None = None  # enableDLegerCommitLog: the DLedger log the last segments come from
    # topics whose queues go to batchconsumequeue/ (config/topics.json: store_layouts.store_batch_topics)
    batch_topics: frozenset[str] = frozenset()
    # a restart's second reput indexes the keys of the record at this offset a second time (-1: none;
    # store_format.restart_reput.SecondReput)
    reindex: int = -1
    # enableDLegerCommitLog=true on a store with old commitlog/ files and no DLedger data file yet (converted in
    # place, never started with DLedger): its next start recovers the old files with the base CommitLog's
    # recovery (DLedgerCommitLog's isInrecoveringOldCommitlog; 4.9.8 the normal one, after a crash too), and the
    # store is read as an ordinary one
    dledger_pending: bool = False
    # 5.x getReputEndOffset of a store cut where the concurrent reput stops dispatching after records of the
    # damaged bytes it did dispatch: the whole store's, which the cut does not move (None: from the data,
    # store_format.reput_end.data_end_limit; store_format.concurrent_reput.cut_at)
    reput_end: int | None = None
    # a 5.5.1 DLedger crash restart whose start's reput begins before the walk's data file, after a queue cut that
    # left these consume queues with no file (ConsumeQueue.correctMinOffset: their max -1): from the segment at list
    # position reset_from on (the reput's pass, jump_at) they start empty again (QueueCut.reset,
    # pipelines.build.build_queue_bucket)
    queue_reset: tuple[tuple[str, int], ...] = ()
    reset_from: int = -1

    @property
    def commitlog_dir(self) -> str:
        return f"{self.root}/commitlog"

    def segment_at(self, offset: int) -> Segment | None:
        """The segment holding a commitlog offset [MappedFileQueue.findMappedFileByOffset]."""
        lo, hi = 0, len(self.segments)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.segments[mid].end <= offset:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.segments) and self.segments[lo].base <= offset:
            return self.segments[lo]
        return None

    def piece_at(self, offset: int, first: int = 0) -> tuple[int, Segment] | None:
        """The segment the reput reads ``offset`` in, from list position ``first`` on, with its position: the first
        that holds it (from its ``start``) where it has data, else the first that holds it.  The same as
        :meth:`segment_at` but for a store whose segments a reput reads in pieces (:func:`jump_at`: a file read
        up to a record and again from another, in reading order)."""
        found = None
        for k in range(first, len(self.segments)):
            seg = self.segments[k]
            if seg.base + seg.start <= offset < seg.end:
                if offset - seg.base < seg.data_end:
                    return k, seg
                found = found or (k, seg)
        return found

    def reader(self, segment: Segment) -> Reader:
        return Reader(self.fs, segment.path)

    def broker_may_be_running(self) -> bool:
        """A broker creates ``abort`` at start and deletes it at a clean shutdown."""
        return self.fs.get_file_info(f"{self.root}/abort").type == pafs.FileType.File

    def total_bytes(self) -> int:
        return sum(s.size for s in self.segments)


class Reader:
    """``read(pos, length)`` on one segment; opens the file read-only, lazily.

    On a local file it also offers ``view(pos, length)``: the bytes in place, through a read-only
    memory map, without copying them.  (Page-cache pages are shared, where a copy needs fresh
    memory: on a small VM that first touch costs more than the walk.)
    """

    def __init__(self, fs: pafs.FileSystem, path: str) -> None:
        self._fs = fs
        self._path = path
        self._file: pafs.NativeFile | None = None
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        if isinstance(fs, pafs.LocalFileSystem):
            self.view = self._view  # only local files can be mapped

    def _view(self, pos: int, length: int) -> np.ndarray:
        if self._map is None:
            import os
            if self._fd is None:
                self._fd = os.open(self._path, os.O_RDONLY)
            size = os.fstat(self._fd).st_size
            if size == 0:
                return np.zeros(0, dtype=np.uint8)
            self._map = mmap.mmap(self._fd, size, prot=mmap.PROT_READ)
        data = np.frombuffer(self._map, dtype=np.uint8)
        return data[pos:pos + max(length, 0)]

    def __call__(self, pos: int, length: int):
        if self._file is None:
            self._file = self._fs.open_input_file(self._path)
        if length <= 0:
            return b""
        return self._file.read_at(length, pos)

    def read_into(self, pos: int, out) -> int:
        """Read ``len(out)`` bytes from ``pos`` into a reusable array; returns the count read."""
        view = memoryview(out).cast("B")
        if isinstance(self._fs, pafs.LocalFileSystem):
            import os
            if self._fd is None:
                self._fd = os.open(self._path, os.O_RDONLY)
            done = 0
            while done < len(view):
                n = os.preadv(self._fd, [view[done:]], pos + done)
                if n <= 0:
                    break
                done += n
            return done
        data = memoryview(self(pos, len(view))).cast("B")
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        # a map still viewed by a walk result stays open until the last view goes (no explicit close)
        self._map = None
        if self._fd is not None:
            import os
            os.close(self._fd)
            self._fd = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(uri: str, config: BrokerConfig) -> StoreLocation:
    """List and check a store's commitlog segments.

    Raises:
        StoreLayoutError: a layout this project does not rebuild (DLedger or ConsumeQueueExt without the
            settings that made them, RocksDB consume queues: :func:`store_format.store_layouts.check_store_layout`;
            a topic table or batch queues the broker would not load:
            :func:`store_format.store_layouts.store_batch_topics`), no
            ``commitlog/`` folder, no segments, a segment whose size is not ``mappedFileSizeCommitLog``
            (the broker refuses to load it), or segments that do not follow each other.
    """
    fs, root = resolve(uri)
    root = root.rstrip("/")
    check_store_layout(fs, root, uri, dledger=config.enableDLegerCommitLog, cq_ext=config.enableConsumeQueueExt,
                       rocksdb_cq=config.rocksdb_cq)
    batch_topics = store_batch_topics(fs, root, uri, broker_version=config.brokerVersion,
                                      file_size=config.mapperFileSizeBatchConsumeQueue)
    if config.rocksdb_cq:
        # RocksDBConsumeQueueStore.findOrCreateConsumeQueue makes a RocksDBConsumeQueue whatever the topic's
        # queue.type, and putMessagePosition0 puts one unit per record at its queue offset (DispatchEntry.from:
        # no batch size, no base offset): a BatchCQ topic's queues are ordinary ones there
        batch_topics = frozenset()
    if config.enableDLegerCommitLog:
        return dataclasses.replace(_open_dledger_store(uri, fs, root, config), batch_topics=batch_topics)
    info = fs.get_file_info(f"{root}/commitlog")
    if info.type != pafs.FileType.Directory:
        raise StoreLayoutError(
            f"{uri}: no commitlog/ folder. Pass the broker's store root (storePathRootDir), the folder that "
            "holds commitlog/, consumequeue/ and index/.")
    files = _segment_files(fs, f"{root}/commitlog")
    if not files:
        raise StoreLayoutError(f"{uri}/commitlog holds no segment files (20-digit names)")
    return StoreLocation(uri, fs, root, _segments(files, config), batch_topics=batch_topics)


def _segment_files(fs: pafs.FileSystem, folder: str) -> list[pafs.FileInfo]:
    try:
        entries = fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    except NotADirectoryError:
        return []
    return sorted((e for e in entries if e.type == pafs.FileType.File and SEGMENT_NAME_RE.match(e.base_name)),
                  key=lambda e: e.base_name)


def _open_dledger_store(uri: str, fs: pafs.FileSystem, root: str, config: BrokerConfig) -> StoreLocation:
    """A DLedger store (``DLedgerCommitLog``): the old ``commitlog/`` segments of a store converted in
    place, below ``dividedCommitlogOffset``, then the DLedger data files up to the committed position
    (``getData`` hands out nothing at or past it).  Old segments and no DLedger data file (a store converted in
    place that never started with DLedger): the old segments alone, ``dledger_pending``."""
    legacy = _segments(_segment_files(fs, f"{root}/commitlog"), config)
    if legacy and not dledger_has_data(fs, root, self_id=config.dLegerSelfId,
                                       data_path=config.storePathDLedgerCommitLog):
        return StoreLocation(uri, fs, root, legacy, dledger_pending=True)
    log = find_dledger_log(fs, root, uri, self_id=config.dLegerSelfId, data_path=config.storePathDLedgerCommitLog,
                           file_size=config.mappedFileSizeCommitLog)
    if legacy and legacy[-1].end != log.first_offset:
        raise StoreLayoutError(
            f"{uri}: commitlog/ ends at {legacy[-1].end}, but the DLedger data starts at {log.first_offset}: a store "
            "converted in place continues its old commitlog right after its last file (DLedgerCommitLog.recover)")
    if config.rocksdb_cq:
        # a RocksDB consume queue: the old files' record at offset 0 is dispatched, keys and all (the live reput
        # of the broker that wrote them, and each start's reput from DLedgerCommitLog.getMinOffset, have no
        # dispatchFromPhyOffset), not read only as a rebuild into an empty database does (store_format.rocksdb_cq)
        legacy = [dataclasses.replace(seg, dispatch_offset_zero=True) for seg in legacy]
    segments = _committed_segments(legacy, log)
    if not segments:
        raise StoreLayoutError(f"{uri}: nothing is committed in {log.base_dir.rsplit('/', 1)[-1]}/ (checkpoint "
                               f"committedIndex={log.committed_index}) and there is no old commitlog: the broker's "
                               "reput has nothing to dispatch")
    return StoreLocation(uri, fs, root, segments, dledger=log)


def _committed_segments(legacy: list[Segment], log: DLedgerLog) -> list[Segment]:
    """The old commitlog's segments, then the DLedger data files up to ``log``'s committed position."""
    segments = list(legacy)
    for name, size, path, mtime in log.files:
        base = int(name)
        if base >= log.committed_pos:
            break
        readable = min(size, log.committed_pos - base)
        segments.append(Segment(len(segments), name, base, size, path, mtime,
                                readable=readable if readable < size else -1, dledger=True))
    return segments


def with_dledger_committed(st: StoreLocation, committed_index: int, committed_pos: int) -> StoreLocation:
    """``st`` (a DLedger store) read up to another committed entry: the one a restart's recovery leaves
    (:mod:`store_format.dledger_recovery`)."""
    assert st.dledger is not None
    log = dataclasses.replace(st.dledger, committed_index=committed_index, committed_pos=committed_pos)
    legacy = [seg for seg in st.segments if not seg.dledger]
    return dataclasses.replace(st, segments=_committed_segments(legacy, log), dledger=log)


def _segments(files: list[pafs.FileInfo], config: BrokerConfig) -> list[Segment]:
    segments: list[Segment] = []
    for i, e in enumerate(files):
        if e.size != config.mappedFileSizeCommitLog:
            raise StoreLayoutError(
                f"commitlog segment {e.base_name} is {e.size} bytes, but mappedFileSizeCommitLog is "
                f"{config.mappedFileSizeCommitLog}: the broker would refuse to load it. Pass the broker.conf the "
                "store was written with (--config), or restore the segment's full length.")
        base = int(e.base_name)
        if segments and base != segments[-1].end:
            raise StoreLayoutError(
                f"commitlog segment {e.base_name} does not follow {segments[-1].name} (expected base "
                f"{segments[-1].end}); the broker cannot map offsets across a missing segment")
        mtime = int(e.mtime_ns // 1_000_000) if e.mtime_ns is not None else None
        segments.append(Segment(i, e.base_name, base, e.size, e.path, mtime))
    return segments


def load_config_for(config_uri: str | None, **overrides: object) -> BrokerConfig:
    return load_broker_config(read_text(config_uri) if config_uri else None, **overrides)


def read_from(st: StoreLocation, offset: int) -> StoreLocation:
    """``st`` as a reput reads it that starts at ``offset`` (``ReputMessageService.setReputFromOffset``): the segments
    that end after it, the first read from it, renumbered in reading order."""
    segs = [seg for seg in st.segments if seg.end > offset]
    segs[0] = dataclasses.replace(segs[0], start=max(offset - segs[0].base, 0))
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)])


def read_nothing(st: StoreLocation) -> StoreLocation:
    """``st`` as a reput reads it that starts at the log's end (``ReputMessageService.isCommitLogAvailable`` false from
    the start): every segment kept, none of its bytes readable, so nothing dispatched."""
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, readable=0) for seg in st.segments])


def jump_at(st: StoreLocation, lo: int, hi: int, walked_from: int = -1) -> StoreLocation:
    """``st`` as a reput reads it that dispatches up to ``lo`` and goes on at ``hi`` (both record starts, ``lo``
    inside the data): the segment holding ``lo`` read up to it, the reput going on at ``hi``
    (``Segment.resume``).  Past ``lo`` (:func:`_skip`), the records between are left out; before it, the
    segments from the one holding ``hi`` on are read again, from ``hi``, after the first ones (the records from
    ``hi`` to ``lo`` dispatched a second time: :meth:`StoreLocation.piece_at`); at it, the reading goes on there in a
    second pass (between the two, :func:`then_pieces`' ``after`` puts pieces).  A 5.x DLedger crash restart whose
    recovery's walk ends at a damaged message before the log's end, and whose start's reput begins elsewhere, or at
    that message after records its check parsed where it was set (:mod:`store_format.dledger_crash`);
    ``walked_from``: the first read starts at the segment of that offset (the crash recovery's walk from a later data
    file than the reput's start, ``DLedgerCrash.before``)."""
    if hi > lo:
        return _skip(st, lo, hi)
    first: list[Segment] = []
    again: list[Segment] = []
    for seg in st.segments:
        if seg.base < walked_from:
            pass
        elif seg.end == lo:
            first.append(dataclasses.replace(seg, resume=hi))
        elif seg.end < lo:
            first.append(seg)
        elif seg.base < lo:
            first.append(dataclasses.replace(seg, readable=lo - seg.base, resume=hi))
        if seg.base <= hi < seg.end:
            again.append(dataclasses.replace(seg, start=hi - seg.base))
        elif seg.base > hi:
            again.append(seg)
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(first + again)])


def _skip(st: StoreLocation, lo: int, hi: int) -> StoreLocation:
    """:func:`jump_at` past ``lo``: the segments wholly between ``lo`` and ``hi`` left out, the one holding ``hi``
    read from it; when both lie in one file, that file is read as two segments (the second from ``hi``); at a
    segment's start, the segment before goes on at ``hi``."""
    kept: list[Segment] = []
    for seg in st.segments:
        if seg.end == lo:
            kept.append(dataclasses.replace(seg, resume=hi))
            continue
        if seg.end < lo or seg.base >= hi:
            kept.append(seg)
            continue
        if seg.base < lo:
            kept.append(dataclasses.replace(seg, readable=lo - seg.base, resume=hi))
        if seg.base <= hi < seg.end:
            kept.append(dataclasses.replace(seg, start=hi - seg.base))
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(kept)])


def read_in_pieces(st: StoreLocation, lo: int, runs: tuple[tuple[int, int], ...], then: int = -1) -> StoreLocation:
    """``st`` as a reput reads it that dispatches up to ``lo`` (inside the data), then only the byte ranges
    ``runs`` (``(start, end)`` commitlog offsets, in order, each whole records, after ``lo`` in its file), then
    goes on at ``then``, the next file's start (-1: nowhere, the later segments left out): the segment holding
    ``lo`` read up to it, then as one piece per run (``Segment.start``, ``readable``), each going on at the next
    (``Segment.resume``), in reading order (:meth:`StoreLocation.piece_at`).  A 5.x concurrent reput
    (``DefaultMessageStore.ConcurrentReputMessageService``) whose batch tasks (``CommitLog.checkMessageAndReturnSize``)
    read records whole inside damaged bytes at other positions than the sequential reput would
    (:mod:`store_format.concurrent_reput`)."""
    kept: list[Segment] = []
    for seg in st.segments:
        if seg.end <= lo:
            kept.append(seg)
        elif seg.base <= lo:
            stops = [*(a for a, _ in runs), then]
            kept.append(dataclasses.replace(seg, readable=lo - seg.base, resume=stops[0]))
            for (a, b), nxt in zip(runs, stops[1:]):
                assert seg.base + seg.start <= lo <= a < b <= seg.base + seg.data_end, (lo, a, b)
                kept.append(dataclasses.replace(seg, start=a - seg.base, readable=b - seg.base, resume=nxt))
        elif then >= 0 and seg.base >= then:
            kept.append(seg)
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(kept)])


def then_pieces(st: StoreLocation, runs: tuple[tuple[int, int], ...], holding: list[Segment],
                then: int = -1, after: int = -1) -> StoreLocation:
    """``st`` as a reput reads it that, once its last segment is read, dispatches only the byte ranges ``runs``
    (``(start, end)`` commitlog offsets, in order, each whole records as the base ``CommitLog`` writes them, with
    no DLedger entry header), in the files of ``holding`` that hold them, then stops, or with ``then`` (a record's or
    a DLedger entry's start in ``st``) goes on there, reading ``st``'s segments from it again: one piece per run
    (``Segment.start``, ``readable``), each going on at the next (``Segment.resume``), in reading order
    (:meth:`StoreLocation.piece_at`).  A 5.x DLedger crash restart whose start's reput, set inside an entry or an
    old file's record, parses messages there before it jumps to the end of the bytes ``getData`` gave, or before
    its check lands on an entry's start, where it walks on (``ReputMessageService.doReput``,
    :mod:`store_format.dledger_reput_inside`).

    ``after`` (a list position, instead of ``then``): the pieces are read once that segment is, a segment
    :func:`jump_at` sent on elsewhere (the walk's pass, going on before the walk's data file, or from where the walk
    ended early at a damaged message back to where the reput goes on: ``Segment.resume``), and the last one goes on
    where it did, the segments after it kept as they are."""
    k = len(st.segments) - 1 if after < 0 else after
    last = st.segments[k]
    assert runs and (last.resume < 0 if after < 0 else last.resume >= 0 and then < 0), (last, runs, then)
    kept = [*st.segments[:k], dataclasses.replace(last, resume=runs[0][0])]
    for (a, b), nxt in zip(runs, [*(a for a, _ in runs[1:]), then if after < 0 else last.resume]):
        seg = next(s for s in holding if s.base <= a and b <= s.end)
        kept.append(dataclasses.replace(seg, start=a - seg.base, readable=b - seg.base, resume=nxt, dledger=False))
    if after >= 0:   # the pass the segment went on to, as it was
        kept += st.segments[k + 1:]
    elif then >= 0:   # the segments from the one holding it, read again from there
        again = [seg for seg in st.segments if seg.end > then]
        assert again and again[0].base + again[0].start <= then, (then, again[:1])
        kept += [dataclasses.replace(again[0], start=then - again[0].base), *again[1:]]
    return dataclasses.replace(st, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(kept)])


def pieces_at_refusals(st: StoreLocation, refusals: tuple[tuple[int, tuple[tuple[int, int], ...]], ...],
                       holding: list[Segment], first: int) -> StoreLocation:
    """``st`` as a reput reads it whose check refuses the record at each ``at`` of ``refusals`` in an old commitlog
    file (from list position ``first`` on) and dispatches the records it parses 48 bytes further (``(start, end)``,
    whole records in the files of ``holding``; a blank's empty request, a record of no bytes, not read) before it
    goes on at that file's end: the file read up to ``at``, then those records (:func:`then_pieces`' ``after``),
    then the next file (``DLedgerCommitLog.checkMessageAndReturnSize``, ``ReputMessageService.doReput``:
    :attr:`store_format.dledger_crash_plan.DLedgerCrash.old_parsed`)."""
    for at, records in refusals:
        k = next(k for k in range(first, len(st.segments)) if not st.segments[k].dledger
                 and st.segments[k].base + st.segments[k].start <= at < st.segments[k].end)
        seg = st.segments[k]
        assert seg.resume < 0 and at - seg.base <= seg.data_end, (seg, at)
        segs = list(st.segments)
        segs[k] = dataclasses.replace(seg, readable=at - seg.base, resume=seg.end)
        st = dataclasses.replace(st, segments=segs)
        runs = tuple((a, b) for a, b in records if b > a)
        if runs:
            st = then_pieces(st, runs, holding, after=k)
    return st
