"""The files of topic "" queue 0 (``consumequeue/0/``, ``consumequeue_ext/0/``) a restart leaves, where blanks'
empty requests write that queue's unit: from scratch, or (``--as-restart``) over the files of those folders the store
already holds.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueueStore.loadConsumeQueues``, ``findOrCreateConsumeQueue``,
``ConsumeQueue.putMessagePositionInfo``, ``ConsumeQueueExt.put``/``fullFillToEnd``,
``MappedFileQueue.getLastMappedFile`` and ``DefaultMappedFile.init``.

A blank's empty request (``DispatchRequest(0, true)``: the 5.x concurrent reput's, or the one a DLedger start's reput
set inside an entry dispatches) goes to topic "" queue 0, whose folder ``consumequeue//0`` is ``consumequeue/0``.  At
the start ``loadConsumeQueues`` reads that folder as topic "0": each file in it whose name parses as an int becomes a
queue id of topic "0" (``consumequeue/0/0/``, which holds nothing), so no queue of topic "" is loaded.  The first
empty request then creates topic "" queue 0 afresh: ``getLastMappedFile`` finds no file in its (unloaded) list and
opens ``consumequeue/0/00000000000000000000`` (``DefaultMappedFile.init``: ``RandomAccessFile`` in "rw" mode, mapped
over the queue's file size, so an existing file is neither truncated nor zeroed, and one shorter than that size grows
to it, zeros after its bytes), and the unit (0, 0, tagsCode) goes at its start (write position 0, queue offset 0: no
``fillPreBlank``): those 20 bytes replace what the file held there.  With ``enableConsumeQueueExt`` each empty request
first puts an ext unit (``ConsumeQueueExt.put``) the same way into ``consumequeue_ext/0/``, from its first file's start
on, a full file ending in the short -1 (``fullFillToEnd``) before the next file opens.  Every byte not written and
every file of those folders not opened stays as it was; and a restart that dispatches no empty request leaves them
all.  So ``--as-restart`` writes each file the requests open as the store's bytes (zeros up to the file size) with the
written bytes over their start, and copies every other file of those folders as it is
(:func:`empty_request_queue_files`; ``tests/test_empty_request_held_broker.py``, the small DLedger store whose reput,
set inside an entry, dispatches a blank's empty request, with files planted there before the restart).
"""
from __future__ import annotations

import numpy as np
import pyarrow.fs as pafs

from .config import BrokerConfig
from .consumequeue import cq_file_name
from .consumequeue_ext import build_ext_file, ext_addresses, ext_file_name, ext_units_per_file
from .empty_topic_restart import over_held
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_DTYPE, CQ_UNIT_SIZE
from .store import StoreLocation

__all__ = ["HELD_FOLDERS", "empty_request_queue_files", "empty_unit_tags_code", "held_queue_zero_files",
           "over_held_files"]

# topic "" queue 0's folders (consumequeue//0, consumequeue_ext//0), which the broker's start loads as topic "0"
HELD_FOLDERS = ("consumequeue/0", "consumequeue_ext/0")


def empty_request_queue_files(config: BrokerConfig, count: int,
                              store: StoreLocation | None = None) -> list[tuple[str, list]]:
    """The files ``count`` blanks' empty requests dispatched one after the other into a topic "" queue 0 that had
    none leave (relative paths, and pieces for :func:`pipelines.build.write_file`: bytes, or an int for that many
    zeros): ``consumequeue/0/`` with its one unit (the next requests' units are skipped: ``offset + size``, 0, is not
    past the queue's max physical offset, 0), and with ``enableConsumeQueueExt=true`` ``consumequeue_ext/0/`` with
    ``count`` ext units, each unit's tagsCode the first one's address; none when ``count`` is 0.  ``store``
    (``--as-restart``: the store the restart starts on): the files of those folders it holds, those the requests
    write with the written bytes over them (module docstring).

    Raises:
        UnsupportedConfigError: a file the requests open is a folder in ``store`` (one line).
    """
    written = _written(config, count)
    if store is None:
        return [(rel, [data, size - len(data)]) for rel, (data, size) in written.items()]
    return over_held_files(store, written)


