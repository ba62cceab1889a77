"""What a 5.x DLedger crash restart's ``truncateDirtyLogicFiles`` and start's reput do to the staged queue files
(``--as-restart``): the files the cut deletes, the cut units put back elsewhere, the units of messages a reput set
inside an entry parses, the ext units the reput puts again, and ``built``'s rows of the files written.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.truncateDirtyLogicFiles``, ``ConsumeQueue.putMessagePositionInfo``
(``BatchConsumeQueue.putBatchMessagePositionInfo``), ``MappedFileQueue.getLastMappedFile`` and ``ConsumeQueueExt.put``
as :mod:`store_format.dledger_crash_cut` and :mod:`store_format.dledger_inside_units` plan them; this module writes
what they say: an ordinary queue a reput set inside an entry touches whole, as
:mod:`store_format.dledger_inside_replay` replays it (``ConsumeQueue.fillPreBlank``,
``ConsumeQueue.truncateDirtyLogicFiles``: which files stay), every other staged file of it removed; a batch queue so
too, as :mod:`store_format.dledger_inside_replay_batch` replays it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR, BCQ_UNIT_DTYPE, BCQ_UNIT_SIZE, INVALID_POS
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.consumequeue_ext import (
    END_MARK,
    EXT_UNIT_SIZE,
    ext_addresses,
    ext_file_name,
    ext_real_offsets,
    ext_units_per_file,
)
from store_format.dledger_crash_cut import ExtAgain, QueueMove
from store_format.dledger_inside_replay import QueueFiles
from store_format.dledger_inside_replay_batch import BatchQueueFiles
from store_format.dledger_inside_units import Placed
from store_format.layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE, CQ_UNIT_SIZE

from .build import write_file
from .build_stage import Built, queue_layout
from .commit import StagedOutput
from .restart import DLedgerRestart

__all__ = ["apply_cut"]

# ConsumeQueue.fillPreBlank's unit: commitlog offset 0, size Integer.MAX_VALUE, tags code 0
_BLANK_UNIT = np.array([(0, CQ_BLANK_SIZE, 0)], dtype=CQ_UNIT_DTYPE).tobytes()


def apply_cut(recovery: object, staged: StagedOutput, built: Built, config: BrokerConfig) -> bool:
    """The staged queues as a 5.x DLedger crash restart leaves them after ``truncateDirtyLogicFiles`` (5.5.1)
    and the start's reput (:class:`store_format.dledger_crash_cut.QueueCut`): the consume queue and batch
    consume queue files the cut deleted and nothing wrote again are removed, in a queue whose cut units are
    put back only in part they are moved to where the reput appends them (:func:`_write_moved`), and with
    ``enableConsumeQueueExt`` the reput's ext units are appended and the units it put back point at them
    (:func:`_put_ext_again`); the blanks' empty requests a reput set inside an entry dispatched are written with the
    concurrent reput's (:func:`inside_blanks`); an ordinary or batch queue the reput set inside an entry touches
    (``Placed.whole``) is written whole last, from the walk's bytes read first (:func:`_walk_bytes`,
    :func:`_write_whole`, a batch queue's too), nothing of the above written for it.  ``built``'s rows of the files
    written follow (:meth:`pipelines.build_stage.Built.rows_from_bytes`); returns whether anything changed."""
    crash = recovery.crash if isinstance(recovery, DLedgerRestart) else None
    if crash is None:
        return False
    cut, changed = crash.cut, False
    written: list[tuple[str, int, int]] = []   # (topic, queue id, file start) of each queue file written
    placed = cut.inside_placed if cut is not None else Placed()
    whole: tuple[QueueFiles, ...] = placed.whole
    # the ordinary queues replayed whole (dledger_inside_replay; nothing else of them in placed or the cut's
    # dropped files and moves): the walk's bytes read before anything is cut
    walk_bytes = [_walk_bytes(staged, built, w, config) for w in whole]
    before = cut.before_placed if cut is not None else Placed()
    if before.units or before.opened or before.rebuild_units:   # queue offset 0 appended, the files it opens
        placed = dataclasses.replace(placed, units=placed.units + before.units, opened=placed.opened + before.opened,
                                     rebuild_units=placed.rebuild_units + before.rebuild_units)
    if cut is not None and (cut.dropped or cut.batch_dropped or cut.moves):
        # read before the cut's files are deleted
        moved = [(move, _units_put_back(staged, move, *queue_layout(config, move.batch))) for move in cut.moves]
        built.cq_files = _cut_files(staged, built.cq_files, cut.dropped, "consumequeue")
        built.bcq_files = _cut_files(staged, built.bcq_files, cut.batch_dropped, BCQ_DIR)
        for move, units in moved:
            folder, size, unit = queue_layout(config, move.batch)
            written += [(move.topic, move.queue_id, start)
                        for start in _write_moved(staged, move, units, folder, size, unit)]
        changed = True
    if placed.units or placed.opened or placed.rebuild_units:
        assert cut is not None
        written += _write_inside(staged, placed, (*cut.dropped, *cut.batch_dropped), config)
        changed = True
    for again in crash.ext_again:   # crash.again, crash.before: the rebuild's walk put the ext units (jump_at), not
        # the addresses of the cut units put back (none without a cut)
        _put_ext_again(staged, again, config.mappedFileSizeConsumeQueueExt, config.cq_file_size,
                       put=not (crash.again or crash.before))
    if whole:
        for w, (files, copies) in zip(whole, walk_bytes):   # every other staged file of the queue goes
            batch = isinstance(w, BatchQueueFiles)
            folder = queue_layout(config, batch)[0]
            rows = built.bcq_files if batch else built.cq_files
            rows = _cut_files(staged, rows, tuple(
                (w.topic, w.queue_id, r["file_start"]) for r in rows
                if (r["topic"], r["queue_id"]) == (w.topic, w.queue_id) and r["file_start"] not in files
                and r["file_start"] not in w.opened), folder)
            if batch:
                built.bcq_files = rows
            else:
                built.cq_files = rows
            written = [f for f in written if (f[0], f[1]) != (w.topic, w.queue_id)]
            written += _write_whole(staged, w, files, copies, config)
        changed = True
    if changed:
        built.rows_from_bytes(staged, written, config)
    return changed


def _walk_bytes(staged: StagedOutput, built: Built, w: QueueFiles,
                config: BrokerConfig) -> tuple[dict[int, bytearray], list[bytes]]:
    """Of a queue replayed whole (:class:`store_format.dledger_inside_replay.QueueFiles`, a batch queue's
    :class:`store_format.dledger_inside_replay_batch.BatchQueueFiles`),
    the walk's files the cut leaves (staged, below ``w.cut_from``; their bytes from ``w.walk_end`` on zeros: the
    rebuild's own dispatch appended those) and the bytes of each unit ``w.copies`` reads (a cut unit or a
    record past the walk's end, where the rebuild's queue holds it), from the staged queue before anything is cut."""
    batch = isinstance(w, BatchQueueFiles)
    root, size, unit = queue_layout(config, batch)
    folder = f"{root}/{w.topic}/{w.queue_id}"
    starts = sorted(r["file_start"] for r in (built.bcq_files if batch else built.cq_files)
                    if (r["topic"], r["queue_id"]) == (w.topic, w.queue_id))
    cache: dict[int, bytes] = {}

    def read(start: int) -> bytes:
        if start not in cache:
            data = staged.read_staged(f"{folder}/{cq_file_name(start)}")
            cache[start] = data + bytes(size - len(data))
        return cache[start]

    files = {}
    for start in starts:
        if start < min(w.cut_from, w.walk_end):
            data = bytearray(read(start))
            if w.walk_end < start + size:
                data[w.walk_end - start:] = bytes(start + size - w.walk_end)
            files[start] = data
    # a batch queue's copies read where the rebuild's queue holds the unit (past the walk's end too)
    assert all(0 <= src and (batch or src < w.walk_end) and src - src % size in starts for _pos, src in w.copies)
    copies = [read(src - src % size)[src % size:src % size + unit] for _pos, src in w.copies]
    return files, copies


def _write_whole(staged: StagedOutput, w: QueueFiles, files: dict[int, bytearray], copies: list[bytes],
                 config: BrokerConfig) -> list[tuple[str, int, int]]:
    """Write the broker's files of a queue replayed whole (a consume queue's, or a batch queue's:
    :class:`store_format.dledger_inside_replay_batch.BatchQueueFiles`): ``files`` (the walk's the cut leaves,
    :func:`_walk_bytes`), the files ``getLastMappedFile`` created (zeros; ``fillPreBlank`` units first in a consume
    queue the cut left with no file), the units appended and the cut units' bytes (``copies``) at their positions.
    Returns the files written."""
    root, size, unit = queue_layout(config, isinstance(w, BatchQueueFiles))
    for start in w.opened:
        files[start] = bytearray(size)
    if w.blank_until >= 0:
        start = w.blank_until - w.blank_until % size
        files[start][:w.blank_until - start] = _BLANK_UNIT * ((w.blank_until - start) // CQ_UNIT_SIZE)
    raw = _encoded(w)
    for k, (pos, *_rest) in enumerate(w.units):
        files[pos - pos % size][pos % size:pos % size + unit] = raw[k * unit:(k + 1) * unit]
    for (pos, _src), copied in zip(w.copies, copies):
        files[pos - pos % size][pos % size:pos % size + unit] = copied
    folder = f"{root}/{w.topic}/{w.queue_id}"
    for start, data in files.items():
        write_file(staged.staging_uri, f"{folder}/{cq_file_name(start)}", bytes(data))
    return [(w.topic, w.queue_id, start) for start in files]


def _encoded(w: QueueFiles) -> bytes:
    """The units ``w.units`` appends, encoded: 20-byte consume queue units, or a batch queue's 46-byte ones with
    their store time, msgBaseOffset and batchSize (``BatchQueueFiles.batch_fields``; no compacted offset)."""
    if isinstance(w, BatchQueueFiles):
        out = np.zeros(len(w.units), dtype=BCQ_UNIT_DTYPE)
        for k, ((_pos, offset, n, tags), (stored, base, num)) in enumerate(zip(w.units, w.batch_fields)):
            out[k] = (offset, n, tags, stored, base, num, INVALID_POS, 0)
        return out.tobytes()
    return np.array([(offset, n, tags) for _pos, offset, n, tags in w.units], dtype=CQ_UNIT_DTYPE).tobytes()


def _cut_files(staged: StagedOutput, rows: list[dict], gone: tuple[tuple[str, int, int], ...],
               folder: str) -> list[dict]:
    """Remove the staged files ``gone`` (``(topic, queue id, file start)`` under ``folder``) and their rows."""
    for topic, qid, start in gone:
        staged.delete_staged(f"{folder}/{topic}/{qid}/{cq_file_name(start)}")
    drop = set(gone)
    return [r for r in rows if (r["topic"], r["queue_id"], r["file_start"]) not in drop]


def _units_put_back(staged: StagedOutput, move: QueueMove, folder: str, size: int, unit: int) -> bytes:
    """The ``move.count`` units at queue position ``move.source`` in the staged files (the recovery's queue), or
    those written from their records (``move.units``: among them one the walk dropped)."""
    if move.units:
        return np.array([tuple(u) for u in move.units], dtype=CQ_UNIT_DTYPE).tobytes()
    folder = f"{folder}/{move.topic}/{move.queue_id}"
    end = move.source + move.count * unit
    found = bytearray()
    for f in range(move.source - move.source % size, end, size):
        found += staged.read_staged(f"{folder}/{cq_file_name(f)}")[max(move.source - f, 0):]
    return bytes(found[:end - move.source])


def _write_moved(staged: StagedOutput, move: QueueMove, units: bytes, folder: str, size: int,
                 unit: int) -> list[int]:
    """Write ``units`` from ``move.target`` on, as ``ConsumeQueue.putMessagePositionInfo`` (a batch queue:
    ``BatchConsumeQueue.putBatchMessagePositionInfo``) appends them at the queue's write position
    (:class:`store_format.dledger_crash_cut.QueueMove`); returns the start of each file written."""
    folder = f"{folder}/{move.topic}/{move.queue_id}"
    target_end = move.target + len(units)
    written = []
    for f in range(move.target - move.target % size, target_end, size):
        name = f"{folder}/{cq_file_name(f)}"
        data = bytearray(staged.read_staged(name)) if f < move.target and move.blank_from < 0 else bytearray(size)
        if f < move.zero_from < f + size:   # the units of records past the walk's end: only the reput put them
            data[move.zero_from - f:] = bytes(f + size - move.zero_from)
        if move.blank_from == f:
            data[:move.target - f] = _BLANK_UNIT * ((move.target - f) // CQ_UNIT_SIZE)
        lo, hi = max(move.target, f), min(target_end, f + size)
        data[lo - f:hi - f] = units[lo - move.target:hi - move.target]
        write_file(staged.staging_uri, name, bytes(data))
        written.append(f)
    return written


def _write_inside(staged: StagedOutput, placed: Placed, dropped: tuple[tuple[str, int, int], ...],
                  config: BrokerConfig) -> list[tuple[str, int, int]]:
    """The units the broker appends to queues the walk wrote for the messages its reput, set inside an entry, parses
    there (:func:`store_format.dledger_inside_units.place_inside`, ``placed.units``; a BatchCQ topic's in its batch
    consume queue, 46 bytes each), written over the staged bytes at their positions (the cut units' bytes past the
    write position it left), or into the files ``getLastMappedFile`` creates for them (``placed.opened``: zeros but
    for them; the cut deleted any staged file there), once the units the rebuild's own dispatch of those messages
    appended after the walk's are zeros again (``placed.rebuild_units``, a reput set before the walk's units: in the
    files that stay, not the cut's ``dropped``, which ``apply_cut`` removed).
    Returns the files it wrote: ``(topic, queue id, file start)``."""
    units, opened = placed.units, placed.opened

    def layout(topic: str) -> tuple[str, int, int]:
        return queue_layout(config, topic in config.batch_topics)

    files: dict[tuple[str, int, int], bytearray] = {key: bytearray(layout(key[0])[1]) for key in opened}
    for topic, qid, until in placed.blank_until:   # fillPreBlank: the first unit of a queue the cut left empty
        size = config.cq_file_size
        files[(topic, qid, until - until % size)][:until % size] = _BLANK_UNIT * (until % size // CQ_UNIT_SIZE)

    def file_at(topic: str, qid: int, position: int) -> tuple[bytearray, int]:
        """The file holding queue byte ``position`` (read from the staged output the first time) and where in it."""
        folder, size, _unit = layout(topic)
        key = (topic, qid, position - position % size)
        if key not in files:
            files[key] = bytearray(staged.read_staged(f"{folder}/{topic}/{qid}/{cq_file_name(key[2])}"))
        return files[key], position % size

    gone = set(dropped)
    for topic, qid, position in placed.rebuild_units:
        _folder, size, unit = layout(topic)
        if (topic, qid, position - position % size) not in gone:
            data, at = file_at(topic, qid, position)
            data[at:at + unit] = bytes(unit)
    for u in units:
        data, at = file_at(u.topic, u.queue_id, u.position)
        data[at:at + (BCQ_UNIT_SIZE if u.batch else CQ_UNIT_SIZE)] = (
            np.array([(u.offset, u.size, u.tags_code, u.store_time, u.base, u.batch_size, INVALID_POS, 0)],
                     dtype=BCQ_UNIT_DTYPE) if u.batch else
            np.array([(u.offset, u.size, u.tags_code)], dtype=CQ_UNIT_DTYPE)).tobytes()
    for (topic, qid, start), data in files.items():
        write_file(staged.staging_uri, f"{layout(topic)[0]}/{topic}/{qid}/{cq_file_name(start)}", bytes(data))
    return list(files)


def _put_ext_again(staged: StagedOutput, again: ExtAgain, ext_size: int, cq_size: int, put: bool = True) -> None:
    """The start's reput on an ext queue (:class:`store_format.dledger_crash_cut.ExtAgain`): ``ConsumeQueueExt.put``
    appends the ext unit of each record it walks again (the same bytes as the recovery's unit of that record)
    after the recovery's units, a full file getting its end marker once the next unit goes into the next
    file, and each consume queue unit it put back holds its new unit's address (``decorate``).  ``put=False``:
    the ext units are there (the rebuild walked those records again), only the addresses are set."""
    if put:
        _append_ext_again(staged, again, ext_size)
    address = ext_addresses(again.before + again.ordinals, ext_size)
    folder = f"consumequeue/{again.topic}/{again.queue_id}"
    queue_files: dict[int, bytearray] = {}
    for pos, addr in zip(again.positions, address):
        start = int(pos) - int(pos) % cq_size
        if start not in queue_files:
            queue_files[start] = bytearray(staged.read_staged(f"{folder}/{cq_file_name(start)}"))
        at = int(pos) - start + _TAGS_CODE_AT
        queue_files[start][at:at + 8] = int(addr).to_bytes(8, "big", signed=True)
    for start, data in queue_files.items():
        write_file(staged.staging_uri, f"{folder}/{cq_file_name(start)}", bytes(data))


def _append_ext_again(staged: StagedOutput, again: ExtAgain, ext_size: int) -> None:
    """:func:`_put_ext_again`'s ext units: the last ``again.count`` of the ``again.before`` units but the
    ``again.skip`` last ones appended."""
    ext_folder = f"consumequeue_ext/{again.topic}/{again.queue_id}"
    files: dict[int, bytearray] = {}

    def file(no: int) -> bytearray:
        if no not in files:
            name = f"{ext_folder}/{ext_file_name(no, ext_size)}"
            files[no] = bytearray(staged.read_staged(name)) if no * ext_size < _ext_end(again.before, ext_size) \
                else bytearray(ext_size)
        return files[no]

    per_file = ext_units_per_file(ext_size)
    old = ext_real_offsets(np.arange(again.before - again.skip - again.count, again.before - again.skip), ext_size)
    new = ext_real_offsets(np.arange(again.before, again.before + again.count), ext_size)
    for src, dst, ordinal in zip(old, new, range(again.before, again.before + again.count)):
        unit = bytes(file(int(src) // ext_size)[src % ext_size:src % ext_size + EXT_UNIT_SIZE])
        data = file(int(dst) // ext_size)
        data[dst % ext_size:dst % ext_size + EXT_UNIT_SIZE] = unit
        if ordinal % per_file == 0 and ordinal:   # ConsumeQueueExt.put: the full file's end marker (fullFillToEnd)
            prev = file(ordinal // per_file - 1)
            prev[per_file * EXT_UNIT_SIZE:per_file * EXT_UNIT_SIZE + 2] = END_MARK.tobytes()
    for no, data in files.items():
        write_file(staged.staging_uri, f"{ext_folder}/{ext_file_name(no, ext_size)}", bytes(data))


_TAGS_CODE_AT: int = CQ_UNIT_DTYPE.fields["tagsCode"][1]  # type: ignore[index]  # where a consume queue unit's tagsCode (the ext address) sits


def _ext_end(units: int, ext_size: int) -> int:
    """Where the ext space of a queue with ``units`` ext units ends (the end of the file its last unit is in)."""
    if not units:
        return 0
    return (int(ext_real_offsets(np.array([units - 1]), ext_size)[0]) // ext_size + 1) * ext_size
