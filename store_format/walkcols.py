"""Column layout of a commitlog walk's output (:mod:`store_format.commitlog`).

The kernel emits plain int64 matrices: one row per record (``R_*``), per index key (``K_*``), per
multi-dispatch unit (``L_*``), and the spans of the properties the dispatchers read
(:data:`PROPERTY_NAMES`).  This module only names columns, so that the kernel, the dispatcher
rules (:mod:`store_format.dispatch`) and their readers share one definition without importing
each other.
"""
from __future__ import annotations

import numpy as np

# Properties the reput and the dispatchers read [MessageConst]; column order of ``prop_span``.
PROPERTY_NAMES = (
    "KEYS", "UNIQ_KEY", "TAGS", "DELAY", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET",
    "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "INNER_NUM", "INNER_BASE",
)
(P_KEYS, P_UNIQ, P_TAGS, P_DELAY, P_MULTI_DISPATCH, P_MULTI_OFFSET, P_REAL_TOPIC, P_REAL_QID, P_RETRY_TOPIC,
 P_INNER_NUM, P_INNER_BASE) = range(len(PROPERTY_NAMES))
N_PROPS = len(PROPERTY_NAMES)


def _name_lookup() -> np.ndarray:
    """``[name length, first byte]`` -> property number (or -1): a pair's name is compared in full
    with at most one candidate."""
    table = np.full((32, 256), -1, dtype=np.int8)
    for k, name in enumerate(PROPERTY_NAMES):
        assert table[len(name), ord(name[0])] == -1, "two property names share length and first letter"
        table[len(name), ord(name[0])] = k
    return table


PROPERTY_NAME_BYTES = np.frombuffer("".join(PROPERTY_NAMES).encode(), dtype=np.uint8).copy()
PROPERTY_NAME_OFFSETS = np.cumsum([0] + [len(n) for n in PROPERTY_NAMES]).astype(np.int64)
PROPERTY_LOOKUP = _name_lookup()

# per-record columns of ``rec``
(R_POS, R_TOTAL, R_STRUCT, R_QID, R_QOFF, R_PHYS, R_SYSFLAG, R_BORN_TS, R_STORE_TS, R_CRC, R_FLAG,
 R_RECONSUME, R_PREP_TX, R_TAGS_CODE, R_BODY_START, R_BODY_LEN, R_TOPIC_START, R_TOPIC_LEN,
 R_PROPS_START, R_PROPS_LEN, R_BORN_HOST, R_STORE_HOST, R_STATUS, R_KEY_FIRST, R_KEY_COUNT,
 R_TOPIC_HASH, R_FLAGS) = range(27)
N_REC_FIELDS = 27

# bits of R_FLAGS
F_CQ = 1          # goes to its consume queue (transaction type not/commit)
F_INDEX = 2       # handed to the index builder with its keys (not a rollback)
F_TEXT_BAD = 4    # the topic, the tags or a key is not valid UTF-8: its hashes need the slow path
F_MULTI = 8       # carries a multi-dispatch (LMQ) request

# per-key columns of ``key``
K_REC, K_KIND, K_START, K_LEN, K_HASH = range(5)
N_KEY_FIELDS = 5
KEY_KIND_UNIQ = 0
KEY_KIND_KEY = 1

# per-unit columns of ``lmq`` (multi-dispatch)
L_REC, L_NAME_START, L_NAME_LEN, L_QOFF, L_QID, L_STATUS = range(6)
N_LMQ_FIELDS = 6
LMQ_OK = 0
LMQ_BAD_OFFSET = 1           # Long.parseLong failed: the broker's dispatcher throws (see dispatch.py)
LMQ_SKIPPED_SEPARATOR = 2    # 5.x skips queue names holding the path separator

# record status
STATUS_DISPATCHED = 0        # read, size > 0: handed to the dispatchers
STATUS_SIZE_MISMATCH = 1     # totalSize differs from the length its fields give: skipped
