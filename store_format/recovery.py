"""The broker's commitlog recovery at restart, as a plan: where the commitlog ends after it.

A broker that starts on a store first recovers the commitlog, then lets the reput (or, in 5.x, the
recovery itself) dispatch records to ``consumequeue/`` and ``index/``.  Recovery walks records from a
chosen segment and stops at the first one it cannot accept; the commitlog is cut there and every
later segment is deleted.  :func:`plan_recovery` computes that cut without touching the store, so a
rebuild can read the commitlog only as far as a restarted broker would keep it.

Mirrors (rocketmq-all-4.9.8 and rocketmq-all-5.3.3, ``store/``; rocketmq-store 5.5.1 where it differs:
:func:`_start_index_551`; every setting read is listed in docs/restart-settings.md):

* ``DefaultMessageStore.load``: ``lastExitOK = !isTempFileExist()`` (the ``abort`` file a running broker
  keeps and deletes at a clean shutdown); the ``StoreCheckpoint`` is read; ``recover(lastExitOK)`` calls
  ``CommitLog.recoverNormally`` or ``CommitLog.recoverAbnormally`` with ``maxPhyOffsetOfConsumeQueue``
  (the largest ``offset + size`` of the consume queues loaded; ``-1`` when ``consumequeue/`` is empty or
  deleted).
* Which segment the walk starts at:

  - 4.9.8 ``recoverNormally``: the third segment from the end (``mappedFiles.size() - 3``, at least 0);
  - 5.3.3 ``recoverNormally``: the last segment whose base offset is ``<= maxPhyOffsetOfConsumeQueue``,
    else the first (with consume queues deleted: the first segment, so the whole commitlog is checked);
  - both ``recoverAbnormally``: from the last segment backwards, the first whose
    ``isMappedFileMatchedRecover`` holds, else the first segment.  ``isMappedFileMatchedRecover`` reads
    the segment's first record: its magic code must be a record's (4.9.8: V1 only; 5.3.3: V1 or V2), its
    store timestamp not 0 and ``<= StoreCheckpoint.getMinTimestamp()`` (``min(physicMsgTimestamp,
    logicsMsgTimestamp) - 3000``, at least 0), or ``<= getMinTimestampIndex()`` (that and
    ``indexMsgTimestamp``) when ``messageIndexEnable && messageIndexSafe``.  A missing ``checkpoint``
    reads as zeros, so no segment matches and the walk starts at the first segment.

* RocksDB consume queue (5.x ``storeType=defaultRocksDB``, ``RocksDBConsumeQueueStore``): with
  ``consumequeue/`` deleted the empty database's ``getMaxPhyOffsetInConsumeQueue`` (its checkpoint entry,
  ``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``) is 0, not -1.  5.3.3 ``isMappedFileMatchedRecover``
  (``isEnableRocksDBStore``) then tests the first record's magic code (V1 or V2) and its physicalOffset
  field ``<=`` that 0 instead of timestamps; 5.5.1 ``RocksDBConsumeQueueStore.recover`` sets its
  ``getDispatchFromPhyOffset`` to it for normal and abnormal recoveries alike, and its
  ``isMappedFileMatchedRecover`` is ``phyOffset <= `` it (no checkpoint, no timestamp).  Both recoveries
  thus start at the segment at offset 0 (5.5.1: at most ``commitLogRecoverMaxNum`` segments back); the
  normal one dispatches only records above 0 (the record at offset 0 is not dispatched, as in a plain
  rebuild: :mod:`store_format.rocksdb_cq`), the abnormal one every record it accepts, offset 0 included.

* 5.5.1 ``recoverAbnormally`` only: with ``enableAcceleratedRecovery`` the walk starts inside its start segment
  at ``dispatchFromPhyOffset`` (the checkpoint's logicsPhysicalOffset; a RocksDB consume queue's max physical
  offset; ``DefaultMessageStore.recover`` lowers it to the lastOffsetPy above 0 of the RocksDB dispatch stores
  ``indexRocksDBEnable``/``transRocksDBEnable`` register: :mod:`store_format.message_rocksdb`, which also
  take part in choosing the start segment), and nothing before it is dispatched (:func:`_accelerated_start`;
  a restart whose ``load()`` then fails is refused, :class:`store_format.errors.RestartFailsError`); with
  ``checkCommitLogOffsetOnRecover`` a record whose physicalOffset field lies outside its segment ends the walk
  (:func:`_offset_check`).

* What is checked: each record with ``checkMessageAndReturnSize(buffer, checkCRC=checkCRCOnRecover,
  readBody=true)`` (``checkCRCOnRecover`` defaults to true in both versions).  The walk stops at the first
  result that is not a success: an unreadable record or zeros (-1), a bad magic code (-1), a body whose
  ``UtilAll.crc32`` differs from bodyCRC (-1; only bodies of length > 0 are checked; 5.x with
  ``forceVerifyPropCRC=true`` checks no body but the whole-record CRC property instead, which a record
  without it fails: :mod:`store_format.propcrc`; 5.5.1's start-segment test reads it too), a totalSize that
  differs from the fields (``DispatchRequest(totalSize, false)``: 5.3.3 logs "found a half message").
  A blank record moves it to the next segment; after the last segment it ends.  The stop position is
  ``processOffset``; recovery never skips a bad record.
* ``MappedFileQueue.truncateDirtyFiles(processOffset)``: a segment holding ``processOffset`` (base
  ``<=`` it, end ``>`` it) keeps its bytes but its write position becomes ``processOffset``; every
  segment whose base is above ``processOffset`` is destroyed (deleted).  The bytes after the cut stay in
  the kept segment until new messages overwrite them; the broker reads nothing past the cut.

After recovery (consume queues and index deleted, as for a rebuild), what a restart dispatches:

* 4.9.8 normal: nothing during recovery; ``start()`` sets ``reputFromOffset`` to the commitlog's minimum
  offset and the reput walks ``[first segment, processOffset)`` with its own rules (unreadable records
  skip the rest of their segment, etc.);
* 4.9.8 abnormal: ``recoverAbnormally`` dispatches every record it accepts, from ``checked_from`` to
  ``processOffset``; ``start()`` then sets ``reputFromOffset`` to the largest consume queue offset, so
  records before ``checked_from`` are never dispatched (unless it queued nothing: then from the min offset);
* 5.3.3 normal and abnormal: recovery dispatches the records it accepts (``onCommitLogDispatch``; normal:
  those above ``maxPhyOffsetOfConsumeQueue``: :attr:`RecoveryPlan.dispatch_above`); ``start()`` sets
  ``reputFromOffset`` to ``getConfirmOffset()``, the commitlog's max offset, so the reput adds nothing; with
  ``recheckReputOffsetFromCq=true`` (``doRecheckReputOffsetFromCq``) it then restarts, as 4.9.8's ``start()``
  always does, at the consume queues' largest ``maxPhysicOffset``
  (:func:`store_format.restart_reput.start_reput_check`).

:attr:`RecoveryPlan.dispatch_from` is where that dispatch starts.

Consume queue ext files and 5.x batch consume queues change none of this with their folders deleted:
recovery's dispatch and the reput go through the same dispatchers (``ConsumeQueue.putMessagePositionInfoWrapper``
with ``ConsumeQueueExt.put``; ``BatchConsumeQueue.putMessagePositionInfoWrapper``), so the rebuild of the kept
commitlog writes their files; the queue stores loaded nothing, so their ``recover`` has nothing to do, and
``truncateDirtyLogicFiles`` (4.9.8, 5.3.3: only when the loaded queues' max offset is at or past the cut; 5.5.1
abnormal: always) finds only units recovery put, all before the cut.  Checked against the broker:
tests/test_restart_layouts_broker.py.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from . import commitlog as cl
from .anomalies import AnomalyKind as K
from .config import BrokerConfig
from .crc import body_crc_spans
from .errors import RestartFailsError, UnsupportedConfigError
from .filedump.checkpoint import Checkpoint, parse_checkpoint
from .filedump.commitlog import classify_unreadable
from .layout import (
    BORN_HOST_OFFSET,
    CHECKPOINT_SIZE,
    HOST_V4_LEN,
    HOST_V6_LEN,
    MAGIC_V1,
    MAGIC_V2,
    OFF_MAGIC,
    OFF_PHYSICAL_OFFSET,
    OFF_SYSFLAG,
    SYSFLAG_BORNHOST_V6,
)
from .message_rocksdb import DispatchStoreOffsets, dispatch_store_offsets
from .propcrc import PROPERTY_CRC32, prop_crc_check
from .reput import resolve_broker_version
from .restart_reput import Accepted, reput_records_from, start_reput_check, walk_reaches
from .store import Segment, StoreLocation

__all__ = ["RecoveryPlan", "plan_recovery", "recovery_start_index", "read_checkpoint", "check_rows", "CheckStop",
           "dispatch_config", "DEFAULT_WINDOW"]

log = logging.getLogger(__name__)

DEFAULT_WINDOW = 16 << 20  # commitlog bytes per walk: bounds the walk's output arrays
_WINDOW_MARGIN = 1 << 20

MODE_NORMAL = "normal"
MODE_ABNORMAL = "abnormal"


@dataclasses.dataclass(frozen=True)
class RecoveryPlan:
    """Where a restarted broker's commitlog recovery cuts the commitlog (see the module docstring).

    Attributes:
        mode: ``normal`` (clean shutdown: no ``abort`` file) or ``abnormal``.
        process_offset: global commitlog offset where the recovered data ends (the broker's max
            physical offset after recovery).
        checked_from: base offset of the first segment recovery walked.
        kept_segments: segments that remain; later ones are deleted by ``truncateDirtyFiles``.
        discarded_bytes: bytes of the records after ``process_offset`` that the reput would have found
            (what a rebuild without recovery reads there); zero fill is not counted.
        discarded_messages: those records (dispatched or not, e.g. a size mismatch), counted as the
            reput's walk finds them from ``process_offset`` on (it skips the rest of a segment after an
            unreadable record).
        reason: why recovery stopped there.
        broker_version: ``4`` (4.9.x rules) or ``5`` (5.x rules).
        check_crc: whether bodies were checked (``checkCRCOnRecover``).
        dispatch_from: commitlog offset from which a restart with ``consumequeue/`` and ``index/``
            deleted dispatches records (the first segment's base, or ``checked_from`` where recovery
            itself dispatches and the reput then starts at the end; inside that segment with 5.5.1
            ``enableAcceleratedRecovery`` after a crash).
        stop_kind: ``end_of_data``, ``crc_mismatch`` (with ``forceVerifyPropCRC``: the CRC property is wrong or
            missing), ``bad_magic``, ``size_mismatch``, ``unreadable_record``,
            ``blank_in_last_segment``, ``segment_end`` or ``offset_mismatch`` (``checkCommitLogOffsetOnRecover``).
        segments: segments in the store before recovery.
        restart_reput_from: where ``DefaultMessageStore.start`` sets the reput after a recovery that
            dispatched (4.9 abnormal; 5.x with ``recheckReputOffsetFromCq=true``), -1 where it starts at
            the commitlog's end (5.x default) or recovery dispatched nothing (4.9 normal).
        dispatch_above: records at commitlog offsets at or below this are read, not dispatched (5.x normal
            recovery: ``doDispatch`` only above the consume queues' max physical offset; 0 for an empty
            RocksDB consume queue); -1: every record from ``dispatch_from`` on is dispatched.
        reindex: the offset of the record the second reput (``restart_reput_from``) indexes again
            (:class:`store_format.restart_reput.SecondReput`); -1: none.
        rocksdb_offset_zero: that reput dispatches the RocksDB store's record at offset 0, which the normal
            recovery read only; ``index_offset_zero``: its keys too (no other record put a key).
        index_from: that reput starts before ``dispatch_from`` and queues the records below it, but indexes
            none below this offset (-1: it indexes them all, or it starts at or after ``dispatch_from``).
        walk_first: the walk from this offset, inside a record that reput reads whole, put keys that precede the
            reput's in the index (``SecondReput.walk_first``; -1: none such), ``walk_keys`` the offsets of its keys
            (a kept RocksDB database's accelerated walk from inside its segment: those too, ``walk_first`` unset).
        walk_queued: the offset of the last record the walk queued (``Accepted.cq_start``; -1: none).
    """
    mode: str
    process_offset: int
    checked_from: int
    kept_segments: int
    discarded_bytes: int
    discarded_messages: int
    reason: str
    broker_version: str = "4"
    check_crc: bool = True
    dispatch_from: int = 0
    stop_kind: str = K.END_OF_DATA.value
    segments: int = 0
    restart_reput_from: int = -1
    dispatch_above: int = -1
    reindex: int = -1
    rocksdb_offset_zero: bool = False
    index_offset_zero: bool = False
    index_from: int = -1
    walk_first: int = -1
    walk_keys: tuple[int, ...] = ()
    walk_queued: int = -1

    @property
    def deleted_segments(self) -> int:
        return self.segments - self.kept_segments

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["deleted_segments"] = self.deleted_segments
        return d

    def render(self) -> str:
        line = (f"recovery ({self.mode}, {'5.x' if self.broker_version == '5' else '4.9.x'} rules, CRC "
                f"{'checked' if self.check_crc else 'not checked'}): checked from offset {self.checked_from}, "
                f"commitlog ends at {self.process_offset}: {self.reason}")
        if self.discarded_messages or self.deleted_segments:
            line += (f"; a restart discards {self.discarded_messages} records ({self.discarded_bytes} bytes) and "
                     f"deletes {self.deleted_segments} of {self.segments} segments")
        return line


def read_checkpoint(store: StoreLocation) -> Checkpoint:
    """The store's ``checkpoint`` file (``StoreCheckpoint``), zeros without one."""
    path = f"{store.root}/checkpoint"
    info = store.fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return Checkpoint()
    with store.fs.open_input_file(path) as f:
        return parse_checkpoint(f.read_at(min(int(info.size or 0), CHECKPOINT_SIZE), 0))


def _first_record_matches(store: StoreLocation, seg: Segment, accept_v2: bool, min_ts: int,
                          max_phys: int | None = None) -> bool:
    """``CommitLog.isMappedFileMatchedRecover``: the segment's first record has a record's magic code, a
    store timestamp that is not 0 and is at most ``min_ts``; with ``max_phys`` (5.3.3 with a RocksDB
    consume queue, ``isEnableRocksDBStore``) a physicalOffset field at most ``max_phys`` instead."""
    with store.reader(seg) as read:
        head = bytes(read(0, min(seg.size, BORN_HOST_OFFSET + HOST_V6_LEN + 8)))
    if len(head) < BORN_HOST_OFFSET + HOST_V4_LEN + 8:
        return False
    magic = int.from_bytes(head[OFF_MAGIC:OFF_MAGIC + 4], "big", signed=True)
    if magic != MAGIC_V1 and not (accept_v2 and magic == MAGIC_V2):
        return False
    if max_phys is not None:
        return int.from_bytes(head[OFF_PHYSICAL_OFFSET:OFF_PHYSICAL_OFFSET + 8], "big", signed=True) <= max_phys
    sysflag = int.from_bytes(head[OFF_SYSFLAG:OFF_SYSFLAG + 4], "big", signed=True)
    at = BORN_HOST_OFFSET + (HOST_V6_LEN if sysflag & SYSFLAG_BORNHOST_V6 else HOST_V4_LEN)
    if len(head) < at + 8:
        return False
    store_ts = int.from_bytes(head[at:at + 8], "big", signed=True)
    return store_ts != 0 and store_ts <= min_ts


def _first_record_accepted(store: StoreLocation, seg: Segment, config: BrokerConfig) -> tuple[int, int] | None:
    """5.5.1 ``isMappedFileMatchedRecover``: the segment's first record as ``checkMessageAndReturnSize``
    (``checkCRCOnRecover``) reads it: (physicOffset field, storeTimestamp), or None when it fails or is a
    blank (whose storeTimestamp reads as 0)."""
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(0, seg.size), 1, config,
                            keep_text=True)
    if len(res.rec) == 0:
        return None
    _, n_ok = check_rows(res, seg, check_crc=config.checkCRCOnRecover, is_5x=True,
                         prop_crc=config.forceVerifyPropCRC)
    if n_ok == 0 or int(res.rec[0, cl.R_STORE_TS]) == 0:
        return None
    return int(res.rec[0, cl.R_PHYS]), int(res.rec[0, cl.R_STORE_TS])


