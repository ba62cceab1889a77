"""What ``verify`` found: one result per consume queue file (``consumequeue/``, and
``consumequeue_ext/`` and ``batchconsumequeue/`` where the store has those layouts) and index file,
the prediction of the broker's next start, and the report's text and JSON forms (the dataclasses :mod:`pipelines.verify`
returns; no file is read here)."""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Unit:
    """One consume queue unit [ConsumeQueue.CQ_STORE_UNIT_SIZE]."""
    commitlog_offset: int
    size: int
    tags_code: int


@dataclasses.dataclass
class UnitDifference:
    """The first unit of a consume queue file that differs from the rebuild."""
    queue_offset: int          # logical offset in the queue (file start / 20 + unit number)
    position: int              # byte position in the file
    expected: Unit | None      # None: the rebuilt file ends before it
    found: Unit | None         # None: the store's file ends before it


@dataclasses.dataclass
class ConsumeQueueFileResult:
    path: str                  # topic/queueId/name, relative to consumequeue/
    status: str                # identical | differs | missing | extra
    expected_size: int | None = None
    found_size: int | None = None
    differing_units: int = 0
    first_difference: UnitDifference | None = None
    note: str = ""


@dataclasses.dataclass
class QueueFileResult:
    """One file of ``consumequeue_ext/`` (``ConsumeQueueExt``) or ``batchconsumequeue/``
    (``BatchConsumeQueue``) against its rebuild, unit by unit (20-byte ext units, 46-byte batch units)."""
    path: str                  # topic/queueId/name, relative to its folder
    status: str                # identical | differs | missing | extra
    expected_size: int | None = None
    found_size: int | None = None
    differing_units: int = 0
    first_unit: int | None = None          # number in the file of the first differing unit
    first_position: int | None = None      # its byte position in the file
    expected_unit: dict | None = None      # its fields (None: the rebuilt file ends before it)
    found_unit: dict | None = None         # its fields (None: the store's file ends before it)
    note: str = ""


# areas listed file by file between the consume queue files and the index files
_QUEUE_FILE_AREAS = ("consume_queue_ext", "batch_consume_queue", "rocksdb_consume_queue")
_AREA_NAMES = {"consume_queue": "consume queue files", "consume_queue_ext": "consume queue ext files",
               "batch_consume_queue": "batch consume queue files", "index": "index files",
               "rocksdb_consume_queue": "RocksDB consume queue queues"}


@dataclasses.dataclass
class KeyExample:
    """An index key the store's file no longer finds: an expected entry ``(key_hash,
    commitlog_offset)`` that its slot chain does not reach; the key is named from the record."""
    key: str | None            # topic#key as the broker indexes it, None if no key of the record matches
    commitlog_offset: int
    key_hash: int
    note: str = ""


@dataclasses.dataclass
class IndexFileResult:
    number: int                # position in name order (0-based)
    status: str                # identical | differs | missing | extra
    store_name: str | None = None
    reference_name: str | None = None
    expected_size: int | None = None
    found_size: int | None = None
    expected_header: dict | None = None
    found_header: dict | None = None
    differing_header_fields: list[str] = dataclasses.field(default_factory=list)
    differing_slots: int = 0
    differing_entries: int = 0
    unreachable_entries: int = 0   # expected (keyHash, offset) pairs the store's chains do not reach
    spurious_entries: int = 0      # pairs the store's chains reach that the rebuild does not have
    examples: list[KeyExample] = dataclasses.field(default_factory=list)
    note: str = ""


