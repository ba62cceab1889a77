"""``verify``'s next start on topic ""'s files (``consumequeue/<queueId>/<name>``: multi-dispatch requests naming an
empty queue, ``ConsumeQueue.multiDispatchLmqQueue``), which ``ConsumeQueueStore.loadConsumeQueues`` does not load
(it reads those folders as topics "<queueId>", empty): the recovery's dispatch (``CommitLog.recoverNormally`` past
the queues' max physical offset, ``recoverAbnormally``'s walk) reopens a queue of them afresh over its files when it
hands it such a record (:mod:`store_format.empty_topic_restart`), and nothing cuts them.  Per such queue the
prediction lists the units that dispatch puts and the units on disk it overwrites (``fillPreBlank`` over earlier
units), and one note line says which files the start rewrites; where that start is not modelled the note says so.
A 5.5.1 second reput (``doRecheckReputOffsetFromCq``) from before the recovery's dispatch, whose concurrent reput goes
past damaged bytes reading a blank there, puts its empty request and the empty-name units both into queue 0: the mix
(:func:`store_format.topic_empty_mix.second_reput_queue_zero`), over the held files as ``--as-restart`` writes it."""
from __future__ import annotations

from typing import Any

import numpy as np

from store_format.concurrent_reput import concurrent_reput_stop, cut_at
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.consumequeue_recovery import CQ_RULES
from store_format.empty_request_held import held_queue_zero_files
from store_format.empty_topic_restart import (
    dledger_start_checked,
    empty_name_units,
    held_topic_empty_files,
    is_topic_empty_file,
    opened_afresh,
    over_held,
    refusal_reason,
    reopened_files,
    reput_again_queues,
    start_fails,
    truncate_reopened,
)
from store_format.store import StoreLocation
from store_format.topic_empty_mix import QueueZeroAtRestart, second_reput_queue_zero

from .report import QueueRestart, RestartPrediction


def _units(data: bytes) -> set[int]:
    """The commitlog offsets of a consume queue file's message units (blank and zeroed ones left out)."""
    u = np.frombuffer(data[:len(data) - len(data) % CQ_RULES.unit_size], dtype=CQ_RULES.dtype)
    return set(u["commitlogOffset"][CQ_RULES.is_message(u)].astype(np.int64).tolist())


def _not_predicted(p: RestartPrediction, files: list[str], why: str) -> None:
    """The note line of a start whose topic "" files are not predicted past the load (``why``: the refusal's reason,
    :func:`store_format.empty_topic_restart.refusal_reason`)."""
    if files:
        queues = sorted({int(f.split("/", 1)[0]) for f in files})
        p.notes.append(f'topic "" queues {", ".join(map(str, queues))} (consumequeue/<queueId>/, {len(files)} '
                       'file(s)) not predicted past the load: a start loads those folders as topics "<queueId>" '
                       '(empty, nothing written), not as topic "", so no recovery cuts them (units past the '
                       "commitlog's end stay); a recovery walk or reput that dispatches such a record again "
                       f"reopens them (not modelled {why})")


