"""``rebuild``'s files of topic "" (``consumequeue/<queueId>/``): the units of multi-dispatch requests naming an empty
queue (``ConsumeQueue.multiDispatchLmqQueue``) and of blanks' empty requests (5.x concurrent reput,
``DispatchRequest(0, true)``: queue 0), written over the files a store holds there where ``--as-restart`` says what a
start leaves of them.

Mirrors rocketmq-store 5.5.1 (5.3.3 and 4.9.8 the same rules) ``ConsumeQueueStore.loadConsumeQueues`` (the start
reads those folders as topics "<queueId>", so it neither loads nor cuts them), ``findOrCreateConsumeQueue`` and
``ConsumeQueue.putMessagePositionInfo`` (the dispatch opens topic "" afresh over the file on disk) and
``DefaultMessageStore.start`` / ``doRecheckReputOffsetFromCq`` (a second reput after the recovery):
:mod:`store_format.empty_topic_restart` and :mod:`store_format.empty_request_held` hold the rules;
:mod:`store_format.topic_empty_mix` merges the two kinds of units where both reach queue 0 (``ConsumeQueue.
putMessagePositionInfo``, ``findConsumeQueue("", 0)``), at a 5.5.1 restart too, whose second reput
(``doRecheckReputOffsetFromCq``) walks the concurrent reput over a damaged record the recovery did not read
(tests/test_topic_empty_mix_restart_broker.py).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from store_format.concurrent_reput import ConcurrentStop, empty_request_files
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name, cq_queue_folder
from store_format.empty_request_held import HELD_FOLDERS
from store_format.empty_topic_restart import (
    held_topic_empty_files,
    over_held,
    reput_again_queues,
    start_fails,
    written_prefix,
)
from store_format.errors import UnsupportedConfigError
from store_format.store import StoreLocation
from store_format.topic_empty_mix import empty_first_state, merged_queue_zero_files

from .build import write_file
from .build_stage import Built
from .commit import StagedOutput
from .restart import Restart, inside_blanks
from .stages import ReputWalk
from .workfiles import queue_bucket, read_bucket_units

__all__ = ["QueueZeroMix", "queue_zero_mix", "queue_zero_seeds", "topic_empty_over_held", "write_topic_empty"]


def write_topic_empty(st: StoreLocation, config: BrokerConfig, staged: StagedOutput, built: Built, recovery: object,
                      stops: list[ConcurrentStop], mix: QueueZeroMix | None, *, as_restart: bool) -> None:
    """Topic ""'s files once the build wrote the rebuild's: blanks' empty requests (``stops``' and those a DLedger
    start's reput set inside an entry dispatches, :func:`pipelines.restart.inside_blanks`) put queue 0's unit
    (:func:`store_format.concurrent_reput.empty_request_files`); with ``as_restart`` the files the store holds there
    are kept or written over (:func:`topic_empty_over_held`, ``store_format.empty_request_held`` for queue 0).  The
    rows of the files written so follow (``Built.rows_from_bytes``).  Blanks' empty requests and a multi-dispatch
    request naming an empty queue that both put to queue 0: merged in reput order (``mix``'s units of that queue,
    :func:`store_format.topic_empty_mix.merged_queue_zero_files`) in place of the build's files there; with
    ``as_restart`` the same over the files the store holds in queue 0's folders, the other topic "" queues' as
    :func:`topic_empty_over_held` says, where the 5.5.1 broker showed it (:func:`_mix_refusal`: else refused in one
    line)."""
    blanks_inside = inside_blanks(recovery)
    requests = sum(s.empty_requests for s in stops if s.empty_request is not None) + blanks_inside
    topic_empty = [(r["queue_id"], r["file_start"]) for r in built.cq_files if r["topic"] == ""]
    if requests and any(qid == 0 for qid, _ in topic_empty):
        why = _mix_refusal(config, recovery, blanks_inside, mix) if as_restart else ""
        if why:
            raise UnsupportedConfigError(
                f"{st.uri}: --as-restart: {why} and a multi-dispatch request naming an empty queue both put units "
                "into topic \"\" queue 0 (consumequeue/0/): a restart over them is not modelled there; rebuild "
                "without --as-restart")
        assert mix is not None   # the requests are the concurrent reput's stops' (no DLedger blanks: refused)
        _write_mixed_queue_zero(config, staged, built, mix, st if as_restart else None)
        if as_restart and not config.rocksdb_cq:   # the other topic "" queues: the store's files kept or written over
            others = topic_empty_over_held(st, staged.staging_uri, [q for q in topic_empty if q[0] != 0],
                                           staged.read_staged, config, recovery, True)
            if others:
                built.rows_from_bytes(staged, [("", qid, start) for qid, start in others], config)
        return
    # topic ""'s files the store holds (multi-dispatch requests naming an empty queue): kept, or written over
    queue_0 = [("", qid, start) for qid, start in topic_empty_over_held(
        st, staged.staging_uri, topic_empty, staged.read_staged, config, recovery, bool(requests))] \
        if as_restart and not config.rocksdb_cq else []
    done = {f"{cq_queue_folder('', qid)}/{cq_file_name(start)}" for _, qid, start in queue_0}
    for rel, pieces in empty_request_files(config, stops, st if as_restart else None, blanks_inside):
        if rel in done:   # no request (the mix is written apart): a held file of queue 0, written over or kept
            continue
        write_file(staged.staging_uri, rel, pieces)
        folder, name = rel.rsplit("/", 1)
        if folder == HELD_FOLDERS[0] and name.isdigit():
            queue_0.append(("", 0, int(name)))
    if queue_0:
        built.rows_from_bytes(staged, queue_0, config)


@dataclasses.dataclass
class QueueZeroMix:
    """A rebuild's blanks' empty requests (the concurrent reput's ``stops`` with one) beside topic "" queue 0's
    empty-name units, computed once (:func:`queue_zero_mix`) for the build's seed (:func:`queue_zero_seeds`) and the
    merged files (:func:`write_topic_empty`): where the first request was dispatched (its blank's commitlog offset),
    how many there were, and the empty-name units the walk put to that queue (:attr:`light`, read from the work files
    the first time it is asked for, at most once)."""
    walk: ReputWalk
    first_empty_at: int
    requests: int

    @functools.cached_property
    def light(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The empty-name units of topic "" queue 0 in dispatch order (:func:`_queue_units`)."""
        return _queue_units(self.walk, ("", 0))


def queue_zero_mix(stops: list[ConcurrentStop], walk: ReputWalk) -> QueueZeroMix | None:
    """The :class:`QueueZeroMix` of a rebuild (or a restart's reput, ``--as-restart``) whose concurrent reput met
    blanks' empty requests; None without such requests."""
    with_empty = [s for s in stops if s.empty_request is not None]
    if not with_empty:
        return None
    return QueueZeroMix(walk, min(int(s.empty_request or 0) for s in with_empty),
                        sum(s.empty_requests for s in with_empty))


def queue_zero_seeds(config: BrokerConfig, mix: QueueZeroMix | None) -> dict[tuple[str, int], list[int]] | None:
    """The build's seed (:func:`pipelines.build.build_queue_bucket`'s ``seeds``) of topic "" queue 0 where a plain
    rebuild's first blank's empty request comes ahead of every empty-name unit of that queue
    (:func:`store_format.topic_empty_mix.empty_first_state`): the build then places those units after the empty
    request's, in the queue states it records for the messages table (``pipelines.tables.publish``);
    :func:`write_topic_empty` writes the files again with that unit.  None otherwise (the build's queue stands).
    Only the tables need it (the rebuild asks for it with ``--tables``): the files are written over anyway."""
    if mix is None or config.rocksdb_cq or not len(mix.light[0]):
        return None
    state = empty_first_state(config, mix.light[0], mix.first_empty_at, mix.requests)
    return None if state is None else {("", 0): [int(v) for v in state]}


def _mix_refusal(config: BrokerConfig, recovery: object, blanks_inside: int, mix: QueueZeroMix | None) -> str:
    """Why ``--as-restart`` does not write topic "" queue 0 where blanks' empty requests and empty-name units both
    reach it (empty: it does): a DLedger start (``recovery`` no :class:`pipelines.restart.Restart`), its reput set
    inside an entry dispatching blanks or not (no broker case); a line other than 5.5.1 (5.3.3's recovery walks from
    the first file there, so it cuts at the damaged record the concurrent reput would read: no broker case)."""
    if blanks_inside or not isinstance(recovery, Restart):
        return "blanks' empty requests at a DLedger start" + (
            " (its reput set inside an entry dispatches some)" if blanks_inside else "")
    assert mix is not None   # the other requests are the concurrent reput's stops'
    if config.brokerVersion != "5.5":
        return "blanks' empty requests of the concurrent reput, on a broker line other than 5.5.1,"
    return ""


def _write_mixed_queue_zero(config: BrokerConfig, staged: StagedOutput, built: Built, mix: QueueZeroMix,
                            store: StoreLocation | None) -> None:
    """Topic "" queue 0 where the concurrent reput's blanks' empty requests and empty-name units both reach it: the
    build's files of that queue (its empty-name units alone) deleted, the merged ones written
    (:func:`store_format.topic_empty_mix.merged_queue_zero_files`, the units in the walk's dispatch order from its
    work files; ``store``, ``--as-restart``: over the files it holds in that queue's folders, those not opened
    copied) and their rows from the positions the merge put the units at (not re-read by the recover rule, which
    stops at the empty request's unit (0, 0) at the start of a file); a held file not opened: its row from its
    bytes."""
    files, figures = merged_queue_zero_files(config, mix.light, mix.first_empty_at, mix.requests, store)
    folder = cq_queue_folder("", 0)
    for r in [r for r in built.cq_files if (r["topic"], r["queue_id"]) == ("", 0)]:
        staged.delete_staged(f"{folder}/{cq_file_name(r['file_start'])}")
        built.cq_files.remove(r)
    for rel, pieces in files:
        write_file(staged.staging_uri, rel, pieces)
    built.set_rows([("", 0, f.start, f.entries, f.begin_offset, f.end_offset) for f in figures], config)
    merged = {f.start for f in figures}
    kept = [("", 0, int(name)) for folder_of, name in (rel.rsplit("/", 1) for rel, _ in files)
            if folder_of == folder and name.isdigit() and int(name) not in merged]
    if kept:
        built.rows_from_bytes(staged, kept, config)


def _queue_units(walk: ReputWalk, queue: tuple[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The units the build put to ``queue`` (its work files, split by split in the reput's order): commitlog offset,
    size, tagsCode and the queue offset each names, in dispatch order."""
    bucket = queue_bucket(queue[0], queue[1], walk.buckets)
    parts = []
    for entry in walk.chain.entries:
        got = read_bucket_units(walk.work_uri, entry.split.split_id, bucket)
        if got is None or got[0].num_rows == 0:
            continue
        units, names = got
        mine = [k for k, (t, q) in enumerate(names) if (t, int(q)) == queue]
        rows = np.isin(units.column(0).to_numpy(), mine)
        parts.append([units.column(c).to_numpy()[rows].astype(np.int64) for c in (2, 3, 4, 1)])
    offset, size, tags, queue_offset = (np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.int64)
                                        for c in range(4))
    return offset, size, tags, queue_offset


def topic_empty_over_held(st: StoreLocation, staging: str, built_topic_empty: list[tuple[int, int]],
                          read_staged, config: BrokerConfig, recovery: object,  # noqa: ANN001
                          requests: bool = False) -> list[tuple[int, int]]:
    """``--as-restart`` over a store holding topic ""'s files (``consumequeue/<queueId>/<name>``, which the start does
    not load: :mod:`store_format.empty_topic_restart`): each file the restart's dispatch writes (``built_topic_empty``:
    the rebuild's topic "" files, (queue id, file start), written by a new queue's put rule into ``staging``) written
    again as its bytes over the store's (:func:`~store_format.empty_topic_restart.over_held`), every other such file
    of the store copied as it is; the (queue id, file start) of each file written.  A second reput after the recovery
    (``RecoveryPlan.restart_reput_from``: 4.9.8's ``start()`` after a crash walk, 5.x ``doRecheckReputOffsetFromCq``
    with ``recheckReputOffsetFromCq=true``, from the queue table's largest max, the recovery's queues being all there
    is) that dispatches an empty-name record the recovery dispatched again
    (:func:`~store_format.empty_topic_restart.reput_again_queues`) over such held files is refused in one line (what
    the recovery's ``truncateDirtyLogicFiles`` reads past the written bytes sets where it puts); one that starts past
    them (every such record is queued, so the table's max is past it) changes nothing.  ``requests``: blanks' empty
    requests write topic "" queue 0 (``store_format.empty_request_held``, which then keeps or writes over
    ``consumequeue/0/``'s files).  A 5.3.3 start that this dispatch leaves a queue with an empty last file fails
    (:func:`~store_format.empty_topic_restart.start_fails`): refused in one line, held files or not."""
    written: dict[int, dict[int, bytes]] = {}
    for qid, start in built_topic_empty:
        written.setdefault(qid, {})[start] = read_staged(f"{cq_queue_folder('', qid)}/{cq_file_name(start)}")
    why = start_fails(written, config)
    if why:
        raise UnsupportedConfigError(f"{st.uri}: --as-restart: {why}; rebuild without --as-restart")
    file_size = config.cq_file_size
    held = {rel: data for rel, data in held_topic_empty_files(st).items()
            if not (requests and rel.rsplit("/", 1)[0] == HELD_FOLDERS[0])}
    if not held:
        return []
    plan = recovery.plan if isinstance(recovery, Restart) else None
    again = reput_again_queues(st, config, walk_from=plan.dispatch_from, reput_first=plan.restart_reput_from,
                               end=plan.process_offset) if plan is not None and plan.restart_reput_from >= 0 else []
    if again:
        raise UnsupportedConfigError(
            f"{st.uri}: --as-restart: the store holds topic \"\"'s files (consumequeue/<queueId>/, multi-dispatch "
            f"requests naming an empty queue) and the start's second reput dispatches records of queue(s) "
            f"{', '.join(map(str, again))} again after the recovery: not modelled; rebuild without --as-restart")
    out = []
    for qid, start in built_topic_empty:
        rel = f"{cq_queue_folder('', qid)}/{cq_file_name(start)}"
        if rel in held:
            data = written[qid][start]   # read from staging above
            write_file(staging, rel, [over_held(held.pop(rel), data[:written_prefix(data)], file_size)])
            out.append((qid, start))
    for rel, data in held.items():
        write_file(staging, rel, [data])
        folder, name = rel.split("/")[1:]
        if name.isdigit():
            out.append((int(folder), int(name)))
    return out
