"""``--as-restart`` over a store that already holds topic "" queue 0's files (``consumequeue/0/``,
``consumequeue_ext/0/``), where a blank's empty request the restart dispatches writes its unit.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueueStore.loadConsumeQueues``, ``findOrCreateConsumeQueue``,
``MappedFileQueue.getLastMappedFile`` and ``DefaultMappedFile.init``.

A blank's empty request (``DispatchRequest(0, true)``: the 5.x concurrent reput's, or the one a DLedger start's reput
set inside an entry dispatches) goes to topic "" queue 0, whose folder ``consumequeue//0`` is ``consumequeue/0``.  At
the start ``loadConsumeQueues`` reads that folder as topic "0": each file in it whose name parses as an int becomes a
queue id of topic "0" (``consumequeue/0/0/``, which holds nothing), so no queue of topic "" is loaded.  The first
empty request then creates topic "" queue 0 afresh: ``getLastMappedFile`` finds no file in its (unloaded) list and
opens ``consumequeue/0/00000000000000000000`` (``DefaultMappedFile.init``: ``RandomAccessFile`` in "rw" mode, mapped
over the file size, so an existing file is neither truncated nor zeroed), and the unit (and, with
``enableConsumeQueueExt``, each ext unit in ``consumequeue_ext/0/``) is written from the file's start over what it
held; every byte it does not write, and every file of those folders it does not open, stays as it was.  The rebuild
writes those files from scratch (:func:`store_format.concurrent_reput.empty_request_queue_files`), which is the
broker's result only where the store holds no such file, or one with the very bytes the rebuild writes (the broker
then writes the same bytes over them).  Anything else is refused in one line: not checked against a broker (the
harness restarts a store whose ``consumequeue/`` it deleted first).
"""
from __future__ import annotations

import pyarrow.fs as pafs

from .errors import UnsupportedConfigError
from .store import StoreLocation

__all__ = ["refuse_held_empty_request_files"]

_FOLDERS = ("consumequeue/0", "consumequeue_ext/0")


def _piece_bytes(pieces: object) -> bytes:
    """The bytes of :func:`pipelines.build.write_file`'s ``data`` (bytes, or pieces where an int is that many
    zeros)."""
    if isinstance(pieces, (bytes, bytearray, memoryview)):
        return bytes(pieces)
    assert isinstance(pieces, list), type(pieces)
    return b"".join(bytes(p) for p in pieces)   # bytes(n): n zeros


def refuse_held_empty_request_files(store: StoreLocation, count: int, files: list[tuple[str, list]]) -> None:
    """Refuse ``--as-restart`` when the restart dispatches ``count`` blanks' empty requests, whose files the rebuild
    writes as ``files`` (relative paths and pieces), and ``store`` (the store the restart starts on) already holds a
    file in ``consumequeue/0/`` or ``consumequeue_ext/0/`` that is not one of them with the same bytes (see the
    module's docstring); topic "0"'s queue folders there are not such files.

    Raises:
        UnsupportedConfigError: one line, naming the file.
    """
    if not count:
        return
    written = {rel: pieces for rel, pieces in files}
    for folder in _FOLDERS:
        infos = store.fs.get_file_info(pafs.FileSelector(f"{store.root}/{folder}", allow_not_found=True))
        for info in sorted(infos, key=lambda i: i.base_name):
            if info.type != pafs.FileType.File:
                continue
            rel = f"{folder}/{info.base_name}"
            if rel in written:
                with store.fs.open_input_file(info.path) as f:
                    if f.read() == _piece_bytes(written[rel]):
                        continue
            raise UnsupportedConfigError(
                f"{store.uri}: --as-restart: the restart dispatches {count} blank(s)' empty request(s) to topic \"\" "
                f"queue 0, and the store already holds {rel}"
                + (" with other bytes than they write" if rel in written else ", which they do not write")
                + ": the broker opens that queue's file without truncating it and keeps every byte and file it does "
                "not write over (not modelled); rebuild without --as-restart, or restart the broker")