def _start_index_551(store: StoreLocation, config: BrokerConfig, *, abnormal: bool, checkpoint: Checkpoint,
                     max_phy_offset_of_consume_queue: int, stores: DispatchStoreOffsets) -> int:
    """5.5.1 ``recoverNormally``/``recoverAbnormally``: from the last segment back, at most
    ``commitLogRecoverMaxNum`` (<= 0: 10) segments, to the first whose first record every dispatch store
    accepts (``CommitLog.isMappedFileMatchedRecover``): it passes ``checkMessageAndReturnSize``, its store
    time is not 0, ``ConsumeQueueStore.isMappedFileMatchedRecover`` (its offset at most
    ``getDispatchFromPhyOffset``: normal, the consume queues' max physical offset, -1 with none; abnormal,
    the checkpoint's logicsPhysicalOffset, or with that <= 0 its store time at most logicsMsgTimestamp) and
    ``IndexService.isMappedFileMatchedRecover`` (with messageIndexEnable && messageIndexSafe: store time at
    most indexMsgTimestamp), and with ``indexRocksDBEnable``/``transRocksDBEnable`` those stores' (its offset at
    most their lastOffsetPy: :mod:`store_format.message_rocksdb`).  The normal walk never goes below index 0;
    both stop when the count runs out.  A RocksDB consume queue (``RocksDBConsumeQueueStore``) dispatches from
    its max physical offset in both recoveries, compared with the offset alone."""
    segs = store.segments
    left = config.commitLogRecoverMaxNum if config.commitLogRecoverMaxNum > 0 else 10
    by_checkpoint = abnormal and not config.rocksdb_cq
    dispatch_from = checkpoint.logics_physical_offset if by_checkpoint else max_phy_offset_of_consume_queue
    safe = config.messageIndexEnable and config.messageIndexSafe

    def matched(seg: Segment) -> bool:
        first = _first_record_accepted(store, seg, config)
        if first is None:
            return False
        phys, ts = first
        if by_checkpoint and checkpoint.logics_physical_offset <= 0:
            queue_ok = ts <= checkpoint.logics_msg_timestamp
        else:
            queue_ok = phys <= dispatch_from
        return queue_ok and (not safe or ts <= checkpoint.index_msg_timestamp) and stores.segment_matches(phys)

    i = len(segs) - 1
    while i > 0 or (abnormal and i == 0):
        left -= 1
        if matched(segs[i]) or left <= 0:
            return i
        i -= 1
    return max(i, 0)


