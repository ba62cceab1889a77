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

At a restart (``--as-restart``) the same: the start loads ``consumequeue/0/`` as topic "0", so the reput that puts
the mix opens topic "" queue 0 afresh (``DefaultMappedFile.init`` over the files the store holds there: each file it
opens gets the bytes it writes over its start, every other file stays;
:func:`store_format.empty_request_held.over_held_files`).  Checked against the 5.5.1 broker's restart whose second
reput (``doRecheckReputOffsetFromCq`` from the commitlog's min offset, the recovery having queued nothing) reads the
damaged record, clean and after a crash, queue folders deleted or a file planted in ``consumequeue/0/`` (and
``consumequeue_ext/0/``): tests/test_topic_empty_mix_restart_broker.py.  ``verify`` of such a store, its queue
folders kept, predicts the same files from the same rule (:func:`second_reput_queue_zero`: the second reput's
empty-name units from where it starts, past the concurrent reput's stop where it goes on at the next file; checked
against the same 5.5.1 restarts, clean and after a crash, in that test module).
"""
from __future__ import annotations

from typing import NamedTuple

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
from .empty_request_held import empty_request_queue_files, empty_unit_tags_code, over_held_files
from .store import StoreLocation

__all__ = ["MixedFile", "QueueZeroAtRestart", "empty_first_state", "merged_queue_zero_files",
           "second_reput_queue_zero"]


class MixedFile(NamedTuple):
    """One file of the merged queue 0: its start, and the empty-name units put into it (the empty request's unit and
    ``fillPreBlank`` units are no message's): how many, the commitlog offsets of the first and the last (None: none)."""
    start: int
    entries: int
    begin_offset: int | None
    end_offset: int | None


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
                            first_empty_at: int, count: int,
                            store: StoreLocation | None = None) -> tuple[list[tuple[str, list]], list[MixedFile]]:
    """The files of topic "" queue 0 (and its ext files) that ``count`` blanks' empty requests, the first dispatched
    at commitlog offset ``first_empty_at`` (its blank's), and the empty-name units ``light`` of that queue leave:
    relative paths and pieces for :func:`pipelines.build.write_file` (bytes, then an int for the zeros to the file
    size); and each queue file's figures from the positions the put rule gave (:class:`MixedFile`, as the build counts
    the units it puts, not re-read from the bytes: a file that starts with the empty request's unit (0, 0) holds the
    units after it all the same).  ``light``: (commitlog offset, size, tagsCode, the queue offset the request names),
    in dispatch order.  ``store`` (``--as-restart``: the store the start finds): the files it holds in those folders,
    those the puts open with the written bytes over them, the others as they are (the module docstring)."""
    offset, size, tags, queue_offset = (np.asarray(a, dtype=np.int64) for a in light)
    file_size = config.cq_file_size
    state = empty_first_state(config, offset, first_empty_at, count)
    states = new_states(1) if state is None else state[None, :].copy()
    pos = assign_positions(np.zeros(len(offset), dtype=np.int64), offset, size, queue_offset, file_size, states)
    put = pos >= 0
    light_put = put.copy()   # the empty-name units put (the figures count only these)
    if state is not None:   # the empty request's unit at 0; the later ones never reach the queue (max offset >= 0)
        offset, size, tags, pos = (np.insert(a, 0, v) for a, v in ((offset, 0), (size, 0),
                                                                    (tags, empty_unit_tags_code(config)), (pos, 0)))
        put, light_put = np.insert(put, 0, True), np.insert(light_put, 0, False)
    first, last = int(states[0, Q_FIRST_FILE]), int(states[0, Q_LAST_FILE])
    if put.any():
        last = max(last, int(pos[put].max()) - int(pos[put].max()) % file_size)
    out, figures = [], []
    folder = cq_queue_folder("", 0)
    for start in range(first, last + 1, file_size) if first >= 0 else ():
        in_file = (pos >= start) & (pos < start + file_size)
        here = put & in_file
        data = build_cq_file(start, file_size, pos[here], offset[here], size[here], tags[here],
                             int(states[0, Q_BLANK_UNTIL]), trim=True)
        out.append((f"{folder}/{cq_file_name(start)}", [bytes(data), file_size - len(data)]))
        mine = offset[light_put & in_file]
        figures.append(MixedFile(start, len(mine), int(mine[0]) if len(mine) else None,
                                 int(mine[-1]) if len(mine) else None))
    files = out + [f for f in empty_request_queue_files(config, count) if not f[0].startswith(f"{folder}/")]
    if store is not None:   # each piece list: the bytes written from the file's start, then the zeros to its size
        files = over_held_files(store, {rel: (bytes(p[0]), len(p[0]) + int(p[1])) for rel, p in files})
    return files, figures


class QueueZeroAtRestart(NamedTuple):
    """What a start's reput leaves of topic "" queue 0 where the mix forms (:func:`second_reput_queue_zero`): the
    files of its folders (relative paths and pieces, :func:`merged_queue_zero_files` over the store's), the units
    put (the empty request's, where it came first, and the empty-name ones) and the other topic "" queues' empty-name
    units, (commitlog offset, queue id, queue offset) in dispatch order."""
    files: list[tuple[str, list]]
    put: int
    others: list[tuple[int, int, int]]


def second_reput_queue_zero(store: StoreLocation, config: BrokerConfig, units: list[tuple[int, int, int]],
                            sizes: dict[int, tuple[int, int]], *, skipped: tuple[int, int], first_empty_at: int,
                            count: int) -> QueueZeroAtRestart:
    """Topic "" queue 0 after a reput that opens it afresh over ``store``'s files (no dispatch before it put to it)
    and hands it ``count`` blanks' empty requests, the first at ``first_empty_at``, beside the empty-name units
    ``units`` it walks (:func:`store_format.empty_topic_restart.empty_name_units` from its start, with their records'
    sizes and tags codes ``sizes``): the concurrent reput that goes on at the next file past damaged bytes
    dispatches none of the records in ``skipped`` (from the damaged record to where it goes on), only the empty
    requests of the blanks it read there; queue 0's units merged with them by the put rule over the held files
    (:func:`merged_queue_zero_files`)."""
    kept = [u for u in units if not skipped[0] <= u[0] < skipped[1]]
    mine = [u for u in kept if u[1] == 0]
    light = (np.array([at for at, _, _ in mine], dtype=np.int64),
             np.array([sizes[at][0] for at, _, _ in mine], dtype=np.int64),
             np.array([sizes[at][1] for at, _, _ in mine], dtype=np.int64),
             np.array([qoff for _, _, qoff in mine], dtype=np.int64))
    files, figures = merged_queue_zero_files(config, light, first_empty_at, count, store)
    first = empty_first_state(config, light[0], first_empty_at, count) is not None
    return QueueZeroAtRestart(files, sum(f.entries for f in figures) + int(first),
                              [u for u in kept if u[1] != 0])