def predict_topic_empty(st: StoreLocation, config: BrokerConfig, store_cq: dict[str, Any], p: RestartPrediction, *,
                        recovery: Any, abnormal: bool, rebuilt: bool = True,
                        held_files: dict[str, bytes] | None = None, truncated: bool = False,
                        anomalies: list[dict] | None = None, data_end: int | None = None) -> None:
    """Topic ""'s queues at the start ``p`` predicts (the store's files ``store_cq``, relative to ``consumequeue/``;
    ``rebuilt``: the reference rebuild wrote such files, else the commitlog holds no empty-name record to walk for;
    ``held_files``: :func:`store_format.empty_topic_restart.held_topic_empty_files`, None: read here; ``truncated``:
    the recovery's ``truncateDirtyLogicFiles`` runs over the queue table):
    each queue the recovery's dispatch reopens (a :class:`QueueRestart` ``/<queueId>``: units put, units on disk
    overwritten or deleted, in ``p``'s totals too; truncated, the file it deletes, its max and write position after
    the load, :func:`store_format.empty_topic_restart.truncate_reopened`) and a note line (``anomalies``, ``data_end``:
    the reference rebuild's findings and data end, where the concurrent reput's stop is read from: :func:`_mix`);
    where the start is not modelled (:func:`store_format.empty_topic_restart.restart_refusal`, a DLedger
    commitlog) the note says so."""
    files = sorted(rel for rel in store_cq if is_topic_empty_file(rel))
    if recovery is None:   # a DLedger commitlog: predicted where its reputs dispatch nothing (files as held)
        why = refusal_reason(config, again=0, dledger_checked=dledger_start_checked(
            config, clean=p.clean_shutdown, reput_from=_dledger_reput_from(p),
            end=p.commitlog_end))
        if why or not files:
            _not_predicted(p, files, why)
        else:
            p.notes.append(_held_note(files, [], 0))
        return
    # a second reput (5.x, recheckReputOffsetFromCq) is decided once the recovery's units are known, below
    why = refusal_reason(config, again=0)
    if why or not files and not rebuilt:
        _not_predicted(p, files, why)
        return
    # the records dispatched: recoverAbnormally's walk all of them; else the reput's (5.x: recoverNormally's) from
    # its first record on (pipelines.verify.restart_dispatch.reput_start)
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    units, sizes = empty_name_units(st, config, recovery.dispatch_from, p.commitlog_end, -1 if abnormal else first - 1)
    again_queues = reput_again_queues(st, config, walk_from=recovery.dispatch_from, reput_first=first,
                                      end=p.commitlog_end) if abnormal else []
    if again_queues:   # 4.9: after the walk the reput from the queues' max
        p.notes.append(f'topic "" queues {", ".join(map(str, again_queues))} not predicted past the load: after '
                       f"recoverAbnormally's walk the reput dispatches their records again from {p.reput_from} (the "
                       "queue table's max, which neither a queue made of a held file name nor the walk's topic "
                       "\"\" queue raises past them), onto a queue whose write position truncateDirtyLogicFiles set "
                       "from the bytes on disk past the walk's (not modelled)")
        return
    if config.is_5x and config.recheckReputOffsetFromCq:   # doRecheckReputOffsetFromCq, topic "" queues reopened
        # from the whole queue table's max after the recovery (pipelines.verify.restart.predict_restart:
        # store_format.empty_topic_restart.reput_start_over_table), the empty-name records from there on again
        again_from = p.second_reput_from
        if again_from is not None and again_from < recovery.dispatch_from and not units:
            mix = _mix(st, config, again_from, p.commitlog_end, anomalies or [], data_end)
            if isinstance(mix, str):
                _not_predicted(p, files, mix)
                return
            if mix is not None:
                _predict_mix(st, files, mix, p)
                return
        later, later_sizes = empty_name_units(st, config, recovery.dispatch_from, p.commitlog_end, again_from - 1) \
            if again_from is not None and again_from >= recovery.dispatch_from else (None, {})
        if later and opened_afresh(units, later):   # queues the second reput creates: its puts as a dispatch's
            units, sizes, later = units + later, {**sizes, **later_sizes}, []
        why = refusal_reason(config, again=None if later is None else len(later))
        if why:
            _not_predicted(p, files, why)
            return
    written = reopened_files(units, sizes, config.cq_file_size)
    # a truncate keeps the first unit of the last file it keeps (or no file): no reopened queue then ends empty
    why = "" if truncated else start_fails({q: files for q, (files, _) in written.items()}, config)
    if why:
        p.notes.append(why)
        return
    held_files = held_topic_empty_files(st) if held_files is None else held_files
    held: dict[int, dict[int, bytes]] = {}
    for rel, data in held_files.items():
        folder, name = rel.split("/")[1:]
        if name.isdigit():
            held.setdefault(int(folder), {})[int(name)] = data
    if not held and not written:
        return
    reopened, changed = [], 0
    for qid in sorted(set(held) | set(written)):
        files_written, put = written.get(qid, ({}, 0))
        if not files_written:   # a queue the dispatch does not reopen: its files stay as they are
            continue
        on_disk = held.get(qid, {})
        after = dict(on_disk)
        for start, data in files_written.items():
            after[start] = over_held(on_disk.get(start), data, config.cq_file_size)
        cut = truncate_reopened(qid, files_written, held_files, recovery.process_offset, config) if truncated else None
        for name in cut.files_deleted if cut else ():   # deleteLastMappedFile: gone from disk
            del after[int(name)]
        changed += sum(after.get(s) != on_disk.get(s) for s in files_written)
        before_units = set().union(*map(_units, on_disk.values())) if on_disk else set()
        after_units = set().union(*map(_units, after.values()))
        lost = len(before_units - after_units)
        reopened.append(qid)
        names = ", ".join(cq_file_name(s) for s in files_written)
        gone = list(cut.files_deleted) if cut else []
        deleted = f"; the recovery's truncate deletes {', '.join(gone)}" if gone else ""
        q = QueueRestart(f"/{qid}", units_dispatched_again=put, units_lost=lost, files_deleted_by_truncate=gone,
                         max_physic_offset=cut.max_physic_offset if cut else -1,
                         write_position=cut.write_position if cut else -1,
                         note=f'topic "" (consumequeue/{qid}/, not loaded): the start\'s dispatch (the recovery\'s, or '
                              f"a second reput's) opens it afresh "
                              f"over {names} (write position 0, fillPreBlank before a first unit of queue offset > "
                              f"0) and puts {put} unit(s); {lost} unit(s) on disk overwritten{deleted}")
        p.queues.append(q)
        p.units_dispatched_again += put
        p.units_lost += lost
    p.notes.append(_held_note(files, reopened, changed, sorted(set(held) | set(written))))


