"""What a commitlog walk (:mod:`store_format.commitlog`) hands back: the loop state, the result
object, and the layout of its columns.

The kernel emits plain int64 matrices: one row per record (``R_*``), per index key (``K_*``), per
multi-dispatch unit (``L_*``), and the spans of the properties the dispatchers read
(:data:`PROPERTY_NAMES`).  The kernel, the dispatcher rules (:mod:`store_format.dispatch`) and
their readers share these definitions without importing each other.
"""
from __future__ import annotations

import dataclasses

import numpy as np

# Properties the reput and the dispatchers read [MessageConst], and the CRC property a 5.x recovery reads with
# forceVerifyPropCRC (PROPERTY_CRC32, store_format.propcrc); column order of ``prop_span``.
PROPERTY_NAMES = (
    "KEYS", "UNIQ_KEY", "TAGS", "DELAY", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET",
    "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "INNER_NUM", "INNER_BASE", "__CRC32#",
)
(P_KEYS, P_UNIQ, P_TAGS, P_DELAY, P_MULTI_DISPATCH, P_MULTI_OFFSET, P_REAL_TOPIC, P_REAL_QID, P_RETRY_TOPIC,
 P_INNER_NUM, P_INNER_BASE, P_CRC32) = range(len(PROPERTY_NAMES))
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
KEY_KIND_TAG = 2   # 5.5: topic#T#tags (IndexService.buildIndex, MessageConst.INDEX_TAG_TYPE)

# per-unit columns of ``lmq`` (multi-dispatch)
L_REC, L_NAME_START, L_NAME_LEN, L_QOFF, L_QID, L_STATUS = range(6)
N_LMQ_FIELDS = 6
LMQ_OK = 0
LMQ_BAD_OFFSET = 1           # Long.parseLong failed: the broker's dispatcher throws (see dispatch.py)
LMQ_SKIPPED_SEPARATOR = 2    # 5.x file queues skip queue names holding the path separator (offset parsed)
LMQ_SKIPPED_SEPARATOR_BAD_OFFSET = 3   # the same, its offset one Long.parseLong refuses (a RocksDB queue parses it)
LMQ_EMPTY_NAME = 4           # an empty queue name, offset parsed: put under topic "" (light_units_put)


def light_units_put(lmq: np.ndarray) -> np.ndarray:
    """Which multi-dispatch rows (``lmq``) the consume queues put (a boolean mask): those whose offset parsed, by the
    file queues (4.9.8 and 5.x ``ConsumeQueue.multiDispatchLmqQueue``) and the RocksDB one
    (``RocksDBConsumeQueueStore.dispatchLMQ``) alike, an empty name too (``LMQ_EMPTY_NAME``: topic "" under the
    record's queue id); the RocksDB consume queue's further ones: :func:`store_format.rocksdb_cq.light_rows`."""
    status = lmq[:, L_STATUS]
    return (status == LMQ_OK) | (status == LMQ_EMPTY_NAME)


# record status
STATUS_DISPATCHED = 0        # read, size > 0: handed to the dispatchers
STATUS_SIZE_MISMATCH = 1     # totalSize differs from the length its fields give: skipped
STATUS_BELOW_ROCKSDB_START = 2   # read, not dispatched: at commitlog offset 0, where a rebuild into an empty
#                                  RocksDB consume queue starts after (store_format.rocksdb_cq)


@dataclasses.dataclass
class WalkState:
    """The reput loop's positions, relative to the segment base (see :mod:`store_format.commitlog`)."""
    bufpos: int
    reput: int
    read_size: int
    slice_size: int

    def as_array(self) -> np.ndarray:
        return np.array([self.bufpos, self.reput, self.read_size, self.slice_size, -1, 0], dtype=np.int64)

    @classmethod
    def at_slice_start(cls, pos: int, data_end: int) -> WalkState:
        return cls(pos, pos, 0, data_end - pos)


@dataclasses.dataclass
class WalkResult:
    """Columnar output of one walk over part of one segment.

    ``rec``: int64 matrix, one row per record, columns ``R_*``; ``key``: one row per index key
    (``K_*``); ``lmq``: one row per multi-dispatch unit (``L_*``); ``prop_span``: per record and
    :data:`PROPERTY_NAMES` entry, (segment position, byte length) of the value, -1 if absent.
    ``text``: bytes of every string span, as ``text[pos - text_origin]``.
    """
    rec: np.ndarray
    key: np.ndarray
    lmq: np.ndarray
    prop_span: np.ndarray
    state: WalkState
    stop: int
    text: bytes | memoryview | np.ndarray
    text_origin: int

    def without_keys(self, drop: np.ndarray) -> WalkResult:
        """This result with the index keys of the records ``drop`` selects (a boolean mask over ``rec``) taken
        out, those records staying dispatched to their queues: records ``IndexService.buildIndex`` skips (below
        the last index file's ``endPhyOffset``).  Every other record's ``R_KEY_FIRST`` moves down by the keys
        removed before it; no loop per record (a restart can leave a whole store's records below that offset)."""
        drop = drop & (self.rec[:, R_KEY_COUNT] > 0)
        if not drop.any():
            return self
        rec = self.rec.copy()
        first, count = rec[drop, R_KEY_FIRST], rec[drop, R_KEY_COUNT]
        # every key position of those records: each record's first key plus 0 .. count - 1
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        gone = np.zeros(len(self.key), dtype=bool)
        gone[np.repeat(first, count) + within] = True
        rec[drop, R_KEY_COUNT] = 0
        before = np.concatenate([[0], np.cumsum(gone)])   # keys removed before each key position
        keep = rec[:, R_KEY_COUNT] > 0
        rec[keep, R_KEY_FIRST] -= before[rec[keep, R_KEY_FIRST]]
        return dataclasses.replace(self, rec=rec, key=self.key[~gone])
