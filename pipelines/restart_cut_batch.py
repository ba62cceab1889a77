"""A batch consume queue a 5.x DLedger start's reput set inside an entry touches, written whole as
:func:`store_format.dledger_inside_replay_batch.replay_batch_queue` replays it (``--as-restart``,
:func:`pipelines.restart_cut.apply_cut`): the staged files ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves, the
files ``MappedFileQueue.getLastMappedFile`` creates (zeros) and the 46-byte units
``BatchConsumeQueue.putBatchMessagePositionInfo`` appends."""
from __future__ import annotations

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR, BCQ_UNIT_DTYPE, BCQ_UNIT_SIZE, INVALID_POS
from store_format.consumequeue import cq_file_name
from store_format.dledger_inside_replay_batch import BatchQueueFiles

from .build import write_file
from .commit import StagedOutput

__all__ = ["write_batch_whole"]


def write_batch_whole(staged: StagedOutput, w: BatchQueueFiles, files: dict[int, bytearray], copies: list[bytes],
                      size: int) -> list[tuple[str, int, int]]:
    """Write the broker's files of the batch queue ``w``: ``files`` (``pipelines.restart_cut._walk_bytes``), the files
    ``getLastMappedFile`` created (zeros), the parsed units appended and the copied units' bytes at their positions.
    Returns the files written."""
    for start in w.opened:
        files[start] = bytearray(size)
    units = np.zeros(len(w.units), dtype=BCQ_UNIT_DTYPE)
    for k, ((_pos, offset, n, tags), (stored, base, num)) in enumerate(zip(w.units, w.batch_fields)):
        units[k] = (offset, n, tags, stored, base, num, INVALID_POS, 0)
    raw = units.tobytes()
    for k, (pos, *_rest) in enumerate(w.units):
        files[pos - pos % size][pos % size:pos % size + BCQ_UNIT_SIZE] = raw[k * BCQ_UNIT_SIZE:(k + 1) * BCQ_UNIT_SIZE]
    for (pos, _src), unit in zip(w.copies, copies):
        files[pos - pos % size][pos % size:pos % size + BCQ_UNIT_SIZE] = unit
    folder = f"{BCQ_DIR}/{w.topic}/{w.queue_id}"
    for start, data in files.items():
        write_file(staged.staging_uri, f"{folder}/{cq_file_name(start)}", bytes(data))
    return [(w.topic, w.queue_id, start) for start in files]