def _held_note(files: list[str], reopened: list[int], changed: int, queues: list[int] | None = None) -> str:
    """The note line of a start whose topic "" files are predicted (``files``: the store's; ``reopened``: the queues
    its dispatch reopens, ``changed`` files then differing; ``queues``: those named, else the files' folders)."""
    queues = sorted({int(f.split("/", 1)[0]) for f in files}) if queues is None else queues
    return (f'topic "" queues {", ".join(map(str, queues))} (consumequeue/<queueId>/, {len(files)} file(s)): a '
            'start loads those folders as topics "<queueId>" (empty, nothing written), not as topic "", so no '
            "recovery cuts them (units past the commitlog's end stay); "
            + (f"the start's dispatch reopens queue(s) {', '.join(map(str, reopened))} over their files, "
               f"{changed} file(s) then differing from the store's" if reopened else
               "the recovery dispatches no such record: they stay byte for byte"))


def _dledger_reput_from(p: RestartPrediction) -> int:
    """Where a DLedger start's first reput dispatches from (``p``'s, the record there included or not), the second
    (``recheckReputOffsetFromCq``) where it starts earlier."""
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    return first if p.second_reput_from is None else min(first, p.second_reput_from)


def _mix(st: StoreLocation, config: BrokerConfig, start: int, end: int, anomalies: list[dict],
         data_end: int | None) -> QueueZeroAtRestart | str | None:
    """Topic "" queue 0 after a second reput from ``start`` (before the recovery's dispatch, which put no empty-name
    unit) where its concurrent reput goes past damaged bytes and reads a blank there
    (:func:`store_format.concurrent_reput.concurrent_reput_stop` from the reference rebuild's ``anomalies``): the
    empty requests and the empty-name units merged over the held files
    (:func:`store_format.topic_empty_mix.second_reput_queue_zero`); a refusal's reason where the 5.5.1 broker did not
    show it (another line, a stop for good, records read in pieces, a further stop, other topic "" queues); None: no
    blank's empty request (the mix does not form)."""
    stop = concurrent_reput_stop(st, config, anomalies, data_end)
    if stop is None or stop.empty_request is None:
        return None
    why = ("where its second reput from before the recovery's dispatch also puts blanks' empty requests into queue 0 "
           "(checked against the 5.5.1 broker only where the concurrent reput goes on at the next file once, past "
           "its first stop, and no other topic \"\" queue gets a unit)")
    if config.brokerVersion != "5.5" or stop.resume is None or stop.pieces or stop.at is None or stop.at < start \
            or concurrent_reput_stop(cut_at(st, stop.offset, stop.reput_end, stop.resume), config, anomalies,
                                     data_end) is not None:
        return why
    units, sizes = empty_name_units(st, config, start, end)
    mix = second_reput_queue_zero(st, config, units, sizes, skipped=(stop.at, stop.resume),
                                  first_empty_at=stop.empty_request, count=stop.empty_requests)
    return why if mix.others else mix


def _predict_mix(st: StoreLocation, files: list[str], mix: QueueZeroAtRestart, p: RestartPrediction) -> None:
    """Queue 0 as :func:`_mix` puts it (a :class:`QueueRestart` ``/0``: units put, units on disk overwritten; files
    of ``consumequeue/0/`` and ``consumequeue_ext/0/`` then differing from the store's) and the note line."""
    held = held_queue_zero_files(st)
    changed, before_units, after_units = 0, set(), set()
    for rel, pieces in mix.files:
        data = bytes(pieces[0]) + bytes(int(pieces[1]) if len(pieces) > 1 else 0)
        before = held.get(rel)
        changed += data != before
        if rel.startswith("consumequeue/"):
            before_units |= _units(before or b"")
            after_units |= _units(data)
    lost = len(before_units - after_units)
    names = ", ".join(rel.split("/", 1)[1] for rel, _ in mix.files)
    p.queues.append(QueueRestart("/0", units_dispatched_again=mix.put, units_lost=lost, note=(
        "topic \"\" (consumequeue/0/, not loaded): the second reput opens it afresh over the store's files and puts "
        f"{mix.put} unit(s), blanks' empty requests beside the empty-name units (the put rule's mix); {lost} unit(s) "
        f"on disk overwritten; {names}")))
    p.units_dispatched_again += mix.put
    p.units_lost += lost
    p.notes.append(_held_note(files, [0], changed, [0]))
