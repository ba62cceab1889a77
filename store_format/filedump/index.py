"""Header, entries and hash slots of one index file (``IndexHeader``, ``IndexFile``), with the slots'
chains followed as ``IndexFile.selectPhyOffset`` follows them."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .. import commitlog as cl
from ..config import BrokerConfig
from ..errors import StoreLayoutError
from ..layout import (
    INDEX_ENTRY_DTYPE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_DTYPE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
    index_file_size,
)
from ..timeutil import iso_ms
from .items import KIND_INDEX, Item, Selection
from .reading import DEFAULT_WINDOW, read_exact

__all__ = ["iter_index"]


def _index_layout(size: int, config: BrokerConfig) -> tuple[int, int, str]:
    """(maxHashSlotNum, maxIndexNum, where they come from) for an index file of ``size`` bytes."""
    if size == index_file_size(config.maxHashSlotNum, config.maxIndexNum):
        return config.maxHashSlotNum, config.maxIndexNum, "config"
    rest = size - INDEX_HEADER_SIZE
    # the broker's default keeps maxIndexNum = 4 * maxHashSlotNum: 4 slot bytes + 4 * 20 entry bytes per slot
    per_slot = INDEX_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE
    if rest > 0 and rest % per_slot == 0:
        slots = rest // per_slot
        return slots, 4 * slots, "assumed maxIndexNum = 4 x maxHashSlotNum (the defaults' ratio)"
    raise StoreLayoutError(
        f"an index file of {size} bytes does not match maxHashSlotNum={config.maxHashSlotNum} and "
        f"maxIndexNum={config.maxIndexNum} (40 + 4 x slots + 20 x entries = "
        f"{index_file_size(config.maxHashSlotNum, config.maxIndexNum)} bytes): pass --config with the store's "
        "broker.conf")


def _java_rem(a: np.ndarray, b: int) -> np.ndarray:
    """Java's ``%`` (the sign of the dividend)."""
    return np.fmod(a, b)