def recovery_start_index(store: StoreLocation, config: BrokerConfig, *, abnormal: bool,
                         checkpoint: Checkpoint, max_phy_offset_of_consume_queue: int = -1,
                         stores: DispatchStoreOffsets | None = None) -> int:
    """Index (in ``store.segments``) of the segment recovery starts walking at (module docstring); ``stores``:
    5.5.1's RocksDB dispatch stores (None: read from the store)."""
    segs = store.segments
    is_5x = config.is_5x
    if config.brokerVersion == "5.5":
        return _start_index_551(store, config, abnormal=abnormal, checkpoint=checkpoint,
                                max_phy_offset_of_consume_queue=max_phy_offset_of_consume_queue,
                                stores=dispatch_store_offsets(store, config) if stores is None else stores)
    if abnormal:
        safe = config.messageIndexEnable and config.messageIndexSafe
        min_ts = checkpoint.min_timestamp_index if safe else checkpoint.min_timestamp
        max_phys = max_phy_offset_of_consume_queue if config.rocksdb_cq else None
        for i in range(len(segs) - 1, -1, -1):
            if _first_record_matches(store, segs[i], is_5x, min_ts, max_phys):
                return i
        return 0
    if not is_5x:
        return max(len(segs) - 3, 0)
    i = len(segs) - 1
    while i > 0 and segs[i].base > max_phy_offset_of_consume_queue:
        i -= 1
    return i


