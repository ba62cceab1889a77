"""``DefaultMessageStore.start``'s second walk (``doRecheckReputOffsetFromCq``: 5.3.3 and 5.5.1 with
``recheckReputOffsetFromCq=true``) at the broker's next start, for :func:`pipelines.verify.restart.predict_restart`:
from the largest ``getMaxPhysicOffset`` the recovery's dispatch left, the units a queue holds that it appends again
(:func:`held_put_again`, ``ConsumeQueue.putMessagePositionInfo``) and the units a queue lacks that it appends or
leaves lost (:func:`second_reput_units`)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.recovery_dispatch import recovery_dispatch

from .restart_dispatch import Reput
from .restart_queue import QueueState, queue_rules

__all__ = ["held_put_again", "second_reput_units"]


def held_put_again(states: list[QueueState], r: Reput, again: int,
                   walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None) -> dict[int, int]:
    """Per queue (``id`` of its state), the units it holds that ``doRecheckReputOffsetFromCq``'s second walk from
    ``again`` appends again: ``ConsumeQueue.putMessagePositionInfo`` (:func:`store_format.recovery_dispatch.
    recovery_dispatch`, the rule of :func:`store_format.consumequeue.assign_positions`) takes a unit whose end lies
    past the queue's max, which ``truncateDirtyLogicFiles`` sets from its last file's first unit even when that unit
    is zeros (max 0, below the units of the files before); a light unit whose request names queue offset 0
    (``INNER_MULTI_QUEUE_OFFSET``, ``multiDispatchLmqQueue``) skips the "repeatedly" check and is appended at the
    write position, an own one behind it is dropped.  Only the queues whose max lies below ``again`` while their
    rebuilt files reach it, and which the first dispatch put nothing to (the state the second walk finds is then the
    load's); ``walked_units`` (:func:`store_format.restart_reput.walked_file_queue_units`) gives each unit's queue
    offset as the request names it."""
    cands = [s for s in states if walked_units is not None and s.loaded and s.restart.layout != BCQ_DIR
             and s.restart.max_physic_offset < again and not s.restart.units_dispatched_again
             and any(hi >= again for _name, _lo, hi, _n in s.expected_files)]
    if not cands or again >= r.end:
        return {}
    assert walked_units is not None
    walked = walked_units(again, r.end, {s.restart.queue for s in cands})
    out = {}
    for s in cands:
        w, q = walked.get(s.restart.queue), s.restart
        if w is None or not len(w):
            continue
        rules = queue_rules(q.layout)
        d = recovery_dispatch(w[:, 0], w[:, 1], w[:, 2] * rules.unit_size, start=again, end=r.end,
                              max_physic=q.max_physic_offset, write_position=q.write_position,
                              unit_size=rules.unit_size, batch=False, loaded=s.loaded)
        out[id(s)] = int((d.appended & ~np.isin(w[:, 0], s.missing_offsets)).sum())
    return out


def second_reput_units(s: QueueState, r: Reput, again: int, held_again: int = 0) -> None:
    """The units one queue still lacks outside ``r``: those from ``again`` on to the commitlog's end the start's
    second walk appends, the others lost.  ``again`` (``second_reput``, 5.x with ``recheckReputOffsetFromCq=true``):
    ``DefaultMessageStore.start`` then (``doRecheckReputOffsetFromCq``, 5.3.3 and 5.5.1) walks again from the largest
    ``getMaxPhysicOffset`` over the queues as the recovery's dispatch left them (a batch queue's: the start of its
    last unit), at least the commitlog's min offset: the units a queue still lacks from there on are appended (a
    record starting exactly at the queues' max, which the recovery's dispatch skips, is one); without it the
    commitlog's end (none).  ``held_again``: the units it holds that the walk appends again
    (:func:`held_put_again`)."""
    q = s.restart
    q.units_dispatched_again += held_again
    left = s.missing_offsets[~r.in_tail(s.missing_offsets)]
    later = (left >= again) & (left < r.end)   # the second reput appends them
    q.units_dispatched_again += int(later.sum())
    q.units_lost += int((~later).sum())
