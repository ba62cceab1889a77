"""Readers of the files a DLedger crash broker case writes, shared by the inside-entry test modules: a consume queue's
20-byte units (``ConsumeQueue``: commitlog offset, size, tags code), a consume queue ext file's units
(``ConsumeQueueExt.CqExtUnit``) and a record's bytes in the last DLedger data file of the store the restart found."""
from __future__ import annotations

import struct
from pathlib import Path

from store_format.consumequeue_recovery import EXT_MAX_ADDR


def cq_unit(data: bytes, at: int) -> tuple[int, int, int]:
    """The consume queue unit at byte ``at``: commitlog offset, size, tags code."""
    return struct.unpack(">qiq", data[at:at + 20])


def folder_units(folder: Path) -> list[tuple[int, int, int, int]]:
    """A consume queue's units in ``folder`` (every file, every 20 bytes): (queue byte position, commitlog offset,
    size, tags code)."""
    out = []
    for f in sorted(folder.iterdir()):
        data = f.read_bytes()
        out += [(int(f.name) + at, *cq_unit(data, at)) for at in range(0, len(data), 20)]
    return out


def first_units(data: bytes, count: int) -> list[tuple[int, int]]:
    """The first ``count`` consume queue units of ``data``: commitlog offset, size (tags codes asserted 0)."""
    assert all(data[k + 12:k + 20] == bytes(8) for k in range(0, count * 20, 20)), data[:count * 20].hex()
    return [cq_unit(data, k)[:2] for k in range(0, count * 20, 20)]


def ext_units(data: bytes) -> list[bytes]:
    """A consume queue ext file's units (a 2-byte size, then the rest) up to the first zero size."""
    out, at = [], 0
    while at + 2 <= len(data) and (size := int.from_bytes(data[at:at + 2], "big")):
        out.append(data[at:at + size])
        at += size
    return out


