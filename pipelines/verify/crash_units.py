"""Per-queue figures of a 5.x DLedger crash restart's plan that ``verify`` (:mod:`.compare_store`) hands to the
restart prediction (:func:`.restart.predict_restart`): the parsed units appended holding an ext address
(:func:`parsed_kept`), the units the restart never writes back (:func:`cut_lost`) and the state the cut leaves the
queues on disk in that a reput before the walk's data file appends to (:func:`held_after_cut`), read from the plan
(:class:`store_format.dledger_crash_plan.DLedgerCrash`) and the reference rebuild's queue files."""
from __future__ import annotations

from typing import Any

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.consumequeue_recovery import BCQ_RULES, CQ_RULES, EXT_MAX_ADDR
from store_format.dledger_crash_plan import DLedgerCrash

__all__ = ["cut_lost", "held_after_cut", "parsed_kept"]


def parsed_kept(cut: Any) -> dict[str, int]:
    """Per queue a start's reput set inside an entry parses messages for (each replayed whole: ``Placed.whole``), its
    parsed units ``putMessagePositionInfo`` appends holding an ext address (own units with ext files: each points at
    the ext unit ``putMessagePositionInfoWrapper`` put for it; a dropped one's ext unit none); of a queue the reput
    then appends a record of queue offset 0 to before the walk's data file
    (:func:`store_format.dledger_crash_before.appended_cut`, ``QueueCut.before_placed``), its units of those
    messages there holding one."""
    out = {}
    for q in cut.inside_placed.whole:
        at = {pos for pos in q.parsed_at if pos >= 0}
        out[f"{q.topic}/{q.queue_id}"] = sum(1 for pos, _o, _s, tags in q.units if pos in at and tags <= EXT_MAX_ADDR)
    starts = {start for start, _end in cut.inside_records}
    for u in cut.before_placed.units:
        if u.offset in starts and u.tags_code <= EXT_MAX_ADDR:
            key = f"{u.topic}/{u.queue_id}"
            out[key] = out.get(key, 0) + 1
    return out


def cut_lost(crash: DLedgerCrash, states: list, read_expected: Any) -> dict[str, np.ndarray]:
    """The units the DLedger crash restart ``crash`` never writes back, per queue: the cut's (``QueueCut.lost``)
    and, where the reput set at 2147483647 (in an old file or an earlier data file) goes on before the walk's data
    file (:attr:`store_format.dledger_crash.DLedgerCrash.drops_before`), the reference's units of those files' records
    in the queues that drop them; where it goes on before the committed position (the next data file's start, an
    entry's) after a parsed unit appended to a queue on disk that ends past there (``QueueCut.drops_to``), the
    reference's units of that queue from there that ``putMessagePositionInfo`` drops at or below the max it left
    (``CQ_RULES.appended``'s rule)."""
    assert crash.cut is not None
    lost = {f"{t}/{q}": v for (t, q), v in crash.cut.lost.items()}
    drops = {f"{t}/{q}" for t, q in crash.drops_before}
    past = {f"{t}/{q}": mx for (t, q), mx in crash.cut.drops_to.items()}
    for s in states:
        mx = past.get(s.restart.queue)
        if mx is None or s.restart.layout == BCQ_DIR:   # a batch queue's: refused by the plan
            continue
        for name, lo, hi, _n in s.expected_files:
            if hi < crash.reput_from or lo > mx:
                continue
            data = read_expected(s.restart.layout, s.restart.queue, name)
            u = np.frombuffer(data, dtype=CQ_RULES.dtype, count=len(data) // CQ_RULES.unit_size)
            u = u[CQ_RULES.is_message(u)]
            off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
            off = off[(off >= crash.reput_from) & ~CQ_RULES.appended(off, size, mx)]
            lost[s.restart.queue] = np.concatenate([lost.get(s.restart.queue, np.zeros(0, np.int64)), off])
    appended: dict[str, list[int]] = {}   # records of those files a queue appends (queue offset 0: appended_before)
    for a in crash.cut.before_placed.units:
        appended.setdefault(f"{a.topic}/{a.queue_id}", []).append(a.offset)
    for s in states:
        q = s.restart
        if q.queue not in drops:
            continue
        rules = BCQ_RULES if q.layout == BCQ_DIR else CQ_RULES
        for name, lo, hi, _n in s.expected_files:
            if hi < crash.reput_from or lo >= crash.start_offset:
                continue
            data = read_expected(q.layout, q.queue, name)
            u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
            off = u["commitlogOffset"].astype(np.int64)[rules.is_message(u)]
            off = off[(off >= crash.reput_from) & (off < crash.start_offset)]
            off = off[~np.isin(off, appended.get(q.queue, []))]
            lost[q.queue] = np.concatenate([lost.get(q.queue, np.zeros(0, np.int64)), off])
    return lost


def held_after_cut(crash: DLedgerCrash, states: list) -> None:
    """The queues on disk before the walk that the reput set at 2147483647 appends a record of queue offset 0 to
    before the walk's data file (``QueueCut.before_placed``): their max physical offset and write position as
    ``truncateDirtyLogicFiles`` leaves them after ``ConsumeQueue.recover`` loaded their files and the walk's units
    went onto them (``QueueCut.held_cut``, from ``QueuesOnDisk.max_after_cut``), not as ``recover`` alone left them
    (files holding the walk's unit too: the walk skips it, ``putMessagePositionInfo``'s max check, the cut takes it).
    The reput appends onto that state; the restart's report shows it."""
    if crash.cut is None:
        return
    before = {f"{u.topic}/{u.queue_id}" for u in crash.cut.before_placed.units}
    for s in states:
        topic, qid = s.restart.queue.rsplit("/", 1)
        held = crash.cut.held_cut.get((topic, int(qid)))
        if s.restart.queue in before and held is not None:
            s.restart.max_physic_offset, s.restart.write_position = int(held[0]), int(held[2])
