"""Byte layouts of the broker's store files, transcribed field by field.

All integers are big-endian.  Offsets of the variable parts of a commitlog record are
derived from the fixed fields before them, never typed as magic numbers.

Commitlog record  [CommitLog.calMsgLength, MessageDecoder]::

    totalSize           i32
    magicCode           i32   0xDAA320A7 (V1) | 0xDAA320AB (V2, 5.x) | 0xCBD43194 (blank)
    bodyCRC             i32
    queueId             i32
    flag                i32
    queueOffset         i64
    physicalOffset      i64
    sysFlag             i32
    bornTimestamp       i64
    bornHost            4+4 | 16+4 if sysFlag & BORNHOST_V6
    storeTimestamp      i64
    storeHost           4+4 | 16+4 if sysFlag & STOREHOST_V6
    reconsumeTimes      i32
    preparedTxOffset    i64
    bodyLength          i32, then body
    topicLength         i8 (V1) | i16 (V2), then topic (UTF-8)
    propertiesLength    i16, then properties (UTF-8, ``name\\x01value`` joined by ``\\x02``)
"""
from __future__ import annotations

import re
from typing import overload

import numpy as np


# --- Java's int
@overload
def signed32(value: int) -> int: ...
@overload
def signed32(value: np.ndarray) -> np.ndarray: ...
def signed32(value):
    """The low 32 bits of a value as the signed int Java reads (``(int)`` of a long, an unsigned
    literal): a Python int, or element-wise for an integer array.

    >>> signed32(0xDAA320A7), signed32(-1), signed32(1 << 32 | 5)
    (-626843481, -1, 5)
    """
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


# --- magic codes [MessageDecoder.MESSAGE_MAGIC_CODE(_V2), CommitLog.BLANK_MAGIC_CODE]
MAGIC_V1 = signed32(0xDAA320A7)
MAGIC_V2 = signed32(0xDAA320AB)
# the first (big-endian) byte of both message magic codes: where it is not, no record's magic is
MAGIC_HIGH_BYTE = (MAGIC_V1 >> 24) & 0xFF
assert (MAGIC_V2 >> 24) & 0xFF == MAGIC_HIGH_BYTE
MAGIC_BLANK = signed32(0xCBD43194)

# --- sysFlag bits [MessageSysFlag]
SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_TRANSACTION_MASK = 0xC
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
SYSFLAG_NEED_UNWRAP = 0x40
SYSFLAG_INNER_BATCH = 0x80

TRANSACTION_NOT = 0x0
TRANSACTION_PREPARED = 0x4
TRANSACTION_COMMIT = 0x8
TRANSACTION_ROLLBACK = 0xC

# --- fixed head of a record: field -> offset, derived from the field sizes in order
_HEAD_FIELDS = (
    ("totalSize", 4),
    ("magicCode", 4),
    ("bodyCRC", 4),
    ("queueId", 4),
    ("flag", 4),
    ("queueOffset", 8),
    ("physicalOffset", 8),
    ("sysFlag", 4),
    ("bornTimestamp", 8),
)
HEAD_FIELD_SIZES: dict[str, int] = dict(_HEAD_FIELDS)
HEAD_OFFSETS: dict[str, int] = {}
_pos = 0
for _name, _size in _HEAD_FIELDS:
    HEAD_OFFSETS[_name] = _pos
    _pos += _size
BORN_HOST_OFFSET = _pos  # 48: the first field whose position depends on sysFlag
del _pos, _name, _size

OFF_TOTAL_SIZE = HEAD_OFFSETS["totalSize"]
OFF_MAGIC = HEAD_OFFSETS["magicCode"]
OFF_BODY_CRC = HEAD_OFFSETS["bodyCRC"]
OFF_QUEUE_ID = HEAD_OFFSETS["queueId"]
OFF_FLAG = HEAD_OFFSETS["flag"]
OFF_QUEUE_OFFSET = HEAD_OFFSETS["queueOffset"]
OFF_PHYSICAL_OFFSET = HEAD_OFFSETS["physicalOffset"]
OFF_SYSFLAG = HEAD_OFFSETS["sysFlag"]
OFF_BORN_TIMESTAMP = HEAD_OFFSETS["bornTimestamp"]
TOTAL_SIZE_LEN = HEAD_FIELD_SIZES["totalSize"]
MAGIC_END = OFF_MAGIC + HEAD_FIELD_SIZES["magicCode"]  # 8: enough to tell a record from a blank

HOST_V4_LEN = 4 + 4
HOST_V6_LEN = 16 + 4
STORE_TIMESTAMP_LEN = 8
RECONSUME_TIMES_LEN = 4
PREPARED_TX_OFFSET_LEN = 8
BODY_LENGTH_LEN = 4
PROPERTIES_LENGTH_LEN = 2


