"""Message ids: the broker's offset msgId and the client's UNIQ_KEY.

Offset msgId  [MessageDecoder.createMessageId / decodeMessageId]::

    storeHost address   4 bytes (IPv4) | 16 bytes (IPv6)
    storeHost port      i32
    commitlog offset    i64

written as upper-case hex: 32 characters for an IPv4 store host, 56 for IPv6.  ``decodeMessageId``
takes 32 characters as IPv4 and any other length as IPv6.

Client message id, the ``UNIQ_KEY`` property  [MessageClientIDSetter.createUniqID]::

    ip                  4 | 16 bytes  (the producer's address)
    pid                 i16           (low 16 bits of the process id)
    classLoader hash    i32
    time                i32           ms since the start of the current month (JVM time zone), wrapping
    counter             i16           low 16 bits of a per-process counter

also upper-case hex (32 characters for IPv4, 56 for IPv6).
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
from collections.abc import Sequence

import numpy as np

from .layout import signed32

__all__ = [
    "HostLike",
    "host_to_bytes",
    "host_from_bytes",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "create_offset_msg_ids",
    "decode_offset_msg_ids",
    "offset_msg_id_bytes",
    "UniqIdGenerator",
    "hex_chars",
]

HostLike = bytes | bytearray | str | tuple

_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_HEX_VALUE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789ABCDEF"):
    _HEX_VALUE[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _HEX_VALUE[_c] = 10 + _i  # UtilAll.string2bytes upper-cases first
del _i, _c

PORT_LEN = 4
OFFSET_LEN = 8
IPV4_LEN = 4
IPV6_LEN = 16
MSG_ID_V4_CHARS = 2 * (IPV4_LEN + PORT_LEN + OFFSET_LEN)  # 32
MSG_ID_V6_CHARS = 2 * (IPV6_LEN + PORT_LEN + OFFSET_LEN)  # 56


def host_to_bytes(host: HostLike, port: int | None = None) -> bytes:
    """Address bytes + big-endian i32 port, as ``MessageExt.socketAddress2ByteBuffer`` writes a host.

    Accepts ``"10.0.0.1:10911"``, ``"[fd00::1]:10911"``, ``("10.0.0.1", 10911)``, an address string
    with ``port`` given separately, or the 8/20 raw bytes (returned unchanged).

    >>> host_to_bytes("10.0.0.100:10911").hex()
    '0a00006400002a9f'
    """
    if isinstance(host, (bytes, bytearray, memoryview)):
        raw = bytes(host)
        if len(raw) not in (IPV4_LEN + PORT_LEN, IPV6_LEN + PORT_LEN):
            raise ValueError(f"a host is 8 (IPv4) or 20 (IPv6) bytes, got {len(raw)}")
        return raw
    if isinstance(host, tuple):
        if len(host) != 2:
            raise ValueError(f"host tuple must be (address, port), got {host!r}")
        addr_text, port = str(host[0]), int(host[1])
    else:
        text = str(host)
        if port is not None:
            addr_text = text
        elif text.startswith("["):
            close = text.find("]")
            if close < 0 or text[close + 1:close + 2] != ":":
                raise ValueError(f"IPv6 host must look like [addr]:port, got {text!r}")
            addr_text, port = text[1:close], int(text[close + 2:])
        else:
            if text.count(":") != 1:
                raise ValueError(f"host must look like a.b.c.d:port or [v6]:port, got {text!r}")
            addr_text, port_text = text.split(":")
            port = int(port_text)
    addr = ipaddress.ip_address(addr_text)
    if not 0 <= int(port) <= 0xFFFFFFFF:
        raise ValueError(f"port {port} does not fit 32 bits")
    return addr.packed + int(port).to_bytes(4, "big", signed=False)


def host_from_bytes(raw: bytes) -> tuple[str, int]:
    """``(address, port)`` from the 8/20 bytes of a stored host."""
    raw = bytes(raw)
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address
    if len(raw) == IPV4_LEN + PORT_LEN:
        addr = ipaddress.IPv4Address(raw[:IPV4_LEN])
    elif len(raw) == IPV6_LEN + PORT_LEN:
        addr = ipaddress.IPv6Address(raw[:IPV6_LEN])
    else:
        raise ValueError(f"a host is 8 (IPv4) or 20 (IPv6) bytes, got {len(raw)}")
    return str(addr), int.from_bytes(raw[-PORT_LEN:], "big", signed=True)


def hex_chars(rows: np.ndarray) -> np.ndarray:
    """Upper-case hex characters of each row of a uint8 matrix, as a ``(n, 2 * width)`` uint8
    matrix [UtilAll.bytes2string]."""
    n, width = rows.shape
    out = np.empty((n, 2 * width), dtype=np.uint8)
    out[:, 0::2] = _HEX_DIGITS[rows >> 4]
    out[:, 1::2] = _HEX_DIGITS[rows & 0x0F]
    return out


def _hex_rows(rows: np.ndarray) -> np.ndarray:
    """Upper-case hex of each row of a uint8 matrix, as a ``U`` string array."""
    width = 2 * rows.shape[1]
    return hex_chars(rows).view(f"S{width}").ravel().astype(f"U{width}")


def _unhex_rows(chars: np.ndarray) -> np.ndarray:
    """Bytes from a uint8 matrix of hex characters; raises on a non-hex character."""
    nib = _HEX_VALUE[chars]
    if (nib == 255).any():
        raise ValueError("message id holds a character that is not a hex digit")
    return (nib[:, 0::2] << 4) | nib[:, 1::2]


def create_offset_msg_id(store_host: HostLike, commitlog_offset: int) -> str:
    """Offset msgId of the record at ``commitlog_offset`` [MessageDecoder.createMessageId].

    Args:
        store_host: the record's store host: 8/20 raw bytes (address + i32 port) or any form
            :func:`host_to_bytes` accepts.
        commitlog_offset: the record's physical offset.

    >>> create_offset_msg_id("10.0.0.100:10911", 0x1234)
    '0A00006400002A9F0000000000001234'
    """
    return str(create_offset_msg_ids(store_host, [commitlog_offset])[0])


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``(host, port, commitlog_offset)`` of an offset msgId [MessageDecoder.decodeMessageId].

    32 characters are read as an IPv4 id, 56 as IPv6.

    Raises:
        ValueError: another length or a character that is not a hex digit.
    """
    if len(msg_id) not in (MSG_ID_V4_CHARS, MSG_ID_V6_CHARS):
        raise ValueError(f"an offset msgId has 32 (IPv4) or 56 (IPv6) hex characters, got {len(msg_id)}")
    try:
        addresses, ports, offsets = decode_offset_msg_ids([msg_id])
    except ValueError:   # a character that is not a hex digit (or not even ASCII)
        raise ValueError(f"{msg_id!r} is not hex") from None
    return str(ipaddress.ip_address(addresses[0].tobytes())), int(ports[0]), int(offsets[0])