@dataclasses.dataclass
class QueueRestart:
    """One queue at the broker's next start (only queues where something happens are listed); a
    ``batchconsumequeue/`` queue (``BatchConsumeQueue``) or a ``consumequeue/`` one with its ext files."""
    queue: str                                 # topic/queueId
    layout: str = "consumequeue"               # consumequeue | batchconsumequeue
    load_failure: str | None = None            # why the store's load fails on this queue (doLoad, ext recover)
    recover_stops_at: int | None = None        # logical byte offset where ConsumeQueue.recover stops early
    units_dropped_by_recover: int = 0
    files_deleted_by_recover: list[str] = dataclasses.field(default_factory=list)
    units_truncated: int = 0                   # truncateDirtyLogicFiles: at or past the commitlog end
    files_deleted_by_truncate: list[str] = dataclasses.field(default_factory=list)
    # after the store's load (ConsumeQueue.recover, the commitlog's recovery; a 5.x DLedger crash restart whose walk
    # dispatched nothing: after its cut), before the start's reput, whose units units_dispatched_again counts; after
    # any other 5.x DLedger crash: ConsumeQueue.recover's, before the walk's units and the cut (not modelled here)
    max_physic_offset: int = -1                # ConsumeQueue.getMaxPhysicOffset then
    units_dispatched_again: int = 0
    units_appended_by_recovery: int = 0        # abnormal start: recoverAbnormally's dispatch (in write_position)
    units_lost: int = 0                        # expected units the queue lacks and the restart does not write
    write_position: int = -1                   # logical byte offset where its files end then (same moment)
    ext_write_position: int | None = None      # consumequeue_ext/: where the next ext unit goes
    ext_files_deleted: list[str] = dataclasses.field(default_factory=list)
    ext_units_dropped: int = 0                 # ext units at or after that position (overwritten or deleted)
    ext_units_orphaned: int = 0                # ext units before it that no kept consume queue unit points at
    ext_units_appended: int = 0                # ext units the start's dispatches put (one per record handed over)
    ext_note: str = ""
    # a queue of a RocksDB consume queue (layout "rocksdb"): its "max"/"min" entries, [commitlogOffset,
    # queueOffset], before and after the start (store_format.rocksdb_recovery); race_*: the abnormal start's
    # other outcome (truncateDirty before the dispatch lands), when it differs
    max_entry_before: list[int] | None = None
    max_entry_after: list[int] | None = None
    min_entry_after: list[int] | None = None
    race_max_entry_after: list[int] | None = None
    race_min_entry_after: list[int] | None = None
    race_units_truncated: int | None = None    # units above the max entry in that other outcome
    note: str = ""


@dataclasses.dataclass
class RestartPrediction:
    """What a broker would do with the store's files at its next start (see
    :func:`predict_restart`)."""
    broker_version: str
    clean_shutdown: bool                       # no ``abort`` file
    commitlog_min_offset: int
    commitlog_end: int
    start_fails: bool = False                  # load() fails: a queue file of the wrong size, a 5.3.3 empty last file
    max_physic_offset_in_queues: int = -1      # after ConsumeQueue.recover
    truncate_dirty_logic_files: bool = False   # CommitLog.recoverNormally calls it
    reput_from: int = 0                        # first commitlog offset dispatched again
    reput_from_inclusive: bool = True          # 5.x: only records strictly after it
    tail_bytes: int = 0
    units_dropped_by_recover: int = 0
    units_truncated: int = 0
    units_dispatched_again: int = 0
    units_lost: int = 0
    ext_units_dropped: int = 0
    ext_units_orphaned: int = 0
    index_keys_put_again: int = 0
    # abnormal start: CommitLog.recoverAbnormally dispatches from this offset (its start segment) to the end
    abnormal_dispatch_from: int | None = None
    units_appended_by_recovery: int = 0
    ext_units_appended: int = 0
    index_files_extended: list[str] = dataclasses.field(default_factory=list)
    index_files_deleted: list[str] = dataclasses.field(default_factory=list)
    queues: list[QueueRestart] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    # the commitlog recovery before all that (store_format.recovery, as rebuild --as-restart applies it)
    recovery_cut: int | None = None
    recovery_reason: str = ""
    recovery_discarded_messages: int = 0
    recovery_discarded_bytes: int = 0
    recovery_deleted_segments: int = 0
    dledger: bool = False                      # a DLedger store: DLedgerCommitLog.recover, the reput in the notes
    # storeType=defaultRocksDB: the database's checkpoint entry before and after the start (None: none);
    # race_checkpoint_after: the abnormal start's other outcome
    rocksdb: bool = False
    rocksdb_checkpoint_before: int | None = None
    rocksdb_checkpoint_after: int | None = None
    race_checkpoint_after: int | None = None
    # recheckReputOffsetFromCq=true: where DefaultMessageStore.start's second reput starts (a RocksDB store: the
    # commitlog's min offset; file queues: the whole queue table's max after the recovery; None: no second reput)
    second_reput_from: int | None = None


