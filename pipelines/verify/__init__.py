"""``verify`` and ``repair``: compare a store's ``consumequeue/`` and ``index/`` (and
``consumequeue_ext/``, ``batchconsumequeue/`` where the store has those layouts) with a rebuild from
its commitlog, say what the broker would do with them at its next start, and replace only the
files that differ.

The story of a verify:

1. **rebuild** into a reference folder with :func:`pipelines.rebuild.run_rebuild` (the same job and
   splits as ``rebuild``; the store is only read);
2. **compare consume queue files** by relative path: identical, differs (first differing 20-byte
   unit), missing, extra;
   ``consumequeue_ext/`` (20-byte ``ConsumeQueueExt`` units) and ``batchconsumequeue/`` (46-byte
   ``BatchConsumeQueue`` units) the same way, by relative path and first differing unit;
3. **compare index files** in name order (names are the broker's creation times, never ours): header
   fields, slots, entries, and which expected ``(keyHash, commitlogOffset)`` pairs the store's file
   no longer reaches through its slot chains (``IndexFile.selectPhyOffset``), named by reading the
   record's topic and keys from the commitlog;
   with ``indexRocksDBEnable=true`` (5.5), the store's ``rocksdbstore/`` index family against the rebuild's
   entry by entry (:mod:`.rocksdb_index`: missing, other value, not derived inside the commitlog's range;
   entries of deleted files or past the end counted apart); its ``trans`` and ``timer`` families are not checked;
4. **predict the next start** of a broker on the store as it is (:class:`RestartPrediction`):
   ``MappedFileQueue.doLoad``'s size check, ``ConsumeQueue.recover``, ``CommitLog.recoverNormally``
   → ``ConsumeQueue.truncateDirtyLogicFiles``, and where the reput (4.9.x
   ``DefaultMessageStore.start``) or the recovery's own dispatch (5.x ``CommitLog.recoverNormally``)
   starts again, where the commitlog recovery (:func:`store_format.recovery.plan_recovery`, as
   ``rebuild --as-restart`` applies it) ends the commitlog.  ``consumequeue_ext/``:
   ``ConsumeQueueExt.recover`` and ``truncateByMaxAddress`` (where the next ext unit goes, ext units
   dropped, and those kept that no consume queue unit points at once ``truncateDirtyLogicFiles`` cut
   the queue back; ``checkSelf`` only logs); ``batchconsumequeue/``: ``BatchConsumeQueue.recover`` and
   ``truncateDirtyLogicFiles``, its queues counting in the max physical offset the recovery and the
   dispatch start from.  A RocksDB consume queue (:mod:`.rocksdb_restart`): the recovery from the
   database's checkpoint, its dispatch and ``RocksDBConsumeQueueStore.truncateDirty`` on the "max" and
   "min" entries (not with ``recheckReputOffsetFromCq=true``).  No prediction for a 5.x DLedger store
   after an unclean shutdown.
   A DLedger store's start is ``DLedgerMmapFileStore.recover`` (the queues truncated against the
   log's end it keeps), then the reput from the queues' max physical offset (4.9.8, 5.x with
   ``recheckReputOffsetFromCq``) or from the committed position (5.x without: nothing again).

A repair verifies (holding the broker's ``lock`` file the way ``DefaultMessageStore.start`` does),
plans (:func:`plan_repair`), and applies (:func:`apply_repair`): each old file goes to a backup
folder first, each new file is staged under a temporary name in its target folder, fsynced and
renamed into place (``os.replace``), so that an interrupted repair leaves every file old or new,
never half written; a manifest in the backup folder records each change with sha256 before/after.

Modules: :mod:`.report` (results, text and JSON), :mod:`.storefiles` (reading the folders),
:mod:`.compare` (one file against its rebuild), :mod:`.rocksdb_index` (the RocksDB message index),
:mod:`.restart` (the next start),
:mod:`.compare_store` (``verify_store``), :mod:`.repair_plan` and :mod:`.repair` (``repair_store``),
:mod:`.commands` (the command line).
"""
from __future__ import annotations

from ..brokerlock import BrokerCheck, check_broker
from .compare import compare_cq_file, compare_index_file
from .compare_store import verify_store
from .repair import RepairResult, apply_repair, repair_store
from .repair_plan import RepairAction, RepairPlan, plan_repair
from .report import (
    ConsumeQueueFileResult,
    IndexFileResult,
    KeyExample,
    QueueFileResult,
    QueueRestart,
    RestartPrediction,
    Unit,
    UnitDifference,
    VerifyReport,
)
from .restart import predict_restart
from .restart_queue import recover_queue, truncate_queue

__all__ = [
    "BrokerCheck", "ConsumeQueueFileResult", "IndexFileResult", "KeyExample", "QueueFileResult", "QueueRestart",
    "RepairAction",
    "RepairPlan", "RepairResult", "RestartPrediction", "Unit", "UnitDifference", "VerifyReport", "apply_repair",
    "check_broker", "compare_cq_file", "compare_index_file", "plan_repair", "predict_restart", "recover_queue",
    "repair_store", "truncate_queue", "verify_store",
]
