"""The build stage of a rebuild, on the driver: the build tasks (:class:`pipelines.build.BuildTask`)
over the reput's walk of the scan and the chain (:func:`pipelines.stages.scan_and_chain`), then the
names of the index files (``IndexService``: a file is named after the store time of its first entry)
and the empty index file the broker adds after a full one."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow.fs as pafs

from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import BCQ_DIR, BCQ_UNIT_SIZE
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.consumequeue_recovery import BCQ_RULES, CQ_RULES, file_units
from store_format.errors import StoreError, StoreLayoutError
from store_format.indexfile import index_file_names_checked, index_file_pieces, trailing_empty_file, trailing_file_time
from store_format.layout import CQ_UNIT_SIZE
from store_format.store import resolve
from store_format.timeutil import zone

from .anomalies import at_offset
from .build import BuildTask, index_part_name, index_tasks, merge_index_rows, write_file
from .build_batch import BCQ_KIND
from .chain import index_file_parts
from .commit import StagedOutput
from .stages import ReputWalk, TaskRunner
from .workfiles import queue_bucket, read_keys

__all__ = ["Built", "build_files", "queue_layout"]


def queue_layout(config: BrokerConfig, batch: bool) -> tuple[str, int, int]:
    """A queue's folder, file size and unit size: a batch consume queue's (46-byte units) or a consume queue's."""
    return (BCQ_DIR, config.mapperFileSizeBatchConsumeQueue, BCQ_UNIT_SIZE) if batch \
        else ("consumequeue", config.cq_file_size, CQ_UNIT_SIZE)


@dataclasses.dataclass
class Built:
    """What the build stage wrote."""
    cq_files: list[dict]
    index_files: list[dict]        # in file order, with their names
    units: int
    queues: int
    anomalies: list[dict]
    bcq_files: list[dict] = dataclasses.field(default_factory=list)   # batchconsumequeue/ (build_batch)
    rocksdb_index: int | None = None   # keys of the 5.5 RocksDB message index (rebuild: indexRocksDBEnable)

    @property
    def cq_file_count(self) -> int:
        return len(self.cq_files)

    def rows_from_bytes(self, staged: StagedOutput, written: list[tuple[str, int, int]], config: BrokerConfig) -> None:
        """The rows of queue files written after the build (``(topic, queue id, file start)``; a BatchCQ topic's in
        ``bcq_files``: ``pipelines.restart_cut.apply_cut``'s, topic "" queue 0's), from their staged bytes as a
        start's ``ConsumeQueue.recover`` reads them (:func:`store_format.consumequeue_recovery.file_units`): the
        message units, the commitlog offsets of the first and the last, as the build's own rows count them; a row
        added for a file the build did not write (no store times).  ``units`` and ``queues`` follow."""
        figures = []
        for topic, qid, start in sorted(set(written)):
            batch = topic in config.batch_topics
            folder, _size, _unit = queue_layout(config, batch)
            offsets = file_units(staged.read_staged(f"{folder}/{topic}/{qid}/{cq_file_name(start)}"),
                                 BCQ_RULES if batch else CQ_RULES)
            figures.append((topic, qid, start, len(offsets), int(offsets[0]) if len(offsets) else None,
                            int(offsets[-1]) if len(offsets) else None))
        self.set_rows(figures, config)

    def set_rows(self, figures: list[tuple[str, int, int, int, int | None, int | None]], config: BrokerConfig) -> None:
        """The rows of queue files written after the build, from figures known: (topic, queue id, file start, message
        units, the commitlog offsets of the first and the last); a row added for a file the build did not write (no
        store times).  ``units`` and ``queues`` follow."""
        rows = {(r["topic"], r["queue_id"], r["file_start"]): r for r in (*self.cq_files, *self.bcq_files)}
        for topic, qid, start, entries, begin, end in figures:
            batch = topic in config.batch_topics
            row = rows.get((topic, qid, start))
            if row is None:
                row = {"kind": BCQ_KIND if batch else "cq", "topic": topic, "queue_id": qid, "file_start": start,
                       "bytes": queue_layout(config, batch)[1], "first_store_timestamp": None, "end_timestamp": None}
                (self.bcq_files if batch else self.cq_files).append(row)
            row.update(entries=entries, begin_offset=begin, end_offset=end)
        for files in (self.cq_files, self.bcq_files):
            files.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
        self.units = sum(r["entries"] for r in self.cq_files)
        self.queues = len({(r["topic"], r["queue_id"]) for r in self.cq_files})

    def batch_figures(self, config: BrokerConfig) -> dict | None:
        """Batch queues, files and units written, for a store with BatchCQ topics."""
        if not config.batch_topics:
            return None
        return {"queues": len({(r["topic"], r["queue_id"]) for r in self.bcq_files}), "files": len(self.bcq_files),
                "units": sum(r["entries"] for r in self.bcq_files)}