@dataclasses.dataclass
class VerifyReport:
    store: str
    reference: str | None          # the rebuild (None once a temporary one is deleted)
    broker_version: str
    consume_queue: list[ConsumeQueueFileResult]
    index: list[IndexFileResult]
    index_files_in_store: int
    index_files_rebuilt: int
    # None: not predicted (5.x DLedger unclean; RocksDB + DLedger; the queue table's max beside the own queues not
    # modelled): no_prediction
    restart: RestartPrediction | None
    rebuild: dict
    seconds: float = 0.0
    # None: the store does not have the layout (enableConsumeQueueExt=false; no BatchCQ topic)
    consume_queue_ext: list[QueueFileResult] | None = None
    batch_consume_queue: list[QueueFileResult] | None = None
    # storeType=defaultRocksDB: one result per queue of the database (pipelines.verify.rocksdb_compare)
    rocksdb_consume_queue: list[QueueFileResult] | None = None
    no_prediction: str = ""        # why restart is None
    not_checked: list[str] = dataclasses.field(default_factory=list)   # store folders left alone, with why
    # indexRocksDBEnable=true (5.5): rocksdbstore/'s index family against the rebuild's (None: not checked)
    rocksdb_index: Any = None

    def _areas(self) -> list[tuple[str, list]]:
        areas: list[tuple[str, list | None]] = [
            ("consume_queue", self.consume_queue), ("consume_queue_ext", self.consume_queue_ext),
            ("batch_consume_queue", self.batch_consume_queue),
            ("rocksdb_consume_queue", self.rocksdb_consume_queue), ("index", self.index)]
        return [(a, rs) for a, rs in areas if rs is not None]

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for area, results in self._areas():
            c = {k: 0 for k in ("identical", "differs", "missing", "extra")}
            for r in results:
                c[r.status] += 1
            out[area] = c
        return out

    @property
    def identical(self) -> bool:
        return all(r.status == "identical" for _, results in self._areas() for r in results) and (
            self.rocksdb_index is None or self.rocksdb_index.status == "identical")

    def summary_line(self) -> str:
        c = self.counts()
        if self.identical:
            files = [f"{c[a]['identical']} {_AREA_NAMES[a]}" for a, _ in self._areas()]
            if self.rocksdb_index is not None:
                files.append(f"the RocksDB message index ({self.rocksdb_index.derived:,} entries)")
            return (f"verify: identical: {', '.join(files[:-1])} and {files[-1]} match a rebuild from the commitlog "
                    f"({self.store})")
        parts = []
        for area, _ in self._areas():
            n = c[area]
            bad = [f"{n[k]} {k}" for k in ("differs", "missing", "extra") if n[k]]
            parts.append(f"{_AREA_NAMES[area]}: {n['identical']} identical" + (", " + ", ".join(bad) if bad else ""))
        if self.rocksdb_index is not None:
            parts.append(f"RocksDB message index: {self.rocksdb_index.status}")
        return f"verify: DIFFERENT: {'; '.join(parts)} ({self.store})"

    def as_dict(self) -> dict:
        """JSON-ready: counts, every file that is not identical, the restart prediction."""
        return {
            "store": self.store, "identical": self.identical, "summary": self.summary_line(),
            "broker_version": self.broker_version, "counts": self.counts(),
            "consume_queue": [dataclasses.asdict(r) for r in self.consume_queue if r.status != "identical"],
            "index_files_in_store": self.index_files_in_store, "index_files_rebuilt": self.index_files_rebuilt,
            "index": [dataclasses.asdict(r) for r in self.index if r.status != "identical"],
            **{area: [dataclasses.asdict(r) for r in results if r.status != "identical"]
               for area, results in self._areas() if area in _QUEUE_FILE_AREAS},
            "restart": dataclasses.asdict(self.restart) if self.restart else None,
            "restart_note": self.no_prediction,
            "not_checked": self.not_checked,
            "rocksdb_index": dataclasses.asdict(self.rocksdb_index) if self.rocksdb_index is not None else None,
            "rebuild": self.rebuild, "reference": self.reference,
            "seconds": self.seconds,
        }

    def render(self) -> str:
        lines = [self.summary_line()]
        c = self.counts()
        lines.append("consume queue files: " + ", ".join(f"{v} {k}" for k, v in c["consume_queue"].items()))
        for r in self.consume_queue:
            if r.status != "identical":
                lines.append("  " + _render_cq(r))
        for area, results in self._areas():
            if area in _QUEUE_FILE_AREAS:
                lines.append(f"{_AREA_NAMES[area]}: " + ", ".join(f"{v} {k}" for k, v in c[area].items()))
                lines.extend("  " + _render_queue_file(r) for r in results if r.status != "identical")
        lines.append("index files: " + ", ".join(f"{v} {k}" for k, v in c["index"].items())
                     + f" ({self.index_files_in_store} in the store, {self.index_files_rebuilt} rebuilt, "
                       "matched in name order)")
        for ix in self.index:
            if ix.status != "identical":
                lines.extend("  " + line for line in _render_index(ix))
        if self.rocksdb_index is not None:
            lines.extend(self.rocksdb_index.render())
        lines.extend(_render_restart(self.restart) if self.restart else [
            f"at the broker's next start: {self.no_prediction}"])
        lines.extend(f"not checked: {n}" for n in self.not_checked)
        lines.append(f"time: {self.seconds:.2f}s")
        return "\n".join(lines)