def _accelerated_start(seg: Segment, dispatch_from_phy_offset: int) -> int:
    """5.5.1 ``recoverAbnormally`` with ``enableAcceleratedRecovery``: the walk starts at position
    ``dispatchFromPhyOffset - base`` of its start segment (the checkpoint's logicsPhysicalOffset; a RocksDB
    consume queue's max physical offset; lowered to a RocksDB dispatch store's lastOffsetPy above 0), at 0 where
    that is negative; past the segment's end ``ByteBuffer.position`` throws and the broker does not load."""
    pos = dispatch_from_phy_offset - seg.base
    if pos < 0:
        return 0
    if pos > seg.size:
        raise RestartFailsError(
            f"enableAcceleratedRecovery=true: the recovery's dispatchFromPhyOffset {dispatch_from_phy_offset} lies "
            f"past the end of segment {seg.name}, where the 5.5.1 abnormal recovery starts: the broker's restart "
            "fails to load the store (ByteBuffer.position throws); nothing to predict")
    return pos


@dataclasses.dataclass
class CheckStop:
    """The first record :func:`check_rows`' message check refuses: its commitlog offset, the kind of failure and
    why, in words."""
    offset: int
    kind: str
    reason: str


def check_rows(res: cl.WalkResult, seg: Segment, *, check_crc: bool, is_5x: bool,
               prop_crc: bool = False) -> tuple[CheckStop | None, int]:
    """The first record of a walk that ``checkMessageAndReturnSize(checkCRC, readBody=true)`` does not
    accept, in the order the method tests: magic code (4.9 reads V1 only), the body read into a
    ``totalSize`` buffer, the body CRC (``prop_crc``, 5.x ``forceVerifyPropCRC`` with ``checkCRC``: instead, after
    the properties, the whole-record CRC property, :mod:`store_format.propcrc`), then totalSize against the
    fields."""
    rec = res.rec
    if len(rec) == 0:
        return None, 0
    body_len = rec[:, cl.R_BODY_LEN]
    total = rec[:, cl.R_TOTAL]
    v2 = (rec[:, cl.R_TOPIC_START] - rec[:, cl.R_BODY_START] - np.maximum(body_len, 0)) == 2
    bad_v2 = v2 if not is_5x else np.zeros(len(rec), dtype=bool)
    body_overflow = body_len > total  # byteBuffer.get(bytesContent[totalSize], 0, bodyLen) throws
    crc_bad = np.zeros(len(rec), dtype=bool)
    computed = None
    mismatch = rec[:, cl.R_STATUS] != cl.Status.DISPATCHED
    prop: tuple[np.ndarray, np.ndarray] | None = None
    if check_crc and prop_crc and is_5x:
        prop = prop_crc_check(np.asarray(res.text, dtype=np.uint8), res.text_origin, rec[:, cl.R_POS], total,
                              res.prop_span[:, cl.P_CRC32], ~mismatch & ~body_overflow)
        crc_bad = ~mismatch & ~body_overflow & ((prop[0] < 0) | (prop[1] != prop[0]))
    elif check_crc:
        computed = body_crc_spans(np.asarray(res.text, dtype=np.uint8), res.text_origin, rec[:, cl.R_BODY_START],
                                  np.where(body_len > 0, body_len, 0))
        crc_bad = (body_len > 0) & ~body_overflow & (computed != rec[:, cl.R_CRC].astype(np.int32))
    bad = bad_v2 | body_overflow | crc_bad | mismatch
    if not bad.any():
        return None, len(rec)
    i = int(np.argmax(bad))
    return _first_stop(rec, i, seg, bad_v2, body_overflow, crc_bad, computed, prop), i


