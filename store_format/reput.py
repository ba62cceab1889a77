"""The reput thread's walk over segments, and a sequential in-memory rebuild built on it.

Mirrors ``DefaultMessageStore.ReputMessageService.doReput``: it starts at the smallest commitlog
offset, takes the readable slice of the segment holding ``reputFromOffset``
(``CommitLog.getData``), and walks records (:func:`store_format.commitlog.walk_range`).  Where a
slice's walk ends decides where the next one starts (:func:`next_reput_offset`).

:func:`rebuild_in_memory` runs everything in one process.  It is the reference the Spark pipeline
is tested against, and a handy tool for small stores; it holds all outputs in memory.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator

import numpy as np

from . import commitlog as cl
from .anomalies import AnomalyKind
from .concurrent_reput import (
    ConcurrentStop,
    empty_request_files,
    index_after_last_key,
    past_the_stop,
    reput_walks_past_unreadable,
    settle,
    stop_detail,
)
from .config import BrokerConfig
from .consumequeue import QueueTable, assign_positions, build_cq_file, cq_file_name
from .dispatch import fix_malformed_text, index_keys, queue_units
from .errors import UnsupportedConfigError
from .indexfile import accepted_by_index, build_index_file, index_file_names, trailing_empty_file, trailing_file_time
from .reput_end import data_end_limit
from .store import Segment, StoreLocation

__all__ = ["next_reput_offset", "follow_reput", "walk_store", "rebuild_in_memory", "InMemoryRebuild"]


def next_reput_offset(seg: Segment, state: cl.WalkState, stop: int, file_size: int, master: bool = True) -> int | None:
    """``reputFromOffset`` after a slice's walk stopped, or None when the reput stops for good.

    * blank record: ``CommitLog.rollNextFile(reputFromOffset)``: the start of the segment after the
      one holding the (declared-size) position, which skips a segment when size mismatches pushed
      that position past the end;
    * unreadable record: on a master ``reputFromOffset += sliceSize - readSize``; a slave's reput
      stays there for good (it waits for the record to become readable);
    * slice read to its end: go on from ``reputFromOffset``.
    """
    reput = seg.base + state.reput
    if stop == cl.Stop.BLANK:
        return reput + file_size - reput % file_size
    if stop == cl.Stop.BAD:
        return reput + (state.slice_size - state.read_size) if master else None
    if stop == cl.Stop.SLICE_END:
        return reput
    if stop == cl.Stop.LIMIT:
        return None
    raise ValueError(f"walk stopped with {cl.Stop.NAMES.get(stop, stop)} inside a slice")


def detect_broker_version(store: StoreLocation, config: BrokerConfig, sample_bytes: int = 1 << 20) -> str:
    """Which broker line wrote the store, from its first records: 5.x writes V2 records for long
    topics and ends a properties string with its separator (``messageProperties2String`` keeps the
    trailing 0x02), 4.9.x removes it.  "4" when nothing tells."""
    seg = store.segments[0]
    probe = dataclasses.replace(config, brokerVersion="4")
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, seg.data_end, cl.WalkState.at_slice_start(0, seg.data_end),
                            min(sample_bytes, seg.data_end), probe, dledger=seg.dledger)
    rec = res.rec
    ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
    with_props = ok & (rec[:, cl.R_PROPS_LEN] > 0)
    if not with_props.any():
        return "4"
    text = np.asarray(res.text, dtype=np.uint8)
    last = text[rec[with_props, cl.R_PROPS_START] + rec[with_props, cl.R_PROPS_LEN] - 1 - res.text_origin]
    return "5" if (last == 2).mean() > 0.5 else "4"


def resolve_broker_version(store: StoreLocation, config: BrokerConfig) -> BrokerConfig:
    """The config with ``brokerVersion`` decided (``auto`` → :func:`detect_broker_version`, or 5.x for
    a store with BatchCQ topics or a RocksDB consume queue, which 4.x cannot have) and the store's BatchCQ topics
    (``StoreLocation.batch_topics``) in ``batch_topics``."""
    if config.batch_topics != store.batch_topics:
        config = dataclasses.replace(config, batch_topics=store.batch_topics)
    if config.brokerVersion != "auto":
        return config
    if store.batch_topics or config.rocksdb_cq:
        return dataclasses.replace(config, brokerVersion="5")
    if detect_broker_version(store, config) == "5":
        return dataclasses.replace(config, brokerVersion="5")
    return config  # "auto" reads as 4.9.x, V2 records included (BrokerConfig.accepts_v2_records)


Slice = tuple[Segment, cl.WalkState, "int | None"]   # the segment, the loop state at the slice start, the reput end


def follow_reput(store: StoreLocation, config: BrokerConfig,
                 reput_end: Callable[[], int | None] | None = None) -> Generator[Slice, tuple[cl.WalkState, int], None]:
    """``DefaultMessageStore.ReputMessageService.doReput``'s way through the commitlog, slice by slice:
    the one place of its rules for every caller (the sequential reference, the Spark job's chain).

    Yields each slice the reput reads: its segment, the walk loop's state where it starts
    (``reputFromOffset``; ``CommitLog.getData`` hands out the segment's readable bytes from there), and
    the 5.x reput end inside the last segment (``getReputEndOffset``, relative; None elsewhere).  The
    caller walks the slice and sends back ``(state, stop)`` where its walk ended; the next slice starts
    at :func:`next_reput_offset`.  It ends where nothing readable is left (``isCommitLogAvailable``:
    the reput waits for data), past the last segment, or where the reput stops for good.

    A segment with ``resume`` sends the reput there once its slice is read, and the segments are taken in list
    order (:meth:`store_format.store.StoreLocation.piece_at`), so a store read in pieces
    (:func:`store_format.store.jump_at`: a file read up to a record, then again from an earlier or later one) is
    followed as listed.

    ``reput_end``: gives the 5.x reput end (absolute), asked once, on reaching the last segment
    (:func:`data_end_limit`; callers that know it cannot matter pass None)."""
    file_size = config.mappedFileSizeCommitLog
    last = store.segments[-1]
    limit_abs: int | None = None
    asked = False
    reput = store.segments[0].base + store.segments[0].start
    cur = 0   # the list position the reput reads at (StoreLocation.piece_at: a store read in pieces)
    while True:
        found = store.piece_at(reput, cur)
        if found is None:
            return
        cur, seg = found
        pos = reput - seg.base
        if pos >= seg.data_end:
            if seg.resume > reput:   # the concurrent reput goes on past damaged bytes (Segment.resume)
                reput = seg.resume
                continue
            return  # nothing readable left: the reput waits for data
        if seg is last and not asked:
            limit_abs, asked = (reput_end() if reput_end is not None else None), True
        limit_rel = limit_abs - seg.base if limit_abs is not None and seg is last else None
        state, stop = yield seg, cl.WalkState.at_slice_start(pos, seg.data_end), limit_rel
        nxt = next_reput_offset(seg, state, stop, file_size, reput_walks_past_unreadable(config))
        jumped = seg.resume >= 0 and stop != cl.Stop.LIMIT
        if jumped:
            # whatever the walk of the slice the batch tasks parsed met at its end; or a reput read in pieces
            # (store.jump_at), which may go back: on in the pieces after this one
            nxt, cur = seg.resume, cur + 1
        if nxt is None or (nxt <= reput and not jumped):
            return
        reput = nxt


def walk_store(store: StoreLocation, config: BrokerConfig, *, reuse_memory: bool = False,
               scratch: cl.Scratch | None = None) -> Iterator[tuple[Segment, cl.WalkResult]]:
    """Yield each slice the reput reads (:func:`follow_reput`), in order, with its walk.  With
    ``reuse_memory`` (or a ``scratch`` to reuse across calls) every result is only valid until the
    next one is yielded."""
    config = resolve_broker_version(store, config)
    if scratch is None and reuse_memory:
        scratch = cl.Scratch()
    steps = follow_reput(store, config, lambda: data_end_limit(store, config))
    try:
        seg, state, limit_rel = next(steps)
        while True:
            with store.reader(seg) as read:
                res = cl.walk_range(read, seg.base, seg.data_end, state, seg.data_end + 1, config,
                                    limit_rel=limit_rel, window=seg.data_end - state.bufpos + 16, scratch=scratch,
                                    dledger=seg.dledger)
            yield seg, res
            seg, state, limit_rel = steps.send((res.state, res.stop))
    except StopIteration:
        return


@dataclasses.dataclass
class InMemoryRebuild:
    consumequeue: dict[str, bytes]       # "topic/queueId/name" -> bytes
    index: list[tuple[str, bytes]]       # (name, bytes) in creation order
    records: int
    dispatched: int
    keys: int
    anomalies: list[dict]
    last_dispatched: int | None = None   # the commitlog offset of the last record dispatched (None: none)


def rebuild_in_memory(store: StoreLocation, config: BrokerConfig, tz: _dt.tzinfo = _dt.timezone.utc) -> InMemoryRebuild:
    """Run the reput over the whole store in this process and return the files it would write.  With
    5.x ``enableBuildConsumeQueueConcurrently=true`` the walk ends where that reput stops for good
    (:func:`store_format.concurrent_reput.concurrent_reput_stop`), the walk's row there saying so.

    Raises:
        UnsupportedConfigError: ``enableConsumeQueueExt=true``, BatchCQ topics or a RocksDB consume queue
            (only the pipeline writes those layouts: :mod:`store_format.consumequeue_ext`,
            :mod:`store_format.batchconsumequeue`, :mod:`store_format.rocksdb_cq`); the concurrent reput
            over damage it does not reproduce.
    """
    config = resolve_broker_version(store, config)
    layout = ("ConsumeQueueExt files (enableConsumeQueueExt=true)" if config.enableConsumeQueueExt else
              "batch consume queues (BatchCQ topics)" if config.batch_topics else
              "a RocksDB consume queue (storeType=defaultRocksDB)" if config.rocksdb_cq else None)
    if layout:
        raise UnsupportedConfigError(f"rebuild_in_memory does not write {layout}: use pipelines.rebuild")
    result, end_of_data = _rebuild_in_memory(store, config, tz)
    found = [a for a in result.anomalies if a is not end_of_data]
    end = (next(s.base for s in store.segments if s.name == end_of_data["segment"]) + end_of_data["position"]
           if end_of_data else None)
    def walk(cut: StoreLocation, stops: list[ConcurrentStop]) -> tuple[InMemoryRebuild, list[dict]]:
        res, eod = _rebuild_in_memory(cut, config, tz, stops)
        return res, [a for a in res.anomalies if a is not eod]

    def last_dispatched(res: InMemoryRebuild | None) -> int | None:
        assert res is not None   # settle asks only of a walk it made
        return res.last_dispatched

    stops, walked = settle(store, config, found, end, walk, last_dispatched)
    if walked is None:
        return result
    result = walked
    base = {s.name: s.base for s in store.segments}
    result.anomalies = [a for a in result.anomalies
                        if not any(past_the_stop(s, a, base[a["segment"]] + a["position"]) for s in stops)]
    result.anomalies += [stop_detail(s) for s in stops]
    for rel, pieces in empty_request_files(config, stops):   # blanks' empty requests: topic "", queue 0
        result.consumequeue[rel.removeprefix("consumequeue")] = b"".join(bytes(p) for p in pieces)
    return result


def _rebuild_in_memory(store: StoreLocation, config: BrokerConfig, tz: _dt.tzinfo,
                       stops: list[ConcurrentStop] | None = None) -> tuple[InMemoryRebuild, dict | None]:
    """:func:`rebuild_in_memory`'s walk and files, and the row where the data of the last segment ends
    (``stops``: where the concurrent reput stopped or went on, its blanks' empty requests dispatched)."""
    cq_size = config.cq_file_size
    cap = config.index_entries_per_file
    queues = QueueTable()
    per_queue: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    key_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    index_carry = 0
    n_records = n_dispatched = n_keys = 0
    last_dispatched: int | None = None
    dispatched_after_last_key = False
    first_dispatch_ts: int | None = None
    anomalies: list[dict] = []
    end_of_data: dict | None = None
    for seg, res in walk_store(store, config, reuse_memory=True):
        fix_malformed_text(res, len(config.delay_levels_ms))
        rec = res.rec
        n_records += len(rec)
        ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
        n_dispatched += int(ok.sum())
        if ok.any():
            last_dispatched = max(last_dispatched or 0, int(rec[ok, cl.R_PHYS].max()))
        for i in np.nonzero(~ok)[0]:
            anomalies.append({"segment": seg.name, "position": int(rec[i, cl.R_POS]),
                              "kind": AnomalyKind.SIZE_MISMATCH.value, "declared": int(rec[i, cl.R_TOTAL]),
                              "structural": int(rec[i, cl.R_STRUCT])})
        if res.stop == cl.Stop.BAD:
            anomalies.append({"segment": seg.name, "position": res.state.bufpos,
                              "kind": AnomalyKind.UNREADABLE_RECORD.value})
            if seg is store.segments[-1]:
                with store.reader(seg) as read:
                    if not bytes(read(res.state.bufpos, min(8, seg.data_end - res.state.bufpos))).strip(b"\0"):
                        end_of_data = anomalies[-1]   # zeros after the last record: the end of the data
        if ok.any() and first_dispatch_ts is None:
            first_dispatch_ts = int(rec[np.argmax(ok), cl.R_STORE_TS])
        # consume queues
        units = queue_units(res)
        if len(units):
            qidx = queues.numbers(units.queues)[units.queue]
            pos = assign_positions(qidx, units.offset, units.size, units.queue_offset, cq_size, queues.states)
            kept = pos >= 0
            for q in np.unique(qidx[kept]):
                m = kept & (qidx == q)
                per_queue[int(q)].append((pos[m], units.offset[m], units.size[m], units.tags_code[m]))
        # index
        if config.writes_index_files:
            keys = index_keys(res)
            if len(keys):
                recs_with_keys, first_key = np.unique(keys.record, return_index=True)
                acc, index_carry = accepted_by_index(rec[recs_with_keys, cl.R_PHYS], index_carry)
                accepted_recs = recs_with_keys[acc]
                mask = np.isin(keys.record, accepted_recs)
                key_parts.append((keys.key_hash[mask], keys.offset[mask], keys.store_ts[mask]))
                n_keys += int(mask.sum())
                if mask.any():
                    last_rec = int(keys.record[mask][-1])
                    dispatched_after_last_key = bool(ok[last_rec + 1:].any())
                else:
                    dispatched_after_last_key = dispatched_after_last_key or bool(ok.any())
            elif ok.any():
                dispatched_after_last_key = True
    dispatched_after_last_key = index_after_last_key(stops or [], index_carry, dispatched_after_last_key)
    # consume queue files
    cq: dict[str, bytes] = {}
    states = queues.states
    for q, parts in per_queue.items():
        topic, qid = queues.names[q]
        pos = np.concatenate([p[0] for p in parts])
        off = np.concatenate([p[1] for p in parts])
        size = np.concatenate([p[2] for p in parts])
        tags = np.concatenate([p[3] for p in parts])
        file_of = pos - pos % cq_size
        blank_until = int(states[q, 3])
        if states[q, 4] > file_of.max():  # created by getLastMappedFile, no unit written into it
            cq[f"{topic}/{qid}/{cq_file_name(int(states[q, 4]))}"] = bytes(cq_size)
        for f in np.unique(file_of):
            m = file_of == f
            cq[f"{topic}/{qid}/{cq_file_name(int(f))}"] = build_cq_file(int(f), cq_size, pos[m], off[m], size[m],
                                                                         tags[m], blank_until).tobytes()
    # index files
    index: list[tuple[str, bytes]] = []
    # a blank's empty request of the concurrent reput takes (creates) the index file as a record does
    if config.writes_index_files and (n_dispatched or any(s.empty_requests for s in stops or [])):
        hashes = np.concatenate([p[0] for p in key_parts]) if key_parts else np.zeros(0, np.int32)
        offs = np.concatenate([p[1] for p in key_parts]) if key_parts else np.zeros(0, np.int64)
        tss = np.concatenate([p[2] for p in key_parts]) if key_parts else np.zeros(0, np.int64)
        n_files = -(-len(hashes) // cap) if len(hashes) else 0
        trailing_empty = trailing_empty_file(len(hashes), cap, dispatched_after_last_key)
        blobs, firsts = [], []
        prev_off = prev_ts = 0
        for f in range(n_files):
            sl = slice(f * cap, (f + 1) * cap)
            blobs.append(build_index_file(hashes[sl], offs[sl], tss[sl], max_hash_slot_num=config.maxHashSlotNum,
                                          max_index_num=config.maxIndexNum, prev_end_offset=prev_off,
                                          prev_end_ts=prev_ts))
            firsts.append(int(tss[sl][0]))
            prev_off, prev_ts = int(offs[sl][-1]), int(tss[sl][-1])
        if trailing_empty:
            blobs.append(build_index_file(hashes[:0], offs[:0], tss[:0], max_hash_slot_num=config.maxHashSlotNum,
                                          max_index_num=config.maxIndexNum, prev_end_offset=prev_off,
                                          prev_end_ts=prev_ts, empty_index_count=config.empty_index_count))
            firsts.append(trailing_file_time(prev_ts, first_dispatch_ts))
        index = list(zip(index_file_names(firsts, tz), blobs))
    return InMemoryRebuild(cq, index, n_records, n_dispatched, n_keys, anomalies, last_dispatched), end_of_data