def _unit_text(u: Unit | None) -> str:
    if u is None:
        return "nothing (file ends)"
    return f"commitlogOffset={u.commitlog_offset} size={u.size} tagsCode={u.tags_code}"


def _render_cq(r: ConsumeQueueFileResult) -> str:
    if r.status == "missing":
        text = f"missing  {r.path} ({r.expected_size:,} bytes)"
    elif r.status == "extra":
        text = f"extra    {r.path} ({r.found_size:,} bytes)"
    else:
        d = r.first_difference
        size = "" if r.expected_size == r.found_size else f" [{r.found_size:,} bytes, expected {r.expected_size:,}]"
        text = f"differs  {r.path}: {r.differing_units:,} unit(s){size}"
        if d is not None:
            text += (f"; first at queue offset {d.queue_offset} (byte {d.position}): expected "
                     f"{_unit_text(d.expected)}, found {_unit_text(d.found)}")
    return text + (f" ({r.note})" if r.note else "")


def _render_queue_file(r: QueueFileResult) -> str:
    if r.note.startswith("entries"):   # a queue of a RocksDB consume queue: entries, not bytes
        return _render_rocksdb_queue(r)
    if r.status == "missing":
        text = f"missing  {r.path} ({r.expected_size:,} bytes)"
    elif r.status == "extra":
        text = f"extra    {r.path} ({r.found_size:,} bytes)"
    else:
        size = "" if r.expected_size == r.found_size else f" [{r.found_size:,} bytes, expected {r.expected_size:,}]"
        text = f"differs  {r.path}: {r.differing_units:,} unit(s){size}"
        if r.first_unit is not None:
            text += (f"; first is unit {r.first_unit} (byte {r.first_position}): expected "
                     f"{_fields_text(r.expected_unit)}, found {_fields_text(r.found_unit)}")
    return text + (f" ({r.note})" if r.note else "")


def _render_rocksdb_queue(r: QueueFileResult) -> str:
    """A queue of a RocksDB consume queue (:mod:`.rocksdb_compare`): its entries, not file bytes."""
    if r.status == "missing":
        return f"missing  {r.path}: the store has none of its {r.expected_size:,} entries"
    if r.status == "extra":
        return f"extra    {r.path}: {r.found_size:,} entries the rebuild does not have"
    return (f"differs  {r.path}: {r.note.removeprefix('entries: ')} ({r.found_size:,} entries, expected "
            f"{r.expected_size:,}): expected {_fields_text(r.expected_unit, 'nothing')}, found "
            f"{_fields_text(r.found_unit, 'nothing')}")


def _fields_text(u: dict | None, none: str = "nothing (file ends)") -> str:
    return none if u is None else " ".join(f"{k}={v}" for k, v in u.items())


def _render_index(r: IndexFileResult) -> list[str]:
    name = f"#{r.number} {r.store_name or '-'}"
    if r.status == "missing":
        return [f"missing  {name}: the rebuild has {r.reference_name} ({r.expected_size:,} bytes) here"]
    if r.status == "extra":
        return [f"extra    {name} ({r.found_size:,} bytes): the rebuild has no file here"]
    lines = [f"differs  {name} (rebuilt as {r.reference_name}): differing entries {r.differing_entries:,}, slots "
             f"{r.differing_slots:,}; expected entries its slot chains no longer reach {r.unreachable_entries:,}, "
             f"entries they reach that the rebuild does not have {r.spurious_entries:,}"]
    if r.expected_size != r.found_size:
        lines.append(f"         size {r.found_size:,} bytes, expected {r.expected_size:,}")
    for f in r.differing_header_fields:
        assert r.expected_header is not None and r.found_header is not None
        lines.append(f"         header {f}: expected {r.expected_header[f]}, found {r.found_header[f]}")
    for e in r.examples:
        lines.append(f"         not found: {e.key or '?'} (record at commitlog offset {e.commitlog_offset}, "
                     f"keyHash {e.key_hash})" + (f" - {e.note}" if e.note else ""))
    if r.note:
        lines.append(f"         {r.note}")
    return lines


