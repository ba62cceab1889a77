"""Driver side: chain the splits' walks into the reput's one walk, and carry queue/index state.

The reput reads segment after segment (:func:`store_format.reput.next_reput_offset`); inside a
segment each split's walk must start exactly where the previous split's walk stopped.  A split
whose own start (resync point) differs from where the chain arrives, or that the 5.x reput end
would cut, is walked again here from the right state; splits the chain never reaches (after an
unreadable record or a blank record, or in a skipped segment) are dropped and reported.

Index state then flows through the chained splits: where a split's summary shows the ordinary case
(commitlog offsets of records with keys not decreasing) the state after it follows in closed form;
otherwise the split is walked here and ``IndexService.buildIndex``'s offset check is run on it.
(Queue state needs no driver: a queue's units all go to one build task, which carries it.)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from store_format import commitlog as cl
from store_format.anomalies import AnomalyKind
from store_format.config import BrokerConfig
from store_format.indexfile import accepted_by_index
from store_format.reput import follow_reput
from store_format.reput_end import data_end_limit
from store_format.store import Segment, StoreLocation

from .plan import Split

__all__ = ["ChainEntry", "Chain", "chain_splits", "IndexSeed", "carry_index_state", "index_file_parts", "Rewalk"]

# rewalk(split, entering state, 5.x limit) -> (summary, walk result)
Rewalk = Callable[[Split, "cl.WalkState | None", "int | None"], "tuple[dict, cl.WalkResult | None]"]


@dataclasses.dataclass
class ChainEntry:
    split: Split
    entering: cl.WalkState
    summary: dict
    local: cl.WalkResult | None = None     # set when the driver walked this split itself
    limit_rel: int | None = None           # the 5.x reput end it was walked with (driver walks only)

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
    """Follow ``doReput`` (:func:`store_format.reput.follow_reput`) across segments and splits using the
    scan summaries: each slice the reput reads is walked by the splits of its segment, one after the
    other, where each must start where the previous one stopped."""
    by_segment: dict[int, list[Split]] = {}
    for sp in splits:
        by_segment.setdefault(sp.segment, []).append(sp)
    last_seg = store.segments[-1]

    def reput_end() -> int | None:  # only a 5.x store whose last segment has size mismatches has one
        if config.is_5x and any(summaries[s.split_id].get("mismatched", 0) for s in by_segment[last_seg.index]):
            return data_end_limit(store, config)
        return None

    entries: list[ChainEntry] = []
    anomalies: list[dict] = []
    on_chain: set[int] = set()
    rewalked = 0

    def walk_slice(seg: Segment, state: cl.WalkState, limit_rel: int | None) -> tuple[cl.WalkState, int]:
        """The splits of ``seg`` from ``state`` on, chained: the slice's end state and why it stopped."""
        nonlocal rewalked
        stop = cl.Stop.SPLIT_END
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
                if stop == cl.Stop.BAD and state.read_size >= state.slice_size:
                    # the split's walk did not know the slice; the reput stops reading where it ends
                    stop = cl.Stop.SLICE_END
            else:
                summary, local = rewalk(split, entering, limit_rel)
                rewalked += 1
                if local is None:
                    stop = cl.Stop.SPLIT_END
                else:
                    state = local.state
                    stop = local.stop
            if summary.get("records", 0) or local is not None:
                if split.split_id in on_chain:
                    raise RuntimeError(f"split {split.split_id} reached twice by the reput's chain")
                entries.append(ChainEntry(split, entering, summary, local, limit_rel if local is not None else None))
                on_chain.add(split.split_id)
            if stop != cl.Stop.SPLIT_END:
                break
        if stop == cl.Stop.BAD:
            anomalies.append(_unreadable(store, seg, state, last_seg))
        if stop == cl.Stop.SPLIT_END:
            stop = cl.Stop.LIMIT  # cannot happen (a segment's last split has no byte end): end the chain
        return state, stop

    steps = follow_reput(store, config, reput_end)
    try:
        seg, state, limit_rel = next(steps)
        while True:
            seg, state, limit_rel = steps.send(walk_slice(seg, state, limit_rel))
    except StopIteration:
        pass
    dropped = {sid: s["records"] for sid, s in summaries.items() if sid not in on_chain and s.get("records", 0)}
    for sid, n in sorted(dropped.items()):
        sp = splits[sid]
        anomalies.append({"kind": AnomalyKind.UNREACHABLE_RECORDS.value, "segment": sp.segment, "position": sp.start,
                          "detail": f"{n} records found in split {sid} that the reput never reads "
                                    "(after an unreadable or blank record, or in a skipped segment)"})
    return Chain(entries, dropped, anomalies, rewalked)


def _unreadable(store: StoreLocation, seg: Segment, state: cl.WalkState, last_seg: Segment) -> dict:
    """An unreadable record ends a segment's walk; zeros in the last segment are the end of data."""
    kind = AnomalyKind.UNREADABLE_RECORD.value
    with store.reader(seg) as read:
        head = bytes(read(state.bufpos, 8)) if state.bufpos < seg.data_end else b""
    if seg is last_seg and head.strip(b"\0") == b"":
        kind = AnomalyKind.END_OF_DATA.value
    return {"kind": kind, "segment": seg.index, "position": state.bufpos,
            "detail": f"segment {seg.name}: {'data ends' if kind == AnomalyKind.END_OF_DATA else 'record unreadable'}"
                      f" at {state.bufpos}; the reput skips the rest of the segment"}


