"""Driver side: chain the splits' walks into the reput's one walk, and carry queue/index state.

The reput reads segment after segment (:func:`store_format.reput.next_reput_offset`); inside a
segment each split's walk must start exactly where the previous split's walk stopped.  A split
whose own start (resync point) differs from where the chain arrives, or that the 5.x reput end
would cut, is walked again here from the right state; splits the chain never reaches (after an
unreadable record or a blank record, or in a skipped segment) are dropped and reported.

Queue and index state then flow through the chained splits.  Where a split's summary shows the
ordinary case (queue offsets following each other, commitlog offsets increasing) the state after it
follows in closed form; otherwise the split is walked here and the broker's rules are run on it.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.consumequeue import NOT_STARTED, assign_positions
from store_format.dispatch import queue_units
from store_format.indexfile import accepted_by_index
from store_format.reput import data_end_limit, next_reput_offset
from store_format.store import StoreLocation

from .plan import Split

__all__ = ["ChainEntry", "Chain", "chain_splits", "carry_queue_state", "carry_index_state", "Rewalk"]

# rewalk(split, entering state, 5.x limit) -> (summary, walk result)
Rewalk = Callable[[Split, "cl.WalkState | None", "int | None"], "tuple[dict, cl.WalkResult | None]"]


@dataclasses.dataclass
class ChainEntry:
    split: Split
    entering: cl.WalkState
    summary: dict
    local: cl.WalkResult | None = None     # set when the driver walked this split itself

    @property
    def replaced(self) -> bool:
        return self.local is not None


@dataclasses.dataclass
class Chain:
    entries: list[ChainEntry]
    dropped: dict[int, int]                 # split_id -> records found there that the reput never reads
    anomalies: list[dict]
    rewalked: int = 0


def chain_splits(store: StoreLocation, config: BrokerConfig, splits: list[Split], summaries: dict[int, dict],
                 rewalk: Rewalk) -> Chain:
    """Follow ``doReput`` across segments and splits using the scan summaries."""
    file_size = config.mappedFileSizeCommitLog
    by_segment: dict[int, list[Split]] = {}
    for s in splits:
        by_segment.setdefault(s.segment, []).append(s)
    last_seg = store.segments[-1]
    limit_abs = None
    if config.is_5x and any(summaries[s.split_id].get("mismatched", 0) for s in by_segment[last_seg.index]):
        limit_abs = data_end_limit(store, config)
    entries: list[ChainEntry] = []
    anomalies: list[dict] = []
    on_chain: set[int] = set()
    rewalked = 0
    reput = store.segments[0].base
    while True:
        seg = store.segment_at(reput)
        if seg is None:
            break
        p = reput - seg.base
        state = cl.WalkState.at_slice_start(p, seg.size)
        stop = cl.Stop.SPLIT_END
        limit_rel = None if (limit_abs is None or seg is not last_seg) else limit_abs - seg.base
        for split in by_segment[seg.index]:
            if state.bufpos >= split.end:
                continue
            s = summaries[split.split_id]
            entering = dataclasses.replace(state)
            if s["sync"] == state.bufpos and limit_rel is None:
                # the split's own walk started where the chain arrives: its records are the reput's
                summary, local = s, None
                state = cl.WalkState(s["bufpos"], state.reput + s["reput_delta"],
                                     state.read_size + s["read_delta"], state.slice_size)
                stop = s["stop"]
            else:
                summary, local = rewalk(split, entering, limit_rel)
                rewalked += 1
                if local is None:
                    stop = cl.Stop.SPLIT_END
                else:
                    state = local.state
                    stop = local.stop
            if summary.get("records", 0) or local is not None:
                entries.append(ChainEntry(split, entering, summary, local))
                on_chain.add(split.split_id)
            if stop != cl.Stop.SPLIT_END:
                break
        if stop == cl.Stop.BAD:
            anomalies.append(_unreadable(store, seg, state, last_seg))
        if stop == cl.Stop.SPLIT_END:
            break  # cannot happen: the last split of a segment has no byte end
        nxt = next_reput_offset(seg, state, stop, file_size)
        if nxt is None or nxt <= reput:
            break
        reput = nxt
    dropped = {sid: s["records"] for sid, s in summaries.items() if sid not in on_chain and s.get("records", 0)}
    for sid, n in sorted(dropped.items()):
        sp = splits[sid]
        anomalies.append({"kind": "unreachable_records", "segment": sp.segment, "position": sp.start,
                          "detail": f"{n} records found in split {sid} that the reput never reads "
                                    "(after an unreadable or blank record, or in a skipped segment)"})
    return Chain(entries, dropped, anomalies, rewalked)


def _unreadable(store: StoreLocation, seg, state: cl.WalkState, last_seg) -> dict:
    """An unreadable record ends a segment's walk; zeros in the last segment are the end of data."""
    kind = "unreadable_record"
    with store.reader(seg) as read:
        head = bytes(read(state.bufpos, 8)) if state.bufpos < seg.size else b""
    if seg is last_seg and head.strip(b"\0") == b"":
        kind = "end_of_data"
    return {"kind": kind, "segment": seg.index, "position": state.bufpos,
            "detail": f"segment {seg.name}: {'data ends' if kind == 'end_of_data' else 'record unreadable'} at "
                      f"{state.bufpos}; the reput skips the rest of the segment"}