def _render_restart(p: RestartPrediction) -> list[str]:
    rules = ("5.x: ConsumeQueue.recover (ConsumeQueueExt.recover, truncateByMaxAddress), BatchConsumeQueue.recover, "
             "CommitLog.recoverNormally (dispatches records after the queues' max physical offset, then "
             "truncateDirtyLogicFiles)" if p.broker_version == "5" else
             "4.9.x: ConsumeQueue.recover (ConsumeQueueExt.recover, truncateByMaxAddress), CommitLog.recoverNormally "
             "→ truncateDirtyLogicFiles, reput from the queues' max physical offset")
    if p.rocksdb:
        return _render_rocksdb_restart(p)
    if p.dledger:
        rules = (f"{p.broker_version}.x DLedger: ConsumeQueue.recover, DLedgerMmapFileStore.recover → "
                 "truncateDirtyLogicFiles against the log's end, the reput as the note says")
    lines = [f"at the broker's next start ({rules}):",
             f"  commitlog: min offset {p.commitlog_min_offset}, data ends at {p.commitlog_end}"]
    if p.recovery_cut is not None and p.dledger:
        lines.append(f"  the DLedger log ends at {p.recovery_cut} after its recovery ({p.recovery_reason}) "
                     "(as rebuild --as-restart)")
    elif p.recovery_cut is not None:
        lines.append(f"  commitlog recovery cuts at {p.recovery_cut} ({p.recovery_reason}): a restart discards "
                     f"{p.recovery_discarded_messages:,} record(s), {p.recovery_discarded_bytes:,} bytes, "
                     f"{p.recovery_deleted_segments} segment(s) (as rebuild --as-restart)")
    if p.start_fails:
        bad = [q for q in p.queues if q.load_failure]
        lines.append(f"  START FAILS: the store's load refuses {len(bad)} queue(s) (a file of the wrong size, "
                     "which MappedFileQueue.doLoad refuses, ext files ConsumeQueueExt cannot read, or a last file "
                     "5.3.3's correctMinOffset reads before); figures below assume such files were removed")
        for q in bad[:5]:
            lines.append(f"    {q.queue}: {q.load_failure}")
    lines.append(f"  ConsumeQueue.recover drops {p.units_dropped_by_recover:,} unit(s) after a hole")
    if p.abnormal_dispatch_from is not None:
        lines.append(f"  abnormal start: CommitLog.recoverAbnormally dispatches every record from offset "
                     f"{p.abnormal_dispatch_from} (where its walk starts) to the end before truncateDirtyLogicFiles: "
                     f"{p.units_appended_by_recovery:,} consume queue unit(s) appended, {p.ext_units_appended:,} "
                     "ext unit(s) put (one per record of an ext queue, skipped consume queue units included)")
    lines.append(f"  truncateDirtyLogicFiles: {'called' if p.truncate_dirty_logic_files else 'not called'}; "
                 f"{p.units_truncated:,} unit(s) at or past the commitlog end cut off")
    start = "from" if p.reput_from_inclusive else "after"
    lines.append(f"  dispatched again {start} offset {p.reput_from}: {p.tail_bytes:,} commitlog bytes, "
                 f"{p.units_dispatched_again:,} consume queue unit(s), {p.index_keys_put_again:,} index key(s)")
    lines.append(f"  units missing from their queues that the restart does not write back: {p.units_lost:,}")
    if p.ext_units_dropped or p.ext_units_orphaned:
        lines.append(f"  consume queue ext files (ConsumeQueueExt.recover, truncateByMaxAddress): "
                     f"{p.ext_units_dropped:,} ext unit(s) after the ext write positions dropped, "
                     f"{p.ext_units_orphaned:,} kept that no consume queue unit points at (the units dispatched "
                     "again get ext addresses after them, not the rebuild's)")
    for q in p.queues[:10]:
        bits = [f"{k.replace('_', ' ')} {v}" for k, v in (
            ("recover stops at", q.recover_stops_at), ("dropped by recover", q.units_dropped_by_recover),
            ("truncated", q.units_truncated), ("appended by recovery", q.units_appended_by_recovery),
            ("dispatched again", q.units_dispatched_again),
            ("lost", q.units_lost), ("ext units dropped", q.ext_units_dropped),
            ("ext units appended", q.ext_units_appended),
            ("ext units orphaned", q.ext_units_orphaned), ("ext files deleted", len(q.ext_files_deleted))) if v]
        if bits:
            where = "" if q.layout == "consumequeue" else f" ({q.layout})"
            lines.append(f"    {q.queue}{where}: " + ", ".join(bits))
    if len(p.queues) > 10:
        lines.append(f"    ... {len(p.queues) - 10} more queues (see --json)")
    if p.index_files_extended:
        lines.append(f"  index files shorter than configured, extended with zeros when mapped: "
                     f"{', '.join(p.index_files_extended)}")
    if p.index_files_deleted:
        lines.append(f"  index files deleted at an abnormal start: {', '.join(p.index_files_deleted)}")
    lines.extend(f"  note: {n}" for n in p.notes)
    return lines


