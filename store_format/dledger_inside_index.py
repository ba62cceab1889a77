"""The index keys of the messages a 5.x DLedger start's reput parses inside an entry, and what they do to the keys it
puts afterwards.

Mirrors rocketmq-store 5.5.1 ``IndexService.buildIndex`` (called by ``CommitLogDispatcherBuildIndex`` from
``DefaultMessageStore.doDispatch``) and ``IndexFile.putKey``.

After a crash, ``DefaultMessageStore.doRecheckReputOffsetFromCq`` may set the reput inside an entry, where
``DLedgerCommitLog``'s check parses well-formed messages (:mod:`store_format.dledger_reput_inside`).  Each is
dispatched like any record, at the commitlog offset its PHYSICALOFFSET field says, wherever it starts: ``buildIndex``
returns at once for a request below the last index file's ``endPhyOffset``, and ``putKey`` sets ``endPhyOffset`` to
the request's offset for each key it puts (its unique key, each of its ``KEYS``, its tags).  So a parsed message whose
field lies above the walk's last indexed record raises ``endPhyOffset`` past it, and when the reput then walks the
walk's records again (it goes on at an entry's start inside the walk's range, or before the walk's data file), the
last indexed record is below it and is not indexed again; the records it dispatches past the walk's end are indexed
only from that field on.  Checked against the 5.5.1 broker on a log past 2 GiB (a T5 message parsed at 2147483647 whose
field lies one byte above the last T9 record, then the T9 entry walked again: the index holds K9 once, then E5).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .dispatch import index_keys
from .store import Segment, StoreLocation

__all__ = ["inside_key_offsets", "keys_after_parsed", "indexed_again"]


def _key_offsets(read: Callable[[int, int], bytes], records: tuple[tuple[int, int], ...],
                 config: BrokerConfig) -> np.ndarray:
    """The commitlog offset (PHYSICALOFFSET field) of each index key of ``records`` (``(start, end)`` of whole message
    records, in order; ``read(offset, n)``: the log's bytes there), in the order ``buildIndex`` puts them, each record
    walked alone (:func:`store_format.commitlog.walk_range`, as :func:`store_format.dledger_inside_units.parsed_units`
    does for their units)."""
    out = [np.zeros(0, np.int64)]
    for a, b in records:
        def read_one(pos: int, n: int, a: int = a, b: int = b) -> bytes:
            return read(a + pos, min(n, b - a - pos))
        res = cl.walk_range(read_one, a, b - a, cl.WalkState.at_slice_start(0, b - a), b - a, config)
        out.append(np.asarray(index_keys(res).offset, dtype=np.int64))
    return np.concatenate(out)


def inside_key_offsets(st: StoreLocation, records: tuple[tuple[int, int], ...], config: BrokerConfig) -> np.ndarray:
    """:func:`_key_offsets` of the messages the start's reput parses inside an entry or an old commitlog file
    (:attr:`store_format.dledger_crash_cut.QueueCut.inside_records`; a blank's empty request, a record of no bytes,
    puts no key), read from the store's file that holds each; none when the broker writes no index file."""
    runs = tuple((a, b) for a, b in records if b > a)
    if not runs or not config.writes_index_files:
        return np.zeros(0, np.int64)
    out = [np.zeros(0, np.int64)]
    for a, b in runs:
        seg = next(s for s in st.segments if s.base <= a and b <= s.end)
        with st.reader(seg) as r:
            def read(at: int, n: int, seg: Segment = seg) -> bytes:
                return bytes(r(at - seg.base, min(n, seg.end - at)))
            out.append(_key_offsets(read, ((a, b),), config))
    return np.concatenate(out)


def keys_after_parsed(end_phy: int, offsets: np.ndarray) -> tuple[int, int]:
    """The keys ``buildIndex`` puts for the parsed messages' keys at ``offsets`` (in put order) after the walk left the
    last index file's ``endPhyOffset`` at ``end_phy``, and the ``endPhyOffset`` after them: each key at or above it is
    put and moves it to its offset, one below it is skipped."""
    put = 0
    for o in offsets.tolist():
        if o >= end_phy:
            put, end_phy = put + 1, o
    return put, end_phy


def indexed_again(last_indexed: int, offsets: np.ndarray) -> int:
    """The record the start's reput indexes again when it walks the walk's last indexed record (at ``last_indexed``;
    -1: none) after the parsed messages' keys (``offsets``): that record, unless one of them raised ``endPhyOffset``
    past it (then -1)."""
    if last_indexed < 0:
        return -1
    return last_indexed if keys_after_parsed(last_indexed, offsets)[1] <= last_indexed else -1
