"""The columns :meth:`store_format.writer.CommitLogWriter.write_batch` takes, and how an argument
(one value for every record, or one per record) becomes a column the encoder reads: byte strings as
spans of one buffer (:class:`Spans`), whole numbers, raw hosts, and the bodies' ``bodyCRC``.

Properties are rendered as ``MessageDecoder.messageProperties2String`` does (:func:`encode_properties`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .crc import body_crc_spans
from .layout import HOST_V4_LEN, HOST_V6_LEN, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from .msgid import host_to_bytes

__all__ = ["Ragged", "Spans", "Hosts", "encode_properties", "is_scalar_bytes", "column_length", "bytes_column",
           "int_column", "host_column", "body_crc_column"]


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


def is_scalar_bytes(x: Any) -> bool:
    return isinstance(x, (bytes, bytearray, memoryview, str))


def column_length(value: Any) -> int | None:
    """Length of a column argument, None for a scalar to broadcast."""
    if value is None or is_scalar_bytes(value) or isinstance(value, (int, np.integer, dict)):
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


def bytes_column(value: Any, n: int, name: str, *, props_version: str | None = None) -> Spans:
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
    if is_scalar_bytes(value):
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


def int_column(value: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(0 if value is None else value, dtype=np.int64)
    if arr.ndim == 0:
        return np.full(n, int(arr), dtype=np.int64)
    if len(arr) != n:
        raise ValueError(f"{name}: {len(arr)} values for {n} records")
    return np.ascontiguousarray(arr)


def host_column(value: Any, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
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
    if is_scalar_bytes(value) or isinstance(value, tuple):
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


def body_crc_column(col: Spans) -> np.ndarray:
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
