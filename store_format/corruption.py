"""Corrupting a commitlog written by :class:`store_format.writer.CommitLogWriter` in place, for tests:
a record's fixed head fields, its magic code, its totalSize, one byte of its body.
"""
from __future__ import annotations

import os

from .layout import (
    BODY_LENGTH_LEN,
    BORN_HOST_OFFSET,
    HEAD_FIELD_SIZES,
    HEAD_OFFSETS,
    HOST_V4_LEN,
    HOST_V6_LEN,
    PREPARED_TX_OFFSET_LEN,
    RECONSUME_TIMES_LEN,
    SEGMENT_NAME_RE,
    STORE_TIMESTAMP_LEN,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)

__all__ = ["read_record_head", "flip_body_byte", "set_head_field", "set_magic_code", "set_total_size"]


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
    body_len_at = (BORN_HOST_OFFSET + born + STORE_TIMESTAMP_LEN + store + RECONSUME_TIMES_LEN
                   + PREPARED_TX_OFFSET_LEN)
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