def last_data_bytes(src: Path, offset: int, n: int) -> bytes:
    """``n`` bytes of the last data file of the store the restart found (``before/``), from commitlog offset
    ``offset`` on."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(offset - int(data[-1].name))
        return f.read(n)


def replayed_files(plan, file_size: int) -> dict[int, bytes]:
    """The consume queue files a replay plan (``store_format.dledger_inside_replay.QueueFiles``) of a queue the cut
    left with no file says the broker writes: the files ``getLastMappedFile`` created (zeros), ``fillPreBlank``
    units up to ``blank_until``, then its units; by file start."""
    assert not plan.copies and plan.walk_end < 0, plan   # nothing of a walk's file read
    files = {start: bytearray(file_size) for start in plan.opened}
    if plan.blank_until >= 0:
        start = plan.blank_until - plan.blank_until % file_size
        files[start][:plan.blank_until - start] = struct.pack(">qiq", 0, 2**31 - 1, 0) * \
            ((plan.blank_until - start) // 20)
    for pos, offset, size, tags in plan.units:
        start = pos - pos % file_size
        files[start][pos - start:pos - start + 20] = struct.pack(">qiq", offset, size, tags)
    return {start: bytes(data) for start, data in files.items()}


def ext_orphans(ext_files: dict[int, bytes], end: int, pointed: set[int]) -> int:
    """How many ext units before real offset ``end`` (the ext files' end after the load) no address in ``pointed``
    (the tags codes of a queue's units) points at: each file's units walked by their size fields (a file's end
    marker, -1, ends it)."""
    count = 0
    for start in sorted(ext_files):
        data, at = ext_files[start], 0
        while start + at < end and at + 2 <= len(data):
            size = struct.unpack(">h", data[at:at + 2])[0]
            if size <= 0:
                break
            count += (start + at - (1 << 63)) not in pointed
            at += size
    return count



def ext_appended(w: dict, src: Path, queue: str, recovered: int) -> int:
    """The ext units a queue's crash restart put as the broker's own files and its writer's report give them: the
    units of ``expected/consumequeue_ext/`` from ``recovered`` (the ext end ``ConsumeQueue.recover`` left, from the
    store the restart found: its recovery's walk puts ext units from there too) to the ext end once the reput caught
    up (``queuesAfterDispatch``'s ``extMaxOffset``), each file's units walked by their size fields."""
    folder = src / "expected" / "consumequeue_ext" / queue
    after = int(w["queuesAfterDispatch"][queue]["extMaxOffset"])
    count = 0
    for f in sorted(folder.iterdir()):
        start, data, at = int(f.name), f.read_bytes(), 0
        while start + at < after and at + 2 <= len(data):
            size = struct.unpack(">h", data[at:at + 2])[0]
            if size <= 0:
                break
            count += start + at >= recovered
            at += size
    return count


def ext_recovered_end(src: Path, queue: str) -> int:
    """The ext end ``ConsumeQueue.recover`` leaves a queue on the store the restart found (``before/``; 0: no ext
    file): ``ConsumeQueueExt.recover`` walks its ext files by their units' size fields, then
    ``truncateByMaxAddress`` cuts them at the end of the ext unit the last unit it recovers points at (the units of
    its last three files up to the first one with no offset or size; none holding an ext address: no cut)."""
    files = sorted((src / "before" / "consumequeue_ext" / queue).glob("*"))
    if not files:
        return 0
    end = int(files[-1].name) + len(ext_units(files[-1].read_bytes())) * 20
    last = 1
    for f in sorted((src / "before" / "consumequeue" / queue).glob("*"))[-3:]:
        data = f.read_bytes()
        for at in range(0, len(data) - 19, 20):
            offset, size, tags = cq_unit(data, at)
            if offset < 0 or size <= 0:
                break
            last = tags if tags <= EXT_MAX_ADDR else last
        else:
            continue
        break
    if last == 1:
        return end
    real = last + (1 << 63)   # ConsumeQueueExt.unDecorate; the unit's size field there
    (held,) = [f for f in files if int(f.name) <= real < int(f.name) + f.stat().st_size]
    return real + int.from_bytes(held.read_bytes()[real - int(held.name):][:2], "big")


def ext_appended_as_the_broker(p: dict, w: dict, src: Path) -> dict[str, int]:
    """verify's ext units appended (restart prediction ``p``), per queue with ext files after the broker's restart,
    are the ext units that restart put (:func:`ext_appended` from :func:`ext_recovered_end`: the recovery's walk and
    the reput put one per own unit dispatched, whatever ``putMessagePositionInfo`` then does with it); the broker's
    figures."""
    ours = {f["queue"]: f["ext_units_appended"] for f in p["queues"]}
    queues = [f"{t.name}/{q.name}" for t in sorted((src / "expected" / "consumequeue_ext").iterdir())
              for q in sorted(t.iterdir())]
    broker = {q: ext_appended(w, src, q, ext_recovered_end(src, q)) for q in queues}
    assert {q: ours.get(q, 0) for q in broker} == broker and sum(broker.values()) > 0, (ours, broker)
    return broker


def pointed_ext_addresses(src: Path, queue: str, end: int) -> set[int]:
    """The tags codes of a queue's consume queue units below byte ``end`` (its write position after the broker's
    restart, ``queuesAfterDispatch``'s ``maxOffset``) in the broker's files (``expected/``): the units the broker reads
    (``ConsumeQueue.getIndexBuffer``/``iterateFrom`` stop at the write position; stale units past it are not read)."""
    out: set[int] = set()
    folder = src / "expected" / "consumequeue" / queue
    for f in sorted(folder.iterdir()) if folder.is_dir() else []:
        start, data = int(f.name), f.read_bytes()
        out.update(cq_unit(data, at)[2] for at in range(0, min(len(data), end - start), 20))
    return out


def ext_orphaned_as_the_broker(p: dict, w: dict, src: Path, check: bool = True) -> dict[str, tuple[int, int]]:
    """verify's ext units orphaned (restart prediction ``p``) and the broker's, per queue with ext files after the
    broker's restart: the ext units below its ext end (``queuesAfterDispatch``'s ``extMaxOffset``) no consume queue
    unit below its write position points at (:func:`ext_orphans`, :func:`pointed_ext_addresses`), each file's units
    walked by their size fields; with ``check`` asserted equal (the plan's total too)."""
    ours = {f["queue"]: f["ext_units_orphaned"] for f in p["queues"]}
    out = {}
    for t in sorted((src / "expected" / "consumequeue_ext").iterdir()):
        for q in sorted(t.iterdir()):
            queue = f"{t.name}/{q.name}"
            state = w["queuesAfterDispatch"][queue]
            files = {int(f.name): f.read_bytes() for f in q.iterdir()}
            pointed = pointed_ext_addresses(src, queue, int(state.get("maxOffset", 0)))
            out[queue] = (ours.get(queue, 0), ext_orphans(files, int(state.get("extMaxOffset", 0)), pointed))
    if check:
        assert all(v == b for v, b in out.values()), out
        assert p["ext_units_orphaned"] == sum(b for _v, b in out.values()), (p["ext_units_orphaned"], out)
    return out


def ext_figures_as_the_broker(p: dict, w: dict, src: Path, check: bool = True) -> dict[str, tuple[int, ...]]:
    """verify's ext units appended and orphaned (restart prediction ``p``) and the broker's, EVERY queue with ext
    files after the broker's restart: ``queue -> (ours appended, broker's, ours orphaned, broker's)``
    (:func:`ext_appended` from :func:`ext_recovered_end`, :func:`ext_orphaned_as_the_broker`).  A queue whose
    orphaned figure verify says is not predicted (one note line naming it) has its orphaned pair left out of the
    check.  With ``check`` all asserted equal."""
    appended = {f["queue"]: f["ext_units_appended"] for f in p["queues"]}
    orphaned = ext_orphaned_as_the_broker(p, w, src, check=False)
    out = {q: (appended.get(q, 0), ext_appended(w, src, q, ext_recovered_end(src, q)), *o)
           for q, o in orphaned.items()}
    unpredicted = {q for q in out if f"ext units orphaned of {q} not predicted" in " ".join(p["notes"])}
    if check:
        bad = {q: v for q, v in out.items() if v[0] != v[1] or (q not in unpredicted and v[2] != v[3])}
        assert not bad and sum(v[1] for v in out.values()) > 0, (bad, out, unpredicted)
    return out


def walk_from_first_data_file(w: dict, src: Path) -> None:
    """A 5.3.3 crash store put without a pause, as the harness reports it (``WalkStart.java``): the broker's own
    ``isMmapFileMatchedRecover``, asked before the shutdown, walks from the first data file, not written again; where
    the puts took 3 s past a later file's first message the writer lowered the checkpoint's ``physicMsgTimestamp``
    and ``logicsMsgTimestamp`` (``checkpointTimestampsSet``), and the checkpoint the restart read (``before/``) holds
    that value, below what the broker wrote (a ``doFlush`` may put ``logicsMsgTimestamp`` back, never past it)."""
    assert w.get("crashWalkStartFile", 0) == 0 and "crashWalkRewritten" not in w, w.get("crashWalkRewritten")
    cp = w.get("checkpointTimestampsSet")
    if cp is not None:
        physic, logics = struct.unpack_from(">qq", (src / "before" / "checkpoint").read_bytes())
        assert physic == int(cp["set"]) < int(cp["was"]) and logics <= int(cp["was"]), (cp, physic, logics)
        assert int(cp["movedFrom"]) > 0, cp
