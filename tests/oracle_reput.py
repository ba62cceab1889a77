"""A test oracle: the broker's rebuild of ``consumequeue/`` and ``index/``, written again, simply.

Independent of the project's kernels on purpose: it reads the commitlog one record at a time into
one Python object, and follows the Java line by line rather than the project's columnar design.
It imports only ``store_format.config`` (settings) and ``store_format.layout`` (magic numbers).

What it mirrors (RocketMQ 4.9.8 / 5.3.3):

* ``DefaultMessageStore.ReputMessageService.doReput``: the reput position, the slice of the segment
  holding it (``CommitLog.getData``), the loop over records with ``readSize``, ``rollNextFile`` at a
  blank record, ``reputFromOffset += size - readSize`` after an unreadable one on a master (a slave
  stops there), and in 5.x
  the ``getReputEndOffset`` checks;
* ``CommitLog.checkMessageAndReturnSize``: every read through a ``java.nio.ByteBuffer`` with its
  exceptions (all turn into "unreadable", ``-1``), the properties map, tagsCode, the delay level,
  the length check against ``calMsgLength``; 5.x adds the remaining-bytes checks, V2 records and
  ``setBatchSizeIfNeeded``;
* ``CommitLogDispatcherBuildConsumeQueue`` / ``ConsumeQueue.putMessagePositionInfo`` /
  ``fillPreBlank`` / ``MappedFileQueue.getLastMappedFile`` (files are created when asked for, even
  if the unit is then skipped), and multi-dispatch to light queues;
* ``IndexService.buildIndex`` / ``getAndCreateLastIndexFile`` / ``IndexFile.putKey`` with the header
  bytes as ``IndexHeader`` writes them through.

Model of the store the reput runs on (the project's model; the broker's recovery is not mirrored):
every segment is readable to its end, except that on 5.x the reput end offset
(``getReputEndOffset`` = the commitlog's max offset) is where the data of the last segment ends: the
position where a walk of that segment, moving as ``checkMessageAndReturnSize`` moves the buffer,
meets a blank or unreadable record.

Strings are decoded as the JDK decodes malformed UTF-8 (:func:`java_utf8_decode`), which differs
from Python's ``decode("utf-8", "replace")`` for encoded surrogates.
"""
from __future__ import annotations

import dataclasses
import os
import re
import struct
import unicodedata

from store_format.config import BrokerConfig
from store_format.layout import MAGIC_BLANK, MAGIC_V1, MAGIC_V2

__all__ = ["OracleResult", "rebuild", "java_hash", "java_split", "java_utf8_decode", "string_to_properties",
           "check_message"]

CQ_UNIT = 20
REPLACEMENT = "\ufffd"
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TRAN_NOT, TRAN_PREPARED, TRAN_COMMIT, TRAN_ROLLBACK = 0x0, 0x4, 0x8, 0xC
BORNHOST_V6 = 0x10
STOREHOST_V6 = 0x20


class JavaException(Exception):
    """Anything ``checkMessageAndReturnSize``'s ``catch (Exception e)`` would catch."""


class ReputStuck(Exception):
    """The broker's reput would retry the same offset forever (nothing more gets written)."""


# ---------------------------------------------------------------------------------------------
# Java library behaviour


