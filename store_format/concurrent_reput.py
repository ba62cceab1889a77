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
unreadable record, a size mismatch; a blank is handled alike).  At that record (:func:`concurrent_reput_stop`)
the concurrent one stops for good when ``preCheckMessageAndReturnSize`` rejects it: a rebuild then ends its
walk there (:func:`cut_at`), like a recovery's end.  Where it accepts it (a record's magic code and a
positive totalSize within the data), the batch parse of the wrong bytes decides what follows (a "[BUG]"
log and a parse from wherever the failed one left the buffer, or, for a totalSize running past the slice,
an exception in the executor task that leaves ``mappedPageHoldCount`` up and the reput thread waiting for
ever): not reproduced, refused.  A DLedger commitlog is refused: ``preCheckMessageAndReturnSize`` reads an
entry header's magic and size as a record's.
"""
from __future__ import annotations

import dataclasses

from .anomalies import AnomalyKind
from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .layout import MAGIC_BLANK, MAGIC_V1, MAGIC_V2
from .reput_end import data_end_limit
from .store import Segment, StoreLocation

__all__ = ["ConcurrentStop", "concurrent_reput_applies", "concurrent_reput_stop", "cut_at", "stop_detail"]

# the walk's findings where the sequential reput parts from the concurrent one (a blank's unreachable tail
# is the same for both: ``rollNextFile``)
_DIFFERS = (AnomalyKind.BAD_MAGIC.value, AnomalyKind.UNREADABLE_RECORD.value, AnomalyKind.SIZE_MISMATCH.value)
_SETTING = "enableBuildConsumeQueueConcurrently=true"


@dataclasses.dataclass(frozen=True)
class ConcurrentStop:
    """The record ``ConcurrentReputMessageService`` stops at for good: its commitlog offset, and why
    ``preCheckMessageAndReturnSize`` rejects it; ``finding`` is the walk's row there."""
    offset: int
    why: str
    finding: dict


def concurrent_reput_applies(config: BrokerConfig) -> bool:
    """The 5.x constructor picks ``ConcurrentReputMessageService`` (4.9.8 has no such setting)."""
    return config.is_5x and config.enableBuildConsumeQueueConcurrently


def check_concurrent_store(store: StoreLocation, config: BrokerConfig) -> None:
    """Refuses a DLedger store with the setting (module docstring), before any work.

    Raises:
        UnsupportedConfigError: one line.
    """
    if concurrent_reput_applies(config) and store.dledger is not None:
        raise UnsupportedConfigError(
            f"{_SETTING} with enableDLegerCommitLog=true: ConcurrentReputMessageService's "
            "preCheckMessageAndReturnSize reads a DLedger entry header as a record's; not reproduced")


def _offset(store: StoreLocation, a: dict) -> int:
    if a.get("commitlog_offset") is not None:
        return int(a["commitlog_offset"])
    seg = next(s for s in store.segments if s.name == a["segment"])
    return seg.base + int(a["position"])


def concurrent_reput_stop(store: StoreLocation, config: BrokerConfig, anomalies: list[dict],
                          reput_end: int | None = None) -> ConcurrentStop | None:
    """Where ``ConcurrentReputMessageService`` stops for good on ``store``, from the sequential walk's
    findings (``anomalies``: rows with ``commitlog_offset``, or ``segment`` name and ``position``; the end
    of the data left out), or None: the setting is off, or the walk met no record where they part.

    ``reput_end``: ``getConfirmOffset()``, where the data ends (None: the last segment's data end, or
    :func:`store_format.reput_end.data_end_limit` where size mismatches set it).

    Raises:
        UnsupportedConfigError: one line, where ``preCheckMessageAndReturnSize`` accepts that record (or
            rolls past it) and the batch parse of its bytes would decide what follows.
    """
    if not concurrent_reput_applies(config):
        return None
    check_concurrent_store(store, config)
    found = [a for a in anomalies if a.get("kind") in _DIFFERS]
    if not found:
        return None
    first = min(found, key=lambda a: _offset(store, a))
    at = _offset(store, first)
    seg = store.segment_at(at)
    assert seg is not None
    pos = at - seg.base
    left = seg.data_end - pos
    with store.reader(seg) as read:
        head = bytes(read(pos, min(8, max(left, 0))))
    where = f"segment {seg.name} position {pos}"
    if len(head) < 8:
        return ConcurrentStop(at, f"fewer than 8 bytes of the slice left for a header at {where} (getInt throws)",
                              first)
    total = int.from_bytes(head[:4], "big", signed=True)
    magic = int.from_bytes(head[4:], "big", signed=True)
    end = reput_end if reput_end is not None else _data_end(store, config)
    if at + total > end:
        return ConcurrentStop(at, f"totalSize {total} at {where} runs past the data's end ({end})", first)
    if magic not in (MAGIC_V1, MAGIC_V2, MAGIC_BLANK):
        return ConcurrentStop(at, f"illegal magic code 0x{magic & 0xFFFFFFFF:08X} at {where}", first)
    if magic != MAGIC_BLANK and total < 0:
        return ConcurrentStop(at, f"negative totalSize {total} at {where}", first)
    raise UnsupportedConfigError(
        f"{_SETTING}: the 5.x ConcurrentReputMessageService's preCheckMessageAndReturnSize "
        f"{'rolls to the next file at' if magic == MAGIC_BLANK or total == 0 else 'accepts'} the record "
        f"({first['kind']}, totalSize {total}) at {where}, where its batches parse the damaged bytes "
        "differently: not reproduced; rebuild with the broker, or without the setting if it ran without it")


def _data_end(store: StoreLocation, config: BrokerConfig) -> int:
    limit = data_end_limit(store, config)
    last = store.segments[-1]
    return limit if limit is not None else last.base + last.data_end


def stop_detail(stop: ConcurrentStop) -> dict:
    """The walk's row at the stop with a detail saying what the concurrent reput does there."""
    return {**stop.finding, "detail": (
        f"{_SETTING}: ConcurrentReputMessageService stops here for good ({stop.why}: "
        "preCheckMessageAndReturnSize gives -1 and reputFromOffset stays at this record): nothing at or after "
        f"commitlog offset {stop.offset} is dispatched")}


def cut_at(store: StoreLocation, offset: int) -> StoreLocation:
    """``store`` as a reput that stops for good at ``offset`` reads it: the segment holding it read up to it
    (``Segment.readable``), the later ones left out."""
    kept: list[Segment] = []
    for seg in store.segments:
        if seg.base > offset or (seg.base == offset and kept):
            break
        readable = offset - seg.base if offset < seg.base + seg.data_end else seg.readable
        kept.append(dataclasses.replace(seg, readable=readable))
    return dataclasses.replace(store, segments=kept)