def _first_stop(rec: np.ndarray, i: int, seg: Segment, bad_v2: np.ndarray, body_overflow: np.ndarray,
                crc_bad: np.ndarray, computed: np.ndarray | None,
                prop: tuple[np.ndarray, np.ndarray] | None = None) -> CheckStop:
    body_len = rec[:, cl.R_BODY_LEN]
    total = rec[:, cl.R_TOTAL]
    pos = int(rec[i, cl.R_POS])
    off = seg.base + pos
    where = f"offset {off} (segment {seg.name} position {pos})"
    if bad_v2[i]:
        return CheckStop(off, K.BAD_MAGIC.value,
                         f"a V2 record (magic 0xDAA320AB) at {where}: 4.9 reads V1 records only")
    if body_overflow[i]:
        return CheckStop(off, K.UNREADABLE_RECORD.value,
                     f"unreadable record at {where}: bodyLength {int(body_len[i])} is above totalSize {int(total[i])}")
    if crc_bad[i] and prop is not None:
        expected, got = int(prop[0][i]), int(prop[1][i])
        if expected < 0:
            return CheckStop(off, K.CRC_MISMATCH.value, f"forceVerifyPropCRC: no {PROPERTY_CRC32} property with a "
                                                    f"non-negative value in the record at {where}")
        return CheckStop(off, K.CRC_MISMATCH.value, f"forceVerifyPropCRC: CRC property mismatch at {where}: "
                                                f"{PROPERTY_CRC32} gives {expected}, the record {got}")
    if crc_bad[i]:
        assert computed is not None
        return CheckStop(off, K.CRC_MISMATCH.value, f"body CRC mismatch at {where}: bodyCRC {int(rec[i, cl.R_CRC])}, "
                                          f"body gives {int(computed[i])}")
    return CheckStop(off, K.SIZE_MISMATCH.value, f"totalSize {int(total[i])} at {where} differs from the "
                                       f"{int(rec[i, cl.R_STRUCT])} bytes its fields give")


