"""A commitlog writer that lays records out as the broker's append does (sample data, tests, benchmarks).

Mirrors ``CommitLog.DefaultAppendMessageCallback.doAppend`` (4.9.x) and ``MessageExtEncoder.encode`` +
``doAppend`` (5.x); the record layout is the one in :mod:`store_format.layout`:

* segments are files of exactly ``mappedFileSizeCommitLog`` bytes named by their 20-digit base offset;
* a record goes at the write position unless ``msgLen + 8 > space left in the segment``
  (``END_FILE_MIN_BLANK_LENGTH``); then a blank record ``[space left i32][0xCBD43194 i32]`` is written
  there, the rest of the segment stays zero, and the record opens the next segment;
* ``physicalOffset`` is the record's own global offset;
* ``queueOffset`` comes from a per ``topic``/``queueId`` counter (``CommitLog.topicQueueTable``) that
  only non-transactional and committed messages advance; prepared and rolled-back messages store 0;
* ``bodyCRC`` is ``UtilAll.crc32`` of the body (:mod:`store_format.crc`);
* properties are ``MessageDecoder.messageProperties2String``: ``name\\x01value`` joined by ``\\x02``;
  4.9.x deletes the last separator, 5.x keeps a trailing ``\\x02``;
* magic V1 (1-byte topic length), or V2 (2-byte topic length) when asked or, on 5.x, when the topic
  is longer than 127 bytes (``CommitLog`` with ``autoMessageVersionOnTopicLen``);
* the born/store hosts are 4+4 or 16+4 bytes; the sysFlag bits 0x10/0x20 say which.

The writer takes whole columns and lays a batch out with two numba passes (positions, then bytes), so
it writes gigabytes at disk speed; :meth:`CommitLogWriter.append` is a one-message convenience.

The corruption helpers at the end patch a written store in place, for tests.

Long module: a writer of every record feature (V1/V2, IPv6, transactions, delays, batches,
corruptions) for samples and tests.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numba
import numpy as np

from .config import BrokerConfig
from .crc import body_crc_spans
from .layout import (
    BODY_LENGTH_LEN,
    BORN_HOST_OFFSET,
    END_FILE_MIN_BLANK_LENGTH,
    HEAD_FIELD_SIZES,
    HEAD_OFFSETS,
    HOST_V4_LEN,
    HOST_V6_LEN,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    NAME_VALUE_SEPARATOR,
    OFF_BODY_CRC,
    OFF_BORN_TIMESTAMP,
    OFF_FLAG,
    OFF_MAGIC,
    OFF_PHYSICAL_OFFSET,
    OFF_QUEUE_ID,
    OFF_QUEUE_OFFSET,
    OFF_SYSFLAG,
    OFF_TOTAL_SIZE,
    PREPARED_TX_OFFSET_LEN,
    PROPERTIES_LENGTH_LEN,
    PROPERTY_SEPARATOR,
    RECONSUME_TIMES_LEN,
    SEGMENT_NAME_RE,
    STORE_TIMESTAMP_LEN,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT,
    segment_name,
    signed32,
)
from .msgid import host_to_bytes

__all__ = [
    "AUTO",
    "CommitLogWriter",
    "BatchResult",
    "Ragged",
    "Spans",
    "Hosts",
    "encode_properties",
    "read_record_head",
    "flip_body_byte",
    "set_magic_code",
    "set_total_size",
    "set_head_field",
]

AUTO = np.iinfo(np.int64).min  # queue_offset value meaning "assign from the topic/queue counter"

MAX_V1_TOPIC_LEN = 127         # Byte.MAX_VALUE
MAX_V2_TOPIC_LEN = 32767       # Short.MAX_VALUE
MAX_PROPERTIES_LEN = 32767     # Short.MAX_VALUE (PROPERTIES_SIZE_EXCEEDED)

DEFAULT_BORN_HOST = "10.0.0.1:50000"
DEFAULT_STORE_HOST = "10.0.0.100:10911"


# Offsets of the variable part of a record, in the order the encoder writes it, as functions of the
# host lengths; derived from the layout, never typed as numbers.
_AFTER_BORN_HOST = STORE_TIMESTAMP_LEN  # storeTimestamp follows the born host
_AFTER_STORE_HOST = RECONSUME_TIMES_LEN + PREPARED_TX_OFFSET_LEN  # then reconsumeTimes, preparedTxOffset


# ---------------------------------------------------------------------------------------------
# columns


@dataclasses.dataclass
class Ragged:
    """A column of byte strings: ``data[offsets[i]:offsets[i + 1]]`` is item ``i``."""
    data: np.ndarray     # uint8
    offsets: np.ndarray  # int64, len n + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def item(self, i: int) -> bytes:
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    @classmethod
    def from_list(cls, items: Iterable[bytes | str | None]) -> Ragged:
        encoded = [b"" if x is None else (x.encode("utf-8") if isinstance(x, str) else bytes(x)) for x in items]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        if encoded:
            np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)


@dataclasses.dataclass
class Spans:
    """A column of byte strings as spans of one buffer: item ``i`` is
    ``data[starts[i]:starts[i] + lens[i]]``.  Spans may repeat, so a dictionary-encoded column (a
    pool of bodies and an index per record) costs no copy."""
    data: np.ndarray    # uint8
    starts: np.ndarray  # int64
    lens: np.ndarray    # int64

    def __len__(self) -> int:
        return len(self.starts)


@dataclasses.dataclass
class Hosts:
    """A column of raw hosts: row ``i`` of ``matrix`` holds ``lens[i]`` (8 or 20) bytes of
    address + i32 port, left-aligned in 20 bytes."""
    matrix: np.ndarray  # (n, 20) uint8
    lens: np.ndarray    # int64, 8 or 20

    def __len__(self) -> int:
        return len(self.lens)


def encode_properties(properties: Mapping[str, str] | None, broker_version: str = "4") -> bytes:
    """The properties string of a record [MessageDecoder.messageProperties2String].

    Pairs whose value is None are left out, as the broker does.  4.9.x deletes the last separator;
    5.x leaves a trailing ``\\x02``.
    """
    if not properties:
        return b""
    parts = [f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items() if v is not None]
    text = "".join(parts)
    if broker_version != "5" and text:
        text = text[:-1]
    return text.encode("utf-8")


def _is_scalar_bytes(x: Any) -> bool:
    return isinstance(x, (bytes, bytearray, memoryview, str))


def _n_of(value: Any) -> int | None:
    """Length of a column argument, None for a scalar to broadcast."""
    if value is None or _is_scalar_bytes(value) or isinstance(value, (int, np.integer, dict)):
        return None
    if isinstance(value, tuple):
        if len(value) == 2 and isinstance(value[0], np.ndarray) and isinstance(value[1], np.ndarray):
            return len(value[1]) - 1  # (data, offsets) of a ragged column
        return None  # a host as (address, port)
    if isinstance(value, (Ragged, Spans, Hosts)):
        return len(value)
    if isinstance(value, np.ndarray):
        return None if value.ndim == 0 else len(value)
    return len(value)


def _bytes_col(value: Any, n: int, name: str, *, props_version: str | None = None) -> Spans:
    if value is None:
        return Spans(np.zeros(1, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64))
    if isinstance(value, Spans):
        if len(value) != n:
            raise ValueError(f"{name}: {len(value)} values for {n} records")
        return Spans(np.ascontiguousarray(value.data, dtype=np.uint8),
                     np.ascontiguousarray(value.starts, dtype=np.int64),
                     np.ascontiguousarray(value.lens, dtype=np.int64))
    if isinstance(value, dict) and props_version is not None:
        value = encode_properties(value, props_version)
    if _is_scalar_bytes(value):
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return Spans(np.frombuffer(raw or b"\0", dtype=np.uint8), np.zeros(n, np.int64),
                    np.full(n, len(raw), np.int64))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], np.ndarray):
        value = Ragged(np.asarray(value[0], dtype=np.uint8), np.asarray(value[1], dtype=np.int64))
    if isinstance(value, Ragged):
        off = np.asarray(value.offsets, dtype=np.int64)
        return Spans(np.ascontiguousarray(value.data, dtype=np.uint8), off[:-1].copy(), np.diff(off))
    if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 2:
        rows, width = value.shape
        return Spans(np.ascontiguousarray(value).ravel(), np.arange(rows, dtype=np.int64) * width,
                    np.full(rows, width, np.int64))
    items = list(value)
    if props_version is not None:
        items = [encode_properties(x, props_version) if isinstance(x, dict) else x for x in items]
    r = Ragged.from_list(items)
    return Spans(r.data if len(r.data) else np.zeros(1, np.uint8), r.offsets[:-1].copy(), np.diff(r.offsets))


def _int_col(value: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(0 if value is None else value, dtype=np.int64)
    if arr.ndim == 0:
        return np.full(n, int(arr), dtype=np.int64)
    if len(arr) != n:
        raise ValueError(f"{name}: {len(arr)} values for {n} records")
    return np.ascontiguousarray(arr)


def _host_col(value: Any, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 20)`` uint8 host bytes (left-aligned) and their lengths (8 or 20)."""
    if isinstance(value, Hosts):
        if len(value) != n or value.matrix.shape != (n, HOST_V6_LEN):
            raise ValueError(f"{name}: expected {n} hosts in an (n, 20) matrix, got {value.matrix.shape}")
        if not np.isin(value.lens, (HOST_V4_LEN, HOST_V6_LEN)).all():
            raise ValueError(f"{name}: host lengths must be 8 or 20")
        return np.ascontiguousarray(value.matrix, dtype=np.uint8), np.asarray(value.lens, dtype=np.int64)
    if isinstance(value, np.ndarray) and value.ndim == 2:
        if value.shape[1] not in (HOST_V4_LEN, HOST_V6_LEN) or len(value) != n:
            raise ValueError(f"{name}: expected an (n, 8) or (n, 20) uint8 matrix, got {value.shape}")
        out = np.zeros((n, HOST_V6_LEN), dtype=np.uint8)
        out[:, :value.shape[1]] = value
        return out, np.full(n, value.shape[1], np.int64)
    if _is_scalar_bytes(value) or isinstance(value, tuple):
        raw = host_to_bytes(value)
        out = np.zeros((n, HOST_V6_LEN), dtype=np.uint8)
        out[:, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        return out, np.full(n, len(raw), np.int64)
    items = list(value)
    if len(items) != n:
        raise ValueError(f"{name}: {len(items)} hosts for {n} records")
    cache: dict[object, bytes] = {}
    out = np.zeros((n, HOST_V6_LEN), dtype=np.uint8)
    lens = np.empty(n, dtype=np.int64)
    for i, h in enumerate(items):
        key = h if isinstance(h, (str, bytes, tuple)) else bytes(h)
        known = cache.get(key)
        raw = known if known is not None else cache.setdefault(key, host_to_bytes(h))
        out[i, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        lens[i] = len(raw)
    return out, lens


# ---------------------------------------------------------------------------------------------
# kernels


@numba.njit(cache=True, nogil=True)
def _place(total, file_size, cur, rec_off, blank_off, blank_size):
    """Global offset of each record from write position ``cur``, with the blank records the broker
    writes where a record does not fit the rest of its segment.  Returns ``(cur, n_blanks)``."""
    nb = 0
    for i in range(total.shape[0]):
        space = file_size - cur % file_size
        if total[i] + END_FILE_MIN_BLANK_LENGTH > space:  # msgLen + END_FILE_MIN_BLANK_LENGTH > maxBlank
            blank_off[nb] = cur
            blank_size[nb] = space
            nb += 1
            cur += space
        rec_off[i] = cur
        cur += total[i]
    return cur, nb


@numba.njit(cache=True, nogil=True)
def _assign_queue_offsets(group, counts, zero, counters, qoff):
    """Topic/queue counter values for records that take one; prepared/rolled-back records get 0."""
    for i in range(group.shape[0]):
        if counts[i]:
            qoff[i] = counters[group[i]]
            counters[group[i]] += 1
        elif zero[i]:
            qoff[i] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def _put32(out, p, v):
    out[p] = (v >> 24) & 0xFF
    out[p + 1] = (v >> 16) & 0xFF
    out[p + 2] = (v >> 8) & 0xFF
    out[p + 3] = v & 0xFF


@numba.njit(cache=True, nogil=True, inline="always")
def _put64(out, p, v):
    _put32(out, p, (v >> 32) & 0xFFFFFFFF)
    _put32(out, p + 4, v & 0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, inline="always")
def _copy(out, p, src, start, length):
    out[p:p + length] = src[start:start + length]


@numba.njit(cache=True, nogil=True)
def _encode(out, base, rec_off, total, magic, crc, qid, flag, qoff, sysflag, born_ts, born_host, born_len,
            store_ts, store_host, store_len, reconsume, prep, body_data, body_start, body_len,
            topic_data, topic_start, topic_len, topic_len_size, props_data, props_start, props_len,
            blank_off, blank_size, n_blank):
    """Write each record's bytes at ``rec_off[i] - base`` in ``out`` (field order of the layout), and
    each blank record followed by zeros to its segment's end (``out`` is reused, not zeroed)."""
    for b in range(n_blank):
        p = blank_off[b] - base
        _put32(out, p + OFF_TOTAL_SIZE, blank_size[b])
        _put32(out, p + OFF_MAGIC, MAGIC_BLANK)
        for j in range(p + END_FILE_MIN_BLANK_LENGTH, p + blank_size[b]):
            out[j] = 0
    for i in range(rec_off.shape[0]):
        p = rec_off[i] - base
        _put32(out, p + OFF_TOTAL_SIZE, total[i])
        _put32(out, p + OFF_MAGIC, magic[i])
        _put32(out, p + OFF_BODY_CRC, crc[i])
        _put32(out, p + OFF_QUEUE_ID, qid[i])
        _put32(out, p + OFF_FLAG, flag[i])
        _put64(out, p + OFF_QUEUE_OFFSET, qoff[i])
        _put64(out, p + OFF_PHYSICAL_OFFSET, rec_off[i])
        _put32(out, p + OFF_SYSFLAG, sysflag[i])
        _put64(out, p + OFF_BORN_TIMESTAMP, born_ts[i])
        q = p + BORN_HOST_OFFSET
        _copy(out, q, born_host[i], 0, born_len[i])
        q += born_len[i]
        _put64(out, q, store_ts[i])
        q += STORE_TIMESTAMP_LEN
        _copy(out, q, store_host[i], 0, store_len[i])
        q += store_len[i]
        _put32(out, q, reconsume[i])
        q += RECONSUME_TIMES_LEN
        _put64(out, q, prep[i])
        q += PREPARED_TX_OFFSET_LEN
        _put32(out, q, body_len[i])
        q += BODY_LENGTH_LEN
        _copy(out, q, body_data, body_start[i], body_len[i])
        q += body_len[i]
        if topic_len_size[i] == 2:
            out[q] = (topic_len[i] >> 8) & 0xFF
            out[q + 1] = topic_len[i] & 0xFF
        else:
            out[q] = topic_len[i] & 0xFF
        q += topic_len_size[i]
        _copy(out, q, topic_data, topic_start[i], topic_len[i])
        q += topic_len[i]
        out[q] = (props_len[i] >> 8) & 0xFF
        out[q + 1] = props_len[i] & 0xFF
        q += PROPERTIES_LENGTH_LEN
        _copy(out, q, props_data, props_start[i], props_len[i])


# ---------------------------------------------------------------------------------------------
# the writer


@dataclasses.dataclass
class BatchResult:
    """Where a batch went: per record, its commitlog offset, total size and queue offset."""
    offsets: np.ndarray
    sizes: np.ndarray
    queue_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)


class CommitLogWriter:
    """Writes ``root/commitlog/`` segments as a broker appends messages.

    Args:
        root: store root; segments go to ``root/commitlog/``.
        config: broker settings: the segment size and, unless ``broker_version`` is given, which
            broker line's encoding to follow (``brokerVersion``).
        start_offset: commitlog offset of the first record, a multiple of the segment size (a store
            whose older segments expired starts above 0).
        broker_version: ``"4"`` (4.9.x) or ``"5"`` (5.x).
        queue_offset_base: first queue offset of every queue, or a mapping
            ``(topic, queueId) -> first offset`` (others start at 0).
        overwrite: remove segment files already in ``root/commitlog/`` instead of refusing.

    Example:
        >>> with CommitLogWriter(tmp, BrokerConfig(mappedFileSizeCommitLog=1 << 20)) as w:  # doctest: +SKIP
        ...     w.append("TopicA", 0, b"hello", {"TAGS": "t", "KEYS": "k1 k2"}, store_timestamp=1)
        (0, 119)
    """

    def __init__(self, root: str | os.PathLike, config: BrokerConfig | None = None, *, start_offset: int = 0,
                 broker_version: str | None = None, queue_offset_base: int | Mapping[tuple[str, int], int] = 0,
                 overwrite: bool = False) -> None:
        config = config or BrokerConfig()
        self.file_size = int(config.mappedFileSizeCommitLog)
        self.broker_version = broker_version or ("5" if config.is_5x else "4")   # 5.5.1 encodes single records as 5.3.3
        if self.broker_version not in ("4", "5"):
            raise ValueError(f"broker_version must be '4' or '5', got {self.broker_version!r}")
        if start_offset < 0 or start_offset % self.file_size:
            raise ValueError(f"start_offset {start_offset} must be a non-negative multiple of the segment size "
                             f"{self.file_size}")
        self.dir = os.path.join(os.fspath(root), "commitlog")
        os.makedirs(self.dir, exist_ok=True)
        existing = sorted(f for f in os.listdir(self.dir) if SEGMENT_NAME_RE.match(f))
        if existing:
            if not overwrite:
                raise FileExistsError(f"{self.dir} already holds segments ({existing[0]} ...); pass overwrite=True")
            for f in existing:
                os.remove(os.path.join(self.dir, f))
        self.start_offset = int(start_offset)
        self._cur = int(start_offset)
        self._base = queue_offset_base
        self._counters: dict[tuple[bytes, int], int] = {}
        self._fd: int | None = None
        self._fd_base = -1
        self._segments: list[int] = []
        self._buf: np.ndarray | None = None
        self.records = 0
        self.closed = False

    # -- positions
    @property
    def offset(self) -> int:
        """Commitlog offset where the next record would start (before any blank)."""
        return self._cur

    @property
    def segments(self) -> list[str]:
        """Names of the segments written so far."""
        return [segment_name(b) for b in self._segments]

    def queue_offset(self, topic: str | bytes, queue_id: int) -> int:
        """Next queue offset the counter of ``topic``/``queue_id`` hands out."""
        key = (topic.encode("utf-8") if isinstance(topic, str) else bytes(topic), int(queue_id))
        return self._counters.get(key, self._first_offset(key))

    def _first_offset(self, key: tuple[bytes, int]) -> int:
        if isinstance(self._base, Mapping):
            return int(self._base.get((key[0].decode("utf-8", "replace"), key[1]), 0))
        return int(self._base)

    # -- writing
    def write_batch(self, *, topic: Any, queue_id: Any = 0, body: Any = b"", properties: Any = None,
                    sys_flag: Any = 0, flag: Any = 0, born_timestamp: Any = None, store_timestamp: Any = None,
                    born_host: Any = DEFAULT_BORN_HOST, store_host: Any = DEFAULT_STORE_HOST,
                    reconsume_times: Any = 0, prepared_tx_offset: Any = 0, prepared_tx_ref: Any = None,
                    queue_offset: Any = None, body_crc: Any = None, magic_v2: Any = None,
                    count: int | None = None) -> BatchResult:
        """Append a batch of records, given as columns.

        Every argument is either one value for all records or one value per record.

        Args:
            topic: topic names (str/bytes), or ``(table, ids)``: a list of names and an int array.
            queue_id: queue ids.
            body: bodies: bytes, a list of bytes, an ``(n, width)`` uint8 matrix, a :class:`Ragged`
                or :class:`Spans`.
            properties: dicts (encoded for the broker version), already encoded strings/bytes, or a
                :class:`Ragged`/:class:`Spans` of encoded properties.
            sys_flag: sysFlag; the host bits 0x10/0x20 are set from the hosts given.
            born_timestamp / store_timestamp: ms; store defaults to now, born to store.
            born_host / store_host: ``"a.b.c.d:port"``, ``"[v6]:port"``, raw 8/20 bytes, a list of
                those, an ``(n, 8)``/``(n, 20)`` uint8 matrix, or :class:`Hosts`.
            prepared_tx_offset: the preparedTransactionOffset field.
            prepared_tx_ref: per record, the index in this batch of the record whose commitlog
                offset goes into preparedTransactionOffset (-1: keep ``prepared_tx_offset``).
            queue_offset: None to take every record's offset from its queue counter, or offsets to
                store as given, :data:`AUTO` where the counter should decide.  Given offsets do not
                move the counters.
            body_crc: the bodyCRC field; computed from the bodies when None.
            magic_v2: per record, True for a V2 record; None: V2 exactly for topics over 127 bytes
                on 5.x.
            count: number of records, when every argument is a single value.
        Returns:
            A :class:`BatchResult`.
        Raises:
            ValueError: a topic, body or properties too long for the record format, a record larger
                than a segment, or columns of different lengths.
        """
        if self.closed:
            raise ValueError("writer is closed")
        # -- number of records
        topic_table: list[bytes] | None = None
        if isinstance(topic, tuple) and len(topic) == 2 and not _is_scalar_bytes(topic[0]):
            topic_table = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in topic[0]]
            topic_ids = np.asarray(topic[1], dtype=np.int64)
            topic_arg: Any = topic_ids
        else:
            topic_arg = topic
        lengths = {k: m for k, m in (("topic", _n_of(topic_arg)), ("queue_id", _n_of(queue_id)),
                                     ("body", _n_of(body)), ("properties", _n_of(properties)),
                                     ("sys_flag", _n_of(sys_flag)), ("store_timestamp", _n_of(store_timestamp)),
                                     ("queue_offset", _n_of(queue_offset))) if m is not None}
        sizes_seen = set(lengths.values())
        if count is not None:
            sizes_seen.add(int(count))
        if len(sizes_seen) > 1:
            raise ValueError(f"columns of different lengths: {lengths}")
        n = sizes_seen.pop() if sizes_seen else 1
        if n == 0:
            return BatchResult(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))
        # -- topics
        if topic_table is None:
            if _is_scalar_bytes(topic_arg):
                topic_table = [topic_arg.encode("utf-8") if isinstance(topic_arg, str) else bytes(topic_arg)]
                topic_ids = np.zeros(n, dtype=np.int64)
            else:
                index: dict[Any, int] = {}
                ids = [index.setdefault(t, len(index)) for t in topic_arg]
                topic_ids = np.asarray(ids, dtype=np.int64)
                topic_table = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in index]
        tab = Ragged.from_list(topic_table)
        tab_len = tab.lengths
        topic_col = Spans(tab.data if len(tab.data) else np.zeros(1, np.uint8), tab.offsets[:-1][topic_ids],
                         tab_len[topic_ids])
        qid = _int_col(queue_id, n, "queue_id")
        # -- magic / topic length size
        if magic_v2 is None:
            v2_tab = (tab_len > MAX_V1_TOPIC_LEN) & (self.broker_version == "5")
            v2 = v2_tab[topic_ids]
        else:
            v2 = np.broadcast_to(np.asarray(magic_v2, dtype=bool), (n,)).copy()
        too_long_v1 = (~v2) & (topic_col.lens > MAX_V1_TOPIC_LEN)
        if too_long_v1.any():
            i = int(np.argmax(too_long_v1))
            raise ValueError(f"topic of {topic_col.lens[i]} bytes does not fit a V1 record (at most "
                             f"{MAX_V1_TOPIC_LEN}); a 4.9 broker rejects it, a 5.x broker writes V2")
        if (topic_col.lens > MAX_V2_TOPIC_LEN).any():
            raise ValueError(f"topic longer than {MAX_V2_TOPIC_LEN} bytes")
        magic = np.where(v2, MAGIC_V2, MAGIC_V1).astype(np.int64)
        tlen_size = np.where(v2, 2, 1).astype(np.int64)
        # -- bodies and properties
        body_col = _bytes_col(body, n, "body")
        props_col = _bytes_col(properties, n, "properties", props_version=self.broker_version)
        if (props_col.lens > MAX_PROPERTIES_LEN).any():
            raise ValueError(f"properties longer than {MAX_PROPERTIES_LEN} bytes (the broker answers "
                             "PROPERTIES_SIZE_EXCEEDED)")
        if body_crc is None:
            crc = _crc_col(body_col)
        else:
            crc = _int_col(body_crc, n, "body_crc")
        # -- hosts and flags
        born_host_m, born_len = _host_col(born_host, n, "born_host")
        store_host_m, store_len = _host_col(store_host, n, "store_host")
        sysflag = _int_col(sys_flag, n, "sys_flag") & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
        sysflag |= np.where(born_len == HOST_V6_LEN, SYSFLAG_BORNHOST_V6, 0)
        sysflag |= np.where(store_len == HOST_V6_LEN, SYSFLAG_STOREHOST_V6, 0)
        now = int(time.time() * 1000)
        store_ts = _int_col(now if store_timestamp is None else store_timestamp, n, "store_timestamp")
        born_ts = store_ts.copy() if born_timestamp is None else _int_col(born_timestamp, n, "born_timestamp")
        # -- sizes
        total = (BORN_HOST_OFFSET + born_len + _AFTER_BORN_HOST + store_len + _AFTER_STORE_HOST + BODY_LENGTH_LEN
                 + body_col.lens + tlen_size + topic_col.lens + PROPERTIES_LENGTH_LEN + props_col.lens)
        if (total + END_FILE_MIN_BLANK_LENGTH > self.file_size).any():
            raise ValueError(f"a record of {int(total.max())} bytes does not fit a segment of {self.file_size} bytes "
                             "with its 8-byte end-of-file blank")
        # -- queue offsets
        qoff = self._queue_offsets(topic_table, topic_ids, qid, sysflag, queue_offset, n)
        # -- positions
        rec_off = np.empty(n, dtype=np.int64)
        blank_off = np.empty(n, dtype=np.int64)
        blank_size = np.empty(n, dtype=np.int64)
        start = self._cur
        end, n_blank = _place(total, np.int64(self.file_size), np.int64(start), rec_off, blank_off, blank_size)
        prep = _int_col(prepared_tx_offset, n, "prepared_tx_offset")
        if prepared_tx_ref is not None:
            ref = _int_col(prepared_tx_ref, n, "prepared_tx_ref")
            has = ref >= 0
            prep[has] = rec_off[ref[has]]
        # -- bytes
        out = self._buffer(int(end - start))
        _encode(out, np.int64(start), rec_off, total, magic, crc, qid, _int_col(flag, n, "flag"), qoff, sysflag,
                born_ts, born_host_m, born_len, store_ts, store_host_m, store_len,
                _int_col(reconsume_times, n, "reconsume_times"), prep, body_col.data, body_col.starts, body_col.lens,
                topic_col.data, topic_col.starts, topic_col.lens, tlen_size, props_col.data, props_col.starts,
                props_col.lens, blank_off, blank_size, n_blank)
        self._write(start, out)
        self._cur = int(end)
        self.records += n
        return BatchResult(rec_off, total.astype(np.int32), qoff)

    def append(self, topic: str | bytes, queue_id: int = 0, body: bytes | str = b"",
               properties: Mapping[str, str] | bytes | str | None = None, **fields: object) -> tuple[int, int]:
        """Append one message; returns ``(commitlog offset, total size)``.

        ``fields`` are the per-record arguments of :meth:`write_batch` (``sys_flag``,
        ``store_timestamp``, ``born_host``, ``queue_offset``, ``magic_v2``, ...), one value each.
        """
        if isinstance(body, str):
            body = body.encode("utf-8")
        if isinstance(properties, dict):
            properties = encode_properties(properties, self.broker_version)
        batch: dict[str, Any] = {k: ([v] if v is not None else None) for k, v in fields.items()}
        for k in ("born_host", "store_host"):
            if k in fields and fields[k] is not None:
                batch[k] = fields[k]  # one host broadcasts
        res = self.write_batch(topic=[topic], queue_id=[queue_id], body=[body], properties=[properties or b""],
                               **batch)
        return int(res.offsets[0]), int(res.sizes[0])

    def _queue_offsets(self, topic_table: list[bytes], topic_ids: np.ndarray, qid: np.ndarray, sysflag: np.ndarray,
                       queue_offset: object, n: int) -> np.ndarray:
        qoff = np.full(n, AUTO, dtype=np.int64) if queue_offset is None else _int_col(queue_offset, n, "queue_offset")
        auto = qoff == AUTO
        if not auto.any():
            return qoff
        tx = sysflag & SYSFLAG_TRANSACTION_MASK
        counts = auto & ((tx == TRANSACTION_NOT) | (tx == TRANSACTION_COMMIT))
        zero = auto & ~counts
        key = topic_ids * (1 << 32) + (qid & 0xFFFFFFFF)
        uniq, group = np.unique(key, return_inverse=True)
        keys = [(topic_table[int(k >> 32)], signed32(int(k))) for k in uniq]
        counters = np.array([self._counters.get(k, self._first_offset(k)) for k in keys], dtype=np.int64)
        _assign_queue_offsets(group.astype(np.int64), counts, zero, counters, qoff)
        for k, c in zip(keys, counters.tolist()):
            self._counters[k] = c
        return qoff

    def _buffer(self, size: int) -> np.ndarray:
        """A reused output buffer (fresh pages cost more than the encoding)."""
        if self._buf is None or len(self._buf) < size:
            self._buf = np.empty(max(size, 1 << 16), dtype=np.uint8)
        return self._buf[:size]

    def _write(self, start: int, data: np.ndarray) -> None:
        pos = start
        view = memoryview(data)  # type: ignore[arg-type]
        done = 0
        while done < len(view):
            base = pos - pos % self.file_size
            chunk = min(len(view) - done, base + self.file_size - pos)
            fd = self._segment_fd(base)
            _pwrite_all(fd, view[done:done + chunk], pos - base)
            done += chunk
            pos += chunk

    def _segment_fd(self, base: int) -> int:
        if base == self._fd_base and self._fd is not None:
            return self._fd
        if self._fd is not None:
            os.close(self._fd)
        path = os.path.join(self.dir, segment_name(base))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if base not in self._segments:
            os.ftruncate(fd, 0)
            os.ftruncate(fd, self.file_size)  # full size from the start; unwritten bytes read as zeros
            self._segments.append(base)
        self._fd, self._fd_base = fd, base
        return fd

    def close(self) -> dict:
        """Close the segment files; a store with no record still gets its first (all-zero) segment.

        Returns:
            ``{"records", "start_offset", "end_offset", "segments"}``.
        """
        if not self.closed:
            if not self._segments:
                self._segment_fd(self.start_offset)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self.closed = True
            self._buf = None
        return {"records": self.records, "start_offset": self.start_offset, "end_offset": self._cur,
                "segments": len(self._segments)}

    def __enter__(self) -> CommitLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _crc_col(col: Spans) -> np.ndarray:
    """bodyCRC of each body; a span repeated in the column (a broadcast or pooled body) is hashed once."""
    starts, lens = col.starts, col.lens
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    width = int(lens.max()) + 1
    inverse = None
    if int(starts.max()) < (1 << 62) // width:
        uniq, inverse = np.unique(starts * width + lens, return_inverse=True)
        if len(uniq) * 2 > len(starts):
            inverse = None  # mostly distinct: hash them all
        else:
            starts, lens = uniq // width, uniq % width
    crcs = body_crc_spans(col.data, 0, starts, lens).astype(np.int64)
    return crcs if inverse is None else crcs[inverse.ravel()]