def _entry(e: list[int] | None) -> str:
    return "none" if e is None else f"queue offset {e[1]} (commitlog offset {e[0]})"


def _render_rocksdb_restart(p: RestartPrediction) -> list[str]:
    """The next start of a RocksDB consume queue store (:mod:`store_format.rocksdb_recovery`)."""
    lines = ["at the broker's next start (5.x RocksDB consume queue: CommitLog.recover* dispatches from the "
             "database's checkpoint, then RocksDBConsumeQueueStore.truncateDirty against the commitlog's end):",
             f"  commitlog: min offset {p.commitlog_min_offset}, data ends at {p.commitlog_end}"]
    if p.recovery_cut is not None:
        lines.append(f"  commitlog recovery cuts at {p.recovery_cut} ({p.recovery_reason}): a restart discards "
                     f"{p.recovery_discarded_messages:,} record(s), {p.recovery_discarded_bytes:,} bytes, "
                     f"{p.recovery_deleted_segments} segment(s) (as rebuild --as-restart)")
    race = "" if p.race_checkpoint_after is None else f" (or {p.race_checkpoint_after}, see the race note)"
    lines.append(f"  checkpoint entry: {p.rocksdb_checkpoint_before} before, {p.rocksdb_checkpoint_after} after"
                 f"{race}; truncateDirty {'cuts the queues' if p.truncate_dirty_logic_files else 'changes nothing'}")
    start = "from" if p.reput_from_inclusive else "after"
    lines.append(f"  dispatched again {start} offset {p.reput_from}: {p.tail_bytes:,} commitlog bytes, "
                 f"{p.units_dispatched_again:,} unit(s), {p.index_keys_put_again:,} index key(s)")
    if p.second_reput_from is not None:
        lines.append(f"  then dispatched again from offset {p.second_reput_from} to the end (recheckReputOffsetFromCq="
                     f"true): {max(0, p.commitlog_end - p.second_reput_from):,} commitlog bytes (in the unit and "
                     "index key counts above)")
    lines.append(f"  units left above their queue's new max entry (kept in the database until new messages take "
                 f"their queue offsets): {p.units_truncated:,}")
    lines.append(f"  units missing from their queues that the restart does not write back: {p.units_lost:,}")
    for q in p.queues[:10]:
        bits = [f"max entry {_entry(q.max_entry_before)} -> {_entry(q.max_entry_after)}"]
        if q.min_entry_after is not None:
            bits.append(f"min entry {_entry(q.min_entry_after)}")
        if q.race_max_entry_after is not None or q.race_min_entry_after is not None:
            bits.append(f"or (race) max {_entry(q.race_max_entry_after)}, min {_entry(q.race_min_entry_after)}, "
                        f"{q.race_units_truncated} unit(s) above it")
        bits += [f"{k} {v}" for k, v in (("units above the new max", q.units_truncated),
                                         ("dispatched again", q.units_dispatched_again),
                                         ("lost", q.units_lost)) if v]
        lines.append(f"    {q.queue}: " + ", ".join(bits) + (f" ({q.note})" if q.note else ""))
    if len(p.queues) > 10:
        lines.append(f"    ... {len(p.queues) - 10} more queues (see --json)")
    if p.index_files_deleted:
        lines.append(f"  index files deleted at an abnormal start: {', '.join(p.index_files_deleted)}")
    lines.extend(f"  note: {n}" for n in p.notes)
    return lines