def iter_index(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
               start: int = 0, count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
    """Header, entries and non-empty slots (with their chains) of one index file.

    Layout [IndexHeader, IndexFile]: a 40-byte header, ``maxHashSlotNum`` 4-byte slots (number of the
    latest entry whose ``keyHash % maxHashSlotNum`` is the slot), then entries of 20 bytes numbered
    from 1 (entry 0 is never used): ``keyHash · commitlogOffset · timeDiff · prevIndex``.  The entries on
    disk are ``1 .. indexCount - 1``.  A slot's chain follows ``prevIndex`` from the slot's entry down
    to 0, as ``IndexFile.selectPhyOffset`` does; an entry of a chain is ``chain_ok`` when its
    ``prevIndex`` is smaller than its own number and belongs to the same slot.

    ``start``/``count`` page the entries (item 0 is entry 1) and, after them, the non-empty slots alike.
    Memory: the slot table is read ``window`` bytes at a time; the ``prevIndex`` column (4 bytes per
    entry) and the non-empty slots are held to follow the chains.
    """
    slots_n, entries_max, layout_from = _index_layout(size, config)
    header = np.frombuffer(read_exact(read, 0, INDEX_HEADER_SIZE), dtype=INDEX_HEADER_DTYPE)[0]
    h = {k: int(header[k]) for k in INDEX_HEADER_DTYPE.names}  # type: ignore[union-attr]
    index_count = h["indexCount"]
    entries_n = min(max(index_count - 1, 0), entries_max - 1)
    begin_ts = h["beginTimestamp"]
    yield {"type": "file", "kind": KIND_INDEX, "path": path or name, "name": name, "file_size": size,
           "max_hash_slot_num": slots_n, "max_index_num": entries_max, "layout_from": layout_from,
           "begin_timestamp": begin_ts, "begin_time": iso_ms(begin_ts), "end_timestamp": h["endTimestamp"],
           "end_time": iso_ms(h["endTimestamp"]), "begin_phy_offset": h["beginPhyOffset"],
           "end_phy_offset": h["endPhyOffset"], "hash_slot_count": h["hashSlotCount"], "index_count": index_count,
           "entries": entries_n}
    if index_count - 1 > entries_max - 1:
        yield {"type": "event", "event": "index_count", "detail": f"indexCount {index_count} is above maxIndexNum "
               f"{entries_max}: only the {entries_max - 1} entries the file can hold are read"}
    slots_at = INDEX_HEADER_SIZE
    entries_at = INDEX_HEADER_SIZE + slots_n * INDEX_SLOT_SIZE
    # non-empty slots, read a window at a time
    slot_no: list[np.ndarray] = []
    slot_head: list[np.ndarray] = []
    step = max(window // INDEX_SLOT_SIZE, 1)
    for first in range(0, slots_n, step):
        n = min(step, slots_n - first)
        vals = np.frombuffer(read_exact(read, slots_at + first * INDEX_SLOT_SIZE, n * INDEX_SLOT_SIZE), dtype=">i4")
        nz = np.flatnonzero(vals)
        slot_no.append(nz.astype(np.int64) + first)
        slot_head.append(vals[nz].astype(np.int64))
    slots = np.concatenate(slot_no) if slot_no else np.zeros(0, np.int64)
    heads = np.concatenate(slot_head) if slot_head else np.zeros(0, np.int64)
    # entries, a window at a time; keep prevIndex and keyHash's slot for the chains
    prev = np.zeros(entries_n + 1, dtype=np.int32)
    slot_of = np.full(entries_n + 1, -1, dtype=np.int64)
    is_head = np.zeros(entries_n + 1, dtype=bool)
    valid_heads = heads[(heads >= 1) & (heads <= entries_n)]
    is_head[valid_heads] = True
    sel = Selection(start, count)
    stats = {"entries": entries_n, "non_empty_slots": int(len(slots)), "chain_errors": 0, "unreachable_entries": 0,
             "slots_out_of_range": int(((heads < 1) | (heads > entries_n)).sum())}
    estep = max(window // INDEX_ENTRY_SIZE, 1)
    for first in range(1, entries_n + 1, estep):
        n = min(estep, entries_n + 1 - first)
        e = np.frombuffer(read_exact(read, entries_at + first * INDEX_ENTRY_SIZE, n * INDEX_ENTRY_SIZE),
                          dtype=INDEX_ENTRY_DTYPE)
        n = len(e)
        if n == 0:
            break
        key_hash = e["keyHash"].astype(np.int64)
        p = e["prevIndex"].astype(np.int64)
        prev[first:first + n] = p
        slot_of[first:first + n] = _java_rem(key_hash, slots_n)
        lo, hi = sel.take(n)
        for i in range(lo, hi):
            no = first + i
            pi = int(p[i])
            ok = 0 <= pi < no and (pi == 0 or slot_of[pi] == slot_of[no])
            td = int(e["timeDiff"][i])
            yield {"type": "entry", "no": no - 1, "entry": no, "key_hash": int(key_hash[i]), "slot": int(slot_of[no]),
                   "commitlog_offset": int(e["commitlogOffset"][i]), "time_diff": td,
                   "time": iso_ms(begin_ts + td * 1000) if begin_ts > 0 else None, "prev_index": pi,
                   "slot_head": bool(is_head[no]), "chain_ok": ok}
    # chains: every entry but a chain's head is some entry's prevIndex
    refs = prev[1:][(prev[1:] > 0) & (prev[1:] <= entries_n)]
    reached = is_head.copy()
    reached[refs] = True
    stats["unreachable_entries"] = int((~reached[1:]).sum())
    slot_sel = Selection(start, count)
    lo, hi = slot_sel.take(len(slots))
    chain_errors = 0
    for k in range(len(slots)):
        s, head = int(slots[k]), int(heads[k])
        chain, ok = _follow_chain(prev, slot_of, s, head, entries_n)
        chain_errors += 0 if ok else 1
        if lo <= k < hi:
            yield {"type": "slot", "no": k, "slot": s, "entry": head, "chain": chain, "chain_length": len(chain),
                   "chain_ok": ok}
    stats["chain_errors"] = chain_errors
    if stats["non_empty_slots"] != h["hashSlotCount"] and entries_n:
        yield {"type": "event", "event": "hash_slot_count",
               "detail": f"hashSlotCount {h['hashSlotCount']} differs from the {stats['non_empty_slots']} non-empty "
                         "slots (a broker since 4.7.1 counts the puts that found their slot empty)"}
    yield {"type": "summary", "kind": KIND_INDEX, "name": name, **stats, **sel.summary(),
           "slots_shown": slot_sel.emitted}


def _follow_chain(prev: np.ndarray, slot_of: np.ndarray, slot: int, head: int, n: int) -> tuple[list[int], bool]:
    """Entries from ``head`` along ``prevIndex`` (``IndexFile.selectPhyOffset``'s walk); ok when every
    link goes to a smaller entry of the same slot and the chain ends at 0."""
    chain: list[int] = []
    cur = head
    ok = True
    while cur != 0:
        if cur < 0 or cur > n:
            return chain, False
        chain.append(cur)
        if slot_of[cur] != slot:
            ok = False
        nxt = int(prev[cur])
        if nxt >= cur or nxt < 0:
            return chain, False
        cur = nxt
    return chain, ok