def _offset_check(res: cl.WalkResult, n_ok: int, seg: Segment, stop: CheckStop | None) -> tuple[CheckStop | None, int]:
    """5.5.1 ``recoverAbnormally`` with ``checkCommitLogOffsetOnRecover``: a record it accepted whose
    physicalOffset field lies below its segment's base or above base + file size ends the walk there."""
    phys = res.rec[:n_ok, cl.R_PHYS]
    bad = (phys < seg.base) | (phys > seg.base + seg.size)
    if not bad.any():
        return stop, n_ok
    i = int(np.argmax(bad))
    pos = int(res.rec[i, cl.R_POS])
    return CheckStop(seg.base + pos, "offset_mismatch",
                 f"checkCommitLogOffsetOnRecover: the record at offset {seg.base + pos} (segment {seg.name} position "
                 f"{pos}) gives physicalOffset {int(phys[i])}, outside its segment"), i


def _recovery_walk(store: StoreLocation, first: int, config: BrokerConfig, *, check_crc: bool,
                   window: int, accepted: Accepted | None = None, start_pos: int = 0,
                   offset_check: bool = False) -> CheckStop:
    """Walk segments from ``store.segments[first]`` (position ``start_pos`` in it) as
    ``recoverNormally``/``recoverAbnormally`` do and return where they stop (``processOffset``);
    ``accepted`` collects what the accepted records leave; ``offset_check``: :func:`_offset_check`."""
    accepted = accepted if accepted is not None else Accepted()
    segs = store.segments
    scratch = cl.Scratch()
    is_5x = config.is_5x
    index = first
    while True:
        seg = segs[index]
        state = cl.WalkState.at_slice_start(start_pos if index == first else 0, seg.size)
        with store.reader(seg) as read:
            while True:
                split_end = min(state.bufpos + window, seg.size + 1)
                res = cl.walk_range(read, seg.base, seg.size, state, split_end, config, window=window + _WINDOW_MARGIN,
                                    keep_text=True, scratch=scratch)
                stop, n_ok = check_rows(res, seg, check_crc=check_crc, is_5x=is_5x,
                                        prop_crc=config.forceVerifyPropCRC)
                if offset_check:
                    stop, n_ok = _offset_check(res, n_ok, seg, stop)
                accepted.add(res, n_ok)
                if stop is not None:
                    return stop
                state = res.state
                if res.stop != cl.Stop.SPLIT_END:
                    break
            pos = state.bufpos
            if res.stop == cl.Stop.BLANK:
                if index + 1 >= len(segs):
                    return CheckStop(seg.base + pos, "blank_in_last_segment",
                                 f"blank record at offset {seg.base + pos} ends the last segment {seg.name}")
                index += 1
                continue
            if res.stop == cl.Stop.SLICE_END or pos >= seg.size:
                return CheckStop(seg.base + pos, "segment_end",
                             f"segment {seg.name} is full to its last byte without a blank record; the next read "
                             "fails and recovery ends there")
            why = classify_unreadable(read, seg.size, pos, accept_v2=is_5x)
        where = f"offset {seg.base + pos} (segment {seg.name} position {pos})"
        if why.kind == "end_of_data":
            return CheckStop(seg.base + pos, K.END_OF_DATA.value, f"end of data at {where}")
        if why.kind == "bad_magic":
            return CheckStop(seg.base + pos, K.BAD_MAGIC.value, f"bad magic code {why.as_dict()['magic']} at {where}")
        return CheckStop(seg.base + pos, K.UNREADABLE_RECORD.value, f"unreadable record at {where}: {why.detail}")