def _local(entry: ChainEntry, rewalk: Rewalk) -> cl.WalkResult | None:
    if entry.local is None:
        _, entry.local = rewalk(entry.split, entry.entering, None)
    return entry.local


@dataclasses.dataclass(frozen=True)
class IndexSeed:
    """The index state as the first chained split begins (``IndexService.buildIndex``).

    ``end_phy_offset``: the ``endPhyOffset`` of the newest index file, which ``buildIndex`` compares
    each record's commitlog offset with (a record below it is not indexed).  ``IndexFile.putKey``
    sets it to the offset of the record that put the last key, and a new file starts from the
    previous file's (``getAndCreateLastIndexFile``): since only records at or above it put keys, it
    is the largest commitlog offset of a record indexed before (0 when none was).
    ``entries_before``: the index entries put before, i.e. the ordinal of the first key put next.
    A rebuild starts from nothing (the defaults); the tables refresh from the entries of the
    segments before the ones it rescans.
    """
    end_phy_offset: int = 0
    entries_before: int = 0


def carry_index_state(chain: Chain, config: BrokerConfig, rewalk: Rewalk,
                      seed: IndexSeed | None = None) -> tuple[dict[int, tuple[int, int, int]], dict]:
    """Each split's entering endPhyOffset carry, the number of indexed keys before it (from the
    seed's on) and in it, and the totals that decide the trailing empty index file (``keys``: the
    entries of all index files once the chain's splits are indexed, the seed's included)."""
    seed = seed or IndexSeed()
    carry = seed.end_phy_offset
    base = seed.entries_before
    entering: dict[int, tuple[int, int, int]] = {}
    after_last_key = False
    first_ts = None
    for entry in chain.entries:
        s = entry.summary
        if first_ts is None and s.get("first_store_ts") is not None:
            first_ts = s["first_store_ts"]
        idx = s.get("index", {"keyed": 0, "keys": 0})
        split_id = entry.split.split_id
        if not idx.get("keyed"):
            entering[split_id] = (carry, base, 0)
            after_last_key = after_last_key or idx.get("dispatched_after_last_key", False)
            continue
        if idx["monotone"] and idx["first_offset"] >= carry:
            entering[split_id] = (carry, base, idx["keys"])
            base += idx["keys"]
            carry = max(carry, idx["max_offset"])
            after_last_key = idx["dispatched_after_last_key"]
            continue
        carry_in, base_in = carry, base
        res = _local(entry, rewalk)
        assert res is not None  # the summary said it holds keys
        rec = res.rec
        ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
        keyed = np.nonzero(ok & ((rec[:, cl.R_FLAGS] & cl.F_INDEX) != 0) & (rec[:, cl.R_KEY_COUNT] > 0))[0]
        acc, carry = accepted_by_index(rec[keyed, cl.R_PHYS], carry)
        base += int(rec[keyed[acc], cl.R_KEY_COUNT].sum())
        entering[split_id] = (carry_in, base_in, base - base_in)
        if acc.any():
            after_last_key = bool(ok[keyed[acc][-1] + 1:].any())
        else:
            after_last_key = after_last_key or bool(ok.any())
    totals = {"keys": base, "dispatched_after_last_key": after_last_key, "first_store_ts": first_ts,
              "end_phy_offset": carry,
              "dispatched": sum(e.summary.get("dispatched", 0) for e in chain.entries),
              "last_dispatched": max((e.summary["last_dispatched"] for e in chain.entries
                                      if e.summary.get("last_dispatched") is not None), default=None)}
    return entering, totals


def index_file_parts(chain: Chain, entering: dict[int, tuple[int, int, int]], total_keys: int,
                     per_file: int, again: tuple[int, int, int, int] | None = None) -> list[list[list[int]]]:
    """For each index file, ``[split_id, carry, keys before]`` of the splits holding its entries or
    the previous file's last entry, in chain order; ``again``: ``(split_id, carry, keys before, keys)``
    of a split read a second time after the chain (a restart's second reput: its records at or above
    ``carry`` are indexed again, :class:`store_format.restart_reput.SecondReput`)."""
    files: list[list[list[int]]] = [[] for _ in range(-(-total_keys // per_file))]
    parts = [(e.split.split_id, *entering.get(e.split.split_id, (0, 0, 0))) for e in chain.entries]
    for sid, carry, base, count in parts + ([again] if again is not None else []):
        if not count:
            continue
        first_file = max(base - 1, 0) // per_file if base else 0
        last_file = min((base + count) // per_file, len(files) - 1)
        for f in range(first_file, last_file + 1):
            lo, hi = f * per_file - 1, (f + 1) * per_file
            if base < hi and base + count > lo:
                files[f].append([sid, carry, base])
    return files
