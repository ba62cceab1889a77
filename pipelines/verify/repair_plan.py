"""A repair's plan: which store files to replace, add or remove (:func:`plan_repair`) so that the
store matches the rebuild a :class:`~pipelines.verify.report.VerifyReport` compared it with."""
from __future__ import annotations

import dataclasses

from store_format.batchconsumequeue import BCQ_DIR

from .report import ConsumeQueueFileResult, QueueFileResult, VerifyReport
from .storefiles import CQ_DIR, CQ_EXT_DIR, INDEX_DIR, REPAIR_TMP_RE


@dataclasses.dataclass
class RepairAction:
    action: str                # replace | add | remove | drop_leftover | replace_database
    path: str                  # relative to the store root: consumequeue/..., consumequeue_ext/..., index/...
    #                            (replace_database: the folder consumequeue, a RocksDB database)
    source: str | None         # rebuilt file (replace, add)
    reason: str
    sha256_before: str | None = None
    sha256_after: str | None = None
    backup: str | None = None  # relative to the backup folder
    done: bool = False


@dataclasses.dataclass
class RepairPlan:
    store: str
    reference: str | None
    actions: list[RepairAction]
    index_mode: str            # unchanged | by_name | replace_all
    notes: list[str] = dataclasses.field(default_factory=list)

    def render(self) -> str:
        if not self.actions:
            return "repair plan: nothing to do (the store matches the rebuild)"
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a.action] = counts.get(a.action, 0) + 1
        lines = ["repair plan: " + ", ".join(f"{n} {k}" for k, n in counts.items())]
        lines += [f"  {a.action:<13} {a.path}  ({a.reason})" for a in self.actions]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def plan_repair(report: VerifyReport) -> RepairPlan:
    """Which files to replace, add or remove so that the store matches the rebuild.

    Consume queue files (``consumequeue/``, ``consumequeue_ext/``, ``batchconsumequeue/``) by path.
    A consume queue's units hold addresses into its ext files, and the rebuild writes both from the
    same units, so every differing file of either folder is taken from the rebuild: the queue's
    consume queue and ext files end up as one rebuild wrote them.  Ext files are written before and
    removed after the consume queue files, so that a repair interrupted between two files leaves no
    new consume queue unit pointing at an ext unit not yet written.

    A RocksDB consume queue is one database: when any of its queues differs, the rebuilt database
    replaces the store's as a whole (:mod:`.repair_database`).

    Index files: when the store and the rebuild have as many, a differing file is replaced keeping
    the store's name (the broker's creation time); when the counts differ, names cannot be kept
    consistently (the rebuilt names are first-entry store times and may not sort after the
    broker's), so every store index file is replaced by the rebuilt set, under the rebuilt names."""
    if report.reference is None:
        raise ValueError("the report's rebuild was deleted: run verify_store with work=... to plan a repair")
    ref = report.reference.rstrip("/")
    ext = _queue_actions(ref, CQ_EXT_DIR, report.consume_queue_ext or [])
    actions = [a for a in ext if a.action != "remove"]
    actions += _queue_actions(ref, CQ_DIR, report.consume_queue)
    actions += [a for a in ext if a.action == "remove"]
    actions += _queue_actions(ref, BCQ_DIR, report.batch_consume_queue or [])
    actions += _database_actions(ref, report.rocksdb_consume_queue or [])
    notes = []
    index_mode = "unchanged"
    real = [x for x in report.index if x.store_name is None or x.store_name.isdigit()]
    for ix in report.index:
        if ix.store_name is not None and not ix.store_name.isdigit() and REPAIR_TMP_RE.match(ix.store_name):
            actions.append(RepairAction("drop_leftover", f"{INDEX_DIR}/{ix.store_name}", None,
                                        "left by an interrupted repair"))
    if report.index_files_in_store == report.index_files_rebuilt:
        for ix in real:
            if ix.status == "differs":
                index_mode = "by_name"
                actions.append(RepairAction("replace", f"{INDEX_DIR}/{ix.store_name}",
                                            f"{ref}/{INDEX_DIR}/{ix.reference_name}",
                                            f"differs from rebuilt {ix.reference_name}; the store's name is kept"))
    else:
        index_mode = "replace_all"
        notes.append(f"the store has {report.index_files_in_store} index files and the rebuild "
                     f"{report.index_files_rebuilt}: all store index files are replaced by the rebuilt ones, under "
                     "the rebuilt names (first entry's store time), so that they load in the right order")
        for ix in real:
            if ix.store_name is not None:
                actions.append(RepairAction("remove", f"{INDEX_DIR}/{ix.store_name}", None,
                                            "index files are replaced as a set"))
        for ix in real:
            if ix.reference_name is not None:
                actions.append(RepairAction("add", f"{INDEX_DIR}/{ix.reference_name}",
                                            f"{ref}/{INDEX_DIR}/{ix.reference_name}", "rebuilt index file"))
    return RepairPlan(report.store, report.reference, actions, index_mode, notes)


def _queue_actions(ref: str, folder: str, results: list[ConsumeQueueFileResult] | list[QueueFileResult]
                   ) -> list[RepairAction]:
    """The actions for one queue folder's files, by path."""
    actions = []
    for r in results:
        rel = f"{folder}/{r.path}"
        if r.status == "differs":
            reason = _cq_reason(r) if isinstance(r, ConsumeQueueFileResult) else _unit_reason(r)
            actions.append(RepairAction("replace", rel, f"{ref}/{rel}", reason))
        elif r.status == "missing":
            actions.append(RepairAction("add", rel, f"{ref}/{rel}", "missing"))
        elif r.status == "extra":
            leftover = REPAIR_TMP_RE.match(r.path.rsplit("/", 1)[-1]) is not None
            actions.append(RepairAction("drop_leftover" if leftover else "remove", rel, None,
                                        "left by an interrupted repair" if leftover else "not in the rebuild"))
    return actions


def _database_actions(ref: str, results: list[QueueFileResult]) -> list[RepairAction]:
    """One ``replace_database`` action when any queue of a RocksDB consume queue differs."""
    bad = [r for r in results if r.status != "identical"]
    if not bad:
        return []
    first = bad[0]
    return [RepairAction("replace_database", CQ_DIR, f"{ref}/{CQ_DIR}",
                         f"RocksDB database: {len(bad)} of {len(results)} queue(s) differ, first {first.path} "
                         f"({first.status}{': ' + first.note if first.note else ''}); replaced as a whole")]


def _unit_reason(r: QueueFileResult) -> str:
    text = f"{r.differing_units} unit(s) differ"
    if r.first_unit is not None:
        text += f", first at unit {r.first_unit}"
    if r.expected_size != r.found_size:
        text += f", {r.found_size} bytes instead of {r.expected_size}"
    return text


def _cq_reason(r: ConsumeQueueFileResult) -> str:
    d = r.first_difference
    text = f"{r.differing_units} unit(s) differ"
    if d is not None:
        text += f", first at queue offset {d.queue_offset}"
    if r.expected_size != r.found_size:
        text += f", {r.found_size} bytes instead of {r.expected_size}"
    return text