def plan_recovery(store: StoreLocation, config: BrokerConfig, *, abnormal: bool | None = None,
                  checkpoint: bytes | None = None, check_crc: bool | None = None,
                  max_phy_offset_of_consume_queue: int = -1, window: int = DEFAULT_WINDOW) -> RecoveryPlan:
    """Where a restart of the broker on ``store`` would cut the commitlog, and what it would discard.

    Args:
        store: the store (its segments; ``abort`` and ``checkpoint`` files are read from its root).
        config: broker settings: ``brokerVersion`` (``auto`` is detected from the records) picks the
            4.9.x or 5.x rules; ``checkCRCOnRecover``, ``messageIndexSafe``, ``forceVerifyPropCRC``,
            ``recheckReputOffsetFromCq``, ``enableControllerMode``, ``enableAcceleratedRecovery`` and
            ``checkCommitLogOffsetOnRecover`` as docs/restart-settings.md says;
            ``brokerId`` decides the reput's walk used for the discarded counts.
        abnormal: None: as the broker decides, from the ``abort`` file (present: the last shutdown was
            not clean).
        checkpoint: the ``checkpoint`` file's bytes (None: the store's file, or zeros without one).
        check_crc: overrides ``checkCRCOnRecover``.
        max_phy_offset_of_consume_queue: the largest ``offset + size`` in the consume queues the broker
            loads; -1 (default) is a store whose ``consumequeue/`` was deleted, as before a rebuild
            (only the 5.x normal recovery uses it; a RocksDB consume queue store: both recoveries, and its
            empty database reads 0).
        window: commitlog bytes decoded at a time.
    Returns:
        A :class:`RecoveryPlan`.
    Raises:
        RestartFailsError: 5.5.1 with ``enableAcceleratedRecovery=true`` where the broker's ``load()`` fails.
        UnsupportedConfigError: 5.x with ``enableControllerMode=true``; 5.5.1 with
            ``indexRocksDBEnable``/``transRocksDBEnable`` whose ``rocksdbstore/`` cannot be read
            (:func:`store_format.message_rocksdb.dispatch_store_offsets`).

    Example:
        >>> plan = plan_recovery(open_store("store", config), config)  # doctest: +SKIP
        >>> plan.process_offset, plan.reason  # doctest: +SKIP
        (1073741824, 'end of data at offset 1073741824 ...')
    """
    if store.dledger is not None:
        raise UnsupportedConfigError(
            "a DLedger store's restart is DLedger's own recovery (DLedgerCommitLog.recover), not a commitlog "
            "recovery: see store_format.dledger_recovery (rebuild --as-restart)")
    config = resolve_broker_version(store, config)
    is_5x = config.is_5x
    if abnormal is None:   # 4.9.8 DLedgerCommitLog.recover: the old files' normal recovery, after a crash too
        abnormal = store.broker_may_be_running() and not (store.dledger_pending and not is_5x)
    cp = parse_checkpoint(checkpoint) if checkpoint is not None else read_checkpoint(store)
    accelerated = config.brokerVersion == "5.5" and abnormal and config.enableAcceleratedRecovery
    if accelerated and not config.rocksdb_cq and cp.physic_msg_timestamp > 0 and cp.logics_physical_offset <= 0:
        raise RestartFailsError(
            f"enableAcceleratedRecovery=true with a checkpoint whose logicsPhysicalOffset is "
            f"{cp.logics_physical_offset}: the 5.5.1 broker's abnormal restart fails to load the store "
            "(ConsumeQueueStore.getDispatchFromPhyOffset throws); nothing to predict")
    crc = config.checkCRCOnRecover if check_crc is None else bool(check_crc)
    if is_5x and config.enableControllerMode:
        raise UnsupportedConfigError(
            "enableControllerMode=true: a 5.x restart then dispatches and reputs only up to the confirm offset "
            "the controller's sync state set gives (CommitLog.getConfirmOffset, AutoSwitchHAService), which the "
            "store on disk does not hold; let the broker recover")
    # RocksDBConsumeQueueOffsetTable.getMaxPhyOffset: an empty database has no checkpoint entry and answers 0
    max_phy = max(max_phy_offset_of_consume_queue, 0) if config.rocksdb_cq else max_phy_offset_of_consume_queue
    stores = dispatch_store_offsets(store, config)
    first = recovery_start_index(store, config, abnormal=abnormal, checkpoint=cp,
                                 max_phy_offset_of_consume_queue=max_phy, stores=stores)
    segs = store.segments
    checked_from = segs[first].base
    # a RocksDB consume queue's dispatchFromPhyOffset is its database's max physical offset (0 when empty), never the
    # checkpoint's logicsPhysicalOffset (tests/test_restart_accelerated_rocksdb_broker.py)
    start_pos = _accelerated_start(segs[first], stores.dispatch_from(
        cp.logics_physical_offset if not config.rocksdb_cq else max_phy)) if accelerated else 0
    accepted = Accepted(key_offsets=[] if start_pos > 0 else None)   # walk_first's keys
    stop = _recovery_walk(store, first, config, check_crc=crc, window=window, accepted=accepted, start_pos=start_pos,
                          offset_check=config.brokerVersion == "5.5" and abnormal
                          and config.checkCommitLogOffsetOnRecover)
    process_offset = stop.offset
    kept = sum(1 for s in segs if s.base <= process_offset)
    records, nbytes = reput_records_from(store, config, process_offset, window, _WINDOW_MARGIN)
    dispatch_from = segs[0].base if (not is_5x and not abnormal) else checked_from + start_pos
    second = None
    dispatch_above = max_phy if is_5x and not abnormal else -1
    if max_phy_offset_of_consume_queue < 0 and (is_5x or abnormal):
        second = start_reput_check(config, segs[0].base, dispatch_from, process_offset, accepted,
                                   abnormal=abnormal, batch_topics=store.batch_topics, dispatch_above=dispatch_above,
                                   segment_base=checked_from, start_on_record=lambda: walk_reaches(
                                       store, segs[first], start_pos, config, window, _WINDOW_MARGIN))
    plan = RecoveryPlan(
        mode=MODE_ABNORMAL if abnormal else MODE_NORMAL, process_offset=process_offset, checked_from=checked_from,
        kept_segments=kept, discarded_bytes=nbytes, discarded_messages=records, reason=stop.reason,
        broker_version="5" if is_5x else "4", check_crc=crc, dispatch_from=dispatch_from, stop_kind=stop.kind,
        segments=len(segs), restart_reput_from=second.reput if second is not None else -1,
        dispatch_above=dispatch_above, reindex=second.reindex if second is not None else -1,
        rocksdb_offset_zero=second is not None and second.rocksdb_offset_zero,
        index_offset_zero=second is not None and second.index_offset_zero,
        index_from=second.index_from if second is not None else -1,
        walk_first=second.walk_first if second is not None else -1,
        walk_keys=accepted.walk_keys() if (second is not None and second.walk_first >= 0) or config.rocksdb_cq else (),
        walk_queued=accepted.cq_start)
    log.info("%s", plan.render())
    return plan