def build_files(walk: ReputWalk, config: BrokerConfig, staged: StagedOutput, runner: TaskRunner, *,
                record_states: bool, tz: str, extra_units: tuple = (),
                seeds: dict[tuple[str, int], list[int]] | None = None) -> Built:
    """The build stage: consume queue files per queue bucket, index files one per task (in
    ``staged``'s staging folder); then the index files' names."""
    return _BuildStage(config, staged, runner).build(walk, record_states=record_states, tz=tz, extra_units=extra_units,
                                                     seeds=seeds)


class _BuildStage:
    def __init__(self, config: BrokerConfig, staged: StagedOutput, runner: TaskRunner) -> None:
        self.config, self.staged, self.runner = config, staged, runner
        self.progress = runner.progress

    def build(self, walk: ReputWalk, *, record_states: bool, tz: str, extra_units: tuple = (),
              seeds: dict[tuple[str, int], list[int]] | None = None) -> Built:
        config = self.config
        self.progress.stage("build", "consume queue and index files")
        chain, index_in, index_totals = walk.chain, walk.index_in, walk.index_totals
        order = [e.split.split_id for e in chain.entries]
        # IndexService.buildIndex takes (creates) the last index file for any dispatched request, a concurrent
        # reput's blank's empty request too (store_format.concurrent_reput.check_empty_requests)
        index_enabled = config.writes_index_files and (index_totals["dispatched"] > 0
                                                       or index_totals.get("empty_requests", 0) > 0)
        again = self._indexed_again(walk) if index_enabled else None
        if again is not None:   # the keys the restart's second reput puts again follow the others
            index_totals["keys"] += again[3]
        total_keys = index_totals["keys"]
        file_parts = index_file_parts(chain, index_in, total_keys, config.index_entries_per_file, again) \
            if index_enabled else []
        tasks = index_tasks(file_parts, total_keys, config, self.runner.parallelism, self.staged.staging_uri)
        if not config.rocksdb_cq:
            reset = self._queue_reset(walk)
            by_bucket: dict[int, dict[tuple[str, int], list[int]]] = {}
            for (topic, qid), seed in (seeds or {}).items():
                by_bucket.setdefault(queue_bucket(topic, qid, walk.buckets), {})[topic, qid] = seed
            tasks += [{"kind": "cq", "task_id": b, "splits": order, "record_states": record_states, "reset": reset,
                       "seeds": by_bucket.get(b)} for b in range(walk.buckets)]
        results = self.runner.run(BuildTask(tasks, config, walk.work_uri, self.staged.staging_uri), len(tasks),
                                  "build")
        cq_files = [r for r in results if r["kind"] == "cq"]
        index_files = merge_index_rows([r for r in results if r["kind"] == "index"])
        anomalies: list[dict] = []
        if index_enabled:
            index_files += self._trailing_index_file(index_files, index_totals)
            names, clamped = index_file_names_checked([r["first_store_timestamp"] for r in index_files], zone(tz))
            for r, name in zip(index_files, names):
                r["name"] = name
                self.staged.rename_staged(index_part_name(r["task_id"]), f"index/{name}")
            for pos in clamped:
                r = index_files[pos]
                anomalies.append(at_offset(
                    walk.store, r["begin_offset"] if r["begin_offset"] is not None else r["end_offset"],
                    AnomalyKind.STORE_TIMESTAMP_OUT_OF_RANGE,
                    f"index file {names[pos]} starts with store timestamp {r['first_store_timestamp']}, outside "
                    "the years 1970..9999; its name was clamped (the bytes are as the broker writes them)",
                    found=r["first_store_timestamp"]))
        built = Built(cq_files, index_files, sum(r["entries"] for r in cq_files),
                      len({(r["topic"], r["queue_id"]) for r in cq_files}), anomalies,
                      bcq_files=[r for r in results if r["kind"] == BCQ_KIND])
        if config.rocksdb_cq:
            built.units, built.queues = self._rocksdb_queue(walk, order, extra_units)
        batch = built.batch_figures(config)
        where = "in the RocksDB consume queue" if config.rocksdb_cq else f"{len(cq_files)} consume queue files,"
        self.progress.done(f"{built.queues} queues, {where} {built.units:,} units; "
                           + (f"{batch['queues']} batch queues, {batch['files']} batch consume queue files, "
                              f"{batch['units']:,} units; " if batch else "")
                           + f"{len(index_files)} index files, {total_keys:,} keys")
        return built

    @staticmethod
    def _queue_reset(walk: ReputWalk) -> tuple[int, list[tuple[str, int]]] | None:
        """``StoreLocation.queue_reset``: the first split the start's reput reads from ``reset_from`` on and the
        queues that start empty there (:func:`pipelines.build.build_queue_bucket`'s ``reset``; None: none)."""
        st = walk.store
        if not st.queue_reset:
            return None
        at = next((e.split.split_id for e in walk.chain.entries if e.split.segment >= st.reset_from), None)
        return None if at is None else (at, list(st.queue_reset))

    @staticmethod
    def _indexed_again(walk: ReputWalk) -> tuple[int, int, int, int] | None:
        """``--as-restart`` whose second reput (``DefaultMessageStore.start``) indexes the last indexed
        record again (``StoreLocation.reindex``: :class:`store_format.restart_reput.SecondReput`):
        ``(split, carry, keys before, keys)`` for :func:`pipelines.chain.index_file_parts`, the split
        that holds that record read once more from its offset (``IndexService.buildIndex`` puts what is
        at or above the last file's ``endPhyOffset``)."""
        at = walk.store.reindex
        if at < 0:
            return None
        keyed = [e.split.split_id for e in walk.chain.entries if walk.index_in.get(e.split.split_id, (0, 0, 0))[2]]
        keys = read_keys(walk.work_uri, keyed[-1]) if keyed else None
        if keys is None or not len(keys.offset) or int(keys.offset[-1]) != at:
            raise StoreError(f"the restart's second reput indexes the record at {at} again, but the rebuild's last "
                             "indexed record is elsewhere")
        return keyed[-1], at, int(walk.index_totals["keys"]), int(keys.counts[-1])

    def _rocksdb_queue(self, walk: ReputWalk, order: list[int], extra_units: tuple) -> tuple[int, int]:
        """``storeType=defaultRocksDB``: the consume queue database, written here from the units'
        work files (:func:`pipelines.rocksdb_cq.build_rocksdb_cq`) and ``extra_units``; its entries and queues."""
        from .rocksdb_cq import build_rocksdb_cq
        fs, path = resolve(self.staged.staging_uri)
        if not isinstance(fs, pafs.LocalFileSystem):   # preflight refuses this before any work
            raise StoreLayoutError(f"{self.staged.staging_uri}: a RocksDB consume queue is written on a local "
                                   "file system only")
        entries = build_rocksdb_cq(walk.work_uri, order, walk.buckets, f"{path}/consumequeue", extra_units)
        return len(entries.default), len(entries.offset) - (1 if entries.offset else 0)

    def _trailing_index_file(self, built: list[dict], index_totals: dict) -> list[dict]:
        """The empty index file the broker creates when a record is dispatched after a full file
        (or, with no key at all, the first one): :func:`store_format.indexfile.plan_trailing_file`."""
        config = self.config
        cap = config.index_entries_per_file
        total_keys = index_totals["keys"]
        if not trailing_empty_file(total_keys, cap, index_totals["dispatched_after_last_key"]):
            return []
        file_no = len(built)
        prev_off = built[-1]["end_offset"] if built else 0
        prev_ts = built[-1]["end_timestamp"] if built else 0
        none = np.zeros(0, dtype=np.int64)
        data = index_file_pieces(none.astype(np.int32), none, none, max_hash_slot_num=config.maxHashSlotNum,
                                 max_index_num=config.maxIndexNum,
                                 prev_end_offset=prev_off, prev_end_ts=prev_ts,
                                 empty_index_count=config.empty_index_count)
        size = write_file(self.staged.staging_uri, index_part_name(file_no), data)
        return [{"kind": "index", "task_id": file_no, "entries": 0, "bytes": size, "begin_offset": None,
                 "first_store_timestamp": trailing_file_time(prev_ts, index_totals["first_store_ts"]),
                 "end_offset": prev_off, "end_timestamp": prev_ts}]
