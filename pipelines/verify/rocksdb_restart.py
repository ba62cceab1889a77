"""``verify``'s next-start prediction for a RocksDB consume queue store (``storeType=defaultRocksDB``):
the commitlog recovery from the database's checkpoint (:func:`store_format.recovery.plan_recovery`, as
``rebuild --as-restart`` applies it), its dispatch and ``RocksDBConsumeQueueStore.truncateDirty``, and
with ``recheckReputOffsetFromCq=true`` the start's second reput from the commitlog's min offset
(``DefaultMessageStore.doRecheckReputOffsetFromCq``) (:mod:`store_format.rocksdb_recovery`), reported
queue by queue like the file queues' (:class:`~.report.RestartPrediction`).  A 5.5.1 ``enableAcceleratedRecovery``
walk from a checkpoint inside a record: cut there, the second reput ending at the record crossing the cut
(:func:`store_format.restart_reput.reput_data_end`); one that accepts records there the reput's parse does not reach:
their units (:func:`store_format.restart_reput.walk_units`: own and light ones, none for prepared messages) go in
before the second reput's, their keys first in the index (:func:`.restart_index.predict_index`'s ``parsed_keys``);
refused where one carries a multi-dispatch request ``walk_units`` does not read."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from store_format.config import BrokerConfig
from store_format.errors import UnsupportedConfigError
from store_format.reput import resolve_broker_version
from store_format.restart_reput import offset_zero_keys, reput_data_end, walk_reaches, walk_units
from store_format.rocksdb_cq import CQ_VALUE
from store_format.rocksdb_recovery import QueueEntries, RocksRestart, parse_database, predict_rocksdb_restart
from store_format.store import StoreLocation

from .report import QueueRestart, RestartPrediction
from .restart_index import predict_index

if TYPE_CHECKING:
    from store_format.recovery import RecoveryPlan

_WINDOW, _MARGIN = 16 << 20, 1 << 20   # commitlog bytes parsed at a time, and the walk buffer's margin


def _entry(e: tuple[int, int] | None) -> list[int] | None:
    return None if e is None else [int(e[0]), int(e[1])]


def select_entries(queues: dict[str, QueueEntries],
                   keep: Callable[[np.ndarray], np.ndarray]) -> dict[str, QueueEntries]:
    """The entries of each queue whose commitlog offsets ``keep`` selects, in commitlog order (the queues left
    with none left out)."""
    out = {}
    for name, q in queues.items():
        m = keep(q.phy)
        if m.any():
            order = np.argsort(q.phy[m], kind="stable")   # commitlog order: the last one is the max entry
            out[name] = QueueEntries(q.cq[m][order], q.phy[m][order], q.values[m][order])
    return out


def predict_rocksdb_store_restart(st: StoreLocation, config: BrokerConfig, store_entries: dict, ref_entries: dict, *,
                                  clean: bool, store_index: list[tuple[str, int, dict]],
                                  expected_index: Callable[[], Iterator[bytes]],
                                  checkpoint_index_ts: int | None) -> RestartPrediction:
    """The prediction from both databases' entries (the store's and the rebuild's, as
    :func:`~.rocksdb_compare.read_store_database` reads them)."""
    from store_format.recovery import plan_recovery
    store, checkpoint = parse_database(store_entries)
    ref, _ = parse_database(ref_entries)
    plan = plan_recovery(st, config, abnormal=not clean, max_phy_offset_of_consume_queue=max(checkpoint or 0, 0))
    end, min_phy = plan.process_offset, st.segments[0].base
    off_records = _walk_inside_checked(st, config, plan)   # None: the walk accepted no record off the reput's
    cp0 = checkpoint or 0
    if clean:   # CommitLog.recoverNormally: doDispatch only above the dispatch position
        def in_range(phy: np.ndarray) -> np.ndarray:
            return (phy > cp0) & (phy >= plan.dispatch_from) & (phy < end)
    else:       # recoverAbnormally: every record from the start segment
        def in_range(phy: np.ndarray) -> np.ndarray:
            return (phy >= plan.dispatch_from) & (phy < end)
    # a walk off the reput's records: its own units (none where it met prepared messages), not the rebuild's
    dispatched = select_entries(ref, in_range) if off_records is None else off_records
    notes: list[str] = []
    if not clean and plan.dispatch_from == 0:
        _with_offset_zero(dispatched, store, "the abnormal recovery", notes)
    again, reput_end = None, end
    if config.recheckReputOffsetFromCq:   # DefaultMessageStore.doRecheckReputOffsetFromCq: from the min offset
        # up to the cut, or to the record crossing it where an accelerated walk cut inside one
        reput_end = reput_data_end(st, config, _Reput(end, min_phy, plan.dispatch_from))
        again = select_entries(ref, lambda phy: (phy >= min_phy) & (phy < reput_end))
        if min_phy == 0:
            _with_offset_zero(again, store, "the start's second reput", notes)
    r = predict_rocksdb_restart(store, checkpoint, dispatched, end=end, min_phy=min_phy, abnormal=not clean,
                                broker_551=config.brokerVersion == "5.5", again=again)
    p = RestartPrediction("5", clean, min_phy, end, rocksdb=True, rocksdb_checkpoint_before=checkpoint,
                          rocksdb_checkpoint_after=r.checkpoint, truncate_dirty_logic_files=r.truncated)
    p.recovery_cut, p.recovery_reason = plan.process_offset, plan.reason
    p.recovery_discarded_messages, p.recovery_discarded_bytes = plan.discarded_messages, plan.discarded_bytes
    p.recovery_deleted_segments = plan.deleted_segments
    if clean:
        p.reput_from, p.reput_from_inclusive = cp0, False
        first = max(cp0 + 1, plan.dispatch_from)
    else:
        p.reput_from, p.reput_from_inclusive, first = plan.dispatch_from, True, plan.dispatch_from
    p.tail_bytes = max(0, end - first)
    queue_restarts(p, store, ref, r, end)
    if r.alt_queues is not None:
        p.race_checkpoint_after = r.alt_checkpoint
        p.notes.append("abnormal start: the recovery's dispatch reaches the database through RocksGroupCommitService "
                       "while the recovery goes on, and truncateDirty reads the checkpoint of that moment: if it runs "
                       "before the dispatch lands, it cuts the queues first (the race outcome shown per queue)")
    p.notes.extend(notes)
    p.notes.append("units at or past the commitlog's end are not deleted (truncateDirty only corrects the max "
                   "entries and the checkpoint); the reput then starts at the commitlog's end")
    second = None
    if again is not None:
        p.second_reput_from, second = min_phy, (
            "recheckReputOffsetFromCq=true: DefaultMessageStore.start walks the commitlog again from its min offset "
            f"{min_phy} (the consume queue table is empty at a start: "
            "RocksDBConsumeQueueStore.findOrCreateConsumeQueue is called by readers only), putting every unit "
            "below the end again (the record at offset 0's too) after the recovery's batches and truncateDirty: "
            "each queue with a unit there gets its last one as max entry, the checkpoint the end of the last one; "
            "IndexService.buildIndex puts the last indexed record's keys again")
    # a walk from offset 0 (the abnormal recovery's from the first file, or the second reput from the min offset)
    # indexes the record at offset 0 where the index is still empty there
    zero_keys = offset_zero_keys(st, config, _WINDOW, _MARGIN) if again is not None or first <= 0 else 0
    if off_records is not None:   # the walk's keys at their physicalOffset fields, then the second reput's (if any)
        p.notes.extend([second] if second else [])
        predict_index(p, first, config=config, store_index=store_index, expected_index=expected_index,
                      checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean, end=reput_end,
                      parsed_keys=plan.walk_keys, parsed_then=min_phy if again is not None else None,
                      walk_end=plan.dispatch_from, zero_keys=zero_keys, accelerated=True)
        return p
    predict_index(p, first, config=config, store_index=store_index, expected_index=expected_index,
                  checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean, end=reput_end,
                  second_reput_from=p.second_reput_from, second_reput_note=second, zero_keys=zero_keys)
    return p


@dataclasses.dataclass(frozen=True)
class _Reput:
    """The start's second reput from the min offset over a recovery cut at ``process_offset`` that dispatched from
    ``dispatch_from`` (:func:`store_format.restart_reput.reput_data_end`'s input)."""
    process_offset: int
    restart_reput_from: int
    dispatch_from: int


def _walk_inside_checked(st: StoreLocation, config: BrokerConfig,
                         plan: RecoveryPlan) -> dict[str, QueueEntries] | None:
    """The units a 5.5.1 ``enableAcceleratedRecovery`` walk from a kept database's max-physical-offset checkpoint
    inside its segment dispatched, where it accepted records the reput's parse of that segment from its start reaches
    no record of (:func:`store_format.restart_reput.walk_reaches`): records parsed from other boundaries than the
    rebuild's, their units their own fields' (:func:`store_format.restart_reput.walk_units`; none for a prepared
    message; a multi-dispatch request's light units after its own), by queue in commitlog order; None: no such walk.
    Their keys (``RecoveryPlan.walk_keys``) go first into the index, their units into the database before the second
    reput's from the min offset, which parses the host whole and puts its units after them through the same
    ``RocksGroupCommitService`` queue: a key it writes again takes its value, each queue it reaches gets its max entry
    back (checked on the 5.5.1 broker, tests/test_restart_accelerated_rocksdb_broker.py for a planted prepared
    message, tests/test_restart_accelerated_rocksdb_planted_broker.py for a planted normal one, its unit left above
    its queue's max, tests/test_restart_accelerated_rocksdb_light_broker.py for one with a multi-dispatch request, its
    light unit in a queue of its own, and tags and a key not valid UTF-8).  A walk whose records carry a
    multi-dispatch request ``walk_units`` does not read is refused (UnsupportedConfigError).  One that accepted none
    (its first check failed: the commitlog cut there) is not such a walk: the second reput then ends at the record
    crossing the cut (:func:`store_format.restart_reput.reput_data_end`)."""
    seg = st.segment_at(plan.checked_from)
    if seg is None or not plan.checked_from < plan.dispatch_from < plan.process_offset:
        return None
    version = resolve_broker_version(st, config)
    if walk_reaches(st, seg, plan.dispatch_from - seg.base, version, _WINDOW, _MARGIN):
        return None
    if plan.walk_queued < 0:
        return {}
    w = walk_units(st, seg, plan.dispatch_from, plan.process_offset, version, _WINDOW, _MARGIN)
    if w.unmodelled or not w.queue:
        raise UnsupportedConfigError(
            f"enableAcceleratedRecovery=true: the abnormal recovery walks from the RocksDB consume queue's checkpoint "
            f"{plan.dispatch_from}, inside a record of segment {seg.name} as the reput parses it, accepts records "
            f"there and queues some (the last at {plan.walk_queued}): {w.unmodelled or 'their units not read'}; "
            "not predicted, let the broker recover")
    values = np.empty(len(w.queue), dtype=CQ_VALUE)
    values["offset"], values["size"] = w.phy, w.size
    values["tags_code"], values["store_timestamp"] = w.tags_code, w.store_timestamp
    names = np.array(w.queue, dtype=object)
    out = {}
    for name in dict.fromkeys(w.queue):
        m = names == name
        out[name] = QueueEntries(w.queue_offset[m], w.phy[m], values[m])
    return out


def _with_offset_zero(units: dict[str, QueueEntries], store: dict[str, QueueEntries], who: str,
                      notes: list[str]) -> None:
    """The record at commitlog offset 0 added in front of ``units``: the rebuild never dispatches it, the
    abnormal recovery and the second reput do; its units are taken from the store's own database (put
    again unchanged)."""
    at0 = select_entries(store, lambda phy: phy == 0)
    for name, q in at0.items():
        d = units.get(name)
        units[name] = q if d is None else QueueEntries(np.concatenate([q.cq, d.cq]), np.concatenate([q.phy, d.phy]),
                                                       np.concatenate([q.values, d.values]))
    if not at0:
        notes.append(f"the record at commitlog offset 0 is dispatched again by {who}, but the store's database has "
                     "no unit of it to take its queue offset from: not counted")


def queue_restarts(p: RestartPrediction, store: dict[str, QueueEntries], ref: dict[str, QueueEntries],
                   r: RocksRestart, end: int) -> None:
    """Per queue: the entries before and after, units left above the new max, dispatched again, lost."""
    for name in sorted(set(store) | set(r.queues)):
        before = store.get(name)
        after = r.queues[name]
        alt = r.alt_queues.get(name) if r.alt_queues is not None else None
        q = QueueRestart(name, layout="rocksdb", max_entry_before=_entry(before.max if before else None),
                         max_entry_after=_entry(after.max), min_entry_after=_entry(after.min),
                         units_dispatched_again=r.dispatched.get(name, 0))
        if alt is not None and (alt.max != after.max or alt.min != after.min):
            q.race_max_entry_after, q.race_min_entry_after = _entry(alt.max), _entry(alt.min)
            q.race_units_truncated = int((alt.cq > alt.max[1]).sum()) if alt.max is not None else 0
        if after.max is not None:
            q.units_truncated = int((after.cq > after.max[1]).sum())
        e = ref.get(name)
        if e is not None:
            below = e.cq[e.phy < end]
            q.units_lost = int((~np.isin(below, after.cq)).sum())
        q.note = r.notes.get(name, "")
        if (q.units_truncated or q.units_lost or q.units_dispatched_again or q.race_max_entry_after is not None
                or q.race_min_entry_after is not None or (before is not None and (before.max != after.max
                                                                                 or before.min != after.min))
                or (before is None and after.max is not None)):
            p.queues.append(q)
        p.units_truncated += q.units_truncated
        p.units_dispatched_again += q.units_dispatched_again
        p.units_lost += q.units_lost
