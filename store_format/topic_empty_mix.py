"""Topic "" queue 0 (``consumequeue/0/``) where blanks' empty requests and multi-dispatch requests naming an empty
queue both put units into it: the two merged in reput order by the queue's one put rule.

Mirrors rocketmq-store 5.5.1 (rocketmq-all-5.3.3 the same) ``ConsumeQueue.putMessagePositionInfoWrapper`` (a blank's
``DispatchRequest(0, true)``: topic "", queue 0, commitlog offset 0, size 0, tagsCode 0 or its ext unit's address,
queue offset 0), ``ConsumeQueue.multiDispatchLmqQueue`` / ``doDispatchLmqQueue`` (an empty name's unit: the record's
offset, size and tagsCode at the queue offset the request names, through ``putMessagePositionInfo`` with no ext unit)
and ``ConsumeQueue.putMessagePositionInfo`` itself: both reach the one queue ``findConsumeQueue("", 0)``, in the order
the reput dispatches them (``ConcurrentReputMessageService``: batch order, so commitlog order, a blank's empty request
at its blank's offset after the records before it).

The rule (:func:`store_format.consumequeue.assign_positions`): an empty request ahead of every empty-name unit is put
at 0 (queue offset 0: no ``fillPreBlank``), and the max physical offset it leaves (0) skips every later empty request;
the empty-name units then go at the write position 20 on (one naming queue offset 0 or one past the write position is
appended there, one naming less is skipped).  An empty-name unit ahead of every empty request puts the queue as ever
(``fillPreBlank`` before a first unit past 0), and its max physical offset skips every empty request.  Ext units
(``enableConsumeQueueExt``) are each empty request's whether its unit is put or skipped
(:func:`store_format.empty_request_held.empty_request_queue_files`).  Checked against the 5.5.1 and 5.3.3 brokers'
concurrent reput: tests/test_topic_empty_mix_broker.py.
"""
from __future__ import annotations

import numpy as np

from .config import BrokerConfig
from .consumequeue import (
    Q_BLANK_UNTIL,
    Q_FIRST_FILE,
    Q_LAST_FILE,
    assign_positions,
    build_cq_file,
    cq_file_name,
    cq_queue_folder,
    new_states,
)
from .empty_request_held import empty_request_queue_files, empty_unit_tags_code

__all__ = ["empty_first_state", "merged_queue_zero_files"]


def empty_first_state(config: BrokerConfig, light_offsets: np.ndarray, first_empty_at: int,
                      count: int) -> np.ndarray | None:
    """The append state (a row of ``Q_*`` columns) topic "" queue 0 is in before its first empty-name unit where the
    first of ``count`` empty requests (dispatched at commitlog offset ``first_empty_at``) comes ahead of every
    empty-name unit (``light_offsets``, their records' offsets in dispatch order): its unit put at 0, the write
    position 20, the max physical offset 0 (the put rule, :func:`store_format.consumequeue.assign_positions`); None
    where there is no empty request, or an empty-name unit comes first (every empty request is then skipped)."""
    if not count or (len(light_offsets) and int(light_offsets[0]) < first_empty_at):
        return None
    states = new_states(1)
    one = np.zeros(1, dtype=np.int64)
    assign_positions(one, one, one, one, config.cq_file_size, states)
    return states[0]


def merged_queue_zero_files(config: BrokerConfig, light: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                            first_empty_at: int, count: int) -> list[tuple[str, list]]:
    """The files of topic "" queue 0 (and its ext files) that ``count`` blanks' empty requests, the first dispatched
    at commitlog offset ``first_empty_at`` (its blank's), and the empty-name units ``light`` of that queue leave:
    relative paths and pieces for :func:`pipelines.build.write_file` (bytes, then an int for the zeros to the file
    size).  ``light``: (commitlog offset, size, tagsCode, the queue offset the request names), in dispatch order."""
    offset, size, tags, queue_offset = (np.asarray(a, dtype=np.int64) for a in light)
    file_size = config.cq_file_size
    state = empty_first_state(config, offset, first_empty_at, count)
    states = new_states(1) if state is None else state[None, :].copy()
    pos = assign_positions(np.zeros(len(offset), dtype=np.int64), offset, size, queue_offset, file_size, states)
    if state is not None:   # the empty request's unit at 0; the later ones never reach the queue (max offset >= 0)
        offset, size, tags, pos = (np.insert(a, 0, v) for a, v in ((offset, 0), (size, 0),
                                                                    (tags, empty_unit_tags_code(config)), (pos, 0)))
    put = pos >= 0
    first, last = int(states[0, Q_FIRST_FILE]), int(states[0, Q_LAST_FILE])
    if put.any():
        last = max(last, int(pos[put].max()) - int(pos[put].max()) % file_size)
    out = []
    folder = cq_queue_folder("", 0)
    for start in range(first, last + 1, file_size) if first >= 0 else ():
        here = put & (pos >= start) & (pos < start + file_size)
        data = build_cq_file(start, file_size, pos[here], offset[here], size[here], tags[here],
                             int(states[0, Q_BLANK_UNTIL]), trim=True)
        out.append((f"{folder}/{cq_file_name(start)}", [bytes(data), file_size - len(data)]))
    return out + [f for f in empty_request_queue_files(config, count) if not f[0].startswith(f"{folder}/")]