def java_utf8_decode(data: bytes) -> str:
    """``new String(bytes, UTF_8)``: malformed input becomes U+FFFD as the JDK's decoder does it.

    Differs from Python's ``decode("utf-8", "replace")`` for bytes ``ED A0..BF`` (UTF-8-encoded
    surrogates, as CESU-8 writes them): the JDK reads ``ED A0 80`` as one malformed character where
    Python sees three.  Checked against JDK 17 on 60,000 random byte strings."""
    out: list[str] = []
    i, n = 0, len(data)

    def cont(b: int) -> bool:
        return (b & 0xC0) == 0x80

    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n and cont(data[i]):
                out.append(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                i += 1
            else:
                out.append(REPLACEMENT)
        elif 0xE0 <= b1 <= 0xEF:
            if i + 1 < n:
                b2, b3 = data[i], data[i + 1]
                bad_second = (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not cont(b2)
                if bad_second or not cont(b3):
                    out.append(REPLACEMENT)
                    i += 0 if bad_second else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
            else:  # truncated at the end of the input
                out.append(REPLACEMENT)
                if i < n and ((b1 == 0xE0 and (data[i] & 0xE0) == 0x80) or not cont(data[i])):
                    continue
                break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 2 < n:
                b2, b3, b4 = data[i], data[i + 1], data[i + 2]
                cp = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if cont(b2) and cont(b3) and cont(b4) and 0x10000 <= cp <= 0x10FFFF:
                    out.append(chr(cp))
                    i += 3
                    continue
                out.append(REPLACEMENT)
                if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
                        or not cont(b2)):
                    pass
                elif not cont(b3):
                    i += 1
                else:
                    i += 2
            else:  # truncated at the end of the input
                out.append(REPLACEMENT)
                if b1 > 0xF4 or (i < n and ((b1 == 0xF0 and not 0x90 <= data[i] <= 0xBF)
                                            or (b1 == 0xF4 and (data[i] & 0xF0) != 0x80) or not cont(data[i]))):
                    continue
                i += 1
                if i < n and not cont(data[i]):
                    continue
                break
        else:
            out.append(REPLACEMENT)
    return "".join(out)


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 2**32 if v >= 2**31 else v


def utf16_units(s: str) -> list[int]:
    data = s.encode("utf-16-be", "surrogatepass")
    return [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]


def java_hash(s: str) -> int:
    """``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, in int arithmetic."""
    h = 0
    for u in utf16_units(s):
        h = (31 * h + u) & 0xFFFFFFFF
    return _wrap32(h)


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``."""
    h = abs(java_hash(key))
    return 0 if h > INT_MAX else h  # Math.abs(Integer.MIN_VALUE) stays negative; the broker uses 0


def _java_digit(unit: int) -> int:
    """``Character.digit(char, 10)``: decimal digits of any script (category Nd), -1 otherwise."""
    if 0xD800 <= unit <= 0xDFFF:
        return -1
    return unicodedata.decimal(chr(unit), -1)


def java_parse(s: str, lo: int, hi: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` / ``Short.parseShort`` (radix 10) for range [lo, hi]."""
    units = utf16_units(s)
    if not units:
        raise JavaException("NumberFormatException: empty")
    i, neg = 0, False
    if units[0] < ord("0"):
        if units[0] == ord("-"):
            neg = True
        elif units[0] != ord("+"):
            raise JavaException("NumberFormatException")
        if len(units) == 1:
            raise JavaException("NumberFormatException: lone sign")
        i = 1
    value = 0
    for u in units[i:]:
        d = _java_digit(u)
        if d < 0:
            raise JavaException("NumberFormatException")
        value = value * 10 + d
        if value > hi + 1:  # keep the number small; the range check below decides
            raise JavaException("NumberFormatException: overflow")
    value = -value if neg else value
    if not lo <= value <= hi:
        raise JavaException("NumberFormatException: out of range")
    return value


def java_split(s: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal separator: trailing empty strings removed."""
    if sep not in s:
        return [s]
    parts = s.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_whitespace(unit: int) -> bool:
    """``Character.isWhitespace`` for one UTF-16 unit."""
    if unit in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F):
        return True
    if unit in (0x00A0, 0x2007, 0x202F) or 0xD800 <= unit <= 0xDFFF:
        return False
    return unicodedata.category(chr(unit)) in ("Zs", "Zl", "Zp")


def is_blank(s: str | None) -> bool:
    """``StringUtils.isBlank``."""
    return s is None or all(_java_whitespace(u) for u in utf16_units(s))


def string_to_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``.  Python indexes code points where Java indexes
    UTF-16 units; the conditions below only compare positions of the ASCII separators and test
    emptiness, which agree in both."""
    props: dict[str, str] = {}
    index, n = 0, len(text)
    while index < n:
        new_index = text.find("\x02", index)
        if new_index < 0:
            new_index = n
        if len(utf16_units(text[index:new_index])) >= 3:
            kv = text.find("\x01", index)
            if index < kv < new_index - 1:
                props[text[index:kv]] = text[kv + 1:new_index]
        index = new_index + 1
    return props


def file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: at least 20 digits (a minus sign before them if negative)."""
    return f"{offset:020d}" if offset >= 0 else "-" + f"{-offset:020d}"


def _java_rem(a: int, b: int) -> int:
    """Java's ``%``: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _java_div(a: int, b: int) -> int:
    """Java's integer ``/``: truncation toward zero."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


# ---------------------------------------------------------------------------------------------
# ByteBuffer


class ByteBuf:
    """A ``java.nio.ByteBuffer`` over ``data[0:limit]`` with its position and exceptions."""

    def __init__(self, data: bytes, limit: int) -> None:
        self.data = data
        self.limit = limit
        self.position = 0

    def remaining(self) -> int:
        return self.limit - self.position

    def _take(self, n: int) -> bytes:
        if n > self.remaining():
            raise JavaException("BufferUnderflowException")
        b = self.data[self.position:self.position + n]
        self.position += n
        return b

    def get_byte(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def get_short(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def get_int(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def get_long(self) -> int:
        return struct.unpack(">q", self._take(8))[0]

    def get_into(self, dst_len: int, length: int) -> bytes:
        """``get(byte[dst_len] dst, 0, length)``."""
        if length < 0 or length > dst_len:
            raise JavaException("IndexOutOfBoundsException")
        return self._take(length)

    def skip(self, n: int) -> None:
        """``position(position() + n)``."""
        new = self.position + n
        if new > self.limit or new < 0:
            raise JavaException("IllegalArgumentException")
        self.position = new


# ---------------------------------------------------------------------------------------------
# CommitLog.checkMessageAndReturnSize


@dataclasses.dataclass
class Dispatch:
    """``DispatchRequest``: size, success, and for a readable record what the dispatchers use."""
    msg_size: int
    success: bool
    topic: str = ""
    queue_id: int = 0
    commit_log_offset: int = 0
    tags_code: int = 0
    store_timestamp: int = 0
    consume_queue_offset: int = 0
    keys: str | None = ""
    uniq_key: str | None = None
    sys_flag: int = 0
    properties: dict[str, str] | None = None


def _cal_msg_length(sys_flag: int, body_len: int, topic_len: int, props_len: int, topic_len_size: int) -> int:
    born = 8 if sys_flag & BORNHOST_V6 == 0 else 20
    store = 8 if sys_flag & STOREHOST_V6 == 0 else 20
    return (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4 + max(body_len, 0)
            + topic_len_size + topic_len + 2 + max(props_len, 0))


def check_message(buf: ByteBuf, config: BrokerConfig) -> Dispatch:
    """One record at the buffer's position (the doReput call: no CRC check, body not read)."""
    is5 = config.is_5x
    try:
        if is5 and buf.remaining() <= 4:
            return Dispatch(-1, False)
        total = buf.get_int()
        if is5 and buf.remaining() < _wrap32(total - 4):
            return Dispatch(-1, False)
        magic = buf.get_int()
        if magic == MAGIC_V1 or (is5 and magic == MAGIC_V2):
            topic_len_size = 2 if magic == MAGIC_V2 else 1
        elif magic == MAGIC_BLANK:
            return Dispatch(0, True)
        else:
            return Dispatch(-1, False)
        if total < 0:
            raise JavaException("NegativeArraySizeException")  # new byte[totalSize]
        buf.get_int()  # bodyCRC
        queue_id = buf.get_int()
        buf.get_int()  # flag
        queue_offset = buf.get_long()
        physic_offset = buf.get_long()
        sys_flag = buf.get_int()
        buf.get_long()  # bornTimestamp
        buf.get_into(total, 8 if sys_flag & BORNHOST_V6 == 0 else 20)
        store_timestamp = buf.get_long()
        buf.get_into(total, 8 if sys_flag & STOREHOST_V6 == 0 else 20)
        buf.get_int()  # reconsumeTimes
        buf.get_long()  # preparedTransactionOffset
        body_len = buf.get_int()
        if body_len > 0:
            buf.skip(body_len)
        topic_len = buf.get_byte() if topic_len_size == 1 else buf.get_short()
        topic = java_utf8_decode(buf.get_into(total, topic_len))
        tags_code = 0
        keys: str | None = ""
        uniq_key = None
        props_len = buf.get_short()
        props = None
        if props_len > 0:
            props = string_to_properties(java_utf8_decode(buf.get_into(total, props_len)))
            keys = props.get("KEYS")
            uniq_key = props.get("UNIQ_KEY")
            tags = props.get("TAGS")
            if tags:
                tags_code = java_hash(tags)
            t = props.get("DELAY")
            if topic == SCHEDULE_TOPIC and t is not None:
                level = java_parse(t, INT_MIN, INT_MAX)
                levels = config.delay_levels_ms
                if level > len(levels):
                    level = len(levels)
                if level > 0:
                    tags_code = levels[level - 1] + store_timestamp
        if total != _cal_msg_length(sys_flag, body_len, topic_len, props_len, topic_len_size):
            return Dispatch(total, False)
        if is5 and props is not None and "INNER_NUM" in props and "INNER_BASE" in props:
            java_parse(props["INNER_BASE"], LONG_MIN, LONG_MAX)  # setBatchSizeIfNeeded
            java_parse(props["INNER_NUM"], -(2**15), 2**15 - 1)
        return Dispatch(total, True, topic, queue_id, physic_offset, tags_code, store_timestamp, queue_offset, keys,
                        uniq_key, sys_flag, props)
    except JavaException:
        return Dispatch(-1, False)


# ---------------------------------------------------------------------------------------------
# consume queues


class _CqFile:
    def __init__(self, start: int, size: int, first: bool) -> None:
        self.start = start
        self.data = bytearray(size)
        self.wrote = 0
        self.first_create_in_queue = first

    def append(self, unit: bytes) -> bool:
        if self.wrote + len(unit) > len(self.data):
            return False
        self.data[self.wrote:self.wrote + len(unit)] = unit
        self.wrote += len(unit)
        return True


class ConsumeQueue:
    """One ``topic/queueId`` queue: ``putMessagePositionInfo`` on a list of mapped files."""

    def __init__(self, file_size: int) -> None:
        self.file_size = file_size
        self.files: list[_CqFile] = []
        self.max_physic_offset = -1

    def _last_mapped_file(self, start_offset: int) -> _CqFile:
        last = self.files[-1] if self.files else None
        create = -1
        if last is None:
            create = start_offset - _java_rem(start_offset, self.file_size)
        elif last.wrote == len(last.data):
            create = last.start + self.file_size
        if create != -1:
            last = _CqFile(create, self.file_size, first=not self.files)
            self.files.append(last)
        return last  # type: ignore[return-value]

    def put(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        if offset + size <= self.max_physic_offset:
            return True  # "build consume queue repeatedly"
        unit = struct.pack(">qiq", offset, _wrap32(size), tags_code)
        expect = cq_offset * CQ_UNIT
        f = self._last_mapped_file(expect)
        if f.first_create_in_queue and cq_offset != 0 and f.wrote == 0:
            blank = struct.pack(">qiq", 0, INT_MAX, 0)
            for _ in range(0, _java_rem(expect, self.file_size), CQ_UNIT):
                f.append(blank)
        if cq_offset != 0:
            if expect < f.wrote + f.start:
                return True
        self.max_physic_offset = offset + size
        return f.append(unit)


# ---------------------------------------------------------------------------------------------
# index files


class IndexFile:
    """``IndexFile`` + ``IndexHeader``: the header lives in memory and is written through to the
    file bytes by each setter, as the broker's mapped buffer is."""

    HEADER = struct.Struct(">qqqqii")

    def __init__(self, slots: int, num: int, end_phy_offset: int, end_timestamp: int) -> None:
        self.slots = slots
        self.num = num
        self.data = bytearray(40 + 4 * slots + 20 * num)
        self.begin_timestamp = self.end_timestamp = self.begin_phy_offset = self.end_phy_offset = 0
        self.hash_slot_count = 0
        self.index_count = 1  # in memory only until the first incIndexCount
        if end_phy_offset > 0:
            self._set(16, ">q", end_phy_offset)
            self._set(24, ">q", end_phy_offset)
            self.begin_phy_offset = self.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            self._set(0, ">q", end_timestamp)
            self._set(8, ">q", end_timestamp)
            self.begin_timestamp = self.end_timestamp = end_timestamp

    def _set(self, pos: int, fmt: str, value: int) -> None:
        struct.pack_into(fmt, self.data, pos, value)

    def flush(self) -> None:
        """``IndexFile.flush`` → ``IndexHeader.updateByteBuffer``: the in-memory header to the file."""
        self.HEADER.pack_into(self.data, 0, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset,
                              self.end_phy_offset, self.hash_slot_count, self.index_count)

    def is_write_full(self) -> bool:
        return self.index_count >= self.num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        if self.index_count >= self.num:
            return False
        key_hash = index_key_hash(key)
        slot_pos = key_hash % self.slots
        abs_slot = 40 + slot_pos * 4
        slot_value = struct.unpack_from(">i", self.data, abs_slot)[0]
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        time_diff = _java_div(store_timestamp - self.begin_timestamp, 1000)
        if self.begin_timestamp <= 0:
            time_diff = 0
        elif time_diff > INT_MAX:
            time_diff = INT_MAX
        elif time_diff < 0:
            time_diff = 0
        abs_index = 40 + self.slots * 4 + self.index_count * 20
        struct.pack_into(">iqii", self.data, abs_index, key_hash, phy_offset, time_diff, slot_value)
        self._set(abs_slot, ">i", self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self._set(16, ">q", phy_offset)
            self.begin_timestamp = store_timestamp
            self._set(0, ">q", store_timestamp)
        if slot_value == 0:
            self.hash_slot_count += 1
            self._set(32, ">i", self.hash_slot_count)
        self.index_count += 1
        self._set(36, ">i", self.index_count)
        self.end_phy_offset = phy_offset
        self._set(24, ">q", phy_offset)
        self.end_timestamp = store_timestamp
        self._set(8, ">q", store_timestamp)
        return True


class IndexService:
    def __init__(self, config: BrokerConfig) -> None:
        self.slots = config.maxHashSlotNum
        self.num = config.maxIndexNum
        self.files: list[IndexFile] = []

    def _last_file(self) -> IndexFile:
        """``getAndCreateLastIndexFile``."""
        if self.files and not self.files[-1].is_write_full():
            return self.files[-1]
        end_phy = end_ts = 0
        if self.files:
            end_phy, end_ts = self.files[-1].end_phy_offset, self.files[-1].end_timestamp
        f = IndexFile(self.slots, self.num, end_phy, end_ts)
        self.files.append(f)
        return f

    def _put(self, f: IndexFile, req: Dispatch, key: str) -> IndexFile:
        ok = f.put_key(key, req.commit_log_offset, req.store_timestamp)
        while not ok:
            f = self._last_file()
            ok = f.put_key(key, req.commit_log_offset, req.store_timestamp)
        return f

    def build_index(self, req: Dispatch) -> None:
        f = self._last_file()
        if req.commit_log_offset < f.end_phy_offset:
            return
        if req.sys_flag & 0xC == TRAN_ROLLBACK:
            return
        if req.uniq_key is not None:
            f = self._put(f, req, req.topic + "#" + req.uniq_key)
        if req.keys:
            for key in java_split(req.keys, " "):
                if key:
                    f = self._put(f, req, req.topic + "#" + key)


# ---------------------------------------------------------------------------------------------
# the store and the reput


@dataclasses.dataclass
class OracleResult:
    consumequeue: dict[str, bytes]   # "topic/queueId/fileName" -> bytes
    index: list[bytes]               # in creation order
    dispatched: int
    stopped: str                     # why the reput stopped


class _Store:
    """The dispatchers' state: consume queues by (topic, queueId), and the index service."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.cq_size = -(-config.mappedFileSizeConsumeQueue // CQ_UNIT) * CQ_UNIT
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.index = IndexService(config)
        self.dispatched = 0

    def queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        q = self.queues.get((topic, queue_id))
        if q is None:
            q = self.queues[(topic, queue_id)] = ConsumeQueue(self.cq_size)
        return q

    def dispatch(self, req: Dispatch) -> None:
        """``doDispatch``: consume queue dispatcher, then index dispatcher."""
        self.dispatched += 1
        tran = req.sys_flag & 0xC
        if tran in (TRAN_NOT, TRAN_COMMIT):
            multi = self._check_multi_dispatch(req)
            self.queue(req.topic, req.queue_id).put(req.commit_log_offset, req.msg_size, req.tags_code,
                                                    req.consume_queue_offset)
            if multi:
                self._multi_dispatch(req)
        if self.config.messageIndexEnable:
            self.index.build_index(req)

    def _check_multi_dispatch(self, req: Dispatch) -> bool:
        cfg = self.config
        if not cfg.enableMultiDispatch:
            return False
        if cfg.is_5x and (req.topic.startswith("%RETRY%") or req.topic.startswith("rmq_sys_")
                          or req.topic == SCHEDULE_TOPIC):
            return False
        props = req.properties
        if not props:
            return False
        return not is_blank(props.get("INNER_MULTI_DISPATCH")) and not is_blank(props.get("INNER_MULTI_QUEUE_OFFSET"))

    def _multi_dispatch(self, req: Dispatch) -> None:
        props = req.properties or {}
        queues = java_split(props["INNER_MULTI_DISPATCH"], ",")
        offsets = java_split(props["INNER_MULTI_QUEUE_OFFSET"], ",")
        if len(queues) != len(offsets):
            return
        for name, off in zip(queues, offsets):
            if self.config.is_5x and "/" in name:
                continue
            try:
                queue_offset = java_parse(off, LONG_MIN, LONG_MAX)
            except JavaException:
                raise ReputStuck(f"Long.parseLong({off!r}) throws in the dispatcher") from None
            qid = 0 if self.config.enableLmq and name.startswith("%LMQ%") else req.queue_id
            self.queue(name, qid).put(req.commit_log_offset, req.msg_size, req.tags_code, queue_offset)


def _segments(store_dir: str, file_size: int) -> list[tuple[int, bytes]]:
    cdir = os.path.join(store_dir, "commitlog")
    names = sorted(n for n in os.listdir(cdir) if re.fullmatch(r"\d{20}", n))
    out = []
    for n in names:
        with open(os.path.join(cdir, n), "rb") as f:
            data = f.read()
        if len(data) != file_size:
            raise ValueError(f"segment {n} is {len(data)} bytes, not {file_size}")
        out.append((int(n), data))
    return out


def data_end(data: bytes, config: BrokerConfig) -> int:
    """Where the data of a segment ends: walk it as ``checkMessageAndReturnSize`` moves the buffer
    until a blank or unreadable record (the 5.x reput end offset of the last segment)."""
    buf = ByteBuf(data, len(data))
    while True:
        start = buf.position
        req = check_message(buf, config)
        if req.msg_size <= 0:
            return start


def rebuild(store_dir: str, config: BrokerConfig, reput_end_offset: int | None = None) -> OracleResult:
    """What the reput writes over the store's commitlog.

    Args:
        store_dir: the store root (holds ``commitlog/``).
        config: broker settings (sizes, delay levels, multi-dispatch, 4.9 or 5.x).
        reput_end_offset: 5.x only: the reput end offset; default: see the module docstring.
    """
    file_size = config.mappedFileSizeCommitLog
    segs = _segments(store_dir, file_size)
    store = _Store(config)
    read_position = {base: file_size for base, _ in segs}
    if config.is_5x and segs:
        last_base, last_data = segs[-1]
        end = reput_end_offset if reput_end_offset is not None else last_base + data_end(last_data, config)
        read_position[last_base] = end - last_base
    else:
        end = segs[-1][0] + file_size if segs else 0
    by_base = dict(segs)
    reput = segs[0][0] if segs else 0
    stopped = "end of commitlog"
    try:
        while reput < end:  # isCommitLogAvailable
            base = reput - _java_rem(reput, file_size)
            if base not in by_base:
                stopped = "no segment at the reput offset"
                break
            pos = _java_rem(reput, file_size)
            limit = read_position[base]
            if not 0 <= pos < limit:
                stopped = "reput offset past the readable data"
                break
            before = reput
            buf = ByteBuf(by_base[base][pos:limit], limit - pos)
            slice_size = limit - pos
            reput = base + pos  # result.getStartOffset()
            read_size = 0
            do_next = True
            while read_size < slice_size and do_next and (not config.is_5x or reput < end):
                req = check_message(buf, config)
                size = req.msg_size
                if config.is_5x and reput + size > end:
                    raise ReputStuck("record runs past the reput end offset")
                if req.success:
                    if size > 0:
                        store.dispatch(req)
                        reput += size
                        read_size += size
                    elif size == 0:
                        reput = reput + file_size - _java_rem(reput, file_size)  # rollNextFile
                        read_size = slice_size
                else:
                    if size > 0:
                        reput += size  # length mismatch: skip this record only
                    else:
                        do_next = False
                        if config.brokerId != 0:
                            raise ReputStuck("unreadable record: a slave's reput waits there")
                        reput += slice_size - read_size  # master: skip the rest of the slice
            if reput == before:
                stopped = "no progress"
                break
    except ReputStuck as e:
        stopped = str(e)
    if config.brokerVersion == "5":
        # 5.x DefaultMessageStore.shutdown → IndexService.shutdown → IndexFile.shutdown → flush
        # (4.9.x's IndexService.shutdown does nothing)
        for f in store.index.files:
            f.flush()
    cq: dict[str, bytes] = {}
    for (topic, qid), q in store.queues.items():
        for f in q.files:
            cq[f"{topic}/{qid}/{file_name(f.start)}"] = bytes(f.data)
    index = [bytes(f.data) for f in store.index.files] if config.messageIndexEnable else []
    return OracleResult(cq, index, store.dispatched, stopped)
