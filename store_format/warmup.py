"""Load (or compile) every JIT kernel once, on tiny inputs, so that later calls run at full speed."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["warm_up"]


def warm_up() -> None:
    from . import commitlog as cl
    from . import record_encoder  # noqa: F401  (imports the commitlog writer's kernels)
    from .config import BrokerConfig
    from .consumequeue import assign_positions, new_states
    from .dispatch import gather_strings
    from .indexfile import accepted_by_index, build_index_array, fill_index_window, slot_table
    from .records import properties_map

    config = BrokerConfig(mappedFileSizeCommitLog=4096, maxHashSlotNum=4, maxIndexNum=4)
    empty = np.zeros(4096, dtype=np.uint8)
    res = cl.walk_range(lambda pos, n: empty[pos:pos + n], 0, 4096, cl.WalkState.at_slice_start(0, 4096), 4097,
                        config)
    cl.resync(lambda pos, n: empty[pos:pos + n], 0, 0, 64, 4096)
    gather_strings(empty, 0, np.zeros(1, np.int64), np.zeros(1, np.int64))
    states = new_states(1)
    assign_positions(np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1, np.int64), np.zeros(1, np.int64), 40,
                     states)
    accepted_by_index(np.zeros(1, np.int64), 0)
    build_index_array(np.zeros(1, np.int32), np.zeros(1, np.int64), np.ones(1, np.int64), max_hash_slot_num=4,
                      max_index_num=4)
    fill_index_window(np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), np.int64(0), np.int64(0),
                 np.int64(4), np.zeros(4, np.int32), np.int64(0), np.int64(0), np.int64(56), np.int64(0),
                 np.zeros(4096, np.uint8))
    slot_table(np.zeros(1, np.int32), np.int64(4), np.zeros(4, np.int32))
    properties_map(pa.array(["a\x01b"]))
    del res