def create_offset_msg_ids(store_hosts: np.ndarray | HostLike, offsets: np.ndarray | Sequence[int]) -> np.ndarray:
    """Vectorized :func:`create_offset_msg_id`.

    Args:
        store_hosts: a ``(n, 8)`` or ``(n, 20)`` uint8 matrix of raw hosts, or one host for all.
        offsets: commitlog offsets (n).
    Returns:
        A ``U32``/``U56`` numpy string array.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets)
    if isinstance(store_hosts, np.ndarray) and store_hosts.ndim == 2:
        hosts = np.asarray(store_hosts, dtype=np.uint8)
        if len(hosts) != n:
            raise ValueError(f"{len(hosts)} hosts for {n} offsets")
    else:
        one = np.frombuffer(host_to_bytes(store_hosts), dtype=np.uint8)  # type: ignore[arg-type]
        hosts = np.broadcast_to(one, (n, len(one)))
    if hosts.shape[1] not in (IPV4_LEN + PORT_LEN, IPV6_LEN + PORT_LEN):
        raise ValueError(f"hosts must be 8 or 20 bytes wide, got {hosts.shape[1]}")
    return _hex_rows(offset_msg_id_bytes(hosts, offsets))


def offset_msg_id_bytes(hosts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The bytes an offset msgId spells in hex: each row's raw store host (ip + port, 8 or 20 bytes)
    then its commitlog offset as a big-endian long [MessageDecoder.createMessageId]."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return np.concatenate([hosts, offsets.astype(">i8").view(np.uint8).reshape(len(offsets), 8)], axis=1)


def decode_offset_msg_ids(msg_ids: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorized :func:`decode_offset_msg_id` for ids of one length (all IPv4 or all IPv6).

    Returns:
        ``(addresses, ports, offsets)``: a ``(n, 4)`` or ``(n, 16)`` uint8 matrix, int64 ports,
        int64 offsets.
    """
    arr = np.asarray(msg_ids)
    n = len(arr)
    if n == 0:
        return np.zeros((0, IPV4_LEN), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
    lengths = np.char.str_len(arr.astype(str))
    width = int(lengths[0])
    if (lengths != width).any() or width not in (MSG_ID_V4_CHARS, MSG_ID_V6_CHARS):
        raise ValueError("decode_offset_msg_ids needs ids of one length, 32 (IPv4) or 56 (IPv6) characters")
    chars = np.frombuffer(arr.astype(f"S{width}").tobytes(), dtype=np.uint8).reshape(n, width)
    raw = _unhex_rows(chars)
    ip_len = width // 2 - PORT_LEN - OFFSET_LEN
    addresses = np.ascontiguousarray(raw[:, :ip_len])
    ports = np.ascontiguousarray(raw[:, ip_len:ip_len + PORT_LEN]).view(">i4").ravel().astype(np.int64)
    offsets = np.ascontiguousarray(raw[:, ip_len + PORT_LEN:]).view(">i8").ravel().astype(np.int64)
    return addresses, ports, offsets


def _month_start_ms(ms: np.ndarray, utc_offset_ms: int) -> np.ndarray:
    """Start of the calendar month holding each instant, in a fixed-offset time zone."""
    local = (np.asarray(ms, dtype=np.int64) + utc_offset_ms).astype("datetime64[ms]")
    return local.astype("datetime64[M]").astype("datetime64[ms]").astype(np.int64) - utc_offset_ms


class UniqIdGenerator:
    """Client message ids (``UNIQ_KEY``) as ``MessageClientIDSetter.createUniqID`` makes them.

    One generator is one producer process: a fixed prefix (ip, pid, class loader hash), the time
    since the start of the month of the latest time seen, and a counter.

    Args:
        ip: the producer's address, 4 or 16 bytes or an address string.
        pid: process id (its low 16 bits are used).
        class_loader_hash: ``MessageClientIDSetter.class.getClassLoader().hashCode()``.
        start_ms: when the class was loaded (the first month start); default: the first id's time.
        counter: first counter value.
        tz: the JVM's time zone, a fixed offset (default UTC).

    >>> gen = UniqIdGenerator(ip="10.0.0.1", pid=0x1234, class_loader_hash=0x5FFD2B27)
    >>> gen.next(1_700_000_000_000)  # 2023-11-14T22:13:20Z: 0x47B76000 ms into November, counter 0
    '0A00000112345FFD2B2747B760000000'
    """

    def __init__(self, ip: bytes | str = b"\x7f\x00\x00\x01", pid: int = 1, class_loader_hash: int = 0,
                 start_ms: int | None = None, counter: int = 0, tz: _dt.timezone = _dt.timezone.utc) -> None:
        ip_bytes = ipaddress.ip_address(ip).packed if isinstance(ip, str) else bytes(ip)
        if len(ip_bytes) not in (IPV4_LEN, IPV6_LEN):
            raise ValueError(f"ip must be 4 or 16 bytes, got {len(ip_bytes)}")
        offset = tz.utcoffset(None)
        if offset is None:
            raise ValueError("tz must be a fixed-offset datetime.timezone")
        self._utc_offset_ms = int(offset.total_seconds() * 1000)
        prefix = (ip_bytes + (int(pid) & 0xFFFF).to_bytes(2, "big")
                  + (int(class_loader_hash) & 0xFFFFFFFF).to_bytes(4, "big"))
        self._prefix = np.frombuffer(prefix, dtype=np.uint8)
        self._latest = None if start_ms is None else int(start_ms)
        self._counter = int(counter)

    @property
    def width(self) -> int:
        """Characters per id: 32 (IPv4 producer) or 56 (IPv6)."""
        return 2 * (len(self._prefix) + 4 + 2)

    def next(self, now_ms: int) -> str:
        """One id for a message sent at ``now_ms``."""
        return str(self.batch(np.array([now_ms], dtype=np.int64))[0])

    def batch(self, now_ms: np.ndarray | Sequence[int]) -> np.ndarray:
        """Ids for messages sent at the given times, in order (a ``U32``/``U56`` string array)."""
        return _hex_rows(self.batch_bytes(now_ms)).astype(f"U{self.width}")

    def batch_bytes(self, now_ms: np.ndarray | Sequence[int]) -> np.ndarray:
        """The raw id bytes, one row per message (``(n, 16)`` or ``(n, 28)`` uint8)."""
        now = np.asarray(now_ms, dtype=np.int64)
        n = len(now)
        if n == 0:
            return np.zeros((0, len(self._prefix) + 6), dtype=np.uint8)
        # setStartTime runs whenever a time reaches the next month: the start is always the month
        # start of the latest time seen so far (class load time included)
        latest = np.maximum.accumulate(now)
        if self._latest is not None:
            latest = np.maximum(latest, self._latest)
        start = _month_start_ms(latest, self._utc_offset_ms)
        diff = signed32(now - start)  # (int) cast
        diff = np.where((diff < 0) & (diff > -1_000_000), 0, diff)  # "may cause by NTP"
        counters = (self._counter + np.arange(n, dtype=np.int64)) & 0xFFFF
        self._latest = int(latest[-1])
        self._counter += n
        rows = np.empty((n, len(self._prefix) + 6), dtype=np.uint8)
        rows[:, :len(self._prefix)] = self._prefix
        rows[:, len(self._prefix):len(self._prefix) + 4] = diff.astype(">i4").view(np.uint8).reshape(n, 4)
        rows[:, len(self._prefix) + 4:] = counters.astype(">u2").view(np.uint8).reshape(n, 2)
        return rows