def over_held_files(store: StoreLocation, written: dict[str, tuple[bytes, int]]) -> list[tuple[str, list]]:
    """The files of topic "" queue 0's folders (:data:`HELD_FOLDERS`) a start over ``store`` leaves where its dispatch
    writes ``written`` (relative path -> the bytes written from the file's start, and its mapped size): each file
    of ``written`` the store holds with those bytes over it (zeros up to the size), every other file the store holds
    there as it is, the rest of ``written`` from scratch; relative paths and pieces for
    :func:`pipelines.build.write_file` (module docstring).

    Raises:
        UnsupportedConfigError: a file the dispatch opens is a folder in ``store`` (one line).
    """
    written = dict(written)
    out = []
    for rel, held in _held(store, set(written)):
        if rel in written:
            data, size = written.pop(rel)
            out.append((rel, [over_held(held, data, size)]))
        else:
            out.append((rel, [held]))
    return out + [(rel, [data, size - len(data)]) for rel, (data, size) in written.items()]


def empty_unit_tags_code(config: BrokerConfig) -> int:
    """The tagsCode of the first empty request's unit: 0, or with ``enableConsumeQueueExt=true`` the address of its
    ext unit, the first of ``consumequeue_ext/0/`` (``ConsumeQueueExt.put``: the later requests' units are skipped,
    never the first's)."""
    if not config.enableConsumeQueueExt:
        return 0
    return int(ext_addresses(np.zeros(1, dtype=np.int64), config.mappedFileSizeConsumeQueueExt)[0])


def _written(config: BrokerConfig, count: int) -> dict[str, tuple[bytes, int]]:
    """Each file the requests write: the bytes they write from its start, and its (mapped) size."""
    if not count:
        return {}
    name = f"consumequeue/0/{cq_file_name(0)}"
    if not config.enableConsumeQueueExt:
        return {name: (bytes(CQ_UNIT_SIZE), config.cq_file_size)}
    size = config.mappedFileSizeConsumeQueueExt
    unit = np.zeros(1, dtype=CQ_UNIT_DTYPE)
    unit["tagsCode"] = empty_unit_tags_code(config)
    per_file = ext_units_per_file(size)
    files = -(-count // per_file)   # a file full (past its last unit less than 4 bytes left) is followed by the next
    out = {name: (unit.tobytes(), config.cq_file_size)}
    for k in range(files):
        zeros = np.zeros(min(per_file, count - k * per_file), dtype=np.int64)
        data, _zeros = build_ext_file(size, zeros, zeros, k < files - 1)
        out[f"consumequeue_ext/0/{ext_file_name(k, size)}"] = (bytes(data), size)
    return out


def held_queue_zero_files(store: StoreLocation) -> dict[str, bytes]:
    """The files ``store`` holds directly in topic "" queue 0's folders (:data:`HELD_FOLDERS`), by relative path."""
    return dict(_held(store, set()))


def _held(store: StoreLocation, opened: set[str]) -> list[tuple[str, bytes]]:
    """The files directly in ``consumequeue/0/`` and ``consumequeue_ext/0/`` of ``store`` and their bytes (topic
    "0"'s queue folders there are not such files); a folder where the requests open a file (``opened``) is
    refused."""
    out = []
    for folder in HELD_FOLDERS:
        infos = store.fs.get_file_info(pafs.FileSelector(f"{store.root}/{folder}", allow_not_found=True))
        for info in sorted(infos, key=lambda i: i.base_name):
            if info.type == pafs.FileType.File:
                with store.fs.open_input_file(info.path) as f:
                    out.append((f"{folder}/{info.base_name}", f.read()))
            elif f"{folder}/{info.base_name}" in opened:
                raise UnsupportedConfigError(
                    f"{store.uri}: --as-restart: {folder}/{info.base_name} is a folder, where the start's dispatch "
                    "to topic \"\" queue 0 would open its file (not modelled); rebuild without --as-restart")
    return out
