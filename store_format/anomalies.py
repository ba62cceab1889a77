"""The one vocabulary of what a rebuild finds wrong with a store, and the one shape of a finding.

Every mode (Spark or ``--engine local``, with or without the Delta tables, ``--as-restart``) reports
the same findings for the same bytes: the walk, the chain, the tables, ``validate`` and the rebuild
summary all use :class:`AnomalyKind` and :func:`anomaly`.  The kinds follow what the broker itself
does with the bytes:

* ``CommitLog.checkMessageAndReturnSize`` (4.9.8 and 5.3.3), as the reput calls it
  (``DefaultMessageStore.ReputMessageService.doReput``: no CRC check):

  - an unknown magic code gives ``DispatchRequest(-1, false)``: the reput reads nothing more of the
    segment (``bad_magic``); any other record it cannot read (a length or field out of range, a
    record running past the data) ends the segment the same way (``unreadable_record``);
  - a ``totalSize`` that differs from the length of the fields gives ``DispatchRequest(totalSize,
    false)``: the reput skips ``totalSize`` bytes without dispatching (``size_mismatch``);
  - the records after a stop in a segment, or in a segment the reput's position skips, are never
    read (``unreachable_records``).

* a ``bodyCRC`` that differs from ``UtilAll.crc32`` of the body is not checked by the reput (it
  dispatches the record) but is by the commitlog recovery (``checkCRCOnRecover``, default true),
  which truncates the commitlog there when the record lies in the part it checks
  (``crc_mismatch``: reported in every mode, for every record on the reput's path).

* ``ConsumeQueue.putMessagePositionInfo`` logs "logic queue order maybe wrong" when a unit's queue
  offset is not the queue's write position: a queue offset that does not follow the previous one
  of its queue on the reput's path (``queue_offset_gap`` forward, ``queue_offset_backwards``).

* ``MultiDispatch``/``CommitLogDispatcherBuildConsumeQueue``: ``Long.parseLong`` refuses a light
  queue offset (``lmq_offset_unparsable``).

* a broker restart's recovery (``CommitLog.recoverNormally``/``recoverAbnormally``) discards the
  tail it cannot verify (``restart_discards``, ``--as-restart`` only).

* an index file whose first store time has no ``yyyyMMddHHmmssSSS`` name in years 1970..9999
  (``IndexService.getAndCreateLastIndexFile`` names it with ``UtilAll.timeMillisToHumanString``):
  ``store_timestamp_out_of_range``.

``END_OF_DATA`` (zeros where the last segment's data ends) is how the reput's walk ends, not an
anomaly: the chain uses it and nothing reports it.
"""
from __future__ import annotations

import enum

__all__ = ["AnomalyKind", "REPORTED_KINDS", "ANOMALY_FIELDS", "anomaly"]


class AnomalyKind(str, enum.Enum):
    BAD_MAGIC = "bad_magic"
    UNREADABLE_RECORD = "unreadable_record"
    SIZE_MISMATCH = "size_mismatch"
    CRC_MISMATCH = "crc_mismatch"
    UNREACHABLE_RECORDS = "unreachable_records"
    QUEUE_OFFSET_GAP = "queue_offset_gap"
    QUEUE_OFFSET_BACKWARDS = "queue_offset_backwards"
    LMQ_OFFSET_UNPARSABLE = "lmq_offset_unparsable"
    RESTART_DISCARDS = "restart_discards"
    STORE_TIMESTAMP_OUT_OF_RANGE = "store_timestamp_out_of_range"
    END_OF_DATA = "end_of_data"

    def __str__(self) -> str:
        return self.value


# the kinds a report can hold (everything but the end of the data)
REPORTED_KINDS: tuple[str, ...] = tuple(k.value for k in AnomalyKind if k is not AnomalyKind.END_OF_DATA)

# the fields of a finding, as the ``anomalies`` table has them (after its ``run_id``)
ANOMALY_FIELDS = ("segment", "commitlog_offset", "position", "length", "kind", "topic", "queue_id", "expected",
                  "found", "detail")


def anomaly(kind: AnomalyKind | str, segment: str, base: int, position: int, detail: str, *,
            length: int | None = None, topic: str | None = None, queue_id: int | None = None,
            expected: int | None = None, found: int | None = None) -> dict:
    """One finding: its kind, the segment (name) and position in it where it is (``base``: the
    segment's base offset), and what else is known of it."""
    kind = AnomalyKind(kind)
    if kind is AnomalyKind.END_OF_DATA:
        raise ValueError("the end of the data is not an anomaly")
    return {"segment": segment, "commitlog_offset": int(base) + int(position), "position": int(position),
            "length": None if length is None else int(length), "kind": kind.value, "topic": topic,
            "queue_id": None if queue_id is None else int(queue_id),
            "expected": None if expected is None else int(expected), "found": None if found is None else int(found),
            "detail": detail}