def dispatch_config(config: BrokerConfig, plan: RecoveryPlan) -> BrokerConfig:
    """The settings as the restart's dispatch reads them.

    rocketmq-all-4.9.8 ``DefaultMessageStore.load`` calls ``recover`` *before* ``ScheduleMessageService.load``
    (which runs ``parseDelayLevel``); ``CommitLog.checkMessageAndReturnSize`` caps a ``SCHEDULE_TOPIC_XXXX``
    record's ``DELAY`` level to ``getMaxDelayLevel()``, still 0, so the records ``recoverAbnormally`` dispatches
    keep their tags hash (0 without tags) as tagsCode instead of the delivery time: in the consume queue unit,
    or in the ext unit with ``enableConsumeQueueExt``.  The reput of ``start()`` runs after ``load``, but it
    starts past the last queued record, and every ``SCHEDULE_TOPIC_XXXX`` record recovery accepted is queued;
    where recovery queued nothing, the reput starts at the min offset (``restart_reput_from`` below
    ``dispatch_from``) and puts every unit itself, with the levels.  5.x parses the levels in the
    ``DefaultMessageStore`` constructor (``parseDelayLevel``, 5.3.3 and 5.5.1); a 4.9.8 normal recovery
    dispatches nothing (the reput does, after ``load``)."""
    if plan.broker_version == "4" and plan.mode == MODE_ABNORMAL \
            and not 0 <= plan.restart_reput_from < plan.dispatch_from:
        return dataclasses.replace(config, delay_levels_loaded=False)
    return config