def _pwrite_all(fd: int, data: memoryview, pos: int) -> None:
    while len(data):
        k = os.pwrite(fd, data, pos)
        data = data[k:]
        pos += k


# ---------------------------------------------------------------------------------------------
# corrupting a written store (tests)

def _locate(root: str | os.PathLike, offset: int) -> tuple[str, int]:
    """Segment path and position of a commitlog offset in a store written with any segment size."""
    cdir = os.path.join(os.fspath(root), "commitlog")
    names = sorted(f for f in os.listdir(cdir) if SEGMENT_NAME_RE.match(f))
    for name in reversed(names):
        base = int(name)
        if base <= offset:
            path = os.path.join(cdir, name)
            if offset - base >= os.path.getsize(path):
                break
            return path, offset - base
    raise ValueError(f"no segment of {cdir} holds offset {offset}")


def _patch(path: str, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def read_record_head(root: str | os.PathLike, offset: int) -> dict[str, int]:
    """The fixed fields of the record at ``offset``, plus where its body lies (``bodyPos``,
    ``bodyLength``, positions in the segment)."""
    path, pos = _locate(root, offset)
    with open(path, "rb") as f:
        f.seek(pos)
        head = f.read(BORN_HOST_OFFSET + 2 * HOST_V6_LEN + 64)
    fields = {name: int.from_bytes(head[HEAD_OFFSETS[name]:HEAD_OFFSETS[name] + size], "big", signed=True)
              for name, size in HEAD_FIELD_SIZES.items()}
    sysflag = fields["sysFlag"]
    born = HOST_V6_LEN if sysflag & SYSFLAG_BORNHOST_V6 else HOST_V4_LEN
    store = HOST_V6_LEN if sysflag & SYSFLAG_STOREHOST_V6 else HOST_V4_LEN
    body_len_at = BORN_HOST_OFFSET + born + _AFTER_BORN_HOST + store + _AFTER_STORE_HOST
    fields["bodyLength"] = int.from_bytes(head[body_len_at:body_len_at + BODY_LENGTH_LEN], "big", signed=True)
    fields["bodyPos"] = pos + body_len_at + BODY_LENGTH_LEN
    return fields


def flip_body_byte(root: str | os.PathLike, offset: int, index: int = 0, xor: int = 0xFF) -> None:
    """XOR one body byte of the record at ``offset`` (its bodyCRC no longer matches)."""
    head = read_record_head(root, offset)
    if not 0 <= index < head["bodyLength"]:
        raise ValueError(f"record at {offset} has a {head['bodyLength']}-byte body; no byte {index}")
    path, _ = _locate(root, offset)
    with open(path, "r+b") as f:
        f.seek(head["bodyPos"] + index)
        b = f.read(1)[0]
        f.seek(head["bodyPos"] + index)
        f.write(bytes([b ^ (xor & 0xFF)]))


def set_head_field(root: str | os.PathLike, offset: int, name: str, value: int) -> None:
    """Overwrite one fixed field (``totalSize``, ``magicCode``, ``queueOffset``, ``physicalOffset``,
    ``sysFlag``, ...) of the record at ``offset``; the value wraps to the field's width."""
    if name not in HEAD_FIELD_SIZES:
        raise ValueError(f"{name!r} is not a fixed head field; one of {sorted(HEAD_FIELD_SIZES)}")
    size = HEAD_FIELD_SIZES[name]
    path, pos = _locate(root, offset)
    _patch(path, pos + HEAD_OFFSETS[name], (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "big"))


def set_magic_code(root: str | os.PathLike, offset: int, magic: int = 0xDEADBEEF) -> None:
    """Give the record at ``offset`` another magic code (a bad one by default)."""
    set_head_field(root, offset, "magicCode", magic)


def set_total_size(root: str | os.PathLike, offset: int, value: int | None = None, *, delta: int | None = None) -> None:
    """Set the totalSize of the record at ``offset``, to ``value`` or to its current value + ``delta``."""
    if (value is None) == (delta is None):
        raise ValueError("give exactly one of value and delta")
    if value is None:
        value = read_record_head(root, offset)["totalSize"] + int(delta)  # type: ignore[arg-type]
    set_head_field(root, offset, "totalSize", value)