def record_length(sys_flag: int, body_len: int, topic_len: int, props_len: int, topic_len_size: int = 1) -> int:
    """Structural length of a record from its own fields; mirrors ``CommitLog.calMsgLength``
    (``MessageExtEncoder.calMsgLength`` in 5.x, where V2 records have a 2-byte topic length)."""
    born = HOST_V6_LEN if sys_flag & SYSFLAG_BORNHOST_V6 else HOST_V4_LEN
    store = HOST_V6_LEN if sys_flag & SYSFLAG_STOREHOST_V6 else HOST_V4_LEN
    return (BORN_HOST_OFFSET + born + STORE_TIMESTAMP_LEN + store + RECONSUME_TIMES_LEN
            + PREPARED_TX_OFFSET_LEN + BODY_LENGTH_LEN + max(body_len, 0)
            + topic_len_size + topic_len + PROPERTIES_LENGTH_LEN + max(props_len, 0))


# --- properties string [MessageDecoder.messageProperties2String / string2messageProperties]
NAME_VALUE_SEPARATOR = "\x01"   # MessageDecoder.NAME_VALUE_SEPARATOR: between a name and its value
PROPERTY_SEPARATOR = "\x02"     # MessageDecoder.PROPERTY_SEPARATOR: after each pair (4.9.x drops the last)
# the same as byte values (ASCII: one UTF-8 byte each), for kernels scanning the encoded string; numba
# compiles module-level ints in as constants
NAME_VALUE_SEPARATOR_BYTE = ord(NAME_VALUE_SEPARATOR)
PROPERTY_SEPARATOR_BYTE = ord(PROPERTY_SEPARATOR)

# --- blank record at the end of a segment [CommitLog.DefaultAppendMessageCallback.doAppend]
END_FILE_MIN_BLANK_LENGTH = 4 + 4

# --- consume queue unit [ConsumeQueue.CQ_STORE_UNIT_SIZE]
CQ_UNIT_DTYPE = np.dtype([
    ("commitlogOffset", ">i8"),
    ("size", ">i4"),
    ("tagsCode", ">i8"),
])
CQ_UNIT_SIZE = CQ_UNIT_DTYPE.itemsize  # 20
CQ_BLANK_SIZE = 0x7FFFFFFF  # size field of a fillPreBlank unit

# --- index file [IndexHeader, IndexFile]
INDEX_HEADER_DTYPE = np.dtype([
    ("beginTimestamp", ">i8"),
    ("endTimestamp", ">i8"),
    ("beginPhyOffset", ">i8"),
    ("endPhyOffset", ">i8"),
    ("hashSlotCount", ">i4"),
    ("indexCount", ">i4"),
])
INDEX_HEADER_SIZE = INDEX_HEADER_DTYPE.itemsize  # 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_DTYPE = np.dtype([
    ("keyHash", ">i4"),
    ("commitlogOffset", ">i8"),
    ("timeDiff", ">i4"),
    ("prevIndex", ">i4"),
])
INDEX_ENTRY_SIZE = INDEX_ENTRY_DTYPE.itemsize  # 20

# --- store layout
SEGMENT_NAME_DIGITS = 20
SEGMENT_NAME_RE = re.compile(rf"^\d{{{SEGMENT_NAME_DIGITS}}}$")  # a segment or consume queue file name
CHECKPOINT_SIZE = 4096


def segment_name(offset: int) -> str:
    """20-digit zero-padded name of a commitlog segment or consume queue file [UtilAll.offset2FileName]."""
    return f"{offset:020d}"


def consume_queue_file_path(topic: str, queue_id: int, file_start: int) -> str:
    """``topic/queueId/<20-digit start>``: where a consume queue file lies under ``consumequeue/``
    [ConsumeQueue constructor: storePath/topic/queueId; MappedFileQueue names files by start]."""
    return f"{topic}/{queue_id}/{segment_name(file_start)}"


def index_file_size(max_hash_slot_num: int, max_index_num: int) -> int:
    """Size of an IndexFile [IndexFile constructor]: header, slot table, entries."""
    return INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * max_hash_slot_num + INDEX_ENTRY_SIZE * max_index_num

# --- system topics and name prefixes [TopicValidator, MixAll]
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"      # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC: delayed messages
# the same as UTF-8 bytes, for kernels comparing a record's topic (numba compiles global arrays in as constants)
SCHEDULE_TOPIC_BYTES = np.frombuffer(SCHEDULE_TOPIC.encode(), dtype=np.uint8).copy()
LMQ_PREFIX = "%LMQ%"                        # MixAll.LMQ_PREFIX: light message queues
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"        # MixAll.RETRY_GROUP_TOPIC_PREFIX
SYSTEM_TOPIC_PREFIX = "rmq_sys_"            # TopicValidator.SYSTEM_TOPIC_PREFIX

# --- index keys [IndexService.buildKey: topic + "#" + key]
INDEX_KEY_SEPARATOR = "#"
