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

The batch's columns are :mod:`store_format.writer_columns`, the kernels
:mod:`store_format.record_encoder`; :mod:`store_format.corruption` patches a written store for tests.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .config import BrokerConfig
from .layout import (
    BODY_LENGTH_LEN,
    BORN_HOST_OFFSET,
    END_FILE_MIN_BLANK_LENGTH,
    HOST_V6_LEN,
    MAGIC_V1,
    MAGIC_V2,
    PREPARED_TX_OFFSET_LEN,
    PROPERTIES_LENGTH_LEN,
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
from .record_encoder import assign_queue_offsets, encode_records, place_records
from .writer_columns import (
    Ragged,
    Spans,
    body_crc_column,
    bytes_column,
    column_length,
    encode_properties,
    host_column,
    int_column,
    is_scalar_bytes,
)

__all__ = ["AUTO", "CommitLogWriter", "BatchResult"]

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
        if isinstance(topic, tuple) and len(topic) == 2 and not is_scalar_bytes(topic[0]):
            topic_table = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in topic[0]]
            topic_ids = np.asarray(topic[1], dtype=np.int64)
            topic_arg: Any = topic_ids
        else:
            topic_arg = topic
        columns = (("topic", topic_arg), ("queue_id", queue_id), ("body", body), ("properties", properties),
                   ("sys_flag", sys_flag), ("store_timestamp", store_timestamp), ("queue_offset", queue_offset))
        lengths = {k: m for k, m in ((k, column_length(v)) for k, v in columns) if m is not None}
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
            if is_scalar_bytes(topic_arg):
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
        qid = int_column(queue_id, n, "queue_id")
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
        body_col = bytes_column(body, n, "body")
        props_col = bytes_column(properties, n, "properties", props_version=self.broker_version)
        if (props_col.lens > MAX_PROPERTIES_LEN).any():
            raise ValueError(f"properties longer than {MAX_PROPERTIES_LEN} bytes (the broker answers "
                             "PROPERTIES_SIZE_EXCEEDED)")
        if body_crc is None:
            crc = body_crc_column(body_col)
        else:
            crc = int_column(body_crc, n, "body_crc")
        # -- hosts and flags
        born_host_m, born_len = host_column(born_host, n, "born_host")
        store_host_m, store_len = host_column(store_host, n, "store_host")
        sysflag = int_column(sys_flag, n, "sys_flag") & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
        sysflag |= np.where(born_len == HOST_V6_LEN, SYSFLAG_BORNHOST_V6, 0)
        sysflag |= np.where(store_len == HOST_V6_LEN, SYSFLAG_STOREHOST_V6, 0)
        now = int(time.time() * 1000)
        store_ts = int_column(now if store_timestamp is None else store_timestamp, n, "store_timestamp")
        born_ts = store_ts.copy() if born_timestamp is None else int_column(born_timestamp, n, "born_timestamp")
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
        end, n_blank = place_records(total, np.int64(self.file_size), np.int64(start), rec_off, blank_off, blank_size)
        prep = int_column(prepared_tx_offset, n, "prepared_tx_offset")
        if prepared_tx_ref is not None:
            ref = int_column(prepared_tx_ref, n, "prepared_tx_ref")
            has = ref >= 0
            prep[has] = rec_off[ref[has]]
        # -- bytes
        out = self._buffer(int(end - start))
        encode_records(out, np.int64(start), rec_off, total, magic, crc, qid, int_column(flag, n, "flag"), qoff,
                       sysflag, born_ts, born_host_m, born_len, store_ts, store_host_m, store_len,
                       int_column(reconsume_times, n, "reconsume_times"), prep, body_col.data, body_col.starts,
                       body_col.lens, topic_col.data, topic_col.starts, topic_col.lens, tlen_size, props_col.data,
                       props_col.starts, props_col.lens, blank_off, blank_size, n_blank)
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
        qoff = np.full(n, AUTO, dtype=np.int64) if queue_offset is None else int_column(queue_offset, n, "queue_offset")
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
        assign_queue_offsets(group.astype(np.int64), counts, zero, counters, qoff)
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


def _pwrite_all(fd: int, data: memoryview, pos: int) -> None:
    while len(data):
        k = os.pwrite(fd, data, pos)
        data = data[k:]
        pos += k
