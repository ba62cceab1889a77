"""What a run found wrong, from the reput's one walk: the same list in every mode.

The scan summaries of the splits on the reput's path (:mod:`pipelines.scan`) and the chain
(:mod:`pipelines.chain`) hold everything the findings need; this module turns them into
:func:`store_format.anomalies.anomaly` rows, in chain order.  The rebuild summary, ``--strict``,
and the ``anomalies`` table all take this list, so a store gives the same findings (kind, segment,
position, detail) with or without tables, on Spark or ``--engine local``; ``--as-restart`` walks
the part a restart keeps and adds the restart's own finding.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from store_format.anomalies import AnomalyKind, anomaly
from store_format.layout import MAGIC_BLANK, MAGIC_V1, MAGIC_V2
from store_format.store import Segment, StoreLocation

from .chain import Chain

__all__ = ["walk_anomalies", "at_offset"]

K = AnomalyKind


def at_offset(st: StoreLocation, offset: int, kind: AnomalyKind, detail: str, **extra) -> dict:
    """A finding at a commitlog offset of ``st`` (the last segment's end counts as in it)."""
    seg = st.segment_at(int(offset))
    if seg is None:
        seg = next((s for s in reversed(st.segments) if s.base <= offset), st.segments[0])
    return anomaly(kind, seg.name, seg.base, int(offset) - seg.base, detail, **extra)


def walk_anomalies(st: StoreLocation, chain: Chain, extra: Iterable[dict] = (),
                   last_queue_offsets: Mapping[tuple[str, int], int] | None = None) -> list[dict]:
    """The findings of the reput's walk over ``st``: where the chain stopped reading a segment and
    what it never reaches, then per split on its path (in order) the records with a wrong size or
    CRC, the light queue offsets ``Long.parseLong`` refuses and the queue offset steps, then
    ``extra`` (already rows: the build's, the restart's).  ``last_queue_offsets``: each queue's last
    queue offset before ``st`` (an incremental refresh), for the step at the border."""
    out = _chain_stops(st, chain)
    last: dict[tuple[str, int], int] = dict(last_queue_offsets or {})
    for e in chain.entries:
        seg = st.segments[e.split.segment]
        s = e.summary
        for kind, pos, length, topic, qid, expected, found in s.get("bad_records", []):
            if kind == K.SIZE_MISMATCH:
                detail = (f"segment {seg.name} position {pos}: totalSize {found} differs from the length of the "
                          f"record's fields ({expected}); the reput skips totalSize bytes without dispatching")
            else:
                detail = (f"segment {seg.name} position {pos}: bodyCRC {found} differs from UtilAll.crc32 of the "
                          f"body ({expected}); the reput dispatches it, a broker recovery checking this segment "
                          "would truncate the commitlog here")
            out.append(anomaly(kind, seg.name, seg.base, pos, detail, length=length, topic=topic, queue_id=qid,
                               expected=expected, found=found))
        bad_lmq = s.get("lmq_bad_offsets")
        if bad_lmq:
            where = ", ".join(f"{pos} (light queue {name!r})" for pos, name in bad_lmq["first"])
            out.append(anomaly(
                K.LMQ_OFFSET_UNPARSABLE, seg.name, seg.base, bad_lmq["first"][0][0],
                f"{bad_lmq['count']} record(s) in segment {seg.name} (at {where}"
                f"{', ...' if bad_lmq['count'] > len(bad_lmq['first']) else ''}) carry an INNER_MULTI_QUEUE_OFFSET "
                "that Long.parseLong refuses: the broker's dispatcher throws on such a record and its reput retries "
                "it forever, dispatching nothing after it; this rebuild leaves that light queue unit out and goes on",
                found=bad_lmq["count"]))
        steps = s.get("queue_offsets")
        if steps:
            for topic, qid, qoff, off in steps["first"]:
                prev = last.get((topic, qid))
                if prev is not None and qoff != prev + 1:
                    out.append(_step(st, topic, qid, prev + 1, qoff, off))
            out += [_step(st, *g) for g in steps["gaps"]]
            for topic, qid, qoff in steps["last"]:
                last[(topic, qid)] = qoff
    return out + list(extra)


def _step(st: StoreLocation, topic: str, qid: int, expected: int, found: int, offset: int) -> dict:
    kind = K.QUEUE_OFFSET_GAP if found > expected else K.QUEUE_OFFSET_BACKWARDS
    return at_offset(st, offset, kind,
                     f"queue {topic}/{qid}: queue offset {found} where {expected} follows (ConsumeQueue logs "
                     "'logic queue order maybe wrong' and appends the unit at its write position)",
                     topic=topic, queue_id=qid, expected=expected, found=found)


def _chain_stops(st: StoreLocation, chain: Chain) -> list[dict]:
    """Unreadable records (by their magic code) and, per segment, the records the reput never reaches
    outside a range already reported unreadable (so the rows do not depend on the split size)."""
    out = []
    skipped: dict[str, int] = {}   # segment -> start of its unreadable tail
    drops = [a for a in chain.anomalies if a["kind"] == K.UNREACHABLE_RECORDS]
    counts = [n for _, n in sorted(chain.dropped.items())]
    unreachable: list[tuple[Segment, int, int | None]] = []
    for a in chain.anomalies:
        if a["kind"] == K.END_OF_DATA:
            continue
        seg = st.segments[a["segment"]]
        pos = int(a["position"])
        if a["kind"] == K.UNREACHABLE_RECORDS:
            unreachable.append((seg, pos, counts[drops.index(a)] if len(counts) == len(drops) else None))
            continue
        kind, expected, found, why = _unreadable(st, seg, pos)
        skipped[seg.name] = min(pos, skipped.get(seg.name, pos))
        out.append(anomaly(kind, seg.name, seg.base, pos,
                           f"segment {seg.name}: {why} at {pos}; the reput reads nothing more of this segment",
                           length=seg.size - pos, expected=expected, found=found))
    by_segment: dict[str, list[tuple[Segment, int, int | None]]] = {}
    for seg, pos, n in unreachable:
        if seg.name in skipped and pos >= skipped[seg.name]:
            continue  # inside the unreadable tail reported above
        by_segment.setdefault(seg.name, []).append((seg, pos, n))
    for name, items in sorted(by_segment.items()):
        seg, pos = items[0][0], min(p for _, p, _ in items)
        known = [n for _, _, n in items if n is not None]
        total = sum(known) if len(known) == len(items) else None
        out.append(anomaly(K.UNREACHABLE_RECORDS, name, seg.base, pos,
                           f"segment {name}: {f'{total} records' if total is not None else 'records'} from position "
                           f"{pos} on that the reput never reads (after a blank or unreadable record, or in a "
                           "segment its position skipped)", length=seg.size - pos, found=total))
    return out


def _unreadable(st: StoreLocation, seg: Segment, pos: int) -> tuple[AnomalyKind, int | None, int | None, str]:
    """Why ``checkMessageAndReturnSize`` gave -1 at ``pos``: an unknown magic code (expected the
    message magic code, found that one), or another unreadable record (found its totalSize)."""
    with st.reader(seg) as read:
        head = bytes(read(pos, 8)) if pos + 8 <= seg.size else b""
    if len(head) < 8:
        return K.UNREADABLE_RECORD, None, None, "a record header runs past the end of the file"
    total = int.from_bytes(head[:4], "big", signed=True)
    magic = int.from_bytes(head[4:], "big", signed=True)
    if magic not in (MAGIC_V1, MAGIC_V2, MAGIC_BLANK):
        return (K.BAD_MAGIC, MAGIC_V1 & 0xFFFFFFFF, magic & 0xFFFFFFFF,
                f"illegal magic code 0x{magic & 0xFFFFFFFF:08X}")
    return K.UNREADABLE_RECORD, None, total, f"record unreadable (totalSize {total})"