def _local(entry: ChainEntry, rewalk: Rewalk) -> cl.WalkResult | None:
    if entry.local is None:
        _, entry.local = rewalk(entry.split, entry.entering, None)
    return entry.local


def carry_queue_state(chain: Chain, config: BrokerConfig, rewalk: Rewalk
                      ) -> tuple[dict[int, dict[tuple[str, int], list[int]]], dict[tuple[str, int], list[int]]]:
    """Each split's entering state per queue, and every queue's final state.

    State rows are ``[maxPhysicOffset, writePosition, firstFileStart, blankUntil]``
    (:class:`store_format.consumequeue.QueueState`).
    """
    file_size = config.cq_file_size
    states: dict[tuple[str, int], list[int]] = {}
    entering: dict[int, dict[tuple[str, int], list[int]]] = {}
    for entry in chain.entries:
        queues = entry.summary.get("queues", [])
        if not queues:
            continue
        mine = {}
        closed_form = True
        for topic, qid, n, q0, e0, e_last, clean in queues:
            st = states.get((topic, qid), [-1, int(NOT_STARTED), -1, -1])
            mine[(topic, qid)] = list(st)
            if not clean:
                closed_form = False
            elif st[1] != NOT_STARTED and not (e0 > st[0] and q0 * 20 >= st[1]):
                closed_form = False
        entering[entry.split.split_id] = mine
        if closed_form:
            for topic, qid, n, q0, e0, e_last, clean in queues:
                st = states.setdefault((topic, qid), [-1, int(NOT_STARTED), -1, -1])
                if st[1] == NOT_STARTED:
                    expect = q0 * 20
                    st[2] = expect - expect % file_size
                    st[1] = expect
                    st[3] = expect if q0 != 0 else -1
                st[1] += 20 * n
                st[0] = e_last
        else:
            res = _local(entry, rewalk)
            units = queue_units(res)
            keys = list(zip(units.topic.to_pylist(), units.queue_id.tolist()))
            index = {k: i for i, k in enumerate(mine)}
            matrix = np.array([mine[k] for k in mine], dtype=np.int64).reshape(len(mine), 4)
            assign_positions(np.array([index[k] for k in keys], dtype=np.int64), units.offset, units.size,
                             units.queue_offset, file_size, matrix)
            for k, i in index.items():
                states[k] = [int(v) for v in matrix[i]]
    return entering, states


def carry_index_state(chain: Chain, config: BrokerConfig, rewalk: Rewalk) -> tuple[dict[int, tuple[int, int]], dict]:
    """Each split's entering (endPhyOffset carry, number of keys before it), and the totals that
    decide the trailing empty index file."""
    carry = 0
    base = 0
    entering: dict[int, tuple[int, int]] = {}
    after_last_key = False
    first_ts = None
    for entry in chain.entries:
        s = entry.summary
        if first_ts is None and s.get("first_store_ts") is not None:
            first_ts = s["first_store_ts"]
        idx = s.get("index", {"keyed": 0, "keys": 0})
        entering[entry.split.split_id] = (carry, base)
        if not idx.get("keyed"):
            after_last_key = after_last_key or idx.get("dispatched_after_last_key", False)
            continue
        if idx["monotone"] and idx["first_offset"] >= carry:
            base += idx["keys"]
            carry = max(carry, idx["max_offset"])
            after_last_key = idx["dispatched_after_last_key"]
            continue
        res = _local(entry, rewalk)
        rec = res.rec
        ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
        keyed = np.nonzero(ok & ((rec[:, cl.R_FLAGS] & cl.F_INDEX) != 0) & (rec[:, cl.R_KEY_COUNT] > 0))[0]
        acc, carry = accepted_by_index(rec[keyed, cl.R_PHYS], carry)
        base += int(rec[keyed[acc], cl.R_KEY_COUNT].sum())
        if acc.any():
            after_last_key = bool(ok[keyed[acc][-1] + 1:].any())
        else:
            after_last_key = after_last_key or bool(ok.any())
    totals = {"keys": base, "dispatched_after_last_key": after_last_key, "first_store_ts": first_ts,
              "dispatched": sum(e.summary.get("dispatched", 0) for e in chain.entries)}
    return entering, totals
